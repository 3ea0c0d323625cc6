-- gcsh.repro: what reproducer scripts share (lua/examples/*.lua), and the
-- differential sweep.  A global `repro` on every rank (prelude.lua).
--
-- The reproducer convention is git bisect run's: without arguments a script
-- runs the correct pattern and exits 0; with --bug it runs the buggy one,
-- says what went wrong and exits 1; it exits 125 when it cannot test here
-- (bisect skips the commit) and 128 on a usage error (bisect stops).  gcsh
-- itself exits 125 when the script or a Lua file it loads cannot be read or
-- compiled, or a module it requires is missing; misuse of this API (an
-- unknown requirement or option, an argument of the wrong type) is a usage
-- error, 128, with the message (gcsh.usage_error): the reproducer is wrong.
--
--   local opt = repro.args()          {bug = true|false}; an unknown argument: usage, exit 128
--   repro.need{ranks = 2, gpu = true} exit 125 (with the reason) below 2 ranks, or
--                                     without the cuda backend
--   repro.fail(fmt, ...)              print what went wrong, exit 1
--   repro.skip(fmt, ...)              print why this cannot be tested here, exit 125
--   repro.abort(fmt, ...)             print why the bisect must stop, exit 128
--   repro.deadline(s)                 as --deadline s: the whole job ends s seconds
--                                     after it started, whatever runs then (a hang),
--                                     with a hang report, the flight recorder
--                                     written and status 1 (--deadline-status N)
--   repro.expect(got, want, what [, c])  compare two tensors; repro.fail naming the
--                                     elements.  With c (collective): every rank of c
--                                     exits 1 when any differs, the others quietly
--   repro.verdict(c, detail, what)    collective: exit 1 everywhere when some rank's
--                                     detail is not nil (those ranks print it)
--   repro.refused(fn, what)           run the buggy call; gcsh's refusal: print it, exit 1
--   repro.differ(got, want [, opts])  nil when equal (exact for integers, allclose
--                                     for floats), else what differs, as text
--
--   case = repro.sweep{candidate = f, reference = g, n = {...}, offset = {0},
--                      dtype = {"f32"}, op = {"sum"}, ranks = {k, ...}, comm = c,
--                      out = FILE, freeze = false, rtol =, atol =, shrink = 256,
--                      quiet = false}
--     Calls candidate(case) and reference(case) for every case {n=, offset=,
--     dtype=, op=, size=, comm=} of the grid (smallest n first, then offset,
--     then rank count, then the dtypes and ops in gcsh's order, whatever
--     order they are listed in) and compares the tensors they return, on
--     every rank; the ranks agree on each case's verdict (collective: every
--     rank of c calls sweep with the same grid), through a checked
--     collective first, so that a rank whose candidate raised before a
--     collective frees the others at once (with .check on; off, they wait
--     in that collective until Ctrl-C or a limit).  case.comm is the communicator
--     to use: c, or with ranks= the first case.size ranks of c (the others
--     sit the case out).  The smallest failing case is then shrunk: shorter
--     lengths than the grid's (each with every dtype and op), then smaller
--     offsets, earlier dtypes and ops, then (with ranks=) fewer ranks,
--     repeated until nothing shrinks, at most `shrink` tries.
--     Returns nil when every case passes, else the case with `detail` (what
--     differed, on the lowest rank whose error is its own rather than a
--     check naming another rank), `ranks` (those ranks, "0,2-3"), `failed`
--     / `cases` (counts over the grid) and `kinds` (the smallest case of
--     each distinct kind of failure, the shrunk one first).  With out=FILE,
--     rank 0 writes a standalone script of just that case, with every
--     global and upvalue its functions need (gcsh.repro_script), a loaded
--     module (or a field of one) as a live require("name") (freeze = true:
--     a copy of its functions); what it cannot carry is an error before
--     the sweep runs.
--   repro.check(case, candidate, reference)   one case (the script above uses it)
local repro = {}

-- the dtype facts (C's one list, src/core/dtype.c): element bytes, which are
-- floats, and allclose's tolerance per float dtype
local BYTES, FLOAT, RTOL = {}, {}, {}
for name, d in pairs(require("gcsh.dtypes")) do
  BYTES[name], FLOAT[name], RTOL[name] = d.size, d.float or nil, d.rtol
end

-- Misuse of this API: error(msg, level) as a usage error (status 128,
-- src/rank/verdict.h), so that a bisect stops and the script gets fixed.
-- Looked up when called: gcsh.usage_error comes after the prelude.
local function usage(msg, level)
  gcsh.usage_error(msg, level + 1)
end

-- An options table checked as every one is (gcsh.check_options), an
-- unknown key a usage error.
local function check_keys(o, fname, valid, level)
  local ok, err = pcall(gcsh.check_options, o, fname, valid, 0)
  if not ok then usage(err, level + 1) end
end

-- The size of one element of dtype, in bytes.
function repro.bytes(dtype)
  if not BYTES[dtype] then usage("unknown dtype '" .. tostring(dtype) .. "'", 2) end
  return BYTES[dtype]
end

-- ---- the reproducer convention -------------------------------------------

-- The name of v's gcsh type ("tensor", "comm") or Lua type.
local function type_name(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and type(mt.__name) == "string" and mt.__name or type(v)
end

-- Raises fname's "bad argument" error unless v is a `want` (a gcsh type
-- name, or "string"), as luaL_checkudata words it; optional: nil passes.
local function check_arg(fname, i, v, want, optional)
  if (optional and v == nil) or type_name(v) == want then return end
  usage(string.format("bad argument #%d to '%s' (%s expected, got %s)", i, fname, want,
                      type_name(v)), 3)
end

local function say(fmt, ...)
  print(select("#", ...) > 0 and string.format(fmt, ...) or fmt)
end

-- The exit statuses (README "Exit statuses"; gcsh's own in src/core/gcsh.h).
repro.SKIP, repro.USAGE = 125, 128

function repro.args(script_args)
  local a = script_args or arg or {}
  local opt = { bug = false }
  for i = 1, #a do
    if a[i] == "--bug" then
      opt.bug = true
    else
      if rank == 0 then
        say("%s: unknown argument '%s' (usage: gcsh -n N %s [--bug])", a[0] or "repro",
            tostring(a[i]), a[0] or "script.lua")
      end
      os.exit(repro.USAGE)
    end
  end
  return opt
end

function repro.need(req)
  check_arg("repro.need", 1, req, "table")
  check_keys(req, "repro.need", "ranks gpu", 2)
  local n = req.ranks
  if n ~= nil and not (math.type(n) == "integer" and n >= 1) then
    usage(string.format("bad argument #1 to 'repro.need' (ranks must be a positive integer, " ..
                        "got %s)", type(n) == "string" and string.format("%q", n) or tostring(n)), 2)
  end
  if req.ranks and size < req.ranks then
    if rank == 0 then
      say("cannot run here: needs at least %d ranks, has %d (gcsh -n %d %s)", req.ranks, size,
          req.ranks, arg and arg[0] or "script.lua")
    end
    os.exit(repro.SKIP)
  end
  if req.gpu and gcsh.backend ~= "cuda" then
    if rank == 0 then
      say("cannot run here: needs GPUs (the cuda backend); this session runs on %s",
          gcsh.backend)
    end
    os.exit(repro.SKIP)
  end
end

function repro.fail(fmt, ...)
  say(fmt, ...)
  os.exit(1)
end

function repro.skip(fmt, ...)
  say("cannot test here: " .. fmt, ...)
  os.exit(repro.SKIP)
end

function repro.abort(fmt, ...)
  say("stop: " .. fmt, ...)
  os.exit(repro.USAGE)
end

function repro.deadline(s)
  if type(s) ~= "number" or not (s > 0 and s <= 1e6) then
    usage(string.format("bad argument #1 to 'repro.deadline' (seconds must be in (0, 1e6], got %s)",
                        tostring(s)), 2)
  end
  gcsh.deadline(s)
end

local function value_text(v, dtype)
  if FLOAT[dtype] then return string.format("%.7g", v) end
  return string.format("%d", v)
end

-- What differs between tensors got and want, or nil.  opts: rtol, atol.
function repro.differ(got, want, opts)
  gcsh.check_options(opts, "repro.differ", "rtol atol")
  opts = opts or {}
  if #got ~= #want then
    return string.format("length %d, expected %d", #got, #want)
  end
  local float = FLOAT[want.dtype]
  local rtol = opts.rtol or RTOL[want.dtype] or 0
  local atol = opts.atol or (float and 1e-8 or 0)
  local same
  if float then same = got:allclose(want, rtol, atol) else same = got:equal(want) end
  if same then return nil end
  local g, w = got:totable(), want:totable()
  local first, count = nil, 0
  for i = 1, #w do
    local d = g[i] ~= w[i]
    if float then d = not (math.abs(g[i] - w[i]) <= atol + rtol * math.abs(w[i])) end
    if d then
      count = count + 1
      first = first or i
    end
  end
  return string.format("%d of %d elements differ; first at [%d]: expected %s, got %s", count, #w,
                       first - 1, value_text(w[first], want.dtype), value_text(g[first], want.dtype))
end

function repro.verdict(c, detail, what)
  local all = c:agree(detail and (what or "wrong result") .. ": " .. detail or "")
  local bad = {}
  for r = 1, #all do
    if all[r] ~= "" then bad[#bad + 1] = r - 1 end
  end
  if #bad == 0 then return true end
  if detail then say("%s: %s", what or "wrong result", detail) end
  os.exit(1)
end

function repro.expect(got, want, what, c)
  check_arg("repro.expect", 1, got, "tensor")
  check_arg("repro.expect", 2, want, "tensor")
  check_arg("repro.expect", 3, what, "string", true)
  check_arg("repro.expect", 4, c, "comm", true)
  local d = repro.differ(got, want)
  if c then return repro.verdict(c, d, what) end
  if d then repro.fail("%s: %s", what or "wrong result", d) end
  return true
end

-- The buggy call fn should be refused by gcsh: print the refusal, exit 1.
function repro.refused(fn, what)
  local ok, err = pcall(fn)
  if ok then
    repro.fail("%s: gcsh did not refuse it (expected an error)", what)
  end
  repro.fail("%s: gcsh refused it: %s", what, tostring(err))
end

-- ---- the sweep -----------------------------------------------------------

local script = require("gcsh.repro_script")
local case_text = script.case_text

local function check_list(o, key, default, kind)
  local v = o[key]
  if v == nil then return default end
  if type(v) ~= "table" or #v == 0 then
    usage(string.format("sweep: %s must be a non-empty list of %s", key, kind), 3)
  end
  local least = (key == "n" or key == "ranks") and 1 or 0
  for i, x in ipairs(v) do
    local ok = kind == "integers" and math.type(x) == "integer" and x >= least
               or kind == "names" and type(x) == "string"
    if not ok then
      usage(string.format("sweep: %s[%d] = %s is not %s", key, i, tostring(x),
                          kind == "names" and "a name" or "an integer >= " .. least), 3)
    end
  end
  return v
end

-- The grid and the shrinking go through dtypes and ops in this order,
-- whatever order the options list them in, so the answer does not depend
-- on it.
local DTYPE_ORDER = { "f32", "f64", "f16", "bf16", "i32", "i64", "u32", "u8", "i8" }
local OP_ORDER = { "sum", "prod", "min", "max", "avg" }

local function in_order(list, order)
  local rank_of, out = {}, {}
  for i, x in ipairs(order) do rank_of[x] = i end
  for _, x in ipairs(list) do out[#out + 1] = x end
  table.sort(out, function(a, b) return (rank_of[a] or 99) < (rank_of[b] or 99) end)
  return out
end

local function sweep_options(o)
  if type(o) ~= "table" then usage("sweep: expects a table {candidate=, reference=, n=, ...}", 3) end
  check_keys(o, "sweep", "candidate reference n offset dtype op ranks comm out freeze rtol "
             .. "atol shrink quiet", 3)
  for _, k in ipairs { "candidate", "reference" } do
    if type(o[k]) ~= "function" then
      usage(string.format("sweep: %s must be a function(case) returning a tensor, got %s", k,
                          type(o[k])), 3)
    end
  end
  local n = check_list(o, "n", nil, "integers")
  if not n then usage("sweep: n = {lengths...} is required", 3) end
  local c = o.comm or comm.world()
  local s = {
    candidate = o.candidate, reference = o.reference, n = n, comm = c,
    offset = check_list(o, "offset", { 0 }, "integers"),
    dtype = in_order(check_list(o, "dtype", { "f32" }, "names"), DTYPE_ORDER),
    op = in_order(check_list(o, "op", { "sum" }, "names"), OP_ORDER),
    ranks = check_list(o, "ranks", nil, "integers"),
    out = o.out, freeze = o.freeze, rtol = o.rtol, atol = o.atol, shrink = o.shrink or 256,
    quiet = o.quiet,
  }
  for _, d in ipairs(s.dtype) do
    if not BYTES[d] then usage("sweep: unknown dtype '" .. d .. "'", 3) end
  end
  for _, k in ipairs(s.ranks or {}) do
    if k > c.size then
      usage(string.format("sweep: ranks[] = %d is more than the communicator's %d", k, c.size), 3)
    end
  end
  if s.out ~= nil and type(s.out) ~= "string" then usage("sweep: out must be a file name", 3) end
  return s
end

-- The communicator of a case at k ranks (ranks= given): the first k ranks
-- of the sweep's; the others sit the case out (nil).  Made once per k.
local function case_comm(s, k)
  if not s.ranks or k == s.comm.size then return s.comm end
  s.subs = s.subs or {}
  if not s.subs[k] then
    s.subs[k] = { comm = s.comm:split(s.comm.rank < k and 0 or 1) }
  end
  return s.comm.rank < k and s.subs[k].comm or nil
end

-- Whether a case's error only reports another rank's trouble (a collective
-- check naming a rank that failed, went elsewhere or never came), not this
-- rank's own: a sweep reports the rank whose error is its own.  Known by
-- what happened (gcsh.is_check_error), never by the error's words.
local function symptom(err)
  return gcsh.is_check_error(err)
end

-- Runs one case on this rank: nil when candidate matches reference, else
-- what differed (an error in either counts as a difference) and whether it
-- was another rank's trouble (symptom).
local function run_case(s, case)
  local function call(f, what)
    local ok, t = pcall(f, { n = case.n, offset = case.offset, dtype = case.dtype, op = case.op,
                             size = case.size, comm = case.comm })
    if not ok then return nil, what .. " raised: " .. tostring(t), symptom(t) end
    if getmetatable(t) == nil or getmetatable(t).__name ~= "tensor" then
      return nil, what .. " returned " .. type(t) .. ", not a tensor"
    end
    return t
  end
  local want, err, sym = call(s.reference, "reference")
  if not want then return err, sym end
  local got
  got, err, sym = call(s.candidate, "candidate")
  if not got then return err, sym end
  return repro.differ(got, want, { rtol = s.rtol, atol = s.atol })
end

-- Every rank's pass/fail on a case, through a checked collective: a rank
-- whose candidate gave up before a collective arrives here while the
-- others still wait in that collective, and the collective checks fail
-- them at once (a mismatch, or a cycle of waits).  They then come here
-- too: a few tries gather everyone.
local function gather_flags(c, failed)
  local mine, all = tensor.from({ failed and 1 or 0 }, "i32"), tensor.new(c.size, "i32")
  local err
  for _ = 1, 4 do
    local ok, e = pcall(c.allgather, c, mine, all)
    if ok then return all end
    err = e
  end
  error("sweep: the ranks could not agree on a case's verdict: " .. tostring(err), 0)
end

-- The verdict of every rank on one case: nil when all passed, else the
-- failing ranks ("0,2") and the detail of the lowest rank whose error is
-- its own (not a check naming another rank), else of the lowest failing.
local function agree_case(s, case)
  local c = s.comm
  case.comm = case_comm(s, case.size)
  local detail, sym
  if case.comm then detail, sym = run_case(s, case) end
  local flags = gather_flags(c, detail ~= nil)
  local any = false
  for r = 0, c.size - 1 do any = any or flags[r] ~= 0 end
  if not any then return nil end
  case.comm = nil
  local all = c:agree(detail and ((sym and "s" or "o") .. detail) or "")
  local own, failing, first = {}, {}, nil
  for r = 1, #all do
    if all[r] ~= "" then
      failing[#failing + 1] = r - 1
      if all[r]:sub(1, 1) == "o" then own[#own + 1] = r - 1 end
    end
  end
  local ranks = #own > 0 and own or failing
  first = all[ranks[1] + 1]:sub(2)
  return repro.ranges(ranks), first
end

-- {0,1,2,5} -> "0-2,5"
function repro.ranges(list)
  local parts, i = {}, 1
  while i <= #list do
    local j = i
    while j < #list and list[j + 1] == list[j] + 1 do j = j + 1 end
    parts[#parts + 1] = i == j and tostring(list[i]) or (list[i] .. "-" .. list[j])
    i = j + 1
  end
  return table.concat(parts, ",")
end

local function grid(s)
  local n = { table.unpack(s.n) }
  local off = { table.unpack(s.offset) }
  local ranks = { table.unpack(s.ranks or { s.comm.size }) }
  table.sort(n)
  table.sort(off)
  table.sort(ranks)
  local cases = {}
  for _, ni in ipairs(n) do
    for _, oi in ipairs(off) do
      for _, k in ipairs(ranks) do
        for _, d in ipairs(s.dtype) do
          for _, op in ipairs(s.op) do
            cases[#cases + 1] = { n = ni, offset = oi, dtype = d, op = op, size = k }
          end
        end
      end
    end
  end
  return cases
end

-- A kind of failure: its detail without the numbers ("# of # elements
-- differ" is one kind, "candidate raised: ...index #..." another).
local function kind_of(detail)
  return (detail:gsub("%-?%d+%.?%d*", "#"))
end

-- Smaller cases than f, over every axis in turn: shorter lengths (every
-- dtype and op at each), smaller offsets, dtypes and then ops earlier in
-- gcsh's order, fewer ranks (with ranks= only); the passes repeat until
-- none shrinks (a fixpoint: a length that fails only at fewer ranks is
-- found after the ranks shrank), within s.shrink tries in all.
local function position(list, x)
  for i, v in ipairs(list) do
    if v == x then return i end
  end
  return #list + 1
end

local function shrink(s, f, tried)
  local budget = s.shrink
  local function try(case)
    case.size = case.size or f.size
    if tried[case_text(case)] or budget <= 0 then return false end
    tried[case_text(case)] = true
    budget = budget - 1
    local ranks, detail = agree_case(s, case)
    if not ranks then return false end
    case.ranks, case.detail = ranks, detail
    f = case
    return true
  end
  local function each_kind(n, off, k)
    for _, d in ipairs(s.dtype) do
      for _, op in ipairs(s.op) do
        if try({ n = n, offset = off, dtype = d, op = op, size = k }) then return true end
      end
    end
    return false
  end
  local function pass()
    local before = f
    for n = 1, f.n - 1 do
      if each_kind(n, f.offset, f.size) then break end
    end
    for off = 0, f.offset - 1 do
      if try({ n = f.n, offset = off, dtype = f.dtype, op = f.op }) then break end
    end
    for i = 1, position(s.dtype, f.dtype) - 1 do
      if try({ n = f.n, offset = f.offset, dtype = s.dtype[i], op = f.op }) then break end
    end
    for i = 1, position(s.op, f.op) - 1 do
      if try({ n = f.n, offset = f.offset, dtype = f.dtype, op = s.op[i] }) then break end
    end
    for k = 1, s.ranks and f.size - 1 or 0 do
      if try({ n = f.n, offset = f.offset, dtype = f.dtype, op = f.op, size = k }) then break end
    end
    return f ~= before
  end
  while budget > 0 and pass() do end
  return f
end

-- out=: what the script needs is gathered, and the file checked, before
-- any case runs (on every rank alike: a problem is an error everywhere).
local function plan_out(s)
  if not s.out then return nil end
  local ok, plan = pcall(script.plan, s.candidate, s.reference, s.freeze)
  local problem = ok and "" or tostring(plan)
  if ok and s.comm.rank == 0 then
    local fine, why = gcsh.check_file(s.out)
    if not fine then problem = why end
  end
  local all = s.comm:agree(problem)
  for r = 1, #all do
    if all[r] ~= "" then usage("sweep: out=" .. s.out .. ": " .. all[r], 3) end
  end
  return plan
end

local function write_out(s, plan, f)
  local problem = ""
  if s.comm.rank == 0 then
    local ok, text = pcall(script.text, s.out, f, plan, s)
    if not ok then
      problem = tostring(text)
    else
      local written, why = gcsh.write_file(s.out, text)
      if not written then problem = why end
    end
  end
  local all = s.comm:agree(problem)
  for r = 1, #all do
    if all[r] ~= "" then error("sweep: out=" .. s.out .. ": " .. all[r], 3) end
  end
end

local function say_result(s, f, kinds)
  if s.quiet or s.comm.rank ~= 0 then return end
  say("sweep: %d of %d cases fail; smallest: %s on [%s]: %s", f.failed, f.cases, case_text(f),
      f.ranks, f.detail)
  for i = 2, #kinds do
    say("sweep: another kind of failure, smallest %s on [%s]: %s", case_text(kinds[i]),
        kinds[i].ranks, kinds[i].detail)
  end
end

function repro.sweep(o)
  local s = sweep_options(o)
  local plan = plan_out(s)
  local cases = grid(s)
  local smallest, failed, tried, kinds, seen = nil, 0, {}, {}, {}
  for _, case in ipairs(cases) do
    tried[case_text(case)] = true
    local ranks, detail = agree_case(s, case)
    if ranks then
      failed = failed + 1
      case.ranks, case.detail = ranks, detail
      smallest = smallest or case
      if not seen[kind_of(detail)] then
        seen[kind_of(detail)] = true
        kinds[#kinds + 1] = case
      end
    end
  end
  if not smallest then
    if not s.quiet and s.comm.rank == 0 then say("sweep: all %d cases pass", #cases) end
    return nil
  end
  local f = shrink(s, smallest, tried)
  f.failed, f.cases = failed, #cases
  kinds[1] = f -- the first kind, shrunk
  f.kinds = kinds
  say_result(s, f, kinds)
  if plan then write_out(s, plan, f) end
  f.comm = nil
  return f
end

function repro.check(case, candidate, reference, opts)
  gcsh.check_options(opts, "repro.check", "rtol atol")
  local s = { candidate = candidate, reference = reference, rtol = opts and opts.rtol,
              atol = opts and opts.atol }
  local d = run_case(s, case)
  if d then repro.fail("%s: %s", case_text(case), d) end
  return true
end

-- The standalone script of one case (the sweep's out=): its text is in
-- gcsh.repro_script.
function repro.write_script(path, case, s)
  local text = script.text(path, case, script.plan(s.candidate, s.reference, s.freeze), s)
  local ok, err = gcsh.write_file(path, text)
  if not ok then error(err, 0) end
  return path
end

return repro
