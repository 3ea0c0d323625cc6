-- Bad input to the kernels: every error names the argument and the bound,
-- and nothing reaches a kernel (the window stays usable afterwards).
local H = require "harness"

local c = comm.world()
local kind = rawget(_G, "KERNEL_TEST_KIND")
local opts = kind and { kind = kind } or nil
local me, k = c.rank, c.size
local w = c:window(16, "f32", opts)

-- out too small, dtype mismatch
H.raises(function() kernel.reduce_peers(tensor.new(17, "f32"), w) end,
         "out has 17 elements, more than the window's 16", "reduce_peers: out longer than w")
H.raises(function() kernel.allreduce(w, { out = tensor.new(15, "f32") }) end,
         "out has 15 elements, needs 16 (n elements)", "allreduce: out too small")
H.raises(function() kernel.allreduce(w, { out = tensor.new(16, "f16") }) end,
         "out is f16 but the window is f32 (dtypes must match)", "allreduce: out dtype")
H.raises(function() kernel.reduce(tensor.new(4, "f32"), { tensor.new(4, "i32") }) end,
         "input #1 is i32 but out is f32 (dtypes must match)", "reduce: input dtype")
H.raises(function() kernel.reduce(tensor.new(4, "f32"), { tensor.new(4, "f32"), tensor.new(3, "f32") }) end,
         "input #2 has 3 elements, needs 4 (#out)", "reduce: input too short")
H.raises(function() kernel.reduce(tensor.new(4, "f32"), {}) end, "takes 1..16 input tensors, got 0",
         "reduce: no inputs")
local t = tensor.new(8, "f32")
H.raises(function() kernel.reduce(t:view(0, 4), { t:view(2, 4) }) end,
         "input #1 overlaps out without being out itself", "reduce: partial overlap")
kernel.reduce(t, { t, t }) -- in place is fine

-- ops and dtypes
H.raises(function() kernel.allreduce(w, { op = "avg" }) end,
         "op 'avg' is not supported for f32 by the kernels (valid: sum prod min max)", "avg")
H.raises(function() kernel.allreduce(w, { op = "xor" }) end, "xor", "unknown op")
local w64 = c:window(4, "f64", opts)
H.raises(function() kernel.allreduce(w64) end,
         "dtype f64 is not supported by the reduce kernels (valid: f32 f16 bf16 i32 u32)", "f64 window")
w64:free()
H.raises(function() kernel.reduce(tensor.new(4, "u8"), { tensor.new(4, "u8") }) end,
         "dtype u8 is not supported", "u8 tensors")

-- offsets and lengths past the window
H.raises(function() kernel.allreduce(w, { offset = 16 }) end, "offset must be 0..15, got 16", "offset past")
H.raises(function() kernel.allreduce(w, { offset = -1 }) end, "offset must be 0..15, got -1", "negative offset")
H.raises(function() kernel.allreduce(w, { offset = 10, n = 7 }) end,
         "n must be 1..6 (offset 10 of the window's 16 elements), got 7", "n past the window")
H.raises(function() kernel.allreduce(w, { n = 0 }) end, "n must be 1..16", "n = 0")
H.raises(function() kernel.allreduce(w, { offset = 1.5 }) end, "offset must be an integer, got 1.5", "fractional offset")
H.raises(function() kernel.reduce_peers(tensor.new(4, "f32"), w, { offset = 14 }) end,
         "offset 14 + n 4 runs past the window's 16 elements", "reduce_peers past the end")
H.raises(function() w:multicast():st(tensor.new(4, "f32"), 13) end,
         "offset 13 + #src 4 runs past the window's 16 elements", "st past the end")

-- options, algorithms, roots, chunks
H.raises(function() kernel.allreduce(w, { algo = "tree" }) end,
         "unknown algo 'tree' (valid: auto oneshot twoshot ring ll ll128 multicast comm nccl_dev hier)", "unknown algo")
H.raises(function() kernel.broadcast(0, w, { algo = "twoshot" }) end,
         "broadcast: unknown algo 'twoshot' (valid: direct tree ring)", "broadcast algo")
H.raises(function() kernel.reduce_scatter(w, { algo = "tree" }) end,
         "reduce_scatter: unknown algo 'tree' (valid: direct ring)", "reduce_scatter algo")
H.raises(function() kernel.allreduce(w, { algo = 7 }) end, "algo", "algo of the wrong type")
H.raises(function() kernel.allreduce(w, { colour = 1 }) end,
         "unknown option 'colour' (valid: op offset n out algo)", "unknown option")
H.raises(function() kernel.allgather(w, { op = "sum" }) end, "unknown option 'op' (valid: offset n out algo)",
         "allgather takes no op")
H.raises(function() kernel.reduce_to(k, w) end, "root " .. k .. " is not in the window's team", "root out of range")
H.raises(function() kernel.broadcast(-1, w) end, "root -1 is not in the window's team", "negative root")
if k > 1 then
  -- chunks are balanced (kernel.plan): n need not divide; out needs this rank's chunk
  local n = k + 1
  local need = n // k + (me < n % k and 1 or 0)
  H.raises(function() kernel.reduce_scatter(w, { n = n, out = tensor.new(need - 1, "f32") }) end,
           "out has " .. (need - 1) .. " elements, needs " .. need .. " (this rank's chunk of n)",
           "reduce_scatter out shorter than the chunk")
end

-- out may not be the window's own memory
H.raises(function() kernel.allreduce(w, { out = w:tensor() }) end,
         "out is memory of the window itself (omit out to keep the result in the window)",
         "out aliasing the window")
-- reduce_peers' out is not an option: the advice is a local tensor
H.raises(function() kernel.reduce_peers(w:peer(me), w) end,
         "reduce_peers: out is memory of the window itself (a slice is read by every peer while "
         .. "out is written: give a local tensor, tensor.new(n, dtype))",
         "reduce_peers into the window")
H.raises(function() kernel.reduce_peers(w:peer(me), w, { op = "max" }) end,
         "give a local tensor, tensor.new(n, dtype))", "reduce_peers into the window, with options")

-- not a window, freed windows
H.raises(function() kernel.allreduce(tensor.new(4)) end, "window expected", "a tensor for w")
local m = w:multicast()
local dead = c:window(4, "f32", opts)
dead:free()
H.raises(function() kernel.allreduce(dead) end, "attempt to use a freed window", "freed window")

-- nothing ran: the window still works
w:tensor():fill(me + 1)
local res = kernel.allreduce(w, { algo = "oneshot" })
H.eq(res:sum(), 16 * k * (k + 1) // 2, "the window works after the errors")
c:barrier()
w:free()
H.raises(function() m:ld_reduce(tensor.new(4, "f32")) end, "attempt to use a freed window", "multicast after w:free")
