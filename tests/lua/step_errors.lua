-- Steppers refuse bad arguments with an error that names the argument and
-- what it may be, raised at the caller's line, before anything collective
-- happens (so every rank gets the same error and the next call works).
local H = require("harness")

local c = comm.world()
local k = c.size
local w = c:window(8, "i32")
w:tensor():fill(1 << c.rank)

local function refused(fn, plain, what)
  local err = H.raises(fn, plain, what)
  H.truthy(err:find("step_errors.lua:%d+:"), what .. ": the error points at the caller: " .. err)
end

refused(function() step.allreduce(w, { algo = "bogus" }) end,
        "step.allreduce: algo 'bogus' is not one of: ring, oneshot, twoshot, multicast", "algo")
refused(function() step.reduce_scatter(w, { algo = "tree" }) end,
        "step.reduce_scatter: algo 'tree' is not one of: ring, direct", "reduce_scatter algo")
refused(function() step.broadcast(w, 0, { algo = "oneshot" }) end,
        "step.broadcast: algo 'oneshot' is not one of: tree, ring, direct", "broadcast algo")
refused(function() step.allreduce(w, { op = "avg" }) end,
        "step.allreduce: op 'avg' is not one of: sum, prod, min, max", "op")
refused(function() step.allreduce(w, { skip = "fence" }) end,
        "step.allreduce: skip 'fence' is not one of: barrier, signal", "skip")
refused(function() step.allreduce(w, { algo = "hier", skip = "barrier" }) end,
        "step.allreduce: skip= has nothing to take from hier: its step across nodes is the "
        .. "communicator's all-reduce, which waits for its ranks (delay= still makes a rank late)",
        "skip with hier")
refused(function() step.allreduce(w, { colour = 1 }) end,
        "step.allreduce: unknown option 'colour' (valid: algo op n offset skip delay)", "unknown option")
refused(function() step.allgather(w, { op = "sum" }) end,
        "step.allgather: unknown option 'op' (valid: algo n offset skip delay)", "op on a copy")
refused(function() step.allreduce(w, "ring") end,
        "step.allreduce: options must be a table, got string", "options type")
refused(function() step.allreduce(w, { delay = 5 }) end,
        "step.allreduce: delay must be a table {rank=R, ms=M [, step=S]}, got number", "delay type")
refused(function() step.allreduce(w, { delay = { rank = 0 } }) end,
        "step.allreduce: delay needs rank= and ms=", "delay without ms")
-- delay.step: a step the stepper has (one past its last would delay
-- nothing, and with skip= blame a race that never ran); a string is named
do
  local steps = step.allreduce(w, { algo = "twoshot" })
  local n = steps.steps
  steps:free()
  if n > 0 then
    refused(function() step.allreduce(w, { algo = "twoshot", delay = { rank = 0, ms = 1, step = n + 1 } }) end,
            string.format("step.allreduce: delay.step must be 1..%d (this stepper's steps), got %d", n, n + 1),
            "delay.step past the last")
    refused(function() step.allreduce(w, { algo = "twoshot", delay = { rank = 0, ms = 1, step = 0 } }) end,
            string.format("step.allreduce: delay.step must be 1..%d (this stepper's steps), got 0", n),
            "delay.step 0")
  else -- one rank: no steps, nothing waits, a delay delays nothing
    local st = step.allreduce(w, { algo = "twoshot", delay = { rank = 0, ms = 1, step = 1 } })
    H.eq(st:run({ quiet = true }), true, "a delay at one rank: nothing to delay")
    st:free()
  end
  refused(function() step.allreduce(w, { delay = { rank = 0, ms = 1, step = "2" } }) end,
          'step.allreduce: delay.step must be an integer, a step of the stepper (1..st.steps), got "2" (a string)',
          "delay.step a string")
  refused(function() step.allreduce(w, { n = "4" }) end,
          'step.allreduce: n must be an integer 1..8, got "4" (a string)', "n a string")
end
refused(function() step.allreduce(w, { delay = { rank = k, ms = 1 } }) end,
        string.format("step.allreduce: delay.rank must be 0..%d, got %d", k - 1, k), "delay rank")
refused(function() step.allreduce(w, { delay = { rank = 0, ms = -1 } }) end,
        "step.allreduce: delay.ms must be a number 0..600000, got -1", "delay ms")
refused(function() step.allreduce(w, { delay = { rank = 0, ms = 1, when = 2 } }) end,
        "step.allreduce: delay: unknown option 'when' (valid: rank ms step)", "delay key")
refused(function() step.allreduce(w, { n = 0 }) end, "step.allreduce: n must be 1..8, got 0", "n")
refused(function() step.allreduce(w, { offset = 8 }) end, "step.allreduce: offset must be 0..7, got 8", "offset")
refused(function() step.allreduce(w, { offset = 6, n = 3 }) end, "step.allreduce: n must be 1..2, got 3", "n past the end")
refused(function() step.allreduce(w, { n = 2.5 }) end, "step.allreduce: n must be an integer 1..8, got 2.5", "n integer")
refused(function() step.broadcast(w) end,
        string.format("step.broadcast: root (a rank 0..%d) is missing", k - 1), "root missing")
refused(function() step.broadcast(w, k) end,
        string.format("step.broadcast: root must be 0..%d, got %d", k - 1, k), "root range")
refused(function() step.allreduce("w") end, "step.allreduce: window expected, got string", "window type")
refused(function() step.allreduce(tensor.new(4)) end, "step.allreduce: window expected, got tensor", "a tensor")

local wf = c:window(8, "f64")
refused(function() step.allreduce(wf) end,
        "step.allreduce: dtype f64 is not supported by the reduce kernels (valid: f32 f16 bf16 i32 u32)",
        "a dtype the kernels do not reduce")
wf:free()

-- a stepper's own calls
local st = step.allreduce(w)
refused(function() st:next(-1) end, "next: k (steps) must be 0..", "next(-1)")
refused(function() st:next("x") end, "next: k (steps) must be an integer", "next('x')")
refused(function() st:run(true) end, "run: options must be a table, got boolean", "run(true)")
refused(function() st:run({ loud = true }) end, "run: unknown option 'loud' (valid: quiet)", "run option")
H.eq(st:run({ quiet = true }), true, "the stepper works after its refused calls")
st:free()
st:free() -- idempotent
refused(function() st:next() end, "next: this stepper was freed", "a freed stepper")
H.truthy(tostring(st):find("freed", 1, true), "tostring says freed")

-- the next stepper on the window still works
st = step.allreduce(w, { algo = "twoshot" })
H.eq(st:run({ quiet = true }), true, "a new stepper after the errors")
st:free()
w:free()

-- a stepped multicast keeps NVLS's 4-byte rule (the emulation is strict),
-- unless the window's first multicast was lax
local hw = c:window(3 * k, "f16")
refused(function() step.allreduce(hw, { algo = "multicast", n = 2 * k + 1 }) end,
        "step.allreduce: multicast moves 4-byte units (NVLS's rule), but rank 0's chunk of f16 starts at 0 with "
        .. "3 elements", "an f16 chunk of odd length (rank 0 has one more)")
hw:free()
local lw = c:window(3 * k, "f16")
lw:multicast { lax = true }
lw:tensor():fill(1)
st = step.allreduce(lw, { algo = "multicast", n = 2 * k + 1 })
H.eq(st:run({ quiet = true }), true, "lax: the same stepper runs")
st:free()
lw:free()
print("step_errors: ok")
