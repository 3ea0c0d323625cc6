-- Bad input: each case is a Lua error naming the argument and the bound,
-- raised the same way on every rank (creation errors are agreed first), with
-- nothing registered; the next window still works.
local H = require "harness"

local c = comm.world()
local me, n = c.rank, c.size
local per_node = tonumber(os.getenv("GCSH_RANKS_PER_NODE") or "")

-- sizes
H.raises(function() c:window(0) end, "bad argument #1 to 'window' (n must be 1..1099511627776, got 0)")
H.raises(function() c:window(-5) end, "n must be 1..1099511627776, got -5")
H.raises(function() c:window(2.5) end, "bad argument #1 to 'window' (n must be an integer, got 2.5)")
H.raises(function() c:window("x") end, "bad argument #1 to 'window' (number expected, got string)")
H.raises(function() c:window() end, "bad argument #1 to 'window' (number expected, got no value)")
H.raises(function() c:window(1 << 41) end, "n must be 1..1099511627776, got 2199023255552")
H.raises(function() c:window(1 << 40, "f64") end, "exceed the host kind's limit here")
H.raises(function() c:window(math.maxinteger) end, "n must be 1..")
-- dtype, kind, options
H.raises(function() c:window(4, "f33") end, "bad argument #2 to 'window' (unknown dtype 'f33' (valid:")
H.raises(function() c:window(4, 7) end, "bad argument #2 to 'window' (string expected, got number)")
H.raises(function() c:window(4, "f32", { kind = "gpu" }) end,
         "bad argument #3 to 'window' (unknown kind 'gpu' (valid: host nccl vmm))")
H.raises(function() c:window(4, "f32", { kind = "NCCL" }) end, "unknown kind 'NCCL' (valid: host nccl vmm)")
H.raises(function() c:window(4, "f32", { knd = "host" }) end, "unknown option 'knd' (valid: kind)")
-- non-string keys, and several unknown ones: every rank names the same (the first sorted)
H.raises(function() c:window(4, "f32", { 1, 2 }) end, "bad argument #3 to 'window' (unknown option '1' (valid: kind))")
H.raises(function() c:window(4, "f32", { zz = 1, kind = "host", yy = 2, [3] = 0 }) end,
         "bad argument #3 to 'window' (unknown option '3' (valid: kind))")
H.raises(function() c:window(4, "f32", "host") end, "bad argument #3 to 'window' (table expected, got string)")
H.raises(function() c:window(4, "f32", { kind = 3 }) end, "kind must be a string, got number")
H.raises(function() c.window(nil, 4) end, "comm expected, got nil")

-- a mismatch: different n on one rank is the same error on every rank
if n > 1 then
  local err = H.raises(function() c:window(me == 1 and 1025 or 1024) end, "ranks disagree")
  local others = n == 2 and "[0]" or (n == 3 and "[0,2]" or string.format("[0,2-%d]", n - 1))
  H.truthy(err:find(others .. " 1024 f32 host, [1] 1025 f32 host", 1, true), "folded ranks: " .. err)
  -- dtype and kind mismatches name each rank's arguments
  H.raises(function() c:window(8, me == 0 and "f32" or "i32") end, "[0] 8 f32 host, [")
  -- a bad argument on one rank only is still a collective error
  local e2 = H.raises(function() c:window(me == n - 1 and 0 or 16) end, "ranks disagree")
  H.truthy(e2:find(string.format("[%d] bad argument #1 to 'window' (n must be", n - 1), 1, true), e2)
  -- windows and signals at the same point
  H.raises(function() if me == 0 then c:signals(4) else c:window(4) end end, "window/signals")
end
-- the next window works, with the same sequence number everywhere
local w = c:window(4)
local seqs = c:agree(tostring(w.seq))
for r = 1, n do H.eq(seqs[r], tostring(w.seq), "sequence numbers agree") end

-- peers and views
local team_size = per_node and math.min(per_node, n - (me // per_node) * per_node) or n
H.raises(function() w:peer(n) end, string.format("bad argument #1 to 'peer' (peer %d out of range (the comm has ranks 0..%d))", n, n - 1))
H.raises(function() w:peer(-1) end, "peer -1 out of range")
H.raises(function() w:peer("a") end, "bad argument #1 to 'peer' (number expected, got string)")
H.raises(function() w:peer(0.5) end, "number has no integer representation")
if team_size < n then
  local outside = (me + team_size) % n
  H.raises(function() w:peer(outside) end,
           string.format("rank %d is on node %d; loads and stores reach only node %d's ranks ",
                         outside, gcsh.node_of(outside), gcsh.node))
end
local mine = w:tensor()
H.raises(function() return mine[4] end, "index 4 out of range for tensor of length 4 (valid 0..3)")
H.raises(function() return mine[-1] end, "index -1 out of range")
H.raises(function() mine[4] = 1 end, "index 4 out of range")
H.raises(function() mine:view(5) end, "offset must be 0..4, got 5")
H.raises(function() mine:view(2, 3) end, "offset 2 + n 3 = 5 exceeds length 4")
H.raises(function() mine:view(0, -1) end, "n must be >= 0")
H.raises(function() mine:copy(tensor.new(4, "f64")) end, "copy: dtype mismatch: destination f32, source f64")
H.raises(function() mine:copy(tensor.new(5, "f32")) end, "copy: length mismatch")
H.raises(function() w:peer(me):copy(tensor.new(4, "i32")) end, "dtype mismatch")
H.raises(function() mine[0] = "x" end, "bad value for tensor element 0")
H.raises(function() w.n = 3 end, "cannot set field 'n' of a window (its fields are read-only)")
w:free()
print("window_errors ok")
