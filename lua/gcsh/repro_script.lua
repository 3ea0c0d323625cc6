-- gcsh.repro_script: the standalone script of one sweep case (repro.sweep's
-- out=, lua/gcsh/repro.lua).  Everything the candidate and the reference
-- need goes into the script, so that it runs alone, at any commit:
--
--   * their own text, from their file, or, for a function typed at the
--     prompt or given with -e, from the source the rank kept of that chunk
--     (registry "gcsh.chunks", src/rank/worker.c), found by its bytecode;
--   * every upvalue: numbers, strings, booleans and tables of them as
--     literals, functions (and tables of functions) as their text, with
--     their own upvalues and globals in turn, a communicator of every rank
--     as comm.world();
--   * every global they read that the user defined (one a fresh gcsh does
--     not have): as above, assigned as a global;
--   * a value that is a loaded module, or a field of one (a helper module
--     of the project), as require("name")[.field]: the script loads the
--     module as it is where it runs, so a bisect tests the module too
--     (freeze = true writes a copy of its functions instead).
--
-- plan() gathers all that before the sweep runs, so that a value a script
-- cannot rebuild (a tensor, a window, a communicator of some ranks) is an
-- error at once, not after the sweep; text() writes the script of a case.
local M = {}

local KEEP = "gcsh.chunks"       -- the kept chunk sources (worker.c)
local BUILTINS = "gcsh.builtins" -- the globals a fresh rank has (prelude.lua)
-- string.dump's header in Lua 5.4 (signature, versions, sizes, checks: 31
-- bytes) and the count of upvalues: what comes after is the function itself.
local DUMP_HEAD = 32

-- ---- a function's text -------------------------------------------------------

local function proto_bytes(f)
  local d = string.dump(f, true)
  assert(d:sub(1, 5) == "\27Lua\x54", "a Lua 5.4 dump")
  return d:sub(DUMP_HEAD + 1)
end

-- The source of the kept chunk (typed at the prompt, -e) that defined f:
-- compiled again, its dump holds f's dump byte for byte.  Newest first.
local function kept_source(f)
  local kept = debug.getregistry()[KEEP]
  if not kept or not kept.n then return nil end
  local body = proto_bytes(f)
  for i = kept.n, math.max(1, kept.n - kept.size + 1), -1 do
    local src = kept[(i - 1) % kept.size + 1]
    local main = src and load(src, "=stdin", "t")
    if main and string.dump(main, true):find(body, 1, true) then return src end
  end
  return nil
end

local function file_source(path, what)
  local fh = io.open(path, "r")
  if not fh then error(what .. ": cannot read " .. path, 0) end
  local text = fh:read("a")
  fh:close()
  return text
end

-- The closure that body compiles to, with f's line numbers (and f's
-- upvalues as locals before it), to compare with f.
-- pad: locals declared before those, so that an upvalue lands in the
-- register it had where f was defined (a dump holds that register).
local function compiled(body, f, first, pad)
  local names = {}
  for i = 1, (pad or 0) do names[#names + 1] = "_" .. i end
  for i = 1, math.huge do
    local name = debug.getupvalue(f, i)
    if not name then break end
    if name ~= "_ENV" then names[#names + 1] = name end
  end
  local head = #names > 0 and ("local " .. table.concat(names, ", ") .. " ") or ""
  local chunk = load(head .. string.rep("\n", first - 1) .. "return " .. body, "=text", "t")
  return chunk and chunk()
end

-- Whether body compiles to f: its one upvalue (if not _ENV) may have sat in
-- any register where f was defined, so each is tried (a local after
-- others: `local unused, k = 1, 2; function(c) return k end`).
local function compiles_to(body, f, first, same)
  local g = compiled(body, f, first)
  if not g then return nil end
  if same(f, g) then return true end
  local one = debug.getinfo(f, "u").nups == 1 and debug.getupvalue(f, 1) ~= "_ENV"
  for pad = 1, one and 199 or 0 do
    local h = compiled(body, f, first, pad)
    if h and same(f, h) then return true end
  end
  return false
end

-- Whether g, compiled from a text, is f: the same shape, and without
-- upvalues (whose places differ once moved out), the same bytecode.
local function same_function(f, g)
  local a, b = debug.getinfo(f, "Su"), debug.getinfo(g, "Su")
  if a.nparams ~= b.nparams or a.isvararg ~= b.isvararg or a.nups ~= b.nups
     or a.linedefined ~= b.linedefined or a.lastlinedefined ~= b.lastlinedefined then
    return false
  end
  return a.nups > 1 or proto_bytes(f) == proto_bytes(g)
end

-- The function expression of f on lines first..last of src: from a
-- 'function' keyword to an 'end' that make one loadable expression (a name
-- after 'function' is dropped) and compile to f; where several functions
-- share those lines, the one whose bytecode is f's.
local function expression(src, f, first, last, what, where)
  local lines, i = {}, 0
  for line in (src .. "\n"):gmatch("([^\n]*)\n") do
    i = i + 1
    if i >= first and i <= last then lines[#lines + 1] = line end
  end
  local text = table.concat(lines, "\n")
  local starts, ends, found = {}, {}, {}
  for p in text:gmatch("()function%f[^%w_]") do starts[#starts + 1] = p end
  for p in text:gmatch("%f[%w_]end()%f[^%w_]") do ends[#ends + 1] = p end
  for _, a in ipairs(starts) do
    for k = 1, #ends do
      local body = text:sub(a, ends[k] - 1)
      body = body:gsub("^function%s+[%w_%.:]+%s*%(", "function(", 1)
      local is = load("return " .. body, "=text", "t") and compiles_to(body, f, first, same_function)
      if is ~= nil then
        if is then found[#found + 1] = body end
        break -- the shortest loadable text from this 'function'
      end
    end
  end
  if #found == 1 then return found[1] end
  error(string.format("%s: cannot tell its text in %s (line %d)%s", what, where, first,
                      #found > 1 and ": define it on a line of its own" or ""), 0)
end

-- The text of function f as a Lua expression ("function(case) ... end").
function M.function_text(f, what)
  local info = debug.getinfo(f, "S")
  if info.what ~= "Lua" then
    error(string.format("%s is a C function: a script cannot carry it", what), 0)
  end
  local src
  if info.source:sub(1, 1) == "@" then
    src = file_source(info.source:sub(2), what)
  else
    src = kept_source(f)
  end
  if not src then
    error(string.format("%s was defined in %s, whose source is no longer kept (the last %d "
                        .. "chunks are): define it again, or in a script", what,
                        info.short_src, debug.getregistry()[KEEP].size), 0)
  end
  return expression(src, f, info.linedefined, info.lastlinedefined, what, info.short_src)
end

-- ---- the names a text reads -----------------------------------------------------

-- text with its comments and strings blanked out (names inside them are
-- not read by the code).
local function code_only(text)
  local out, i, n = {}, 1, #text
  while i <= n do
    local c = text:sub(i, i)
    local eq = text:match("^%-%-%[(=*)%[", i) or text:match("^%[(=*)%[", i)
    if eq then -- a long comment or a long string
      local close = text:find("]" .. eq .. "]", i + 2, true)
      i = close and close + #eq + 2 or n + 1
      out[#out + 1] = " "
    elseif text:sub(i, i + 1) == "--" then
      i = (text:find("\n", i, true) or n + 1)
    elseif c == '"' or c == "'" then
      local j = i + 1
      while j <= n and text:sub(j, j) ~= c do j = j + (text:sub(j, j) == "\\" and 2 or 1) end
      i = j + 1
      out[#out + 1] = '""'
    else
      out[#out + 1] = c
      i = i + 1
    end
  end
  return table.concat(out)
end

-- Names in text not after '.' or ':' (fields and methods), in order:
-- those that may be globals.  A local of the same name is counted too,
-- which only writes a global the script does not need.
local function free_names(text)
  local code, names, seen = code_only(text), {}, {}
  for pos, name in code:gmatch("()([%a_][%w_]*)") do
    local before = code:sub(1, pos - 1):match("([%.:]+)%s*$")
    local field = before and (before == "." or before == ":" or before == "::")
    local digit = pos > 1 and code:sub(pos - 1, pos - 1):match("[%w_]")
    if not field and not digit and not seen[name] then
      seen[name] = true
      names[#names + 1] = name
    end
  end
  return names
end

-- ---- values a script can rebuild --------------------------------------------------

local function is_comm(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and mt.__name == "comm"
end

local literal

-- Collects what function f (text already taken) needs: its upvalues into
-- plan.locals, the user's globals it reads into plan.globals.
local function collect(plan, f, what, text)
  for i = 1, math.huge do
    local name, v = debug.getupvalue(f, i)
    if not name then break end
    local id = debug.upvalueid(f, i)
    if name ~= "_ENV" and not plan.seen[id] then
      if plan.local_ids[name] and plan.local_ids[name] ~= id then
        error(string.format("%s: two different upvalues are named '%s'", what, name), 0)
      end
      plan.seen[id] = true
      plan.local_ids[name] = id
      plan.locals[#plan.locals + 1] = name
      plan.text[name] = literal(plan, v, "upvalue '" .. name .. "' of " .. what, name)
    end
  end
  local builtin = debug.getregistry()[BUILTINS] or {}
  for _, name in ipairs(free_names(text)) do
    local v = rawget(_G, name)
    if v ~= nil and not builtin[name] and name ~= "arg" and not plan.global_set[name]
       and not plan.local_ids[name] then
      plan.global_set[name] = true
      plan.globals[#plan.globals + 1] = name
      plan.gtext[name] = literal(plan, v, "global '" .. name .. "' of " .. what, name)
    end
  end
end

-- A module the running code loaded (package.loaded) that is v, or has v
-- as a field: `require("name")` or `require("name").field`, so that the
-- script loads the module as it is wherever it runs (a bisect tests the
-- module at each commit) instead of a copy frozen now.  nil: none.
local function live_require(v)
  if type(v) ~= "table" and type(v) ~= "function" then return nil end
  local names = {}
  for name in pairs(package.loaded) do
    if type(name) == "string" and name ~= "_G" then names[#names + 1] = name end
  end
  table.sort(names) -- the same text on every run
  for _, name in ipairs(names) do
    if rawequal(package.loaded[name], v) then return string.format("require(%q)", name) end
  end
  for _, name in ipairs(names) do
    local m = package.loaded[name]
    if type(m) == "table" then
      local keys = {}
      for k, x in pairs(m) do
        if type(k) == "string" and k:match("^[%a_][%w_]*$") and rawequal(x, v) then
          keys[#keys + 1] = k
        end
      end
      table.sort(keys)
      if keys[1] then return string.format("require(%q).%s", name, keys[1]) end
    end
  end
  return nil
end

-- v as Lua text the script can evaluate: a literal, a function's text, a
-- table of those, comm.world(), a live require of a loaded module (unless
-- plan.freeze).  what/name say what it is in an error.
literal = function(plan, v, what, name, depth)
  depth = depth or 0
  local t = type(v)
  local live = not plan.freeze and depth == 0 and live_require(v)
  if live then return live end
  if t == "number" and math.type(v) == "integer" then return string.format("%d", v) end
  if t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then
      return v ~= v and "(0/0)" or (v > 0 and "math.huge" or "-math.huge")
    end
    return string.format("%.17g", v)
  end
  if t == "string" or t == "boolean" or t == "nil" then return string.format("%q", v) end
  if t == "function" then
    local text = M.function_text(v, what)
    collect(plan, v, what, text)
    return text
  end
  if t == "table" and depth < 16 then
    if v == _G then return "_G" end
    local parts = {}
    for k, x in pairs(v) do
      parts[#parts + 1] = "[" .. literal(plan, k, what, name, depth + 1) .. "] = "
                          .. literal(plan, x, what, name, depth + 1)
    end
    table.sort(parts)
    return "{" .. table.concat(parts, ", ") .. "}"
  end
  if is_comm(v) and v.size == size then return "comm.world()" end
  local kind = is_comm(v) and ("a communicator of " .. v.size .. " of " .. size .. " ranks")
               or t == "table" and "a table nested too deep or in a cycle"
               or ("a " .. ((getmetatable(v) or {}).__name or t))
  error(string.format("%s is %s, which a script cannot rebuild: make it inside the function "
                      .. "or pass it through the case", what, kind), 0)
end

-- ---- the plan and the script ------------------------------------------------------

-- Everything the script of any case will need (raises what cannot be
-- carried, before the sweep runs).
function M.plan(candidate, reference, freeze)
  local plan = { locals = {}, text = {}, local_ids = {}, seen = {},
                 globals = {}, gtext = {}, global_set = {}, freeze = freeze }
  plan.candidate = literal(plan, candidate, "candidate")
  plan.reference = literal(plan, reference, "reference")
  return plan
end

local function case_text(case)
  return string.format("n=%d offset=%d %s %s%s", case.n, case.offset, case.dtype, case.op,
                       case.size and case.size ~= size and (" at " .. case.size .. " ranks") or "")
end
M.case_text = case_text

-- The script of one case: it exits 0 when the candidate matches the
-- reference, 1 when not, 125 at another rank count.
function M.text(path, case, plan, opts)
  local at = case.size or size
  local out = {
    "-- Written by repro.sweep (gcsh " .. gcsh.version .. ", backend " .. gcsh.backend .. ", "
      .. at .. " ranks): the smallest case",
    "-- where candidate differs from reference: " .. case_text(case) .. " on ranks " .. case.ranks
      .. ".",
    "--   " .. case.detail:gsub("\n", "\n--   "),
    "-- Run it: gcsh -n " .. at .. " " .. path
      .. "   (exit 0: candidate matches; 1: it does not; 125: wrong rank count)",
    "if size ~= " .. at .. " then",
    "  if rank == 0 then print(\"found at " .. at .. " ranks: run gcsh -n " .. at .. " "
      .. path .. "\") end",
    "  os.exit(125)",
    "end",
  }
  if #plan.locals > 0 then
    out[#out + 1] = "local " .. table.concat(plan.locals, ", ")
    for _, name in ipairs(plan.locals) do out[#out + 1] = name .. " = " .. plan.text[name] end
  end
  for _, name in ipairs(plan.globals) do out[#out + 1] = name .. " = " .. plan.gtext[name] end
  out[#out + 1] = "local case = {n = " .. case.n .. ", offset = " .. case.offset .. ", dtype = "
                  .. string.format("%q", case.dtype) .. ", op = " .. string.format("%q", case.op)
                  .. ", size = size, comm = comm.world()}"
  out[#out + 1] = "local candidate = " .. plan.candidate
  out[#out + 1] = "local reference = " .. plan.reference
  out[#out + 1] = string.format("repro.check(case, candidate, reference, {rtol = %s, atol = %s})",
                                opts.rtol and string.format("%.17g", opts.rtol) or "nil",
                                opts.atol and string.format("%.17g", opts.atol) or "nil")
  out[#out + 1] = "print(\"" .. case_text(case) .. ": candidate matches reference\")"
  local text = table.concat(out, "\n") .. "\n"
  assert(load(text, "=" .. path, "t"))
  return text
end

return M
