-- step.persistent(w [, {n=, offset=0, op="sum", calls=2}]): the persistent
-- all-reduce (kernel.persistent, core/kpersist.h) one step at a time, on
-- every rank of w's communicator: for each of `calls` calls on the region,
--   1 rung     the host fills ring entry call % kernel.persistent_depth, its
--              four pairs each tagged call + 1 (the last pair rings), and
--              publishes rung = call + 1;
--   2 look     the resident sees rung > done, reads the entry, and takes the
--              job only if all four pairs carry the call's tag;
--   3 run      the resident runs the job: the ll all-reduce of the region
--              (kernel.allreduce(w, {algo="ll"}), the protocol it runs);
--   4 done     the resident publishes done = call + 1: the host's p:wait()
--              returns, and the entry may be filled again.
-- The doorbell here is the stepper's own (a u32 tensor per rank, with the
-- real entries' encoding: kernel.persistent_entry / persistent_job); the
-- resident's part is played between the lines, so every step is seen.
--
--   st:next([k [, {quiet=true}]])  k steps, each printed (rank 0) as a line
--                  of what happened and a row per rank: rung, done, the
--                  entry's tags, what the resident did, the region
--   st:run([{quiet=true}])  to the end; true when every rank's region
--                  equals `calls` all-reduces (c:allreduce) of its start
--   st:reset()  st:show()  st:free()  st.step st.steps st.calls st.text
--
-- Collective: every rank makes the same calls.  A call interrupted during a
-- step leaves the stepper marked: its next call starts it again.
local D = require("gcsh.step_diagram")

local Persist = {}
Persist.__index = Persist
Persist.__name = "stepper" -- a stepper to help() and to the lessons' cleanup

local DTYPES = require("gcsh.dtypes")
local INTEGER = { i32 = true, u32 = true }
local WHAT = { "rung", "look", "run", "done" }
local OPS = { sum = true, prod = true, min = true, max = true }
-- the bell's words: rung, done, then 8 per entry (word, tag, word, tag, ...)
local RUNG, DONE, ENTRY = 0, 1, 2

-- step.lua's argument checks (errors at the caller's line), given at load
local fail, check_keys, type_name, check_kernel_dtype, check_window, left_part_way

local function read_options(w, opts)
  local fname = "step.persistent"
  check_window(fname, w)
  if opts ~= nil and type(opts) ~= "table" then fail(fname, "options must be a table, got %s", type_name(opts)) end
  opts = opts or {}
  check_keys(fname, opts, { "calls", "n", "offset", "op" })
  local function int(what, v, lo, hi)
    if math.type(v) ~= "integer" or v < lo or v > hi then
      fail(fname, "%s must be an integer %d..%d, got %s", what, lo, hi, tostring(v))
    end
    return v
  end
  local o = { op = opts.op or "sum" }
  if not OPS[o.op] then fail(fname, "op '%s' is not one of: sum, prod, min, max", tostring(o.op)) end
  o.offset = int("offset", opts.offset or 0, 0, w.n - 1)
  local most = math.min(w.n - o.offset, kernel.ll_max_bytes // DTYPES[w.dtype].size)
  o.n = int("n", opts.n or math.min(most, 8), 1, most)
  o.calls = int("calls", opts.calls or 2, 1, kernel.persistent_depth)
  check_kernel_dtype(fname, w.dtype, o.op)
  return o
end

-- ---- what a rank holds, as a row -------------------------------------------------

-- The region's first element, as the ranks whose data it holds when the
-- start was 2^r (an integer dtype), else as a number.
local function cell(x)
  local v = x.region[0]
  if not INTEGER[x.dtype] or not x.bits then return string.format("%g", v) end
  local list = {}
  for r = 0, x.k - 1 do if math.tointeger(v) and (math.tointeger(v) >> r) & 1 == 1 then list[#list + 1] = r end end
  return #list == x.k and "all" or table.concat(list, ",")
end

local function entry_words(x, call)
  local first = ENTRY + 8 * (call % kernel.persistent_depth)
  return x.bell:view(first, 8)
end

local function tags(x, call)
  local words, out = entry_words(x, call), {}
  for i = 1, 4 do out[i] = tostring(words[2 * i - 1]) end
  return table.concat(out, " ")
end

local function row(x, call, changed)
  local function mark(key, text) return text .. (changed[key] and "*" or "") end
  return string.format("  r%-4d %-6s %-6s %-13s %-14s %s", x.me, mark("rung", tostring(x.bell[RUNG])),
                       mark("done", tostring(x.bell[DONE])), mark("tags", tags(x, call)), x.resident,
                       mark("region", cell(x)))
end

-- ---- the steps -----------------------------------------------------------------------

-- Step s of the stepper: call (s - 1) // 4, part (s - 1) % 4 + 1.
local function do_step(x, s)
  local call, part = (s - 1) // 4, (s - 1) % 4 + 1
  local changed, said = {}, nil
  if part == 1 then
    local words = entry_words(x, call)
    local pairs = kernel.persistent_entry(call, { offset = x.offset, n = x.n, dtype = x.dtype, op = x.op })
    for i = 1, 4 do -- pair 3 last: storing it is what rings
      words[2 * i - 2] = pairs[i] & 0xffffffff
      words[2 * i - 1] = pairs[i] >> 32
    end
    x.bell[RUNG] = call + 1
    changed.rung, changed.tags = true, true
    x.resident = "waits"
    said = string.format("host: entry %d <- offset %d, n %d, %s %s, tag %d on all four pairs; rung %d",
                         call % kernel.persistent_depth, x.offset, x.n, x.dtype, x.op, call + 1, call + 1)
  elseif part == 2 then
    local words, pairs = entry_words(x, call), {}
    for i = 1, 4 do pairs[i] = words[2 * i - 2] | words[2 * i - 1] << 32 end
    local job = x.bell[RUNG] > x.bell[DONE] and kernel.persistent_job(call, pairs)
    x.job = job or nil
    x.resident = job and "took call " .. call or "sees no call"
    said = job and string.format("resident: rung %d > done %d; entry %d carries tag %d on every pair: "
                                 .. "it takes the job", x.bell[RUNG], x.bell[DONE],
                                 call % kernel.persistent_depth, call + 1)
           or "resident: no entry carries the call's tag on every pair: it waits"
  elseif part == 3 then
    if x.job then
      kernel.allreduce(x.w, { algo = "ll", offset = x.job.offset, n = x.job.n, op = x.job.op })
      x.resident = "ran call " .. call
      changed.region = true
    end
    said = string.format("resident: the ll all-reduce of elements %d..%d (%s), no launch",
                         x.offset, x.offset + x.n - 1, x.op)
  else
    x.bell[DONE] = call + 1
    x.resident = "waits"
    changed.done = true
    said = string.format("resident: done %d; the host's p:wait() returns, entry %d is free again",
                         call + 1, call % kernel.persistent_depth)
  end
  x.c:barrier() -- every rank's step is over before any rank is read
  return string.format("%s: step %d of %d (call %d: %s)", x.title, s, x.steps, call, WHAT[part]),
         said, row(x, call, changed)
end

-- Every rank's row, in rank order (collective); rank 0 prints the lines.
local function say(x, head, rows_of, quiet)
  local all = x.c:agree(rows_of)
  local lines = {}
  for _, h in ipairs(head) do lines[#lines + 1] = h end
  if rows_of ~= "" then
    lines[#lines + 1] = "        rung   done   entry tags    resident       region"
    for _, r in ipairs(all) do lines[#lines + 1] = r end
  end
  local text = table.concat(D.fit(lines), "\n")
  if x.me == 0 and not quiet then print(text) end
  return text
end

local function restore(x)
  x.bell:fill(0)
  x.region:copy(x.init)
  x.step, x.job, x.resident = 0, nil, "waits"
  x.c:barrier()
end

-- A checked collective at the start of every call; an interrupted call's
-- stepper starts again on every rank.
local function begin(self, fname)
  local x = self._
  if x.freed then error(fname .. ": this stepper was freed", 3) end
  if left_part_way(x) then
    restore(x)
    x.dirty = false
    self.step = 0
    say(x, { "step: the last call was interrupted; the doorbell and the data are reset" }, "")
  end
end

local function check_quiet(fname, opts)
  if opts ~= nil and type(opts) ~= "table" then fail(fname, "options must be a table, got %s", type_name(opts)) end
  check_keys(fname, opts or {}, { "quiet" })
  return (opts or {}).quiet
end

function Persist:next(k, opts)
  local fname = "next"
  if k ~= nil and (math.type(k) ~= "integer" or k < 0) then
    fail(fname, "k (steps) must be an integer 0..%d, got %s", math.maxinteger, tostring(k))
  end
  local quiet = check_quiet(fname, opts)
  begin(self, fname)
  local x = self._
  k = k or 1
  if x.step >= x.steps and k > 0 then
    self.text = say(x, { string.format("%s: at step %d of %d already (st:reset() starts again)",
                                       x.title, x.step, x.steps) }, "", quiet)
    return
  end
  local texts = {}
  for s = x.step + 1, math.min(x.step + k, x.steps) do
    x.dirty = true
    local head, said, r = do_step(x, s)
    x.step, self.step = s, s
    x.dirty = false
    texts[#texts + 1] = say(x, { head, "  " .. said }, r, quiet)
  end
  if #texts > 0 then self.text = table.concat(texts, "\n") end
end

function Persist:run(opts)
  local quiet = check_quiet("run", opts)
  begin(self, "run")
  local x = self._
  self:next(x.steps - x.step, { quiet = true })
  local ok
  if INTEGER[x.dtype] then ok = x.region:equal(x.ref) else ok = x.region:allclose(x.ref, 1e-3, 1e-3) end
  local bad = x.c:agree(ok and "" or tostring(x.me))
  local wrong = {}
  for _, r in ipairs(bad) do if r ~= "" then wrong[#wrong + 1] = "r" .. r end end
  local line = #wrong == 0
    and string.format("result: every rank's region equals %d c:allreduce calls", x.calls)
    or "result: WRONG on " .. table.concat(wrong, ", ")
  self.text = line
  if x.me == 0 and not quiet then print(line) end
  return #wrong == 0
end

function Persist:reset()
  begin(self, "reset")
  local x = self._
  restore(x)
  self.step = 0
  self.text = say(x, { string.format("%s: back at step 0 of %d", x.title, x.steps) }, row(x, 0, {}))
end

function Persist:show()
  begin(self, "show")
  local x = self._
  local call = math.max(0, (x.step - 1) // 4)
  self.text = say(x, { string.format("%s: at step %d of %d", x.title, x.step, x.steps) }, row(x, call, {}))
end

function Persist:free()
  local x = self._
  if x.freed then return end
  x.freed = true
  for _, t in ipairs({ x.bell, x.init, x.ref }) do t:free() end
end
Persist.__close = Persist.free

function Persist:__tostring()
  local x = self._
  return string.format("stepper(%s, step %d of %d%s)", x.title, x.step, x.steps, x.freed and ", freed" or "")
end

local function new(w, opts)
  local o = read_options(w, opts)
  local c = w.comm
  local x = {
    w = w, c = c, k = w.size, me = w.rank, dtype = w.dtype, op = o.op, offset = o.offset, n = o.n,
    calls = o.calls, steps = 4 * o.calls, step = 0, resident = "waits", dirty = false,
  }
  x.region = w:tensor():view(o.offset, o.n)
  x.init = tensor.new(o.n, w.dtype):copy(x.region)
  x.bell = tensor.new(ENTRY + 8 * kernel.persistent_depth, "u32"):fill(0)
  -- cells name ranks when every rank started with 2^rank (as the lessons do)
  local start = x.region[0]
  local all = c:agree(tostring(start == 1 << x.me))
  x.bits = true
  for _, b in ipairs(all) do x.bits = x.bits and b == "true" end
  x.ref = tensor.new(o.n, w.dtype):copy(x.init)
  for _ = 1, o.calls do c:allreduce(x.ref, o.op) end
  x.title = string.format("persistent all-reduce of %d %s (%s) on %d rank%s", o.n, w.dtype, o.op,
                          x.k, x.k == 1 and "" or "s")
  return setmetatable({ _ = x, step = 0, steps = x.steps, calls = o.calls, algo = "ll", coll = "persistent",
                        window = w }, Persist)
end

return function(helpers)
  fail, check_keys = helpers.fail, helpers.check_keys
  type_name, check_kernel_dtype = helpers.type_name, helpers.check_kernel_dtype
  check_window, left_part_way = helpers.check_window, helpers.left_part_way
  return new
end
