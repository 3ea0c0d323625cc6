-- gcsh.bench.collective with check=true: every collective, a few dtypes and
-- ops, in and out of place, reports 0 wrong and one row per size; and the
-- timer binding it is built on.
local H = require "harness"
local bench = require "gcsh.bench"

local c = comm.world()
local me, n = c.rank, c.size

-- timer, wtime, sync
local tm = gcsh.timer()
H.eq(tostring(tm), "timer(running)", "timer tostring")
local t0 = gcsh.wtime()
c:barrier()
local s = tm:stop()
H.truthy(math.type(s) == "float" and s >= 0 and s < 60, "timer seconds: " .. tostring(s))
H.raises(function() tm:stop() end, "timer already stopped", "second stop")
H.truthy(gcsh.wtime() >= t0, "wtime is monotonic")
gcsh.sync()
do local scoped <close> = gcsh.timer() end -- released unstopped: no error, no leak
gcsh.timer():free()

-- sizes min, min*f, ... <= max whose per-call count is at least 1
local function expected_rows(op, min, max, factor, dsize)
  local per_rank = op == "allgather" or op == "reducescatter" or op == "alltoall"
  local rows, sz = 0, min
  while sz <= max do
    local count = sz // dsize
    if (per_rank and count // n or count) >= 1 then rows = rows + 1 end
    sz = sz * factor
  end
  return rows
end

local DSIZE = { f32 = 4, f16 = 2, i8 = 1, f64 = 8, u8 = 1, bf16 = 2, i32 = 4 }
local cases = {
  { op = "allreduce", dtype = "f32", redop = "sum" },
  { op = "allreduce", dtype = "bf16", redop = "prod" },
  { op = "allreduce", dtype = "i8", redop = "avg" },
  { op = "broadcast", dtype = "f64", root = n - 1 },
  { op = "reduce", dtype = "f16", redop = "max", root = n // 2 },
  { op = "reduce", dtype = "u8", redop = "min" },
  { op = "allgather", dtype = "i32" },
  { op = "reducescatter", dtype = "f32", redop = "avg" },
  { op = "reducescatter", dtype = "i8", redop = "sum" },
  { op = "alltoall", dtype = "u8" },
}
if n > 1 then cases[#cases + 1] = { op = "sendrecv", dtype = "f16" } end

for _, case in ipairs(cases) do
  for _, in_place in ipairs { false, true } do
    local opts = { min = 8, max = 64 << 10, factor = 4, iters = 3, warmup = 1, check = true,
                   inplace = in_place, quiet = true }
    for k, v in pairs(case) do opts[k] = v end
    local rows = bench.collective(opts)
    local what = string.format("%s %s %s in_place=%s", case.op, case.dtype, case.redop or "", in_place)
    H.eq(#rows, expected_rows(case.op, opts.min, opts.max, opts.factor, DSIZE[case.dtype]), what .. " rows")
    for _, r in ipairs(rows) do
      H.eq(r.wrong, 0, what .. " #wrong at " .. r.size)
      H.eq(r.type, case.dtype, what .. " type")
      H.truthy(r.time_us > 0 and r.algbw > 0, what .. " time and algbw")
      H.truthy(r.issue_us > 0, what .. " issue time")
      H.truthy(r.size >= opts.min and r.size <= opts.max, what .. " size in range")
    end
  end
end

-- checked=true times the loop with .check on: every call is checked
do
  local before = gcsh.check_counts()
  local rows = bench.collective { op = "allreduce", min = 8, max = 8, iters = 7, warmup = 2,
                                  check = false, checked = true, quiet = true }
  local after = gcsh.check_counts()
  local made = after.board + after.coordinator - before.board - before.coordinator
  H.truthy(made >= 9, "checked=true checks the timed calls (" .. made .. " checks)")
  H.eq(#rows, 1, "one row")
  before = gcsh.check_counts()
  bench.collective { op = "allreduce", min = 8, max = 8, iters = 7, warmup = 2, check = false, quiet = true }
  after = gcsh.check_counts()
  H.truthy(after.board + after.coordinator - before.board - before.coordinator < 9,
           "checked=false leaves the timed calls unchecked")
end

-- nccl-tests output as the reference: parsed rows and ratios
do
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write([[
# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    10.50    0.00    0.00      0    10.20    0.00    0.00      0
          16             4     float     sum      -1    11.00    0.00    0.00      0    10.40    0.00    0.00      0
# Out of bounds values : 0 OK
]])
  f:close()
  local ref = bench.nccl_tests(path)
  os.remove(path)
  H.eq(#ref, 2, "two data rows")
  H.eq(ref[2].size, 16, "size")
  H.eq(ref[2].time_us, 11.0, "out-of-place time")
  H.eq(ref[1].ip_time_us, 10.2, "in-place time")
  local rows = { { size = 8, time_us = 21.0, busbw = 0, issue_us = 3 }, { size = 32, time_us = 1 } }
  local cmp, worst = bench.compare(rows, ref, { quiet = true })
  H.eq(#cmp, 1, "only sizes in both")
  H.eq(cmp[1].ratio, 2.0, "ratio against out-of-place")
  H.eq(worst, 2.0, "worst ratio")
  H.eq(bench.compare(rows, ref, { quiet = true, inplace = true })[1].ref_us, 10.2, "in-place reference")
  H.raises(function() bench.nccl_tests("/nonexistent/file") end, "bench.nccl_tests:", "missing file")
end

-- nccl-tests' size, count and busbw definitions
local function one(op, extra)
  local opts = { op = op, min = 1024, max = 1024, iters = 1, warmup = 0, quiet = true }
  for k, v in pairs(extra or {}) do opts[k] = v end
  return bench.collective(opts)[1]
end
local ar = one("allreduce")
H.eq(ar.count, 256, "allreduce count = size / 4")
H.near(ar.busbw, ar.algbw * 2 * (n - 1) / n, 1e-9, "allreduce busbw factor")
local ag = one("allgather")
H.eq(ag.count, 256 // n, "allgather count is per rank")
H.eq(ag.size, (256 // n) * n * 4, "allgather size is the whole output")
H.near(ag.busbw, ag.algbw * (n - 1) / n, 1e-9, "allgather busbw factor")
local rs = one("reducescatter")
H.eq(rs.size, (256 // n) * n * 4, "reducescatter size is the whole input")
H.eq(rs.redop, "sum", "reducescatter redop column")
local bc = one("broadcast", { root = n - 1 })
H.near(bc.busbw, bc.algbw, 1e-9, "broadcast busbw = algbw")
H.eq(bc.root, n - 1, "broadcast root column")
H.eq(bc.redop, "none", "broadcast has no redop")
H.eq(ag.root, -1, "allgather has no root")
H.near(ar.algbw, ar.size / 1e9 / (ar.time_us / 1e6), 1e-6, "algbw = size / time")

-- the rows are the same on every rank (time and #wrong are combined over ranks)
local t = tensor.from({ ar.time_us }, "f64")
c:allreduce(t, "max")
local mine = tensor.from({ ar.time_us }, "f64")
H.eq(t[0], mine[0], "row time agrees across ranks")

-- printed output: rank 0 only; a header and one line per row
if me == 0 then
  local lines, real_print = {}, print
  print = function(line) lines[#lines + 1] = line end
  local ok, rows = pcall(bench.collective, { op = "allreduce", min = 64, max = 256, iters = 1, warmup = 0 })
  print = real_print
  H.truthy(ok, tostring(rows))
  H.eq(#lines, 2 + #rows, "header lines + rows")
  H.truthy(lines[1]:find("busbw", 1, true) and lines[1]:find("#wrong", 1, true), "header columns")
else
  bench.collective { op = "allreduce", min = 64, max = 256, iters = 1, warmup = 0 }
end

-- csv= and json=: the rows, the same fields, written by rank 0
do
  local csv, json = os.tmpname(), os.tmpname()
  local rows = bench.collective { op = "reduce", min = 64, max = 1024, factor = 4, iters = 1, warmup = 0,
                                  root = n - 1, quiet = true, csv = csv, json = json }
  if me == 0 then
    local f = assert(io.open(csv))
    H.eq(f:read("l"), "size,count,type,redop,root,time_us,algbw,busbw,wrong,issue_us,gpu_shared", "collective csv header")
    local first = f:read("l")
    H.eq(first:match("^(%d+,%d+,f32,sum," .. (n - 1) .. "),"), string.format("%d,%d,f32,sum,%d", rows[1].size, rows[1].count, n - 1), "collective csv row")
    local lines = 1
    for _ in f:lines() do lines = lines + 1 end
    f:close()
    H.eq(lines, #rows, "one csv line per row")
    f = assert(io.open(json))
    local doc = require("dkjson").decode(f:read("a"))
    f:close()
    H.eq(doc.bench, "collective reduce", "json: bench")
    H.eq(#doc.rows, #rows, "json: one object per row")
    for i, r in ipairs(rows) do
      for _, k in ipairs { "size", "count", "type", "redop", "root", "time_us", "algbw", "busbw", "wrong", "issue_us" } do
        if math.type(r[k]) == "float" then H.near(doc.rows[i][k], r[k], 1e-9, "json row " .. i .. " " .. k)
        else H.eq(doc.rows[i][k], r[k], "json row " .. i .. " " .. k) end
      end
    end
  end
  c:barrier()
  os.remove(csv)
  os.remove(json)
end
H.raises(function() bench.collective { op = "allreduce", min = 8, max = 8, csv = "/nonexistent/c.csv" } end,
         "bench.collective: csv=: cannot write /nonexistent/c.csv: No such file or directory")

-- option errors name the option and the valid values
H.raises(function() bench.collective { op = "allscatter" } end, "unknown op 'allscatter' (valid: allgather allreduce alltoall broadcast reduce reducescatter sendrecv)")
H.raises(function() bench.collective { op = "allreduce", itres = 3 } end, "unknown option 'itres'")
H.raises(function() bench.collective { op = "reduce", root = n } end, string.format("root %d out of range (valid 0..%d)", n, n - 1))
H.raises(function() bench.collective { op = "allreduce", factor = 1 } end, "factor must be > 1")
if n == 1 then
  H.raises(function() bench.collective { op = "sendrecv" } end, "sendrecv needs at least 2 ranks")
end

if me == 0 then print(string.format("comm_bench: ok on %d ranks", n)) end
