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

-- a view of a window numbers its columns by the window's elements when
-- every rank's view starts at the same one, else from each view's start
do
  local at = S.format(w:tensor():view(5, 3))
  H.truthy(at:find("^tensor %(3 f32%): each rank's %(columns: window elements from 5%)\nrank +where +%[5%] +%[6%] +%[7%]\n"), at)
  if n > 1 then
    local apart = S.format(w:tensor():view(me, 2))
    H.truthy(apart:find("^tensor %(2 f32%): each rank's %(columns: from each view's start%)\nrank +where +%[0%] +%[1%]\n"), apart)
  end
  H.eq(w:tensor():view(5, 3).offset, 5, "t.offset: a view's start")
  H.eq(tensor.new(4).offset, 0, "t.offset of a tensor")
  H.truthy(not S.format(tensor.new(4):view(1, 2)):find("columns:", 1, true), "a host tensor's view: its own columns")
end

-- one rank apart from the others: only its cells are marked
if n >= 3 then
  w:tensor():fill(me == 1 and 5 or 0)
  c:barrier()
  local one = S.format(w)
  H.truthy(one:find("\n   1 +5%*") and not one:find("0*", 1, true), one)
  H.truthy(one:find("(* = differs from the most common value in its column)", 1, true), one)
end

-- one rank apart only in the elided middle: its "..." is marked, the
-- others' not; with every rank equal again, nothing is
if n >= 3 then
  w:tensor():fill(0)
  if me == 2 then w:tensor()[6] = 9 end
  c:barrier()
  local hid = S.format(w)
  local rows = {}
  for line in (hid .. "\n"):gmatch("(.-)\n") do rows[#rows + 1] = line end
  H.truthy(rows[5]:find("^   2 .* %.%.%.%* "), "rank 2's elided cells are marked: " .. hid)
  for _, r in ipairs { 3, 4, 6 } do
    if rows[r] and rows[r]:match("^ +%d") then
      H.truthy(not rows[r]:find("...*", 1, true), "only rank 2 is marked: " .. rows[r])
    end
  end
  H.truthy(hid:find("(...* = an element not shown differs from the most common rank's)", 1, true), hid)
  H.truthy(not hid:find("(* = differs", 1, true), "no shown cell differs: " .. hid)
  c:barrier()
  w:tensor():fill(0)
  c:barrier()
  H.truthy(not S.format(w):find("*", 1, true), "all equal: no mark")
  c:barrier()
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
-- (the title names each rank's length: never the longest as everyone's)
local want = ({ "tensor (1 i32): ", "tensor (1 i32 on 0, 2 i32 on 1): " })[n]
  or "tensor (i32, 1 to " .. n .. " elements): "
H.truthy(ttext:find(want .. "each rank's", 1, true), ttext)
-- a column only the longer ranks fill: their equal cells are not marked
H.truthy(not ttext:find("*", 1, true), ttext)

-- show prints only on rank 0 and returns nothing
H.eq(select("#", show(w)), 0, "show returns nothing")

-- any other value: each rank's text as the prompt prints it, a row a rank
-- (every rank's value differs: no value is the most common, nothing is marked)
local want = { string.format("number on %d rank%s", n, n == 1 and "" or "s"), "rank  value" }
for r = 0, n - 1 do want[#want + 1] = string.format("%4d  %d", r, r) end
H.eq(S.format(me, c), table.concat(want, "\n"), "show(a number)")
H.eq(S.format(nil, c):match("^[^\n]*"), string.format("nil on %d rank%s", n, n == 1 and "" or "s"), "show(nil)")
for _, v in ipairs { true, "text", { 1, a = 2 }, print, io.stdout, coroutine.create(print), c } do
  local ok, text = pcall(S.format, v, c)
  H.truthy(ok and text:find("^%S+ on " .. n .. " rank"), "show(a " .. type(v) .. "): " .. tostring(text))
end
-- values of several lines: each different text once, under its ranks
local long = S.format({ string.rep("x", 70), odd = me % 2 == 1 }, c)
H.truthy(long:find("\nrank" .. (n > 2 and "s 0,2" or " 0") .. ":\n  {\n", 1, true), long)
H.eq(select("#", show(42)), 0, "show(42) returns nothing")
-- every global, in one order on every rank (show is collective)
local names = {}
for name in pairs(_G) do names[#names + 1] = name end
table.sort(names)
for _, name in ipairs(names) do
  local ok, text = pcall(S.format, _G[name], c)
  H.truthy(ok and text:find(" on " .. n .. " rank"), "show(" .. name .. "): " .. tostring(text))
end
s:free()
w:free()
print("window_show ok")
