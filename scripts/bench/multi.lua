-- The gcsh side of GCSH_BENCH_ONLY=multi (scripts/bench-gpu.sh, issue 28):
-- after the script ran nccl-tests into OUTDIR (all_reduce_perf plain, -R 2,
-- -R 2 -D 1, -R 2 -D 2, -G 100, -R 2 -G 100; broadcast, reduce, all_gather,
-- reduce_scatter and alltoall _perf), in one job on every GPU:
--   1. bench.allreduce of NCCL (nccl), NCCL on a symmetric window
--      (nccl_sym) and every kernel algorithm (kernel.algos but "comm",
--      nccl_dev included), in place, 8 B .. MAX, .check off; then the same
--      with graph=100 up to GRAPH_MAX;
--   2. bench.collective of every NCCL collective, .check on: SMALL_ITERS
--      calls a size up to 1 MiB (against nccl-tests' multi-small-* runs,
--      as many calls), ITERS above;
--   3. each against its nccl-tests run: the matrix of ratios (time per call
--      / the reference's, in place for the all-reduce algorithms), the
--      issue's targets as ratios, and bench.allreduce_targets' crossovers.
-- CSV into OUTDIR: the rows of every bench call (multi-allreduce-npN.csv,
-- multi-allreduce-graph-npN.csv, multi-persistent-npN.csv,
-- multi-coll-<op>-npN.csv: the collectives' own names, so the all-reduce's
-- .check on rows do not overwrite the algorithms'), and every comparison
-- (multi-compare-npN.csv).
-- Usage: mpirun -np N build-gpu/gcsh scripts/bench/multi.lua OUTDIR MAX ITERS GRAPH_MAX [SMALL_ITERS]
local b = require "gcsh.bench"

local c = comm.world()
local np, speaks = c.size, c.rank == 0
local OUT = assert(arg[1], "usage: multi.lua OUTDIR MAX ITERS GRAPH_MAX")
local MAX = math.tointeger(tonumber(arg[2] or "")) or (1 << 30)
local ITERS = math.tointeger(tonumber(arg[3] or "")) or 20
local GRAPH_MAX = math.tointeger(tonumber(arg[4] or "")) or (64 << 20)
local SMALL_ITERS = math.tointeger(tonumber(arg[5] or "")) or 1000
local SMALL = 64 << 10 -- the latency targets' range: 8 B .. 64 KiB
local function say(...) if speaks then print(string.format(...)) end end

if np < 2 then
  say("multi: needs 2 or more ranks, one GPU each (got %d)", np)
  return
end

-- ---- the references ------------------------------------------------------------

-- nccl-tests' rows from OUTDIR/nccl-tests-multi-<tag>-npN.out, or an empty
-- list (and a note) when that run left nothing to read.
local function reference(tag)
  local path = string.format("%s/nccl-tests-multi-%s-np%d.out", OUT, tag, np)
  local ok, rows = pcall(b.nccl_tests, path)
  if not ok or #rows == 0 then
    say("# note: no nccl-tests rows in %s: comparisons with it say n/a", path)
    return { graph = 0 }
  end
  return rows
end
local REF = {}
for _, tag in ipairs { "plain", "R2", "R2D1", "R2D2", "G100", "R2G100" } do REF[tag] = reference(tag) end

-- Which nccl-tests run each all-reduce algorithm is measured against:
-- NCCL plain against plain, NCCL's symmetric kernels and gcsh's own kernels
-- against symmetric registration (-R 2), nccl_dev against NCCL's device-API
-- kernels (-R 2 -D 1); from graphs, the same under -G 100.
local function ref_tag(algo, graph)
  if algo == "nccl" then return graph and "G100" or "plain" end
  if graph then return "R2G100" end
  return algo == "nccl_dev" and "R2D1" or "R2"
end

-- ---- 1. all-reduce: every algorithm, then from graphs ----------------------------

local KERNELS = {}
for _, a in ipairs(kernel.algos) do
  if a ~= "comm" then KERNELS[#KERNELS + 1] = a end -- comm is nccl_sym by another name
end
local ALGOS = { "nccl", "nccl_sym" }
for _, a in ipairs(KERNELS) do ALGOS[#ALGOS + 1] = a end

say("== %d ranks: bench.allreduce, every algorithm, 8 B .. %d B, in place, .check off", np, MAX)
local plain = b.allreduce { algos = ALGOS, min = 8, max = MAX, factor = 2, iters = ITERS, warmup = 5,
                            kind = "nccl", chart = false,
                            csv = string.format("%s/multi-allreduce-np%d.csv", OUT, np) }
say("== %d ranks: the same from graphs (graph=100), 8 B .. %d B", np, GRAPH_MAX)
local graphed = b.allreduce { algos = ALGOS, min = 8, max = GRAPH_MAX, factor = 2, iters = ITERS,
                              warmup = 5, kind = "nccl", chart = false, graph = 100,
                              csv = string.format("%s/multi-allreduce-graph-np%d.csv", OUT, np) }

-- the persistent all-reduce (kernel.persistent: issue 22) up to 64 KiB, the
-- most its resident takes a call, beside ll and an empty launch
say("== %d ranks: kernel.persistent beside ll and an empty launch, 8 B .. %d B", np, SMALL)
local persist = b.allreduce { algos = { "empty", "ll", "persistent" }, min = 8, max = SMALL, factor = 2,
                              iters = 50 * ITERS, warmup = 50, kind = "nccl", chart = false,
                              csv = string.format("%s/multi-persistent-np%d.csv", OUT, np) }

-- ---- 2. every NCCL collective, .check on ------------------------------------------

-- Up to SMALL_MAX both sides run SMALL_ITERS calls a size (nccl-tests'
-- multi-small-<binary> runs): 20 calls of 10 us are at the mercy of one
-- hiccup on either side.  Above it, ITERS calls against the plain runs.
local COLLS = { -- bench.collective's op, nccl-tests' binary (its output tag)
  { "allreduce", "all_reduce", "plain" }, { "broadcast", "broadcast" }, { "reduce", "reduce" },
  { "allgather", "all_gather" }, { "reducescatter", "reduce_scatter" }, { "alltoall", "alltoall" },
}
local SMALL_MAX = 1 << 20
local coll_rows, coll_small = {}, {}
for _, oc in ipairs(COLLS) do
  local op, bin = oc[1], oc[2]
  local function bench_range(min, max, iters, csv_tag)
    say("== %d ranks: bench.collective %s, %d B .. %d B, %d calls a size, .check on", np, op, min,
        max, iters)
    return b.collective { op = op, min = min, max = max, factor = 2, iters = iters, warmup = 5,
                          check = true, checked = true, quiet = true,
                          csv = string.format("%s/multi-coll-%s%s-np%d.csv", OUT, op, csv_tag, np) }
  end
  coll_small[op] = bench_range(8, math.min(SMALL_MAX, MAX), SMALL_ITERS, "-small")
  coll_rows[op] = MAX > SMALL_MAX and bench_range(2 * SMALL_MAX, MAX, ITERS, "") or {}
  REF["small-" .. bin] = reference("small-" .. bin)
  REF[oc[3] or bin] = REF[oc[3] or bin] or reference(bin)
end

-- ---- 3. against nccl-tests ----------------------------------------------------------

local compared = {} -- every comparison, for the CSV
local function rows_of(rows, algo)
  local out = {}
  for _, r in ipairs(rows) do if r.algo == algo then out[#out + 1] = r end end
  return out
end

-- ratio[size] of rows against nccl-tests run `tag`, recorded for the CSV.
local function against(part, label, rows, tag, inplace)
  local cmp = b.compare(rows, REF[tag], { inplace = inplace, quiet = true })
  local by_size = {}
  for _, r in ipairs(cmp) do
    by_size[r.size] = r
    compared[#compared + 1] = { part, label, r.size, r.time_us, "nccl-tests " .. tag, r.ref_us,
                                r.ratio, r.busbw, r.ref_busbw }
  end
  return by_size
end

local function human(bytes)
  for _, u in ipairs { { 1 << 30, "G" }, { 1 << 20, "M" }, { 1 << 10, "K" } } do
    if bytes >= u[1] and bytes % u[1] == 0 then return (bytes // u[1]) .. u[2] end
  end
  return bytes .. "B"
end

local SHORT = { multicast = "mcast" }
-- One line per size, one column per algorithm: its time / its reference's.
local function matrix(title, ratios, sizes)
  say("# %s", title)
  local head = string.format("%6s", "size")
  for _, a in ipairs(ALGOS) do head = head .. string.format(" %8s", SHORT[a] or a) end
  say("%s", head)
  for _, size in ipairs(sizes) do
    local line = string.format("%6s", human(size))
    for _, a in ipairs(ALGOS) do
      local r = ratios[a][size]
      line = line .. (r and string.format(" %8.2f", r.ratio) or string.format(" %8s", "-"))
    end
    say("%s", line)
  end
end

local function sizes_of(rows)
  local seen, out = {}, {}
  for _, r in ipairs(rows) do
    if not seen[r.size] then seen[r.size] = true; out[#out + 1] = r.size end
  end
  table.sort(out)
  return out
end

local ratio, gratio = {}, {}
for _, a in ipairs(ALGOS) do
  ratio[a] = against("allreduce", a, rows_of(plain, a), ref_tag(a, false), true)
  gratio[a] = against("allreduce graph=100", a, rows_of(graphed, a), ref_tag(a, true), true)
end
matrix("all-reduce, time per call / nccl-tests' in place (below 1: gcsh faster)\n"
       .. "# against: nccl plain; nccl_sym and kernels -R 2; nccl_dev -R 2 -D 1", ratio, sizes_of(plain))
matrix("the same from graphs (graph=100)\n# against: nccl -G 100; the others -R 2 -G 100",
       gratio, sizes_of(graphed))

-- ---- the issue's targets, as ratios ------------------------------------------------

local function f(v) return v and string.format("%.3f", v) or "n/a" end

-- The best kernel algorithm's time per size (<= SMALL) against reference
-- `tag`'s in-place time: the worst such ratio over the sizes, and where.
local function best_kernel(rows, tag)
  local ref = {}
  for _, q in ipairs(REF[tag]) do ref[q.size] = q.ip_time_us end
  local best = {}
  for _, r in ipairs(rows) do
    if r.size <= SMALL and r.algo ~= "nccl" and r.algo ~= "nccl_sym" then
      local cur = best[r.size]
      if not cur or r.time_us < cur.time_us then best[r.size] = r end
    end
  end
  local worst, at
  for size, r in pairs(best) do
    if ref[size] then
      local x = r.time_us / ref[size]
      if not worst or x > worst then worst, at = x, string.format("%s at %s", r.algo, human(size)) end
    end
  end
  return worst, at
end

-- auto against the fastest algorithm measured (NCCL included), every size.
local function auto_vs_fastest(rows)
  local at = {}
  for _, r in ipairs(rows) do at[r.size] = at[r.size] or {}; at[r.size][r.algo] = r end
  local worst, where
  for size, a in pairs(at) do
    local fastest
    for algo, r in pairs(a) do
      if algo ~= "auto" and (not fastest or r.time_us < fastest.time_us) then fastest = r end
    end
    if a.auto and fastest then
      local x = a.auto.time_us / fastest.time_us
      if not worst or x > worst then worst, where = x, string.format("%s: %s fastest", human(size), fastest.algo) end
    end
  end
  return worst, where
end

-- two-shot's busbw / nccl-tests' (in place) at >= 256 MiB, the worst size.
local function twoshot_busbw(tag)
  local ref, worst = {}, nil
  for _, q in ipairs(REF[tag]) do ref[q.size] = q.ip_busbw end
  for _, r in ipairs(rows_of(plain, "twoshot")) do
    if r.size >= 256 << 20 and ref[r.size] and ref[r.size] > 0 then
      local x = r.busbw / ref[r.size]
      worst = worst and math.min(worst, x) or x
    end
  end
  return worst
end

local function worst_small(by_size)
  local worst
  for size, r in pairs(by_size or {}) do
    if size <= SMALL then worst = worst and math.max(worst, r.ratio) or r.ratio end
  end
  return worst
end

local kw, kat = best_kernel(plain, "R2")
local gw, gat = best_kernel(graphed, "R2G100")
local aw, aat = auto_vs_fastest(plain)
-- one line per target: what is compared, the worst ratio, the target, where
local function target(what, v, goal, where)
  say("#   %-40s %6s %7s  %s", what, f(v), goal, where or "")
end
say("# targets: %d ranks, %s, one run, .check off unless said (worst size)", np,
    gcsh.info().device or "?")
say("#   %-40s %6s %7s  %s", "", "ratio", "target", "where")
target("best kernel / nccl-tests -R 2, <= 64 KiB", kw, "<= 0.7", kat)
target("best kernel graph / -R 2 -G 100, <= 64K", gw, "<= 0.7", gat)
target("auto / the fastest, NCCL included", aw, "<= 1.05", aat)
target("two-shot busbw / plain's, >= 256 MiB", twoshot_busbw("plain"), ">= 1.0")
target("two-shot busbw / -R 2's, >= 256 MiB", twoshot_busbw("R2"), ">= 1.0")
target("nccl_dev / -R 2 -D 1, <= 64 KiB", worst_small(ratio.nccl_dev), "-", "its reference")
local d2 = against("allreduce", "nccl_dev", rows_of(plain, "nccl_dev"), "R2D2", true)
local pg = against("persistent", "persistent", rows_of(persist, "persistent"), "R2G100", true)
target("persistent / -R 2 -G 100, <= 64 KiB", worst_small(pg), "<= 0.5", "issue 22")
local p8 = rows_of(persist, "persistent")[1]
target("persistent at 8 B, us a call", p8 and p8.time_us, "<= 1.5", "issue 22")
target("nccl_dev / -R 2 -D 2, <= 64 KiB", worst_small(d2), "-", "the vectorised one")
for _, oc in ipairs(COLLS) do
  local op, bin = oc[1], oc[2]
  local worst, at
  for _, part in ipairs { { coll_small[op], "small-" .. bin }, { coll_rows[op], oc[3] or bin } } do
    for size, r in pairs(against("collective .check on", op, part[1], part[2], false)) do
      if not worst or r.ratio > worst then worst, at = r.ratio, human(size) end
    end
  end
  target(op .. " .check on / nccl-tests", worst, "<= 1.1", at and ("at " .. at))
end
b.allreduce_targets(plain, { comm = c })

-- ---- the comparisons as CSV ------------------------------------------------------

if speaks then
  local lines = { "part,algo,size,gcsh_us,reference,ref_us,ratio,busbw,ref_busbw" }
  for _, r in ipairs(compared) do
    local cells = {}
    for i, v in ipairs(r) do
      cells[i] = type(v) == "number" and (math.type(v) == "integer" and tostring(v) or string.format("%.4f", v))
        or tostring(v)
    end
    lines[#lines + 1] = table.concat(cells, ",")
  end
  local path = string.format("%s/multi-compare-np%d.csv", OUT, np)
  gcsh.write_file(path, table.concat(lines, "\n") .. "\n")
  say("# comparisons: %s (and the rows: %s/multi-*-np%d.csv)", path, OUT, np)
end
say("# references: nccl-tests all_reduce_perf plain, -R 2, -R 2 -D 1, -R 2 -D 2, -G 100,"
    .. " -R 2 -G 100; the collectives' _perf plain, %d calls a size up to 1 MiB", SMALL_ITERS)
