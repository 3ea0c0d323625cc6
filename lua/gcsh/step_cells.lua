-- What the steppers' diagram cells say: a sampled value read as text, and,
-- in bits mode (every rank r started with 2^r and the op sums), the set of
-- ranks whose data a cell holds, with repeats (a race).  The judge
-- (step_judge.lua) and the renderer (step_diagram.lua) both read cells
-- through this module.
local C = {}

-- Highest rank count whose 2^r sums a dtype holds exactly (bits), and the
-- relative tolerance when judging float cells (the kernels round per step):
-- the dtype facts, C's one list (src/core/dtype.c).
local BITS, RTOL = {}, {}
for name, d in pairs(require("gcsh.dtypes")) do BITS[name], RTOL[name] = d.bits, d.rtol end
local INTEGER = { i32 = true, u32 = true, i64 = true, u8 = true, i8 = true }

-- ---- reading values --------------------------------------------------------------

-- Whether the cells can be read as contributor sets: every rank r's slice
-- held 2^r everywhere at the start, and the op sums (or there is none).
function C.bits_mode(L, start, op, dtype)
  if (op and op ~= "sum") or L.k > (BITS[dtype] or 0) then return false end
  for i, row in ipairs(L.rows) do
    if row.kind == "slice" then
      for c = 1, #L.cells do
        local v = start[i][c]
        if v and (v[1] ~= 2 ^ row.rank or v[2] ~= 2 ^ row.rank) then return false end
      end
    end
  end
  return true
end

-- "0-2,5" for the set bits of mask.
local function ranks_text(mask, k)
  local parts, r = {}, 0
  while r < k do
    if mask >> r & 1 == 1 then
      local s = r
      while r + 1 < k and mask >> (r + 1) & 1 == 1 do r = r + 1 end
      parts[#parts + 1] = s == r and tostring(s) or (s .. (r == s + 1 and "," or "-") .. r)
    end
    r = r + 1
  end
  return table.concat(parts, ",")
end

-- The contributor set a value names, as a mask, or nil when it names none
-- (not an integer, negative, or bits of ranks that do not exist).
local function mask_of(v, k)
  local m = math.tointeger(v)
  if not m or m < 0 or m >= (1 << k) then return nil end
  return m
end

local function value_text(v, dtype)
  if v ~= v then return "nan" end
  if INTEGER[dtype] or (math.tointeger(v) and math.abs(v) < 1e6) then
    return string.format("%d", math.tointeger(v) or v)
  end
  return string.format("%.4g", v)
end

-- The text of one value: ranks in bits mode (when it names some), else the
-- value itself.
function C.text(view, v)
  if view.bits then
    local m = mask_of(v, view.k)
    if m then return m == 0 and "-" or ranks_text(m, view.k) end
  end
  return value_text(v, view.dtype)
end

-- ---- sets of ranks, with repeats ---------------------------------------------------
--
-- A cell's contributors as counts by rank ({[0] = 1, [1] = 2}: rank 0's data
-- once, rank 1's twice), for bits mode.

local function set_of_mask(mask, k)
  local set = {}
  for r = 0, k - 1 do if mask >> r & 1 == 1 then set[r] = 1 end end
  return set
end

-- The set a value names when read as bits, or nil.
local function decode(view, v)
  if not view.bits then return nil end
  local m = mask_of(v, view.k)
  return m and set_of_mask(m, view.k) or nil
end

-- What a move makes of its sources' sets: a copy keeps the set, a sum adds
-- them up; nil when some source's set is unknown.
local function move_set(m, sets, n)
  for i = 1, n do if not sets[i] then return nil end end
  if m.op == "copy" then return sets[1] end
  local out = {}
  for i = 1, n do for r, count in pairs(sets[i]) do out[r] = (out[r] or 0) + count end end
  return out
end

local TIMES = { [2] = "twice", [3] = "three times", [4] = "four times" }

-- The ranks a set holds more than once, in words: "" for none, "rank 1's
-- data twice", "ranks 1, 2's data three times", or per count: "rank 1's
-- data twice, rank 2's four times".
local function repeated(set, k)
  local by_count, counts = {}, {}
  for r = 0, k - 1 do
    local n = set[r] or 0
    if n > 1 then
      if not by_count[n] then by_count[n] = {}; counts[#counts + 1] = n end
      table.insert(by_count[n], tostring(r))
    end
  end
  table.sort(counts)
  local parts = {}
  for i, n in ipairs(counts) do
    local who = by_count[n]
    parts[i] = string.format("rank%s %s's%s %s", #who > 1 and "s" or "", table.concat(who, ", "),
                             i == 1 and " data" or "", TIMES[n] or (n .. " times"))
  end
  return table.concat(parts, ", ")
end

-- "0-2,5", or "0-3+1" (rank 1 once more), "-" for none.
local function set_text(set, k)
  local mask, extra = 0, {}
  for r = 0, k - 1 do
    local count = set[r] or 0
    if count > 0 then mask = mask | (1 << r) end
    for _ = 2, count do extra[#extra + 1] = tostring(r) end
  end
  local t = mask == 0 and "-" or ranks_text(mask, k)
  if #extra > 0 then t = t .. "+" .. table.concat(extra, "+") end
  return t
end

-- What a cell holds, as text: its set when known, else its first value.
local function holds_text(view, cell)
  if cell.set then return set_text(cell.set, view.k) end
  return C.text(view, cell[1])
end

local function flags_text(view, flags)
  local lo, hi = value_text(flags[1], view.dtype), value_text(flags[2], view.dtype)
  return lo == hi and "f" .. lo or "f" .. lo .. "-" .. hi
end

local function cell_text(view, cell)
  if not cell then return "" end
  local t = holds_text(view, cell)
  if not C.same(view, cell[1], cell[2]) then t = t .. "~" end
  if cell.flags then t = t .. " " .. flags_text(view, cell.flags) end
  return t
end

-- The sets of a state read afresh (st:show): a cell that holds what it held
-- in `known` (the state after the same step) keeps its set; the others
-- read as their bits.
function C.carry_sets(view, known, state)
  for r, row in ipairs(state) do
    for c, cell in ipairs(row) do
      local k = known and known[r][c]
      if cell then
        cell.set = k and k.set and C.same(view, k[1], cell[1]) and k.set or decode(view, cell[1])
      end
    end
  end
end

-- The sets of a first state: every cell's bits.
function C.start_sets(view, state)
  for _, row in ipairs(state) do
    for _, cell in ipairs(row) do if cell then cell.set = decode(view, cell[1]) end end
  end
end


function C.same(view, a, b)
  if a == b then return true end
  if a ~= a and b ~= b then return true end
  if type(a) ~= "number" or type(b) ~= "number" then return false end
  local rtol = RTOL[view.dtype]
  if not rtol then return false end
  return math.abs(a - b) <= rtol * math.max(math.abs(a), math.abs(b)) + rtol
end

C.INTEGER = INTEGER
C.ranks_text = ranks_text
C.cell_text = cell_text
C.set_text = set_text
C.holds_text = holds_text
C.repeated = repeated
C.decode = decode
C.move_set = move_set

return C
