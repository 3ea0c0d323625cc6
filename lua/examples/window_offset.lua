-- Bug class: ranks use a window at different offsets.
--
-- A collective over a window region must use the same offset and length on
-- every rank: the kernels pair element i of one slice with element i of the
-- others.  An offset computed from per-rank state (here: where this rank's
-- own data starts) pairs different elements, and the sum is wrong on every
-- rank -- or, past the end, a fault.  gcsh's collective check compares the
-- arguments first and fails on every rank, naming each rank's call.
--
--   gcsh -n 2 lua/examples/window_offset.lua         one offset for everyone: exit 0
--   gcsh -n 2 lua/examples/window_offset.lua --bug   offsets differ by rank: gcsh's refusal, exit 1
local opt = repro.args()
repro.need { ranks = 2 }

local c = comm.world()
local w = c:window(32)
w:tensor():fill(rank + 1)

local offset = 8
if opt.bug then
  local mine = 8 + rank -- "my data starts here": a per-rank value
  repro.refused(function() kernel.allreduce(w, { offset = mine, n = 16 }) end,
                "kernel.allreduce at offset " .. mine .. " on rank " .. rank)
end
local out = kernel.allreduce(w, { offset = offset, n = 16 })
repro.expect(out, tensor.new(16):fill(size * (size + 1) // 2), "sum", c)
w:free()
if rank == 0 then print("kernel.allreduce over elements 8..23 on every rank") end
