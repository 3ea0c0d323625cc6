-- show(x [, c]): one table on rank 0 of what every rank holds.
--
-- x is a window (each rank's own slice), a tensor (each rank's tensor, e.g.
-- a peer view w:peer(r)) or signals (each rank's words); any other value
-- shows as the prompt prints it, one row per rank (a value of several lines:
-- each different text once, under its ranks).  Collective: every rank of
-- the object's communicator calls it (for other values, c or the world);
-- rows travel to rank 0 through c:agree, the backend's host-memory exchange,
-- so it works for device memory too.  Only rank 0 prints.
--
--   window #1 (8 f32, host): each rank's slice
--   rank  [0] [1] [2] [3] ... [4] [5] [6] [7]
--      0    1   1   1   1 ...   1   1   1   1
--      1   2*  2*  2*  2* ...  2*  2*  2*  2*
--   (* = differs from the most common value in its column; ...* = an elided
--   element differs: each rank's middle is compared by its checksum)
--
-- Long rows show the first and last ENDS elements.  format(x [, c]) returns
-- the text on every rank instead of printing it.
--
-- show(w, "info") (or signals): w:info() of every rank as one table, a
-- field equal on every rank once, else a line per group of ranks:
--   window #1 (100 f32, host): w:info() on 2 ranks
--     alloc_bytes    4096
--     address        [0] 0x7f640c021108
--                    [1] 0x7f773a01b108
local M = {}

local ENDS = 4

local function type_of(x)
  local mt = getmetatable(x)
  return type(mt) == "table" and mt.__name or type(x)
end

local DIGITS = { f64 = 10, f32 = 7, f16 = 4, bf16 = 4 }

local function format_value(v, dtype)
  local digits = DIGITS[dtype]
  if not digits then return string.format("%d", v) end
  if v ~= v then return "nan" end
  return string.format("%." .. digits .. "g", v)
end

-- What a rank shows: a title, a length, and value(i) for 0-based i.
local function source(x, c)
  local kind = type_of(x)
  if kind == "window" then
    local t = x:tensor()
    return {
      comm = x.comm, n = x.n,
      title = string.format("window #%d (%d %s, %s): each rank's slice", x.seq, x.n, x.dtype, x.kind),
      value = function(i) return format_value(t[i], x.dtype) end,
      digest = function(first, count) return t:view(first, count):checksum() end,
    }
  elseif kind == "signals" then
    return {
      comm = x.comm, n = x.n,
      title = string.format("signals #%d (%d slots, %s): each rank's words", x.seq, x.n, x.kind),
      value = function(i) return string.format("%u", x:read(i)) end, -- u64 words
      digest = function(first, count)
        local words = {}
        for i = first, first + count - 1 do words[#words + 1] = string.format("%u", x:read(i)) end
        return table.concat(words, ",")
      end,
    }
  elseif kind == "tensor" then
    return {
      comm = c or comm.world(), n = #x, where = x.where, shape = #x .. " " .. x.dtype,
      -- a view of a window numbers its columns by the window's elements
      offset = x.where:find("^window") and x.offset or 0,
      -- every rank's length and dtype, known once all are in
      title = function(shapes) return "tensor (" .. shapes .. "): each rank's" end,
      value = function(i) return format_value(x[i], x.dtype) end,
      digest = function(first, count) return x:view(first, count):checksum() end,
    }
  end
  return nil
end

-- The indices shown for length n: all, or the ends around a gap (nil).
local function columns(n)
  local cols = {}
  if n <= 2 * ENDS + 1 then
    for i = 0, n - 1 do cols[#cols + 1] = i end
  else
    for i = 0, ENDS - 1 do cols[#cols + 1] = i end
    cols[#cols + 1] = false
    for i = n - ENDS, n - 1 do cols[#cols + 1] = i end
  end
  return cols
end

-- The value more of the cells hold than any other, or nil when none is
-- (every value once, or a tie): then no cell is marked.
local function most_common(cells)
  local count, best, best_count, tied = {}, nil, 0, false
  for _, v in ipairs(cells) do
    if v == "" then goto next end -- a shorter rank's missing cell is no value
    count[v] = (count[v] or 0) + 1
    if count[v] > best_count then best, best_count, tied = v, count[v], false
    elseif count[v] == best_count and v ~= best then tied = true end
    ::next::
  end
  if tied then return nil end
  return best
end

local function render(title, cols, rows, wheres, base)
  base = base or 0
  -- rows[r] = {cells}, "" where the rank's tensor is shorter
  local header = { "rank" }
  if wheres then header[2] = "where" end
  local first_data = #header + 1
  for _, i in ipairs(cols) do
    header[#header + 1] = type(i) == "string" and i or i and ("[" .. (i + base) .. "]") or "..."
  end
  local grid = { header }
  local marked = false
  for r, cells in ipairs(rows) do
    grid[r + 1] = { tostring(r - 1) }
    if wheres then grid[r + 1][2] = wheres[r] end
  end
  local hidden = false -- an elided column whose elements differ on some rank
  for k, i in ipairs(cols) do
    local column = {}
    for r = 1, #rows do column[r] = rows[r][k] or "..." end
    local common = most_common(column)
    for r = 1, #rows do
      local cell = column[r]
      if i == false then -- the elided middle: its digest, shown as ...
        cell = "..."
        if common and column[r] ~= common then cell = "...*"; hidden = true end
      elseif i and common and cell ~= common and cell ~= "" then
        cell = cell .. "*"; marked = true
      end
      grid[r + 1][first_data + k - 1] = cell
    end
  end
  local width = {}
  for _, line in ipairs(grid) do
    for k, cell in ipairs(line) do width[k] = math.max(width[k] or 0, #cell) end
  end
  local out = { title }
  for _, line in ipairs(grid) do
    local parts = {}
    for k, cell in ipairs(line) do
      local left = (wheres and k == 2) or type(cols[k - first_data + 1]) == "string"
      parts[k] = string.format(left and "%-" .. width[k] .. "s" or "%" .. width[k] .. "s", cell)
    end
    out[#out + 1] = (table.concat(parts, "  "):gsub("%s+$", ""))
  end
  if marked then out[#out + 1] = "(* = differs from the most common value in its column)" end
  if hidden then out[#out + 1] = "(...* = an element not shown differs from the most common rank's)" end
  return table.concat(out, "\n")
end

-- The distinct values of list (list[r] is rank r - 1's), in the order the
-- ranks first hold them, and each one's ranks (0-based): how every show
-- folds equal ranks.
local function by_value(list)
  local groups, order = {}, {}
  for r, v in ipairs(list) do
    if not groups[v] then groups[v] = {}; order[#order + 1] = v end
    table.insert(groups[v], r - 1)
  end
  return order, groups
end

-- What every rank holds, in a title: "3 f32" when it is the same on every
-- rank, else each with its ranks: "3 f32 on 0, 4 i32 on 1-3".
local function grouped(list)
  local order, groups = by_value(list)
  if #order == 1 then return order[1], 1 end
  local parts = {}
  for i, s in ipairs(order) do parts[i] = s .. " on " .. require("gcsh.repro").ranges(groups[s]) end
  return table.concat(parts, ", "), #order
end

-- Every rank's tensor ("3 f32") in a title: as grouped for one or two
-- shapes, else the dtypes and the range of lengths ("i32, 1 to 8 elements").
local function shapes_text(shapes)
  local text, count = grouped(shapes)
  if count <= 2 then return text end
  local dtypes, low, high = {}, math.huge, 0
  for r, s in ipairs(shapes) do
    local len, dtype = s:match("^(%d+) (.*)$")
    dtypes[r], low, high = dtype, math.min(low, tonumber(len)), math.max(high, tonumber(len))
  end
  local lengths = low == high and (low .. " elements") or (low .. " to " .. high .. " elements")
  return grouped(dtypes) .. ", " .. lengths
end

-- Any other value: each rank's text as the prompt prints it (gcsh.pretty);
-- kinds: each rank's type_of.
local function format_any(x, c, kinds)
  c = c or comm.world()
  local texts = c:agree(require("gcsh.pretty").format(x))
  local title = grouped(kinds)
  if not title:find(" on ", 1, true) then
    title = string.format("%s on %d rank%s", title, #texts, #texts == 1 and "" or "s")
  end
  local multiline = false
  for _, t in ipairs(texts) do multiline = multiline or t:find("\n", 1, true) ~= nil end
  if not multiline then
    local rows = {}
    for r, t in ipairs(texts) do rows[r] = { t } end
    return render(title, { "value" }, rows, nil)
  end
  local out = { title }
  local order, groups = by_value(texts)
  for _, t in ipairs(order) do
    local ranks = groups[t]
    out[#out + 1] = "rank" .. (#ranks > 1 and "s " or " ") .. require("gcsh.repro").ranges(ranks) .. ":"
    out[#out + 1] = "  " .. t:gsub("\n", "\n  ")
  end
  return table.concat(out, "\n")
end

-- A field's value on one line: a list of scalars space separated.
local function flat(v)
  if type(v) ~= "table" then return (tostring(v):gsub("[\t\n]", " ")) end
  local parts = {}
  for i, e in ipairs(v) do parts[i] = tostring(e) end
  return table.concat(parts, " ")
end

-- "prefix" then words, wrapped at WIDTH under the column indent.
local WIDTH = 76 -- rank 0 prints it under a "[0] " prefix
local function wrapped(out, prefix, indent, text)
  local line = prefix
  for word in text:gmatch("%S+") do
    if #line + 1 + #word > WIDTH and #line > indent then
      out[#out + 1] = line
      line = string.rep(" ", indent + 2) .. word
    else
      line = line .. ((#line == 0 or line:sub(-1) == " ") and "" or " ") .. word
    end
  end
  out[#out + 1] = line
end

-- The communicator the rows travel over: x's, or after an abort (the
-- evidence of a hang, readable until freed) a fresh world when x's had
-- every rank (x.size: an aborted communicator's fields are refused; the
-- window's are not).
local function exchange(c, x)
  if tostring(c) ~= "comm(aborted)" then return c end
  if x.size ~= size then
    error("show: the window's communicator was aborted and is not the world's; "
          .. "w:sync_state() reads it on each rank", 4)
  end
  return comm.world()
end

local function format_info(x)
  local kind = type_of(x)
  local info, mine = x:info(), {}
  for k, v in pairs(info) do mine[#mine + 1] = k .. "\t" .. flat(v) end
  local texts = exchange(x.comm, x):agree(table.concat(mine, "\n"))
  local values, keys = {}, {}
  for r, t in ipairs(texts) do
    for line in t:gmatch("[^\n]+") do
      local k, v = line:match("^([^\t]*)\t(.*)$")
      if not values[k] then values[k] = {}; keys[#keys + 1] = k end
      values[k][r] = v
    end
  end
  table.sort(keys)
  local col = 0
  for _, k in ipairs(keys) do col = math.max(col, #k) end
  local head = tostring(x):gsub(", rank %d+ of %d+", "")
  local out = { string.format("%s: %s:info() on %d rank%s", head, kind == "window" and "w" or "s",
                              #texts, #texts == 1 and "" or "s") }
  local ranges = require("gcsh.repro").ranges
  for _, k in ipairs(keys) do
    local per_rank = {}
    for r = 1, #texts do per_rank[r] = values[k][r] or "(none)" end
    local order, groups = by_value(per_rank)
    local name = "  " .. k .. string.rep(" ", col - #k) .. "  "
    if #order == 1 then
      wrapped(out, name, #name, order[1])
    else
      for i, v in ipairs(order) do
        local prefix = (i == 1 and name or string.rep(" ", #name)) .. "[" .. ranges(groups[v]) .. "] "
        wrapped(out, prefix, #name, v)
      end
    end
  end
  return table.concat(out, "\n")
end

-- show(w, "sync" [, s]): w:sync_state() of every rank as one table, equal
-- rows folded under their ranks; a word that is not the rank's own count
-- is marked (that member is behind or ahead of it).  With signals s, their
-- words follow (show(s)).
--   window(#1, 8 f32, host, team 0-1): w:sync_state() on 2 ranks
--   ranks  epoch  b[0]  b[1]  ll  ll[0]  ll[1]
--   [0-1]      2     2     2   1      1      1
local function format_sync(x, s)
  local st = x:sync_state()
  local team = x.team
  local cells = { tostring(st.epoch) }
  local marks = {}
  for _, r in ipairs(team) do
    cells[#cells + 1] = tostring(st.seen[r]) .. (st.seen[r] ~= st.epoch and "*" or "")
  end
  cells[#cells + 1] = tostring(st.ll_calls)
  for _, r in ipairs(team) do
    cells[#cells + 1] = tostring(st.ll_seen[r]) .. (st.ll_seen[r] ~= st.ll_calls and "*" or "")
  end
  local texts = exchange(x.comm, x):agree(table.concat(cells, "\t"))
  local header = { "ranks", "epoch" }
  for _, r in ipairs(team) do header[#header + 1] = "b[" .. r .. "]" end
  header[#header + 1] = "ll"
  for _, r in ipairs(team) do header[#header + 1] = "ll[" .. r .. "]" end
  local ranges = require("gcsh.repro").ranges
  local grid = { header }
  local order, groups = by_value(texts)
  for _, t in ipairs(order) do
    local line = { "[" .. ranges(groups[t]) .. "]" }
    for cell in (t .. "\t"):gmatch("([^\t]*)\t") do
      line[#line + 1] = cell
      if cell:sub(-1) == "*" then marks.any = true end
    end
    grid[#grid + 1] = line
  end
  local width = {}
  for _, line in ipairs(grid) do
    for k, cell in ipairs(line) do width[k] = math.max(width[k] or 0, #cell) end
  end
  local head = tostring(x):gsub(", rank %d+ of %d+", "")
  local out = { string.format("%s: w:sync_state() on %d rank%s", head, #texts,
                              #texts == 1 and "" or "s") }
  for _, line in ipairs(grid) do
    local parts = {}
    for k, cell in ipairs(line) do
      parts[k] = string.format((k == 1 and "%-" or "%") .. width[k] .. "s", cell)
    end
    out[#out + 1] = (table.concat(parts, "  "):gsub("%s+$", ""))
  end
  out[#out + 1] = "(epoch: barriers entered; b[r]: the last barrier r signalled here; ll: ll"
  out[#out + 1] = " calls done, the next on set ll % 2; ll[r]: r's newest ll flag here"
                  .. (marks.any and ";" or ")")
  if marks.any then out[#out + 1] = " * = not this rank's own count: r is behind or ahead)" end
  if s ~= nil then out[#out + 1] = M.format(s) end
  return table.concat(out, "\n")
end

-- A window or signals set whose memory went with its aborted communicator
-- (kind nccl: NCCL's mappings) refuses every read: said at show's caller,
-- not at the first read in here.
local function check_readable(x)
  local kind, ok, err = type_of(x), true, nil
  if kind == "window" then ok, err = pcall(x.tensor, x)
  elseif kind == "signals" then ok, err = pcall(x.read, x, 0) end
  if not ok then error(err, 4) end
end

function M.format(x, c, s)
  local kind = type_of(x)
  check_readable(x)
  if c == "info" and (kind == "window" or kind == "signals") then return format_info(x) end
  if c == "sync" and kind == "window" then return format_sync(x, s) end
  if type(c) == "string" then
    error(string.format("show: unknown aspect '%s' (valid: info, for a window or signals; "
                        .. "sync, for a window)", c), 3)
  end
  if c ~= nil and type_of(c) ~= "comm" then
    error(string.format("show: argument #2 must be a communicator (or \"info\", \"sync\"), got %s "
                        .. "(show takes no options table)", type_of(c)), 3)
  end
  local src = source(x, c)
  local over = src and exchange(src.comm, x) or c or comm.world()
  -- Every rank says what it holds first, so that all take the same path: a
  -- tensor on one rank and a table on another show as text on every rank.
  local said = over:agree(
    type_of(x) .. "\t" .. (src and src.n or 0) .. "\t" .. (src and src.shape or ""))
  local n, kinds, shapes, same = 0, {}, {}, true
  for r, s in ipairs(said) do
    local kind, len, shape = s:match("^([^\t]*)\t(%d+)\t(.*)$")
    n, kinds[r], shapes[r], same = math.max(n, tonumber(len)), kind, shape, same and kind == type_of(x)
  end
  if not src or not same then return format_any(x, c, kinds) end
  local cols = columns(n)
  local mine = {}
  for k, i in ipairs(cols) do
    if i then
      mine[k] = i < src.n and src.value(i) or ""
    else -- the elided middle: a digest, so a rank whose hidden elements differ is marked
      local first = ENDS
      local count = math.min(src.n, n - ENDS) - first
      mine[k] = count > 0 and tostring(src.digest(first, count)) or "-"
    end
  end
  local rows = {}
  for r, s in ipairs(over:agree(table.concat(mine, "\t"))) do
    local cells, k = {}, 0
    for cell in (s .. "\t"):gmatch("([^\t]*)\t") do k = k + 1; cells[k] = cell end
    rows[r] = cells
  end
  local wheres = src.where and over:agree(src.where) or nil
  local title = type(src.title) == "function" and src.title(shapes_text(shapes)) or src.title
  -- columns by window element when every rank's view starts at the same one
  local base
  if src.offset then
    local offsets = over:agree(tostring(src.offset))
    base = tonumber(offsets[1])
    for _, o in ipairs(offsets) do if tonumber(o) ~= base then base = nil end end
    if base and base > 0 then
      title = title .. string.format(" (columns: window elements from %d)", base)
    elseif not base then
      title = title .. " (columns: from each view's start)"
    end
  end
  return render(title, cols, rows, wheres, base)
end

function M.show(x, c, s)
  local text = M.format(x, c, s)
  local kind = type_of(x)
  local me = (kind == "window" or kind == "signals") and x.rank or (c or comm.world()).rank
  if me == 0 then print(text) end
end

return M
