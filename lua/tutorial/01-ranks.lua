-- Ranks and folded output
-- gcsh runs one process per rank: `gcsh -n 4` starts four.  Every line you
-- type at the prompt runs on every rank, each in its own Lua state, and what
-- each rank prints comes back to the terminal prefixed by the ranks that
-- printed it.  This lesson runs on any number of ranks; 4 shows the most.
--
-- Throughout the lessons: `.next` shows the next part and runs its code on
-- every rank, one statement at a time, each echoed as if you had typed it
-- and followed by its own output.  (One difference: typed at the prompt, a
-- call's value is printed too; in a part only what the code prints shows.)
-- Try things at the prompt in between: a variable you make is there for the
-- next part.  `.again` runs the current part again, `.prev` goes back one,
-- `.part N` jumps to part N (running what it needs first, quietly).
lesson = require "gcsh.lesson"

--- Every rank runs the line
-- `rank` and `size` are globals on every rank.  Each rank prints a different
-- line here, so you see one line per rank, each under its own prefix.
print("hello from rank " .. rank .. " of " .. size)

--- Identical output folds
-- When ranks print the same text, it comes back once, under the range of
-- ranks that printed it: [0-3] means ranks 0, 1, 2 and 3.  This is the
-- `dshbak -c` convention from cluster shells: a hundred ranks that agree
-- take one line, and the one that disagrees stands out.  The second line
-- splits the ranks in two groups, each under its own prefix.
print("the same text on every rank")
print(rank % 2 == 0 and "even rank" or "odd rank")

--- A command's output folds as a whole
-- The shell compares what each rank printed during one command, all of it
-- at once.  Here one command prints two lines: the first is the same on
-- every rank, the second is not, so the ranks' outputs differ and each
-- group prints both lines under its own prefix.  The line they share is no
-- longer folded across all of them.  (Each line you type is a command; so
-- is each statement a lesson's part runs.)
print("the same text"); print(rank % 2 == 0 and "even" or "odd")

--- A checkpoint
-- Lessons check what they compute.  A checkpoint prints "checkpoint: ..."
-- when it holds; where it does not, it prints one line, "checkpoint FAILED
-- at" the lesson's file and line, on the ranks where it failed.
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
-- A wrong answer gets one line saying what it got and what it wants.
function check_sum(v)
  local want = size * (size - 1) // 2
  lesson.answer("my_sum", v, want, "the ranks add up to " .. want)
end

--- solution
my_sum = 0
for r = 0, size - 1 do my_sum = my_sum + r end
check_sum(my_sum)
