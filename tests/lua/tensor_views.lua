-- tensor: views share storage; lifetimes of parents, views, :free(),
-- __close and __gc.
local H = require "harness"

local r = rank

-- views share memory, with 0-based offsets -----------------------------------
local t = tensor.new(10, "i32"):arange(r * 100)
local v = t:view(2, 5)
H.eq(#v, 5, "view length")
H.eq(v.dtype, "i32", "view dtype")
H.eq(v.where, "host", "view where")
H.eq(v[0], r * 100 + 2, "view element 0 is parent element offset")
H.values(v, {r * 100 + 2, r * 100 + 3, r * 100 + 4, r * 100 + 5, r * 100 + 6}, nil, "view values")
v[1] = -1
H.eq(t[3], -1, "write through a view shows in the parent")
t[6] = -2
H.eq(v[4], -2, "write to the parent shows in the view")
v:fill(7)
H.values(t, {r * 100, r * 100 + 1, 7, 7, 7, 7, 7, r * 100 + 7, r * 100 + 8, r * 100 + 9}, nil,
  "fill of a view touches only the window")
H.truthy(t:view(8) ~= t:view(8), "distinct handles")
H.eq(#t:view(8), 2, "view n defaults to the rest")
H.eq(#t:view(10), 0, "empty view at the end")
H.eq(#t:view(3, 0), 0, "empty view inside")

-- view of a view: offsets compose
local vv = t:view(1, 8):view(2, 3)
H.values(vv, {7, 7, 7}, nil, "view of view")
vv:arange(50)
H.values(t:view(3, 3), {50, 51, 52}, nil, "view of view lands at 1 + 2")
H.eq(tostring(vv), "tensor(i32, 3, host) [50, 51, 52]", "view tostring")

-- initialisers on views: rand restarts its counter at the view's element 0
local big = tensor.new(20, "f32"):rand(r)
local part = tensor.new(20, "f32"):fill(0)
part:view(5, 10):rand(r)
H.truthy(part:view(5, 10):equal(big:view(0, 10)), "rand over a view = rand over a fresh tensor")
H.eq(part[4], 0.0, "rand of a view leaves the rest alone")

-- overlapping copy between views of one storage behaves like memmove
local m = tensor.new(8, "i64"):arange()
m:view(2, 5):copy(m:view(0, 5))
H.values(m, {0, 1, 0, 1, 2, 3, 4, 7}, nil, "overlapping copy forward")
m:arange()
m:view(0, 5):copy(m:view(2, 5))
H.values(m, {2, 3, 4, 5, 6, 5, 6, 7}, nil, "overlapping copy backward")

-- reads through views: sum, equal, checksum over the window only
local s = tensor.new(100, "u8"):arange()
H.eq(s:view(10, 10):sum(), 145, "sum of a view")
H.truthy(s:view(10, 3):equal(tensor.from({10, 11, 12}, "i64")), "equal of a view")
H.eq(s:view(1, 3):checksum(), tensor.from({1, 2, 3}, "u8"):checksum(), "checksum of a view")
H.values(s:view(97):totable(), {97, 98, 99}, nil, "totable of a view")

-- :free() ---------------------------------------------------------------------
local p = tensor.new(6, "f32"):fill(r)
local pv = p:view(1, 3)
local pvv = pv:view(1, 1)
p:free()
H.raises(function() return p[0] end, "attempt to use a freed tensor", "parent after free")
H.raises(function() return pv[0] end, "attempt to use a freed tensor", "view after parent free")
H.raises(function() return pvv:sum() end, "attempt to use a freed tensor", "view of view after free")
H.raises(function() pv[0] = 1 end, "attempt to use a freed tensor", "write after free")
H.raises(function() pv:fill(1) end, "attempt to use a freed tensor", "fill after free")
H.raises(function() return #pv end, "attempt to use a freed tensor", "# after free")
H.raises(function() return pv.n end, "attempt to use a freed tensor", "field after free")
H.raises(function() return pv:view(0, 1) end, "attempt to use a freed tensor", "view after free")
H.raises(function() tensor.new(3):copy(pv) end, "attempt to use a freed tensor", "freed copy source")
H.raises(function() tensor.new(1):equal(pvv) end, "attempt to use a freed tensor", "freed comparand")
H.eq(tostring(p), "tensor (freed tensor)", "tostring of a freed tensor")
H.eq(tostring(pv), "tensor (freed tensor)", "tostring of a view of a freed tensor")
p:free() -- idempotent
pv:free()
pv:free()
H.raises(function() return pv[0] end, "attempt to use a freed tensor", "still freed")

-- freeing a view drops that handle only; the parent keeps its memory
local q = tensor.new(4, "f64"):fill(r + 1)
local qv = q:view(0, 2)
qv:free()
H.raises(function() return qv[0] end, "attempt to use a freed tensor", "freed view handle")
H.eq(q[0], r + 1.0, "parent lives after its view is freed")
H.eq(q:view(0, 2)[1], r + 1.0, "new views of the parent work")

-- __close frees at scope exit -------------------------------------------------
local escaped
do
  local c <close> = tensor.new(3, "i8"):fill(5)
  escaped = c:view(0, 1)
  H.eq(escaped[0], 5, "inside the scope")
end
H.raises(function() return escaped[0] end, "attempt to use a freed tensor", "after __close")

-- __gc: a view keeps its storage alive after the parent is collected ----------
local function make_view()
  local parent = tensor.new(1000, "i32"):arange(r)
  return parent:view(990, 10)
end
local lone = make_view()
collectgarbage("collect")
collectgarbage("collect")
H.values(lone, {r + 990, r + 991, r + 992, r + 993, r + 994, r + 995, r + 996, r + 997, r + 998, r + 999},
  nil, "view outlives its collected parent")
lone[0] = 1
H.eq(lone[0], 1, "and is writable")
-- many short-lived tensors and views are collected without trouble
for i = 1, 200 do
  local a = tensor.new(1000 + i, "f64"):fill(i)
  local b = a:view(i, 10):view(1, 5)
  H.eq(b[4], i + 0.0, "churn " .. i)
end
lone = nil
collectgarbage("collect")
