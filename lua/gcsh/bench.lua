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

-- ---- per-rank values and their reference -------------------------------

local WRAP_BITS = { i64 = 64, i32 = 32, u32 = 32, u8 = 8, i8 = 8 }
local SIGNED = { i64 = true, i32 = true, i8 = true }
local FLOAT = { f64 = true, f32 = true, f16 = true, bf16 = true }

-- An integer result as the dtype holds it (C wraps integer arithmetic).
local function wrap(dtype, v)
  local bits = WRAP_BITS[dtype]
  if not bits or bits == 64 then return v end
  local m = 1 << bits
  v = v % m
  if SIGNED[dtype] and v >= m // 2 then v = v - m end
  return v
end

-- What rank r contributes: prod gets 1s and 2s so products stay powers of two
-- (exact in f16 and bf16); the other ops get 1..16.
local function rank_value(redop, r)
  if redop == "prod" then return 1 + r % 2 end
  return 1 + r % 16
end

local COMBINE = {
  sum = function(a, b) return a + b end,
  avg = function(a, b) return a + b end,
  prod = function(a, b) return a * b end,
  min = math.min,
  max = math.max,
}

local function reduced_value(dtype, redop, nranks)
  local acc = rank_value(redop, 0)
  for r = 1, nranks - 1 do
    acc = wrap(dtype, COMBINE[redop](acc, rank_value(redop, r)))
  end
  if redop == "avg" then
    if FLOAT[dtype] then
      acc = acc / nranks
    else
      local q = acc // nranks
      if q < 0 and q * nranks ~= acc then q = q + 1 end -- truncate toward zero
      acc = q
    end
  end
  return acc
end

-- The value rank `from` sends to rank `to` in alltoall: distinct per pair
-- (up to 100 pairs), and within every dtype's range.
local function pair_value(nranks, from, to)
  return 1 + (from * nranks + to) % 100
end

-- Elements of t that differ from v (fast path: one :equal against a filled copy).
local function count_wrong(t, v)
  local want = tensor.new(#t, t.dtype):fill(v)
  if t:equal(want) then return 0 end
  local got, w, wrong = t:totable(), want:totable(), 0
  for i = 1, #got do
    if got[i] ~= w[i] then wrong = wrong + 1 end
  end
  return wrong
end

-- ---- one table per collective --------------------------------------------
-- counts(count, n) -> sendcount, recvcount, paramcount (nccl-tests' GetCollByteCount)
-- buffers(a)       -> send, recv for a.param elements per call, honouring a.inplace
-- init(a)          fills a.send with this rank's values
-- run(a)           one call
-- check(a)         wrong elements on this rank after one call from init
-- busbw(n)         bus bandwidth factor

local function same_counts(count) return count, count, count end
local function per_rank_counts(count, n) local p = count // n; return p, p * n, p end

local function separate_or_same(a, sendcount, recvcount)
  local send = tensor.new(sendcount, a.dtype)
  if a.inplace then return send, send end
  return send, tensor.new(recvcount, a.dtype)
end

local function fill_reduction_input(a) a.send:fill(rank_value(a.redop, a.rank)) end

local COLLS = {}

COLLS.allreduce = {
  reduces = true,
  counts = same_counts,
  busbw = function(n) return 2 * (n - 1) / n end,
  buffers = function(a) return separate_or_same(a, a.param, a.param) end,
  init = fill_reduction_input,
  run = function(a) a.comm:allreduce(a.send, a.redop, a.recv) end,
  check = function(a) return count_wrong(a.recv, reduced_value(a.dtype, a.redop, a.n)) end,
}

COLLS.broadcast = {
  rooted = true,
  counts = same_counts,
  busbw = function() return 1 end,
  buffers = function(a) local t = tensor.new(a.param, a.dtype); return t, t end, -- always in place
  init = function(a) a.send:fill(rank_value("sum", a.rank)) end,
  run = function(a) a.comm:broadcast(a.send, a.root) end,
  check = function(a) return count_wrong(a.send, rank_value("sum", a.root)) end,
}

COLLS.reduce = {
  reduces = true,
  rooted = true,
  counts = same_counts,
  busbw = function() return 1 end,
  buffers = function(a) return separate_or_same(a, a.param, a.param) end,
  init = fill_reduction_input,
  run = function(a) a.comm:reduce(a.send, a.root, a.redop, a.recv) end,
  check = function(a)
    if a.rank ~= a.root then return 0 end
    return count_wrong(a.recv, reduced_value(a.dtype, a.redop, a.n))
  end,
}

COLLS.allgather = {
  counts = per_rank_counts,
  busbw = function(n) return (n - 1) / n end,
  buffers = function(a)
    local recv = tensor.new(a.param * a.n, a.dtype)
    if a.inplace then return recv:view(a.rank * a.param, a.param), recv end
    return tensor.new(a.param, a.dtype), recv
  end,
  init = function(a) a.send:fill(rank_value("sum", a.rank)) end,
  run = function(a) a.comm:allgather(a.send, a.recv) end,
  check = function(a)
    local wrong = 0
    for r = 0, a.n - 1 do
      wrong = wrong + count_wrong(a.recv:view(r * a.param, a.param), rank_value("sum", r))
    end
    return wrong
  end,
}

COLLS.reducescatter = {
  reduces = true,
  counts = function(count, n) local p = count // n; return p * n, p, p end,
  busbw = function(n) return (n - 1) / n end,
  buffers = function(a)
    local send = tensor.new(a.param * a.n, a.dtype)
    if a.inplace then return send, send:view(a.rank * a.param, a.param) end
    return send, tensor.new(a.param, a.dtype)
  end,
  init = fill_reduction_input,
  run = function(a) a.comm:reducescatter(a.send, a.recv, a.redop) end,
  check = function(a) return count_wrong(a.recv, reduced_value(a.dtype, a.redop, a.n)) end,
}

COLLS.alltoall = {
  counts = function(count, n) local p = count // n; return p * n, p * n, p end,
  busbw = function(n) return (n - 1) / n end,
  buffers = function(a) return separate_or_same(a, a.param * a.n, a.param * a.n) end,
  init = function(a)
    for to = 0, a.n - 1 do
      a.send:view(to * a.param, a.param):fill(pair_value(a.n, a.rank, to))
    end
  end,
  run = function(a) a.comm:alltoall(a.send, a.recv) end,
  check = function(a)
    local wrong = 0
    for from = 0, a.n - 1 do
      wrong = wrong + count_wrong(a.recv:view(from * a.param, a.param), pair_value(a.n, from, a.rank))
    end
    return wrong
  end,
}

-- A ring: send to rank+1, receive from rank-1.  Even ranks send first and odd
-- ranks receive first, so blocking sends cannot all wait on each other.
COLLS.sendrecv = {
  min_ranks = 2,
  counts = same_counts,
  busbw = function() return 1 end,
  buffers = function(a) return tensor.new(a.param, a.dtype), tensor.new(a.param, a.dtype) end,
  init = function(a) a.send:fill(rank_value("sum", a.rank)) end,
  run = function(a)
    local c, nxt, prv = a.comm, (a.rank + 1) % a.n, (a.rank - 1) % a.n
    if a.rank % 2 == 0 then
      c:send(a.send, nxt); c:recv(a.recv, prv)
    else
      c:recv(a.recv, prv); c:send(a.send, nxt)
    end
  end,
  check = function(a) return count_wrong(a.recv, rank_value("sum", (a.rank - 1) % a.n)) end,
}

bench.collectives = COLLS

-- ---- the driver ----------------------------------------------------------

local DEFAULTS = {
  op = "allreduce", min = 8, max = 32 << 20, factor = 2, dtype = "f32", redop = "sum",
  root = 0, iters = 20, warmup = 5, check = true, inplace = false, average = "avg",
  quiet = false, comm = false, -- comm: comm.world() when not given
  checked = false, csv = false, json = false, graph = false,
}

local DTYPE_SIZE = { f64 = 8, f32 = 4, f16 = 2, bf16 = 2, i64 = 8, i32 = 4, u32 = 4, u8 = 1, i8 = 1 }

-- graph= as given: false (no graph), true (100 replays, as the issue's
-- nccl-tests -G 100) or a count of replays.
local function graph_launches(v, need)
  if v == true then return 100 end
  need(v == false or (math.type(v) == "integer" and v >= 1 and v <= 1000000),
       "graph must be true, false or a count of replays 1..1e6, got %s", tostring(v))
  return v
end
local AVERAGES = { avg = "avg", max = "max", min = "min", rank0 = true }

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  return table.concat(keys, " ")
end

local function options(opts)
  local o = {}
  for k, v in pairs(opts or {}) do
    if DEFAULTS[k] == nil then
      error(string.format("bench.collective: unknown option '%s' (valid: %s)", k, sorted_keys(DEFAULTS)), 3)
    end
    o[k] = v
  end
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

-- Ranks that share a GPU (--share-gpu) make slower figures than a GPU per
-- rank: every table, CSV row and JSON file says so.  nil when no GPU is
-- shared; else {gpu = "cuda:0 with ranks 0-3", mps = "yes"|"no"}.
local shared_cache
local function sharing()
  if shared_cache == nil then
    local info = gcsh.info()
    local gpu = info.gpu_shared
    shared_cache = false
    if gpu and gpu ~= "no" then
      shared_cache = { gpu = gpu, mps = (info.mps or ""):match("serves this rank: (%a+)") or "?" }
    end
  end
  return shared_cache or nil
end

-- ---- results for other tools: csv= and json= -------------------------------

local function json_module()
  local ok, json = pcall(require, "dkjson")
  return ok and json or nil
end

-- Checks o.csv and o.json on the communicator's rank 0 before anything is
-- timed, so that a refused path or a missing JSON module fails at once, and
-- on every rank alike (rank 0's verdict goes round with c:agree).  The
-- files are written whole at the end (gcsh.write_file: beside the target,
-- then renamed), so a failed bench leaves an earlier file as it was.
local function open_outputs(o, who)
  local files, problem = {}, ""
  if o.comm.rank == 0 then
    if o.json and not json_module() then
      problem = "json= needs the dkjson module (Debian package lua-dkjson; "
                .. "scripts/install-deps.sh installs it)"
    end
    for _, kind in ipairs { "csv", "json" } do
      if o[kind] and problem == "" then
        local ok, err = gcsh.check_file(o[kind])
        if ok then files[kind] = o[kind] else problem = kind .. "=: " .. err end
      end
    end
  end
  problem = o.comm:agree(problem)[1]
  if problem ~= "" then error(who .. ": " .. problem, 3) end
  files.who = who
  return files
end

local function write_checked(files, path, text)
  local ok, err = gcsh.write_file(path, text)
  if not ok then error(files.who .. ": " .. err, 0) end
end

-- A CSV cell: a number as the JSON file writes it (dkjson writes Lua's
-- tostring, 14 significant digits), so both files hold the same values.
local function csv_cell(v)
  if type(v) == "number" then return (tostring(v):gsub(",", ".")) end
  return tostring(v)
end

-- Writes rows (fields: the names, in column order) to the files
-- open_outputs checked: CSV with a header line; JSON {bench=, ranks=,
-- backend=, rows=[...]} with each row's fields in the same order.  Every
-- row ends with gpu_shared (sharing()).  A failed write is an error.
local function write_outputs(files, names, rows, bench_name, ranks)
  local sh = sharing()
  local shared = sh and (sh.gpu .. " MPS " .. sh.mps):gsub(",", ";") or "no"
  names = { table.unpack(names) }
  names[#names + 1] = "gpu_shared"
  for _, r in ipairs(rows) do r.gpu_shared = shared end
  if files.csv then
    local lines = { table.concat(names, ",") }
    for _, r in ipairs(rows) do
      local cells = {}
      for i, name in ipairs(names) do cells[i] = csv_cell(r[name]) end
      lines[#lines + 1] = table.concat(cells, ",")
    end
    write_checked(files, files.csv, table.concat(lines, "\n") .. "\n")
  end
  if files.json then
    local order = { "bench", "ranks", "backend", "rows" }
    for _, name in ipairs(names) do order[#order + 1] = name end
    local clean = {}
    for i, r in ipairs(rows) do
      clean[i] = {}
      for _, name in ipairs(names) do clean[i][name] = r[name] end
    end
    write_checked(files, files.json,
                  json_module().encode({ bench = bench_name, ranks = ranks,
                                         backend = gcsh.backend, rows = clean },
                                       { indent = true, keyorder = order }) .. "\n")
  end
end

-- One number per rank combined over the communicator.
local function over_ranks(c, v, dtype, how)
  local t = tensor.from({ v }, dtype)
  if how == "rank0" then c:broadcast(t, 0) else c:allreduce(t, how) end
  return t[0]
end

-- The printed tables, one column per entry: {title, unit, width, row format,
-- row key}.  The header's first cell begins with nccl-tests' "# " within the
-- same width, so columns line up.
local function print_header(cols)
  local sh = sharing()
  if sh then
    print(string.format("# shared GPU: %s (MPS: %s): not a dedicated-GPU figure", sh.gpu, sh.mps))
  end
  for line = 1, 2 do
    local cells = {}
    for i, col in ipairs(cols) do
      cells[i] = string.format("%" .. (i == 1 and col[3] - 2 or col[3]) .. "s", col[line])
    end
    print((("# " .. table.concat(cells, "  ")):gsub("%s+$", "")))
  end
end

local function print_row(cols, r)
  local cells = {}
  for i, col in ipairs(cols) do cells[i] = string.format("%" .. col[3] .. col[4], r[col[5]]) end
  print(table.concat(cells, "  "))
end

local SIZE_COLUMNS = {
  { "size", "(B)", 12, "d", "size" }, { "count", "(elements)", 12, "d", "count" },
  { "type", "", 6, "s", "type" },
}
local RATE_COLUMNS = {
  { "time", "(us)", 9, ".2f", "time_us" }, { "algbw", "(GB/s)", 8, ".2f", "algbw" },
  { "busbw", "(GB/s)", 8, ".2f", "busbw" }, { "#wrong", "", 6, "d", "wrong" },
}
local ISSUE_COLUMN = { { "issue", "(us)", 9, ".2f", "issue_us" } }

local function columns(...)
  local cols = {}
  for _, part in ipairs { ... } do
    for _, col in ipairs(part) do cols[#cols + 1] = col end
  end
  return cols
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

-- ---- all-reduce algorithms against NCCL ---------------------------------------

-- bench.allreduce{algos={"nccl","nccl_sym","oneshot","twoshot","multicast"},
--                 min=8, max=32<<20, factor=2, dtype="f32", iters=20, warmup=5,
--                 min_time=0.002, check=true, kind=nil, comm=comm.world(), csv=nil,
--                 chart="busbw", average="avg", quiet=false, graph=false}
-- One run, every algorithm at every size, in place, sum:
--   nccl       c:allreduce(t) on a plain tensor (NCCL's own kernels on cuda,
--              MPI on host);
--   nccl_sym   c:allreduce on a window's slice (on cuda a window of kind
--              nccl is registered NCCL_WIN_COLL_SYMMETRIC: NCCL's symmetric
--              kernels);
--   oneshot, twoshot, multicast, auto: kernel.allreduce(w, {algo=});
--   empty      kernel.empty(): one empty kernel per call, no data moved (the
--              launch floor a kernel algorithm's time is measured against;
--              #wrong is not checked).
-- Each size is timed over `iters` calls, or over as many as fill min_time
-- seconds when those take less (small messages: one hiccup in 20 calls of a
-- few microseconds moves the mean by more than the differences measured).
-- graph=N (true: 100) times graph replays as bench.collective's graph=
-- does (min_time then adds replays, not captured calls).
-- Columns as bench.collective's plus the algorithm; timed loops run with
-- .check off unless checked=true, as there.  Rows are returned on every rank
-- ({algo=, size=, count=, type=, redop=, time_us=, algbw=, busbw=, wrong=, issue_us=}).
-- csv= and json= write them (rank 0, as bench.collective's); chart= draws one
-- bar per algorithm per size:
-- "busbw" (one scale for all) or "time" (per size, relative to the slowest).
-- nccl and nccl_sym, and every algorithm kernel.allreduce takes but "comm"
-- (which is nccl_sym by another name)
local AR_ALGOS = { nccl = true, nccl_sym = true, empty = true }
for _, a in ipairs(kernel.algos) do if a ~= "comm" then AR_ALGOS[a] = true end end
local AR_DEFAULTS = {
  algos = false, min = 8, max = 32 << 20, factor = 2, dtype = "f32", iters = 20, warmup = 5,
  min_time = 0.002, check = true, kind = false, comm = false, csv = false, json = false,
  chart = "busbw", average = "avg", quiet = false, checked = false, graph = false,
}

local function ar_options(opts)
  local o = {}
  for k, v in pairs(opts or {}) do
    if AR_DEFAULTS[k] == nil then
      error(string.format("bench.allreduce: unknown option '%s' (valid: %s)", k, sorted_keys(AR_DEFAULTS)), 3)
    end
    o[k] = v
  end
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

-- How each algorithm runs one in-place all-reduce of n elements.
local function ar_runner(algo, c, w, plain, n)
  if algo == "nccl" then
    local t = plain:view(0, n)
    return function() c:allreduce(t) end, t
  elseif algo == "nccl_sym" then
    local t = w:tensor():view(0, n)
    return function() c:allreduce(t) end, t
  elseif algo == "empty" then
    return kernel.empty, nil
  end
  local o = { algo = algo, n = n }
  return function() kernel.allreduce(w, o) end, w:tensor():view(0, n)
end

local MAX_ITERS = 100000

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

local function ar_row(o, algo, n, c, w, plain)
  local run, buf = ar_runner(algo, c, w, plain, n)
  local k, wrong = c.size, 0
  if o.check and buf then
    buf:fill(c.rank + 1)
    run()
    wrong = count_wrong(buf, k * (k + 1) // 2)
  end
  if buf then buf:fill(1) end
  c:barrier() -- checked: every rank is here
  local per_call, issue = with_checks(o.checked, function()
    for _ = 1, o.warmup do run() end
    c:barrier()
    if o.graph then return ar_graph_loop(o, c, run) end
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
  return { algo = algo, size = bytes, count = n, type = o.dtype, redop = "sum", time_us = sec * 1e6,
           algbw = algbw, busbw = algbw * 2 * (k - 1) / k, wrong = over_ranks(c, wrong, "i64", "sum"),
           issue_us = over_ranks(c, issue, "f64", "max") * 1e6, graph = o.graph or nil }
end

local ALLREDUCE_COLUMNS = columns(SIZE_COLUMNS, { { "algo", "", 10, "s", "algo" } }, RATE_COLUMNS,
  { { "issue", "(us)", 9, ".2f", "issue_us" } })

local ALLREDUCE_FIELDS = {
  "algo", "size", "count", "type", "redop", "time_us", "algbw", "busbw", "wrong", "issue_us",
}

local function human(bytes)
  local units = { "B", "KiB", "MiB", "GiB" }
  local u = 1
  while bytes >= 1024 and u < #units and bytes % 1024 == 0 do bytes, u = bytes // 1024, u + 1 end
  return string.format("%d %s", bytes, units[u])
end

-- A chart's number: three significant digits, whole numbers from 1000 on
-- (0.00406, 12.3, 325, 1234), so small sizes do not all read 0.00.
local function chart_number(v)
  return string.format(v >= 1000 and "%.0f" or "%.3g", v)
end

-- One bar per algorithm per size.  Sizes differ by orders of magnitude, so
-- each size has its own scale: 50 columns for its best busbw (or its
-- slowest time), the others in proportion, each with its value.
function bench.chart(rows, metric)
  metric = metric or "busbw"
  local field = metric == "time" and "time_us" or "busbw"
  local WIDTH, sizes, by_size = 50, {}, {}
  for _, r in ipairs(rows) do
    if not by_size[r.size] then by_size[r.size] = {}; sizes[#sizes + 1] = r.size end
    table.insert(by_size[r.size], r)
  end
  print(string.format("# %s per algorithm (%s); at each size, bars relative to the %s there",
                      metric == "time" and "time (us)" or "busbw (GB/s)",
                      rows[1] and rows[1].type or "", metric == "time" and "slowest" or "best"))
  for _, size in ipairs(sizes) do
    local group, max = by_size[size], 0
    for _, r in ipairs(group) do max = math.max(max, r[field]) end
    print(human(size))
    for _, r in ipairs(group) do
      local v = r[field]
      local bar = max > 0 and math.floor(v / max * WIDTH + 0.5) or 0
      print(string.format("  %-10s %s %s", r.algo, string.rep("#", math.max(bar, v > 0 and 1 or 0)),
                          chart_number(v)))
    end
  end
end

function bench.allreduce(opts)
  local o = ar_options(opts)
  local files = open_outputs(o, "bench.allreduce")
  local c, speaks = o.comm, o.comm.rank == 0 and not o.quiet
  local maxn = math.max(1, o.max // DTYPE_SIZE[o.dtype])
  local w = c:window(maxn, o.dtype, o.kind and { kind = o.kind } or nil)
  local plain = tensor.new(maxn, o.dtype)
  if speaks then print_header(ALLREDUCE_COLUMNS) end
  local rows, sizes, step = {}, sizes_of(o), 0
  local steps = #sizes * #o.algos
  for _, size in ipairs(sizes) do
    local n = size // DTYPE_SIZE[o.dtype]
    for _, algo in ipairs(o.algos) do
      gcsh.progress(step, steps, "bench.allreduce")
      step = step + 1
      -- ll takes regions up to kernel.ll_max_bytes: no row above
      if n > 0 and (algo ~= "ll" or size <= kernel.ll_max_bytes) then
        local row = ar_row(o, algo, n, c, w, plain)
        rows[#rows + 1] = row
        if speaks then print_row(ALLREDUCE_COLUMNS, row) end
      end
    end
  end
  gcsh.progress()
  c:barrier()
  w:free()
  plain:free()
  if speaks and o.chart and #rows > 0 then bench.chart(rows, o.chart) end
  write_outputs(files, ALLREDUCE_FIELDS, rows, "allreduce", c.size)
  return rows
end

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

function bench.allreduce_targets(rows, opts)
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

-- ---- nccl-tests as the reference -----------------------------------------------

-- bench.nccl_tests(path): the rows of an nccl-tests *_perf output file, as
-- {size=, count=, type=, time_us=, algbw=, busbw=, wrong=, ip_time_us=,
-- ip_algbw=, ip_busbw=} (out-of-place, then in-place), in file order; the
-- list's field graph is the run's -G (its header's "graph: N"; 0: none).
function bench.nccl_tests(path)
  if type(path) ~= "string" then
    error(string.format("bad argument #1 to 'bench.nccl_tests' (file name expected, got %s)",
                        type(path)), 2)
  end
  local f, err = io.open(path, "r")
  if not f then error("bench.nccl_tests: " .. tostring(err), 2) end
  local rows = { graph = 0 }
  for line in f:lines() do
    local graph = line:match("^#.*graph: (%d+)")
    if graph then rows.graph = math.tointeger(tonumber(graph)) end
    local t = {}
    for word in line:gmatch("%S+") do t[#t + 1] = word end
    if #t >= 9 and math.tointeger(tonumber(t[1])) and not line:match("^%s*#") then
      rows[#rows + 1] = {
        size = math.tointeger(tonumber(t[1])), count = math.tointeger(tonumber(t[2])), type = t[3],
        time_us = tonumber(t[6]), algbw = tonumber(t[7]), busbw = tonumber(t[8]),
        wrong = tonumber(t[9]) or 0, ip_time_us = tonumber(t[10]), ip_algbw = tonumber(t[11]),
        ip_busbw = tonumber(t[12]),
      }
    end
  end
  f:close()
  return rows
end

-- bench.compare(rows, ref [, {label=, ref_label=, inplace=false, quiet=false}]):
-- per size present in both, gcsh's time per call against the reference's
-- (nccl-tests rows from bench.nccl_tests, out-of-place unless inplace), as
-- a ratio (above 1: gcsh is slower), with both busbw and gcsh's issue time.
-- Prints on rank 0 of the world; returns {size=, time_us=, ref_us=, ratio=,
-- busbw=, ref_busbw=, issue_us=} per size and the worst ratio.  The labels
-- say which side replayed graphs (rows with graph=, nccl-tests -G), and a
-- note says so when only one side did: that compares different things.
local COMPARE_COLUMNS = {
  { "size", "(B)", 12, "d", "size" }, { "gcsh", "(us)", 9, ".2f", "time_us" },
  { "ref", "(us)", 9, ".2f", "ref_us" }, { "ratio", "", 6, ".3f", "ratio" },
  { "busbw", "(GB/s)", 8, ".2f", "busbw" }, { "ref", "(GB/s)", 8, ".2f", "ref_busbw" },
  { "issue", "(us)", 8, ".2f", "issue_us" },
}

function bench.compare(rows, ref, opts)
  opts = opts or {}
  local by_size = {}
  for _, r in ipairs(ref) do by_size[r.size] = r end
  local out, worst = {}, 0
  for _, r in ipairs(rows) do
    local q = by_size[r.size]
    if q then
      local ref_us = opts.inplace and q.ip_time_us or q.time_us
      local ref_bw = opts.inplace and q.ip_busbw or q.busbw
      local row = { size = r.size, time_us = r.time_us, ref_us = ref_us, ratio = r.time_us / ref_us,
                    busbw = r.busbw, ref_busbw = ref_bw, issue_us = r.issue_us or 0 }
      out[#out + 1] = row
      worst = math.max(worst, row.ratio)
    end
  end
  local mine = rows[1] and rows[1].graph
  local theirs = (ref.graph or 0) > 0 and ref.graph or nil
  if rank == 0 and not opts.quiet then
    print(string.format("# %s against %s (time per call; ratio above 1: gcsh slower)",
                        opts.label or ("gcsh" .. (mine and " graph x" .. mine or "")),
                        opts.ref_label or ("nccl-tests" .. (theirs and " -G " .. theirs or ""))))
    if (mine == nil) ~= (theirs == nil) then
      print(string.format("# note: only %s replays CUDA graphs", mine and "gcsh" or "nccl-tests"))
    end
    print_header(COMPARE_COLUMNS)
    for _, row in ipairs(out) do print_row(COMPARE_COLUMNS, row) end
    print(string.format("# worst ratio: %.3f over %d sizes", worst, #out))
  end
  return out, worst
end

return bench
