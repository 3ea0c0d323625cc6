-- step.persistent: the persistent all-reduce's doorbell protocol a step at
-- a time (rung, look, run, done per call) over the stepper's own bell with
-- the real entries' encoding; the region equals `calls` all-reduces; a
-- torn entry is not taken; bad options refused at the caller's line.
local H = require("harness")

local c = comm.world()
local k, me = c.size, c.rank
local w = c:window(8, "i32")

-- the encoding is core/kpersist.h's: word | (call + 1) << 32, read back
local pairs4 = kernel.persistent_entry(2, { offset = 3, n = 5, dtype = "i32", op = "max" })
H.eq(#pairs4, 4, "four pairs")
for i = 1, 4 do H.eq(pairs4[i] >> 32, 3, "pair " .. i .. " carries tag call + 1") end
H.eq(pairs4[1] & 0xffffffff, 3, "pair 0: the offset")
H.eq(pairs4[3] & 0xffffffff, 5, "pair 2: n")
local job = kernel.persistent_job(2, pairs4)
H.eq(job.offset, 3, "job offset")
H.eq(job.n, 5, "job n")
H.eq(job.dtype, "i32", "job dtype")
H.eq(job.op, "max", "job op")
H.eq(kernel.persistent_job(3, pairs4), nil, "another call's entry is not taken")
local torn = { pairs4[1], pairs4[2], pairs4[3], (pairs4[4] & 0xffffffff) | (2 << 32) }
H.eq(kernel.persistent_job(2, torn), nil, "an entry whose last pair carries an old tag is not taken")
H.eq(kernel.persistent_depth, 64, "the ring's depth")
H.raises(function() kernel.persistent_entry(0, { n = 0 }) end, "persistent_entry: n must be 1..", "n 0")
H.raises(function() kernel.persistent_entry(-1, { n = 1 }) end, "persistent_entry: call must be 0..", "call -1")
H.raises(function() kernel.persistent_entry(0, { n = 1, size = 2 }) end,
         "persistent_entry: unknown option 'size' (valid: dtype n offset op)", "unknown option")

-- the steps, on every rank alike
w:tensor():fill(1 << me)
local st = step.persistent(w, { n = 4, calls = 2 })
H.eq(st.steps, 8, "four steps a call")
local want_text = { "(call 0: rung)", "(call 0: look)", "(call 0: run)", "(call 0: done)",
                    "(call 1: rung)", "(call 1: look)", "(call 1: run)", "(call 1: done)" }
local all = (1 << k) - 1
for s = 1, 8 do
  st:next(1, { quiet = true })
  H.eq(st.step, s, "step " .. s)
  H.truthy(st.text:find(want_text[s], 1, true), "step " .. s .. " says " .. want_text[s] .. ": " .. st.text)
  local mine = st.text:match("\n  r" .. me .. " +([^\n]*)")
  H.truthy(mine, "a row for rank " .. me .. " at step " .. s)
  local call, part = (s - 1) // 4, (s - 1) % 4 + 1
  local rung, done, tags = mine:match("^(%d+)%*? +(%d+)%*? +(%d+ %d+ %d+ %d+)")
  H.eq(tonumber(rung), call + 1, "rung at step " .. s)
  H.eq(tonumber(done), part == 4 and call + 1 or call, "done at step " .. s)
  H.eq(tags, string.rep(tostring(call + 1), 4, " "), "the entry's tags at step " .. s)
  local v = w:tensor()[0]
  local want = part >= 3 and (call == 0 and all or k * all) or (call == 0 and (1 << me) or all)
  H.eq(v, want, "the region at step " .. s)
end
H.eq(st:run({ quiet = true }), true, "two calls equal two c:allreduce calls")
st:next(1, { quiet = true })
H.truthy(st.text:find("at step 8 of 8 already", 1, true), "past the end says so")
st:reset()
H.eq(st.step, 0, "reset: step 0")
H.eq(w:tensor()[0], 1 << me, "reset: the start data")
H.eq(st:run({ quiet = true }), true, "and right again")
st:free()

-- a call left part-way on one rank (as an interrupt leaves it): the next
-- call starts again on every rank, from the start data
w:tensor():fill(1 << me)
local st2 = step.persistent(w, { n = 4, calls = 1 })
st2:next(2, { quiet = true })
if me == k - 1 then st2._.dirty = true end
st2:next(1, { quiet = true })
H.eq(st2.step, 1, "after a call left part-way on rank " .. k - 1 .. ": step 1 again")
H.eq(w:tensor()[0], 1 << me, "... with the start data")
H.eq(st2:run({ quiet = true }), true, "... and right to the end")
st2:free()
H.truthy(tostring(st):find(", freed)", 1, true), "a freed stepper says so")
H.raises(function() st:next() end, "next: this stepper was freed", "a freed stepper refuses")

local function refused(fn, plain, what)
  local err = H.raises(fn, plain, what)
  H.truthy(err:find("step_persist.lua:%d+:"), what .. ": the error points at the caller: " .. err)
end
refused(function() step.persistent(w, { calls = 0 }) end, "step.persistent: calls must be an integer 1..64, got 0",
        "calls")
refused(function() step.persistent(w, { n = 9 }) end, "step.persistent: n must be an integer 1..8, got 9", "n")
refused(function() step.persistent(w, { op = "xor" }) end,
        "step.persistent: op 'xor' is not one of: sum, prod, min, max", "op")
refused(function() step.persistent(w, { colour = 1 }) end,
        "step.persistent: unknown option 'colour' (valid: calls n offset op)", "unknown option")
refused(function() step.persistent(42) end, "step.persistent: window expected, got number", "no window")
w:free()

-- a freed window: the error names it, at the caller's line
local gone = c:window(4, "i32")
gone:free()
refused(function() step.persistent(gone) end, "step.persistent: the window was freed", "a freed window")
refused(function() step.allreduce(gone) end, "step.allreduce: the window was freed", "a freed window (allreduce)")
