-- Tensors and collectives
-- A tensor is a typed 1-D array that lives where the backend computes: in
-- host memory on the host backend, on the rank's GPU on the cuda backend.
-- Every rank has its own.  A collective (all-reduce, broadcast, ...) is a
-- call every rank of a communicator makes; together they move the data.
lesson = require "gcsh.lesson"
c = comm.world()

--- A tensor
-- tensor.new(n [, dtype]) makes n elements (f32 unless you name a dtype)
-- whose values are whatever the memory held until you write them: :fill(v)
-- sets every one, :arange(start) counts up from start.  Indexing is
-- 0-based, as in C.
t = tensor.new(8):arange(rank * 8)
print(t)
print("t[3] = " .. t[3] .. ", #t = " .. #t .. ", dtype " .. t.dtype)

--- All-reduce: the sum on every rank
-- c:allreduce(t) adds every rank's t element by element and leaves the sum
-- in every rank's t.  Rank r put r + 1 everywhere, so each element becomes
-- 1 + 2 + ... + size.
t = tensor.new(4):fill(rank + 1)
c:allreduce(t)
print(t)
lesson.expect(t, size * (size + 1) // 2,
              "every element is 1 + 2 + ... + size")

--- Broadcast and all-gather
-- c:broadcast(t, root) copies root's tensor to every rank.  c:allgather(t,
-- out) puts rank r's t at position r * #t of every rank's out.
b = tensor.new(4):fill(rank == 0 and 42 or 0)
c:broadcast(b, 0)
lesson.expect(b, 42, "rank 0's value reached every rank")
g = tensor.new(2 * size)
c:allgather(tensor.new(2):fill(rank), g)
print(g)
lesson.expect(g, function(i) return i // 2 end,
              "rank r's two elements sit at 2r and 2r+1")

--- Other reductions
-- The reduction is c:allreduce's second argument, after the tensor: sum
-- (the default), prod, min, max, avg.
m = tensor.new(1):fill(rank)
c:allreduce(m, "max")
lesson.expect(m, size - 1, "the largest rank")

--- exercise: Every rank's number, everywhere
-- Make a tensor `mine` of `size` elements holding r at index r, on every
-- rank, with one all-reduce (hint: every rank fills in its own element and
-- leaves zeros elsewhere).  Check it:
--     check_ranks(mine)
-- A wrong answer gets one line: a wrong element, its dtype, how many are
-- wrong and on which ranks.
function check_ranks(x)
  lesson.grade(x, function(i) return i end, "element i is i on every rank", size)
end

--- solution
mine = tensor.new(size):fill(0)
mine[rank] = rank
c:allreduce(mine)
check_ranks(mine)
