-- bench.allreduce: every algorithm at a few sizes, correct (#wrong 0),
-- columns, CSV and JSON (the same fields), chart and the targets summary
-- (n/a for an algorithm that did not run, a clear error without rows).
local H = require "harness"
local bench = require "gcsh.bench"

local c = comm.world()
local csv, json = os.tmpname(), os.tmpname()
local rows = bench.allreduce { algos = { "nccl", "nccl_sym", "oneshot", "twoshot", "multicast", "auto" },
                               min = 4, max = 4096, factor = 8, iters = 2, warmup = 1, csv = csv,
                               json = json, chart = "time", quiet = c.rank ~= 0 }
H.eq(#rows, 4 * 6, "one row per size and algorithm")
for _, r in ipairs(rows) do
  H.eq(r.wrong, 0, r.algo .. " at " .. r.size .. " B is right")
  H.truthy(r.time_us > 0 and r.busbw >= 0, "timings")
end
H.eq(rows[1].algo, "nccl", "algorithms in the order given")

-- ll only where it takes the region: rows up to kernel.ll_max_bytes
local ll = bench.allreduce { algos = { "ll", "oneshot" }, min = kernel.ll_max_bytes // 2,
                             max = kernel.ll_max_bytes * 2, iters = 2, warmup = 1, chart = false,
                             quiet = true }
local sizes = {}
for _, r in ipairs(ll) do
  if r.algo == "ll" then sizes[#sizes + 1] = r.size end
  H.eq(r.wrong, 0, r.algo .. " at " .. r.size .. " B is right")
end
H.values(sizes, { kernel.ll_max_bytes // 2, kernel.ll_max_bytes }, nil, "ll rows stop at its limit")
H.eq(#ll, 5, "oneshot at all three sizes, ll at two")
if c.rank == 0 then
  local f = assert(io.open(csv))
  H.eq(f:read("l"), "algo,size,count,type,redop,time_us,algbw,busbw,wrong,issue_us", "csv header")
  local lines = 0
  for _ in f:lines() do lines = lines + 1 end
  f:close()
  H.eq(lines, #rows, "one csv line per row")
  f = assert(io.open(json))
  local doc = require("dkjson").decode(f:read("a"))
  f:close()
  H.eq(doc.bench, "allreduce", "json: bench")
  H.eq(doc.ranks, c.size, "json: ranks")
  H.eq(doc.backend, gcsh.backend, "json: backend")
  H.eq(#doc.rows, #rows, "json: one object per row")
  for i, r in ipairs(rows) do
    for _, k in ipairs { "algo", "size", "count", "type", "redop", "time_us", "algbw", "busbw", "wrong", "issue_us" } do
      if math.type(r[k]) == "float" then H.near(doc.rows[i][k], r[k], 1e-9, "json row " .. i .. " " .. k)
      else H.eq(doc.rows[i][k], r[k], "json row " .. i .. " " .. k) end
    end
  end
end
c:barrier()
os.remove(csv)
os.remove(json)
local t = bench.allreduce_targets(rows, { quiet = true })
H.truthy(t.oneshot_vs_nccl > 0 and t.auto_vs_best >= 1, "target ratios")

-- an algorithm that did not run is n/a (nil), not 0
local only = {}
for _, r in ipairs(rows) do if r.algo == "oneshot" or r.algo == "twoshot" then only[#only + 1] = r end end
t = bench.allreduce_targets(only, { quiet = true })
H.eq(t.oneshot_vs_nccl, nil, "no nccl rows: one-shot / nccl is n/a")
H.eq(t.auto_vs_best, nil, "no auto rows: auto / best is n/a")
H.raises(function() bench.allreduce_targets({}) end,
         "bench.allreduce_targets: rows must be the non-empty list that bench.allreduce returns (got an empty table)", "no rows")
H.raises(function() bench.allreduce_targets() end, "(got nil)", "nil rows")

-- csv=/json= that cannot be written fail at once, on every rank alike
H.raises(function() bench.allreduce { algos = { "oneshot" }, min = 4, max = 4, csv = "/nonexistent/x.csv", quiet = true } end,
         "bench.allreduce: csv=: cannot write /nonexistent/x.csv: No such file or directory", "csv= in a missing folder")
H.raises(function() bench.allreduce { algos = { "oneshot" }, min = 4, max = 4, json = 42 } end,
         "json must be a file name", "json= not a string")
do -- no JSON module: a clear error before anything runs
  local path, loaded = package.path, package.loaded.dkjson
  package.path, package.loaded.dkjson = "", nil
  local ok, err = pcall(bench.allreduce, { algos = { "oneshot" }, min = 4, max = 4, json = "x.json", quiet = true })
  package.path, package.loaded.dkjson = path, loaded
  H.eq(ok, false, "json= without dkjson fails")
  H.truthy(tostring(err):find("json= needs the dkjson module (Debian package lua-dkjson", 1, true), "says which: " .. tostring(err))
end
H.raises(function() bench.allreduce { algos = { "tree" } } end, "unknown algo 'tree'", "bad algo")
H.raises(function() bench.allreduce { algos = { "comm" } } end, "unknown algo 'comm'", "comm is nccl_sym by another name")
