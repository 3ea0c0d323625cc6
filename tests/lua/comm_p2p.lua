-- send / recv: a ring in every dtype, and short or long messages.
local H = require "harness"
local R = require "comm_ref"

local c = comm.world()
local me, n = c.rank, c.size
if n == 1 then
  H.raises(function() c:send(tensor.new(1), 0) end, "peer 0 is this rank", "no send to self at 1 rank")
  print("comm_p2p: ok on 1 ranks (no peers)")
  return
end

local nxt, prv = (me + 1) % n, (me - 1) % n
-- Even ranks send first and odd ranks receive first, so the ring cannot
-- deadlock on blocking sends.
local function ring(send, recv)
  if me % 2 == 0 then
    H.truthy(rawequal(c:send(send, nxt), send), "send returns t")
    H.truthy(rawequal(c:recv(recv, prv), recv), "recv returns t")
  else
    c:recv(recv, prv)
    c:send(send, nxt)
  end
end

for _, dt in ipairs(R.DTYPES) do
  for _, count in ipairs { 1, 5, 7 } do
    local send = tensor.from(R.seq(0, count, function(i) return R.value(dt, me, i) end), dt)
    local recv = tensor.new(count, dt)
    ring(send, recv)
    H.values(recv, R.seq(0, count, function(i) return R.value(dt, prv, i) end), nil,
             string.format("ring %s x%d", dt, count))
  end
end

-- .check catches a send and a recv of different lengths before MPI runs
if me == 0 then
  H.raises(function() c:send(tensor.new(3, "f32"), 1) end, "send/recv mismatch: [0] send to 1 f32 x3, [1] recv from 0 f32 x5", "checked short message")
elseif me == 1 then
  H.raises(function() c:recv(tensor.new(5, "f32"), 0) end, "send/recv mismatch: [0] send to 1 f32 x3, [1] recv from 0 f32 x5", "checked short message")
end
-- without the check, MPI's own errors: a message shorter than the receive
-- buffer is an error on the receiver
local was = gcsh.check(false)
if me == 0 then
  c:send(tensor.new(3, "f32"), 1)
elseif me == 1 then
  H.raises(function() c:recv(tensor.new(5, "f32"), 0) end, "recv: peer 0 sent fewer than the 5 elements expected", "short message")
end
-- a longer one is MPI's truncation error
if me == 0 then
  c:send(tensor.new(5, "f32"), 1)
elseif me == 1 then
  H.raises(function() c:recv(tensor.new(3, "f32"), 0) end, "MPI_ERR_TRUNCATE", "long message")
end

gcsh.check(was)
c:barrier()
if me == 0 then print(string.format("comm_p2p: ok on %d ranks", n)) end
