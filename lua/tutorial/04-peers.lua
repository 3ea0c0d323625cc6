-- Peer reads and show
-- With a window, a rank reads another rank's slice with ordinary loads:
-- w:peer(r) is rank r's slice as a tensor.  No message is sent; the load
-- goes over NVLink on GPUs, or through shared memory on CPUs.  The catch:
-- nothing tells you when the peer's data is ready.  That is the barrier's
-- job.
lesson = require "gcsh.lesson"
c = comm.world()
w = c:window(8, "i32")
right, left = (rank + 1) % size, (rank - 1) % size

--- Fill my slice, then wait for everyone
-- Each rank writes its own slice, then c:barrier(): after it, every rank's
-- writes are done and visible.
w:tensor():arange(rank * 100)
c:barrier()

--- Read a neighbour
-- w:peer(right)[3] loads element 3 of the right neighbour's slice.
print("rank " .. right .. "'s element 3 is " .. w:peer(right)[3])
lesson.check(w:peer(right)[3] == right * 100 + 3,
             "a peer load reads the neighbour's element")

--- Look at every slice
-- show(w) gathers every slice into one table on rank 0; show(w:peer(right))
-- shows, for every rank, the view it has of its right neighbour.  A * marks
-- a value that differs from the most common one in its column; here every
-- rank's value differs, no value is the most common, and none is marked.
show(w)
show(w:peer(right))

--- Store into a peer
-- Stores work the same way.  Each rank stores its own number, negated, in
-- element 0 of its right neighbour's slice; after a barrier each rank finds
-- its left neighbour's number in its own slice.
w:peer(right)[0] = -rank
c:barrier()
lesson.check(w:tensor()[0] == -left,
             "my element 0 is what my left neighbour stored")

--- exercise: Copy your left neighbour's slice
-- Write copy_left(w, out) that copies the left neighbour's whole slice into
-- the local tensor out (8 i32).  Hint: tensor :copy takes a peer view.
-- Check it:
--     check_copy_left(copy_left)
function check_copy_left(fn)
  w:tensor():arange(rank * 100)
  c:barrier()
  local out = tensor.new(8, "i32"):fill(0)
  lesson.call(fn, "copy_left", w, out)
  c:barrier()
  lesson.grade(out, function(i) return left * 100 + i end,
               "out holds the left neighbour's slice")
end

--- solution
function copy_left(win, out)
  out:copy(win:peer((rank - 1) % size))
end
check_copy_left(copy_left)
w:free()
