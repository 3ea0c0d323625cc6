-- Issue 35's done-when: 100 split/free rounds with an all-reduce each: RSS
-- growth per rank and seconds a round, after WARMUP rounds (default 20):
--   WARMUP=600 mpirun -np 4 build-gpu/gcsh scripts/bench/split_rounds.lua
local c = comm.world()
local function rss()
  local f = io.open("/proc/self/status"); local s = f:read("a"); f:close()
  return tonumber(s:match("VmRSS:%s*(%d+) kB"))
end
local t = tensor.new(1024, "f32")
local function round()
  local s = c:split(c.rank % 2, c.rank)
  t:fill(1)
  s:allreduce(t)
  assert(t[0] == s.size, "sum " .. t[0])
  s:free()
end
local WARMUP = tonumber(os.getenv("WARMUP") or "20")
for _ = 1, WARMUP do round() end
collectgarbage("collect")
c:barrier()
local r0, t0 = rss(), gcsh.wtime()
for _ = 1, 100 do round() end
c:barrier()
local dt = gcsh.wtime() - t0
collectgarbage("collect")
print(string.format("100 split rounds after %d: %.3f s a round, RSS %+d KiB (%s)", WARMUP, dt / 100, rss() - r0,
                    gcsh.info().splits))
