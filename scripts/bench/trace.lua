-- Per-call cost of the traced backend table (scripts/bench-trace.sh).
-- Times N calls of t:fill(i) on a one-element tensor (one backend call,
-- mem.fill, that does almost nothing on host), REPS times, and prints the
-- best time per call in ns on rank 0: the Lua call plus the backend call,
-- plus the trace layer when tracing is on.
local N = tonumber(arg and arg[1]) or 50000
local REPS = tonumber(arg and arg[2]) or 5
local t = tensor.new(1)
local best = math.huge
for _ = 1, REPS do
  local t0 = gcsh.wtime()
  for i = 1, N do t:fill(i) end
  best = math.min(best, gcsh.wtime() - t0)
end
if rank == 0 then print(string.format("%.1f", best / N * 1e9)) end
