-- c:loop, the C-side reference loop of bench.overhead: it runs the collective
-- iters times with the method's own argument checks, and bench.overhead
-- reports both loops.
local H = require "harness"
local c = comm.world()

local t = tensor.new(5, "i64"):fill(1)
local s = c:loop("allreduce", 3, t)
H.truthy(type(s) == "number" and s >= 0, "loop returns seconds")
H.values(t, { size ^ 3 // 1, size ^ 3 // 1, size ^ 3 // 1, size ^ 3 // 1, size ^ 3 // 1 },
         nil, "three in-place all-reduces")

local b = tensor.new(3, "f32"):fill(rank)
c:loop("broadcast", 2, b, 0)
H.values(b, { 0, 0, 0 }, nil, "broadcast from the loop")

H.raises(function() c:loop("bogus", 1, t) end, "unknown collective 'bogus'", "unknown name")
H.raises(function() c:loop("allreduce", 0, t) end, "iters must be 1..1e9", "iters bound")
H.raises(function() c:loop("allreduce", 1, t, "nope") end, "nope", "its argument checks")
H.raises(function() c:loop("broadcast", 1, b, size) end, "root " .. size .. " out of range",
         "root checked")

local rows = require("gcsh.bench").overhead{ sizes = { 8, 4096 }, iters = 3, reps = 1, quiet = true }
H.eq(#rows, 2, "one row per size")
H.eq(rows[2].size, 4096, "bytes of the second size")
H.truthy(rows[1].lua_us > 0 and rows[1].c_us > 0 and rows[1].checked_us > 0, "all three loops timed")
H.near(rows[1].check_us, rows[1].checked_us - rows[1].lua_us, 1e-9, "check cost = checked - unchecked")
