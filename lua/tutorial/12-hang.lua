-- Debugging a hang: fingerprints, .check and the hang report
-- Collectives hang when ranks disagree: one calls all-reduce with 4
-- elements and another with 5, or one calls a barrier the others skip.
-- gcsh catches most of it before anything runs: each collective sends a
-- fingerprint of the call (operation, count, dtype, op, root) to rank 0,
-- which compares them (.check on, the default).  What it cannot catch, it
-- reports: where every rank is, when a command takes too long.
lesson = require "gcsh.lesson"
lesson.needs(2)
c = comm.world()

--- A mismatch is an error, not a hang
-- Rank 0 passes 5 elements, the others 4.  Instead of a hang, every rank
-- gets the same error, naming which ranks passed what.  "#N" counts the
-- collectives on that communicator.
ok, err = pcall(c.allreduce, c, tensor.new(rank == 0 and 5 or 4))
print(lesson.wrap(err))
caught = not ok and err:find("collective mismatch", 1, true) ~= nil
lesson.check(size == 1 or caught,
             "the mismatch is an error on every rank")

--- Nothing ran, so the next collective works
t = tensor.new(1):fill(1)
c:allreduce(t)
lesson.expect(t, size, "the ranks stayed in step")

--- Different collectives
-- The last rank calls an all-reduce where the others call a barrier: the
-- fingerprints differ in their operation.
--
-- Before the next part, type `.timeout 1` at the prompt (then `.next`): its
-- slow rank then stays behind long enough for a hang report.
ok, err = pcall(function()
  if rank == size - 1 then c:allreduce(tensor.new(1))
  else c:barrier() end
end)
print(lesson.wrap(err))
caught = not ok and err:find("barrier", 1, true) ~= nil
lesson.check(size == 1 or caught, "the error names both calls")

--- The hang report
-- A rank that is slow, not wrong, cannot be caught in advance.  After
-- .timeout seconds (10 by default) the shell prints where every running
-- rank is, and keeps waiting; Ctrl-C interrupts.  Here the last rank sleeps
-- 1.5 s before it signals the others, who wait for the signal: with
-- `.timeout 1` a report names where each rank is, then the wait ends.  (No
-- report?  The timeout is still 10 s: type `.timeout 1`, then `.again`.)
-- One command (do ... end), so that the others are in their wait while
-- the last rank sleeps.
s = c:signals(1)
do
  if rank == size - 1 then
    gcsh.sleep(1.5)
    for r = 0, size - 1 do s:add(r, 0, 1) end
  end
  s:wait(0, 1)
end
lesson.check(s:read(0) == 1,
             "the slow rank signalled, and the wait ended")
s:free()

--- A collective gives up
-- A collective's check waits too; once you set a limit (`.timeout S`, or
-- --timeout S and gcsh.timeout(S) for scripts) only that long: then the
-- ranks that came get an error naming the one that did not, instead of a
-- hang.  With `.timeout 1` this barrier fails that way; with no limit set
-- (the default) it completes after 2 s.
ok, err = pcall(function()
  if rank == size - 1 then gcsh.sleep(2) end
  c:barrier()
end)
print(lesson.wrap(ok and "the barrier completed" or err))
lesson.check(ok or err:find("barrier", 1, true) ~= nil,
             "a slow rank: a late barrier, or an error naming it")

--- What to look for
-- In a report, ranks "in barrier #7" waiting for others, next to one
-- "running line 12 of the chunk", point at the line that rank is stuck on.
-- Ranks in different collectives (#7 and #8) mean one skipped a call.
-- `.check off` skips the fingerprints (faster, as in benchmarks); turn it
-- back on when something hangs.  The `.timeout 1` you typed stays set for
-- the rest of the session: `.timeout` alone shows it, `.timeout 10` gives
-- reports after 10 s again (and collective checks that give up after 10 s).
lesson.check(true, "that is all: .lessons lists the others")
