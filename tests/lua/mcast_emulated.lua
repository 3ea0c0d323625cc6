-- w:multicast() in mode "emulated": ld_reduce reduces over every peer's copy,
-- st stores into every peer's slice (src/DESIGN.md, "Lua surface": multicast).
-- On the GPU machines (tests/gpu/mcast_refusal.lua) the same file checks the
-- NVLS refusal: multicast stays off there.
local H = require "harness"

local c = comm.world()
local kind = rawget(_G, "KERNEL_TEST_KIND")
local opts = kind and { kind = kind } or nil
local me, k = c.rank, c.size

-- ---- strict by default: NVLS's dtype, op and 4-byte rules, NVLS's messages
do
  local sw = c:window(64, "f16", opts)
  local sm = sw:multicast()
  H.eq(sm.mode, "emulated", "strict: mode")
  H.eq(sm.lax, false, "strict: not lax")
  H.truthy(sm:why():find("; strict: NVLS's dtype, op and 4-byte rules apply, as on the hardware "
                         .. "(w:multicast{lax=true}, the window's first, lifts them)", 1, true),
           "strict: why says so: " .. sm:why())
  H.truthy(tostring(sm):find("; strict:", 1, true), "strict: tostring says so")
  local o = tensor.new(64, "f16")
  H.raises(function() sm:ld_reduce(o, "prod") end,
           "ld_reduce: op 'prod' is not supported for f16 by multimem (NVLS) (valid: sum min max)", "strict: prod")
  H.raises(function() sm:ld_reduce(o:view(0, 3), { offset = 1 }) end,
           "ld_reduce: NVLS moves 4-byte units: offset 1 and n 3 of f16 must be even (multimem has no 16-bit forms)",
           "strict: an odd f16 offset")
  H.raises(function() sm:ld_reduce(tensor.new(9, "f16"):view(1, 8)) end,
           "ld_reduce: NVLS needs a 4-byte aligned local tensor (this view starts at an odd f16 element)",
           "strict: an odd local view")
  H.raises(function() sm:st(tensor.new(3, "f16"), 2) end,
           "st: NVLS moves 4-byte units: offset 2 and n 3 of f16 must be even", "strict: st of an odd length")
  H.raises(function() kernel.allreduce(sw, { algo = "multicast", op = "prod" }) end,
           "allreduce: op 'prod' is not supported for f16 by multimem (NVLS) (valid: sum min max)",
           "strict: the multicast all-reduce too")
  sw:tensor():fill(me + 1)
  c:barrier()
  sm:ld_reduce(o, "max") -- what NVLS does, the emulation does
  H.eq(o[63], k, "strict: a max NVLS has")
  c:barrier()
  H.raises(function() sw:multicast { lax = true } end,
           "multicast: window #" .. sw.seq .. "'s multicast is strict already: the first w:multicast() decides it (give {lax=true} there)",
           "lax comes too late")
  H.raises(function() sw:multicast { lax = 1 } end, "multicast: lax must be a boolean, got number", "lax: a boolean")
  H.raises(function() sw:multicast { lex = true } end, "multicast: unknown option 'lex' (valid: lax)", "options checked")
  c:barrier()
  sw:free()
  -- f32: NVLS reduces it by add alone
  local fw = c:window(8, "f32", opts)
  H.raises(function() fw:multicast():ld_reduce(tensor.new(8, "f32"), "max") end,
           "ld_reduce: op 'max' is not supported for f32 by multimem (NVLS) (valid: sum)", "strict: f32 max")
  c:barrier()
  fw:free()
end

-- ---- lax: the emulation's own arithmetic (the rest of this file)
local w = c:window(1000, "f32", opts)
local m = w:multicast { lax = true }
H.eq(m.lax, true, "lax")
H.truthy(m:why():find("; lax: NVLS's dtype, op and 4-byte rules are not applied (w:multicast{lax=true})", 1, true),
         "lax: why names it: " .. m:why())
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
H.eq(m2.lax, true, "lax kept")
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
