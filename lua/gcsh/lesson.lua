-- Checkpoints, exercise checks and housekeeping for the lessons in
-- lua/tutorial/ (each a plain script too: `gcsh -n 4 lua/tutorial/08-ring.lua`).
--
--   lesson = require "gcsh.lesson"
--
-- Checkpoints (the lesson checks itself; each rank its own data):
--   lesson.check(ok, what)         "checkpoint: what" when ok, else one line,
--                                  "checkpoint FAILED at FILE:LINE: what"
--   lesson.expect(t, want, what)   every element of tensor t equals want (a
--                                  number, a 0-based function i -> v, or a
--                                  tensor); floats within 1e-3
--
-- Exercises (collective: every rank calls them, and every rank raises the
-- same one line, so a wrong answer is one folded line, without a traceback):
--   lesson.call(fn, name, ...)     runs the learner's function fn(...) on
--                                  every rank; a value that is no function,
--                                  or an error on some rank, is "not yet"
--                                  (the error itself keeps its traceback on
--                                  the ranks where it happened); returns
--                                  fn's results
--   lesson.call_each(fn, name, calls)
--                                  fn(table.unpack(calls[i])) for every i,
--                                  as one lesson.call: a list of the first
--                                  results
--   lesson.grade(t, want, what)    a tensor answer: "right: what", or "not
--                                  yet: what: on rank 0, [3] is 5, want 6
--                                  (...)" naming a wrong element, its dtype,
--                                  how many are wrong and on which ranks
--   lesson.answer(name, got, want, right)
--                                  a value answer: "right: RIGHT", or "not
--                                  yet: NAME is "6" (a string), want 6 (a
--                                  number)"
--
-- Text:
--   lesson.wrap(text [, width])    text broken at spaces into lines of at
--                                  most width (72: 80 columns after the
--                                  shell's "[0-7] " and a margin)
--
-- Rank counts and figures:
--   lesson.needs(n)                says (once) when the lesson needs more
--                                  ranks than it has; true when it has them
--   lesson.measured_on()           where a figure this rank measures comes
--                                  from, as a phrase: the CPUs (host), the
--                                  GPU, or a GPU shared with other ranks
--   lesson.shared_gpu()            true when the backend's info (gpu_shared) says the
--                                  GPU is shared (gcsh -n 4 --share-gpu)
--
-- The shell's lesson runner (src/shell/lesson.c) calls, on every rank:
--   lesson.track_begin() / lesson.track_end()   around a part's code: the
--                                  windows, signals, steppers, multicast
--                                  objects and transfers it left in globals
--                                  are the lesson's
--   lesson.free_made()             frees them (collective, newest first,
--                                  users before what they use) and clears
--                                  their globals; prints what it freed
local M = {}

-- What the checks use, captured when this module loads: a learner's global
-- of the same name (size = 3, print = nil) cannot change a verdict.
local rank, size, print, xpcall, pcall = rank, size, print, xpcall, pcall
local world = comm.world
local function comm_world() return world() end

local SHOWN = 6
-- A feedback line's width: 80 columns after the shell's tag ("[0-2,4-7] ")
local WIDTH = 70
local FLOAT = {} -- the float dtypes (C's one list of dtype facts)
for name, d in pairs(require("gcsh.dtypes")) do FLOAT[name] = d.float or nil end

-- ---- errors without a traceback ------------------------------------------------

-- A message raised as an error object with a text of its own: the shell
-- prints its text, and no traceback (as lua.c does).
local Feedback = { __tostring = function(e) return e.text end }

local function raise(text)
  error(setmetatable({ text = M.wrap(text, WIDTH) }, Feedback), 0)
end

-- gcsh's own Lua: the files under the folder this module was loaded from
-- (its gcsh/ and tutorial/), and the shell's housekeeping chunk.
local OWN_DIR = debug.getinfo(1, "S").source:match("^@(.*/)gcsh/[^/]*$")

local function own_source(source)
  if source == "=(lesson)" or source == "=[C]" then return true end
  return OWN_DIR ~= nil and source:sub(1, #OWN_DIR + 1) == "@" .. OWN_DIR
end

-- "08-ring.lua:23", "stdin:1": the innermost line, from level on, of code
-- that is not gcsh's own machinery (a tail call leaves no line: skipped).
local function caller_line(level)
  for l = level + 1, 200 do
    local info = debug.getinfo(l, "Sl")
    if not info then break end
    if info.what ~= "C" and not own_source(info.source) and (info.currentline or -1) > 0 then
      return info.short_src:match("[^/]*$") .. ":" .. info.currentline
    end
  end
  return "the prompt"
end

-- ---- values as text -------------------------------------------------------------

local function format_number(v)
  if math.type(v) == "float" then return string.format("%.7g", v) end
  return tostring(v)
end

local function type_name(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and type(mt.__name) == "string" and mt.__name or type(v)
end

-- A value as a learner would recognise it: 6, "6", nil, a tensor(i32, 8).
local function show_value(v)
  local kind = type(v)
  if kind == "string" then return string.format("%q", v) end
  if kind == "number" then return format_number(v) end
  if kind == "nil" or kind == "boolean" then return tostring(v) end
  if type_name(v) == "tensor" then return string.format("a tensor(%s, %d)", v.dtype, #v) end
  return "a " .. type_name(v)
end

-- "(a string)", "(a number)", "" for nil and tensors (their text says it).
local function kind_note(v)
  local kind = type_name(v)
  if kind == "nil" or kind == "tensor" then return "" end
  local article = kind:match("^[aeiou]") and "an" or "a"
  return string.format(" (%s %s)", article, kind)
end

-- ---- every rank's verdict, each its own line -------------------------------------------
--
-- Each rank raises its own verdict with its own numbers; the shell folds
-- the ranks whose lines are identical, so a rank-dependent mistake shows
-- one true line per group of ranks that got the same thing wrong.

-- "0-2,5" for a list of ranks.
local ranges = require("gcsh.repro").ranges

-- Every rank's verdict string ("" for right), gathered on every rank.
local function verdicts(mine)
  if size == 1 then return { mine } end
  return comm_world():agree(mine)
end

-- The ranks whose verdict is not "".
local function wrong_ranks(all)
  local ranks = {}
  for r, v in ipairs(all) do
    if v ~= "" then ranks[#ranks + 1] = r - 1 end
  end
  return ranks
end

-- This rank's line, given every rank's verdict: its own when wrong here;
-- on a rank that is right while others are not, where they are.
local function verdict_line(all, head, right_here)
  local ranks = wrong_ranks(all)
  if #ranks == 0 then return nil end
  local mine = all[rank + 1]
  if mine ~= "" then return "not yet: " .. head .. mine end
  return string.format("not yet: %s%s, wrong on rank%s%s", head, right_here,
                       #ranks > 1 and "s " or " ", ranges(ranks))
end

-- ---- checkpoints -------------------------------------------------------------------

local function want_at(want, i)
  local kind = type(want)
  if kind == "number" then return want end
  if kind == "function" then return want(i) end
  return want[i] -- a tensor
end

local function same(a, b, float)
  if float then return math.abs(a - b) <= 1e-3 * math.max(1, math.abs(b)) end
  return a == b
end

-- The wrong elements of t: a list of {i, got, want} (at most SHOWN), and
-- how many there are.
local function wrong_elements(t, want)
  local float, got = FLOAT[t.dtype], t:totable()
  local list, count = {}, 0
  for i = 0, #t - 1 do
    local w = want_at(want, i)
    if not same(got[i + 1], w, float) then
      count = count + 1
      if #list < SHOWN then list[#list + 1] = { i, got[i + 1], w } end
    end
  end
  return list, count
end

local function elements_text(list)
  local parts = {}
  for _, e in ipairs(list) do
    parts[#parts + 1] = string.format("[%d] is %s, want %s", e[1], format_number(e[2]), format_number(e[3]))
  end
  return table.concat(parts, "; ")
end

function M.check(ok, what)
  if not ok then raise("checkpoint FAILED at " .. caller_line(2) .. ": " .. what) end
  print("checkpoint: " .. what)
end

function M.expect(t, want, what)
  local list, count = wrong_elements(t, want)
  if count > 0 then
    local more = count > #list and string.format(" (%d of %d wrong)", count, #t) or ""
    raise(string.format("checkpoint FAILED at %s: %s: %s%s", caller_line(2), what,
                        elements_text(list), more))
  end
  print("checkpoint: " .. what)
end

-- ---- exercises -------------------------------------------------------------------------

-- An error that only reports another rank's trouble: gcsh's collective
-- check's own error (another rank called something else, or left), known
-- by what happened, not by its words (a learner's error may quote them).
local function collective_symptom(e)
  return gcsh.is_check_error(e)
end

-- xpcall's handler for the learner's function: the error as one line at the
-- innermost line of the learner's own code (stdin, their file, the lesson's
-- solution), never a frame of gcsh's own Lua; and whether it is a collective
-- check's error (then it may be another rank's doing).
local function attendee_error(e)
  if getmetatable(e) == Feedback then return { text = e.text, feedback = true } end
  local text = tostring(e)
  local where, called
  for level = 2, 200 do
    local info = debug.getinfo(level, "Slnf")
    if not info or info.func == xpcall then break end
    if level == 2 and info.what == "C" then called = info.name end
    if info.what ~= "C" and not own_source(info.source) then
      where = info.short_src .. ":" .. (info.currentline or 0)
      break
    end
  end
  -- a position in gcsh's own files says nothing to the learner: theirs instead
  local file, rest = text:match("^([^\n]-):%d+: (.*)$")
  if file and (file:find("/gcsh/[%w_]+%.lua$") or file:find("^%.%.%.")) then text = rest end
  if where and text:sub(1, #where + 2) ~= where .. ": " then text = where .. ": " .. text end
  return { text = text, collective = collective_symptom(e), called = called }
end

-- Every rank's {status, text} after the learner's call, gathered on every
-- rank.  A collective the learner's code made on some ranks meets this
-- exchange on the others: gcsh's check fails it on every rank alike, and
-- every rank tries again (by then none is in the learner's code).
local SEP = "\1"

local function outcomes(mine)
  local wire = table.concat({ mine.status, mine.called or "", mine.text or "" }, SEP)
  local all = { wire }
  if size > 1 then
    local c, ok = comm_world(), false
    for _ = 1, 3 do
      ok, all = pcall(c.agree, c, wire)
      if ok then break end
      if not collective_symptom(all) then error(all, 0) end
    end
    if not ok then error("the exercise's check could not gather every rank's outcome", 0) end
  end
  local out = {}
  for r, w in ipairs(all) do
    local status, called, text = w:match("^(.-)\1(.-)\1(.*)$")
    out[r] = { status = status, called = called ~= "" and called or nil, text = text }
  end
  return out
end

local function ranks_with(all, status)
  local list = {}
  for r, o in ipairs(all) do if o.status == status then list[#list + 1] = r - 1 end end
  return list
end

local function plural(list) return #list > 1 and "s " or " " end

-- This rank's line when the learner's call failed somewhere: a rank whose
-- own code raised an error shows it; a collective only some ranks made is
-- shown where it was made; every other rank names where to look.
local function failure_text(name, all, me)
  local failed = ranks_with(all, "error")
  local mine = all[me + 1]
  if #failed > 0 then
    if mine.status == "error" then return "not yet: " .. name .. " failed: " .. mine.text end
    return string.format("not yet: %s failed on rank%s%s (its error is shown there)", name,
                         plural(failed), ranges(failed))
  end
  local stuck, returned = ranks_with(all, "collective"), ranks_with(all, "ok")
  if #returned == 0 then return "not yet: " .. name .. " failed: " .. mine.text end
  if mine.status == "collective" then
    return string.format("not yet: %s: %s here; rank%s%s had returned from %s",
                         mine.text:match("^([^\n]-:%d+): ") or "?", mine.called or "a collective",
                         plural(returned), ranges(returned), name)
  end
  return string.format("not yet: %s called a collective on rank%s%s only (shown there)", name,
                       plural(stuck), ranges(stuck))
end

function M.call(fn, name, ...)
  local mine = { status = "ok" }
  if type(fn) ~= "function" then
    mine = { status = "nofn", text = string.format(
               "not yet: you passed %s%s, want a function (define %s first)", show_value(fn),
               kind_note(fn), name) }
  end
  local res = { n = 0 }
  if mine.status == "ok" then
    res = table.pack(xpcall(fn, attendee_error, ...))
    if not res[1] then
      local e = res[2]
      mine = { status = e.feedback and "error" or (e.collective and "collective" or "error"),
               text = e.text, called = e.called }
    end
  end
  local all = outcomes(mine)
  local bad = false
  for _, o in ipairs(all) do bad = bad or o.status ~= "ok" end
  if not bad then return table.unpack(res, 2, res.n) end
  if mine.status == "nofn" then raise(mine.text) end
  local nofn = ranks_with(all, "nofn")
  if #nofn > 0 then
    raise(string.format("not yet: %s is no function on rank%s%s (shown there)", name,
                        plural(nofn), ranges(nofn)))
  end
  raise(failure_text(name, all, rank))
end

function M.call_each(fn, name, calls)
  if type(fn) ~= "function" then return M.call(fn, name) end
  return M.call(function()
    local out = {}
    for i, args in ipairs(calls) do out[i] = fn(table.unpack(args)) end
    return out
  end, name)
end

-- This rank's verdict on a tensor answer: "" when right.  n: how many
-- elements the answer must have (a want that is a tensor says it itself;
-- a function or a number does not, so a shorter or longer answer would
-- pass on the elements it has).
local function grade_verdict(t, want, n)
  if type_name(t) ~= "tensor" then
    return string.format("your answer is %s%s, want a tensor", show_value(t), kind_note(t))
  end
  n = type_name(want) == "tensor" and #want or n
  if n and n ~= #t then
    return string.format("your tensor has %d element%s, want %d", #t, #t == 1 and "" or "s", n)
  end
  local list, count = wrong_elements(t, want)
  if count == 0 then return "" end
  local e = list[1]
  return string.format("[%d] is %s, want %s (%d of %d %s elements wrong)", e[1], format_number(e[2]),
                       format_number(e[3]), count, #t, t.dtype)
end

function M.grade(t, want, what, n)
  if n ~= nil and math.type(n) ~= "integer" then
    error(string.format("lesson.grade: n (the answer's element count) must be an integer, got %s",
                        show_value(n) .. kind_note(n)), 2)
  end
  local line = verdict_line(verdicts(grade_verdict(t, want, n)), what .. ": ", "right here")
  if line then raise(line) end
  print("right: " .. what)
  return true
end

local function same_value(got, want)
  if type(got) ~= type(want) then return false end
  if type(want) == "number" and math.type(want) == "float" then
    return math.abs(got - want) <= 1e-9 * math.max(1, math.abs(want))
  end
  return got == want
end

function M.answer(name, got, want, right)
  local mine = ""
  if not same_value(got, want) then
    mine = string.format("%s is %s%s, want %s%s", name, show_value(got), kind_note(got),
                         show_value(want), kind_note(want))
  end
  local line = verdict_line(verdicts(mine), "", name .. " is right here")
  if line then raise(line) end
  print("right: " .. right)
  return true
end

-- ---- text ------------------------------------------------------------------------------

function M.wrap(text, width)
  width = width or 72
  local lines = {}
  for para in (tostring(text) .. "\n"):gmatch("(.-)\n") do
    local line = ""
    for word in para:gmatch("%S+") do
      if line ~= "" and #line + 1 + #word > width then
        lines[#lines + 1] = line
        line = "  " .. word
      else
        line = line == "" and word or line .. " " .. word
      end
    end
    lines[#lines + 1] = line
  end
  return table.concat(lines, "\n")
end

-- ---- rank counts and figures ------------------------------------------------------------

function M.needs(n)
  if size >= n then return true end
  -- two lines: with its rank tag, one would pass 80 columns
  print(string.format("note: this lesson needs %d ranks or more to show what it teaches;\n"
                      .. "  with %d it runs what it can (start gcsh -n 4)", n, size))
  return false
end

-- The backend's info field gpu_shared ("no", or "cuda:0 with ranks 0-3"
-- with --share-gpu; absent on the host backend), read defensively: a
-- missing field, or one that says no, is not shared.
function M.shared_gpu()
  local ok, info = pcall(gcsh.info)
  if not ok or type(info) ~= "table" then return false end
  local v = info.gpu_shared
  if v == nil or v == false then return false end
  if v == true then return true end
  local word = tostring(v):lower():match("^%s*(%w*)")
  return not (word == "" or word == "no" or word == "0" or word == "false" or word == "off"
              or word == "none")
end

-- Whether an MPS server serves this rank (gcsh.info().mps says what the
-- driver decided).
local function mps_serves()
  local ok, info = pcall(gcsh.info)
  return ok and type(info) == "table" and tostring(info.mps or ""):find("serves this rank: yes",
                                                                          1, true) ~= nil
end

function M.measured_on()
  if gcsh.backend ~= "cuda" then
    return "this machine's CPUs (host backend: memory copies, not NVLink)"
  end
  local device = tostring(gcsh.device or "the GPU")
  -- (in lines that fit 80 columns behind "measured on " and a rank tag)
  if M.shared_gpu() and mps_serves() then
    return device .. ",\nshared with other ranks (--share-gpu, MPS): they split its SMs\n"
           .. "and memory, so times are not a GPU each"
  elseif M.shared_gpu() then
    return device .. ",\nshared with other ranks (--share-gpu, no MPS): the ranks take\n"
           .. "turns on it, so times are far longer than with a GPU each"
  end
  return device .. ", one per rank"
end

-- ---- the lesson's own globals ------------------------------------------------------------
--
-- The shell runs a lesson's code with _ENV = M.env(): what the lesson
-- assigns goes to its own table and to _G (where the learner sees and uses
-- it); what it reads comes from its own table first, then from the globals
-- as they were when this module loaded (comm, tensor, print, ...), then
-- from _G.  So its checks and reference functions keep reading the
-- lesson's values whatever the learner assigns to the same global names.

local AT_LOAD = {}
for k, v in pairs(_G) do AT_LOAD[k] = v end
local env

function M.env()
  if env then return env end
  local own = {}
  for k, v in pairs(AT_LOAD) do own[k] = v end
  env = setmetatable({}, {
    __index = function(_, k)
      local v = own[k]
      if v == nil then v = _G[k] end
      return v
    end,
    __newindex = function(_, k, v)
      own[k] = v
      _G[k] = v
    end,
  })
  return env
end

-- ---- what a lesson made -------------------------------------------------------------------

-- Types whose objects a lesson frees, and in which round: what uses a
-- window or signals (steppers, multicast objects, transfers, staged
-- registrations) before the windows and signals themselves.
local FREE_ROUND = { stepper = 1, multicast = 1, xfer = 1, winstage = 1, persistent = 1, graph = 1,
                     signals = 2, window = 2 }

-- made: what the lesson made, {name=, object=, round=}, holding the object
-- weakly: the lesson's globals keep it; one the learner dropped is garbage
-- (and reported so at the command's end), not kept alive here.
local WEAK_OBJECT, WEAK_KEYS = { __mode = "v" }, { __mode = "k" }
local made, known, before = {}, setmetatable({}, WEAK_KEYS), nil

function M.track_begin()
  before = {}
  for _, v in pairs(_G) do before[v] = true end
end

function M.track_end()
  if not before then return end
  local names = {}
  for name, v in pairs(_G) do
    if type(name) == "string" and not before[v] and not known[v] and FREE_ROUND[type_name(v)] then
      names[#names + 1] = name
    end
  end
  table.sort(names) -- the same order on every rank
  for _, name in ipairs(names) do
    local v = rawget(_G, name)
    made[#made + 1] = setmetatable({ name = name, object = v, round = FREE_ROUND[type_name(v)] },
                                   WEAK_OBJECT)
    known[v] = true
  end
  before = nil
end

-- Whether an object still holds what it was made for (its text says
-- "freed" or "cancelled" once it does not).
local function live(v)
  local ok, text = pcall(tostring, v)
  if not ok then return false end
  return not (text:find("%(freed%)$") or text:find(", freed%)$") or text:find("%(cancelled%)$"))
end

-- The learner's own steppers (made at the prompt) on a window the lesson
-- is about to free: a stepper on a freed window could only fail, so they
-- go with it.  Their names, sorted (the same order on every rank).
local function their_steppers()
  local windows = {}
  for _, m in ipairs(made) do
    if m.object ~= nil and m.round == 2 then windows[m.object] = true end
  end
  local names = {}
  for name, v in pairs(_G) do
    if type(name) == "string" and not known[v] and type_name(v) == "stepper"
       and type(v) == "table" and windows[rawget(v, "window")] and live(v) then
      names[#names + 1] = name
    end
  end
  table.sort(names)
  return names
end

function M.free_made()
  local freed, kept = {}, {}
  local theirs = their_steppers()
  for _, name in ipairs(theirs) do
    local v = rawget(_G, name)
    local ok, err = pcall(v.free, v)
    if not ok then kept[#kept + 1] = name .. " (" .. tostring(err) .. ")" end
  end
  for round = 1, 2 do
    for i = #made, 1, -1 do
      local m = made[i]
      local object = m.object
      if m.round == round and object ~= nil then
        local was_live = live(object)
        local ok, err = pcall(object.free, object)
        if not ok then kept[#kept + 1] = m.name .. " (" .. tostring(err) .. ")"
        elseif was_live then freed[#freed + 1] = m.name end
        if ok and rawget(_G, m.name) == object then rawset(_G, m.name, nil) end
      end
    end
  end
  made, known = {}, setmetatable({}, WEAK_KEYS)
  env = nil -- the lesson's code runs again from its start: a fresh environment
  table.sort(freed)
  local said = {}
  if #freed > 0 then said[1] = "freed what the lesson made: " .. table.concat(freed, ", ") end
  if #theirs > 0 then
    said[#said + 1] = "freed your stepper" .. (#theirs > 1 and "s " or " ") .. table.concat(theirs, ", ")
                      .. ": it stepped a window the lesson freed"
  end
  if #kept > 0 then said[#said + 1] = "could not free: " .. table.concat(kept, "; ") end
  if #said > 0 then print(table.concat(said, "\n")) end
end

return M
