-- Multicast: one load reduces every slice
-- NVLink switches (NVLS) can reduce in the network: a load from a
-- multicast address returns the sum of that address in every GPU's slice
-- (ld_reduce), and a store to it lands in every slice (st).  An
-- all-reduce becomes: rank r ld_reduces its chunk, then st's it.  Where
-- NVLS is off (or on CPUs), gcsh emulates both with peer loads and stores,
-- so the code is the same.
lesson = require "gcsh.lesson"
c = comm.world()
n = 8
w = c:window(n, "f32")
w:tensor():fill(rank + 1)
c:barrier()
m = w:multicast()
print(lesson.wrap("mode " .. m.mode .. ": " .. m:why()))

--- ld_reduce
-- m:ld_reduce(out) gives every element's sum over every slice, in one call.
out = tensor.new(n)
m:ld_reduce(out)
lesson.expect(out, size * (size + 1) // 2,
              "one ld_reduce sums every slice")

--- st
-- m:st(src, offset) stores src into every slice at once.  Only rank 0
-- stores here, after a barrier (nobody still loads), and after another
-- barrier every rank finds it.
c:barrier()
if rank == 0 then m:st(tensor.new(2):fill(-1), 6) end
c:barrier()
lesson.expect(w:tensor():view(6, 2), -1,
              "rank 0's one st reached every slice")

--- Stepped
-- The multicast all-reduce moves data as two-shot does, in two steps.
-- ld_reduce: every rank loads its chunk through the multicast address,
-- which sums it over every slice, into a scratch buffer of its own (the
-- rows "r0 tmp"; in the kernel, registers).  store: one st puts it into
-- that chunk of every slice at once.
w:tensor():fill(1 << rank)
st = step.allreduce(w, {algo = "multicast"})
st:next()
st:next()
lesson.check(st:run({quiet = true}),
             "the stepped multicast all-reduce equals c:allreduce")
st:free()

--- exercise: All-reduce with multicast
-- Write my_mc_allreduce(w, m): rank r ld_reduces its own chunk (the plan's
-- chunks[rank + 1]; ld_reduce takes {offset=}) into a local tensor and
-- st's it back at the same offset.  The check puts barriers around it:
--     check_mc(my_mc_allreduce)
function check_mc(fn)
  w:tensor():arange(rank)
  local ref = tensor.new(n):copy(w:tensor())
  c:allreduce(ref)
  c:barrier()
  lesson.call(fn, "my_mc_allreduce", w, m)
  c:barrier()
  lesson.grade(w:tensor(), ref,
               "every slice holds the sum after your multicast all-reduce")
end

--- solution
function my_mc_allreduce(win, mc)
  local p = kernel.plan(win, {coll = "allreduce",
                              algo = "multicast"})
  local ch = p.chunks[rank + 1]
  if ch.count > 0 then
    local part = tensor.new(ch.count)
    mc:ld_reduce(part, {offset = ch.first})
    mc:st(part, ch.first)
  end
end
check_mc(my_mc_allreduce)
m:free()
w:free()
