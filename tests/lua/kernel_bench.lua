-- bench.allreduce: every algorithm at a few sizes, correct (#wrong 0),
-- columns, CSV, chart and the targets summary.
local H = require "harness"
local bench = require "gcsh.bench"

local c = comm.world()
local csv = os.tmpname()
local rows = bench.allreduce { algos = { "nccl", "nccl_sym", "oneshot", "twoshot", "multicast", "auto" },
                               min = 4, max = 4096, factor = 8, iters = 2, warmup = 1, csv = csv,
                               chart = "time", quiet = c.rank ~= 0 }
H.eq(#rows, 4 * 6, "one row per size and algorithm")
for _, r in ipairs(rows) do
  H.eq(r.wrong, 0, r.algo .. " at " .. r.size .. " B is right")
  H.truthy(r.time_us > 0 and r.busbw >= 0, "timings")
end
H.eq(rows[1].algo, "nccl", "algorithms in the order given")
if c.rank == 0 then
  local f = assert(io.open(csv))
  H.eq(f:read("l"), "algo,size,count,type,redop,time_us,algbw,busbw,wrong,issue_us", "csv header")
  local lines = 0
  for _ in f:lines() do lines = lines + 1 end
  f:close()
  H.eq(lines, #rows, "one csv line per row")
end
c:barrier()
os.remove(csv)
local t = bench.allreduce_targets(rows, { quiet = true })
H.truthy(t.oneshot_vs_nccl > 0 and t.auto_vs_best >= 1, "target ratios")
H.raises(function() bench.allreduce { algos = { "ring" } } end, "unknown algo 'ring'", "bad algo")
