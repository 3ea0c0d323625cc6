-- Two-shot: reduce-scatter by loads, all-gather by stores
-- Split the buffer into one chunk per rank.  Rank r loads chunk r of every
-- slice and reduces it (reduce-scatter), then stores the result into chunk
-- r of every slice (all-gather).  Each rank now loads and stores only about
-- 2 * (N-1)/N * n elements instead of (N-1) * n: the large-message choice.
lesson = require "gcsh.lesson"
lesson.needs(2)
c = comm.world()
n = 4 * size + 1
w = c:window(n, "i32")

--- Chunks
-- kernel.plan(w, {...}) is the plan the kernels execute; its chunks say
-- which part each rank owns.  n = 4 * size + 1 is not a multiple of size:
-- the first n % size ranks (here rank 0) get one element more.
plan = kernel.plan(w, {coll = "allreduce", algo = "twoshot"})
if rank == 0 then
  for r, ch in ipairs(plan.chunks) do
    print(string.format("rank %d owns [%d, %d)", r - 1, ch.first,
                        ch.first + ch.count))
  end
end
last = plan.chunks[size]
lesson.check(last.first + last.count == n,
             "the chunks cover the buffer")

--- Step it
-- Two steps, one per phase.  Reduce-scatter: every rank loads its chunk
-- from every slice and stores the sum into its own slice (from 3 ranks on,
-- r*.c0 means chunk 0 of every rank).  All-gather: every rank stores its
-- reduced chunk into the same chunk of every other slice.  The kernel does
-- both phases in one pass over each element, with no barrier between them:
-- only rank r touches chunk r.  The stepper stops between them so that you
-- see both.
w:tensor():fill(1 << rank)
st = step.allreduce(w, {algo = "twoshot"})
st:next()
st:next()
lesson.check(st:run({quiet = true}),
             "the stepped two-shot equals c:allreduce")
st:free()

--- exercise: Your two-shot
-- Write my_twoshot(w): a barrier; then rank r loads its chunk (from
-- plan.chunks[rank + 1]) of every slice, reduces it into a local tensor
-- with kernel.reduce, stores it into the same chunk of every slice; a
-- barrier.  The check fills new data and compares with c:allreduce:
--     check_twoshot(my_twoshot)
function check_twoshot(fn)
  w:tensor():arange(rank * 3)
  local ref = tensor.new(n, "i32"):copy(w:tensor())
  c:allreduce(ref)
  c:barrier()
  lesson.call(fn, "my_twoshot", w)
  lesson.grade(w:tensor(), ref,
               "every slice holds the sum after your two-shot")
end

--- solution
function my_twoshot(win)
  local ch = plan.chunks[rank + 1]
  c:barrier()
  if ch.count > 0 then
    local parts = {}
    for r = 0, size - 1 do
      parts[#parts + 1] = win:peer(r):view(ch.first, ch.count)
    end
    local sum = tensor.new(ch.count, win.dtype)
    kernel.reduce(sum, parts)
    for r = 0, size - 1 do
      win:peer(r):view(ch.first, ch.count):copy(sum)
    end
  end
  c:barrier()
end
check_twoshot(my_twoshot)
w:free()
