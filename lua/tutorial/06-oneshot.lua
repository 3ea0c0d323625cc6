-- One-shot all-reduce by hand
-- The simplest all-reduce over symmetric memory: after a barrier, every
-- rank loads every slice and adds them up.  A single round of loads, no
-- rank waiting for another's partial sum, so the latency is low: the
-- fastest for small messages.  But each rank loads (N-1) * n elements from
-- its peers, which is why it loses for large ones.
lesson = require "gcsh.lesson"
c = comm.world()
n = 8
w = c:window(n, "f32")
w:tensor():fill(rank + 1)
c:barrier()

--- Load every slice, add
-- kernel.reduce(out, {t1, t2, ...}) adds tensors element by element; peer
-- views are tensors, so the inputs can be every rank's slice.  The barrier
-- before (above) makes sure every slice is filled; the one after, that no
-- rank writes its slice again while another still loads it.
out = tensor.new(n)
views = {}
for r = 0, size - 1 do views[#views + 1] = w:peer(r) end
kernel.reduce(out, views)
c:barrier()
print(out)
lesson.expect(out, size * (size + 1) // 2,
              "every element is 1 + 2 + ... + size")

--- exercise: Your one-shot
-- Write my_oneshot(w, out): out gets the sum of every rank's slice of w, by
-- peer loads.  The check fills the window with new data, puts a barrier
-- before your function, runs it, and compares out with c:allreduce:
--     check_oneshot(my_oneshot)
function check_oneshot(fn)
  w:tensor():arange(rank)
  local ref = tensor.new(n):copy(w:tensor())
  c:allreduce(ref)
  c:barrier()
  local x = tensor.new(n):fill(0)
  lesson.call(fn, "my_oneshot", w, x)
  c:barrier()
  lesson.grade(x, ref, "your one-shot equals c:allreduce")
end

--- solution
function my_oneshot(win, result)
  local slices = {}
  for r = 0, size - 1 do slices[#slices + 1] = win:peer(r) end
  kernel.reduce(result, slices)
end
check_oneshot(my_oneshot)

--- Stepped: what the kernel does
-- step.allreduce runs the plan the kernels run (kernel.plan), one step per
-- call.  In place, one-shot has two steps: every rank reduces every slice
-- into a scratch buffer (tmp), then, after a barrier, copies it into its
-- own slice.  That barrier matters: a slow rank may still be loading.
w:tensor():fill(1 << rank)
st = step.allreduce(w, {algo = "oneshot"})
st:next()

--- The second step
-- After the barrier, each rank copies its sum from tmp into its own slice.
st:next()
lesson.check(st:run({quiet = true}),
             "the stepped one-shot equals c:allreduce")
st:free()

--- The kernel
-- kernel.allreduce(w, {algo="oneshot"}) runs the same plan at full speed,
-- with its barriers on the window's own sync words.
w:tensor():fill(rank + 1)
kernel.allreduce(w, {algo = "oneshot"})
lesson.expect(w:tensor(), size * (size + 1) // 2,
              "kernel.allreduce oneshot")
w:free()

--- Without the barrier: flags in the data
-- The barrier costs a round trip before any data moves, and for small
-- messages that wait is most of the time.  algo="ll" drops it: each rank
-- stores its region into its own slot on every rank, with a flag (the
-- call's number) beside every 4-byte word: a 16-byte line holds two words
-- and two flags, {data, flag, data, flag}, because a 16-byte store can land
-- as two 8-byte halves, and each half must say by itself that it arrived.
-- A rank reduces its slots as their flags arrive: a word whose flag is this
-- call's holds this call's data.  Half of every line is flags, so ll moves
-- twice the bytes: it wins only while the round trip costs more than the
-- extra bytes (lesson 14 measures where).  The flag is the call's number,
-- so a line an earlier call left never passes for this call's and nothing
-- needs clearing; two sets of slots take turns so that a fast rank's next
-- call cannot overwrite a slot a slow rank still reads (NCCL's LL
-- protocol; src/core/kll.h).
w = c:window(n, "i32")
w:tensor():fill(rank + 1)
kernel.allreduce(w, {algo = "ll"})
lesson.expect(w:tensor(), size * (size + 1) // 2,
              "kernel.allreduce ll")
w:free()

--- The ll all-reduce, stepped
-- step.allreduce(w, {algo="ll"}) shows its two phases.  First every rank
-- stores its region, flags and all, into its slot of every rank's ll area
-- (the rows "r0 ll": slot sS holds what rank S stored there, fF the flags
-- it holds); then every rank reduces its slots as their flags arrive.  The
-- stepper keeps its own ll area, a flag beside every element (for 4-byte
-- dtypes, the kernel's very lines).  Between the two lines the shell waits
-- for every rank, so here every flag is there when the reduce starts; the
-- kernel starts on each word as soon as its flag is.
w = c:window(n, "i32")
w:tensor():fill(1 << rank)
st = step.allreduce(w, {algo = "ll"})
st:next()
st:next()
lesson.check(st:run({quiet = true}),
             "the stepped ll equals c:allreduce")
st:free()
w:free()
