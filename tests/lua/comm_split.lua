-- comm.world caching, split (colors, keys, nil color), free and <close>.
local H = require "harness"

local w = comm.world()
local me, n = w.rank, w.size
H.eq(me, rank, "world rank is the global rank")
H.eq(n, size, "world size is the global size")
H.truthy(rawequal(comm.world(), w), "comm.world() is cached")
H.eq(tostring(w), string.format("comm(rank %d of %d, %s)", me, n, gcsh.backend), "tostring")

-- odd / even colors, default key = parent rank keeps the order
local parity = w:split(me % 2)
H.eq(parity.size, (n - me % 2 + 1) // 2, "parity group size")
H.eq(parity.rank, me // 2, "parity rank follows world order")
local sum = parity:allreduce(tensor.from({ me }, "i32"))[0]
local want = 0
for r = me % 2, n - 1, 2 do want = want + r end
H.eq(sum, want, "allreduce on a split comm sums its members only")
parity:free()

-- key reverses the order
local rev = w:split(0, -me)
H.eq(rev.size, n, "one color: everyone")
H.eq(rev.rank, n - 1 - me, "key = -rank reverses ranks")
local got = rev:broadcast(tensor.from({ me }, "i64"), 0)[0]
H.eq(got, n - 1, "rank 0 of the reversed comm is the last world rank")
rev:free()

-- nil, false and negative colors: not in any new communicator
local color = 5
if me % 4 == 0 then color = nil elseif me % 4 == 1 then color = false elseif me % 4 == 2 then color = -3 end
local some = w:split(color)
if me % 4 <= 2 then
  H.eq(some, nil, "nil/false/negative color gives nil")
else
  H.eq(some.size, #(function() local t = {} for r = 3, n - 1, 4 do t[#t + 1] = r end return t end)(), "color 5 group")
  some:free()
end

-- split of a split
local half = w:split(me < n // 2 and 0 or 1)
local quarter = half:split(half.rank % 2)
H.eq(quarter.rank, half.rank // 2, "split of a split")
quarter:free()
half:free()

-- free is idempotent; a freed comm refuses use and says so
local tmp = w:split(1)
tmp:free()
tmp:free()
H.eq(tostring(tmp), "comm(freed)", "tostring of a freed comm")
H.raises(function() return tmp.rank end, "attempt to use a freed comm", "rank of freed")
H.raises(function() tmp:barrier() end, "attempt to use a freed comm", "barrier on freed")
H.raises(function() tmp:allreduce(tensor.new(1)) end, "attempt to use a freed comm", "allreduce on freed")

-- <close> frees at the end of the scope, on every rank
local kept
do
  local scoped <close> = w:split(0)
  kept = scoped
  H.eq(scoped.size, n, "scoped comm works")
end
H.eq(tostring(kept), "comm(freed)", "<close> freed the comm")

-- freeing the world: the next comm.world() is a new, working communicator
local w2 = comm.world()
H.truthy(rawequal(w2, w), "still the cached world")
w2:free()
H.eq(tostring(w), "comm(freed)", "the cached world was freed")
local w3 = comm.world()
H.truthy(not rawequal(w2, w3), "a new world after free")
H.eq(w3:allreduce(tensor.from({ 1 }, "i32"))[0], n, "the new world works")
H.truthy(rawequal(comm.world(), w3), "the new world is cached")

-- bad split arguments
H.raises(function() w3:split("x") end, "bad argument #1 to 'split'", "string color")
H.raises(function() w3:split(1 << 40) end, "color 1099511627776 does not fit in an int", "huge color")
H.raises(function() w3:split(0, 1.5) end, "bad argument #2 to 'split'", "non-integer key")

w3:barrier()
if me == 0 then print(string.format("comm_split: ok on %d ranks", n)) end
