-- Checked and unchecked send/recv in turn on a ring (issue 35's trust:
-- a verdict must be true): every rank runs the same correct program, a
-- burst of unchecked pairs then a checked pair of another size, so a rank
-- often reaches its checked call while its peer is still in an unchecked
-- one whose message has already arrived (MPI sent it eagerly).  Rank 0's
-- checker must wait for that peer, not call it a mismatch: the peer's call
-- is an earlier one of the pair (its pair_seq), and what a rank said of an
-- unchecked call is over once it comes to a check.  Before that, this
-- failed at 2 ranks on nearly every run ("send/recv: [1] skipped the
-- check ... [0] send to 1 f32 x6, [1] recv from 0 f32 x1").
local H = require "harness"
local c = comm.world()
local me, n = c.rank, c.size
if n < 2 then print("check_p2p_mixed: one rank, no pair") return end
local nxt, prv = (me + 1) % n, (me - 1) % n
local function ring(t, r) -- even ranks send first, odd ones receive first
  if me % 2 == 0 then c:send(t, nxt); c:recv(r, prv) else c:recv(r, prv); c:send(t, nxt) end
end
local was = gcsh.check(true)
for size = 1, 60 do
  local t, r = tensor.new(size, "f32"):fill(me), tensor.new(size, "f32")
  gcsh.check(false)
  for _ = 1, 3 do ring(t, r) end
  gcsh.check(true)
  H.eq(r[size - 1], prv, "unchecked burst at " .. size .. ": from the previous rank")
  local t2, r2 = tensor.new(size + 1, "f32"):fill(me + 100), tensor.new(size + 1, "f32")
  ring(t2, r2)
  H.eq(r2[size], prv + 100, "checked pair at " .. size + 1 .. ": from the previous rank")
end
-- and a real mismatch next to an unchecked peer is still one: rank 1
-- receives 3 elements unchecked where rank 0 sends 4 checked
if me <= 1 then
  local ok, err
  if me == 0 then
    ok, err = pcall(c.send, c, tensor.new(4, "f32"), 1)
  else
    gcsh.check(false)
    ok, err = pcall(c.recv, c, tensor.new(3, "f32"), 0)
    gcsh.check(true)
  end
  if me == 0 then
    H.truthy(not ok and tostring(err):find("[0] send to 1 f32 x4, [1] recv from 0 f32 x3", 1, true),
             "the mismatch is named: " .. tostring(err))
  end
end
gcsh.check(was)
print("check_p2p_mixed: ok")
