-- gcsh --diff A B: where two runs part, rank by rank.  A and B are two
-- recordings (gcsh --record) or two trace files (flight recorder dumps,
-- --trace).  For each rank, the first call (trace: the "gcsh calls" track,
-- each call's name and arguments, its Lua file named without its folder)
-- or the first line (recording: its source, that rank's output, whether it
-- failed or called os.exit there) that differs is printed with both sides;
-- a rank present in one file only is said; two recordings made with
-- different options (their "-- Options:" line: -W, --timeout, ...) differ
-- there first, since their lines may differ by them alone.  main returns
-- the exit status:
-- 0 the same, 1 they differ, 128 a file that is neither kind (or the two
-- of different kinds).
local M = {}
local json_null = setmetatable({}, { __name = "null" })

-- ---- a small JSON reader (trace files are written by jansson: plain JSON)
local function json_decode(s)
  local pos = 1
  local value
  local function fail(what)
    error(string.format("not JSON at byte %d: %s", pos, what), 0)
  end
  local function skip()
    pos = s:find("[^ \t\r\n]", pos) or #s + 1
  end
  local escapes = { b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" }
  local function str()
    local out = {}
    pos = pos + 1
    while true do
      local i = s:find('["\\]', pos)
      if not i then fail("an unterminated string") end
      out[#out + 1] = s:sub(pos, i - 1)
      if s:sub(i, i) == '"' then
        pos = i + 1
        return table.concat(out)
      end
      local e = s:sub(i + 1, i + 1)
      if e == "u" then
        local cp = tonumber(s:sub(i + 2, i + 5), 16) or fail("a bad \\u escape")
        out[#out + 1] = utf8.char(cp)
        pos = i + 6
      else
        out[#out + 1] = escapes[e] or e
        pos = i + 2
      end
    end
  end
  function value()
    skip()
    local c = s:sub(pos, pos)
    if c == "{" then
      local t = {}
      pos = pos + 1
      skip()
      if s:sub(pos, pos) == "}" then pos = pos + 1 return t end
      while true do
        skip()
        if s:sub(pos, pos) ~= '"' then fail("a key expected") end
        local k = str()
        skip()
        if s:sub(pos, pos) ~= ":" then fail("':' expected") end
        pos = pos + 1
        t[k] = value()
        skip()
        local d = s:sub(pos, pos)
        pos = pos + 1
        if d == "}" then return t end
        if d ~= "," then fail("',' or '}' expected") end
      end
    elseif c == "[" then
      local t = {}
      pos = pos + 1
      skip()
      if s:sub(pos, pos) == "]" then pos = pos + 1 return t end
      while true do
        t[#t + 1] = value()
        skip()
        local d = s:sub(pos, pos)
        pos = pos + 1
        if d == "]" then return t end
        if d ~= "," then fail("',' or ']' expected") end
      end
    elseif c == '"' then
      return str()
    end
    for word, v in pairs({ ["true"] = true, ["false"] = false, null = json_null }) do
      if s:sub(pos, pos + #word - 1) == word then
        pos = pos + #word
        return v
      end
    end
    local num = s:match("^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
    if not num or num == "" then fail("a value expected") end
    pos = pos + #num
    return tonumber(num)
  end
  local v = value()
  skip()
  if pos <= #s then fail("more after the value") end
  return v
end

-- ---- what each rank did, as a list of texts to compare

-- A call as text: its name (without " (unfinished)") and arguments, in key
-- order, without its number, state and time; its Lua file without folder.
local function call_text(e)
  local keys, parts = {}, {}
  for k in pairs(e.args or {}) do
    if k ~= "call" and k ~= "state" and k ~= "unfinished" then keys[#keys + 1] = k end
  end
  table.sort(keys)
  for _, k in ipairs(keys) do
    local v = e.args[k]
    if k == "lua" and type(v) == "string" then v = v:match("([^/]*)$") end
    parts[#parts + 1] = k .. "=" .. tostring(v)
  end
  local name = e.name:gsub(" %(unfinished%)$", "")
  return name .. (#parts > 0 and " {" .. table.concat(parts, ", ") .. "}" or "")
end

local function trace_ranks(doc)
  local calls_tid, per = {}, {}
  for _, e in ipairs(doc.traceEvents or {}) do
    if e.ph == "M" and e.name == "thread_name" and e.args and e.args.name == "gcsh calls" then
      calls_tid[e.pid] = e.tid
    end
    if e.ph == "M" and e.name == "process_name" then per[e.pid] = per[e.pid] or {} end
  end
  local events = {}
  for _, e in ipairs(doc.traceEvents or {}) do
    if e.ph == "X" and calls_tid[e.pid] == e.tid then events[#events + 1] = e end
  end
  table.sort(events, function(a, b)
    if a.pid ~= b.pid then return a.pid < b.pid end
    local ca, cb = a.args and a.args.call or 0, b.args and b.args.call or 0
    if ca ~= cb then return ca < cb end
    return a.ts < b.ts
  end)
  for _, e in ipairs(events) do
    per[e.pid] = per[e.pid] or {}
    local list = per[e.pid]
    list[#list + 1] = { what = "call", text = call_text(e) }
  end
  return per
end

local function in_ranks(list, r)
  for part in tostring(list):gmatch("[^,]+") do
    local a, b = part:match("^(%d+)%-(%d+)$")
    a, b = tonumber(a or part), tonumber(b or part)
    if a and b and r >= a and r <= b then return true end
  end
  return false
end

-- Rank r's lines of a folded output ("[0-1] text": a tag names its ranks;
-- a line without one continues the last tagged line's ranks).
local function unfold(out, r)
  local mine, tag = {}, nil
  for line in (out or ""):gmatch("([^\n]*)\n?") do
    local t, rest = line:match("^%[([%d,%-]+)%] ?(.*)$")
    if t then tag = t else rest = line end
    if line ~= "" and (tag == nil or in_ranks(tag, r)) then mine[#mine + 1] = rest end
  end
  return table.concat(mine, "\n")
end

-- What --diff runs of a recording: at most this many Lua instructions (a
-- recording of 100000 lines takes a few million), entries and (as gcsh -n)
-- ranks.
local MAX_INSTRUCTIONS = 200000000
local MAX_RANKS = 4096
local MAX_ENTRIES = 200000 -- (so its memory stays bounded too)

-- A recording's entries, loaded with a stand-in for gcsh.record that keeps
-- them instead of running them.
local function recording_ranks(path, src)
  local header, entries = nil, {}
  -- what an entry says, copied as plain values (rawget: a crafted table's
  -- metamethods never run outside the bound below)
  local function plain(t)
    if type(t) ~= "table" then return nil end
    local x = {}
    for _, k in ipairs { "failed", "exit", "exited", "out" } do
      local v = rawget(t, k)
      if type(v) == "string" or type(v) == "number" then x[k] = v end
    end
    return x
  end
  local function keep(kind, n, ranks, a, b, c)
    if #entries >= MAX_ENTRIES then
      error("more than " .. MAX_ENTRIES .. " entries: not a recording gcsh wrote", 0)
    end
    entries[#entries + 1] = { kind = kind, n = tostring(n), ranks = tostring(ranks),
                              a = type(a) == "string" and a or nil, b = plain(b), c = c }
  end
  local line = setmetatable({
    dot = function(n, ranks, text) keep("dot", n, ranks, text) end,
    chunk = function(n, ranks, name, s, expected) keep("chunk", n, ranks, s, expected, name) end,
    finish = function() end,
  }, { __call = function(_, n, ranks, s, expected) keep("line", n, ranks, s, expected) end })
  local fake = { script = function(h)
    header = type(h) == "table" and { ranks = rawget(h, "ranks") } or nil
    return line
  end }
  local env = setmetatable({ require = function(name)
    if name == "gcsh.record" then return fake end
    error("a recording requires only gcsh.record, not " .. tostring(name), 0)
  end }, { __index = function() return nil end })
  src = src:gsub("^#[^\n]*", "") -- the #! line, as lua skips it
  local f, err = load(src, "@" .. path, "t", env)
  if not f then error(err, 0) end
  -- a file gcsh wrote only calls the stand-ins above, once an entry: a
  -- bound on its instructions keeps a crafted one (a loop) from holding
  -- --diff forever
  debug.sethook(function()
    error("runs past " .. MAX_INSTRUCTIONS .. " instructions: not a recording gcsh wrote", 0)
  end, "", MAX_INSTRUCTIONS)
  local ok, why = pcall(f)
  debug.sethook()
  if not ok then error(why, 0) end
  if type(header) ~= "table" then error("no recording header (require(\"gcsh.record\").script{...})", 0) end
  local ranks = header.ranks == nil and 1 or header.ranks
  if math.type(ranks) ~= "integer" or ranks < 1 or ranks > MAX_RANKS then
    error(string.format("ranks = %s: a recording's rank count is 1..%d (as gcsh -n)",
                        tostring(ranks), MAX_RANKS), 0)
  end
  local per = {}
  for r = 0, ranks - 1 do
    local list = {}
    for _, e in ipairs(entries) do
      if in_ranks(e.ranks, r) then
        local x = e.kind == "dot" and {} or (e.b or {})
        local src = (e.a or ""):gsub("\n$", "")
        local failed = x.failed and in_ranks(x.failed, r) and " (failed)" or ""
        -- the ranks that called it (older recordings name none: every rank)
        local exited = x.exit and (not x.exited or in_ranks(x.exited, r))
        local exit = exited and string.format(" (os.exit %d)", x.exit)
                     or x.exit and string.format(" (another rank's os.exit %d)", x.exit) or ""
        local out = unfold(x.out, r)
        list[#list + 1] = { what = "line " .. e.n,
                            text = src .. failed .. exit
                                   .. (out ~= "" and "\n  => " .. out:gsub("\n", "\n     ") or "") }
      end
    end
    per[r] = list
  end
  return per
end

-- A recording's options line ("-W --timeout=5"; "none" before format 3),
-- read as text from its header, never run.
local function recorded_options(src)
  local head = src:match("^(.-)\nlocal line") or ""
  local opts = head:match("\n%-%- Options: ([^\n]*)")
  return (opts == nil or opts == "") and "none" or opts
end

local function read(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local s = f:read("a")
  f:close()
  if not s then return nil, path .. ": cannot be read (a folder?)" end
  return s
end

local function load_file(path)
  local s, err = read(path)
  if not s then return nil, nil, err end
  if s:match("^%s*{") then
    local ok, doc = pcall(json_decode, s)
    if not ok then return nil, nil, path .. ": " .. doc end
    if type(doc) ~= "table" or type(doc.traceEvents) ~= "table" then
      return nil, nil, path .. ": JSON, but no trace (no traceEvents)"
    end
    return "trace", trace_ranks(doc)
  end
  if s:find('require("gcsh.record")', 1, true) then
    local ok, per = pcall(recording_ranks, path, s)
    if not ok then return nil, nil, path .. ": " .. per end
    return "recording", per, nil, recorded_options(s)
  end
  return nil, nil, path .. ": neither a recording nor a trace file"
end

local function indent(text) return (text:gsub("\n", "\n    ")) end

function M.main(a, b)
  local ka, pa, ea, oa = load_file(a)
  local kb, pb, eb, ob = load_file(b)
  if not ka or not kb then
    io.stderr:write("gcsh: --diff: ", ea or eb, "\n")
    return 128
  end
  if ka ~= kb then
    io.stderr:write(string.format("gcsh: --diff: %s is a %s, %s a %s: compare two of a kind\n",
                                  a, ka, b, kb))
    return 128
  end
  local ranks, differ = {}, 0
  if oa ~= ob then -- what they ran with: every line may differ by it
    differ = differ + 1
    print("options differ:")
    print("  " .. a .. ": " .. oa)
    print("  " .. b .. ": " .. ob)
  end
  for r in pairs(pa) do ranks[#ranks + 1] = r end
  for r in pairs(pb) do if not pa[r] then ranks[#ranks + 1] = r end end
  table.sort(ranks)
  for _, r in ipairs(ranks) do
    local la, lb = pa[r], pb[r]
    if not la or not lb then
      differ = differ + 1
      print(string.format("rank %d: only in %s", r, la and a or b))
    else
      for i = 1, math.max(#la, #lb) do
        local x, y = la[i], lb[i]
        if not x or not y or x.text ~= y.text then
          differ = differ + 1
          local what = ka == "trace" and "call " .. i or (x or y).what
          print(string.format("rank %d: %s differs:", r, what))
          print("  " .. a .. ": " .. (x and indent(x.text) or "(no more " .. (ka == "trace" and "calls" or "lines") .. ")"))
          print("  " .. b .. ": " .. (y and indent(y.text) or "(no more " .. (ka == "trace" and "calls" or "lines") .. ")"))
          break
        end
      end
    end
  end
  if differ == 0 then
    print(string.format("the same: %d rank%s, every %s", #ranks, #ranks == 1 and "" or "s",
                        ka == "trace" and "call" or "line"))
    return 0
  end
  return 1
end

return M
