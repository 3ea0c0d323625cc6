-- gcsh.repro: what reproducer scripts share (lua/examples/*.lua), and the
-- differential sweep.  A global `repro` on every rank (prelude.lua).
--
-- The reproducer convention is git bisect run's: without arguments a script
-- runs the correct pattern and exits 0; with --bug it runs the buggy one,
-- says what went wrong and exits 1; it exits 125 when it cannot test here
-- (bisect skips the commit) and 128 on a usage error (bisect stops).  gcsh
-- itself exits 125 on a harness error: a missing script, a syntax error, a
-- missing module, a call of a function that does not exist.
--
--   local opt = repro.args()          {bug = true|false}; an unknown argument: usage, exit 128
--   repro.need{ranks = 2, gpu = true} exit 125 (with the reason) below 2 ranks, or
--                                     without the cuda backend
--   repro.fail(fmt, ...)              print what went wrong, exit 1
--   repro.skip(fmt, ...)              print why this cannot be tested here, exit 125
--   repro.abort(fmt, ...)             print why the bisect must stop, exit 128
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
--                      dtype = {"f32"}, op = {"sum"}, comm = c, out = FILE,
--                      rtol =, atol =, shrink = 64, quiet = false}
--     Calls candidate(case) and reference(case) for every case {n=, offset=,
--     dtype=, op=} of the grid (smallest n first, then offset, then the
--     dtypes and ops in the order given) and compares the tensors they return,
--     on every rank; the ranks agree on each case's verdict through c:agree
--     (collective: every rank of c calls sweep with the same grid).  The
--     smallest failing case is then shrunk: smaller lengths than the grid's
--     (1, 2, ... up to `shrink` of them), then smaller offsets.  Returns nil
--     when every case passes, else the case with `detail` (what differed, on
--     the lowest failing rank), `ranks` (the failing ranks, "0,2-3") and
--     `failed` / `cases` (counts over the grid).  With out=FILE, rank 0
--     writes a standalone script that reproduces just that case.
--   repro.check(case, candidate, reference)   one case (the script above uses it)
local repro = {}

local BYTES = { f64 = 8, f32 = 4, f16 = 2, bf16 = 2, i64 = 8, i32 = 4, u32 = 4, u8 = 1, i8 = 1 }
local FLOAT = { f64 = true, f32 = true, f16 = true, bf16 = true }
-- allclose's tolerances per dtype: a few units in the last place of its mantissa.
local RTOL = { f64 = 1e-12, f32 = 1e-5, f16 = 2e-3, bf16 = 1.6e-2 }

-- The size of one element of dtype, in bytes.
function repro.bytes(dtype)
  return BYTES[dtype] or error("unknown dtype '" .. tostring(dtype) .. "'", 2)
end

-- ---- the reproducer convention -------------------------------------------

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
  if type(req) ~= "table" then error("need: expects a table {ranks=, gpu=}", 2) end
  for k in pairs(req) do
    if k ~= "ranks" and k ~= "gpu" then
      error(string.format("need: unknown requirement '%s' (valid: ranks gpu)", tostring(k)), 2)
    end
  end
  if req.ranks ~= nil and math.type(req.ranks) ~= "integer" then
    error("need: ranks must be an integer, got " .. tostring(req.ranks), 2)
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

local function value_text(v, dtype)
  if FLOAT[dtype] then return string.format("%.7g", v) end
  return string.format("%d", v)
end

-- What differs between tensors got and want, or nil.  opts: rtol, atol.
function repro.differ(got, want, opts)
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

local function check_list(o, key, default, kind)
  local v = o[key]
  if v == nil then return default end
  if type(v) ~= "table" or #v == 0 then
    error(string.format("sweep: %s must be a non-empty list of %s", key, kind), 3)
  end
  for i, x in ipairs(v) do
    local ok = kind == "integers" and math.type(x) == "integer" and x >= (key == "n" and 1 or 0)
               or kind == "names" and type(x) == "string"
    if not ok then
      error(string.format("sweep: %s[%d] = %s is not %s", key, i, tostring(x),
                          key == "n" and "an integer >= 1" or kind == "integers"
                          and "an integer >= 0" or "a name"), 3)
    end
  end
  return v
end

local KNOWN = { candidate = 1, reference = 1, n = 1, offset = 1, dtype = 1, op = 1, comm = 1,
                out = 1, rtol = 1, atol = 1, shrink = 1, quiet = 1 }

local function sweep_options(o)
  if type(o) ~= "table" then error("sweep: expects a table {candidate=, reference=, n=, ...}", 3) end
  for k in pairs(o) do
    if not KNOWN[k] then
      error(string.format("sweep: unknown option '%s' (valid: candidate reference n offset "
                          .. "dtype op comm out rtol atol shrink quiet)", tostring(k)), 3)
    end
  end
  for _, k in ipairs { "candidate", "reference" } do
    if type(o[k]) ~= "function" then
      error(string.format("sweep: %s must be a function(case) returning a tensor, got %s", k,
                          type(o[k])), 3)
    end
  end
  local n = check_list(o, "n", nil, "integers")
  if not n then error("sweep: n = {lengths...} is required", 3) end
  local s = {
    candidate = o.candidate, reference = o.reference, n = n,
    offset = check_list(o, "offset", { 0 }, "integers"),
    dtype = check_list(o, "dtype", { "f32" }, "names"),
    op = check_list(o, "op", { "sum" }, "names"),
    comm = o.comm, out = o.out, rtol = o.rtol, atol = o.atol,
    shrink = o.shrink or 64, quiet = o.quiet,
  }
  for _, d in ipairs(s.dtype) do
    if not BYTES[d] then error("sweep: unknown dtype '" .. d .. "'", 3) end
  end
  if s.out ~= nil and type(s.out) ~= "string" then error("sweep: out must be a file name", 3) end
  return s
end

-- Runs one case on this rank: nil when candidate matches reference, else
-- what differed (an error in either counts as a difference).
local function run_case(s, case)
  local function call(f, what)
    local ok, t = pcall(f, { n = case.n, offset = case.offset, dtype = case.dtype, op = case.op })
    if not ok then return nil, what .. " raised: " .. tostring(t) end
    if getmetatable(t) == nil or getmetatable(t).__name ~= "tensor" then
      return nil, what .. " returned " .. type(t) .. ", not a tensor"
    end
    return t
  end
  local want, err = call(s.reference, "reference")
  if not want then return err end
  local got
  got, err = call(s.candidate, "candidate")
  if not got then return err end
  return repro.differ(got, want, s)
end

local function case_text(case)
  return string.format("n=%d offset=%d %s %s", case.n, case.offset, case.dtype, case.op)
end

-- The verdict of every rank on one case: nil when all passed, else the
-- failing ranks ("0,2") and the lowest failing rank's detail.
local function agree_case(s, c, case)
  local detail = run_case(s, case)
  local all = c:agree(detail or "")
  local ranks, first = {}, nil
  for r = 1, #all do
    if all[r] ~= "" then
      ranks[#ranks + 1] = r - 1
      first = first or all[r]
    end
  end
  if #ranks == 0 then return nil end
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
  table.sort(n)
  table.sort(off)
  local cases = {}
  for _, ni in ipairs(n) do
    for _, oi in ipairs(off) do
      for _, d in ipairs(s.dtype) do
        for _, op in ipairs(s.op) do
          cases[#cases + 1] = { n = ni, offset = oi, dtype = d, op = op }
        end
      end
    end
  end
  return cases
end

-- Smaller lengths, then smaller offsets, than the failing case f (those
-- the grid did not try); returns the smallest that still fails.
local function shrink(s, c, f, tried)
  local budget = s.shrink
  local function try(case)
    if tried[case_text(case)] or budget <= 0 then return false end
    budget = budget - 1
    local ranks, detail = agree_case(s, c, case)
    if not ranks then return false end
    case.ranks, case.detail = ranks, detail
    f = case
    return true
  end
  for n = 1, f.n - 1 do
    if try({ n = n, offset = f.offset, dtype = f.dtype, op = f.op }) then break end
  end
  for off = 0, f.offset - 1 do
    if try({ n = f.n, offset = off, dtype = f.dtype, op = f.op }) then break end
  end
  return f
end

function repro.sweep(o)
  local s = sweep_options(o)
  local c = s.comm or comm.world()
  local cases = grid(s)
  local smallest, failed, tried = nil, 0, {}
  for _, case in ipairs(cases) do
    tried[case_text(case)] = true
    local ranks, detail = agree_case(s, c, case)
    if ranks then
      failed = failed + 1
      if not smallest then
        smallest = case; case.ranks = ranks; case.detail = detail
      end
    end
  end
  if not smallest then
    if not s.quiet and c.rank == 0 then say("sweep: all %d cases pass", #cases) end
    return nil
  end
  local f = shrink(s, c, smallest, tried)
  f.failed, f.cases = failed, #cases
  if not s.quiet and c.rank == 0 then
    say("sweep: %d of %d cases fail; smallest: %s on [%s]: %s", failed, #cases, case_text(f),
        f.ranks, f.detail)
  end
  if s.out then
    local ok, err = true, nil
    if c.rank == 0 then ok, err = pcall(repro.write_script, s.out, f, s) end
    local all = c:agree(ok and "" or tostring(err))
    for r = 1, #all do
      if all[r] ~= "" then error("sweep: out=" .. s.out .. ": " .. all[r], 2) end
    end
  end
  return f
end

function repro.check(case, candidate, reference, opts)
  local s = { candidate = candidate, reference = reference, rtol = opts and opts.rtol,
              atol = opts and opts.atol }
  local d = run_case(s, case)
  if d then repro.fail("%s: %s", case_text(case), d) end
  return true
end

-- ---- the standalone script of one case ----------------------------------

-- The source text of function f: the lines it was defined on, cut to the
-- one function expression they hold.
local function function_text(f, what)
  local info = debug.getinfo(f, "S")
  if info.what ~= "Lua" or info.source:sub(1, 1) ~= "@" then
    error(string.format("%s was not defined in a file (%s): its source is not available; "
                        .. "define it in a script", what, info.short_src), 0)
  end
  local lines, i = {}, 0
  local fh = io.open(info.source:sub(2), "r")
  if not fh then error(what .. ": cannot read " .. info.source:sub(2), 0) end
  for line in fh:lines() do
    i = i + 1
    if i >= info.linedefined and i <= info.lastlinedefined then lines[#lines + 1] = line end
  end
  fh:close()
  local text = table.concat(lines, "\n")
  -- the function expression: from a 'function' keyword to an 'end' keyword
  -- that make one loadable expression (a name after 'function' is dropped)
  local starts, ends = {}, {}
  for p in text:gmatch("()function%f[^%w_]") do starts[#starts + 1] = p end
  for p in text:gmatch("%f[%w_]end()%f[^%w_]") do ends[#ends + 1] = p end
  for _, a in ipairs(starts) do
    for k = #ends, 1, -1 do
      local body = text:sub(a, ends[k] - 1)
      body = body:gsub("^function%s+[%w_%.]+%s*%(", "function(", 1)
      if load("return " .. body, "=text", "t") then return body end
    end
  end
  error(what .. ": cannot find its function text in " .. info.short_src, 0)
end

local function literal(v)
  local t = type(v)
  if t == "number" and math.type(v) == "integer" then return string.format("%d", v) end
  if t == "number" then return string.format("%.17g", v) end
  if t == "string" or t == "boolean" or t == "nil" then return string.format("%q", v) end
  if t == "table" then
    local parts = {}
    for k, x in pairs(v) do
      parts[#parts + 1] = "[" .. literal(k) .. "] = " .. literal(x)
    end
    table.sort(parts)
    return "{" .. table.concat(parts, ", ") .. "}"
  end
  error("a " .. t, 0)
end

-- Collects f's upvalues (and theirs) into decl: name -> text, in order.
local function collect(f, what, decl, seen)
  for i = 1, math.huge do
    local name, v = debug.getupvalue(f, i)
    if not name then break end
    local id = debug.upvalueid(f, i)
    if name == "_ENV" or seen[id] then goto continue end
    if decl.ids[name] and decl.ids[name] ~= id then
      error(string.format("%s: two different upvalues are named '%s'", what, name), 0)
    end
    seen[id] = true
    decl.ids[name] = id
    decl.order[#decl.order + 1] = name
    if type(v) == "function" then
      decl.text[name] = function_text(v, "upvalue '" .. name .. "' of " .. what)
      collect(v, "upvalue '" .. name .. "'", decl, seen)
    elseif v ~= nil and _G[name] == v then
      decl.text[name] = name -- a local alias of a global
    else
      local ok, lit = pcall(literal, v)
      if not ok then
        error(string.format("%s uses upvalue '%s' (%s), which a script cannot rebuild: "
                            .. "make it inside the function or pass it through the case",
                            what, name, lit), 0)
      end
      decl.text[name] = lit
    end
    ::continue::
  end
end

function repro.write_script(path, case, s)
  local decl = { ids = {}, order = {}, text = {} }
  local seen = {}
  local cand = function_text(s.candidate, "candidate")
  local ref = function_text(s.reference, "reference")
  collect(s.candidate, "candidate", decl, seen)
  collect(s.reference, "reference", decl, seen)
  local out = {
    "-- Written by repro.sweep (gcsh " .. gcsh.version .. ", backend " .. gcsh.backend .. ", "
      .. size .. " ranks): the smallest case",
    "-- where candidate differs from reference: " .. case_text(case) .. " on ranks " .. case.ranks
      .. ".",
    "--   " .. case.detail,
    "-- Run it: gcsh -n " .. size .. " " .. path
      .. "   (exit 0: candidate matches; 1: it does not; 125: wrong rank count)",
    "if size ~= " .. size .. " then",
    "  if rank == 0 then print(\"found at " .. size .. " ranks: run gcsh -n " .. size .. " "
      .. path .. "\") end",
    "  os.exit(125)",
    "end",
    "local case = {n = " .. case.n .. ", offset = " .. case.offset .. ", dtype = "
      .. string.format("%q", case.dtype) .. ", op = " .. string.format("%q", case.op) .. "}",
  }
  if #decl.order > 0 then
    out[#out + 1] = "local " .. table.concat(decl.order, ", ")
    for _, name in ipairs(decl.order) do
      out[#out + 1] = name .. " = " .. decl.text[name]
    end
  end
  out[#out + 1] = "local candidate = " .. cand
  out[#out + 1] = "local reference = " .. ref
  out[#out + 1] = "repro.check(case, candidate, reference, " .. literal({ rtol = s.rtol, atol = s.atol })
    .. ")"
  out[#out + 1] = "print(\"" .. case_text(case) .. ": candidate matches reference\")"
  local text = table.concat(out, "\n") .. "\n"
  assert(load(text, "=" .. path, "t"))
  local fh, err = io.open(path, "w")
  if not fh then error(err, 0) end
  fh:write(text)
  fh:close()
  return path
end

return repro
