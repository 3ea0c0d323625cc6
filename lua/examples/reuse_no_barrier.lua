-- Bug class: a buffer is reused before every reader is done with it (a
-- missing barrier).
--
-- Each round, every rank publishes a value in its slice of a window, a
-- barrier says "all slices are written", and every rank reads all slices
-- (a one-shot all-reduce by hand).  Then the next round writes the same
-- slices.  Without a second barrier -- "everyone has read" -- a fast rank
-- overwrites its slice while a slow one is still reading the previous
-- round, and the slow one sums a mix of two rounds.
--
-- On a GPU the same race reads freed or re-registered memory when the
-- buffer is deregistered instead of reused (see free_then_read.lua); reuse
-- is its safe cousin: it shows the race as wrong numbers, not a crash.
--
--   gcsh -n 2 lua/examples/reuse_no_barrier.lua         with the barrier: exit 0
--   gcsh -n 2 lua/examples/reuse_no_barrier.lua --bug   without: the slow rank's wrong sum, exit 1
local opt = repro.args()
repro.need { ranks = 2 }

local c = comm.world()
local w = c:window(4)
local out = tensor.new(4)
local slow = size - 1 -- the last rank reads late

local sums = {}
for round = 1, 2 do
  w:tensor():fill(round * (rank + 1))       -- round k: rank r publishes k * (r + 1)
  c:barrier()                                -- every slice is written
  if rank == slow then gcsh.sleep(0.3) end   -- a straggler (a busy SM, a late launch)
  kernel.reduce_peers(out, w)                -- read every rank's slice, sum
  if not opt.bug then c:barrier() end        -- the fix: nobody rewrites until all have read
  sums[round] = tensor.new(4):copy(out)
end
-- checked after both rounds (a check in between would itself synchronise)
for round = 1, 2 do
  local want = tensor.new(4):fill(round * size * (size + 1) // 2)
  repro.expect(sums[round], want, "round " .. round .. " sum", c)
end
w:free()
if rank == 0 then print("both rounds summed correctly on every rank") end
