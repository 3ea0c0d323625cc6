-- show(): one table of every rank's values, built on every rank by
-- show.format and printed by rank 0.  Exact text at 2 ranks; shape elsewhere.
local H = require "harness"
local S = require "gcsh.show"

local c = comm.world()
local me, n = c.rank, c.size
local same_node = (tonumber(os.getenv("GCSH_RANKS_PER_NODE") or "") or n) >= n

local w = c:window(12, "f32")
w:tensor():arange(me)
c:barrier()
local text = S.format(w)
if n == 2 then
  H.eq(text, table.concat({
    "window #" .. w.seq .. " (12 f32, host): each rank's slice",
    "rank  [0]  [1]  [2]  [3]  ...  [8]  [9]  [10]  [11]",
    "   0    0    1    2    3  ...    8    9    10    11",
    "   1    1    2    3    4  ...    9   10    11    12",
  }, "\n"), "show(w) at 2 ranks: no value is the most common, nothing is marked")
end
local lines = {}
for line in (text .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = line end
H.eq(#lines, n + 2, "a title, a header, a row per rank (every value differs: no marks, no legend)")

if same_node then
  local view_text = S.format(w:peer((me + 1) % n))
  if n == 2 then
    H.eq(view_text, table.concat({
      "tensor (12 f32): each rank's",
      "rank  where             [0]  [1]  [2]  [3]  ...  [8]  [9]  [10]  [11]",
      "   0  window of rank 1    1    2    3    4  ...    9   10    11    12",
      "   1  window of rank 0    0    1    2    3  ...    8    9    10    11",
    }, "\n"), "show(w:peer(next)) at 2 ranks")
  end
end

-- one rank apart from the others: only its cells are marked
if n >= 3 then
  w:tensor():fill(me == 1 and 5 or 0)
  c:barrier()
  local one = S.format(w)
  H.truthy(one:find("\n   1 +5%*") and not one:find("0*", 1, true), one)
  H.truthy(one:find("(* = differs from the most common value in its column)", 1, true), one)
end

-- equal values are not marked; short rows are not elided; signals
local s = c:signals(3)
s:set(me, 1, 7)
c:barrier()
local stext = S.format(s)
H.truthy(not stext:find("*", 1, true), "nothing marked when all ranks agree")
H.truthy(stext:find("signals #" .. s.seq .. " (3 slots, host): each rank's words\nrank  [0]  [1]  [2]\n   0    0    7    0", 1, true), stext)

-- tensors of different lengths and dtypes
local t = tensor.new(me + 1, "i32"):fill(5)
local ttext = S.format(t, c)
H.truthy(ttext:find("tensor (" .. n .. " i32): each rank's", 1, true), ttext)

-- show prints only on rank 0 and returns nothing
H.eq(select("#", show(w)), 0, "show returns nothing")
H.raises(function() show(42) end, "show: window, tensor or signals expected, got number")
s:free()
w:free()
print("window_show ok")
