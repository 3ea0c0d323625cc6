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

-- each row's label says what ran: the communicator's all-reduce as c:choose
-- names its route (no "nccl" where no NCCL ran: "comm" on host, "copy" at
-- one rank on cuda), on the window "nccl_sym" only where NCCL registered
-- it symmetric; multicast without NVLS "mcast(emu)"
local lib = c:choose("allreduce", 1, "f32", "sum", { algo = "comm" })
local WANT = { nccl = lib, nccl_sym = lib == "nccl" and "nccl_sym" or lib .. "_win",
               oneshot = "oneshot", twoshot = "twoshot", auto = "auto" }
if gcsh.backend == "host" then
  H.eq(lib, "comm", "the host backend's collectives are no NCCL")
  H.eq(WANT.nccl_sym, "comm_win", "nor on the window")
  WANT.multicast = "mcast(emu)"
end
for _, r in ipairs(rows) do
  if WANT[r.algo] and (r.algo ~= "nccl" or r.count > 1) then -- cuda: a copy at 1 element
    H.eq(r.label, WANT[r.algo], r.algo .. "'s label at " .. r.size .. " B")
  end
end
local solo = c:split(c.rank) -- rank 0 prints alone, at one rank: quick
if c.rank == 0 then -- the table, the chart and the targets print the labels
  local printed, real_print = {}, print
  print = function(s) printed[#printed + 1] = s end -- luacheck: ignore
  local ok, err = pcall(function()
    local t = bench.allreduce { algos = { "nccl", "nccl_sym", "multicast" }, min = 64, max = 64,
                                iters = 1, warmup = 0, comm = solo, chart = "busbw" }
    bench.allreduce_targets(t, { comm = solo })
  end)
  print = real_print -- luacheck: ignore
  H.truthy(ok, "bench at rank 0 alone: " .. tostring(err))
  local text = table.concat(printed, "\n")
  local lib0 = solo:choose("allreduce", 16, "f32", "sum", { algo = "comm" })
  H.truthy(text:find("f32%s+" .. lib0 .. "%s") and text:find("\n  " .. lib0 .. " "),
           "the table's and the chart's row of nccl: " .. lib0 .. "\n" .. text)
  H.truthy(text:find("one-shot time / " .. lib0 .. " at", 1, true), "the targets name it: " .. text)
  if gcsh.backend == "host" then
    H.eq(text:find("nccl", 1, true), nil, "no nccl in what bench printed on host:\n" .. text)
    H.truthy(text:find("mcast(emu)", 1, true), "multicast emulated says so: " .. text)
  end
end
solo:free()

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

-- persistent: one resident for the run, rows up to its max_bytes, right,
-- stopped at the end (the window's free would be refused otherwise)
local pr = bench.allreduce { algos = { "persistent" }, min = kernel.ll_max_bytes // 2,
                             max = kernel.ll_max_bytes * 2, iters = 2, warmup = 1, chart = false,
                             quiet = true, graph = 2 }
H.eq(#pr, 2, "persistent rows stop at the LL area's size")
for _, r in ipairs(pr) do
  H.eq(r.algo, "persistent", "the algorithm")
  H.eq(r.wrong, 0, "persistent at " .. r.size .. " B is right")
  H.eq(r.graph, nil, "graph= does not apply to rings")
end
if c.rank == 0 then
  local f = assert(io.open(csv))
  H.eq(f:read("l"), "algo,size,count,type,redop,time_us,algbw,busbw,wrong,issue_us,label,gpu_shared", "csv header")
  local cells = {}
  for line in f:lines() do
    local row = {}
    for cell in (line .. ","):gmatch("([^,]*),") do row[#row + 1] = cell end
    cells[#cells + 1] = row
  end
  f:close()
  H.eq(#cells, #rows, "one csv line per row")
  f = assert(io.open(json))
  local text = f:read("a")
  local doc = require("dkjson").decode(text)
  f:close()
  -- CSV with JSON's precision: each busbw cell is the JSON file's text
  local json_busbw = {}
  for v in text:gmatch('"busbw":%s*([^,\n}]+)') do json_busbw[#json_busbw + 1] = v end
  H.eq(#json_busbw, #rows, "json: a busbw per row")
  for i = 1, #rows do
    H.eq(cells[i][8], json_busbw[i], "csv row " .. i .. " busbw as json writes it")
    H.near(tonumber(cells[i][8]), rows[i].busbw, 1e-12 * rows[i].busbw, "csv row " .. i .. " busbw, 14 digits")
  end
  H.eq(doc.bench, "allreduce", "json: bench")
  H.eq(doc.ranks, c.size, "json: ranks")
  H.eq(doc.backend, gcsh.backend, "json: backend")
  H.eq(#doc.rows, #rows, "json: one object per row")
  -- figures of ranks sharing a GPU say so (--share-gpu); none here
  H.eq(doc.rows[1].gpu_shared, gcsh.backend == "host" and "no" or doc.rows[1].gpu_shared,
       "json: gpu_shared")
  for i, r in ipairs(rows) do
    for _, k in ipairs { "algo", "size", "count", "type", "redop", "time_us", "algbw", "busbw", "wrong", "issue_us", "label" } do
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
-- the crossovers it suggests: each algorithm fastest in its own range gives
-- exactly those limits; ll is never suggested past what it takes
local synthetic = {}
local FASTEST = { { 64, "ll" }, { 256, "ll128" }, { 512, "oneshot" }, { 4096, "twoshot" },
                  { 1 << 30, "nccl_sym" } }
local size = 8
while size <= 1 << 20 do
  local fastest
  for _, f in ipairs(FASTEST) do if size <= f[1] then fastest = f[2]; break end end
  for _, algo in ipairs { "ll", "ll128", "oneshot", "twoshot", "nccl_sym" } do
    synthetic[#synthetic + 1] = { algo = algo, size = size, time_us = algo == fastest and 1 or 2, busbw = 1 }
  end
  size = size * 2
end
t = bench.allreduce_targets(synthetic, { quiet = true })
H.eq(string.format("%d %d %d %d", t.suggest_ll_max, t.suggest_ll128_max, t.suggest_oneshot_max,
                   t.suggest_twoshot_max),
     "64 256 512 4096", "suggested crossovers: ll, ll128, one-shot, two-shot")
H.eq(t.suggest_worst, 1, "with them auto would be the fastest at every size")
for _, row in ipairs(synthetic) do -- ll fastest everywhere: capped at what it takes
  row.time_us = row.algo == "ll" and 1 or 2
end
t = bench.allreduce_targets(synthetic, { quiet = true })
H.eq(t.suggest_ll_max, kernel.ll_max_bytes, "ll suggested up to kernel.ll_max_bytes, no further")
for _, row in ipairs(synthetic) do -- ll128 fastest everywhere: the same at its own bound
  row.time_us = row.algo == "ll128" and 1 or 2
end
t = bench.allreduce_targets(synthetic, { quiet = true })
H.eq(t.suggest_ll128_max, kernel.ll128_max_bytes, "ll128 suggested up to its bound, no further")
H.eq(t.suggest_ll_max, 0, "ll never faster: never suggested")
-- an algorithm the run did not measure is never suggested
local without = {}
for _, row in ipairs(synthetic) do if row.algo ~= "ll128" then without[#without + 1] = row end end
t = bench.allreduce_targets(without, { quiet = true })
H.eq(t.suggest_ll128_max, 0, "ll128 not measured: not suggested")
H.raises(function() bench.allreduce_targets({}) end,
         "bench.allreduce_targets: rows must be the non-empty list that bench.allreduce returns (got an empty table)", "no rows")
H.raises(function() bench.allreduce_targets() end, "(got nil)", "nil rows")

-- the chart: each size on its own scale, values with three significant
-- digits, so small sizes do not read 0.00
local chart_rows = {
  { algo = "a", size = 8, type = "f32", busbw = 0.00406, time_us = 10 },
  { algo = "b", size = 8, type = "f32", busbw = 0.00203, time_us = 20 },
  { algo = "a", size = 1 << 30, type = "f32", busbw = 325.0, time_us = 3300 },
  { algo = "b", size = 1 << 30, type = "f32", busbw = 162.5, time_us = 6600 },
}
local printed, real_print = {}, print
print = function(s) printed[#printed + 1] = s end -- luacheck: ignore
bench.chart(chart_rows, "busbw")
print = real_print -- luacheck: ignore
H.eq(printed[1], "# busbw (GB/s) per algorithm (f32); at each size, bars relative to the best there", "chart title")
H.eq(printed[2], "8 B", "chart: a size")
H.eq(printed[3], "  a          " .. string.rep("#", 50) .. " 0.00406", "chart: the best at 8 B, full width, its value")
H.eq(printed[4], "  b          " .. string.rep("#", 25) .. " 0.00203", "chart: half of it, half the width")
H.eq(printed[6], "  a          " .. string.rep("#", 50) .. " 325", "chart: 1 GiB on its own scale")

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

-- bench.time: any function, timed on every rank; each rank's own mean, the
-- average and the slowest's; calls made alike on every rank (fn may be
-- collective: a rank deciding alone would hang the others)
do
  local n = 0
  local slow = c.rank == c.size - 1 and 0.002 or 0
  local t = bench.time(function() n = n + 1; c:barrier(); if slow > 0 then gcsh.sleep(slow) end end,
                       { iters = 3, warmup = 2, min_time = 0 })
  H.eq(t.calls, 3, "iters calls timed when they fill min_time")
  H.eq(n, 5, "warmup, then the timed calls")
  H.truthy(t.mine > 0 and t.avg > 0 and t.max >= t.avg - 1e-9, "mine, avg and max: " .. t.mine .. " " .. t.avg .. " " .. t.max)
  if c.rank == c.size - 1 then H.truthy(t.mine >= 2000, "the slow rank's own mean is its own: " .. t.mine) end
  local every = tensor.from({ t.calls, t.avg, t.max }, "f64")
  local most = tensor.from({ t.calls, t.avg, t.max }, "f64")
  c:allreduce(every, "min")
  c:allreduce(most, "max")
  H.values(every, most:totable(), 0, "calls, avg and max alike on every rank")
  local m = 0
  local filled = bench.time(function() m = m + 1 end, { iters = 1, warmup = 0, min_time = 0.001 })
  H.truthy(filled.calls > 1 and m == 1 + filled.calls, "more calls to fill min_time: " .. filled.calls)
end
H.raises(function() bench.time(function() end, { iter = 3 }) end,
         "bench.time: unknown option 'iter' (valid: comm iters min_time warmup)", "bench.time's options")
H.raises(function() bench.time(42) end, "bench.time: fn must be a function, got number", "bench.time's fn")
H.raises(function() bench.time(function() end, { iters = 0 }) end, "bench.time: iters must be an integer >= 1", "iters")
