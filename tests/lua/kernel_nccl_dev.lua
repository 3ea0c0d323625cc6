-- algo "nccl_dev" (NCCL's device API) where it cannot run: on the host
-- backend every way of asking for it is refused with the same clear error
-- on every rank, naming the algorithm, the backend and the window's kind,
-- before any collective (the next collective finds every rank in step), and
-- the shell stays usable.  Where it runs (GPUs with NCCL symmetric memory):
-- tests/gpu/nccl_dev.lua, and tests/lua/kernel_ops.lua on windows of kind
-- nccl.  Run by tests/run.sh on the host backend at 1, 2 and 4 ranks.
local H = require "harness"
local bench = require "gcsh.bench"
local step = require "gcsh.step"

local c = comm.world()
local k, me = c.size, c.rank
if gcsh.backend ~= "host" then
  print("kernel_nccl_dev: the host backend's refusals; this is " .. gcsh.backend)
  return
end

local w = c:window(16, "f32")
local REFUSAL = "allreduce: algo 'nccl_dev' needs NCCL's device API: the cuda backend and a "
  .. "window of kind 'nccl'; this is the host backend (window of kind 'host'); "
  .. "oneshot moves the data the same way"

-- the refusal, in place and with out, the same text on every rank
local err = H.raises(function() kernel.allreduce(w, { algo = "nccl_dev" }) end, REFUSAL, "in place")
H.raises(function() kernel.allreduce(w, { algo = "nccl_dev", out = tensor.new(4), n = 4 }) end,
         REFUSAL, "with out")
local all = c:agree(err)
for r = 2, #all do H.eq(all[r], all[1], "the same refusal on rank " .. (r - 1)) end

-- bad input still names its bound first (nothing about the algorithm yet)
H.raises(function() kernel.allreduce(w, { algo = "nccl_dev", n = 17 }) end, "n must be 1..16 (offset 0 of the window's 16 elements), got 17",
         "the bound before the algorithm")

-- nothing was left half-done: the next kernel collective runs, checked, on
-- every rank, with the right values
w:tensor():fill(me + 1)
local res, ran = kernel.allreduce(w, { algo = "oneshot" })
H.eq(ran, "oneshot", "the next collective runs")
H.eq(res[0], k * (k + 1) // 2, "and reduces every rank's values")
H.eq(res[15], k * (k + 1) // 2, "to the last element")

-- no plan and no steps of its own: both say what to look at instead
H.raises(function() kernel.plan(w, { algo = "nccl_dev" }) end,
         "plan: algo 'nccl_dev' has no plan of its own: it moves the data as oneshot does "
         .. "(kernel.plan(w, {algo='oneshot'}))", "kernel.plan")
H.raises(function() step.allreduce(w, { algo = "nccl_dev" }) end,
         "algo 'nccl_dev' has no steps of its own: it moves the data as oneshot does", "step.allreduce")

-- bench.allreduce stops before its first row, with the kernel's reason
-- (and the window it made is freed on every rank: the next window works)
H.raises(function()
  bench.allreduce { algos = { "oneshot", "nccl_dev" }, min = 8, max = 64, quiet = true, chart = false }
end, "bench.allreduce: algo 'nccl_dev' needs NCCL's device API", "bench.allreduce")
local w2 = c:window(8, "f32")
w2:tensor():fill(1)
H.eq(kernel.allreduce(w2, { algo = "twoshot" })[7], k, "a window after bench's refusal")
w2:free()

-- it is in the one list (bench, step and help read it from there)
H.truthy((" " .. table.concat(kernel.algos, " ") .. " "):find(" nccl_dev ", 1, true), "kernel.algos")
w:free()
