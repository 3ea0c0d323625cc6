-- The steppers' samples: what each rank reads of its own buffers after a
-- step (the first and last element of every chunk cell of its rows, and an
-- ll slot's lowest and highest flag), their wire format (numbers in text,
-- one line per rank, gathered by the stepper), and the state of every
-- buffer made from every rank's samples, which the renderer
-- (step_diagram.lua) turns into text.
local S = {}

local ll_index = require("gcsh.step_move").ll_index

-- The index in a row's tensor of a cell's first element (tmp holds the
-- region from 0; a slice at its absolute place).
local function cell_start(L, row, cell)
  if row.ll then return ll_index(L.n, cell.slot, 0) end
  return row.tmp and cell.first - L.offset or cell.first
end

-- The lowest and highest flag of count elements of an ll area from first.
local function flag_range(t, first, count)
  local v = t:view(first, 2 * count):totable()
  local lo, hi = v[2], v[2]
  for i = 4, #v, 2 do lo, hi = math.min(lo, v[i]), math.max(hi, v[i]) end
  return lo, hi
end

-- This rank's samples: first and last element of every cell of its rows
-- (false for an empty cell), and for an ll slot its lowest and highest
-- flag, in row then cell order.  bufs: slice, tmp, ll (this rank's).
function S.sample(L, me, bufs)
  local out = {}
  for _, row in ipairs(L.rows) do
    if row.rank == me then
      local t = bufs[row.kind]
      for _, cell in ipairs(row.cells) do
        if cell.count == 0 then
          out[#out + 1] = false; out[#out + 1] = false
        else
          local i = cell_start(L, row, cell)
          local last = row.ll and ll_index(L.n, cell.slot, cell.count - 1) or i + cell.count - 1
          out[#out + 1] = t[i]; out[#out + 1] = t[last]
        end
        if row.ll then
          local lo, hi = flag_range(t, cell_start(L, row, cell), cell.count)
          out[#out + 1] = lo; out[#out + 1] = hi
        end
      end
    end
  end
  return out
end

local function pack_number(v)
  if v == false then return "-" end
  if math.type(v) == "integer" then return string.format("%d", v) end
  return string.format("%.17g", v)
end

local function unpack_number(s)
  if s == "-" then return false end
  local v = tonumber(s)
  if v then return v end
  if s:find("nan") then return 0 / 0 end
  return s:sub(1, 1) == "-" and -math.huge or math.huge
end

function S.pack(samples)
  local parts = {}
  for i, v in ipairs(samples) do parts[i] = pack_number(v) end
  return table.concat(parts, " ")
end

function S.unpack(text)
  local out = {}
  for word in text:gmatch("%S+") do out[#out + 1] = unpack_number(word) end
  return out
end

-- One state of every buffer, from every rank's samples (by[r + 1]):
-- state[row][cell] = {first value, last value [, flags = {lo, hi}]}, or
-- false for an empty cell.
function S.state(L, by)
  local state, pos = {}, {}
  for i, row in ipairs(L.rows) do
    local s = by[row.rank + 1]
    local p = pos[row.rank] or 1
    state[i] = {}
    for c = 1, #row.cells do
      local a, b = s[p], s[p + 1]
      local cell = a ~= false and a ~= nil and { a, b } or false
      p = p + 2
      if row.ll then
        if cell then cell.flags = { s[p], s[p + 1] } end
        p = p + 2
      end
      state[i][c] = cell
    end
    pos[row.rank] = p
  end
  return state
end

return S
