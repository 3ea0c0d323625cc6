-- The routed collectives on device tensors (bind/comm_route.c): c:allreduce,
-- c:reducescatter, c:allgather and c:broadcast on the kernel route against
-- the same call on the communicator's library (algo="nccl"), every dtype the
-- kernels take, every op, sizes 8 B to 64 MiB a rank (and odd counts);
-- an exact formula check (i32 sum); a capture and its replays; the staging
-- window freed with its communicator.  First, with GCSH_SHARED_TIMES=1, the
-- all-reduce timed at 8 B, 4 KiB and 64 KiB on both routes (bench.time:
-- checks off, back to back, one timer, after warm-up), printing us a call
-- (the worst rank's mean) and PASS/FAIL against GCSH_SHARED_TARGET_US (12).
-- scripts/gpu-shared.sh runs it at 4 ranks sharing one GPU.
local H = require "harness"
local bench = require "gcsh.bench"

local c = comm.world()
local LIB = gcsh.backend == "cuda" and "nccl" or "comm" -- the communicator's library
local shared = gcsh.info().comm_route:find("^kernels") ~= nil
io.write(rank == 0 and ("shared_route: comm_route = " .. gcsh.info().comm_route .. "\n") or "")

-- times first: a run cut short by its time limit still reports them
if os.getenv("GCSH_SHARED_TIMES") then
  -- GCSH_SHARED_TARGET_US=none: figures only (dedicated GPUs: no target set)
  local target = tonumber(os.getenv("GCSH_SHARED_TARGET_US") or "12")
  for _, b in ipairs({8, 4096, 65536}) do
    local x = tensor.new(b // 4, "f32"):fill(1)
    local algo = c:choose("allreduce", b // 4, "f32", "max", { algo = "kernel" })
    local line = {}
    for _, route in ipairs({"kernel", LIB}) do
      local opts = {algo = route}
      local r = bench.time(function() c:allreduce(x, "max", nil, opts) end,
                           {iters = 2000, warmup = 200, min_time = 0.1})
      line[route] = r.max
    end
    if rank == 0 then
      print(string.format("time allreduce %6d B: kernel (%s) %7.2f us, %s %7.2f us, %.1fx  %s",
                          b, algo, line.kernel, LIB, line[LIB], line[LIB] / line.kernel,
                          not target and "(figures)" or
                          string.format("%s (<= %g us)", line.kernel <= target and "PASS" or "FAIL",
                                        target)))
    end
  end
end

local DTYPES = {"f32", "f16", "bf16", "i32"}
local OPS = {"sum", "max", "min", "prod"}
local tol = {f32 = 1e-5, f16 = 2e-3, bf16 = 2e-2}
-- bytes a rank: 8 B .. 64 MiB, and counts that divide by nothing
local BYTES = {8, 4096, 65536, 1 << 20, 64 << 20}
local ODD = {1, 3, 1025, 16387}
if os.getenv("GCSH_SHARED_QUICK") then -- the sanitizer's run, and the host's
  DTYPES, BYTES, ODD = {"f32", "bf16", "i32"}, {8, 65536, 1 << 20}, {3}
end
local esize = {f32 = 4, f16 = 2, bf16 = 2, i32 = 4}

local function counts(dt)
  local out = {}
  for _, b in ipairs(BYTES) do out[#out + 1] = b // esize[dt] end
  for _, n in ipairs(ODD) do out[#out + 1] = n end
  return out
end

-- Inputs whose sums and products stay in range: rand in [0, 1) for floats
-- (products too), small integers for i32 (by rand scaled: exact in both routes).
local function input(n, dt, seed)
  local t = tensor.new(n, dt)
  t:rand(seed)
  return t
end

local function same(got, want, dt, op, what)
  local ok
  if dt == "i32" or op == "max" or op == "min" then ok = got:equal(want)
  else ok = got:allclose(want, tol[dt], tol[dt]) end
  if not ok then
    error(string.format("%s: kernel route differs from %s (maxdiff %s)", what, LIB,
                        tostring(got:maxdiff(want))), 2)
  end
end

local checked = 0
for _, dt in ipairs(DTYPES) do
  for _, n in ipairs(counts(dt)) do
    local label = string.format("%s n=%d (%d B)", dt, n, n * esize[dt])
    for _, op in ipairs(OPS) do
      -- all-reduce, in place and out of place
      local t = input(n, dt, 1000 + rank)
      local k = tensor.new(n, dt)
      local r = tensor.new(n, dt)
      c:allreduce(t, op, k, {algo = "kernel"})
      c:allreduce(t, op, r, {algo = LIB})
      same(k, r, dt, op, "allreduce " .. op .. " " .. label)
      c:allreduce(t, op) -- auto: the kernels when shared, in place
      same(t, r, dt, op, "allreduce in place " .. op .. " " .. label)
      -- reduce-scatter: n a rank out of n * size
      local big = input(n * size, dt, 2000 + rank)
      local ks, rs = tensor.new(n, dt), tensor.new(n, dt)
      c:reducescatter(big, ks, op, {algo = "kernel"})
      c:reducescatter(big, rs, op, {algo = LIB})
      same(ks, rs, dt, op, "reducescatter " .. op .. " " .. label)
      checked = checked + 3
    end
    local t = input(n, dt, 3000 + rank)
    local kg, rg = tensor.new(n * size, dt), tensor.new(n * size, dt)
    c:allgather(t, kg, {algo = "kernel"})
    c:allgather(t, rg, {algo = LIB})
    same(kg, rg, dt, "max", "allgather " .. label)
    for _, root in ipairs({0, size - 1}) do
      local kb, rb = input(n, dt, 4000 + rank), input(n, dt, 4000 + rank)
      c:broadcast(kb, root, {algo = "kernel"})
      c:broadcast(rb, root, {algo = LIB})
      same(kb, rb, dt, "max", "broadcast root " .. root .. " " .. label)
      same(kb, input(n, dt, 4000 + root), dt, "max", "broadcast's value, root " .. root)
    end
    checked = checked + 3
  end
end

-- exact: rank r holds r+1, r+2, ...; the sum is size*i + size*(size+1)/2
local n = (1 << 20) + 3
local t = tensor.new(n, "i32"):arange(rank + 1, 1)
c:allreduce(t, "sum", nil, {algo = "kernel"})
H.truthy(t:equal(tensor.new(n, "i32"):arange(size * (size + 1) // 2, size)), "i32 sum formula")

-- a capture of the routed call replays on the kernels
local g1 = tensor.new(1024, "f32"):fill(1)
c:allreduce(g1) -- the staging window exists before the capture
g1:fill(1)
local g <close> = gcsh.graph(function() c:allreduce(g1) end)
g:replay(2)
H.eq(g1[5], size * size, "two replays of a captured all-reduce of ones")
g:free()

-- the staging window goes with its communicator
for i = 1, 3 do
  local s = c:split(0)
  local x = tensor.new(4096, "f32"):fill(i)
  s:allreduce(x, "sum", nil, {algo = "kernel"})
  H.eq(x[7], i * size, "split's all-reduce")
  local _, _, staged = s:choose("allreduce", 4096)
  H.truthy(staged > 0, "a staging window on the split")
  s:free()
end
if rank == 0 then print(string.format("shared_route: %d value checks passed", checked)) end

if rank == 0 and not shared then
  print("shared_route: note: no GPU shared here (auto takes " .. c:choose("allreduce", 2) .. ")")
end
