-- Signals on the host backend: set/add/read/reset/wait, ordering (data,
-- then signal: the waiter sees the data), timeouts, and bad input.
local H = require "harness"

local c = comm.world()
local T = H.team(c)
local me, n, team_size, nxt, prev = T.me, T.n, T.size, T.next, T.prev

local s = c:signals(4)
H.eq(s.n, 4, "n")
H.eq(s.kind, "host", "kind")
for slot = 0, 3 do H.eq(s:read(slot), 0, "new words are zero") end
H.truthy(tostring(s):find("signals(#" .. s.seq .. ", 4 slots, host", 1, true), "tostring")
H.eq(s:info().alloc_bytes % s:info().granularity, 0, "rounded words")
H.eq(s:info().bytes, 32, "4 words")

-- ordering: write data into the next rank's slice, then signal it; the
-- waiter sees the data once its wait returns
local w = c:window(1000, "i32")
for round = 1, 3 do
  w:peer(nxt):fill(me * 1000 + round)
  s:add(nxt, 0, 1)
  s:wait(0, round)
  H.eq(w:tensor():sum(), 1000 * (prev * 1000 + round), "data before the signal, round " .. round)
  H.eq(s:read(0), round, "one add per round")
  c:barrier() -- nobody overwrites a slice before its owner has checked it
end

-- set and the comparisons
s:set(nxt, 1, 42)
s:wait(1, 42, "==")
s:wait{ slot = 1, value = 42, cmp = ">=", cpu = true, timeout = 5 }
s:wait(1, 43, "<")
s:wait(1, 41, ">")
s:wait(1, 42, "<=")
s:wait(1, 7, "~=")
H.eq(s:read(1), 42, "set")
c:barrier()

-- a wait that cannot finish times out with a clear error
local err = H.raises(function() s:wait{ slot = 2, value = 1, cpu = true, timeout = 0.05 } end,
                     "wait: timed out after 0.05 s: slot 2 is 0, waiting for >= 1")
local t0 = gcsh.wtime()
H.raises(function() s:wait{ slot = 3, value = 5, cmp = "==", cpu = true, timeout = 0.2 } end,
         "waiting for == 5")
H.truthy(gcsh.wtime() - t0 >= 0.19, "the timeout is honoured")

-- reset zeroes my words (local; the barrier orders it against peers)
s:reset()
for slot = 0, 3 do H.eq(s:read(slot), 0, "reset") end
c:barrier()

-- bad input
H.raises(function() s:set(nxt, 4, 1) end, "set: slot 4 out of range (valid 0..3)")
H.raises(function() s:add(nxt, -1, 1) end, "add: slot -1 out of range (valid 0..3)")
H.raises(function() s:read(9) end, "read: slot 9 out of range (valid 0..3)")
H.raises(function() s:read(1.5) end, "read: slot must be an integer slot 0..3, got 1.5")
H.raises(function() s:wait(4, 1) end, "wait: slot 4 out of range")
H.raises(function() s:wait{ slot = 5, value = 1 } end, "wait: slot 5 out of range")
H.raises(function() s:set(nxt, 0, 2^64) end, "set: value must be an integer 0..18446744073709551615 (a u64 word; "
         .. "a negative integer is its two's complement, as math.ult reads it), got 1.844674407371e+19")
H.raises(function() s:add(nxt, 0, 0.5) end, "add: value must be an integer")
H.raises(function() s:wait(0, 1, "=>") end, "unknown cmp '=>' (valid: >= > == ~= <= <)")
H.raises(function() s:wait{ slot = 0, value = 1, timeout = 1 } end, "timeout needs cpu=true")
H.raises(function() s:wait{ slot = 0, value = 1, cpu = true, timeout = -1 } end,
         "timeout must be a number of seconds >= 0, got -1")
H.raises(function() s:wait{ slot = 0, valu = 1 } end, "unknown option 'valu'")
H.raises(function() s:set(n, 0, 1) end, string.format("peer %d out of range (the comm has ranks 0..%d)", n, n - 1))
if team_size < n then
  -- a rank on another node: reached over the network, checked the same way
  local outside = (me + team_size) % n
  H.raises(function() s:set(outside, s.n, 1) end, "slot")
end
H.raises(function() c:signals(0) end, "bad argument #1 to 'signals' (n must be 1..1048576, got 0)")
H.raises(function() c:signals((1 << 20) + 1) end, "n must be 1..1048576")
H.raises(function() c:signals(4, { kind = "gpu" }) end, "unknown kind 'gpu' (valid: host nccl vmm)")
if n > 1 then
  H.raises(function() c:signals(me == 0 and 4 or 8) end, "signals #")
end

-- freeing
w:free()
s:free()
H.raises(function() s:read(0) end, "attempt to use a freed signals")
H.raises(function() s:set(nxt, 0, 1) end, "attempt to use a freed signals")
H.eq(tostring(s), "signals (freed)", "tostring after free")
s:free()
print("signal_basic ok")
