-- algo "nccl_dev" (kernels/cuda/nccl_dev.cu: one-shot with NCCL's device API) on
-- GPUs.  Where NCCL offers no symmetric memory (one rank, ranks sharing a
-- GPU) it is refused with NCCL's reason, and the rest is skipped, saying
-- why.  Elsewhere: refused on a window of kind vmm (naming the kind that
-- works); against a CPU reference (small integers, exact in every dtype) at
-- odd lengths and offsets, in place, into out and into an out at an odd
-- alignment, past one round of its blocks, out on some ranks only; nothing
-- outside the region is touched; the same bits as oneshot on random data; a
-- rank that arrives late; calls interleaved with the other algorithms on one
-- window.
-- (tests/lua/kernel_ops.lua runs it on kind nccl too, every dtype and op:
-- tests/gpu/kernel_nccl.lua; graphs: tests/gpu/graph_nccl.lua.)
local H = require "harness"
local G = require "common"

local c = comm.world()
local k, me = c.size, c.rank

if not G.kind_here(c, "nccl") then
  local w = c:window(64, "f32") -- the kind that works here: vmm
  H.eq(w.kind, "vmm", "the window NCCL's refusal leaves")
  local err = H.raises(function() kernel.allreduce(w, { algo = "nccl_dev" }) end,
                       "allreduce: algo 'nccl_dev' cannot run on this window: it is of kind 'vmm', "
                       .. "and the device API needs a window of kind 'nccl', which this "
                       .. "communicator cannot have: ",
                       "refused where NCCL has no symmetric memory")
  H.truthy(err:find("symmetric memory", 1, true), "the refusal gives NCCL's reason: " .. err)
  w:tensor():fill(1)
  H.eq(kernel.allreduce(w, { algo = "oneshot" })[63], k, "the window works after the refusal")
  w:free()
  if me == 0 then print("nccl_dev: skipped here (" .. err .. ")") end
  return
end

-- a window of kind vmm next to NCCL's symmetric memory: says which kind works
do
  local w = c:window(64, "f32", { kind = "vmm" })
  H.raises(function() kernel.allreduce(w, { algo = "nccl_dev" }) end,
           "allreduce: algo 'nccl_dev' cannot run on this window: it is of kind 'vmm', and NCCL's "
           .. "device API reaches only NCCL's symmetric memory: make the window with {kind='nccl'}",
           "refused on kind vmm")
  w:free()
end

-- element i of rank r's region, and the reduction the CPU expects
local function value(dt, r, i)
  return dt == "u32" and (i * 7 + r * 3) % 11 or (i * 7 + r * 3) % 11 - 5
end
local REDUCE = { sum = function(a, b) return a + b end, min = math.min, max = math.max }
local function want(dt, op, i)
  local acc = value(dt, 0, i)
  for r = 1, k - 1 do acc = REDUCE[op](acc, value(dt, r, i)) end
  return acc
end
local function pattern(dt, n)
  local t = {}
  for i = 0, n - 1 do t[i + 1] = value(dt, me, i) end
  return tensor.from(t, dt)
end

local SENTINEL = 99
-- One call at (off, n) into out ("none", "out", "odd"); checks the result
-- and, in place, that the window outside the region kept its sentinel.
local function check(w, dt, op, off, n, out_kind)
  local tag = string.format("%s %s off=%d n=%d %s", dt, op, off, n, out_kind)
  w:tensor():fill(SENTINEL)
  w:tensor():view(off, n):copy(pattern(dt, n))
  local out = out_kind == "out" and tensor.new(n, dt)
    or out_kind == "odd" and tensor.new(n + 1, dt):view(1, n) or nil
  local res, ran = kernel.allreduce(w, { algo = "nccl_dev", op = op, offset = off, n = n, out = out })
  H.eq(ran, "nccl_dev", tag .. ": ran")
  local got = res:totable()
  for i = 0, n - 1 do
    if got[i + 1] ~= want(dt, op, i) then H.eq(got[i + 1], want(dt, op, i), tag .. ": element " .. i) end
  end
  local whole = w:tensor():totable()
  for i = 0, w.n - 1 do
    local inside = i >= off and i < off + n
    if not inside and whole[i + 1] ~= SENTINEL then
      H.eq(whole[i + 1], SENTINEL, tag .. ": element " .. i .. " outside the region")
    end
  end
  c:barrier()
end

for _, dt in ipairs { "f32", "f16", "bf16", "i32", "u32" } do
  local w = c:window(4200, dt, { kind = "nccl" })
  for _, case in ipairs { { 0, 1 }, { 1, 2 }, { 3, 7 }, { 0, 8 }, { 5, 33 }, { 2, 4099 } } do
    for i, out_kind in ipairs { "none", "out", "odd" } do
      check(w, dt, ({ "sum", "min", "max" })[i], case[1], case[2], out_kind)
    end
  end
  w:free()
end

-- in place past one round (32 blocks x 512 threads x 4 vectors of f32), with
-- a tail; and the same into an odd out
do
  local N = 32 * 512 * 4 * 4 * 2 + 5
  local w = c:window(N + 8, "f32", { kind = "nccl" })
  local sum = k * (k + 1) // 2
  for _, off in ipairs { 0, 3 } do
    w:tensor():view(off, N):fill(me + 1)
    local res = kernel.allreduce(w, { algo = "nccl_dev", offset = off, n = N })
    H.eq(res:sum(), sum * N, "large in place at offset " .. off)
    H.eq(res[N - 1], sum, "large in place: the tail")
    w:tensor():view(off, N):fill(me + 1)
    local o = tensor.new(N + 1, "f32"):view(1, N)
    kernel.allreduce(w, { algo = "nccl_dev", offset = off, n = N, out = o })
    H.eq(o:sum(), sum * N, "large into an odd out at offset " .. off)
    -- out on even ranks only: the barriers still pair up (the same on every rank)
    w:tensor():view(off, N):fill(me + 1)
    local mixed = me % 2 == 0 and tensor.new(N, "f32") or nil
    res = kernel.allreduce(w, { algo = "nccl_dev", offset = off, n = N, out = mixed })
    H.eq(res:sum(), sum * N, "large, out on even ranks only, at offset " .. off)
  end
  w:free()
end

-- random data: the same bits as oneshot (the same combine order), on every rank
for _, dt in ipairs { "f32", "bf16" } do
  local n = 3001
  local w = c:window(n + 8, dt, { kind = "nccl" })
  local mine = tensor.new(n, dt):rand(77 + me)
  w:tensor():view(3, n):copy(mine)
  local one = kernel.allreduce(w, { algo = "oneshot", offset = 3, n = n, out = tensor.new(n, dt) })
  w:tensor():view(3, n):copy(mine)
  local dev = kernel.allreduce(w, { algo = "nccl_dev", offset = 3, n = n, out = tensor.new(n, dt) })
  H.truthy(dev:equal(one), dt .. ": nccl_dev == oneshot, bit for bit")
  local sums = c:agree(dev:checksum())
  for r = 2, #sums do H.eq(sums[r], sums[1], dt .. ": the same bits on rank " .. (r - 1)) end
  w:free()
end

-- a rank that arrives late is waited for (NCCL's LSA barrier); calls
-- interleaved with gcsh's own algorithms keep both kinds of barrier in step
do
  local w = c:window(1000, "f32", { kind = "nccl" })
  for round = 1, 3 do
    for _, algo in ipairs { "nccl_dev", "oneshot", "nccl_dev", "twoshot", "ll", "nccl_dev" } do
      w:tensor():fill(me + round)
      if me == k - 1 and algo == "nccl_dev" and round == 2 then gcsh.sleep(0.2) end
      local res = kernel.allreduce(w, { algo = algo, n = 999 })
      H.eq(res[998], k * (k - 1) // 2 + k * round, string.format("%s in round %d", algo, round))
    end
  end
  w:free()
end

print(string.format("nccl_dev: ok on %d ranks", k))
