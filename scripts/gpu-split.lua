-- What a split costs (issue 35), run by scripts/gpu-split.sh under mpirun:
-- rounds of c:split(rank % 2, rank), something on the split, s:free(), and
-- per rank the seconds a round and the growth of RSS and device memory
-- after a warm-up.  Variants (GPU_SPLIT_VARIANTS, comma-separated, in order,
-- each NAME or NAME:CAP, CAP its own seconds instead of GPU_SPLIT_CAP):
--   free        split + free: the communicator alone
--   barrier     split + s:barrier() + free: a collective without the twin
--               (a barrier runs on the split's non-blocking communicator)
--   allreduce   split + s:allreduce(64 floats on the GPU) + free: the
--               issue's target (the first collective makes the twin)
-- GPU_SPLIT_ROUNDS (100) measured rounds after GPU_SPLIT_WARMUP (10);
-- GPU_SPLIT_CAP seconds (60) per variant, warm-up included: the warm-up
-- stops at the first multiple of 5 rounds past half of it, the measured
-- rounds at the first multiple of 5 past all of it (at least 5 of each),
-- and the line says how many ran (growth per 100 rounds then by
-- proportion, marked so).
-- GPU_SPLIT_LABEL names the configuration in every line.
-- Targets: <= 1 MiB of RSS growth per rank over 100 rounds and <= 0.2 s a
-- round (the issue's done-when is the allreduce variant at 4 GPUs).
local ROUNDS = tonumber(os.getenv("GPU_SPLIT_ROUNDS") or "") or 100
local WARMUP = tonumber(os.getenv("GPU_SPLIT_WARMUP") or "") or 10
local CAP = tonumber(os.getenv("GPU_SPLIT_CAP") or "") or 60
local LABEL = os.getenv("GPU_SPLIT_LABEL") or "?"
local VARIANTS = os.getenv("GPU_SPLIT_VARIANTS") or "free,barrier,allreduce"
local RSS_MAX = 1024 * 1024 -- bytes per rank over 100 rounds
local SECONDS_MAX = 0.2     -- a round

gcsh.timeout(0) -- a slow variant is not a hang
local c = comm.world()
local me = c.rank
local info = gcsh.info()

local function status()
  local f = assert(io.open("/proc/self/status"))
  local s = f:read("a")
  f:close()
  return tonumber(s:match("VmRSS:%s*(%d+) kB")) * 1024, tonumber(s:match("Threads:%s*(%d+)"))
end

local function sample()
  collectgarbage("collect")
  collectgarbage("collect")
  local rss, threads = status()
  return { rss = rss, threads = threads, device = tonumber(gcsh.info().gpu_memory_used or "") }
end

local x = tensor.new(64)
local rounds = {
  free = function()
    local s = c:split(me % 2, me)
    s:free()
  end,
  barrier = function()
    local s = c:split(me % 2, me)
    s:barrier()
    s:free()
  end,
  allreduce = function()
    local s = c:split(me % 2, me)
    x:fill(1)
    s:allreduce(x)
    assert(x[0] == s.size, "the split's all-reduce gave " .. tostring(x[0]))
    s:free()
  end,
}

-- Every rank stops at the same round: rank 0's clock decides, every 5 rounds.
local function go_on(t0, cap)
  local votes = c:agree((me ~= 0 or gcsh.wtime() - t0 < cap) and "1" or "0")
  return votes[1] == "1"
end

local function run(name, CAP)
  local round = rounds[name]
  if not round then error("GPU_SPLIT_VARIANTS: unknown variant '" .. name .. "' (valid: free, barrier, allreduce)") end
  c:barrier()
  local start = gcsh.wtime()
  local warm, capped = 0, false
  while warm < WARMUP do
    round(); warm = warm + 1
    if warm % 5 == 0 and warm < WARMUP and not go_on(start, CAP / 2) then capped = true; break end
  end
  c:barrier()
  local before, t0 = sample(), gcsh.wtime()
  local n = 0
  while n < ROUNDS do
    round(); n = n + 1
    if n % 5 == 0 and n < ROUNDS and not go_on(start, CAP) then capped = true; break end
  end
  c:barrier()
  local seconds = gcsh.wtime() - t0
  local after = sample()
  local per_round = n > 0 and seconds / n or 0 / 0
  local growth = after.rss - before.rss
  local per_100 = n > 0 and growth * 100 / n or 0 / 0
  local dev = before.device and after.device and (after.device - before.device) or nil
  local ok_time = n > 0 and per_round <= SECONDS_MAX
  local ok_rss = n > 0 and per_100 <= RSS_MAX
  local verdict = (ok_time and ok_rss) and "PASS" or "FAIL"
  print(string.format("%s %-9s %-22s rank %d: %3d rounds after %d warm-up%s: %.3f s a round%s, "
                      .. "RSS %+d KiB (%+d KiB per 100 rounds%s)%s, device %s, threads %+d%s",
                      verdict, name, LABEL, me, n, warm, capped and " (capped at " .. CAP .. " s)" or "",
                      per_round, ok_time and "" or " (> 0.2)", growth // 1024, math.floor(per_100 / 1024),
                      n < 100 and n > 0 and ", by proportion" or "", ok_rss and "" or " (> 1024)",
                      dev and string.format("%+d KiB", dev // 1024) or "n/a",
                      after.threads - before.threads, n == 0 and " (no measured round)" or ""))
end

if me == 0 then
  print(string.format("config %s: %d ranks, gpu %s, shared %s, nccl %s; splits: %s",
                      LABEL, c.size, tostring(info.gpu_name), tostring(info.gpu_shared),
                      tostring(info.nccl_version), tostring(info.splits)))
end
for v in VARIANTS:gmatch("[^,]+") do
  local name, cap = v:match("^([^:]+):?(.*)$")
  run(name, tonumber(cap) or CAP)
end
