-- gcsh.lesson (the lessons' checkpoints and exercise checks): a right value
-- passes and says so; a wrong one is an error naming the rank, the wrong
-- elements (at most six, then how many), and what they should be.
local H = require("harness")
local lesson = require("gcsh.lesson")

local t = tensor.from({ 0, 1, 2, 3 }, "i32")
lesson.expect(t, function(i) return i end, "a right tensor passes")
lesson.grade(t, tensor.from({ 0, 1, 2, 3 }, "i32"), "against a tensor")
lesson.check(true, "a true checkpoint passes")

H.raises(function() lesson.check(false, "the sum") end,
         "checkpoint FAILED on rank " .. rank .. ": the sum", "a false checkpoint")
H.raises(function() lesson.expect(t, 1, "all ones") end,
         "checkpoint FAILED on rank " .. rank .. ": all ones: [0] is 0, want 1; [2] is 2, want 1; [3] is 3, want 1",
         "expect names the wrong elements")
H.raises(function() lesson.grade(tensor.new(10):fill(2.5), 2, "twos") end,
         "not yet: twos (rank " .. rank .. "): [0] is 2.5, want 2; [1] is 2.5, want 2; [2] is 2.5, want 2; "
         .. "[3] is 2.5, want 2; [4] is 2.5, want 2; [5] is 2.5, want 2; ... (10 wrong of 10)",
         "grade names six, then how many")
H.raises(function() lesson.grade(nil, 2, "twos") end,
         "not yet: twos: your function should give a tensor, it gave nil", "grade of no tensor")
-- floats within 1e-3
lesson.expect(tensor.new(2):fill(1 + 1e-5), 1, "floats close enough pass")
print("lesson_helpers: ok")
