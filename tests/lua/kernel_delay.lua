-- A rank that arrives late: rank 1 sleeps before each kernel collective, the
-- others go ahead and wait on the window's sync words (on cuda: their kernels
-- spin on the GPU).  Results must be right, and the window reusable at once.
-- With .check on the others would wait for rank 1 in the fingerprint check
-- instead, before any launch: the kernels' own barriers are what is tested
-- here, so the checks are off but for the last case.
-- Also run by tests/gpu/kernel_*.lua with KERNEL_TEST_KIND set.
local H = require "harness"

local c = comm.world()
local kind = rawget(_G, "KERNEL_TEST_KIND")
local opts = kind and { kind = kind } or nil
local me, k = c.rank, c.size
local DELAY = tonumber(os.getenv("GCSH_TEST_DELAY") or "") or 1.5
local N = 4099
local w = c:window(N, "f32", opts)
local sum = k * (k + 1) // 2

local function late() if me == 1 then gcsh.sleep(DELAY) end end
c:barrier()
gcsh.check(false)

for _, algo in ipairs { "oneshot", "twoshot", "ll", "multicast" } do
  for round = 1, 2 do
    w:tensor():fill(me + 1)
    late()
    local t0 = gcsh.wtime()
    local res = kernel.allreduce(w, { algo = algo })
    H.truthy(res:equal(tensor.new(N, "f32"):fill(sum)),
             string.format("%s round %d with rank 1 late: maxdiff %s", algo, round,
                           tostring(res:maxdiff(tensor.new(N, "f32"):fill(sum)))))
    if k > 1 and me == 0 and round == 1 then
      -- rank 0 waited for rank 1 inside the collective (it returns after the data)
      H.truthy(gcsh.wtime() - t0 >= DELAY * 0.5, algo .. ": rank 0 waited for the late rank")
    end
  end
end

-- the rooted and scattered ones too
w:tensor():fill(me + 1)
late()
local res = kernel.reduce_to(0, w)
if me == 0 then H.eq(res:sum(), N * sum, "reduce_to with a late rank") end
w:tensor():fill(me + 1)
late()
local M = N - N % k
res = kernel.reduce_scatter(w, { n = M })
H.eq(res:sum(), M // k * sum, "reduce_scatter with a late rank")
w:tensor():fill(me + 1)
late()
res = kernel.broadcast(k - 1, w)
H.eq(res:sum(), N * k, "broadcast with a late rank")
c:barrier()
gcsh.check(true)

-- checked: the others wait in the check, and the result is the same
w:tensor():fill(me + 1)
late()
H.truthy(kernel.allreduce(w):equal(tensor.new(N, "f32"):fill(sum)), "checked, with a late rank")
c:barrier()
w:free()
