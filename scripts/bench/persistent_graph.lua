-- The persistent all-reduce rung from a graph, beside what a user would
-- otherwise capture ("ll" in a graph) and beside host rings and "ll"
-- launches, in the same run (README, "A persistent all-reduce"):
-- µs a call, the worst rank's, best of 5 windows of R replays of a graph of
-- G calls (or G x R calls from Lua), each window ended by gcsh.sync, after
-- a warm-up window.  The values are checked after the timing.
-- Usage: mpirun -np N build-gpu/gcsh scripts/bench/persistent_graph.lua [bytes [replays
--        [nccl-tests output]]]
-- (on one GPU: GCSH_SHARE_GPU=1 for N > 1, as scripts/gpu-check.sh runs).  With an
-- all_reduce_perf output of the same job (scripts/bench-gpu.sh's graph part runs
-- it with -R 2 -G 100), the in-place time there at `bytes` and the ratio too.
local c = comm.world()
local bytes = math.tointeger(tonumber(arg and arg[1] or "8"))
local R = math.tointeger(tonumber(arg and arg[2] or "20"))
assert(bytes and bytes >= 4 and bytes % 4 == 0 and bytes <= 4096,
       "bytes must be a multiple of 4 in 4..4096 (an ll call), got " .. tostring(arg and arg[1]))
assert(R and R >= 1, "replays must be an integer >= 1, got " .. tostring(arg and arg[2]))
local G, N = 100, bytes // 4
local w = c:window(1024, "f32")
local p = kernel.persistent(w)

-- the worst rank's seconds for fn, best of 5 windows
local function best(fn)
  fn(); gcsh.sync(); c:barrier()
  local b = math.huge
  for _ = 1, 5 do
    c:barrier()
    local t0 = gcsh.wtime()
    fn()
    gcsh.sync()
    local worst = 0
    for _, v in ipairs(c:agree(string.format("%.9f", gcsh.wtime() - t0))) do
      worst = math.max(worst, tonumber(v))
    end
    b = math.min(b, worst)
  end
  return b * 1e6 / (G * R)
end

local ring_graph = gcsh.graph(function() for _ = 1, G do p:allreduce { n = N } end end)
local ll_graph = gcsh.graph(function() for _ = 1, G do kernel.allreduce(w, { algo = "ll", n = N }) end end)
local t = {
  best(function() ring_graph:replay(R) end),
  best(function() ll_graph:replay(R) end),
  best(function() for _ = 1, G * R do p:allreduce { n = N } end end),
  best(function() for _ = 1, G * R do kernel.allreduce(w, { algo = "ll", n = N }) end end),
}
-- the values: one call from a graph (a hundred sums of k overflow f32)
local one = gcsh.graph(function() p:allreduce { n = N } end)
w:tensor():fill(1)
one:replay()
local want = #w.team
assert(w:tensor()[0] == want and w:tensor()[N - 1] == want,
       string.format("a replay's values: %s, want %s", tostring(w:tensor()[0]), tostring(want)))
one:free()
if c.rank == 0 then
  print(string.format("persistent_graph: %d ranks, %d B, %s: us a call: persistent from a graph %.2f, "
                      .. "ll from a graph %.2f (ratio %.2f); persistent rung from Lua %.2f, ll launched %.2f",
                      c.size, bytes, gcsh.backend, t[1], t[2], t[1] / t[2], t[3], t[4]))
  local ref_path = arg and arg[3]
  if ref_path then
    local ref = require("gcsh.bench").nccl_tests(ref_path)
    local row
    for _, r in ipairs(ref) do if r.size == bytes then row = r end end
    if row and row.ip_time_us then
      print(string.format("persistent_graph: against nccl-tests (graph %d) in place at %d B: %.2f us; "
                          .. "persistent from a graph / nccl-tests = %.2f", ref.graph, bytes,
                          row.ip_time_us, t[1] / row.ip_time_us))
    else -- (-R 2 needs symmetric memory, which NCCL may not offer here: its output says)
      print(string.format("persistent_graph: %s has no in-place row at %d B: no ratio", ref_path, bytes))
    end
  end
end
ring_graph:free()
ll_graph:free()
p:stop()
w:free()
