-- The issue's session, verbatim, then its assertion: every element is the
-- sum of rank + 1 over all ranks.
local H = require "harness"

c = comm.world(); t = tensor.new(1<<20):fill(rank+1); c:allreduce(t); print(t)

local want = size * (size + 1) // 2
H.eq(#t, 1 << 20, "#t")
H.eq(t.dtype, "f32", "default dtype")
H.eq(t[0], want, "t[0]")
H.eq(t[(1 << 20) - 1], want, "t[last]")
H.eq(t[12345], want, "t[12345]")
H.truthy(t:equal(tensor.new(1 << 20):fill(want)), "every element is " .. want)
H.near(t:sum(), want * (1 << 20), 1e-6, "sum")
H.truthy(tostring(t):find("cuda"), "the tensor lives on the GPU")
c:free()
