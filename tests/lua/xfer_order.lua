-- Ordering of one-sided operations (issue 37): w:fence() and c:quiet().
-- Every rank streams rounds to the next rank of the communicator (over
-- loads and stores in its team, over the network path to another node:
-- tests/sh/window.sh runs this under GCSH_RANKS_PER_NODE=2 and =1), with
-- no barrier between rounds, so a receiver reads while its sender writes:
--   fence: put a block of data, w:fence(), put the round into a flag
--          element; the receiver waits for the flag (t:wait) and the block
--          it then reads is from that round or a later one, never older;
--   quiet: put a block, c:quiet(), then a signal add; the receiver's
--          s:wait sees the data of that round or later.
-- A flag seen before its data is the bug both would show.
local H = require "harness"

local c = comm.world()
local me, n = c.rank, c.size
local nxt, prv = (me + 1) % n, (me - 1) % n
local K, ROUNDS = 64, 40
local w = c:window(K + 1, "i32")
local s = c:signals(1)
w:tensor():fill(0)
c:barrier()

local mine = w:tensor()
local block = tensor.new(K, "i32")
local flag = tensor.new(1, "i32")

-- the block rank r sends in round k: every element r * 1000 + k.  Once the
-- flag (or signal) of round k is seen, every element is from round k or a
-- later one (the sender may be writing the next round as this reads).
local function check_block(round, what)
  local got = mine:view(0, K):totable()
  for i = 1, K do
    local from = got[i] - prv * 1000
    H.truthy(from >= round, string.format("%s: round %d's flag came before its data (element %d "
                                          .. "is of round %d)", what, round, i - 1, from))
  end
end

-- ---- fence: data, fence, flag (both puts; the receiver waits on the flag)
local put_block = w:put(nxt, block, 0)
local put_flag = w:put(nxt, flag, K)
for round = 1, ROUNDS do
  block:fill(me * 1000 + round)
  put_block:post()
  w:fence()
  flag:fill(round)
  put_flag:post()
  H.eq(mine:wait(K, round, "ge"), mine, "t:wait returns the tensor")
  check_block(round, "fence")
end
c:barrier()
H.eq(mine[K], ROUNDS, "the last flag")
H.eq(mine[0], prv * 1000 + ROUNDS, "the last block")
c:barrier()

-- ---- quiet: data, quiet, signal (a put-with-signal's order, by hand)
mine:fill(0)
c:barrier()
for round = 1, ROUNDS do
  block:fill(me * 1000 + round)
  put_block:post()
  c:quiet()
  s:add(nxt, 0, 1)
  s:wait(0, round)
  check_block(round, "quiet")
end
c:barrier()
H.eq(s:read(0), ROUNDS, "every signal landed")

-- a put with its signal, then quiet: complete at the target when quiet returns
mine:fill(0)
c:barrier()
block:fill(me * 1000 + 7)
w:put(nxt, block, 0, { signal = { s, 0, 5 } }):post()
c:quiet()
c:barrier()
H.eq(s:read(0), ROUNDS + 5, "the put's signal")
H.eq(mine[K - 1], prv * 1000 + 7, "the put's data")

-- a graph captures fence (a stream operation) and refuses quiet (a wait)
local g = gcsh.graph(function() w:fence() end)
H.eq(g.calls, 1, "the fence is captured")
g:replay(2)
g:free()
H.raises(function() gcsh.graph(function() c:quiet() end) end,
         "gcsh.graph: c:quiet() (the host waits for the rank's transfers) cannot be captured")

-- fence and quiet check their object
H.raises(function() w.fence(c) end, "window expected")
H.raises(function() c.quiet(w) end, "comm expected")
c:barrier()
s:free()
w:free()
H.raises(function() w:fence() end, "attempt to use a freed window")
c:quiet() -- nothing outstanding: returns at once
