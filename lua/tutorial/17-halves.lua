-- Reduce-scatter and all-gather: the ring's two halves
-- Lesson 8's ring all-reduce is two collectives one after the other: a
-- reduce-scatter (rank r ends with chunk r of the sum) and an all-gather
-- (every rank's chunk r reaches every rank).  Each is a collective of its
-- own, and each has its own stepper: step.reduce_scatter(w) and
-- step.allgather(w).  Here, a window of 2 elements per rank, i32, so
-- chunk r is elements 2r and 2r+1.
lesson = require "gcsh.lesson"
lesson.needs(2)
c = comm.world()
n = 2 * size
w = c:window(n, "i32")

--- Reduce-scatter, stepped
-- Rank r puts 2^r everywhere, so a cell's ranks are the ranks whose data
-- it holds.  In N-1 steps each rank adds its left neighbour's running sum
-- of one chunk to its own; after the last, rank r's chunk r holds every
-- rank's data (the cells marked 0-3 at 4 ranks) and the other chunks hold
-- partial sums that the collective leaves as they are.
w:tensor():fill(1 << rank)
rs = step.reduce_scatter(w)
for _ = 1, rs.steps do rs:next() end
lesson.check(rs:run({quiet = true}),
             "rank r's chunk r equals c:reducescatter's")
rs:free()

--- All-gather, stepped
-- Now rank r starts with its own chunk r only (2^r there, 0 elsewhere).
-- In N-1 steps each rank passes the chunk it received last to its right
-- neighbour: a copy, no sum.  At the end every rank holds every chunk.
w:tensor():fill(0)
w:tensor():view(2 * rank, 2):fill(1 << rank)
ag = step.allgather(w)
for _ = 1, ag.steps do ag:next() end
lesson.check(ag:run({quiet = true}),
             "every rank's window equals c:allgather's")
ag:free()

--- What each half moves
-- Each half moves N-1 chunks of n/N elements through every rank: (N-1)/N
-- of the data, the bus bandwidth factor nccl-tests gives reduce-scatter
-- and all-gather.  Together: 2(N-1)/N, the all-reduce's (lessons 8, 11).
half = (size - 1) / size
print(string.format("at %d ranks: (N-1)/N = %.3f, 2(N-1)/N = %.3f",
                    size, half, 2 * half))
lesson.check(rs.steps == size - 1 and ag.steps == size - 1,
             "each half takes N-1 steps")

--- exercise: An all-reduce from the halves
-- Write halves_allreduce(t): the sum over every rank of tensor t, left in
-- t, with one c:reducescatter(t, part) into a tensor part of #t // size
-- elements, then one c:allgather(part, t).  The check gives you a tensor
-- of 4 * size i32 and compares with c:allreduce:
--     check_halves(halves_allreduce)
function check_halves(fn)
  local t = tensor.new(4 * size, "i32"):arange(rank)
  local ref = tensor.new(4 * size, "i32"):copy(t)
  c:allreduce(ref)
  lesson.call(fn, "halves_allreduce", t)
  lesson.grade(t, ref, "a reduce-scatter, then an all-gather, is an all-reduce")
end

--- solution
function halves_allreduce(t)
  local part = tensor.new(#t // size, t.dtype)
  c:reducescatter(t, part)
  c:allgather(part, t)
end
check_halves(halves_allreduce)
w:free()
