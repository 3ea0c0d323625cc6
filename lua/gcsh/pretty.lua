-- gcsh.pretty: Lua values as readable text, for the prompt's auto-print
-- (a line's results that are tables print through format, as in trepl) and
-- for anyone who wants it: require("gcsh.pretty").format(v [, opts]).
--
--   {1, 2, 3}
--   {backend = "host", devices = {{index = 0, name = "cpu"}}, n = 4}
--   {
--     crossovers = {...},
--     long_key = "a string that does not fit on the line with the others",
--   }
--
-- Keys sorted (the array part first, in order; then numbers, then strings),
-- a table on one line when it fits in the width, else one entry per line;
-- nesting beyond `depth` shows as {...}, entries beyond `items` as
-- "... (N more)".  Values with __tostring or __name (tensors, windows)
-- print as tostring does.  The text is the same on every rank that holds
-- the same value, so the prompt folds it across ranks.
local M = {}

M.defaults = { depth = 4, width = 72, items = 40 }

local function has_own_text(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and (mt.__tostring ~= nil or mt.__name ~= nil)
end

local function scalar(v)
  if type(v) == "string" then
    return (string.format("%q", v):gsub("\\\n", "\\n"):gsub("\t", "\\t"))
  end
  if math.type(v) == "float" and v == math.floor(v) and math.abs(v) < 2 ^ 53 then
    return string.format("%.1f", v)
  end
  return tostring(v)
end

local function key_text(k)
  if type(k) == "string" and k:match("^[%a_][%w_]*$") then return k end
  return "[" .. scalar(k) .. "]"
end

local KEY_RANK = { number = 1, string = 2 }

-- The entries of t: the array part 1..n in order, then the other keys sorted.
local function entries(t)
  local n = #t
  local list, rest = {}, {}
  for i = 1, n do list[i] = { i, t[i], array = true } end
  for k, v in pairs(t) do
    if not (math.type(k) == "integer" and k >= 1 and k <= n) then rest[#rest + 1] = { k, v } end
  end
  table.sort(rest, function(a, b)
    local ta, tb = KEY_RANK[type(a[1])] or 3, KEY_RANK[type(b[1])] or 3
    if ta ~= tb then return ta < tb end
    if ta == 3 then return tostring(a[1]) < tostring(b[1]) end
    return a[1] < b[1]
  end)
  for _, e in ipairs(rest) do list[#list + 1] = e end
  return list
end

local render

local function entry_text(e, o, level, seen, indent)
  local prefix = e.array and "" or (key_text(e[1]) .. " = ")
  return prefix .. render(e[2], o, level + 1, seen, indent, indent + #prefix)
end

-- An array of scalars too long for one line: as many per line as fit.
local function filled(parts, indent, o)
  local pad = string.rep(" ", indent + 2)
  local lines, line = { "{" }, pad
  for i, part in ipairs(parts) do
    local item = part .. (i < #parts and "," or "")
    if #line > #pad and #line + 1 + #item > o.width then
      lines[#lines + 1] = line
      line = pad .. item
    else
      line = line .. (#line > #pad and " " or "") .. item
    end
  end
  lines[#lines + 1] = line
  lines[#lines + 1] = string.rep(" ", indent) .. "}"
  return table.concat(lines, "\n")
end

-- v as text.  indent: the indentation of the line v is on (nested lines go
-- two further); col: the column where v starts (for the width).
function render(v, o, level, seen, indent, col)
  if type(v) ~= "table" or has_own_text(v) then
    return type(v) == "table" and tostring(v) or scalar(v)
  end
  if seen[v] then return "{...} (a cycle)" end
  local list = entries(v)
  if #list == 0 then return "{}" end
  if level >= o.depth then return "{...}" end
  seen[v] = true
  local shown = math.min(#list, o.items)
  local parts, inline, width, scalars = {}, true, 2, true
  for i = 1, shown do
    parts[i] = entry_text(list[i], o, level, seen, indent + 2)
    width = width + #parts[i] + 2
    if parts[i]:find("\n", 1, true) then inline = false end
    scalars = scalars and list[i].array and type(list[i][2]) ~= "table"
  end
  if shown < #list then parts[#parts + 1] = string.format("... (%d more)", #list - shown) end
  seen[v] = nil
  if inline and col + width <= o.width then
    return "{" .. table.concat(parts, ", ") .. "}"
  end
  if scalars then return filled(parts, indent, o) end
  local pad = string.rep(" ", indent + 2)
  local lines = { "{" }
  for i, part in ipairs(parts) do
    lines[#lines + 1] = pad .. part .. (i <= shown and "," or "")
  end
  lines[#lines + 1] = string.rep(" ", indent) .. "}"
  return table.concat(lines, "\n")
end

-- The text of v.  opts: depth (nesting shown), width (columns), items
-- (entries shown per table); defaults in M.defaults.
function M.format(v, opts)
  gcsh.check_options(opts, "pretty.format", "depth width items")
  local o = {}
  for k, d in pairs(M.defaults) do o[k] = opts and opts[k] or d end
  return render(v, o, 0, {}, 0, 0)
end

function M.print(v, opts) print(M.format(v, opts)) end

return M
