-- Pretty-printing of nested Lua tables, keys sorted, for .info and friends.
local M = {}

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    if type(a) == type(b) and (type(a) == "number" or type(a) == "string") then return a < b end
    return type(a) < type(b)
  end)
  return keys
end

-- A flat array of scalars prints on one line: {0, 1, 1}.
local function is_flat_array(t)
  local n = #t
  if n == 0 then return false end
  for k, v in pairs(t) do
    if type(k) ~= "number" or k < 1 or k > n or k % 1 ~= 0 or type(v) == "table" then
      return false
    end
  end
  return true
end

local function render(v, indent, out)
  if type(v) ~= "table" then
    out[#out + 1] = type(v) == "string" and v or tostring(v)
    return
  end
  if is_flat_array(v) then
    local parts = {}
    for i = 1, #v do parts[i] = tostring(v[i]) end
    out[#out + 1] = "{" .. table.concat(parts, ", ") .. "}"
    return
  end
  for _, k in ipairs(sorted_keys(v)) do
    out[#out + 1] = "\n" .. string.rep("  ", indent) .. tostring(k) .. ": "
    render(v[k], indent + 1, out)
  end
end

-- Returns the text of v: one "key: value" line per field, nested tables indented.
function M.format(v)
  local out = {}
  render(v, 0, out)
  return (table.concat(out):gsub("^\n", ""))
end

function M.print(v) print(M.format(v)) end

return M
