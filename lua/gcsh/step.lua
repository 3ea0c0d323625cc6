-- step: run a collective one step at a time and look at every rank's buffer
-- between steps.
--
--   st = step.allreduce(w [, {algo="ring"|"oneshot"|"twoshot"|"multicast"|"ll"|"hier",
--                             op="sum"}])
--   st = step.reduce_scatter(w [, {algo="ring"|"direct", op="sum"}])
--   st = step.allgather(w [, {algo="ring"|"direct"}])
--   st = step.broadcast(w, root [, {algo="tree"|"ring"|"direct", pieces=P}])
--   st = step.window(c, n [, dtype [, opts]])     (gcsh/step_window.lua)
--   st = step.persistent(w [, {n=, offset=, op=, calls=2}])  (gcsh/step_persist.lua)
--
--   st:next([k [, {quiet=true}]])  k steps (default 1; 0: none) in one call,
--                  each printed as a diagram (quiet: not printed; st.text
--                  and st.cells still hold them)
--   st:run([{quiet=true}])  to the end; true when every rank's result equals
--                  the communicator's own collective (c:allreduce, ...)
--   st:reset()     data, signals and step count back to the start
--   st:show()      the buffers now
--   st:free()      collective: the stepper's signals and buffers
--   st.step  st.steps  st.algo  st.coll  st.text (the last printed lines)
--   st.cells (the cells of the last state, by row label: st.cells.r1[3])
--
-- Common options: n=, offset= (the window region, default all of it), and
-- the race options skip="barrier"|"signal" and delay={rank=r, ms=m [, step=s]}.
--
-- Every step follows kernel.plan(w, {...}), the plan the kernels of both
-- backends execute: which rank reads, reduces and writes which chunk of
-- which peer.  Moves are real peer loads and stores (step_move.lua); the
-- plan's barriers are signal barriers (every member adds 1 to a word of
-- every member, then waits for its own word to reach the count); diagrams
-- are read from the buffers (step_diagram.lua).  Steppers run on windows
-- whose team is their whole communicator (one node), except algo="hier".
--
-- algo="hier" (src/bind/khier.c) follows kernel.plan(w, {algo="hier"}),
-- the whole communicator's plan: each node's reduce-scatter by loads and
-- stores, the all-reduce of each chunk across nodes (member t of every
-- node: moves marked network, done as the kernel does them, by the
-- communicator's all-reduce over those ranks), each node's all-gather.
-- On one node the middle step has nothing to do and says so.  Its
-- barriers are signal barriers of the whole communicator (signals reach
-- other nodes over the network path); skip= is refused (the network step
-- is a collective: nobody can overtake it).
--
-- Every phase is a step of its own.  Two-shot's kernel reduces chunk r
-- and stores it into every slice in one pass (only rank r touches chunk r:
-- no barrier between); the stepper shows the pass as its two phases,
-- reduce-scatter (into r's own slice) then all-gather (to the others).
-- Multicast likewise: ld_reduce (into the rank's scratch row, "tmp"), then
-- store.  algo="ll" (kll.h; no plan: kernel.plan has none for it) is a
-- store with flags (each rank's region, a flag beside every element, into
-- its slot of every rank's ll area: the stepper's own, a window of 2 k n
-- elements) and a reduce as the flags arrive (each rank waits for each
-- slot's flags, then reduces its slots in order); no barrier.
--
-- Races: delay={rank=r, ms=m [, step=s]} makes rank r sleep m ms before its
-- move at step s (step 1 when not given); the barriers make the others
-- wait, and the result is right.  skip= takes the synchronisation away from the
-- late rank at the steps where it is late: skip="barrier", it leaves out
-- the barriers after that step (it neither signals nor waits, and the
-- others wait only for each other); skip="signal", it signals "done"
-- before it moves.  Either way a peer reads the late rank's chunk before
-- its write, or the late rank reads what a peer already overwrote.  With
-- skip=, the late rank, after its sleep, also waits for every on-time rank
-- to go as far as it can without it (to a barrier the late rank is in, or
-- the end of the call; each says so on the late rank's own signal word): a
-- sleep alone loses to an on-time rank descheduled for longer, a loaded
-- machine's ordinary luck.  So the race comes out the same every time,
-- whatever the load.  skip= without a delay takes every barrier from every
-- rank: a real race, different from run to run.  The shell waits for every rank
-- between lines (a barrier of its own), so a race needs two steps in one
-- call: st:next(2) or st:run().
--
-- The ring broadcast is a chain (root, root+1, ...: each rank copies from
-- the one before it).  pieces=P (ring only) cuts the region into P pieces
-- and pipelines them: at step s the rank i places down the chain copies
-- piece s - i, so up to N-1 pieces move at once and the chain takes
-- N-1 + P-1 steps of 1/P of the region each (NCCL's slices); the grid's
-- columns are the pieces.  The stepper builds that plan itself (chain_plan:
-- the kernels move the whole region down the chain, kernel.plan's plan).
--
-- A Ctrl-C during a step leaves the stepper marked; its next call puts data,
-- signals and step count back to the start on every rank, then goes on.
local move = require("gcsh.step_move")
local D = require("gcsh.step_diagram")
local S = require("gcsh.step_sample")
local C = require("gcsh.step_cells")

local M = {}

-- Each collective's algorithms the stepper walks (those with a plan of
-- moves, and "ll": its own protocol, kll.h), in the turns the table of
-- algorithms gives them, the first taken by default (C's one table,
-- src/bind/kalgos.c: gcsh.kalgos.walks).
local KALGOS = require("gcsh.kalgos")
local ALGOS = {}
for _, coll in ipairs({ "allreduce", "reduce_scatter", "allgather", "broadcast" }) do
  ALGOS[coll] = table.move(KALGOS.walks[coll], 1, #KALGOS.walks[coll], 1, {})
end
local REDUCES = { allreduce = true, reduce_scatter = true }
local OPS = { "sum", "prod", "min", "max" }
local SKIPS = { "barrier", "signal" }
local INTEGER = { i32 = true, u32 = true, i64 = true, u8 = true, i8 = true }
-- the dtype facts (C's one list, src/core/dtype.c): element bytes, and the
-- allclose tolerances of the result against the reference (rtol, atol)
local DTYPES = require("gcsh.dtypes")
local TOL, ELEMENT_BYTES = {}, {}
for name, d in pairs(DTYPES) do TOL[name], ELEMENT_BYTES[name] = d.rtol, d.size end
-- the most wrong elements a result line names per rank
local WRONG_SHOWN = 8
-- the largest delay, in ms (a lesson's late rank sleeps tens of ms)
local DELAY_MAX_MS = 600000
-- signal slots: the plan's barriers, the stepper's own, and the late
-- rank's (the on-time ranks say there that they went as far as they can)
local PLAN_SLOT, OWN_SLOT, LATE_SLOT = 0, 1, 2
-- the flag the ll stepper's stores carry (its area is cleared at reset)
local LL_FLAG = 1

local Stepper = {}
Stepper.__index = Stepper
Stepper.__name = "stepper" -- its type's name in errors, and help(st)'s topic

-- ---- argument checks -----------------------------------------------------------

-- The stack level of the first function outside the steppers' files: an
-- error there points at the caller's line (stdin:3: step.allreduce: ...).
local function caller_level()
  local level = 3
  while true do
    local info = debug.getinfo(level, "S")
    if not info then return 0 end
    if not info.source:find("gcsh/step", 1, true) and info.what ~= "C" then return level - 1 end
    level = level + 1
  end
end

local function fail(fname, fmt, ...)
  error(fname .. ": " .. string.format(fmt, ...), caller_level())
end

-- An error raised below (gcsh's own Lua), again at the user's line.
local function raise_at_caller(err)
  if type(err) == "string" then err = err:gsub("^[^\n]-/gcsh/[%w_]+%.lua:%d+: ", "", 1) end
  error(err, caller_level())
end

local function listed(list, v)
  for _, x in ipairs(list) do if x == v then return true end end
  return false
end

local function type_name(x)
  local mt = getmetatable(x)
  return type(mt) == "table" and mt.__name or type(x)
end

local function check_keys(fname, opts, valid)
  gcsh.check_options(opts, fname, table.concat(valid, " "), caller_level())
end

local function check_choice(fname, what, v, list)
  if not listed(list, v) then
    fail(fname, "%s '%s' is not one of: %s", what, tostring(v), table.concat(list, ", "))
  end
  return v
end

-- A value as an error shows it: a string quoted and named (a "4" is no 4).
local function shown(v)
  return type(v) == "string" and string.format("%q (a string)", v) or tostring(v)
end

local function check_int(fname, what, v, lo, hi)
  if math.type(v) ~= "integer" and not (type(v) == "number" and math.tointeger(v)) then
    fail(fname, "%s must be an integer %d..%d, got %s", what, lo, hi, shown(v))
  end
  v = math.tointeger(v)
  if v < lo or v > hi then fail(fname, "%s must be %d..%d, got %d", what, lo, hi, v) end
  return v
end

local function check_delay(fname, d, size)
  if type(d) ~= "table" then
    fail(fname, "delay must be a table {rank=R, ms=M [, step=S]}, got %s", type_name(d))
  end
  check_keys(fname .. ": delay", d, { "rank", "ms", "step" })
  if d.rank == nil or d.ms == nil then fail(fname, "delay needs rank= and ms= ({rank=1, ms=50})") end
  local out = { rank = check_int(fname, "delay.rank", d.rank, 0, size - 1) }
  if type(d.ms) ~= "number" or d.ms < 0 or d.ms > DELAY_MAX_MS then
    fail(fname, "delay.ms must be a number 0..%d, got %s", DELAY_MAX_MS, tostring(d.ms))
  end
  out.ms = d.ms
  -- its bound, the stepper's steps, is checked once the plan is made (new)
  if d.step ~= nil and not (type(d.step) == "number" and math.tointeger(d.step)) then
    fail(fname, "delay.step must be an integer, a step of the stepper (1..st.steps), got %s",
         shown(d.step))
  end
  out.step = d.step == nil and 1 or math.tointeger(d.step)
  return out
end

-- The reduce kernels take this dtype and op (their own error otherwise).
local function check_kernel_dtype(fname, dtype, op)
  local t = tensor.new(1, dtype)
  local ok, err = pcall(kernel.reduce, t, { t }, op)
  t:free()
  if not ok then fail(fname, "%s", tostring(err):gsub("^reduce: ", "")) end
end

-- algo: the stepper's (nil: the collective's default); hier spans nodes.
local function check_window(fname, w, algo)
  if type_name(w) ~= "window" then fail(fname, "window expected, got %s", type_name(w)) end
  if not pcall(function() return w.n end) then
    fail(fname, "the window was freed (c:window(n) makes a new one)")
  end
  if #w.team ~= w.size and algo ~= "hier" then
    fail(fname, "the window's team (%d ranks) is not its whole communicator (%d ranks): "
         .. "steppers run on one node's ranks (make the window on c:split of one node), "
         .. "or step.allreduce(w, {algo='hier'}) across nodes", #w.team, w.size)
  end
end

-- ll: no barrier to take away, and at most the kernel's bytes per rank.
local function check_ll(fname, o, w)
  if o.skip then
    fail(fname, "skip= has nothing to take from ll: it has no barrier, its flags are the "
         .. "synchronisation (delay= still makes a rank late)")
  end
  local bytes = o.n * ELEMENT_BYTES[w.dtype]
  if bytes > kernel.ll_max_bytes then
    fail(fname, "ll moves at most %d bytes per rank (kernel.ll_max_bytes), got n=%d of %s (%d bytes)",
         kernel.ll_max_bytes, o.n, w.dtype, bytes)
  end
end

-- opts checked and completed: algo, op, n, offset, skip, delay.
local function read_options(fname, coll, w, opts)
  if opts ~= nil and type(opts) ~= "table" then
    fail(fname, "options must be a table, got %s", type_name(opts))
  end
  opts = opts or {}
  local valid = { "algo", "n", "offset", "skip", "delay" }
  if REDUCES[coll] then table.insert(valid, 2, "op") end
  if coll == "broadcast" then valid[#valid + 1] = "pieces" end
  check_keys(fname, opts, valid)
  local o = {}
  if coll == "allreduce" and opts.algo == "hier" and opts.skip ~= nil then
    fail(fname, "skip= has nothing to take from hier: its step across nodes is the "
         .. "communicator's all-reduce, which waits for its ranks (delay= still makes a rank late)")
  end
  if coll == "allreduce" and opts.algo == "nccl_dev" then
    fail(fname, "algo 'nccl_dev' has no steps of its own: it moves the data as oneshot does "
         .. "(algo='oneshot'), with NCCL's LSA barriers on GPUs (kernels/cuda/nccl_dev.cu)")
  end
  o.algo = check_choice(fname, "algo", opts.algo or ALGOS[coll][1], ALGOS[coll])
  if REDUCES[coll] then
    o.op = check_choice(fname, "op", opts.op or "sum", OPS)
    check_kernel_dtype(fname, w.dtype, o.op)
  end
  o.offset = check_int(fname, "offset", opts.offset or 0, 0, w.n - 1)
  o.n = check_int(fname, "n", opts.n or (w.n - o.offset), 1, w.n - o.offset)
  if opts.skip ~= nil then o.skip = check_choice(fname, "skip", opts.skip, SKIPS) end
  if opts.delay ~= nil then o.delay = check_delay(fname, opts.delay, w.size) end
  if o.algo == "ll" then check_ll(fname, o, w) end
  if opts.pieces ~= nil then
    if o.algo ~= "ring" then
      fail(fname, "pieces= pipelines the chain: it takes algo 'ring', got '%s'", o.algo)
    end
    o.pieces = check_int(fname, "pieces", opts.pieces, 1, o.n)
  end
  return o
end

-- NVLink multicast (mode nvls) has no 16-bit loads and stores: every
-- chunk must start and end on 4 bytes (the emulation keeps the rule unless
-- the window's multicast is lax).
local function check_multicast_units(fname, mc, plan, dtype)
  if mc.lax then return end
  local es = ELEMENT_BYTES[dtype]
  for r, ch in ipairs(plan.chunks) do
    if (ch.first * es) % 4 ~= 0 or (ch.count * es) % 4 ~= 0 then
      mc:free()
      fail(fname, "multicast moves 4-byte units (NVLS's rule), but rank %d's chunk of %s starts "
           .. "at %d with %d elements (choose n and offset so every chunk is whole words, or "
           .. "make the window's first multicast w:multicast{lax=true})",
           r - 1, dtype, ch.first, ch.count)
    end
  end
end

-- ---- the plan, grouped into steps ---------------------------------------------------

-- A step of the stepper is one move step of the plan with the barriers that
-- follow it; `lead` counts the barriers before the first move.
local function group_steps(plan)
  local groups, lead = {}, 0
  for _, s in ipairs(plan.steps) do
    if s.kind == "barrier" then
      if #groups == 0 then lead = lead + 1 else groups[#groups].after = groups[#groups].after + 1 end
    elseif s.kind == "move" then
      -- a move step where nobody has work (the copy into out, which
      -- steppers do not pass) is no step to show, unless the plan says
      -- why (hier's step across nodes on one node)
      if #s.moves > 0 or s.note then
        groups[#groups + 1] = { moves = s.moves, phase = s.phase, note = s.note, after = 0 }
      end
    else
      error("step: the plan has a step of kind '" .. tostring(s.kind) .. "'", 0)
    end
  end
  return groups, lead
end

-- Two-shot's and multicast's move, as the two phases the kernel does in
-- one pass: the reduction of chunk r (into r's own slice; for multicast an
-- ld_reduce into r's scratch buffer), then its store into the others
-- (multicast: one st into every slice).  Returns the two moves (the
-- second nil when no other slice takes it).
local function split_move(m, algo, offset)
  if algo == "multicast" then
    local scratch = { peer = "tmp", first = m.src[1].first - offset }
    return { rank = m.rank, op = "reduce", via = "multicast", count = m.count, src = m.src, dst = { scratch } },
           { rank = m.rank, op = "copy", via = "multicast", count = m.count, src = { scratch }, dst = m.dst }
  end
  local own, others = { peer = m.rank, first = m.src[1].first }, {}
  for _, d in ipairs(m.dst) do if d.peer ~= m.rank then others[#others + 1] = d end end
  local gather = #others > 0 and { rank = m.rank, op = "copy", count = m.count, src = { own }, dst = others }
  return { rank = m.rank, op = "reduce", count = m.count, src = m.src, dst = { own } }, gather or nil
end

local PHASES = { twoshot = { "reduce-scatter", "all-gather" }, multicast = { "ld_reduce", "store" } }

-- Every phase its own step: two-shot's and multicast's fused move split in
-- two (the plan's barriers after the second); a tree broadcast's steps
-- named by the ranks that hold the data.
local function phase_steps(groups, coll, algo, k, offset)
  if coll == "broadcast" and algo == "tree" then
    for s, g in ipairs(groups) do
      g.phase = string.format("%d ranks hold it", math.min(1 << s, k))
    end
  end
  local names = coll == "allreduce" and PHASES[algo]
  if not names then return groups end
  local out = {}
  for _, g in ipairs(groups) do
    local first, second = {}, {}
    for _, m in ipairs(g.moves) do
      local a, b = split_move(m, algo, offset)
      first[#first + 1] = a
      second[#second + 1] = b
    end
    out[#out + 1] = { moves = first, phase = names[1], after = 0 }
    if #second > 0 then out[#out + 1] = { moves = second, phase = names[2], after = 0 } end
    out[#out].after = g.after
  end
  return out
end

-- The ll all-reduce (kll.h) as steps of the plan's shape: every rank
-- stores its region with flags into its slot of every rank's ll area;
-- every rank reduces its slots as their flags arrive.  No barrier.
local function ll_plan(k, n, offset)
  local store, reduce = {}, {}
  for r = 0, k - 1 do
    local slots, mine = {}, {}
    for p = 0, k - 1 do
      slots[#slots + 1] = { peer = p, slot = r }
      mine[#mine + 1] = { peer = r, slot = p }
    end
    local region = { peer = r, first = offset }
    store[#store + 1] = { rank = r, op = "copy", via = "ll", count = n, src = { region }, dst = slots }
    reduce[#reduce + 1] = { rank = r, op = "reduce", via = "ll", count = n, src = mine, dst = { region } }
  end
  return { coll = "allreduce", algo = "ll", n = n, offset = offset, steps = {
    { kind = "move", phase = "store with flags", moves = store },
    { kind = "move", phase = "reduce as flags arrive", moves = reduce },
  } }
end

-- The chain broadcast in P pieces (pieces=, above): piece p is the
-- plan's chunk p (balanced, as kernel.plan's chunks are); at step s the
-- rank i places after the root copies piece s - i from the rank before it.
-- A barrier before the first step and after each.
local function chain_plan(k, root, n, offset, pieces)
  local chunks = {}
  for p = 0, pieces - 1 do
    local first = offset + n * p // pieces
    chunks[p + 1] = { first = first, count = offset + n * (p + 1) // pieces - first }
  end
  local steps = { { kind = "barrier" } }
  for s = 1, (k - 1) + (pieces - 1) do
    local moves, moving = {}, 0
    for i = 1, k - 1 do
      local p = s - i
      if p >= 0 and p < pieces then
        local r, from, ch = (root + i) % k, (root + i - 1) % k, chunks[p + 1]
        moves[#moves + 1] = { rank = r, op = "copy", count = ch.count,
                              src = { { peer = from, first = ch.first } },
                              dst = { { peer = r, first = ch.first } } }
        moving = moving + 1
      end
    end
    steps[#steps + 1] = { kind = "move", moves = moves,
                          phase = string.format("%d in flight", moving) }
    steps[#steps + 1] = { kind = "barrier" }
  end
  return { coll = "broadcast", algo = "ring", root = root, n = n, offset = offset, chunks = chunks,
           steps = steps }
end

local function uses_tmp(plan)
  for _, s in ipairs(plan.steps) do
    for _, m in ipairs(s.moves or {}) do
      for _, list in ipairs({ m.src, m.dst }) do
        for _, p in ipairs(list) do
          if p.peer == "out" then error("step: the plan writes to out; steppers work in place", 0) end
          if p.peer == "tmp" then return true end
        end
      end
    end
  end
  return false
end

-- ---- the reference ----------------------------------------------------------------------

-- What every rank's region (or the part it owns) must hold at the end,
-- computed from the start data with the communicator's own collective.
-- Returns the part of the region to compare (first, count, relative to the
-- region), the reference tensor and the collective's name.
local function reference(x)
  local c, n, k, me, dt = x.c, x.n, x.k, x.me, x.dtype
  local start = tensor.new(n, dt):copy(x.init)
  local chunk = x.plan.chunks and x.plan.chunks[me + 1]
  if x.coll == "allreduce" then
    c:allreduce(start, x.op)
    return 0, n, start, "c:allreduce"
  elseif x.coll == "broadcast" then
    c:broadcast(start, x.root)
    return 0, n, start, "c:broadcast"
  elseif x.coll == "reduce_scatter" then
    local first = chunk.first - x.offset
    if n % k == 0 then
      local out = tensor.new(n // k, dt)
      c:reducescatter(start, out, x.op)
      start:free()
      return first, chunk.count, out, "c:reducescatter"
    end
    c:allreduce(start, x.op) -- chunks of different sizes: the reduction's chunk
    if chunk.count == 0 then start:free(); return first, 0, nil, "c:allreduce" end
    return first, chunk.count, start:view(first, chunk.count), "c:allreduce"
  end
  -- allgather: rank r contributes its chunk r
  local first = chunk.first - x.offset
  if n % k == 0 then
    local out = tensor.new(n, dt)
    c:allgather(start:view(first, chunk.count), out)
    start:free()
    return 0, n, out, "c:allgather"
  end
  -- chunks of different sizes: every rank's chunk in place, zeros around it,
  -- summed (x + 0 is x: exact in every dtype)
  local mine = tensor.new(n, dt):fill(0)
  if chunk.count > 0 then mine:view(first, chunk.count):copy(start:view(first, chunk.count)) end
  start:free()
  c:allreduce(mine, "sum")
  return 0, n, mine, "c:allreduce of each rank's chunk"
end

-- This rank's verdict: "ok", or "bad COUNT i1 i2 ..." (element indices of
-- the window that differ from the reference).
local function verdict(x)
  if x.ref_count == 0 then return "ok" end
  local got = x.region:view(x.ref_first, x.ref_count)
  local ok
  if INTEGER[x.dtype] or not REDUCES[x.coll] then ok = got:equal(x.ref)
  else ok = got:allclose(x.ref, TOL[x.dtype], TOL[x.dtype]) end
  if ok then return "ok" end
  local a, b, wrong = got:totable(), x.ref:totable(), {}
  local count, tol = 0, TOL[x.dtype] or 0
  for i = 1, #a do
    local same = a[i] == b[i] or (a[i] ~= a[i] and b[i] ~= b[i])
    if not same and tol > 0 and not INTEGER[x.dtype] and REDUCES[x.coll] then
      same = math.abs(a[i] - b[i]) <= tol + tol * math.abs(b[i])
    end
    if not same then
      count = count + 1
      if #wrong < WRONG_SHOWN then wrong[#wrong + 1] = x.offset + x.ref_first + i - 1 end
    end
  end
  return "bad " .. count .. " " .. table.concat(wrong, " ")
end

local function verdict_lines(x, verdicts)
  local bad = {}
  for r, v in ipairs(verdicts) do
    if v ~= "ok" then
      local words = {}
      for w in v:gmatch("%S+") do words[#words + 1] = w end
      local count = tonumber(words[2])
      local shown = table.concat(words, ", ", 3)
      bad[#bad + 1] = string.format("  r%d: %d element%s wrong (%s%s)", r - 1, count,
                                    count == 1 and "" or "s", shown, count > #words - 2 and ", ..." or "")
    end
  end
  local part = x.coll == "reduce_scatter" and "each rank's own chunk" or "every rank's region"
  if #bad == 0 then
    return { string.format("result: %s equals the reference (%s)", part, x.ref_name) }, true
  end
  local lines = { string.format("result: WRONG: differs from the reference (%s):", x.ref_name) }
  for _, l in ipairs(bad) do lines[#lines + 1] = l end
  return lines, false
end

-- ---- synchronisation ------------------------------------------------------------------

local function arrive(x, slot, members)
  for _, p in ipairs(members) do x.sig:add(p, slot, 1) end
end

-- A barrier of the members on a slot: every member adds 1 to the slot of
-- every member, then waits for its own to reach the count so far.
local function barrier(x, slot, members, arrived)
  if not arrived then arrive(x, slot, members) end
  x.count[slot] = x.count[slot] + #members
  x.sig:wait(slot, x.count[slot])
end

-- Whether a rank leaves out the synchronisation of step s (0: the barriers
-- before the first move): with skip= and a delay, the late rank at the
-- steps where it is late; with skip= alone, every rank everywhere.
local function skips(x, rank, s)
  if not x.skip then return false end
  local d = x.delay
  if not d then return true end
  return rank == d.rank and (not d.step or d.step == s)
end

-- The late rank's step, when the race options make one (a delay with skip=).
local function race_step(x)
  return x.skip and x.delay and x.delay.step
end

-- An on-time rank past the late step, about to wait for the late rank (or
-- at the end of the call): it tells the late rank it has gone as far as it
-- can without it, once.
local function release_late(x)
  if not x.late_pending then return end
  x.late_pending = false
  x.sig:add(x.delay.rank, LATE_SLOT, 1)
end

-- The late rank, at its step: it waits until every on-time rank has gone
-- as far as it can without it, so that their early reads come first.
local function wait_for_on_time(x)
  x.count[LATE_SLOT] = x.count[LATE_SLOT] + x.k - 1
  x.sig:wait(LATE_SLOT, x.count[LATE_SLOT])
end

-- One of the plan's barriers (those after step s), as the race options
-- leave it.  `arrived`: this rank signalled it already (skip="signal").
local function plan_barrier(x, s, arrived)
  if s ~= race_step(x) then release_late(x) end -- the late rank is in this one
  if x.skip == "barrier" then
    if skips(x, x.me, s) then return end
    local members = {}
    for r = 0, x.k - 1 do if not skips(x, r, s) then members[#members + 1] = r end end
    barrier(x, PLAN_SLOT, members, false)
  else
    barrier(x, PLAN_SLOT, x.everyone, arrived)
  end
end

local function own_barrier(x)
  barrier(x, OWN_SLOT, x.everyone, false)
end

-- ---- steps ---------------------------------------------------------------------------

-- This rank's buffers the diagram samples, by row kind.
local function buffers(x)
  return { slice = x.mine, tmp = x.tmp, ll = x.ll_mine }
end

local function do_step(x, s)
  local g = x.groups[s]
  if s == 1 then for _ = 1, x.lead do plan_barrier(x, 0, false) end end
  local early = x.skip == "signal" and skips(x, x.me, s)
  if early then for _ = 1, g.after do arrive(x, PLAN_SLOT, x.everyone) end end
  local d = x.delay
  if d and d.rank == x.me and (not d.step or d.step == s) then
    gcsh.sleep(d.ms / 1000)
    if race_step(x) then wait_for_on_time(x) end
  end
  for _, m in ipairs(g.moves) do
    if m.rank == x.me then move.run(x.ctx, m) end
  end
  for _ = 1, g.after do plan_barrier(x, s, early) end
  if s == race_step(x) and x.me ~= d.rank then x.late_pending = true end
  -- without races, every rank's step is over before anyone samples, and
  -- every rank has sampled before anyone goes on: the picture is exact
  if not x.skip then own_barrier(x) end
  local samples = S.pack(S.sample(x.layout, x.me, buffers(x)))
  if not x.skip then own_barrier(x) end
  return samples
end

-- Every rank's lines (one string each) -> by_rank[r + 1] = list of lines.
local function gather(x, lines)
  local all = x.c:agree(table.concat(lines, "\n"))
  local out = {}
  for r, s in ipairs(all) do
    out[r] = {}
    for line in (s .. "\n"):gmatch("([^\n]*)\n") do out[r][#out[r] + 1] = line end
  end
  return out
end

-- The state after a step, from every rank's packed samples (line i of each).
local function state_from(x, by_rank, i)
  local by = {}
  for r = 1, x.k do by[r] = S.unpack(by_rank[r][i]) end
  return S.state(x.layout, by)
end

-- Rank 0 prints the lines (fitted to the width); returns them as one text.
local function say(x, lines, quiet)
  local text = table.concat(D.fit(lines), "\n")
  if x.me == 0 and #lines > 0 and not quiet then print(text) end
  return text
end

-- Data, tmp, signals and counts back to the start (collective).
local function restore(x)
  x.sig:reset()
  x.c:barrier() -- nobody signals again before every word is zero
  x.region:copy(x.init)
  if x.tmp then x.tmp:fill(0) end
  if x.ll_mine then x.ll_mine:fill(0) end
  x.count = { [PLAN_SLOT] = 0, [OWN_SLOT] = 0, [LATE_SLOT] = 0 }
  x.late_pending = false
  x.step = 0
  x.hist = { [0] = x.hist[0] }
  x.c:barrier() -- every region restored before anyone reads a peer
end

-- Whether a stepper's last call was left part-way on some rank (its dirty
-- mark, or ranks at different steps): the checked collective every call
-- of a stepper starts with (a rank missing from it is named at once).
local function left_part_way(x)
  local t = tensor.from({ x.dirty and 1 or 0, x.step, -x.step }, "i32")
  x.c:allreduce(t, "max")
  local part_way = t[0] == 1 or t[1] ~= -t[2]
  t:free()
  return part_way
end

-- The start of every call: the check above, and the recovery of an
-- interrupted call.
local function begin(self, fname)
  local x = self._
  if x.freed then error(fname .. ": this stepper was freed", 3) end
  if left_part_way(x) then
    restore(x)
    x.dirty = false
    say(x, { "step: the last call was interrupted; data, signals and step count are reset" })
  end
  self.step = x.step
end

-- Runs steps x.step+1 .. last in one call; returns the lines of each step
-- (and of the result, when the end is reached) and its verdict.
local function advance(self, last)
  local x = self._
  x.dirty = true
  local first, mine = x.step + 1, {}
  for s = first, last do
    mine[#mine + 1] = do_step(x, s)
    x.step = s
    self.step = s
  end
  release_late(x) -- (an on-time rank whose call ends after the late step)
  own_barrier(x) -- every rank done (the late one too) before anyone reads the result
  local at_end = x.step == x.steps
  if at_end then mine[#mine + 1] = verdict(x) end
  local by_rank = gather(x, mine)
  local per_step, wrong = {}, {}
  for s = first, last do x.hist[s] = state_from(x, by_rank, s - first + 1) end
  for s = first, last do
    local lines, _, notes = D.step_lines(x.view, x.hist, s, x.groups[s])
    per_step[#per_step + 1] = { s = s, lines = lines, notes = notes }
    for _, n in ipairs(notes) do wrong[#wrong + 1] = n end
  end
  local result, ok = nil, nil
  if at_end then
    local verdicts = {}
    for r = 1, x.k do verdicts[r] = by_rank[r][#by_rank[r]] end
    result, ok = verdict_lines(x, verdicts)
    if ok and #wrong > 0 then
      -- the late rank's stores landed after all, but the ranks that ended
      -- first held wrong data when they ended: a reader then gets it
      result[#result + 1] = "  but the ranks that finished first held the cells marked ! then:"
      result[#result + 1] = "  without the barrier, a read of the result at that moment is wrong"
      ok = false
    end
  end
  self.cells = D.cell_texts(x.view, x.hist[x.step])
  self.wrong = wrong
  x.dirty = false
  return per_step, result, ok
end

-- ---- the stepper's methods ----------------------------------------------------------

local RACE_NOTE = {
  "  (race options: the shell waits for every rank between lines, a barrier of",
  "   its own: st:next(2) or st:run() lets a read overtake a write)",
}

function Stepper:next(k, opts)
  local fname = "next"
  k = k == nil and 1 or check_int(fname, "k (steps)", k, 0, math.maxinteger)
  if opts ~= nil and type(opts) ~= "table" then fail(fname, "options must be a table, got %s", type_name(opts)) end
  opts = opts or {}
  check_keys(fname, opts, { "quiet" })
  begin(self, fname)
  local x = self._
  if k == 0 and x.steps > 0 then return end -- st:next(st.steps - st.step) at the end
  if x.steps == 0 then
    self.text = say(x, { x.view.title .. ": no steps",
                         "  one rank holds every result already: run it on 2 ranks or more" })
    return
  end
  if x.step >= x.steps then
    local lines = { string.format("%s: at step %d of %d already (st:reset() starts again)",
                                  x.view.title, x.step, x.steps) }
    self.text = say(x, lines)
    return
  end
  local per_step, result = advance(self, math.min(x.step + k, x.steps))
  local lines = {}
  for _, p in ipairs(per_step) do for _, l in ipairs(p.lines) do lines[#lines + 1] = l end end
  for _, l in ipairs(D.legend(x.view, #self.wrong > 0 and "wrong" or "changed")) do lines[#lines + 1] = l end
  if (x.skip or x.delay) and #per_step == 1 and not x.race_noted then
    for _, l in ipairs(RACE_NOTE) do lines[#lines + 1] = l end
    x.race_noted = true
  end
  for _, l in ipairs(result or {}) do lines[#lines + 1] = l end
  self.text = say(x, lines, opts.quiet)
end

function Stepper:run(opts)
  local fname = "run"
  if opts ~= nil and type(opts) ~= "table" then fail(fname, "options must be a table, got %s", type_name(opts)) end
  opts = opts or {}
  check_keys(fname, opts, { "quiet" })
  begin(self, fname)
  local x = self._
  local per_step, result, ok = advance(self, x.steps)
  local lines = {}
  for _, p in ipairs(per_step) do
    if #p.notes > 0 then for _, l in ipairs(p.lines) do lines[#lines + 1] = l end end
  end
  if #self.wrong > 0 then
    lines[#lines + 1] = "  * changed in this step   ! wrong: a read came too early or too late"
  end
  for _, l in ipairs(D.state_lines(x.view, x.hist, x.step)) do lines[#lines + 1] = l end
  for _, l in ipairs(result) do lines[#lines + 1] = l end
  self.text = say(x, lines, opts.quiet)
  return ok
end

function Stepper:reset()
  begin(self, "reset")
  local x = self._
  restore(x)
  self.step = 0
  self.cells = D.cell_texts(x.view, x.hist[0])
  local lines = { string.format("%s: back at step 0 of %d", x.view.title, x.steps) }
  self.text = say(x, lines)
end

function Stepper:show()
  begin(self, "show")
  local x = self._
  local by_rank = gather(x, { S.pack(S.sample(x.layout, x.me, buffers(x))) })
  local state = state_from(x, by_rank, 1)
  C.carry_sets(x.view, x.hist[x.step], state)
  local hist = { [x.step] = state }
  local lines = D.state_lines(x.view, hist, x.step)
  self.cells = D.cell_texts(x.view, state)
  self.text = say(x, lines)
end

function Stepper:free()
  local x = self._
  if x.freed then return end
  -- the signals' free is the collective one: first, and the stepper is
  -- freed only once it went through (on some ranks alone, under .ranks, it
  -- fails there and the stepper stays whole, so a free on every rank works);
  -- its error at the caller's st:free(), not at this file's line
  local ok, err = pcall(x.sig.free, x.sig)
  if not ok then raise_at_caller(err) end
  x.freed = true
  if x.multicast then x.multicast:free() end
  if x.llw then x.llw:free() end
  if x.across then x.across:free() end
  for _, t in ipairs({ x.init, x.ref, x.tmp }) do if t then t:free() end end
end
Stepper.__close = Stepper.free

function Stepper:__tostring()
  local x = self._
  return string.format("stepper(%s, step %d of %d%s)", x.view.title, x.step, x.steps,
                       x.freed and ", freed" or "")
end

-- ---- construction -------------------------------------------------------------------------

local function range(a, b)
  local t = {}
  for i = a, b do t[#t + 1] = i end
  return t
end

local function title(coll, o, w, root, nodes)
  local what = o.algo .. " " .. coll:gsub("_", "-")
  if o.op then what = what .. " (" .. o.op .. ")" end
  if root then what = what .. " from r" .. root end
  local pieces = o.pieces and " in " .. o.pieces .. " pieces" or ""
  local where = nodes and string.format(", %d node%s", nodes, nodes == 1 and "" or "s") or ""
  return string.format("%s of %d %s%s on %d rank%s%s", what, o.n, w.dtype, pieces, w.size,
                       w.size == 1 and "" or "s", where)
end

-- My index in my node's team (w.team is in rank order, as the plan's).
local function plan_member(w)
  for t, r in ipairs(w.team) do if r == w.rank then return t - 1 end end
  error("step: this rank is not in its window's team", 0)
end

local function new(fname, coll, w, root, opts)
  check_window(fname, w, type(opts) == "table" and opts.algo or nil)
  local o = read_options(fname, coll, w, opts)
  local c, k, me = w.comm, w.size, w.rank
  local plan
  if o.algo == "ll" then plan = ll_plan(k, o.n, o.offset)
  elseif o.pieces then plan = chain_plan(k, root, o.n, o.offset, o.pieces)
  else
    plan = kernel.plan(w, { coll = coll, algo = o.algo, n = o.n, offset = o.offset,
                            root = root, out = false })
  end
  local x = {
    coll = coll, algo = o.algo, op = o.op, root = root, n = o.n, offset = o.offset,
    dtype = w.dtype, skip = o.skip, delay = o.delay, c = c, k = k, me = me, plan = plan,
    dirty = false, count = { [PLAN_SLOT] = 0, [OWN_SLOT] = 0, [LATE_SLOT] = 0 }, step = 0,
  }
  x.groups, x.lead = group_steps(plan)
  x.groups = phase_steps(x.groups, coll, o.algo, k, o.offset)
  x.steps = #x.groups
  -- a delay at a step the stepper does not have would delay nothing (and a
  -- skipped barrier's report would blame a race that never ran); at one
  -- rank a stepper has no steps and a delay delays nothing, as nothing
  -- waits there (the lessons run as they can at any rank count)
  local d = o.delay
  if d and x.steps > 0 and (d.step < 1 or d.step > x.steps) then
    fail(fname, "delay.step must be 1..%d (this stepper's steps), got %d", x.steps, d.step)
  end
  x.everyone = range(0, k - 1)
  x.mine = w:tensor()
  x.region = x.mine:view(o.offset, o.n)
  x.init = tensor.new(o.n, w.dtype):copy(x.region)
  if uses_tmp(plan) or o.algo == "multicast" then x.tmp = tensor.new(o.n, w.dtype):fill(0) end
  if o.algo == "multicast" then
    x.multicast = w:multicast()
    check_multicast_units(fname, x.multicast, plan, w.dtype)
  end
  x.sig = c:signals(3)
  local peers = {}
  for _, r in ipairs(w.team) do peers[r] = w:peer(r) end -- (hier: this node's)
  if (plan.nodes or 1) > 1 then -- hier's ranks of my chunk across nodes
    x.across = c:split(plan_member(w), me)
  end
  x.ctx = { k = k, me = me, op = o.op, dtype = w.dtype, peers = peers, tmp = x.tmp,
            multicast = x.multicast, across = x.across }
  if o.algo == "ll" then
    x.llw = c:window(2 * k * o.n, w.dtype)
    x.ll_mine = x.llw:tensor():fill(0) -- no flag yet (the start's gather waits for all)
    local ll_peers = {}
    for r = 0, k - 1 do ll_peers[r] = x.llw:peer(r) end
    x.ctx.ll = { peers = ll_peers, n = o.n, flag = LL_FLAG }
  end
  x.ref_first, x.ref_count, x.ref, x.ref_name = reference(x)
  x.layout = D.layout(plan, k, { tmp = x.tmp ~= nil, ll = x.llw ~= nil })
  x.view = { layout = x.layout, k = k, dtype = w.dtype, op = o.op, steps = x.steps,
             title = title(coll, o, w, root, plan.nodes) }
  local start = gather(x, { S.pack(S.sample(x.layout, me, buffers(x))) })
  x.hist = { [0] = state_from(x, start, 1) }
  x.view.bits = C.bits_mode(x.layout, x.hist[0], o.op, w.dtype)
  C.start_sets(x.view, x.hist[0])
  local st = setmetatable({ _ = x, step = 0, steps = x.steps, algo = o.algo, coll = coll,
                            window = w, wrong = {} }, Stepper)
  st.cells = D.cell_texts(x.view, x.hist[0])
  return st
end

function M.allreduce(w, opts) return new("step.allreduce", "allreduce", w, nil, opts) end
function M.reduce_scatter(w, opts) return new("step.reduce_scatter", "reduce_scatter", w, nil, opts) end
function M.allgather(w, opts) return new("step.allgather", "allgather", w, nil, opts) end

function M.broadcast(w, root, opts)
  check_window("step.broadcast", w)
  if root == nil then fail("step.broadcast", "root (a rank 0..%d) is missing", w.size - 1) end
  root = check_int("step.broadcast", "root", root, 0, w.size - 1)
  return new("step.broadcast", "broadcast", w, root, opts)
end

M.algos = ALGOS
-- The persistent all-reduce's doorbell protocol, a step at a time (gcsh/step_persist.lua)
M.persistent = require("gcsh.step_persist")({ fail = fail, check_keys = check_keys, type_name = type_name,
                                             check_kernel_dtype = check_kernel_dtype,
                                             check_window = check_window,
                                             left_part_way = left_part_way })
-- NCCL's device communicator, emulated for the prompt (gcsh/devcomm.lua)
M.devcomm = require("gcsh.devcomm").new

-- Registration stepping lives in its own file (another branch builds it).
if package.searchpath("gcsh.step_window", package.path) then
  M.window = require("gcsh.step_window")
end

return M
