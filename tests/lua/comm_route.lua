-- The routed collectives (bind/comm_route.c): c:allreduce, c:reducescatter,
-- c:allgather and c:broadcast on the kernel route ({algo="kernel"}, the
-- path ranks sharing a GPU take) give the values of the communicator's own
-- route ({algo="comm"}) and of the reference in Lua, at every size (0, odd,
-- past ll's and one-shot's limits), dtype and op the calls take; what the
-- kernels lack falls back to the library and c:choose says why; options are
-- checked; the staging window grows, stays out of a capture's way and goes
-- with its communicator.
local H = require "harness"
local R = require "comm_ref"

local c = comm.world()
local LIB = "comm" -- the host backend's library (MPI); "nccl" is cuda's

-- ---- what c:choose says -----------------------------------------------------

local function expected_kernel_algo(bytes)
  local a = kernel.choose(bytes, size)
  return a == "comm" and "twoshot" or a
end

-- auto: the kernels with --share-gpu (tests/sh/comm_route.sh runs this file
-- so too), the library otherwise
local SHARED = gcsh.info().comm_route:find("^kernels") ~= nil

do
  local algo, why, staged = c:choose("allreduce", 2)
  if SHARED then
    H.eq(algo, expected_kernel_algo(8), "auto with shared GPUs: the kernels")
    H.truthy(why:find("--share-gpu", 1, true), "why: " .. why)
  else
    H.eq(algo, LIB, "auto without shared GPUs: the library")
    H.truthy(why:find("no GPU is shared", 1, true), "why: " .. why)
  end
  H.eq(staged, 0, "no staging window before a routed call")
  algo, why = c:choose("allreduce", 2, "f32", "sum", { algo = "kernel" })
  H.eq(algo, expected_kernel_algo(8), "8 bytes on the kernels")
  H.truthy(why:find("asked for", 1, true), "why: " .. why)
  algo = c:choose("allreduce", 1 << 16, "f32", "sum", { algo = "kernel" })
  H.eq(algo, expected_kernel_algo(1 << 18), "256 KiB on the kernels")
  H.eq(c:choose("reducescatter", 4 * size, "i32", "max", { algo = "kernel" }), "direct",
       "reducescatter's algorithm")
end

-- fallbacks, each with its reason
local function falls_back(coll, n, dt, op, words)
  local algo, why = c:choose(coll, n, dt, op, { algo = "kernel" })
  H.eq(algo, LIB, coll .. " " .. dt .. " " .. tostring(op) .. " falls back")
  H.truthy(why:find(words, 1, true), "why names it: " .. why)
end
falls_back("allreduce", 4, "f64", "sum", "not f64")
falls_back("allreduce", 4, "f32", "avg", "no op 'avg'")
falls_back("reducescatter", 4 * size, "i8", "sum", "not i8")
falls_back("allgather", 3, "i8", nil, "not whole 32-bit words")
falls_back("allreduce", 1 << 27, "f32", "sum", "bound")
-- data moves as words whatever the dtype
H.eq(c:choose("allgather", 8, "i8", nil, { algo = "kernel" }), "direct", "i8 allgather as words")
H.eq(c:choose("broadcast", 2, "f64", nil, { algo = "kernel" }), "direct", "f64 broadcast as words")

-- ---- values ------------------------------------------------------------------

local DTYPES = { "f32", "f16", "bf16", "i32", "u32", "f64", "i8" }
local OPS = { "sum", "prod", "min", "max", "avg" }
local COUNTS = { 0, 1, 3, 7, 33, 1000, 20000 } -- 20000 f32: past ll's 64 KiB

local function mine(dt, n, first)
  return tensor.from(R.seq(first or 0, n, function(i) return R.value(dt, rank, i) end), dt)
end

local function want(dt, op, n, first)
  return tensor.from(R.seq(first or 0, n, function(i) return R.reduced(dt, op, size, i) end), dt)
end

local function eq(got, expect, what)
  if #got == 0 and #expect == 0 then return end
  if not got:equal(expect) then
    error(string.format("%s: got %s, want %s", what, tostring(got), tostring(expect)), 2)
  end
end

local calls = 0
for _, dt in ipairs(DTYPES) do
  for _, n in ipairs(COUNTS) do
    local label = string.format("%s n=%d", dt, n)
    for _, op in ipairs(OPS) do
      local w = want(dt, op, n)
      local t, k, l = mine(dt, n), tensor.new(n, dt), tensor.new(n, dt)
      c:allreduce(t, op, k, { algo = "kernel" })
      c:allreduce(t, op, l, { algo = LIB })
      eq(k, w, "allreduce " .. op .. " " .. label)
      eq(l, w, "allreduce on the library " .. op .. " " .. label)
      eq(t, mine(dt, n), "allreduce leaves its input " .. label)
      c:allreduce(t, op, { algo = "kernel" }) -- in place, out omitted
      eq(t, w, "allreduce in place " .. op .. " " .. label)
      -- reduce-scatter: chunk r of every rank's n * size
      local big = mine(dt, n * size)
      local out = tensor.new(n, dt)
      c:reducescatter(big, out, op, { algo = "kernel" })
      eq(out, want(dt, op, n, rank * n), "reducescatter " .. op .. " " .. label)
      calls = calls + 4
    end
    -- all-gather: rank r's block r
    local t = mine(dt, n)
    local out = tensor.new(n * size, dt)
    c:allgather(t, out, { algo = "kernel" })
    for r = 0, size - 1 do
      local block = tensor.from(R.seq(0, n, function(i) return R.value(dt, r, i) end), dt)
      eq(out:view(r * n, n), block, "allgather block " .. r .. " " .. label)
    end
    -- in place: t = out:view(rank * n, n)
    local all = tensor.new(n * size, dt)
    all:view(rank * n, n):copy(mine(dt, n))
    c:allgather(all:view(rank * n, n), all, { algo = "kernel" })
    eq(all, out, "allgather in place " .. label)
    -- broadcast from the first and the last rank
    for _, root in ipairs({ 0, size - 1 }) do
      local b = mine(dt, n)
      c:broadcast(b, root, { algo = "kernel" })
      eq(b, tensor.from(R.seq(0, n, function(i) return R.value(dt, root, i) end), dt),
         "broadcast from " .. root .. " " .. label)
    end
    calls = calls + 4
  end
end

-- views at odd offsets: ll reads its input where it is, and writes out there
do
  local base = tensor.new(11, "f32"):fill(-1)
  local v = base:view(3, 5)
  v:copy(mine("f32", 5))
  c:allreduce(v, "sum", { algo = "kernel" })
  eq(v, want("f32", "sum", 5), "allreduce on a view at offset 3")
  H.eq(base[2], -1.0, "the element before the view is untouched")
  H.eq(base[8], -1.0, "the element after the view is untouched")
end

-- ---- options --------------------------------------------------------------------

local t4 = tensor.new(4)
H.raises(function() c:allreduce(t4, "sum", nil, { algo = "fast" }) end,
         "allreduce: algo must be one of auto kernel comm nccl, got fast", "an unknown algo")
H.raises(function() c:allreduce(t4, { alg = "kernel" }) end,
         "allreduce: unknown option 'alg' (valid: algo)", "an unknown key")
H.raises(function() c:broadcast(t4, 0, { algo = "nccl" }) end,
         "broadcast: algo 'nccl' is the cuda backend's library; the host backend's communicator "
         .. "runs algo 'comm' (MPI)", "nccl on host")
H.raises(function() c:allgather(t4, { algo = "kernel" }) end,
         "bad argument #2 to 'allgather' (tensor expected, got table)",
         "options come after the required arguments")
H.raises(function() c:broadcast(t4, { algo = "kernel" }) end,
         "bad argument #2 to 'broadcast' (number expected, got table)", "broadcast's root first")
H.raises(function() c:choose("scan", 4) end, "invalid option 'scan'", "c:choose's collectives")
H.raises(function() c:choose("allreduce", -1) end, "n must be >= 0", "c:choose's n")
H.raises(function() c:choose("allreduce", 4, "f32", "sum", { al = 1 }) end,
         "choose: unknown option 'al' (valid: algo)", "c:choose's options")

-- ---- the staging window ------------------------------------------------------------

do
  local _, _, staged = c:choose("allreduce", 4)
  H.truthy(staged >= 64 * 1024, "the world's staging window: " .. staged .. " bytes")
  -- it grows for a larger call, to the power of two that holds it
  local n = staged * 2 // 4 + 1
  local big = mine("f32", n)
  c:allreduce(big, "max", { algo = "kernel" })
  eq(big, want("f32", "max", n), "a call that grows the staging window")
  local grown = select(3, c:choose("allreduce", 4))
  H.eq(grown, 4 * staged, "grown from " .. staged .. " bytes for " .. 4 * n)
end

-- a capture: the routed call goes in while the window is large enough; one
-- that would need it to grow takes the library, saying why
do
  local x = tensor.new(1024):fill(1)
  local g <close> = gcsh.graph(function() c:allreduce(x, "sum", nil, { algo = "kernel" }) end)
  g:replay(2)
  H.eq(x[9], size * size * 1.0, "two replays of a routed all-reduce")
  local n = select(3, c:choose("allreduce", 4)) // 2 -- twice the window's bytes
  local algo, why = c:choose("allreduce", n, "f32", "sum", { algo = "kernel" })
  H.eq(algo, LIB, "past the staging window while a graph uses it")
  H.truthy(why:find("live graph", 1, true), "why: " .. why)
  local huge = mine("f32", n)
  c:allreduce(huge, "min", { algo = "kernel" })
  eq(huge, want("f32", "min", n), "the library's all-reduce meanwhile")
  g:free()
  H.eq(c:choose("allreduce", n, "f32", "sum", { algo = "kernel" }),
       expected_kernel_algo(4 * n), "the kernels again once the graph is gone")
end

-- a split's staging window goes with it; c:free() counts only the user's
do
  for round = 1, 3 do
    local s = c:split(rank % 2)
    local x = mine("i32", 300)
    s:allreduce(x, "sum", { algo = "kernel" })
    local _, _, staged = s:choose("allreduce", 300)
    H.truthy(staged > 0, "the split has a staging window")
    local w = s:window(16)
    H.raises(function() s:free() end,
             "comm:free: 1 window(s)/signals still registered on this comm; free them first",
             "a user's window still counts, the staging one not")
    w:free()
    s:free()
    H.raises(function() return s.size end, "attempt to use a freed comm", "freed, round " .. round)
  end
end

if rank == 0 then print(string.format("comm_route: %d calls checked", calls)) end
