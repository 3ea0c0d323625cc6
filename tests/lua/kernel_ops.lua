-- Reduce kernels against a CPU reference computed here: every kernel, dtype
-- and op, lengths 1, 2, 3, 5, 7, odd primes and sizes just past a vector
-- (4 or 8 elements), a block (512 threads x one vector) and a one-shot
-- round, at many element offsets, with and without out (out also at an odd
-- alignment).  Values are small integers, so every dtype holds every result
-- exactly and the reference is plain integer arithmetic; that the
-- algorithms agree bit for bit on arbitrary data (the same combine order
-- everywhere) is checked on random f16/bf16/f32.
--
-- Run by tests/run.sh on the host backend at 1, 2 and 4 ranks, and by the
-- GPU tests (tests/gpu/kernel_nccl.lua, kernel_vmm.lua) with
-- KERNEL_TEST_KIND set to the window kind.
local H = require "harness"

local c = comm.world()
local kind = rawget(_G, "KERNEL_TEST_KIND")
local opts = kind and { kind = kind } or nil
local DTYPES = { "f32", "f16", "bf16", "i32", "u32" }
-- algo "nccl_dev" (NCCL's device API) runs on windows of kind nccl only:
-- with_dev adds it to a list of algorithms there
local function with_dev(list)
  if kind == "nccl" then list[#list + 1] = "nccl_dev" end
  return list
end
local OPS = { "sum", "prod", "min", "max" }

-- element i (of the region) of team member r
local function value(dt, op, r, i)
  if op == "prod" then
    return dt == "u32" and (i + r) % 3 or (i + r) % 5 - 2
  end
  return dt == "u32" and (i * 7 + r * 3) % 11 or (i * 7 + r * 3) % 11 - 5
end

local COMBINE = {
  sum = function(a, b) return a + b end,
  prod = function(a, b) return a * b end,
  min = math.min,
  max = math.max,
}

local function reduced(dt, op, k, i)
  local acc = value(dt, op, 0, i)
  for r = 1, k - 1 do acc = COMBINE[op](acc, value(dt, op, r, i)) end
  return acc
end

local function pattern(dt, op, r, first, n)
  local t = {}
  for i = 0, n - 1 do t[i + 1] = value(dt, op, r, first + i) end
  return tensor.from(t, dt)
end

local function expect(t, dt, op, k, first, n, what)
  local got = t:totable()
  H.eq(#got, n, what .. ": length")
  for i = 0, n - 1 do
    local want = reduced(dt, op, k, first + i)
    if got[i + 1] ~= want then
      H.eq(got[i + 1], want, string.format("%s: element %d", what, i))
    end
  end
end

local function expect_values(t, vals, what)
  local got = t:totable()
  for i = 1, #vals do
    if got[i] ~= vals[i] then H.eq(got[i], vals[i], string.format("%s: element %d", what, i - 1)) end
  end
end

-- a local tensor of n elements, at an odd element offset when `odd`
local function new_out(n, dt, odd)
  if odd then return tensor.new(n + 1, dt):view(1, n) end
  return tensor.new(n, dt)
end

local me = c.rank
local function run_case(w, k, dt, op, off, n, use_out, odd)
  local tag = string.format("%s %s n=%d off=%d%s", dt, op, n, off, use_out and (odd and " out(odd)" or " out") or "")
  local region = w:tensor():view(off, n)
  local function reset() region:copy(pattern(dt, op, me, 0, n)); c:barrier() end
  local function out() return use_out and new_out(n, dt, odd) or nil end

  -- the raw ones: reduce_peers, kernel.reduce over peer views, m:ld_reduce
  reset()
  local o = new_out(n, dt, odd)
  kernel.reduce_peers(o, w, { op = op, offset = off, n = n })
  expect(o, dt, op, k, 0, n, "reduce_peers " .. tag)
  local views = {}
  for r = 0, k - 1 do views[#views + 1] = w:peer(r):view(off, n) end
  kernel.reduce(o, views, op)
  expect(o, dt, op, k, 0, n, "kernel.reduce " .. tag)
  w:multicast():ld_reduce(o, { op = op, offset = off })
  expect(o, dt, op, k, 0, n, "ld_reduce " .. tag)
  c:barrier()

  for _, algo in ipairs(with_dev { "oneshot", "twoshot", "ring", "ll", "multicast", "auto" }) do
    reset()
    -- multicast refuses out= (its st writes every slice): tests/lua/kernel_out.lua
    local o = algo ~= "multicast" and out() or nil
    local res, ran = kernel.allreduce(w, { algo = algo, op = op, offset = off, n = n, out = o })
    expect(res, dt, op, k, 0, n, "allreduce " .. algo .. " (" .. ran .. ") " .. tag)
  end

  reset()
  local res = kernel.reduce_to(k - 1, w, { op = op, offset = off, n = n, out = out() })
  if me == k - 1 then expect(res, dt, op, k, 0, n, "reduce_to " .. tag) else H.eq(res, nil, "reduce_to off root") end

  -- balanced chunks (kernel.plan): the first n % k ranks get one element more
  local function chunk(r) return r * (n // k) + math.min(r, n % k), n // k + (r < n % k and 1 or 0) end
  local first, m = chunk(me)
  for _, algo in ipairs { "direct", "ring" } do
    reset()
    res = kernel.reduce_scatter(w, { algo = algo, op = op, offset = off, n = n,
                                     out = use_out and new_out(m, dt, odd) or nil })
    expect(res, dt, op, k, first, m, "reduce_scatter " .. algo .. " " .. tag)
    reset()
    res = kernel.allgather(w, { algo = algo, offset = off, n = n, out = out() })
    local want = {}
    for r = 0, k - 1 do
      local f, cnt = chunk(r)
      for i = f, f + cnt - 1 do want[#want + 1] = value(dt, op, r, i) end
    end
    expect_values(res, want, "allgather " .. algo .. " " .. tag)
  end

  local root = (n + off) % k
  for _, algo in ipairs { "direct", "tree", "ring" } do
    reset()
    res = kernel.broadcast(root, w, { algo = algo, offset = off, n = n, out = out() })
    local want = {}
    for i = 0, n - 1 do want[i + 1] = value(dt, op, root, i) end
    expect_values(res, want, "broadcast " .. algo .. " from " .. root .. " " .. tag)
  end
  c:barrier()
end

local k = c.size
-- A window whose multicast is the emulation's own arithmetic at every
-- dtype, op and offset: lax, the first multicast use decides it (NVLS's
-- rules, which the emulation keeps by default: mcast_emulated.lua).
local function lax_window(n, dt)
  local win = c:window(n, dt, opts)
  win:multicast { lax = true }
  return win
end
local w = c:window(5000, "f32", opts)
H.eq(#w.team, k, "the team is the whole communicator here")
w:free()

-- every dtype and op at a few shapes
for _, dt in ipairs(DTYPES) do
  local win = lax_window(5000, dt)
  for _, op in ipairs(OPS) do
    for _, shape in ipairs { { 0, 1 }, { 3, 7 }, { 1, 36 } } do
      run_case(win, k, dt, op, shape[1], shape[2], false)
    end
    run_case(win, k, dt, op, 2, 12, true, true)
  end
  win:free()
end

-- odd lengths and offsets, past vector and block boundaries
local LENGTHS = { 1, 2, 3, 5, 7, 9, 11, 13, 17, 31, 33, 127, 2047, 2049, 4099 }
local OFFSETS = { 0, 1, 2, 3, 4, 5, 7 }
for _, case in ipairs { { "f32", "sum" }, { "f16", "max" }, { "bf16", "sum" }, { "i32", "min" } } do
  local dt, op = case[1], case[2]
  local win = lax_window(4200, dt)
  for _, n in ipairs(LENGTHS) do
    for oi, off in ipairs(OFFSETS) do
      if n < 100 or oi <= 3 then run_case(win, k, dt, op, off, n, oi % 2 == 0, oi % 3 == 0) end
    end
  end
  win:free()
end

-- large: past one-shot rounds and block counts (constant values per rank;
-- nccl_dev in place: two rounds of its 32 blocks x 512 threads x 4 vectors)
do
  local N = (64 * 512 * 4) * 2 + 5 -- two one-shot rounds of f32 vectors, and a tail
  local win = c:window(N + 8, "f32", opts)
  local want = tensor.new(N, "f32"):fill(k * (k + 1) // 2)
  for _, algo in ipairs(with_dev { "oneshot", "twoshot", "ring" }) do
    for _, off in ipairs { 0, 3 } do
      win:tensor():view(off, N):fill(me + 1)
      local res = kernel.allreduce(win, { algo = algo, offset = off, n = N })
      H.truthy(res:equal(want), string.format("large %s offset %d: maxdiff %s", algo, off, tostring(res:maxdiff(want))))
      local o = tensor.new(N + 1, "f32"):view(1, N)
      win:tensor():view(off, N):fill(me + 1)
      -- out= goes through the scratch area: refused where the region is larger
      local scratch = algo == "twoshot" or (algo == "ring" and k > 1)
      if scratch and N * 4 > win:info().scratch_bytes then
        H.raises(function() kernel.allreduce(win, { algo = algo, offset = off, n = N, out = o }) end,
                 "allreduce: algo '" .. algo .. "' with out= gathers the result in the window's scratch area")
      else
        kernel.allreduce(win, { algo = algo, offset = off, n = N, out = o })
        H.truthy(o:equal(want), "large " .. algo .. " into an odd out")
      end
    end
  end
  win:free()
end

-- the algorithms agree bit for bit on arbitrary data (same combine order)
for _, dt in ipairs { "f32", "f16", "bf16" } do
  local n = 1000
  local win = lax_window(n + 16, dt)
  local mine = tensor.new(n, dt):rand(42 + me)
  local results = {}
  local algos = with_dev { "oneshot", "twoshot", "ll", "multicast" }
  for _, algo in ipairs(algos) do
    win:tensor():view(5, n):copy(mine)
    if algo == "multicast" then -- in place only: its st writes every slice
      results[algo] = tensor.new(n, dt):copy(kernel.allreduce(win, { algo = algo, offset = 5, n = n }))
    else
      results[algo] = kernel.allreduce(win, { algo = algo, offset = 5, n = n, out = tensor.new(n, dt) })
    end
  end
  win:tensor():view(5, n):copy(mine)
  c:barrier()
  local peers = tensor.new(n, dt)
  kernel.reduce_peers(peers, win, { offset = 5, n = n })
  c:barrier()
  H.truthy(results.oneshot:equal(results.twoshot), dt .. ": oneshot == twoshot")
  H.truthy(results.oneshot:equal(results.multicast), dt .. ": oneshot == multicast")
  H.truthy(results.oneshot:equal(results.ll), dt .. ": oneshot == ll")
  if results.nccl_dev then H.truthy(results.oneshot:equal(results.nccl_dev), dt .. ": oneshot == nccl_dev") end
  H.truthy(results.oneshot:equal(peers), dt .. ": oneshot == reduce_peers")
  -- and every rank has the same bits
  local sums = c:agree(results.oneshot:checksum())
  for r = 2, #sums do H.eq(sums[r], sums[1], dt .. ": the same result on every rank") end
  win:free()
end

-- i32 sums wrap like the dtype
do
  local win = c:window(4, "i32", opts)
  local want = ((2147483647 * k + 2 ^ 31) % 2 ^ 32) - 2 ^ 31
  for _, algo in ipairs(with_dev { "oneshot", "ll" }) do
    win:tensor():fill(2147483647)
    local res = kernel.allreduce(win, { algo = algo })
    H.eq(res[0], math.tointeger(want), "i32 sum wraps (" .. algo .. ")")
  end
  win:free()
end
