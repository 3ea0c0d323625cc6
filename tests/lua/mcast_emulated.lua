-- w:multicast() in mode "emulated": ld_reduce reduces over every peer's copy,
-- st stores into every peer's slice (src/DESIGN.md, "Lua surface": multicast).
-- On the GPU machines (tests/gpu/mcast_refusal.lua) the same file checks the
-- NVLS refusal: multicast stays off there.
local H = require "harness"

local c = comm.world()
local kind = rawget(_G, "KERNEL_TEST_KIND")
local opts = kind and { kind = kind } or nil
local me, k = c.rank, c.size

local w = c:window(1000, "f32", opts)
local m = w:multicast()
H.eq(m.mode, "emulated", "mode")
H.truthy(type(m:why()) == "string" and #m:why() > 0, "why says why: " .. tostring(m:why()))
if gcsh.backend == "cuda" then
  local why = m:why()
  H.truthy(why:find("NCCL_NVLS_ENABLE=0", 1, true) or why:find("GCSH_MULTICAST", 1, true),
           "the refusal names the opt-in: " .. why)
end
H.truthy(tostring(m):find("multicast(emulated", 1, true), "tostring")
H.eq(m.window, w, "m.window")

-- the lesson: fill, barrier, ld_reduce
w:tensor():fill(me + 1)
c:barrier()
local out = tensor.new(1000, "f32")
m:ld_reduce(out)
H.eq(out:sum(), 1000 * k * (k + 1) // 2, "ld_reduce sums every copy")
m:ld_reduce(out, "max")
H.eq(out[999], k, "ld_reduce max")
m:ld_reduce(out:view(0, 7), { op = "min", offset = 993 })
H.eq(out[6], 1, "ld_reduce min at an offset")
c:barrier()

-- st: one rank stores into every slice
if me == 0 then m:st(tensor.new(5, "f32"):arange(10), 3) end
c:barrier()
H.values(w:tensor():view(3, 5), { 10, 11, 12, 13, 14 }, nil, "st reached my slice")
H.eq(w:tensor()[2], me + 1, "st left the element before alone")
H.eq(w:tensor()[8], me + 1, "st left the element after alone")
c:barrier()

-- a second multicast object is the same decision; m:free() is local and idempotent
local m2 = w:multicast()
H.eq(m2.mode, m.mode, "the same mode again")
m2:free()
m2:free()
H.raises(function() m2:st(tensor.new(1, "f32")) end, "attempt to use a freed multicast", "st after m:free")

-- algo="multicast" in emulated mode is the two-shot data movement
w:tensor():fill(me + 1)
local res, ran = kernel.allreduce(w, { algo = "multicast" })
H.eq(ran, "multicast(emulated)", "which algorithm ran")
H.eq(res:sum(), 1000 * k * (k + 1) // 2, "allreduce multicast")
c:barrier()
w:free()
H.raises(function() return m.mode end, "attempt to use a freed window", "m after w:free")
