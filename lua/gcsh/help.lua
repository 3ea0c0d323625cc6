-- gcsh.help: the Lua API, one table (API below) with every type's and
-- module's functions as one-line signatures, and Lua's standard library
-- (gcsh.help_std).  `.help tensor` at the prompt and help(x) in Lua print a
-- topic; help() lists the topics.  help(x) answers for any value: a gcsh
-- type or module by its topic, a function by its name and signature (found
-- by identity in the modules and libraries), a Lua function by its
-- parameters and where it was defined, anything else by its type.
--
-- tests/lua/help_api.lua checks this table against the bindings: every
-- method of every type (the metatables' __methods) and every function of
-- the modules has a row, and every row names something that exists.  A
-- binding that gains a method gains a row here.
local M = {}

-- The kernel collectives' algorithms (src/bind/kalgos.c's one table, as
-- gcsh.kalgos): coll's that keep(name) says, joined by sep.
local KALGOS = require("gcsh.kalgos")
local function algos(coll, keep, sep)
  local names = {}
  for _, name in ipairs(KALGOS.takes[coll]) do
    if keep(name) then names[#names + 1] = name end
  end
  return table.concat(names, sep)
end
local function stepped(coll)
  return "algo " .. algos(coll, function(name) return KALGOS.stepped[name] end, ", ")
end

-- "f64 f32 ...": the dtype table's names, in its order (gcsh.dtypes is there
-- in every Lua state gcsh makes, rank 0's formatter included)
local DTYPE_NAMES = (function()
  local names = {}
  for name, d in pairs(require("gcsh.dtypes")) do names[d.order] = name end
  return table.concat(names, " ")
end)()

-- topic = {what = one line, rows = {{signature, what it does}, ...}}.
-- Signatures: `t:` `c:` `w:` `s:` `x:` `m:` `tm:` for methods, `mod.f` for
-- module functions, `x.field` for fields.
local API = {
  tensor = {
    what = "typed 1-D arrays where the rank's collectives run (GPU on cuda)",
    rows = {
      { "tensor.new(n [, dtype=\"f32\"])", "n elements (contents unspecified until written)" },
      { "tensor.from(tbl [, dtype=\"f32\"])", "a tensor holding the numbers of a Lua array" },
      { "tensor.dtypes", "the dtype names: " .. DTYPE_NAMES },
      { "t[i], t[i] = v, #t", "element i (0-based), its length" },
      { "t.dtype t.n t.where t.offset", "element type, length, where it lives, a view's start" },
      { "t:fill(v)", "every element = v; returns t" },
      { "t:arange([start=0 [, step=1]])", "element i = start + i * step; returns t" },
      { "t:rand([seed=rank])", "counter-based random values (same on every backend; --seed)" },
      { "t:copy(src)", "src's elements into t (same length and dtype); returns t" },
      { "t:view(offset [, n])", "elements offset .. offset+n-1, sharing t's memory" },
      { "t:as(dtype)", "the same bytes as dtype (a view: bf16 bits as u8 pairs, f32 as u32)" },
      { "t:wait(i, v [, cmp=\"eq\"])", "in a window: wait here until element i cmp v "
        .. "(eq ne ge gt le lt)" },
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
      { "c:translate(r [, other])", "c's rank r in other (default: the world's ranks); nil: not there" },
      { "c:barrier()", "wait for every rank of c" },
      { "c:allreduce(t [, op=\"sum\" [, out=t]])", "ops sum prod min max avg; returns the output" },
      { "c:broadcast(t, root)", "root's t to every rank" },
      { "c:reduce(t, root [, op [, out=t]])", "the reduction on root" },
      { "c:scan(t [, op [, out=t]])", "rank r gets the reduction over ranks 0..r (no avg)" },
      { "c:allgather(t, out)", "every rank's t, in rank order, into out" },
      { "c:reducescatter(t, out [, op])", "rank r gets chunk r of the reduction" },
      { "c:alltoall(t, out)", "chunk j of t to rank j" },
      { "c:allreduce(t, ..., {algo=})", "and reducescatter, allgather, broadcast: auto, kernel, "
          .. "comm (nccl on cuda); auto: the kernels with --share-gpu" },
      { "c:choose(coll, n [, dtype [, op]] [, {algo=}])", "what c:<coll>(t) with #t = n runs, why, "
          .. "the staging window's bytes" },
      { "c:send(t, peer)", "point to point (checked in pairs with recv)" },
      { "c:recv(t, peer)", "point to point" },
      { "c:window(n [, dtype [, {kind=}]])", "symmetric memory (collective): help(\"window\")" },
      { "c:signals(n)", "n symmetric 64-bit words per rank: help(\"signals\")" },
      { "c:quiet()", "wait until every put, get and signal this rank issued landed" },
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
      { "w:info()", "sizes, addresses, team, handles, the kernels' areas (ll_offset ...)" },
      { "w:sync_state([s])", "barriers entered, each rank's sync word and ll flag here, s's words" },
      { "w:put(peer, src [, dst_offset [, opts]])", "a one-sided transfer handle: help(\"xfer\")" },
      { "w:get(peer, dst [, src_offset [, opts]])", "the other direction" },
      { "w:putv(peer, {{src, dst_offset}, ...} [, opts])", "many segments, one operation" },
      { "w:fence()", "what this rank issued before lands before what it issues after" },
      { "w:multicast([{lax=true}])", "a multicast object (collective): help(\"multicast\")" },
      { "w:free()", "barrier, then deregistration (collective)" },
    },
  },
  signals = {
    what = "symmetric u64 signal words: set/add to peers, wait on mine (-1 is 2^64-1)",
    rows = {
      { "s:set(peer, slot, v)", "peer's word = v (release order)" },
      { "s:add(peer, slot, v)", "peer's word += v mod 2^64 (release order)" },
      { "s:fetch_add(peer, slot, v)", "the same, returning the word before (after the stream)" },
      { "s:wait(slot, v [, cmp=\">=\"])", "until my word cmp v (stream-ordered on cuda)" },
      { "s:wait{slot=, value=, cmp=, cpu=true, timeout=S}", "wait here, an error after S s" },
      { "s:read(slot)", "my word (acquire): ('%u'):format(v) prints it unsigned" },
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
      { "m:why()", "why the mode is what it is, and strict or lax" },
      { "m.lax", "emulated without NVLS's dtype, op and 4-byte rules: w:multicast{lax=true}" },
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
  graph = {
    what = "captured calls replayed without Lua: g = gcsh.graph(fn) (CUDA graphs on cuda)",
    rows = {
      { "g:replay([n])", "launch it n times (stream-ordered); checked, counted as its calls" },
      { "g:free()", "release it (also <close>); what it uses can be freed again" },
      { "g.calls g.collectives g.bytes g.replays g.id", "what it holds, what it replayed" },
    },
  },
  persistent = {
    what = "a persistent all-reduce: a resident worker per rank, rung instead of launched",
    rows = {
      { "p:allreduce([{op=, offset=, n=, dtype=}])", "ring: returns my region's view at once" },
      { "p:wait()", "until every call rung so far completed" },
      { "p:stop()", "wait for the calls, end the resident (also <close>)" },
      { "p.calls p.done p.busy p.running p.stopped", "rung, completed, in flight, why it ended" },
      { "p.window p.algo p.max_bytes p.sms", "what it runs on" },
      { "p:free()", "as p:stop(), then release" },
    },
  },
  kernel = {
    what = "reduce kernels over tensors and windows, the same on both backends",
    rows = {
      { "kernel.reduce(out, {t1, t2, ...} [, op])", "out = t1 op t2 op ... (local)" },
      { "kernel.empty()", "one empty kernel: the launch floor (bench algo \"empty\")" },
      { "kernel.reduce_peers(out, w [, op | {op=, offset=, n=}])", "one-shot by hand: every peer" },
      { "kernel.allreduce(w [, {algo=, op=, offset=, n=, out=}])", "result, algorithm run" },
      { "kernel.allreduce algo=", "auto (by size: kernel.choose; hier across nodes) "
          .. algos("allreduce", function(name) return name ~= "auto" end, " ") },
      { "kernel.allreduce op= offset= n=", "sum prod min max; the region [offset, offset+n) of every slice" },
      { "kernel.allreduce out=", "out of place: the window is not written (twoshot, ring: through "
        .. "its LL area, which bounds n, out on every rank; multicast: refused)" },
      { "kernel.reduce_scatter(w [, {op=, offset=, n=, out=}])", "rank r gets chunk r" },
      { "kernel.allgather(w [, {offset=, n=, out=}])", "chunk r of rank r to every slice" },
      { "kernel.reduce_to(root, w [, {op=, offset=, n=, out=}])", "the reduction on root" },
      { "kernel.broadcast(root, w [, {offset=, n=, out=}])", "root's region to every slice" },
      { "kernel.alltoallv(w, counts [, {offset=, out=}])", "counts[j+1] elements to rank j "
        .. "(or every rank's: counts[i+1][j+1]); returns out, what each rank sent me" },
      { "kernel.plan(w [, {coll=, algo=, n=, offset=, root=}])",
        "the steps a collective takes (no algo: the first with a plan, as p.algo says; not auto's choice)" },
      { "kernel.persistent(w [, {algo=, max_bytes=, sms=}])", "a resident all-reduce: help(\"persistent\")" },
      { "kernel.persistent_entry(call, {offset=, n=, dtype=, op=})", "a ring entry's four tagged pairs" },
      { "kernel.persistent_job(call, pairs)", "the job an entry holds, or nil (a tag missing)" },
      { "kernel.persistent_depth", "a persistent all-reduce's ring entries" },
      { "kernel.algos", "allreduce's algos (nccl_dev: kind nccl)" },
      { "kernel.ll_max_bytes", "the largest region algo \"ll\" takes" },
      { "kernel.ll128_max_bytes", "the largest region algo \"ll128\" takes" },
      { "kernel.choose(bytes [, team [, backend]])", "the algorithm \"auto\" runs" },
      { "kernel.crossovers", "the table auto reads (src/core/kreduce_tune.h)" },
    },
  },
  bench = {
    what = "benchmarks (bench = require \"gcsh.bench\"): nccl-tests' columns",
    rows = {
      { "bench.collective{op=, min=, max=, dtype=, graph=, csv=, json=}", "one collective over sizes" },
      { "bench.allreduce{algos=, min=, max=, graph=, csv=, json=, chart=}", "all-reduce algorithms (and empty, persistent)" },
      { "bench.allreduce_targets(rows [, opts])", "ratios and crossovers from its rows" },
      { "bench.overhead{sizes=, iters=}", "a Lua loop against the same loop in C" },
      { "bench.time(fn [, {iters=, warmup=, min_time=}])", "any function: {mine=, avg=, max=} us" },
      { "bench.chart(rows [, \"busbw\" | \"time\"])", "bars per algorithm and size" },
      { "bench.nccl_tests(path)", "the rows of an nccl-tests *_perf output file" },
      { "bench.compare(rows, ref [, opts])", "time per call against nccl-tests' rows" },
      { "bench.collectives", "the collectives bench.collective knows" },
    },
  },
  devcomm = {
    what = "NCCL's device communicator, emulated on the host (a window of kind nccl)",
    rows = {
      { "d = step.devcomm(w [, {barriers=1}])", "ncclDevCommCreate (collective): LSA team, barriers" },
      { "d.lsa_rank d.lsa_size d.barriers d.window", "my LSA rank, the team's size, ..." },
      { "d:lsa_pointer(peer [, offset [, n]])", "ncclGetLsaPointer: peer's slice, a view" },
      { "d:arrive(b) d:wait(b)", "an ncclLsaBarrierSession on barrier b, in halves" },
      { "d:sync(b)", "arrive, then wait (a session's sync)" },
      { "d:state()", "my arrivals, and each member's word here, per barrier" },
      { "d:free()", "release (collective)" },
    },
  },
  step = {
    what = "steppers: a collective one step at a time, every rank's buffers between",
    rows = {
      { "step.allreduce(w [, {algo=, op=}])", stepped("allreduce") },
      { "step.reduce_scatter(w [, {algo=, op=}])", stepped("reduce_scatter") },
      { "step.allgather(w [, {algo=}])", stepped("allgather") },
      { "step.broadcast(w, root [, {algo=, pieces=}])", stepped("broadcast") .. "; ring in pieces: a pipeline" },
      { "step.persistent(w [, {n=, op=, calls=2}])", "the doorbell: rung, look, run, done per call" },
      { "step.window(c, n [, dtype [, {kind=}]])", "a window's registration, one stage a step" },
      { "step.devcomm(w [, {barriers=1}])", "NCCL's device communicator, emulated: help(\"devcomm\")" },
      { "step.algos", "each collective's algorithms" },
      { "st:next([k [, {quiet=true}]])", "k steps (default 1; 0: none), each a diagram" },
      { "st:run([{quiet=true}])", "to the end: true when the result is right" },
      { "st:reset()", "data, signals and step count back to the start" },
      { "st:show()", "the buffers now" },
      { "st:free()", "the stepper's signals and buffers (collective)" },
      { "st.step st.steps st.algo st.coll", "where it is, of how many steps, what it runs" },
      { "{skip=, delay={rank=, ms= [, step=1]}}", "race options: a late rank, a barrier left out" },
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
      { "repro.deadline(s)", "the job ends s s after start: hang report, flight, exit 1" },
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
  lesson = {
    what = "checks for the lessons (require \"gcsh.lesson\"): lua/tutorial, .lesson N",
    rows = {
      { "lesson.check(ok, what)", "a checkpoint: \"checkpoint: what\", or one FAILED line" },
      { "lesson.expect(t, want, what)", "every element of t is want (number, i -> v, tensor)" },
      { "lesson.call(fn, name, ...)", "the learner's fn on every rank; an error: one line at their line" },
      { "lesson.call_each(fn, name, calls)", "fn(table.unpack(calls[i])) for each i, as one call" },
      { "lesson.grade(t, want, what [, n])", "a tensor answer (collective; n elements): right, or each rank's own line" },
      { "lesson.answer(name, got, want, right)", "a value answer (collective): its value and type" },
      { "lesson.needs(n)", "say when the lesson has fewer than n ranks" },
      { "lesson.wrap(text [, width=72])", "text in lines that fit 80 columns after the prefix" },
      { "lesson.shared_gpu()", "the backend's info says the GPU is shared (--share-gpu)" },
      { "lesson.measured_on()", "where figures come from: the CPUs, the GPU, a shared GPU" },
      { "lesson.track_begin() lesson.track_end()", "(the shell) note what a part's code made" },
      { "lesson.free_made()", "(the shell) free what the lesson made, newest first" },
      { "lesson.env()", "(the shell) the lesson's own globals its code runs with" },
    },
  },
  gcsh = {
    what = "the shell's own table: facts and functions of this rank",
    rows = {
      { "gcsh.version gcsh.backend gcsh.device", "gcsh's version, backend, this rank's device" },
      { "gcsh.local_rank gcsh.node gcsh.lua_dir", "place on the node, node, gcsh's Lua files" },
      { "gcsh.nodes gcsh.node_of(r)", "nodes of the job, world rank r's node" },
      { "gcsh.info()", "this rank's facts (.info shows every rank's)" },
      { "gcsh.sleep(s)", "sleep s seconds (Ctrl-C ends it)" },
      { "gcsh.progress(done, total [, label])", "a progress line on the terminal" },
      { "gcsh.timer()", "a started timer: help(\"timer\")" },
      { "gcsh.wtime()", "seconds on the host's clock" },
      { "gcsh.sync()", "wait for the rank's stream" },
      { "gcsh.graph(fn)", "capture fn's calls (nothing runs): a graph, help(\"graph\")" },
      { "gcsh.check([on])", ".check for this rank, for the rest of the command" },
      { "gcsh.timeout(s)", "as .timeout s: reports every s, collective checks fail after s" },
      { "gcsh.deadline(s)", "as --deadline s: the whole job ends s s after start (0: never)" },
      { "gcsh.seed(n)", "as --seed n: math.random and t:rand() from (n, rank)" },
      { "gcsh.write_file(path, text)", "write a whole file safely: true, or nil and why" },
      { "gcsh.check_file(path)", "true when gcsh may write path, else nil and why" },
      { "gcsh.check_counts()", "checks made here: {board=, coordinator=, failed=}" },
      { "gcsh.is_check_error(e)", "e is this rank's last failed collective check, as raised" },
      { "gcsh.varies()", "this command's output varies (a replay does not compare it)" },
      { "gcsh.check_options(opts, fname, valid [, level=2])", "unknown keys: an error naming them" },
      { "gcsh.usage_error(msg [, level])", "error(msg, level) that exits 128 uncaught (misuse)" },
      { "gcsh.debug.inject(what)", "make a fault happen (tests; GCSH_TEST_FAULTS=1)" },
      { "show(x [, c])", "x of every rank as one table (windows, tensors, signals: elements)" },
      { "show(w, \"info\")", "w:info() of every rank folded: equal fields once (or signals)" },
      { "show(w, \"sync\" [, s])", "w:sync_state() of every rank: a rank behind is marked" },
      { "help([x])", "this help, for any value, topic or function name" },
    },
  },
}
M.API = API

local STD = require "gcsh.help_std"
M.STD = STD

-- Where help looks a function up by identity: {table, the prefix its rows
-- use, topic}.  gcsh's modules, then Lua's libraries; _G last (its basic
-- functions, and gcsh's global show and help).
local function places()
  local list = {}
  for _, p in ipairs {
    { "tensor", "tensor." }, { "comm", "comm." }, { "kernel", "kernel." }, { "gcsh", "gcsh." },
    { "step", "step." }, { "repro", "repro." }, { "coroutine", "coroutine." },
    { "package", "package." }, { "string", "string." }, { "utf8", "utf8." },
    { "table", "table." }, { "math", "math." }, { "io", "io." }, { "os", "os." },
    { "debug", "debug." } } do
    local t = rawget(_G, p[1])
    if type(t) == "table" then list[#list + 1] = { t, p[2], p[1] } end
  end
  for mod, topic in pairs { ["gcsh.bench"] = "bench", ["gcsh.winstage"] = "winstage",
                            ["gcsh.lesson"] = "lesson" } do
    if package.loaded[mod] then list[#list + 1] = { package.loaded[mod], topic .. ".", topic } end
  end
  list[#list + 1] = { gcsh and gcsh.debug or {}, "gcsh.debug.", "gcsh" }
  list[#list + 1] = { _G, "", "_G" }
  return list
end

-- The topic table of a name (gcsh's API first, then Lua's).
local function topic_table(name) return API[name] or STD[name] end

-- Which topic a value belongs to: its type's name, or the module it is.
local function topic_of(x)
  if x == nil then return nil end
  if type(x) == "string" then return topic_table(x) and x or nil end
  local mt = getmetatable(x)
  if type(mt) == "table" and type(mt.__name) == "string" then
    local name = mt.__name == "stepper" and "step" or mt.__name == "FILE*" and "file" or mt.__name
    if topic_table(name) then return name end
  end
  for _, p in ipairs(places()) do
    if x == p[1] then return p[3] end
  end
  return nil
end


local function topics()
  local names, lua = {}, {}
  for name in pairs(API) do names[#names + 1] = name end
  for name in pairs(STD) do lua[#lua + 1] = name end
  table.sort(names)
  table.sort(lua)
  return table.concat(names, " "), table.concat(lua, " ")
end

-- Whether a row's signature is about `name`: "math.ceil(x) math.floor(x)"
-- is about math.ceil and math.floor, not about x (what is in brackets is
-- the arguments).
local function row_names(sig, name)
  local outside = sig:gsub("%b()", " "):gsub("%b{}", " "):gsub("%b[]", " ")
  for word in outside:gmatch("[%w_.:]+") do
    if word == name then return true end
  end
  return false
end

-- The rows about `name` ("string.format", "print", "t:fill"), of one topic
-- (`only`) or of the first that has any; and that topic.
local function rows_naming(name, only)
  for _, set in ipairs { API, STD } do
    local names = {}
    for tname in pairs(set) do names[#names + 1] = tname end
    table.sort(names) -- the same answer every time
    for _, tname in ipairs(names) do
      local found = {}
      for _, r in ipairs(set[tname].rows) do
        if (not only or only == tname) and row_names(r[1], name) then found[#found + 1] = r end
      end
      if #found > 0 then return found, tname end
    end
  end
  return {}, nil
end

-- The letter a topic's method rows use ("t" in "t:fill(v)").
local function method_letter(topic)
  for _, r in ipairs(topic_table(topic).rows) do
    local letter = r[1]:match("^(%a+):")
    if letter then return letter end
  end
  return "x"
end

-- A function's name where help can find it, and its topic when that is
-- known: "string.format", "print", "gcsh.sleep", "t:fill" (a method of a
-- gcsh type), "f:write" (a file's).
local function name_of(f)
  -- a function may have several names (math.atan is math.atan2 in builds
  -- that keep Lua 5.2's): one with a row wins, then the shortest
  local best, best_row
  for _, p in ipairs(places()) do
    for k, v in pairs(p[1]) do
      if v == f and type(k) == "string" then
        local name, row = p[2] .. k, #rows_naming(p[2] .. k) > 0
        if not best or (row and not best_row) or (row == best_row and #name < #best) then
          best, best_row = name, row
        end
      end
    end
    if best then return best end
  end
  for tname, mt in pairs(debug.getregistry()) do
    local topic = tname == "FILE*" and "file" or tname
    local methods = type(mt) == "table" and (mt.__methods or (topic == "file" and mt.__index))
    if type(methods) == "table" and type(tname) == "string" and topic_table(topic) then
      for k, v in pairs(methods) do
        if v == f then return method_letter(topic) .. ":" .. k, topic end
      end
    end
  end
  return nil
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

-- A title (wrapped at width, then indented by 2) and rows.
local function format_rows(title, rows, width)
  local out, line = {}, ""
  for word in title:gmatch("%S+") do
    if #line > 0 and #line + 1 + #word > width then
      out[#out + 1] = line
      line = "  " .. word
    else
      line = line == "" and word or line .. " " .. word
    end
  end
  out[#out + 1] = line
  local col = 0
  for _, r in ipairs(rows) do col = math.max(col, #r[1] + 4) end
  col = math.min(col, 32)
  for _, r in ipairs(rows) do row_lines(r[1], r[2], col, width, out) end
  return table.concat(out, "\n")
end

local function topics_line()
  local gcsh_topics, lua_topics = topics()
  return "help(x) or .help TOPIC, a topic: " .. gcsh_topics .. "; Lua's: " .. lua_topics
         .. "; or a function, help(print), or any value"
end

-- The rows naming a function, under its topic's title; nil when none does.
local function named_text(name, width, topic)
  local rows, found = rows_naming(name, topic)
  if #rows == 0 then return nil end
  return format_rows(name .. ": " .. topic_table(found).what, rows, width)
end

-- Another library's name (help("put_signal")): its gcsh call and how it
-- differs (gcsh.help_names); nil when the index has no such name.
local NAMES = require "gcsh.help_names"
M.NAMES = NAMES

local function other_name_text(name, width)
  local e = NAMES.entry(name)
  if not e then return nil end
  return format_rows(name .. " (" .. e.from .. ") in gcsh:", e.gcsh, width)
end

-- A function help has no row for: a Lua function's parameters and where it
-- was defined; a C function's name, if it has one.
local function function_text(f, name, width)
  local info = debug.getinfo(f, "Su")
  if info.what == "C" then
    return (name or "function") .. ": a C function; help has no row for it"
  end
  local params = {}
  for i = 1, info.nparams do params[i] = debug.getlocal(f, i) end
  if info.isvararg then params[#params + 1] = "..." end
  local sig = (name or "function") .. "(" .. table.concat(params, ", ") .. "): "
  return format_rows(string.format("%sa Lua function defined at %s:%d", sig, info.short_src,
                                   info.linedefined), {}, width)
end

local function keys_text(t)
  local n, keys = #t, {}
  for k in pairs(t) do
    if not (math.type(k) == "integer" and k >= 1 and k <= n) then keys[#keys + 1] = tostring(k) end
  end
  table.sort(keys)
  local shown = {}
  for i = 1, math.min(#keys, 8) do shown[i] = keys[i] end
  local more = #keys > 8 and string.format(", ... (%d keys)", #keys) or ""
  return string.format("a table: %d item%s in its array part%s%s%s", n, n == 1 and "" or "s",
                       #keys > 0 and "; keys " or "", table.concat(shown, ", "), more)
end

-- Any other value, by its type.
local function value_text(x, width)
  local t = type(x)
  if t == "nil" then return "nil: no value (help() lists the topics)" end
  if t == "boolean" then return tostring(x) .. ": a boolean" end
  if t == "number" then
    return tostring(x) .. ": a number, " .. (math.type(x) == "integer" and "an integer" or "a float")
  end
  if t == "string" then
    local shown = #x > 40 and string.format("%q...", x:sub(1, 40)) or string.format("%q", x)
    return format_rows(string.format("%s: a string of %d byte%s, not the name of a help topic or "
                                     .. "function.  %s", shown, #x, #x == 1 and "" or "s",
                                     topics_line()), {}, width)
  end
  if t == "thread" then return "a coroutine, " .. coroutine.status(x) end
  if t == "table" then return keys_text(x) end
  local mt = getmetatable(x)
  local name = type(mt) == "table" and type(mt.__name) == "string" and mt.__name
  return "a userdata" .. (name and (" of type " .. name) or "") .. "; help has no topic for it"
end

-- The help of any value: a topic (a gcsh type or module, a Lua library, or
-- its name), a function by its name and signature, anything else by its
-- type; never an error.  width: columns (default M.WIDTH).
function M.describe(x, width)
  width = width or M.WIDTH
  local topic = topic_of(x)
  if topic then
    local t = topic_table(topic)
    return format_rows(topic .. ": " .. t.what, t.rows, width)
  end
  if type(x) == "string" then
    return named_text(x, width) or other_name_text(x, width) or value_text(x, width)
  end
  if type(x) == "function" then
    local name, in_topic = name_of(x)
    return name and named_text(name, width, in_topic) or function_text(x, name, width)
  end
  return value_text(x, width)
end

-- .help [TOPIC]: the topics, a topic, or a function by its name
-- (".help string.format"); a name help does not know is an error, said
-- with the topics.  For any other value, what describe says.
function M.text(x, width)
  width = width or M.WIDTH
  if x == nil or x == "" then return format_rows(topics_line(), {}, width) end
  if type(x) == "string" and not topic_of(x) and not named_text(x, width)
     and not other_name_text(x, width) then
    local gcsh_topics, lua_topics = topics()
    error(string.format("help: no topic or function named '%s' (topics: %s; Lua's: %s)", x,
                        gcsh_topics, lua_topics), 2)
  end
  return M.describe(x, width)
end

-- help([x]): prints it on every rank that runs it; help() lists the topics.
function M.help(...)
  if select("#", ...) == 0 then
    print(M.text(nil, M.RANK_WIDTH))
  else
    print(M.describe((...), M.RANK_WIDTH))
  end
end

return M
