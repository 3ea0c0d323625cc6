-- gcsh.bench's verdict on one bench.allreduce run (bench.allreduce_targets):
-- the issue's targets as ratios, and the crossovers the run suggests for
-- auto.
local M = {}

-- The issue's targets as ratios, from one bench.allreduce run (rank 0
-- prints; returns the table): one-shot time / nccl and / nccl_sym at
-- <= 64 KiB (worst size), two-shot busbw / nccl at >= 256 MiB (worst size),
-- auto time / the best algorithm's (worst size), and the crossovers this run
-- suggests for src/core/kreduce_tune.h (best_crossovers).
local CHOOSABLE = { "oneshot", "twoshot", "nccl_sym" }

-- The thresholds auto should use, from one run's rows by size (at[size][algo]):
-- one-shot up to o bytes, two-shot up to t, the communicator's all-reduce on
-- the window (the nccl_sym rows) above.  Of every pair of measured sizes, the
-- one whose worst ratio (time of what it picks / the fastest of the three)
-- over all sizes is least; of those, the one whose ratios sum least (so a
-- tie at the worst size is broken by how well every other size fares).
-- Returns o, t and that worst ratio.
local function best_crossovers(at, sizes)
  local function time_of(a, algo) return a[algo] and a[algo].time_us or math.huge end
  local function ratios_for(o, t)
    local worst, sum = 1, 0
    for _, size in ipairs(sizes) do
      local a, best = at[size], math.huge
      for _, algo in ipairs(CHOOSABLE) do best = math.min(best, time_of(a, algo)) end
      if best < math.huge then
        local picked = size <= o and "oneshot" or size <= t and "twoshot" or "nccl_sym"
        local ratio = time_of(a, picked) / best
        worst, sum = math.max(worst, ratio), sum + ratio
      end
    end
    return worst, sum
  end
  local thresholds = { 0 }
  for _, size in ipairs(sizes) do thresholds[#thresholds + 1] = size end
  local best_o, best_t, best_worst, best_sum = 0, 0, math.huge, math.huge
  for _, o in ipairs(thresholds) do
    for _, t in ipairs(thresholds) do
      if t >= o then
        local worst, sum = ratios_for(o, t)
        if worst < best_worst or (worst == best_worst and sum < best_sum) then
          best_o, best_t, best_worst, best_sum = o, t, worst, sum
        end
      end
    end
  end
  return best_o, best_t, best_worst
end

-- The worse of a and b by pick (math.max or math.min); nil when neither was
-- measured, so an algorithm that did not run says n/a, not 0.
local function worse(a, b, pick)
  if a == nil then return b end
  return pick(a, b)
end

function M.allreduce_targets(rows, opts)
  opts = opts or {}
  if type(rows) ~= "table" or #rows == 0 or type(rows[1]) ~= "table" or not rows[1].algo then
    error("bench.allreduce_targets: rows must be the non-empty list that bench.allreduce "
          .. "returns (got " .. (type(rows) == "table" and (#rows == 0 and "an empty table"
          or "a table without algo rows") or type(rows)) .. ")", 2)
  end
  local at = {}
  for _, r in ipairs(rows) do
    at[r.size] = at[r.size] or {}
    at[r.size][r.algo] = r
  end
  local sizes = {}
  for size in pairs(at) do sizes[#sizes + 1] = size end
  table.sort(sizes)
  local t = {}
  for _, size in ipairs(sizes) do
    local a = at[size]
    if size <= 64 << 10 and a.oneshot then
      if a.nccl then t.oneshot_vs_nccl = worse(t.oneshot_vs_nccl, a.oneshot.time_us / a.nccl.time_us, math.max) end
      if a.nccl_sym then t.oneshot_vs_nccl_sym = worse(t.oneshot_vs_nccl_sym, a.oneshot.time_us / a.nccl_sym.time_us, math.max) end
    end
    if size >= 256 << 20 and a.twoshot and a.nccl then
      t.twoshot_vs_nccl = worse(t.twoshot_vs_nccl, a.twoshot.busbw / a.nccl.busbw, math.min)
    end
    local best = math.huge
    for algo, r in pairs(a) do if algo ~= "auto" then best = math.min(best, r.time_us) end end
    if a.auto and best < math.huge then t.auto_vs_best = worse(t.auto_vs_best, a.auto.time_us / best, math.max) end
  end
  local one_max, two_max, worst = best_crossovers(at, sizes)
  t.suggest_oneshot_max, t.suggest_twoshot_max = one_max, two_max
  t.suggest_worst = worst < math.huge and worst or nil
  local c = opts.comm or comm.world()
  if c.rank == 0 and not opts.quiet then
    local function f(v) return v and string.format("%.3f", v) or "n/a" end
    print(string.format("# targets (%d ranks): one-shot time / nccl at <= 64 KiB (worst): %s", c.size, f(t.oneshot_vs_nccl)))
    print(string.format("#   one-shot time / nccl_sym at <= 64 KiB (worst): %s", f(t.oneshot_vs_nccl_sym)))
    print(string.format("#   two-shot busbw / nccl at >= 256 MiB (worst): %s", f(t.twoshot_vs_nccl)))
    print(string.format("#   auto time / best algorithm (worst size): %s", f(t.auto_vs_best)))
    print(string.format("#   measured crossovers for src/core/kreduce_tune.h: oneshot_max = %d, twoshot_max = %d"
                        .. " (with them, auto / best of oneshot, twoshot, nccl_sym at worst: %s)", one_max, two_max, f(t.suggest_worst)))
  end
  return t
end

return M
