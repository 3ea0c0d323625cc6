-- Bad input never reaches MPI: each case is a Lua error that names the
-- argument and the bound.  Every rank makes the same bad call, so a check
-- that let one through would hang or fail the run.
local H = require "harness"

local c = comm.world()
local me, n = c.rank, c.size
local t4 = tensor.new(4, "f32")

-- not a tensor
H.raises(function() c:allreduce(nil) end, "bad argument #1 to 'allreduce' (tensor expected, got nil)")
H.raises(function() c:broadcast(42, 0) end, "bad argument #1 to 'broadcast' (tensor expected, got number)")
H.raises(function() c:allgather(t4, {}) end, "bad argument #2 to 'allgather' (tensor expected, got table)")
H.raises(function() c:allgather(t4) end, "bad argument #2 to 'allgather' (tensor expected, got no value)")
H.raises(function() c:reducescatter(t4) end, "bad argument #2 to 'reducescatter' (tensor expected, got no value)")
H.raises(function() c:alltoall(t4, "x") end, "bad argument #2 to 'alltoall' (tensor expected, got string)")
H.raises(function() c:reduce(t4, 0, "sum", 3) end, "bad argument #4 to 'reduce' (tensor expected, got number)")
H.raises(function() c.allreduce(nil, t4) end, "comm expected, got nil")

-- out too small
H.raises(function() c:allgather(t4, tensor.new(4 * n - 1, "f32")) end,
         string.format("bad argument #2 to 'allgather' (out has %d elements, needs %d (4 x %d ranks))", 4 * n - 1, 4 * n, n))
H.raises(function() c:allreduce(t4, "sum", tensor.new(3, "f32")) end,
         "bad argument #3 to 'allreduce' (out has 3 elements, needs 4 (as many as t))")
H.raises(function() c:reduce(t4, 0, "max", tensor.new(2, "f32")) end,
         "bad argument #4 to 'reduce' (out has 2 elements, needs 4 (as many as t))")
H.raises(function() c:reducescatter(tensor.new(2 * n, "f32"), tensor.new(1, "f32")) end,
         string.format("bad argument #2 to 'reducescatter' (out has 1 elements, needs 2 (%d / %d ranks))", 2 * n, n))
H.raises(function() c:alltoall(tensor.new(2 * n, "f32"), tensor.new(2 * n - 1, "f32")) end,
         string.format("bad argument #2 to 'alltoall' (out has %d elements, needs %d (as many as t))", 2 * n - 1, 2 * n))

-- t not divisible by the number of ranks
if n > 1 then
  H.raises(function() c:reducescatter(tensor.new(2 * n + 1, "f32"), tensor.new(8, "f32")) end,
           string.format("bad argument #1 to 'reducescatter' (t has %d elements, not a multiple of %d ranks)", 2 * n + 1, n))
  H.raises(function() c:alltoall(tensor.new(2 * n + 1, "f32"), tensor.new(4 * n, "f32")) end,
           string.format("bad argument #1 to 'alltoall' (t has %d elements, not a multiple of %d ranks)", 2 * n + 1, n))
end

-- dtype mismatch
H.raises(function() c:allreduce(t4, "sum", tensor.new(4, "f16")) end,
         "bad argument #3 to 'allreduce' (out is f16 but t is f32 (dtypes must match))")
H.raises(function() c:allgather(tensor.new(1, "i8"), tensor.new(n, "u8")) end,
         "bad argument #2 to 'allgather' (out is u8 but t is i8 (dtypes must match))")
H.raises(function() c:reducescatter(tensor.new(n, "i32"), tensor.new(1, "i64")) end, "out is i64 but t is i32")
H.raises(function() c:alltoall(tensor.new(n, "f64"), tensor.new(n, "bf16")) end, "out is bf16 but t is f64")
H.raises(function() c:reduce(t4, 0, "sum", tensor.new(4, "u32")) end, "out is u32 but t is f32")

-- root and peer out of range
local range = string.format("(valid 0..%d)", n - 1)
H.raises(function() c:broadcast(t4, n) end, string.format("bad argument #2 to 'broadcast' (root %d out of range %s)", n, range))
H.raises(function() c:broadcast(t4, -1) end, "root -1 out of range " .. range)
H.raises(function() c:reduce(t4, n + 3) end, string.format("bad argument #2 to 'reduce' (root %d out of range %s)", n + 3, range))
H.raises(function() c:broadcast(t4) end, "bad argument #2 to 'broadcast' (number expected, got no value)")
H.raises(function() c:broadcast(t4, 0.5) end, "bad argument #2 to 'broadcast' (number has no integer representation)")
H.raises(function() c:send(t4, n) end, string.format("bad argument #2 to 'send' (peer %d out of range %s)", n, range))
H.raises(function() c:recv(t4, -2) end, "bad argument #2 to 'recv' (peer -2 out of range " .. range)

-- send / recv to oneself
H.raises(function() c:send(t4, me) end, string.format("bad argument #2 to 'send' (peer %d is this rank", me))
H.raises(function() c:recv(t4, me) end, string.format("bad argument #2 to 'recv' (peer %d is this rank", me))

-- unknown op: the message lists the valid ones
for _, call in ipairs {
  function() c:allreduce(t4, "mean") end,
  function() c:reduce(t4, 0, "mean") end,
  function() c:reducescatter(tensor.new(n, "f32"), tensor.new(1, "f32"), "mean") end,
} do
  local err = H.raises(call, "'mean'", "unknown op")
  H.truthy(err:find("sum prod min max avg", 1, true), "valid ops listed in: " .. err)
end
-- (every op is defined for every dtype on the host backend, so the
-- can_reduce refusal cannot be reached here; see host_can_reduce.)

-- out overlapping t outside the in-place layouts
local buf = tensor.new(4 * n + 4, "f32")
H.raises(function() c:allreduce(buf:view(0, 4), "sum", buf:view(1, 4)) end,
         "bad argument #3 to 'allreduce' (out overlaps t without being the in-place layout (out = t))")
H.raises(function() c:allgather(buf:view(me * 4 + 1, 4), buf:view(0, 4 * n)) end,
         "out overlaps t without being the in-place layout (t = out:view(rank * #t, #t))")
H.raises(function() c:reducescatter(buf:view(0, 4 * n), buf:view(me * 4 + 2, 4)) end,
         "out overlaps t without being the in-place layout (out = t:view(rank * #out, #out))")
H.raises(function() c:alltoall(buf:view(0, 2 * n), buf:view(1, 2 * n)) end, "out overlaps t")
-- views that share a storage but not bytes are fine
local a, b = buf:view(0, 4), buf:view(4, 4)
H.truthy(rawequal(c:allreduce(a, "sum", b), b), "disjoint views of one storage")

-- an argument past a collective's last: refused, never dropped unread (an
-- options table where the collective takes none, a value after {algo=})
local t4 = tensor.new(4)
H.raises(function() c:reduce(t4, 0, "sum", nil, { algo = "comm" }) end,
         "bad argument #5 to 'reduce' (c:reduce takes 4 arguments (no options table), got a table here)")
H.raises(function() c:alltoall(tensor.new(n), tensor.new(n), { x = 1 }) end,
         "bad argument #3 to 'alltoall' (c:alltoall takes 2 arguments (no options table), got a table here)")
H.raises(function() c:allreduce(t4, "sum", nil, { algo = "comm" }, 5) end,
         "bad argument #4 to 'allreduce' (c:allreduce takes 3 arguments and {algo=}, got a table here)")
H.eq(c:allreduce(t4:fill(1), "sum", nil, { algo = "comm" })[0], n, "{algo=} after the arguments still taken")
H.eq(c:allreduce(t4:fill(1), "sum", nil, nil)[0], n, "trailing nils are no arguments")
-- and the other functions that take no options table
H.raises(function() c:split(0, me, { x = 1 }) end,
         "bad argument #3 to 'split' (takes a color and a key (no options), got a table here)")
H.raises(function() tensor.from({ 1 }, "f32", { x = 1 }) end,
         "bad argument #3 to 'from' (takes a table and a dtype (no options), got a table here)")
local w1 = c:window(4)
H.raises(function() w1:info({ x = 1 }) end, "bad argument #1 to 'info' (takes no arguments, got a table here)")
H.eq(w1:info().n, 4, "w:info() with no argument")
w1:free()
H.raises(function() gcsh.graph(function() end, { x = 1 }) end,
         "bad argument #2 to 'graph' (takes one function (no options), got a table here)")

-- after all that, the communicator still works on every rank
H.eq(c:allreduce(tensor.from({ 1 }, "i32"))[0], n, "comm still usable")
if me == 0 then print(string.format("comm_errors: ok on %d ranks", n)) end
