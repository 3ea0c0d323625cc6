-- gcsh.bench's verdict on one bench.allreduce run (bench.allreduce_targets):
-- the issue's targets as ratios, and the crossovers the run suggests for
-- auto.
local M = {}

-- The issue's targets as ratios, from one bench.allreduce run (rank 0
-- prints, naming the rows by what ran; returns the table, its keys by the
-- algorithms asked for): one-shot time / nccl and / nccl_sym at
-- <= 64 KiB (worst size), two-shot busbw / nccl at >= 256 MiB (worst size),
-- auto time / the best algorithm's (worst size), and the crossovers this run
-- suggests for src/core/kreduce_tune.h (best_crossovers).
-- What auto takes, in the order it considers them (src/bind/kalgos.c's one
-- table of algorithms): here the communicator's all-reduce is the nccl_sym
-- rows (on the window's memory).  best_crossovers searches a limit for
-- each but the last, never past what the algorithm takes (CAP).
local CHOOSABLE = {}
for i, algo in ipairs(require("gcsh.kalgos").auto) do
  CHOOSABLE[i] = algo == "comm" and "nccl_sym" or algo
end
assert(CHOOSABLE[#CHOOSABLE] == "nccl_sym", "auto's last choice is the communicator's all-reduce "
       .. "(src/bind/kalgos.c)")
local CAP = { ll = kernel.ll_max_bytes, ll128 = kernel.ll128_max_bytes }

-- What auto runs for `size` with the limits (one per CHOOSABLE but the
-- last), as kernel.choose does: the first whose limit holds, else the last.
local function picked(size, limits)
  for i = 1, #CHOOSABLE - 1 do
    if size <= limits[i] then return CHOOSABLE[i] end
  end
  return CHOOSABLE[#CHOOSABLE]
end

-- The limits auto should use, from one run's rows by size (at[size][algo]):
-- of every choice of measured sizes (each within what its algorithm takes,
-- two-shot's no lower than one-shot's), the one whose worst ratio (time of
-- what it picks / the fastest of them all) over all sizes is least; of
-- those, the one whose ratios sum least (so a tie at the worst size is
-- broken by how well every other size fares).  An algorithm the run did
-- not measure is never picked.  Returns the limits, in CHOOSABLE's order,
-- and that worst ratio.
local function best_crossovers(at, sizes)
  local function time_of(a, algo) return a[algo] and a[algo].time_us or math.huge end
  local best_at = {}
  for i, size in ipairs(sizes) do
    local best = math.huge
    for _, algo in ipairs(CHOOSABLE) do best = math.min(best, time_of(at[size], algo)) end
    best_at[i] = best
  end
  local function ratios_for(limits)
    local worst, sum = 1, 0
    for i, size in ipairs(sizes) do
      if best_at[i] < math.huge then
        local ratio = time_of(at[size], picked(size, limits)) / best_at[i]
        worst, sum = math.max(worst, ratio), sum + ratio
      end
    end
    return worst, sum
  end
  local thresholds = { 0 }
  for _, size in ipairs(sizes) do thresholds[#thresholds + 1] = size end
  local best, best_worst, best_sum = {}, math.huge, math.huge
  for i = 1, #CHOOSABLE - 1 do best[i] = 0 end
  local limits = {}
  local function search(i)
    if i == #CHOOSABLE then
      local worst, sum = ratios_for(limits)
      if worst < best_worst or (worst == best_worst and sum < best_sum) then
        best, best_worst, best_sum = table.move(limits, 1, #limits, 1, {}), worst, sum
      end
      return
    end
    local algo = CHOOSABLE[i]
    for _, l in ipairs(thresholds) do
      local fits = l <= (CAP[algo] or math.huge)
      if algo == "twoshot" and CHOOSABLE[i - 1] == "oneshot" then fits = fits and l >= limits[i - 1] end
      if fits then
        limits[i] = l
        search(i + 1)
      end
    end
  end
  search(1)
  return best, best_worst
end

-- The worse of a and b by pick (math.max or math.min); nil when neither was
-- measured, so an algorithm that did not run says n/a, not 0.
local function worse(a, b, pick)
  if a == nil then return b end
  return pick(a, b)
end

-- What the rows of algo say ran (their label: "comm" for the nccl rows on
-- host), for the printed ratios; an algorithm without rows keeps its name.
local function label_of(rows, algo)
  for _, r in ipairs(rows) do
    if r.algo == algo and r.label then return r.label end
  end
  return algo
end

function M.allreduce_targets(rows, opts)
  gcsh.check_options(opts, "bench.allreduce_targets", "comm quiet")
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
  local limits, worst = best_crossovers(at, sizes)
  local shown = {}
  for i, limit in ipairs(limits) do
    t["suggest_" .. CHOOSABLE[i] .. "_max"] = limit
    shown[i] = string.format("%s_max = %d", CHOOSABLE[i], limit)
  end
  t.suggest_worst = worst < math.huge and worst or nil
  local c = opts.comm or comm.world()
  if c.rank == 0 and not opts.quiet then
    local function f(v) return v and string.format("%.3f", v) or "n/a" end
    local lib, sym = label_of(rows, "nccl"), label_of(rows, "nccl_sym")
    print(string.format("# targets (%d ranks): one-shot time / %s at <= 64 KiB (worst): %s", c.size, lib, f(t.oneshot_vs_nccl)))
    print(string.format("#   one-shot time / %s at <= 64 KiB (worst): %s", sym, f(t.oneshot_vs_nccl_sym)))
    print(string.format("#   two-shot busbw / %s at >= 256 MiB (worst): %s", lib, f(t.twoshot_vs_nccl)))
    print(string.format("#   auto time / best algorithm (worst size): %s", f(t.auto_vs_best)))
    print("#   measured crossovers for src/core/kreduce_tune.h:")
    print("#     " .. table.concat(shown, ", "))
    local named = {}
    for i, algo in ipairs(CHOOSABLE) do named[i] = algo == "nccl_sym" and sym or algo end
    print(string.format("#   (with them, auto / best of %s at worst: %s)",
                        table.concat(named, ", "), f(t.suggest_worst)))
  end
  return t
end

return M
