-- Bug class: a mistyped option silently falls back to another algorithm or
-- backend.
--
-- A library that ignores options it does not know runs its default when a
-- caller misspells one: the benchmark says "one-shot" while NCCL ran, and
-- nobody notices until the numbers look odd.  gcsh refuses unknown option
-- names and unknown values, naming the valid ones, and kernel.allreduce
-- returns the algorithm that really ran, which a careful caller checks.
--
--   gcsh -n 2 lua/examples/bad_option.lua         ask for one-shot, check what ran: exit 0
--   gcsh -n 2 lua/examples/bad_option.lua --bug   {algorithm = "oneshot"}: gcsh's refusal, exit 1
local opt = repro.args()
repro.need { ranks = 2 }

local c = comm.world()
local w = c:window(256)
w:tensor():fill(rank + 1)

if opt.bug then
  -- "algorithm" is not an option of kernel.allreduce ("algo" is)
  repro.refused(function() kernel.allreduce(w, { algorithm = "oneshot" }) end,
                "kernel.allreduce with a mistyped option")
end
local out, ran = kernel.allreduce(w, { algo = "oneshot" })
if ran ~= "oneshot" then repro.fail("asked for oneshot, %s ran", ran) end
repro.expect(out, tensor.new(256):fill(size * (size + 1) // 2), "one-shot sum", c)
w:free()
if rank == 0 then print("kernel.allreduce ran " .. ran .. ", as asked") end
