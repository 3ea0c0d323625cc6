-- A rank's word on an unchecked call is over once it comes to a check
-- (src/shell/collcheck_coord.c): bench's shape, an unchecked burst of
-- send/recv on a ring, a checked collective, then a checked pair of
-- another size.  Rank 0's checker used to meet the checked pair with what
-- a peer had said of its unchecked burst before the collective ("[1]
-- send to 0 f16 x256, [0] recv from 1 f16 x64": comm_bench's sendrecv in
-- CI under load; at 2 ranks here, most runs).  A checked call meeting an
-- unchecked peer's earlier call with no check in between: check_p2p_order.lua.
local H = require "harness"
local c = comm.world()
local me, n = c.rank, c.size
if n < 2 then print("check_p2p_mixed: one rank, no pair") return end
local nxt, prv = (me + 1) % n, (me - 1) % n
local function ring(t, r) -- even ranks send first, odd ones receive first
  if me % 2 == 0 then c:send(t, nxt); c:recv(r, prv) else c:recv(r, prv); c:send(t, nxt) end
end
local was = gcsh.check(true)
local ones = tensor.new(1, "f32")
for size = 1, 60 do
  local t, r = tensor.new(size, "f32"):fill(me), tensor.new(size, "f32")
  gcsh.check(false)
  for _ = 1, 3 do ring(t, r) end
  gcsh.check(true)
  H.eq(r[size - 1], prv, "unchecked burst at " .. size .. ": from the previous rank")
  ones:fill(1)
  c:allreduce(ones) -- checked: every rank comes to a check here
  H.eq(ones[0], n, "the checked all-reduce between")
  local t2, r2 = tensor.new(size + 1, "f32"):fill(me + 100), tensor.new(size + 1, "f32")
  ring(t2, r2)
  H.eq(r2[size], prv + 100, "checked pair at " .. size + 1 .. ": from the previous rank")
end
gcsh.check(was)
print("check_p2p_mixed: ok")
