-- Ranks and folded output
-- gcsh runs one process per rank: `gcsh -n 4` starts four.  Every line you
-- type at the prompt runs on every rank, each in its own Lua state, and what
-- each rank prints comes back to the terminal prefixed by the ranks that
-- printed it.  This lesson runs on any number of ranks; 4 shows the most.
--
-- Throughout the lessons: `.next` shows the next part and runs its code on
-- every rank, exactly as if you had typed it.  Try things at the prompt in
-- between: a variable you make is there for the next part.
lesson = require "gcsh.lesson"

--- Every rank runs the line
-- `rank` and `size` are globals on every rank.  Each rank prints a different
-- line here, so you see one line per rank, each under its own prefix.
print("hello from rank " .. rank .. " of " .. size)

--- Identical output folds
-- When ranks print the same text, it comes back once, under the range of
-- ranks that printed it: [0-3] means ranks 0, 1, 2 and 3.  This is the
-- `dshbak -c` convention from cluster shells: a hundred ranks that agree
-- take one line, and the one that disagrees stands out.
print("the same text on every rank")
print(rank % 2 == 0 and "even rank" or "odd rank")

--- A checkpoint
-- Lessons check what they compute.  A checkpoint prints "checkpoint: ..."
-- when it holds, and fails loudly, on the ranks where it does not.
lesson.check(rank >= 0 and rank < size, "rank is 0 .. size-1")

--- Choosing ranks
-- A line can run on some ranks only: `.ranks 0` at the prompt makes the
-- prompt gcsh[0]> and the next lines run on rank 0 alone; `.ranks all`
-- brings every rank back.  From code, test `rank` instead:
if rank == size - 1 then print("only the last rank says this") end

--- exercise: Sum the ranks
-- Every rank can compute the same value on its own.  Write code that sets
-- `my_sum` to 0 + 1 + ... + (size - 1) on every rank, then check it:
--     check_sum(my_sum)
function check_sum(v)
  local want = size * (size - 1) // 2
  if v ~= want then
    error(string.format("not yet: my_sum is %s, want %d", tostring(v), want), 2)
  end
  print("right: the ranks add up to " .. want)
end

--- solution
my_sum = 0
for r = 0, size - 1 do my_sum = my_sum + r end
check_sum(my_sum)
