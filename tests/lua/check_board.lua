-- Collective checks on the check board (collcheck.h): ranks of rank 0's node post
-- fingerprints in shared memory; a check where everyone agrees passes there,
-- anything else escalates to the coordinator, and both give one verdict.
-- Under GCSH_RANKS_PER_NODE (tests/sh) only node 0's communicators use it.
local H = require "harness"

local c = comm.world()
local me, k = c.rank, c.size
local function counts() return gcsh.check_counts() end

-- lock-step collectives pass on the board (some may escalate when the
-- machine is busy: ranks share cores here)
local before = counts()
local t = tensor.new(4, "i32")
for _ = 1, 200 do t:fill(me + 1); c:allreduce(t) end
H.eq(t[0], k * (k + 1) // 2, "values after 200 checked all-reduces")
local after = counts()
H.eq(after.board + after.coordinator - before.board - before.coordinator, 200,
     "every checked all-reduce went one way or the other")
H.eq(after.failed, before.failed, "none failed")
if k > 1 and not os.getenv("GCSH_RANKS_PER_NODE") then
  H.truthy(after.board > before.board, "some passed on the board")
end

-- a late rank: the others escalate, then agree; the result is right
t:fill(me + 1)
if me == k - 1 then gcsh.sleep(0.05) end
c:allreduce(t)
H.eq(t[0], k * (k + 1) // 2, "late rank: the all-reduce still ran")

-- a mismatch: the same message on every rank, nothing ran; a retry in the
-- same command (the next attempt of the same sequence number) then passes
local seq_err
for attempt = 1, 3 do
  local n = (attempt == 1 and me == k - 1 and k > 1) and 5 or 4
  local ok, err = pcall(c.allreduce, c, tensor.new(n, "i32"):fill(1))
  if attempt == 1 and k > 1 then
    H.truthy(not ok, "attempt 1 fails")
    seq_err = err
  else
    H.truthy(ok, "attempt " .. attempt .. " passes: " .. tostring(err))
  end
end
if k > 1 then
  H.truthy(seq_err:find("collective mismatch: allreduce #", 1, true), "mismatch named: " .. seq_err)
  H.truthy(seq_err:find("i32 x5 sum", 1, true) and seq_err:find("i32 x4 sum", 1, true),
           "both calls named: " .. seq_err)
  local all = c:agree(seq_err)
  for r = 2, #all do H.eq(all[r], all[1], "the same message on every rank") end
end

-- a late rank after a mismatch, in the same command: everyone retries
if k > 1 then
  local ok = pcall(c.barrier, c, me == 0 and nil or nil)
  H.truthy(ok, "barrier")
  local n = me == 0 and 3 or 2
  local ok1 = pcall(c.allreduce, c, tensor.new(n, "i32"))
  H.truthy(not ok1, "mismatched again")
  if me == 1 then gcsh.sleep(0.05) end
  t:fill(2)
  c:allreduce(t)
  H.eq(t[0], 2 * k, "after a mismatch and a late rank, the next one runs")
end

-- communicators made and freed in a loop: slots are taken over, checks go on
for i = 1, 80 do
  local s = c:split(0)
  local x = tensor.new(1, "i32"):fill(1)
  s:allreduce(x)
  if x[0] ~= k then H.eq(x[0], k, "split " .. i) end
  s:free()
end

-- kernel collectives and windows are checked the same way
local w = c:window(8, "i32")
w:tensor():fill(me)
if #w.team < c.size then -- a node of several (GCSH_RANKS_PER_NODE): refused, tests/lua/kernel_team.lua
  H.raises(function() kernel.allreduce(w, { algo = "oneshot" }) end, "allreduce: algo 'oneshot' runs over the window's team, ranks")
else
  local res = kernel.allreduce(w, { algo = "oneshot" })
  H.eq(res[0], k * (k - 1) // 2, "kernel all-reduce after board checks")
end
w:free()
H.eq(counts().failed, after.failed + ((k > 1) and 2 or 0), "only the two mismatches failed")
