-- gcsh.lesson (the lessons' checkpoints, exercise checks and housekeeping):
-- a right value passes and says so; a failed checkpoint is one line naming
-- its file and line; a wrong answer is the same one line on every rank (the
-- first wrong rank's element or value, its type, how many, which ranks),
-- raised without a traceback; the learner's own error keeps its traceback
-- on its ranks; what a lesson's code leaves in globals is freed by
-- free_made; the gpu_shared field is read defensively.
local H = require("harness")
local lesson = require("gcsh.lesson")
local c = comm.world()
local k, me = c.size, c.rank
local EVERY = "" -- every rank wrong: the shell's [0-3] says so

-- The error of fn: its text, and whether it has a text of its own (no
-- traceback: the shell prints tostring of such an object alone).
local function raised(fn)
  local ok, err = pcall(fn)
  H.eq(ok, false, "an error was raised")
  return tostring(err), type(err) == "table" and getmetatable(err) and getmetatable(err).__tostring ~= nil
end

-- ---- checkpoints
local t = tensor.from({ 0, 1, 2, 3 }, "i32")
lesson.expect(t, function(i) return i end, "a right tensor passes")
lesson.check(true, "a true checkpoint passes")
local text, own = raised(function() lesson.check(false, "the sum") end)
H.truthy(text:match("^checkpoint FAILED at lesson_helpers%.lua:%d+: the sum$"), text)
H.truthy(own, "a failed checkpoint has no traceback")
text = raised(function() lesson.expect(t, 1, "all ones") end)
H.truthy(text:match("^checkpoint FAILED at lesson_helpers%.lua:%d+: all ones: %[0%] is 0, want 1; "
                    .. "%[2%] is 2, want 1; %[3%] is 3, want 1$"), text)
lesson.expect(tensor.new(2):fill(1 + 1e-5), 1, "floats close enough pass")

-- ---- grade: a tensor answer, one line for every rank
H.eq(lesson.grade(tensor.from({ 0, 1, 2, 3 }, "i32"), t, "against a tensor"), true, "a right answer")
text, own = raised(function() lesson.grade(tensor.new(10):fill(2.5), 2, "twos") end)
H.eq(text, "not yet: twos: [0] is 2.5, want 2 (10 of 10 f32 elements wrong)" .. EVERY, "grade: the line")
H.truthy(own, "a wrong answer has no traceback")
text = raised(function() lesson.grade(nil, 2, "twos") end)
H.eq(text, "not yet: twos: your answer is nil, want a tensor" .. EVERY, "grade of no tensor")
text = raised(function() lesson.grade(tensor.new(3, "i32"), t, "four") end)
H.eq(text, "not yet: four: your tensor has 3 elements, want 4", "grade: the length")
text = raised(function() lesson.grade("x", 2, "twos") end)
H.eq(text, 'not yet: twos: your answer is "x" (a string), want a tensor' .. EVERY, "grade: a string")
if k >= 3 then
  -- right on rank 0, wrong on the others: rank 1's element, and which ranks
  local mine = tensor.new(2, "i32"):fill(me == 0 and 7 or me)
  text = raised(function() lesson.grade(mine, 7, "sevens") end)
  H.eq(text, string.format("not yet: sevens: [0] is 1, want 7 (2 of 2 i32 elements wrong) "
                           .. "(on rank 1; ranks 1-%d are wrong)", k - 1), "grade: some ranks")
  mine = tensor.new(2, "i32"):fill(me == 2 and 0 or 7)
  text = raised(function() lesson.grade(mine, 7, "sevens") end)
  H.eq(text, "not yet: sevens: [0] is 0, want 7 (2 of 2 i32 elements wrong) (rank 2)", "grade: one rank")
end

-- ---- answer: a value, with its type
H.eq(lesson.answer("my_sum", 6, 6, "six"), true, "a right value")
text, own = raised(function() lesson.answer("my_sum", "6", 6, "six") end)
H.eq(text, 'not yet: my_sum is "6" (a string), want 6 (a number)' .. EVERY, "answer: a string for a number")
H.truthy(own, "answer: no traceback")
text = raised(function() lesson.answer("f(1)", nil, 0.5, "half") end)
H.eq(text, "not yet: f(1) is nil, want 0.5 (a number)" .. EVERY, "answer: nil")
H.eq(lesson.answer("f(2)", 1, 1.0, "one"), true, "1 and 1.0 are the same number")

-- ---- call: the learner's function
H.eq(lesson.call(function(a, b) return a + b end, "add", 2, 3), 5, "call returns the results")
text, own = raised(function() lesson.call(nil, "my_fn", 1) end)
H.eq(text, "not yet: you passed nil, want a function (define my_fn first)", "call: no function")
H.truthy(own, "call: no traceback for a missing function")
text, own = raised(function() lesson.call(function() if me == 0 then error("my bug") end end, "my_fn") end)
if me == 0 then
  H.truthy(text:find("my bug", 1, true) and text:find("stack traceback:", 1, true),
           "call: the learner's error keeps its traceback: " .. text)
  H.truthy(own, "call: the traceback is the text: the shell adds none")
else
  H.eq(text, "not yet: my_fn failed on rank 0 (its error is shown there)", "call: the other ranks")
end
local got = lesson.call_each(function(n) return n * n end, "sq", { { 2 }, { 3 } })
H.eq(got[1] + got[2], 13, "call_each: every call's result")
text = raised(function() lesson.call_each(42, "sq", { { 2 } }) end)
H.eq(text, "not yet: you passed 42 (a number), want a function (define sq first)", "call_each: no function")

-- ---- wrap
H.eq(lesson.wrap("aaa bbb ccc", 7), "aaa bbb\n  ccc", "wrap: at the width, continuation indented")
for line in lesson.wrap(string.rep("word ", 40)):gmatch("[^\n]+") do
  H.truthy(#line <= 72, "wrap: 72 columns by default")
end

-- ---- shared_gpu: the backend's info field gpu_shared, read defensively
local info = gcsh.info
local function shared_with(v)
  gcsh.info = function() local t = info(); t.gpu_shared = v; return t end
  local ok, res = pcall(lesson.shared_gpu)
  gcsh.info = info
  H.truthy(ok, "shared_gpu never fails")
  return res
end
H.eq(shared_with(nil), false, "no field: not shared")
H.eq(shared_with("yes"), true, "yes")
H.eq(shared_with("cuda:0 with ranks 0-3"), true, "the cuda backend's description")
H.eq(shared_with("no"), false, "no")
H.eq(shared_with("0"), false, "0")
H.eq(shared_with(true), true, "true")
H.eq(shared_with(false), false, "false")
gcsh.info = function() error("no info here") end
H.eq(lesson.shared_gpu(), false, "info failing: not shared")
gcsh.info = info
H.truthy(lesson.measured_on():find(gcsh.backend == "cuda" and tostring(gcsh.device) or "CPUs", 1, true),
         "measured_on names where figures come from")

-- ---- what a lesson's code makes, freed
lesson.track_begin()
lesson_w = c:window(8, "i32")
lesson_s = c:signals(2)
lesson_st = step.allreduce(lesson_w)
lesson_n = 42
lesson.track_end()
local w_before = lesson_w
lesson.free_made()
H.eq(rawget(_G, "lesson_w"), nil, "free_made clears the window's global")
H.eq(rawget(_G, "lesson_st"), nil, "and the stepper's")
H.eq(lesson_n, 42, "other globals stay")
H.truthy(not pcall(w_before.tensor, w_before), "the window is freed")
-- made before tracking began: not the lesson's
keep = c:window(4)
lesson.track_begin()
lesson.track_end()
lesson.free_made()
H.truthy(pcall(keep.tensor, keep), "what the learner made stays")
keep:free()
print("lesson_helpers: ok")
