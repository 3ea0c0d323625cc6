-- gcsh.help: the Lua API, one table (API below) with every type's and
-- module's functions as one-line signatures.  `.help tensor` at the prompt
-- and help(x) in Lua print a topic; help() lists the topics.
--
-- tests/lua/help_api.lua checks this table against the bindings: every
-- method of every type (the metatables' __methods) and every function of
-- the modules has a row, and every row names something that exists.  A
-- binding that gains a method gains a row here.
local M = {}

-- topic = {what = one line, rows = {{signature, what it does}, ...}}.
-- Signatures: `t:` `c:` `w:` `s:` `x:` `m:` `tm:` for methods, `mod.f` for
-- module functions, `x.field` for fields.
local API = {
  tensor = {
    what = "typed 1-D arrays where the rank's collectives run (GPU on cuda)",
    rows = {
      { "tensor.new(n [, dtype=\"f32\"])", "n elements (contents unspecified until written)" },
      { "tensor.from(tbl [, dtype=\"f32\"])", "a tensor holding the numbers of a Lua array" },
      { "tensor.dtypes", "the dtype names: f64 f32 f16 bf16 i64 i32 u32 u8 i8" },
      { "t[i], t[i] = v, #t", "element i (0-based), its length" },
      { "t.dtype t.n t.where", "element type, length, where it lives (host, cuda:0, a window)" },
      { "t:fill(v)", "every element = v; returns t" },
      { "t:arange([start=0 [, step=1]])", "element i = start + i * step; returns t" },
      { "t:rand([seed=rank])", "counter-based random values (same on every backend)" },
      { "t:copy(src)", "src's elements into t (same length and dtype); returns t" },
      { "t:view(offset [, n])", "elements offset .. offset+n-1, sharing t's memory" },
      { "t:totable()", "the elements as a Lua array" },
      { "t:sum()", "the sum of the elements" },
      { "t:equal(u)", "every element equal (NaN never is)" },
      { "t:allclose(u [, rtol=1e-5 [, atol=1e-8]])", "equal within tolerances (numpy's rule)" },
      { "t:maxdiff(u)", "max |t[i] - u[i]|" },
      { "t:checksum()", "a checksum of the bytes, to compare across ranks" },
      { "t:free()", "release the memory now (also <close>, and __gc)" },
    },
  },
  comm = {
    what = "communicators and their collectives (MPI on host, NCCL on cuda)",
    rows = {
      { "comm.world()", "the world communicator (collective; cached until freed)" },
      { "c.rank c.size", "this rank's index in c, and c's size" },
      { "c:split(color [, key])", "sub-communicators by color (collective)" },
      { "c:barrier()", "wait for every rank of c" },
      { "c:allreduce(t [, op=\"sum\" [, out=t]])", "ops sum prod min max avg; returns the output" },
      { "c:broadcast(t, root)", "root's t to every rank" },
      { "c:reduce(t, root [, op [, out=t]])", "the reduction on root" },
      { "c:allgather(t, out)", "every rank's t, in rank order, into out" },
      { "c:reducescatter(t, out [, op])", "rank r gets chunk r of the reduction" },
      { "c:alltoall(t, out)", "chunk j of t to rank j" },
      { "c:send(t, peer)", "point to point (checked in pairs with recv)" },
      { "c:recv(t, peer)", "point to point" },
      { "c:window(n [, dtype [, {kind=}]])", "symmetric memory (collective): help(\"window\")" },
      { "c:signals(n)", "n symmetric 64-bit words per rank: help(\"signals\")" },
      { "c:agree(s)", "every rank's string, in rank order (collective)" },
      { "c:loop(name, iters, t, ...)", "a collective run iters times from C: seconds" },
      { "c:free()", "release (collective)" },
    },
  },
  window = {
    what = "symmetric memory: a slice per rank, peers' slices by load and store",
    rows = {
      { "w:tensor()", "my slice as a tensor view" },
      { "w:peer(r)", "rank r's slice as a tensor view (r in w.team)" },
      { "w.kind w.n w.dtype", "kind (host, nccl, vmm), elements per slice, dtype" },
      { "w.rank w.size w.team w.comm w.seq", "my rank, ranks, reachable ranks, comm, number" },
      { "w:info()", "sizes, addresses, team and backend handles" },
      { "w:put(peer, src [, dst_offset [, opts]])", "a one-sided transfer handle: help(\"xfer\")" },
      { "w:get(peer, dst [, src_offset [, opts]])", "the other direction" },
      { "w:putv(peer, {{src, dst_offset}, ...} [, opts])", "many segments, one operation" },
      { "w:multicast()", "a multicast object (collective): help(\"multicast\")" },
      { "w:free()", "barrier, then deregistration (collective)" },
    },
  },
  signals = {
    what = "symmetric 64-bit signal words: set/add to peers, wait on mine",
    rows = {
      { "s:set(peer, slot, v)", "peer's word = v (release order)" },
      { "s:add(peer, slot, v)", "peer's word += v (release order)" },
      { "s:wait(slot, v [, cmp=\">=\"])", "until my word cmp v (stream-ordered on cuda)" },
      { "s:wait{slot=, value=, cmp=, cpu=true, timeout=S}", "wait here, an error after S s" },
      { "s:read(slot)", "my word (acquire order)" },
      { "s:reset()", "zero my words (local: follow with c:barrier())" },
      { "s.n s.kind s.rank s.size s.team s.comm s.seq", "fields as a window's" },
      { "s:info()", "as w:info()" },
      { "s:free()", "release (collective)" },
    },
  },
  xfer = {
    what = "one-sided transfers to and from a peer's slice, prepared once",
    rows = {
      { "x:post()", "enqueue (cuda) or run (host); returns x" },
      { "x:test()", "\"pending\", \"done\" or \"error\" and why" },
      { "x:wait([{cpu=true, timeout=S}])", "the stream waits; cpu=true: this rank waits" },
      { "x:cancel()", "release a handle not in flight" },
      { "x.op x.peer x.engine x.bytes x.segments x.posts", "what it moves, and posts so far" },
      { "x:free()", "as x:cancel()" },
    },
  },
  multicast = {
    what = "a window's multicast: NVLS when opted in and allowed, else emulated",
    rows = {
      { "m.mode", "\"nvls\" or \"emulated\"" },
      { "m:why()", "why the mode is what it is" },
      { "m:ld_reduce(out [, op | {op=, offset=}])", "out = the op over every slice" },
      { "m:st(src [, offset])", "src into every slice" },
      { "m.window", "its window" },
      { "m:free()", "release" },
    },
  },
  timer = {
    what = "stream timers (CUDA events on cuda, the wall clock on host)",
    rows = {
      { "tm:stop()", "wait for the work queued since the start: seconds" },
      { "tm:free()", "drop the timer" },
    },
  },
  kernel = {
    what = "reduce kernels over tensors and windows, the same on both backends",
    rows = {
      { "kernel.reduce(out, {t1, t2, ...} [, op])", "out = t1 op t2 op ... (local)" },
      { "kernel.reduce_peers(out, w [, op | {op=, offset=, n=}])", "one-shot by hand: every peer" },
      { "kernel.allreduce(w [, {algo=, op=, offset=, n=, out=}])", "result, algorithm run" },
      { "kernel.reduce_scatter(w [, {op=, offset=, n=, out=}])", "rank r gets chunk r" },
      { "kernel.allgather(w [, {offset=, n=, out=}])", "chunk r of rank r to every slice" },
      { "kernel.reduce_to(root, w [, {op=, offset=, n=, out=}])", "the reduction on root" },
      { "kernel.broadcast(root, w [, {offset=, n=, out=}])", "root's region to every slice" },
      { "kernel.plan(w [, {coll=, algo=, n=, offset=, root=}])", "the steps a collective takes" },
      { "kernel.algos", "every algorithm kernel.allreduce accepts" },
      { "kernel.ll_max_bytes", "the largest region algo \"ll\" takes" },
      { "kernel.choose(bytes [, team [, backend]])", "the algorithm \"auto\" runs" },
      { "kernel.crossovers", "the table auto reads (src/core/kreduce_tune.h)" },
    },
  },
  bench = {
    what = "benchmarks (bench = require \"gcsh.bench\"): nccl-tests' columns",
    rows = {
      { "bench.collective{op=, min=, max=, dtype=, csv=, json=}", "one collective over sizes" },
      { "bench.allreduce{algos=, min=, max=, csv=, json=, chart=}", "all-reduce algorithms" },
      { "bench.allreduce_targets(rows [, opts])", "ratios and crossovers from its rows" },
      { "bench.overhead{sizes=, iters=}", "a Lua loop against the same loop in C" },
      { "bench.chart(rows [, \"busbw\" | \"time\"])", "bars per algorithm and size" },
      { "bench.nccl_tests(path)", "the rows of an nccl-tests *_perf output file" },
      { "bench.compare(rows, ref [, opts])", "time per call against nccl-tests' rows" },
      { "bench.collectives", "the collectives bench.collective knows" },
    },
  },
  step = {
    what = "steppers: a collective one step at a time, every rank's buffers between",
    rows = {
      { "step.allreduce(w [, {algo=, op=}])", "algo ring, oneshot, twoshot, multicast" },
      { "step.reduce_scatter(w [, {algo=, op=}])", "algo ring, direct" },
      { "step.allgather(w [, {algo=}])", "algo ring, direct" },
      { "step.broadcast(w, root [, {algo=}])", "algo tree, ring, direct" },
      { "step.window(c, n [, dtype [, {kind=}]])", "a window's registration, one stage a step" },
      { "step.algos", "each collective's algorithms" },
      { "st:next([k])", "k steps (default 1), each printed as a diagram" },
      { "st:run([{quiet=true}])", "to the end: true when the result is right" },
      { "st:reset()", "data, signals and step count back to the start" },
      { "st:show()", "the buffers now" },
      { "st:free()", "the stepper's signals and buffers (collective)" },
      { "st.step st.steps st.algo st.coll", "where it is, of how many steps, what it runs" },
      { "{skip=, delay={rank=, ms=}}", "race options: a late rank, a barrier left out" },
    },
  },
  winstage = {
    what = "step.window's C half (require \"gcsh.winstage\"): registration stages",
    rows = {
      { "winstage.new(c, n [, dtype [, {kind=}]])", "a registration not begun (local)" },
      { "s:next()", "the next stage (collective): step, name, every rank's report" },
      { "s:run([done])", "every stage left (collective); what ran, appended to done" },
      { "s:reset()", "release what is registered, back to step 0 (collective)" },
      { "s:free()", "as s:reset()" },
      { "s.step s.steps s.kind s.n s.dtype s.seq s.window s.names s.comm", "where it is" },
    },
  },
  repro = {
    what = "reproducers (lua/examples): exit 0 correct, 1 with --bug, 125 cannot test here, "
      .. "128 stop (as git bisect run reads them)",
    rows = {
      { "repro.args([script_args])", "{bug = true|false}; an unknown argument: usage, exit 128" },
      { "repro.need{ranks=, gpu=}", "exit 125, saying why, where the script cannot run" },
      { "repro.fail(fmt, ...)", "print what went wrong, exit 1" },
      { "repro.skip(fmt, ...)", "print why it cannot be tested here, exit 125 (bisect skips)" },
      { "repro.abort(fmt, ...)", "print why, exit 128 (a bisect stops)" },
      { "repro.SKIP repro.USAGE", "125 and 128" },
      { "repro.expect(got, want, what [, c])", "compare two tensors; fail naming elements" },
      { "repro.verdict(c, detail, what)", "collective: exit 1 everywhere if a rank failed" },
      { "repro.refused(fn, what)", "run the buggy call; gcsh's refusal: print, exit 1" },
      { "repro.differ(got, want [, opts])", "nil when equal, else what differs" },
      { "repro.sweep{candidate=, reference=, n=, ...}",
        "a grid of cases (offset= dtype= op= ranks=); the smallest failing, shrunk over n, "
        .. "dtype, op, offset and ranks; .kinds: each kind of failure; out=FILE: a standalone "
        .. "script with every global and upvalue it needs" },
      { "repro.check(case, candidate, reference [, opts])", "one case of a sweep" },
      { "repro.write_script(path, case, s)", "a standalone script for one case" },
      { "repro.bytes(dtype)", "the size of one element" },
      { "repro.ranges(list)", "{0, 1, 2, 5} -> \"0-2,5\"" },
    },
  },
  gcsh = {
    what = "the shell's own table: facts and functions of this rank",
    rows = {
      { "gcsh.version gcsh.backend gcsh.device", "gcsh's version, backend, this rank's device" },
      { "gcsh.local_rank gcsh.node gcsh.lua_dir", "place on the node, node, gcsh's Lua files" },
      { "gcsh.info()", "this rank's facts (.info shows every rank's)" },
      { "gcsh.sleep(s)", "sleep s seconds (Ctrl-C ends it)" },
      { "gcsh.progress(done, total [, label])", "a progress line on the terminal" },
      { "gcsh.timer()", "a started timer: help(\"timer\")" },
      { "gcsh.wtime()", "seconds on the host's clock" },
      { "gcsh.sync()", "wait for the rank's stream" },
      { "gcsh.check([on])", ".check for this rank, for the rest of the command" },
      { "gcsh.timeout(s)", "as .timeout s: reports every s, collective checks fail after s" },
      { "gcsh.write_file(path, text)", "write a whole file safely: true, or nil and why" },
      { "gcsh.check_file(path)", "true when gcsh may write path, else nil and why" },
      { "gcsh.check_counts()", "checks made here: {board=, coordinator=, failed=}" },
      { "gcsh.varies()", "this command's output varies (a replay does not compare it)" },
      { "gcsh.debug.inject(what)", "make a fault happen (tests; GCSH_TEST_FAULTS=1)" },
      { "show(x [, c])", "a window, tensor or signals of every rank, as one table" },
      { "help([x])", "this help: a topic name or a value" },
    },
  },
}
M.API = API

local function modules()
  return { tensor = rawget(_G, "tensor"), comm = rawget(_G, "comm"),
           kernel = rawget(_G, "kernel"), gcsh = rawget(_G, "gcsh"),
           bench = package.loaded["gcsh.bench"], repro = package.loaded["gcsh.repro"],
           step = rawget(_G, "step"), winstage = package.loaded["gcsh.winstage"] }
end

-- Which topic a value belongs to: its type's name, or the module it is.
local function topic_of(x)
  if x == nil then return nil end
  if type(x) == "string" then return x end
  local mt = getmetatable(x)
  if type(mt) == "table" and type(mt.__name) == "string" then
    local name = mt.__name == "stepper" and "step" or mt.__name
    if API[name] then return name end
  end
  for name, mod in pairs(modules()) do
    if x == mod then return name end
  end
  return nil
end

-- A function of a module (help(repro.sweep)): "topic.name" and the rows
-- that name it, or nil.
local function function_rows(f)
  if type(f) ~= "function" then return nil end
  for topic, mod in pairs(modules()) do
    for key, v in pairs(type(mod) == "table" and mod or {}) do
      if v == f and API[topic] then
        local full, rows = topic .. "." .. key, {}
        for _, r in ipairs(API[topic].rows) do
          if r[1]:find(full, 1, true) and not r[1]:find(full .. "[%w_]") then
            rows[#rows + 1] = r
          end
        end
        if #rows > 0 then return full, rows end
      end
    end
  end
  return nil
end

local function topics()
  local names = {}
  for name in pairs(API) do names[#names + 1] = name end
  table.sort(names)
  return names
end

-- .help prints on rank 0's terminal (80 columns); help(x) prints on ranks,
-- whose lines get a "[0-7] " prefix.
M.WIDTH, M.RANK_WIDTH = 80, 72

-- "  sig   what", the what column at col, wrapped at width.
local function row_lines(sig, what, col, width, out)
  local head = "  " .. sig
  if #head + 2 > col then
    out[#out + 1] = head
    head = ""
  end
  local line = head .. string.rep(" ", col - #head)
  for word in what:gmatch("%S+") do
    if #line + #word + 1 > width and #line > col then
      out[#out + 1] = line
      line = string.rep(" ", col) .. word
    else
      line = line .. (#line > col and " " or "") .. word
    end
  end
  out[#out + 1] = line
end

-- The text of a topic (a name, or a value whose type or module has one),
-- width columns wide (default M.WIDTH).
function M.text(x, width)
  width = width or M.WIDTH
  local name = topic_of(x)
  if x == nil or x == "" then
    return "help(x) or .help TOPIC, a topic: " .. table.concat(topics(), " ")
  end
  local t = name and API[name]
  if not t then -- a function of a module: its own rows
    local full, rows = function_rows(x)
    if full then name, t = full, { what = "(help(\"" .. full:match("^[^.]+") .. "\") for the rest)",
                                    rows = rows } end
  end
  if not t then
    error(string.format("help: no topic for %s (topics: %s)",
                        type(x) == "string" and ("'" .. x .. "'") or type(x),
                        table.concat(topics(), " ")), 2)
  end
  local out, line = {}, name .. ":"
  for word in t.what:gmatch("%S+") do -- the title, wrapped with an indent of 2
    if #line + 1 + #word > width then
      out[#out + 1] = line
      line = "  " .. word
    else
      line = line .. " " .. word
    end
  end
  out[#out + 1] = line
  local col = 0
  for _, r in ipairs(t.rows) do col = math.max(col, #r[1] + 4) end
  col = math.min(col, 32)
  for _, r in ipairs(t.rows) do row_lines(r[1], r[2], col, width, out) end
  return table.concat(out, "\n")
end

-- help([x]): prints the topic of x (on every rank that runs it).
function M.help(x) print(M.text(x, M.RANK_WIDTH)) end

return M
