-- The gcsh side of scripts/gpu-nodes.sh (issue 41): in one job on several
-- nodes (simulated: scripts/simnode), after the script ran nccl-tests'
-- all_reduce_perf on the same nodes into REF:
--   1. bench.allreduce of NCCL (c:allreduce on a plain tensor), "hier" and
--      "auto" (which must pick hier on a window across nodes), in place,
--      f32 sum, 8 B .. MAX, values checked (#wrong);
--   2. hier's and NCCL's time per call against nccl-tests' in-place time
--      (bench.compare), or, without nccl-tests' rows (a dry run on the
--      host backend), against gcsh's own NCCL row of the same job;
--   3. the issue's targets as ratios: hier <= 1.0x the reference at 8 B ..
--      64 KiB and <= 1.1x above, each band's worst size named;
--   4. hier's parts, 8 B .. 1 MiB: the all-reduce across nodes alone (NCCL
--      on a communicator of one rank a node, as hier's middle step) at the
--      size and at hier's chunk (size / ranks a node), and the one-shot in
--      one node alone; what a two-step hier (one-shot in the node, then the
--      whole region across nodes) would cost at least, against the
--      reference: whether such a variant could meet the target at all.
-- CSV into OUTDIR: nodes-allreduce-npN.csv (every row) and
-- nodes-compare-npN.csv (the ratios).
-- Usage: mpirun ... gcsh scripts/bench/nodes.lua OUTDIR MAX ITERS [REF]
local b = require "gcsh.bench"

local c = comm.world()
local np, speaks = c.size, c.rank == 0
local OUT = assert(arg[1], "usage: nodes.lua OUTDIR MAX ITERS [REF]")
local MAX = math.tointeger(tonumber(arg[2] or "")) or (64 << 20)
local ITERS = math.tointeger(tonumber(arg[3] or "")) or 20
local REF = arg[4]
local SMALL = 64 << 10 -- the latency target's range: 8 B .. 64 KiB
local function say(...) if speaks then print(string.format(...)) end end

say("nodes: %d ranks on %d nodes (%s backend), %s", np, gcsh.nodes, gcsh.backend,
    tostring(gcsh.info().device or ""))
if gcsh.nodes < 2 then
  say("nodes: the job is one node: hier would not cross a network; nothing to compare")
  return
end

-- ---- 1. gcsh's rows ----------------------------------------------------------------
local rows = b.allreduce { algos = { "nccl", "hier", "auto" }, min = 8, max = MAX, factor = 2,
                           iters = ITERS, warmup = 5, chart = false, quiet = not speaks,
                           csv = string.format("%s/nodes-allreduce-np%d.csv", OUT, np) }
local by_algo = {}
for _, r in ipairs(rows) do
  by_algo[r.algo] = by_algo[r.algo] or {}
  table.insert(by_algo[r.algo], r)
  if r.wrong ~= 0 then say("nodes: WRONG values: %s at %d B: %d elements", r.algo, r.size, r.wrong) end
end
-- what the nccl rows ran, as bench labels them ("comm" on the host backend)
local lib = by_algo.nccl and by_algo.nccl[1].label or "nccl"
local function label_of(algo) return algo == "nccl" and lib or algo end

-- ---- 2. the reference ---------------------------------------------------------------
local ref, ref_label, own_ref
if REF then
  local ok, got = pcall(b.nccl_tests, REF)
  if ok and #got > 0 then ref, ref_label = got, "nccl-tests all_reduce_perf, in place, same nodes"
  else say("# note: no nccl-tests rows in %s (%s): against gcsh's %s row instead", REF, tostring(got), lib) end
end
if not ref then
  ref, ref_label, own_ref = {}, "gcsh's " .. lib .. " row (c:allreduce), same job", true
  for _, r in ipairs(by_algo.nccl or {}) do
    ref[#ref + 1] = { size = r.size, time_us = r.time_us, busbw = r.busbw, ip_time_us = r.time_us,
                      ip_busbw = r.busbw }
  end
end
local compared = {}
for _, algo in ipairs(own_ref and { "hier" } or { "hier", "nccl" }) do
  local out = b.compare(by_algo[algo] or {}, ref, { label = "gcsh " .. label_of(algo), ref_label = ref_label,
                                                    inplace = true, quiet = not speaks })
  for _, r in ipairs(out) do r.algo = algo; compared[#compared + 1] = r end
  if algo == "hier" then compared.hier = out end
end

-- ---- 3. the targets ---------------------------------------------------------------
local function band(out, lo, hi)
  local worst, at = nil, nil
  for _, r in ipairs(out) do
    if r.size >= lo and r.size <= hi and (not worst or r.ratio > worst) then worst, at = r.ratio, r.size end
  end
  return worst, at
end
for _, t in ipairs({ { 8, SMALL, 1.0, "at 8 B .. 64 KiB" }, { SMALL + 1, math.maxinteger, 1.1, "above 64 KiB" } }) do
  local worst, at = band(compared.hier or {}, t[1], t[2])
  if worst then
    say("target: hier <= %.1fx the reference %s: worst %.3f at %d B: %s", t[3], t[4], worst, at,
        worst <= t[3] and "met" or "MISSED")
  else
    say("target: hier <= %.1fx the reference %s: no size measured", t[3], t[4])
  end
end
-- ---- 4. hier's parts ----------------------------------------------------------------
-- member: this rank's place among its node's ranks (rank order); across:
-- the member-t ranks of every node (hier's middle step), node: one node
local member = 0
for r = 0, c.rank - 1 do if gcsh.node_of(r) == gcsh.node_of(c.rank) then member = member + 1 end end
local PARTS_MAX = math.min(MAX, 1 << 20)
local across = c:split(member, c.rank)
local node = c:split(gcsh.node_of(c.rank), c.rank)
local function times(rows_of)
  local t = {}
  for _, r in ipairs(rows_of) do t[r.size] = r.time_us end
  return t
end
local part_opts = { min = 8, max = PARTS_MAX, factor = 2, iters = ITERS, warmup = 5, chart = false,
                    quiet = true }
local function rows_on(comm_, algo)
  local o = { algos = { algo }, comm = comm_ }
  for k, v in pairs(part_opts) do o[k] = v end
  return times(b.allreduce(o))
end
local cross = rows_on(across, "nccl")
local in_node = rows_on(node, "oneshot")
local team = node.size
local ref_at = {}
for _, r in ipairs(ref) do ref_at[r.size] = r.ip_time_us or r.time_us end
local hier_at = times(by_algo.hier or {})
say("# hier's parts (us a call; across: %s, one rank a node; node: oneshot in one node)",
    across:choose("allreduce", 1 << 10, "f32", "sum", { algo = "comm" }))
if team & (team - 1) ~= 0 then -- (the sizes are powers of two)
  say("# across/T: '-': %d ranks a node; no measured size is a size / %d", team, team)
end
say("%10s %9s %9s %11s %11s %9s %8s %s", "size (B)", "ref", "hier", "across/T", "across", "node",
    "2-step", "/ ref")
local function us(v, width) return string.format("%" .. width .. "s", v and string.format("%.2f", v) or "-") end
local size = 8
while size <= PARTS_MAX do
  local two = in_node[size] and cross[size] and in_node[size] + cross[size]
  say("%10d %s %s %s %s %s %s %s", size, us(ref_at[size], 9), us(hier_at[size], 9),
      us(cross[size // team], 11), us(cross[size], 11), us(in_node[size], 9), us(two, 8),
      two and ref_at[size] and string.format("%.2fx", two / ref_at[size]) or "-")
  size = size * 2
end
across:free()
node:free()

local auto_hier = true
for _, r in ipairs(by_algo.auto or {}) do auto_hier = auto_hier and r.wrong == 0 end
say("auto across nodes: every size right: %s", tostring(auto_hier))

if speaks then
  local lines = { "algo,size,time_us,ref_us,ratio" }
  for _, r in ipairs(compared) do
    lines[#lines + 1] = string.format("%s,%d,%.3f,%.3f,%.4f", r.algo, r.size, r.time_us, r.ref_us, r.ratio)
  end
  gcsh.write_file(string.format("%s/nodes-compare-np%d.csv", OUT, np), table.concat(lines, "\n") .. "\n")
end
