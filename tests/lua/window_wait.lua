-- t:wait(i, v [, cmp="eq"]) on a window element (issue 37): the CPU waits
-- until element i of a tensor over a window's memory compares true against
-- v.  Conditions that hold return at once, for every dtype (integers
-- compare exactly, floats as doubles); a peer's store wakes a wait; every
-- argument is checked, naming the bound; a tensor outside a window is
-- refused.  tests/sh/tensor_wait.sh shows a stuck wait's hang report.
local H = require "harness"

local c = comm.world()
local T = H.team(c)
local me = T.me

-- ---- conditions that hold: each dtype, each comparison
local cases = {
  { "f32", 2.5, { { 2.5 }, { 2, "gt" }, { 3, "lt" }, { 2.5, "ge" }, { 2.5, "le" }, { 2, "ne" } } },
  { "f64", 0.1, { { 0.1 }, { 0.1, "==" }, { 0, ">" } } },
  { "f16", 0.5, { { 0.5 }, { 0.25, "gt" } } },
  { "bf16", -3, { { -3 }, { -3.5, "ge" } } },
  { "i64", (1 << 62) + 1, { { (1 << 62) + 1 }, { 1 << 62, "gt" }, { (1 << 62) + 2, "lt" } } },
  { "i32", -7, { { -7 }, { -8, "gt" }, { 0, "~=" } } },
  { "u32", 4000000000, { { 4000000000 }, { 3999999999, ">=" } } },
  { "u8", 255, { { 255 }, { 254, "gt" } } },
  { "i8", -128, { { -128 }, { 0, "lt" } } },
}
for _, case in ipairs(cases) do
  local dt, value, conds = case[1], case[2], case[3]
  local w = c:window(4, dt)
  local t = w:tensor()
  t:fill(value)
  for _, cond in ipairs(conds) do
    H.eq(t:wait(2, cond[1], cond[2]), t, dt .. " " .. tostring(cond[2] or "eq") .. " "
         .. tostring(cond[1]) .. ": returns t")
  end
  local v = t:view(1, 2)
  H.eq(v:wait(1, value), v, dt .. ": a view of the slice")
  w:free()
end

-- ---- a peer's store wakes the wait: each member waits on its own slice
-- for the round its previous team member writes into it, then on the
-- next member's slice (w:peer) for that member's answer
local w = c:window(8, "i32")
local mine = w:tensor()
mine:fill(0)
c:barrier()
for round = 1, 20 do
  w:peer(T.next)[3] = round          -- a store into the next member's slice
  mine:wait(3, round)                -- the previous member's store into mine
  mine[5] = round                    -- my answer, in my slice
  w:peer(T.next):wait(5, round, "ge") -- the next member answered this round
end
c:barrier()
H.eq(mine[3], 20, "the last round")

H.raises(function() gcsh.graph(function() mine:wait(3, 20) end) end,
         "gcsh.graph: a wait on a window element (t:wait) cannot be captured")

-- ---- arguments, checked before any wait
local err = H.raises(function() tensor.new(4, "i32"):wait(0, 0) end, "wait: the tensor is not in a window (")
H.truthy(err:find(" memory: no other rank can write it); wait on w:tensor(), w:peer(r) or a view of one", 1, true),
         "says why and what to wait on: " .. err)
H.raises(function() mine:wait(8, 0) end, "index 8 out of range for tensor of length 8 (valid 0..7)")
H.raises(function() mine:view(2, 3):wait(3, 0) end, "index 3 out of range for tensor of length 3 (valid 0..2)")
H.raises(function() mine:wait(-1, 0) end, "index -1 out of range")
H.raises(function() mine:wait(0, 0.5) end, "value 0.5 is not an integer (i32 holds integers)")
H.raises(function() mine:wait(0, 1 << 40) end, "value 1099511627776 out of range for i32")
H.raises(function() mine:wait(0, "x") end, "number expected, got string")
H.raises(function() mine:wait(0, 0, "geq") end,
         "wait: unknown cmp 'geq' (valid: eq ne ge gt le lt, or == ~= >= > <= <)")
local u8 = c:window(2, "u8")
H.raises(function() u8:tensor():wait(0, 256) end, "value 256 out of range for u8 (0..255)")
H.raises(function() u8:tensor():wait(0, -1) end, "value -1 out of range for u8 (0..255)")
u8:free()
c:barrier()
w:free()
H.raises(function() mine:wait(0, 0) end, "attempt to use a freed window")
