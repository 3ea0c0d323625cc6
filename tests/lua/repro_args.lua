-- The reproducer helpers and bench name their argument when it is wrong
-- (issue 26), as the C bindings do, instead of failing inside themselves.
local H = require "harness"
local bench = require "gcsh.bench"

H.raises(function() repro.expect() end, "bad argument #1 to 'repro.expect' (tensor expected, got nil)")
H.raises(function() repro.expect(tensor.new(2), 3) end,
         "bad argument #2 to 'repro.expect' (tensor expected, got number)")
H.raises(function() repro.expect(tensor.new(2), tensor.new(2), 7) end,
         "bad argument #3 to 'repro.expect' (string expected, got number)")
H.raises(function() repro.expect(tensor.new(2), tensor.new(2), "x", {}) end,
         "bad argument #4 to 'repro.expect' (comm expected, got table)")
H.eq(repro.expect(tensor.new(2):fill(1), tensor.new(2):fill(1), "equal", comm.world()), true,
     "equal tensors pass")

H.raises(function() repro.need{ranks = "x"} end,
         "bad argument #1 to 'repro.need' (ranks must be a positive integer, got \"x\")")
H.raises(function() repro.need{ranks = 0} end,
         "bad argument #1 to 'repro.need' (ranks must be a positive integer, got 0)")
H.raises(function() repro.need{ranks = 1.5} end,
         "bad argument #1 to 'repro.need' (ranks must be a positive integer, got 1.5)")
H.raises(function() repro.need() end, "bad argument #1 to 'repro.need' (table expected, got nil)")
repro.need{ranks = 1} -- met everywhere: returns

H.raises(function() bench.nccl_tests(nil) end,
         "bad argument #1 to 'bench.nccl_tests' (file name expected, got nil)")
H.raises(function() bench.nccl_tests("/nonexistent/ar.txt") end,
         "bench.nccl_tests: /nonexistent/ar.txt: No such file or directory")
print("repro_args ok")
