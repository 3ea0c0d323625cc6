-- gcsh.bench: nccl-tests in Lua.
--
--   local bench = require "gcsh.bench"
--   rows = bench.collective{op="allreduce", min=8, max=32<<20, factor=2, dtype="f32",
--                           redop="sum", root=0, iters=20, warmup=5, check=true,
--                           comm=comm.world(), inplace=false, average="avg", quiet=false,
--                           checked=false, graph=false, csv=nil, json=nil}
--
-- Prints nccl-tests' columns on the communicator's rank 0 (other ranks print
-- nothing) and returns the rows on every rank:
--   {size=, count=, type=, redop=, root=, time_us=, algbw=, busbw=, wrong=, issue_us=}
-- issue: the host's microseconds per call to issue them (the slowest rank's),
-- which tells a host-bound size (issue close to time) from a device-bound one.
-- The timed calls run back to back, one timer around them, as nccl-tests
-- times: with .check off (checked=false, the default) or on (checked=true,
-- what a user's own loop at the prompt pays).
-- graph=N (true: 100) times replays as nccl-tests -G N does: the `iters`
-- calls captured into one graph (gcsh.graph), the graph replayed once
-- untimed, then N times under one timer; time = that time / (iters * N),
-- issue = the host's time to issue the replays / (iters * N): what a graph
-- saves is the difference from the same run without graph.  Rows then carry
-- graph = N.
-- csv="file.csv" and json="file.json" write the same rows for other tools
-- (rank 0; JSON: {bench=, ranks=, backend=, rows=[...]}, through the dkjson
-- module).  A terminal shows a progress line while the sizes run
-- (gcsh.progress).
--
-- As in nccl-tests (src/*.cu and doc/PERFORMANCE.md):
--   * each size S (bytes) gives count = S / sizeof(dtype); each collective
--     turns it into send, receive and per-call counts (its `counts`); the size
--     column is the larger of the send and receive buffers in bytes, the count
--     column the count handed to the collective (per rank for allgather,
--     reducescatter and alltoall);
--   * algbw = size / time, busbw = algbw * the collective's factor:
--     allreduce 2(n-1)/n; allgather, reducescatter, alltoall (n-1)/n;
--     broadcast, reduce, sendrecv 1;
--   * time = each rank's mean over `iters` timed calls after `warmup` calls,
--     then combined over ranks by `average`: "avg" (nccl-tests' default -a 1),
--     "max", "min" or "rank0";
--   * sizes whose per-call count is 0 are skipped (nothing to move).
--
-- check=true: before timing, inputs get known per-rank values, the
-- collective runs once, and every output element is compared with a
-- reference computed here in Lua; #wrong is summed over ranks.  The values are
-- block-constant (one per source rank, or per rank pair for alltoall) and
-- small, so every dtype holds them exactly; integer results wrap like the
-- dtype, and avg divides as the backends do (the mean for floats, truncation
-- toward zero for integers).
--
-- Timing uses gcsh.timer: CUDA events on the cuda backend, the wall clock on host.
local bench = {}

-- The products, below the driver (nccl-tests' common.cu beside its
-- per-collective files): the collectives and their checks, the printed
-- tables, csv= and json=, the chart, the targets, the comparison with
-- nccl-tests.
local colls = require("gcsh.bench_colls")
local T = require("gcsh.bench_table")
local files_for = require("gcsh.bench_files")
local chart = require("gcsh.bench_chart")
local targets = require("gcsh.bench_targets")
local reference = require("gcsh.bench_compare")

local COLLS, COMBINE, count_wrong = colls.colls, colls.redops, colls.count_wrong
local print_header, print_row, columns = T.print_header, T.print_row, T.columns
local SIZE_COLUMNS, RATE_COLUMNS, ISSUE_COLUMN = T.SIZE_COLUMNS, T.RATE_COLUMNS, T.ISSUE_COLUMN
local open_outputs, write_outputs = files_for.open_outputs, files_for.write_outputs

bench.collectives = COLLS
bench.chart = chart.chart
bench.allreduce_targets = targets.allreduce_targets
bench.nccl_tests = reference.nccl_tests
bench.compare = reference.compare

-- ---- the driver ----------------------------------------------------------

local DEFAULTS = {
  op = "allreduce", min = 8, max = 32 << 20, factor = 2, dtype = "f32", redop = "sum",
  root = 0, iters = 20, warmup = 5, check = true, inplace = false, average = "avg",
  quiet = false, comm = false, -- comm: comm.world() when not given
  checked = false, csv = false, json = false, graph = false,
}

-- element bytes of each dtype (C's one list, src/core/dtype.c)
local DTYPE_SIZE = {}
for name, d in pairs(require("gcsh.dtypes")) do DTYPE_SIZE[name] = d.size end

-- graph= as given: false (no graph), true (100 replays, as the issue's
-- nccl-tests -G 100) or a count of replays.
local function graph_launches(v, need)
  if v == true then return 100 end
  need(v == false or (math.type(v) == "integer" and v >= 1 and v <= 1000000),
       "graph must be true, false or a count of replays 1..1e6, got %s", tostring(v))
  return v
end
local MAX_ITERS = 100000 -- the most calls a size's loop makes
local AVERAGES = { avg = "avg", max = "max", min = "min", rank0 = true }

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  return table.concat(keys, " ")
end

local function options(opts)
  gcsh.check_options(opts, "bench.collective", sorted_keys(DEFAULTS), 3)
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  for k, v in pairs(DEFAULTS) do
    if o[k] == nil then o[k] = v end
  end
  if not o.comm then o.comm = comm.world() end
  local function need(ok, fmt, ...)
    if not ok then error("bench.collective: " .. string.format(fmt, ...), 4) end
  end
  need(COLLS[o.op], "unknown op '%s' (valid: %s)", tostring(o.op), sorted_keys(COLLS))
  need(DTYPE_SIZE[o.dtype], "unknown dtype '%s' (valid: %s)", tostring(o.dtype), sorted_keys(DTYPE_SIZE))
  need(COMBINE[o.redop], "unknown redop '%s' (valid: %s)", tostring(o.redop), sorted_keys(COMBINE))
  need(AVERAGES[o.average], "unknown average '%s' (valid: %s)", tostring(o.average), sorted_keys(AVERAGES))
  need(math.type(o.min) == "integer" and o.min >= 1, "min must be a positive integer (bytes)")
  need(math.type(o.max) == "integer" and o.max >= o.min, "max must be an integer >= min (%d)", o.min)
  need(type(o.factor) == "number" and o.factor > 1, "factor must be > 1")
  need(math.type(o.iters) == "integer" and o.iters >= 1, "iters must be an integer >= 1")
  need(math.type(o.warmup) == "integer" and o.warmup >= 0, "warmup must be an integer >= 0")
  local n, spec = o.comm.size, COLLS[o.op]
  need(n >= (spec.min_ranks or 1), "%s needs at least %d ranks (this comm has %d)", o.op, spec.min_ranks or 1, n)
  if spec.rooted then
    need(math.type(o.root) == "integer" and o.root >= 0 and o.root < n, "root %s out of range (valid 0..%d)", tostring(o.root), n - 1)
  end
  need(not o.csv or type(o.csv) == "string", "csv must be a file name")
  need(not o.json or type(o.json) == "string", "json must be a file name")
  o.graph = graph_launches(o.graph, need)
  return o
end

-- The sizes a run visits: min, then times factor (always moving on) up to max.
local function sizes_of(o)
  local list, size = {}, o.min
  while size <= o.max do
    list[#list + 1] = size
    size = math.max(size + 1, math.floor(size * o.factor))
  end
  return list
end

-- One number per rank combined over the communicator.
local function over_ranks(c, v, dtype, how)
  local t = tensor.from({ v }, dtype)
  if how == "rank0" then c:broadcast(t, 0) else c:allreduce(t, how) end
  return t[0]
end

local COLLECTIVE_COLUMNS = columns(SIZE_COLUMNS,
  { { "redop", "", 6, "s", "redop" }, { "root", "", 6, "d", "root" } }, RATE_COLUMNS, ISSUE_COLUMN)

-- Runs fn with .check off on this rank (every rank runs bench alike): timed
-- loops must not pay for a round trip to rank 0 per call.  bench issues the
-- same calls on every rank by construction, after a checked barrier.
local function unchecked(fn, ...)
  local was = gcsh.check(false)
  local res = table.pack(pcall(fn, ...))
  gcsh.check(was)
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

-- iters calls of run: seconds by the timer (the device's time on cuda) and
-- seconds the host took to issue them.
local function timed_loop(run, iters)
  local tm, t0 = gcsh.timer(), gcsh.wtime()
  for _ = 1, iters do run() end
  local issued = gcsh.wtime() - t0
  return tm:stop(), issued
end

-- nccl-tests -G: iters calls of run captured into one graph, replayed once
-- untimed (the first launch uploads it), then `launches` times under one
-- timer.  Per call: seconds, and seconds the host took to issue the replays.
local function graph_loop(c, run, iters, launches)
  local g <close> = gcsh.graph(function() for _ = 1, iters do run() end end)
  g:replay()
  c:barrier()
  local tm, t0 = gcsh.timer(), gcsh.wtime()
  g:replay(launches)
  local issued = gcsh.wtime() - t0
  local calls = iters * launches
  return tm:stop() / calls, issued / calls
end

-- fn(...) with .check as asked: checked (what a loop at the prompt pays) or
-- not (the collective alone).
local function with_checks(checked, fn, ...)
  if checked then return fn(...) end
  return unchecked(fn, ...)
end

-- Per call: seconds and seconds to issue.
local function time_calls(spec, a, o)
  a.comm:barrier() -- checked: every rank is here
  return with_checks(o.checked, function()
    for _ = 1, o.warmup do spec.run(a) end
    a.comm:barrier()
    if o.graph then return graph_loop(a.comm, function() spec.run(a) end, o.iters, o.graph) end
    local sec, issued = timed_loop(function() spec.run(a) end, o.iters)
    return sec / o.iters, issued / o.iters
  end)
end

local function bench_size(spec, o, size)
  local c, n = o.comm, o.comm.size
  local sendcount, recvcount, param = spec.counts(size // DTYPE_SIZE[o.dtype], n)
  if param == 0 then return nil end
  local a = { comm = c, n = n, rank = c.rank, dtype = o.dtype, redop = o.redop, root = o.root,
              param = param, inplace = o.inplace }
  a.send, a.recv = spec.buffers(a)
  local wrong = 0
  if o.check then
    spec.init(a)
    spec.run(a)
    wrong = spec.check(a)
  end
  local per_call, issue = time_calls(spec, a, o)
  local sec = over_ranks(c, per_call, "f64", o.average)
  wrong = over_ranks(c, wrong, "i64", "sum")
  local bytes = math.max(sendcount, recvcount) * DTYPE_SIZE[o.dtype]
  local algbw = bytes / 1e9 / sec
  return {
    size = bytes, count = param, type = o.dtype,
    redop = spec.reduces and o.redop or "none", root = spec.rooted and o.root or -1,
    time_us = sec * 1e6, algbw = algbw, busbw = algbw * spec.busbw(n), wrong = wrong,
    issue_us = over_ranks(c, issue, "f64", "max") * 1e6, graph = o.graph or nil,
  }
end

local COLLECTIVE_FIELDS = {
  "size", "count", "type", "redop", "root", "time_us", "algbw", "busbw", "wrong", "issue_us",
}

function bench.collective(opts)
  local o = options(opts)
  local files = open_outputs(o, "bench.collective")
  local spec, speaks = COLLS[o.op], o.comm.rank == 0 and not o.quiet
  if speaks then print_header(COLLECTIVE_COLUMNS) end
  local rows, sizes = {}, sizes_of(o)
  for i, size in ipairs(sizes) do
    gcsh.progress(i - 1, #sizes, "bench.collective")
    local row = bench_size(spec, o, size)
    if row then
      rows[#rows + 1] = row
      if speaks then print_row(COLLECTIVE_COLUMNS, row) end
    end
  end
  gcsh.progress()
  write_outputs(files, COLLECTIVE_FIELDS, rows, "collective " .. o.op, o.comm.size)
  return rows
end

-- ---- the cost of issuing from Lua -------------------------------------------

-- bench.overhead{sizes={8, 1<<20, 1<<30}, dtype="f32", iters=50, warmup=5, reps=3,
--                comm=comm.world(), quiet=false}
-- The same in-place all-reduce loop issued from Lua (c:allreduce per
-- iteration), with .check off and on, and from C (c:loop, no Lua between
-- calls, checked once), interleaved `reps` times in one run; the best of
-- each is kept.  Prints, on rank 0, per size: time per call of each, the
-- Lua loop's extra microseconds per call over the C loop, what the checks
-- add per call, and busbw of the C loop; returns the rows on every rank
-- ({size=, lua_us=, checked_us=, c_us=, ratio=, extra_us=, check_us=, busbw=}).
local OVERHEAD_COLUMNS = {
  { "size", "(B)", 12, "d", "size" }, { "lua", "(us)", 9, ".2f", "lua_us" },
  { "checked", "(us)", 9, ".2f", "checked_us" }, { "c", "(us)", 9, ".2f", "c_us" },
  { "lua/c", "", 7, ".3f", "ratio" }, { "extra", "(us)", 8, ".3f", "extra_us" },
  { "check", "(us)", 8, ".3f", "check_us" }, { "busbw", "(GB/s)", 8, ".2f", "busbw" },
}

function bench.overhead(opts)
  gcsh.check_options(opts, "bench.overhead", "comm dtype iters quiet reps sizes warmup")
  opts = opts or {}
  local c = opts.comm or comm.world()
  local dtype, iters, reps = opts.dtype or "f32", opts.iters or 50, opts.reps or 3
  local sizes = opts.sizes or { 8, 1 << 20, 1 << 30 }
  local speaks, rows = c.rank == 0 and not opts.quiet, {}
  if speaks then print_header(OVERHEAD_COLUMNS) end
  local function lua_loop(t, checked)
    c:barrier()
    return over_ranks(c, with_checks(checked, function()
      local tm = gcsh.timer()
      for _ = 1, iters do c:allreduce(t) end
      return tm:stop() / iters
    end), "f64", "max")
  end
  for _, size in ipairs(sizes) do
    local t = tensor.new(math.max(1, size // DTYPE_SIZE[dtype]), dtype):fill(1)
    for _ = 1, opts.warmup or 5 do c:allreduce(t) end
    local best_lua, best_chk, best_c = math.huge, math.huge, math.huge
    for _ = 1, reps do
      best_lua = math.min(best_lua, lua_loop(t, false))
      best_chk = math.min(best_chk, lua_loop(t, true))
      c:barrier()
      best_c = math.min(best_c, over_ranks(c, c:loop("allreduce", iters, t) / iters, "f64", "max"))
    end
    local bytes = #t * DTYPE_SIZE[dtype]
    local row = { size = bytes, lua_us = best_lua * 1e6, checked_us = best_chk * 1e6,
                  c_us = best_c * 1e6, ratio = best_lua / best_c,
                  extra_us = (best_lua - best_c) * 1e6, check_us = (best_chk - best_lua) * 1e6,
                  busbw = bytes / 1e9 / best_c * 2 * (c.size - 1) / c.size }
    rows[#rows + 1] = row
    if speaks then print_row(OVERHEAD_COLUMNS, row) end
    t:free()
  end
  return rows
end

-- ---- any function, timed as a bench row is --------------------------------

-- bench.time(fn [, {iters=20, warmup=3, min_time=0.002, comm=comm.world()}])
--     -> {mine=, avg=, max=, calls=}
-- fn() timed as bench.allreduce times one size: .check off, `warmup`
-- calls, a barrier, then `iters` calls under one timer, or as many as fill
-- min_time seconds when those take less (decided on the slowest rank, so
-- every rank makes the same calls: fn may be collective).  mine: this
-- rank's mean per call (us); avg and max: every rank's mean combined;
-- calls: how many were timed.  Every rank of comm calls it.
local TIME_DEFAULTS = { iters = 20, warmup = 3, min_time = 0.002, comm = false }

function bench.time(fn, opts)
  gcsh.check_options(opts, "bench.time", sorted_keys(TIME_DEFAULTS), 2)
  local o = {}
  for k, v in pairs(TIME_DEFAULTS) do o[k] = v end
  for k, v in pairs(opts or {}) do o[k] = v end
  local function need(ok, fmt, ...)
    if not ok then error("bench.time: " .. string.format(fmt, ...), 3) end
  end
  need(type(fn) == "function" or (getmetatable(fn) or {}).__call ~= nil,
       "fn must be a function, got %s", type(fn))
  need(math.type(o.iters) == "integer" and o.iters >= 1, "iters must be an integer >= 1")
  need(math.type(o.warmup) == "integer" and o.warmup >= 0, "warmup must be an integer >= 0")
  need(type(o.min_time) == "number" and o.min_time >= 0, "min_time must be a number >= 0 (seconds)")
  local c = o.comm or comm.world()
  c:barrier() -- checked: every rank is here
  local per_call, iters = unchecked(function()
    for _ = 1, o.warmup do fn() end
    c:barrier()
    local iters = o.iters
    local sec = timed_loop(fn, iters)
    local slowest = over_ranks(c, sec, "f64", "max")
    if slowest < o.min_time then
      iters = math.min(MAX_ITERS, math.ceil(iters * o.min_time / math.max(slowest, 1e-9)))
      c:barrier()
      sec = timed_loop(fn, iters)
    end
    return sec / iters, iters
  end)
  return { mine = per_call * 1e6, avg = over_ranks(c, per_call, "f64", "avg") * 1e6,
           max = over_ranks(c, per_call, "f64", "max") * 1e6, calls = iters }
end

-- ---- all-reduce algorithms against the communicator's own ----------------------

-- bench.allreduce{algos={"nccl","nccl_sym","oneshot","twoshot","multicast"},
--                 min=8, max=32<<20, factor=2, dtype="f32", iters=20, warmup=5,
--                 min_time=0.002, check=true, kind=nil, comm=comm.world(), csv=nil,
--                 chart="busbw", average="avg", quiet=false, graph=false}
-- One run, every algorithm at every size, in place, sum:
--   nccl       c:allreduce(t) on a plain tensor (NCCL's own kernels on cuda,
--              the host backend's collectives on host: MPI, or the node's
--              shared memory for small ones);
--   nccl_sym   c:allreduce on a window's slice (on cuda a window of kind
--              nccl is registered NCCL_WIN_COLL_SYMMETRIC: NCCL's symmetric
--              kernels);
--   oneshot, twoshot, ring, ll, multicast, nccl_dev, auto:
--              kernel.allreduce(w, {algo=}) (nccl_dev needs kind="nccl");
--   empty      kernel.empty(): one empty kernel per call, no data moved (the
--              launch floor a kernel algorithm's time is measured against;
--              #wrong is not checked);
--   persistent p:allreduce{n=} on one kernel.persistent(w) started for the
--              run: no launch per call, the resident is rung (sizes up to
--              the window's LL area, as ll; graph= does not apply: a ring
--              is a host write, so its rows time the plain loop).
-- Each size is timed over `iters` calls, or over as many as fill min_time
-- seconds when those take less (small messages: one hiccup in 20 calls of a
-- few microseconds moves the mean by more than the differences measured).
-- graph=N (true: 100) times graph replays as bench.collective's graph=
-- does (min_time then adds replays, not captured calls).
-- Columns as bench.collective's plus the algorithm, labelled by what ran
-- (ar_label: the rows of nccl and nccl_sym say "comm" and "comm_win" on
-- host, where no NCCL runs); timed loops run with .check off unless
-- checked=true, as there.  Rows are returned on every rank ({algo=, label=,
-- size=, count=, type=, redop=, time_us=, algbw=, busbw=, wrong=,
-- issue_us=}: algo as asked for, label what ran).
-- csv= and json= write them (rank 0, as bench.collective's); chart= draws one
-- bar per algorithm per size:
-- "busbw" (one scale for all) or "time" (per size, relative to the slowest).
-- nccl and nccl_sym, and every algorithm kernel.allreduce takes but "comm"
-- (which is nccl_sym by another name)
local AR_ALGOS = { nccl = true, nccl_sym = true, empty = true, persistent = true }
for _, a in ipairs(kernel.algos) do if a ~= "comm" then AR_ALGOS[a] = true end end
local AR_DEFAULTS = {
  algos = false, min = 8, max = 32 << 20, factor = 2, dtype = "f32", iters = 20, warmup = 5,
  min_time = 0.002, check = true, kind = false, comm = false, csv = false, json = false,
  chart = "busbw", average = "avg", quiet = false, checked = false, graph = false,
}

local function ar_options(opts)
  gcsh.check_options(opts, "bench.allreduce", sorted_keys(AR_DEFAULTS), 3)
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  for k, v in pairs(AR_DEFAULTS) do if o[k] == nil then o[k] = v end end
  o.algos = o.algos or { "nccl", "nccl_sym", "oneshot", "twoshot", "multicast" }
  o.comm = o.comm or comm.world()
  local function need(ok, fmt, ...)
    if not ok then error("bench.allreduce: " .. string.format(fmt, ...), 4) end
  end
  for _, a in ipairs(o.algos) do need(AR_ALGOS[a], "unknown algo '%s' (valid: %s)", tostring(a), sorted_keys(AR_ALGOS)) end
  need(DTYPE_SIZE[o.dtype], "unknown dtype '%s'", tostring(o.dtype))
  need(math.type(o.min) == "integer" and o.min >= 1, "min must be a positive integer (bytes)")
  need(math.type(o.max) == "integer" and o.max >= o.min, "max must be an integer >= min")
  need(type(o.factor) == "number" and o.factor > 1, "factor must be > 1")
  need(type(o.min_time) == "number" and o.min_time >= 0, "min_time must be a number >= 0 (seconds)")
  need(o.chart == "busbw" or o.chart == "time" or o.chart == false, "chart must be \"busbw\", \"time\" or false")
  need(AVERAGES[o.average], "unknown average '%s'", tostring(o.average))
  need(not o.csv or type(o.csv) == "string", "csv must be a file name")
  need(not o.json or type(o.json) == "string", "json must be a file name")
  o.graph = graph_launches(o.graph, need)
  return o
end

-- How each algorithm runs one in-place all-reduce of n elements (p: the
-- run's persistent all-reduce, when algo "persistent" is asked for): the
-- call, the buffer it reduces, and for kernel.allreduce's algorithms the
-- call that returns what it ran.
-- nccl and nccl_sym ask for the communicator's library: with --share-gpu
-- c:allreduce would take the kernels (bind/comm_route.c).
local LIBRARY = { algo = "comm" }
local function ar_runner(algo, c, w, plain, n, p)
  if algo == "nccl" then
    local t = plain:view(0, n)
    return function() c:allreduce(t, "sum", nil, LIBRARY) end, t
  elseif algo == "nccl_sym" then
    local t = w:tensor():view(0, n)
    return function() c:allreduce(t, "sum", nil, LIBRARY) end, t
  elseif algo == "empty" then
    return kernel.empty, nil
  elseif algo == "persistent" then
    local o = { n = n }
    return function() p:allreduce(o) end, w:tensor():view(0, n)
  end
  local o = { algo = algo, n = n }
  -- the third: the same call, returning what kernel.allreduce says it ran
  -- (kept out of the timed loop)
  return function() kernel.allreduce(w, o) end, w:tensor():view(0, n),
         function() return select(2, kernel.allreduce(w, o)) end
end


-- graph=: graph_loop, with as many replays as fill min_time (decided on the
-- slowest rank's time, as for plain loops).
local function ar_graph_loop(o, c, run)
  local sec, issued = graph_loop(c, run, o.iters, o.graph)
  local slowest = over_ranks(c, sec * o.iters * o.graph, "f64", "max")
  if slowest < o.min_time then
    local launches = math.min(MAX_ITERS, math.ceil(o.graph * o.min_time / math.max(slowest, 1e-9)))
    sec, issued = graph_loop(c, run, o.iters, launches)
  end
  return sec, issued
end

-- What a row of algo ran, as its label (the table, the chart, csv= and
-- json= show it): the communicator's own all-reduce as c:choose names the
-- route it takes ("nccl" on cuda; "comm" on host, whose collectives are
-- MPI's, or the node's shared memory for small ones; "copy" at one rank on
-- cuda, where no library is called), on a window "nccl_sym" where NCCL has
-- it registered symmetric (cuda, kind nccl), else that name and "_win";
-- multicast's emulation "mcast(emu)" (kernel.allreduce reported
-- "multicast(emulated)": no NVLS ran); any other algorithm its name.
local function ar_label(algo, c, w, n, dtype, reported)
  if algo == "nccl" or algo == "nccl_sym" then
    local lib = c:choose("allreduce", n, dtype, "sum", LIBRARY)
    if algo == "nccl" then return lib end
    return lib == "nccl" and w.kind == "nccl" and "nccl_sym" or lib .. "_win"
  end
  if algo == "multicast" and reported == "multicast(emulated)" then return "mcast(emu)" end
  return algo
end

local function ar_row(o, algo, n, c, w, plain, p)
  local run, buf, reporting = ar_runner(algo, c, w, plain, n, p)
  local graph = o.graph and algo ~= "persistent"
  local k, wrong = c.size, 0
  if buf then buf:fill(c.rank + 1) end
  -- one call before the timed ones: the check's, and kernel.allreduce's
  -- report of what it ran (the label)
  local label = ar_label(algo, c, w, n, o.dtype, (reporting or run)())
  if o.check and buf then
    wrong = count_wrong(buf, k * (k + 1) // 2)
  end
  if buf then buf:fill(1) end
  c:barrier() -- checked: every rank is here
  local per_call, issue = with_checks(o.checked, function()
    for _ = 1, o.warmup do run() end
    c:barrier()
    if graph then return ar_graph_loop(o, c, run) end
    local iters = o.iters
    local sec, issued = timed_loop(run, iters)
    -- A loop of a few microseconds is at the mercy of one hiccup: time
    -- enough calls to fill min_time.  Decided on the slowest rank's time,
    -- which every rank knows, so every rank runs the same calls (a rank
    -- deciding alone would leave the others in a collective it skips).
    local slowest = over_ranks(c, sec, "f64", "max")
    if slowest < o.min_time then
      iters = math.min(MAX_ITERS, math.ceil(iters * o.min_time / math.max(slowest, 1e-9)))
      c:barrier()
      sec, issued = timed_loop(run, iters)
    end
    return sec / iters, issued / iters
  end)
  local sec = over_ranks(c, per_call, "f64", o.average)
  local bytes = n * DTYPE_SIZE[o.dtype]
  local algbw = bytes / 1e9 / sec
  return { algo = algo, label = label, size = bytes, count = n, type = o.dtype, redop = "sum", time_us = sec * 1e6,
           algbw = algbw, busbw = algbw * 2 * (k - 1) / k, wrong = over_ranks(c, wrong, "i64", "sum"),
           issue_us = over_ranks(c, issue, "f64", "max") * 1e6, graph = graph or nil }
end

-- Whether a row of algo at size bytes runs: ll and persistent take regions
-- up to what the window's LL area holds (p.max_bytes).
local function ar_takes(algo, size, p)
  if algo == "ll" then return size <= kernel.ll_max_bytes end
  if algo == "ll128" then return size <= kernel.ll128_max_bytes end
  if algo == "persistent" then return size <= p.max_bytes end
  return true
end

-- "nccl_dev" runs only where NCCL's device API does (cuda, a window of
-- kind nccl): asked once before the first row, so a run that cannot take
-- it stops at once with kernel.allreduce's reason, on every rank alike (the
-- refusal comes before any collective; where it runs, the call is one
-- all-reduce of one element, which every rank makes).
local function check_window_algos(o, w)
  for _, algo in ipairs(o.algos) do
    if algo == "nccl_dev" then
      local ok, err = pcall(kernel.allreduce, w, { algo = "nccl_dev", n = 1 })
      if not ok then
        w:free()
        error("bench.allreduce: " .. tostring(err):gsub("^allreduce: ", ""), 3)
      end
    end
  end
end

local ALLREDUCE_COLUMNS = columns(SIZE_COLUMNS, { { "algo", "", 10, "s", "label" } }, RATE_COLUMNS,
  { { "issue", "(us)", 9, ".2f", "issue_us" } })

local ALLREDUCE_FIELDS = {
  "algo", "size", "count", "type", "redop", "time_us", "algbw", "busbw", "wrong", "issue_us",
  "label",
}

function bench.allreduce(opts)
  local o = ar_options(opts)
  local files = open_outputs(o, "bench.allreduce")
  local c, speaks = o.comm, o.comm.rank == 0 and not o.quiet
  local maxn = math.max(1, o.max // DTYPE_SIZE[o.dtype])
  local w = c:window(maxn, o.dtype, o.kind and { kind = o.kind } or nil)
  check_window_algos(o, w)
  local plain = tensor.new(maxn, o.dtype)
  local p
  for _, a in ipairs(o.algos) do if a == "persistent" then p = kernel.persistent(w) end end
  if speaks then print_header(ALLREDUCE_COLUMNS) end
  local rows, sizes, step = {}, sizes_of(o), 0
  local steps = #sizes * #o.algos
  for _, size in ipairs(sizes) do
    local n = size // DTYPE_SIZE[o.dtype]
    for _, algo in ipairs(o.algos) do
      gcsh.progress(step, steps, "bench.allreduce")
      step = step + 1
      if n > 0 and ar_takes(algo, size, p) then
        local row = ar_row(o, algo, n, c, w, plain, p)
        rows[#rows + 1] = row
        if speaks then print_row(ALLREDUCE_COLUMNS, row) end
      end
    end
  end
  gcsh.progress()
  if p then p:stop() end
  c:barrier()
  w:free()
  plain:free()
  if speaks and o.chart and #rows > 0 then bench.chart(rows, o.chart) end
  write_outputs(files, ALLREDUCE_FIELDS, rows, "allreduce", c.size)
  return rows
end

return bench
