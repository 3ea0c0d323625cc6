-- Races made visible: a stepper without its synchronisation (skip=) and
-- with one rank late (delay=) gives a wrong result, :run() says false, the
-- diagram marks the wrong cell with ! and a note names the read and the
-- step it overtook.  The late rank really sleeps and the early reader really
-- reads stale data; the on-time ranks keep step with each other, so the
-- outcome is the same every run.  With the barriers kept, the delay only
-- delays.
local H = require("harness")

local c = comm.world()
local k, me = c.size, c.rank
local LATE_MS = 200

local w = c:window(3 * k + 1, "i32")

local function fresh(opts)
  w:tensor():fill(1 << me)
  return step.allreduce(w, opts)
end

local function text_has(st, plain, what) H.truthy(st.text:find(plain, 1, true), what .. ": '" .. plain .. "' in\n" .. st.text) end

-- A delay alone: the barriers wait for the late rank; the result is right.
for _, algo in ipairs(step.algos.allreduce) do
  local st = fresh({ algo = algo, delay = { rank = k - 1, ms = 20 } })
  H.eq(st:run({ quiet = true }), true, algo .. " with a delay and its barriers")
  H.eq(#st.wrong, 0, algo .. ": no wrong cell")
  st:free()
end

for _, skip in ipairs({ "signal", "barrier" }) do
  if k >= 3 then
    -- rank 1 late at step 2 only: rank 2 reads rank 1's chunk at step 3
    -- before rank 1 wrote it at step 2, and nothing else goes wrong
    local st = fresh({ algo = "ring", skip = skip, delay = { rank = 1, ms = LATE_MS, step = 2 } })
    H.eq(st:run(), false, skip .. ": run with the race")
    H.eq(#st.wrong, 1, skip .. ": one wrong cell: " .. table.concat(st.wrong, " | "))
    H.truthy(st.wrong[1]:match("^! step 3: r2%.c%d+ holds [%d,%-]+, expected [%d,%-]+: "
                               .. "r2 read r1%.c%d+ too early, before step 2 wrote it$"),
             skip .. ": the note names the early read: " .. tostring(st.wrong[1]))
    text_has(st, "! wrong: a read came too early or too late", skip)
    text_has(st, "result: WRONG", skip)
    -- the printed grid of step 3 marks r2's cell with !
    H.truthy(st.text:match("step 3 of %d+[^\n]*\n.-\n  r2  [^\n]*!"), skip .. ": r2's row has a ! cell")
    -- a reset puts the right data back; the same race again gives the same note
    local note = st.wrong[1]
    st:reset()
    H.eq(st:run({ quiet = true }), false, skip .. ": the race again")
    H.eq(st.wrong[1], note, skip .. ": the same note again")
    st:free()
  elseif k == 2 then
    -- rank 1 late at step 1: rank 0 copies rank 1's chunk at step 2 before
    -- rank 1 reduced it, and rank 1 then reduces what rank 0 overwrote
    local st = fresh({ algo = "ring", skip = skip, delay = { rank = 1, ms = LATE_MS, step = 1 } })
    H.eq(st:run({ quiet = true }), false, skip .. ": run with the race at 2 ranks")
    local all = table.concat(st.wrong, "\n")
    H.truthy(all:find("r0 read r1.c1 too early, before step 1 wrote it", 1, true),
             skip .. ": the early read is named: " .. all)
    st:free()
  else
    -- one rank: no peer to race with
    local st = fresh({ algo = "ring", skip = skip, delay = { rank = 0, ms = 1 } })
    H.eq(st:run({ quiet = true }), true, skip .. ": one rank cannot race")
    st:free()
  end
end

-- One-shot in place: the late rank loads its peers' slices after they
-- stored the result there (a read after the next write): counted twice.
if k >= 2 then
  local st = fresh({ algo = "oneshot", skip = "barrier", delay = { rank = 0, ms = LATE_MS } })
  H.eq(st:run({ quiet = true }), false, "oneshot: the late rank's loads come too late")
  local peers = {}
  for r = 1, k - 1 do peers[#peers + 1] = "r" .. r end
  local others = table.concat(peers, ", ") .. " too late, after step 2 overwrote "
                 .. (k == 2 and "it" or "them")
  H.truthy(table.concat(st.wrong, "\n"):find("r0 read " .. others, 1, true),
           "oneshot: the late read is named: " .. table.concat(st.wrong, " | "))
  st:free()
end

-- One step per call: the shell's wait between lines is a barrier, so no
-- read overtakes a write, and the stepper says why.
local st = fresh({ algo = "ring", skip = "signal", delay = { rank = k - 1, ms = 20 } })
if st.steps > 0 then
  st:next()
  text_has(st, "st:next(2) or st:run() lets a read overtake a write", "one step per call")
  H.eq(#st.wrong, 0, "one step per call: nothing wrong")
end
st:free()

-- skip without a delay: every barrier is gone from every rank; a real race
-- whose outcome varies, but the stepper runs to the end and resets cleanly.
st = fresh({ algo = "ring", skip = "barrier" })
H.eq(type(st:run({ quiet = true })), "boolean", "skip alone runs to the end")
st:free()
st = fresh({ algo = "ring" })
H.eq(st:run({ quiet = true }), true, "a stepper without race options afterwards")
st:free()

-- Two-shot's all-gather (step 2) late: a late rank's stores still land,
-- but the ranks that finished first held the old chunk when they finished,
-- so run says false
if k >= 2 then
  local st = fresh({ algo = "twoshot", skip = "barrier", delay = { rank = 1, ms = LATE_MS, step = 2 } })
  H.eq(st:run({ quiet = true }), false, "twoshot without its barrier, one rank late")
  H.truthy(#st.wrong > 0, "twoshot: wrong cells noted")
  text_has(st, "without the barrier, a read of the result at that moment is wrong", "twoshot")
  st:free()
end

-- A rank's data counted twice reads as that rank twice ("1+1"), not as
-- the rank its bits would name (2 + 2 is 4, rank 2's bit): at 2 ranks the
-- late rank 1 adds rank 0's copy of its own chunk to itself.
if k == 2 then
  local st = fresh({ algo = "ring", skip = "signal", delay = { rank = 1, ms = LATE_MS, step = 1 } })
  H.eq(st:run({ quiet = true }), false, "twice: the race")
  local all = table.concat(st.wrong, "\n")
  H.truthy(all:find("r1.c1 holds 1+1 (rank 1's data twice), expected 0,1", 1, true), "twice: " .. all)
  H.truthy(all:find("r0.c1 holds 1, expected 1+1", 1, true), "twice, expected: " .. all)
  H.eq(st.cells.r1[2], "1+1", "twice: the cell")
  st:free()
end

-- Whatever the race, a note names what a cell holds and what it should
-- hold as sets of ranks ("0-2+1"), never as raw values: bits that name
-- no set are followed through the moves that made them.
if k >= 2 then
  local steps = 2 * (k - 1)
  for _, skip in ipairs({ "signal", "barrier" }) do
    for _, late in ipairs({ 1, k - 1 }) do
      for s = 1, math.min(3, steps) do
        local st = fresh({ algo = "ring", skip = skip, delay = { rank = late, ms = 60, step = s } })
        st:run({ quiet = true })
        for _, note in ipairs(st.wrong) do
          local holds, expected = note:match("holds (%S+).*, expected ([^:]+):")
          local set = "^[%d,%-+]+$"
          H.truthy(holds and holds:match(set) and expected:match(set),
                   string.format("%s, rank %d late at step %d: sets in '%s'", skip, late, s, note))
        end
        st:free()
      end
    end
  end
end

-- A delay without step= makes the rank late at step 1 only: the same
-- race as step = 1, note for note.
if k >= 3 then
  local a = fresh({ algo = "ring", skip = "signal", delay = { rank = 1, ms = LATE_MS } })
  a:run({ quiet = true })
  local b = fresh({ algo = "ring", skip = "signal", delay = { rank = 1, ms = LATE_MS, step = 1 } })
  b:run({ quiet = true })
  H.eq(table.concat(a.wrong, "\n"), table.concat(b.wrong, "\n"), "delay without step= is step 1")
  H.truthy(#a.wrong > 0, "delay at step 1: a race")
  a:free()
  b:free()
end

-- The race does not depend on the sleep: the late rank waits until the
-- on-time ranks have gone as far as they can without it, so a delay of 0
-- ms (no head start at all) gives the same race, note for note, as 200 ms.
if k >= 2 then
  for _, skip in ipairs({ "signal", "barrier" }) do
    local a = fresh({ algo = "ring", skip = skip, delay = { rank = k - 1, ms = 0 } })
    a:run({ quiet = true })
    local b = fresh({ algo = "ring", skip = skip, delay = { rank = k - 1, ms = LATE_MS } })
    b:run({ quiet = true })
    H.truthy(#b.wrong > 0, skip .. ": the race with a sleep")
    H.eq(table.concat(a.wrong, "\n"), table.concat(b.wrong, "\n"), skip .. ": 0 ms, the same race")
    a:free()
    b:free()
  end
end

w:free()

-- the race note counts: twice, three times, four times, per rank
local C = require("gcsh.step_cells")
H.eq(C.repeated({ [0] = 1, [1] = 1 }, 2), "", "no rank more than once")
H.eq(C.repeated({ [0] = 1, [1] = 2 }, 2), "rank 1's data twice", "twice")
H.eq(C.repeated({ [0] = 2, [2] = 2 }, 3), "ranks 0, 2's data twice", "two ranks twice")
H.eq(C.repeated({ [1] = 3, [2] = 3, [3] = 4 }, 4), "ranks 1, 2's data three times, rank 3's four times",
     "three and four times")
H.eq(C.repeated({ [0] = 5 }, 1), "rank 0's data 5 times", "more")
print("step_race: ok")

