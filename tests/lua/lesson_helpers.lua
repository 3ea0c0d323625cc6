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
  local text = tostring(err)
  for line in (text .. "\n"):gmatch("(.-)\n") do
    H.truthy(#line <= 70, "a feedback line fits 80 columns after the shell's tag: " .. line)
  end
  -- its lines joined (wrapped at 70 columns, continuations indented by 2)
  return (text:gsub("\n  ", " ")), type(err) == "table" and getmetatable(err) and getmetatable(err).__tostring ~= nil
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
-- a want that is a function or a number: the length the caller gives
text = raised(function() lesson.grade(tensor.new(3):arange(0), function(i) return i end, "i", 4) end)
H.eq(text, "not yet: i: your tensor has 3 elements, want 4" .. EVERY, "grade: a function's length")
H.eq(lesson.grade(tensor.new(4):arange(0), function(i) return i end, "i", 4), true, "grade: the length right")
H.raises(function() lesson.grade(tensor.new(4), 0, "zeros", "4") end,
         "lesson.grade: n (the answer's element count) must be an integer, got \"4\" (a string)", "grade: n checked")
text = raised(function() lesson.grade("x", 2, "twos") end)
H.eq(text, 'not yet: twos: your answer is "x" (a string), want a tensor' .. EVERY, "grade: a string")
if k >= 2 then
  -- right on rank 0, wrong on the others: each wrong rank its own element,
  -- the right rank where the wrong ones are
  local mine = tensor.new(2, "i32"):fill(me == 0 and 7 or me)
  text = raised(function() lesson.grade(mine, 7, "sevens") end)
  if me == 0 then
    H.eq(text, "not yet: sevens: right here, wrong on rank" .. (k > 2 and "s 1-" .. (k - 1) or " 1"),
         "grade: a right rank says where the wrong ones are")
  else
    H.eq(text, string.format("not yet: sevens: [0] is %d, want 7 (2 of 2 i32 elements wrong)", me),
         "grade: each wrong rank its own numbers")
  end
  -- rank-dependent counts: each rank's own count
  mine = tensor.new(k, "i32"):fill(0)
  mine[me] = me
  text = raised(function() lesson.grade(mine, function(i) return i end, "ranks") end)
  local first = (me == 1 and k > 2) and 2 or 1
  local count = me == 0 and k - 1 or k - 2
  if count == 0 then
    H.eq(text, "not yet: ranks: right here, wrong on rank 0", "grade: the right rank")
  else
    H.eq(text, string.format("not yet: ranks: [%d] is 0, want %d (%d of %d i32 elements wrong)",
                             first, first, count, k), "grade: this rank's count")
  end
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
  H.truthy(text:match("^not yet: my_fn failed: [%w/_.]*lesson_helpers%.lua:%d+: my bug$"),
           "call: the learner's error, at their line, one line: " .. text)
  H.truthy(own, "call: no traceback")
else
  H.eq(text, "not yet: my_fn failed on rank 0 (its error is shown there)", "call: the other ranks")
end
if k >= 2 then
  -- an error on rank 0 after a barrier, collectives after it on the others:
  -- rank 0's own error, not gcsh's collective check
  text = raised(function()
    lesson.call(function() c:barrier(); if me == 0 then error("late bug") end; c:barrier(); c:barrier() end,
                "my_fn")
  end)
  if me == 0 then
    H.truthy(text:match("^not yet: my_fn failed: [%w/_.]*lesson_helpers%.lua:%d+: late bug$"), text)
  else
    H.eq(text, "not yet: my_fn failed on rank 0 (its error is shown there)", "call: after a barrier")
  end
  -- a collective on rank 0 only: named where it was made
  text = raised(function() lesson.call(function() if me == 0 then c:barrier() end end, "my_fn") end)
  if me == 0 then
    H.truthy(text:match("^not yet: [%w/_.]*lesson_helpers%.lua:%d+: barrier here; ranks? [%d,%-]+ had returned from my_fn$"), text)
  else
    H.eq(text, "not yet: my_fn called a collective on rank 0 only (shown there)", "call: the others")
  end
  H.eq(lesson.call(function() c:barrier(); return 1 end, "my_fn"), 1, "the communicator works after")
  -- the learner's own error that reads like a collective check's: theirs,
  -- shown on their rank (no collective was called), whatever its words
  local L = k - 1
  for _, words in ipairs({ "collective mismatch: my table has a nil", "[3] waited 2.0 s for [0]" }) do
    text = raised(function()
      lesson.call(function() if me == L then error(words) end end, "my_fn")
    end)
    if me == L then
      H.truthy(text:match("^not yet: my_fn failed: [%w/_.]*lesson_helpers%.lua:%d+: ")
               and text:find(words, 1, true), "call: the learner's error as it is: " .. text)
    else
      H.eq(text, string.format("not yet: my_fn failed on rank %d (its error is shown there)", L),
           "call: the others point at it")
    end
  end
  -- an error inside gcsh's own Lua: the learner's line, no gcsh file
  text = raised(function() lesson.call(function() step.allreduce(nil, { algo = "x" }) end, "my_fn") end)
  H.truthy(text:match("^not yet: my_fn failed: [%w/_.]*lesson_helpers%.lua:%d+: ") and not text:find("/gcsh/", 1, true),
           "call: an error in gcsh's Lua is shown at the learner's line: " .. text)
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
