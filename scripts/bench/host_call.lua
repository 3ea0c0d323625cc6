-- The gcsh side of scripts/bench-host-call: back-to-back collectives of a
-- few bytes from a Lua loop, timed as host_call.c times MPI (warm-up, then
-- ITERS calls under one timer, the slowest rank's time / ITERS; the best
-- of WINDOWS such timings), with
-- .check off and on.  Prints "gcsh <collective> <off|on> <us>" on rank 0.
local iters = tonumber(arg[1]) or 20000
local bytes = tonumber(arg[2]) or 8
local windows = tonumber(arg[3]) or 1
local c = comm.world()
local n = bytes // 4
local t = tensor.new(n)
local all = tensor.new(n * c.size)
local calls = {
  {"allreduce", function() c:allreduce(t) end},
  {"broadcast", function() c:broadcast(t, 0) end},
  {"allgather", function() c:allgather(t, all) end},
  {"reduce_scatter", function() c:reducescatter(all, t) end},
}
local worst = tensor.new(1, "f64")

-- the best of `windows` timings, as host_call.c
local function timed(fn)
  for _ = 1, iters // 10 + 1 do fn() end
  local best = math.huge
  for _ = 1, windows do
    c:barrier()
    local t0 = gcsh.wtime()
    for _ = 1, iters do fn() end
    worst[0] = (gcsh.wtime() - t0) / iters
    best = math.min(best, c:allreduce(worst, "max")[0])
  end
  return best
end

for _, checked in ipairs({false, true}) do
  gcsh.check(checked)
  for _, call in ipairs(calls) do
    local s = timed(call[2])
    if rank == 0 then
      print(string.format("gcsh %s %s %.3f", call[1], checked and "on" or "off", s * 1e6))
    end
  end
end
