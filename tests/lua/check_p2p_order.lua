-- Checked sends and recvs that meet a peer whose checks are off, or a loop
-- (src/shell/collcheck_coord.c): a pair's calls meet in order (the n-th
-- send meets the n-th recv), so rank 0's checker finds the peer's call that
-- meets a checked one by the pair's counts, not by what the peer last said.
-- Each case below is a correct program: it runs to the end with the right
-- data on every rank, where the checker used to call a mismatch (a, h),
-- stop one rank (b at 2 ranks), hang (b at 4, d, e) or ask a rank so
-- seldom that every collective took half a second (f).  The last case is
-- a real mismatch, which both ranks are told of, and so is (i), in a loop
-- of sends whose third call alone differs.  (A send in one command
-- met by a recv in the next: tests/sh/check_unchecked.sh.)
local H = require "harness"
local c = comm.world()
local me, n = c.rank, c.size
if n < 2 then print("check_p2p_order: one rank, no pair") return end
local was = gcsh.check(true)
local c2 = c:split(0, me) -- for (i): (g) leaves c aborted on one rank
-- pairs (0,1), (2,3): the odd rank of a pair is the one that runs unchecked
local mate = me ~ 1
local odd = me % 2 == 1
local paired = mate < n

local function filled(size, v) return tensor.new(size, "f32"):fill(v) end

-- (a) the unchecked rank sends twice, of two sizes, then receives; its
-- mate receives both (checked) and answers: its second recv meets the
-- second send, not the first one the unchecked rank said
if paired then
  for round = 1, 20 do
    local a, b, r = tensor.new(4, "f32"), tensor.new(5, "f32"), tensor.new(6, "f32")
    if odd then
      gcsh.check(false)
      c:send(filled(4, round), mate); c:send(filled(5, round + 1), mate); c:recv(r, mate)
      gcsh.check(true)
      H.eq(r[5], round + 2, "(a) round " .. round .. ": the answer")
    else
      c:recv(a, mate); c:recv(b, mate); c:send(filled(6, round + 2), mate)
      H.eq(a[3] + b[4], 2 * round + 1, "(a) round " .. round .. ": both messages")
    end
  end
end

-- (b) a ring in which every rank turns its checks on or off at random
-- before each call (its own seed: the ranks differ)
local nxt, prv = (me + 1) % n, (me - 1) % n
math.randomseed(1234 + 7 * me)
for it = 1, 120 do
  local size = 1 + it % 7
  local t, r = filled(size, me * 1000 + it), tensor.new(size, "f32")
  local function toss() gcsh.check(math.random() < 0.5) end
  if me % 2 == 0 then toss(); c:send(t, nxt); toss(); c:recv(r, prv)
  else toss(); c:recv(r, prv); toss(); c:send(t, nxt) end
  H.eq(r[size - 1], prv * 1000 + it, "(b) ring step " .. it)
end
gcsh.check(true)

-- (c) the unchecked rank receives through a graph's replays, then
-- directly; its mate sends every message checked
if paired then
  local t = tensor.new(8, "f32")
  if odd then
    gcsh.check(false)
    local g = gcsh.graph(function() c:recv(t, mate) end)
    g:replay(3)
    H.eq(t[7], 3, "(c) the replays' last message")
    c:recv(t, mate)
    H.eq(t[7], 4, "(c) the direct one after them")
    g:free()
    gcsh.check(true)
  else
    for i = 1, 4 do c:send(filled(8, i), mate) end
  end
end

-- (d) a checked loop of recvs (c:loop) meets checked sends one by one;
-- (e) then the unchecked rank ends the command's pairs with a loop of
-- sends, issued before its mate's checked recvs come
if paired then
  local t = tensor.new(8, "f32")
  if odd then
    c:loop("recv", 3, t, mate)
    gcsh.check(false)
    c:loop("send", 4, filled(8, 7), mate)
    gcsh.check(true)
  else
    for i = 1, 3 do c:send(filled(8, i), mate) end
    for _ = 1, 4 do c:recv(t, mate) end
    H.eq(t[7], 7, "(e) the loop's messages")
  end
end

-- (h) ping-pongs with the odd rank unchecked, then a checked barrier on
-- both: the even rank's last recv meets a send buffered before the odd
-- rank came to the barrier (not the barrier)
if paired then
  local t = tensor.new(8, "f32")
  for i = 1, 10 do
    if odd then
      gcsh.check(false); c:recv(t, mate); c:send(t:fill(i), mate); gcsh.check(true)
    else
      c:send(t:fill(i), mate); c:recv(t, mate)
      H.eq(t[7], i, "(h) ping-pong " .. i)
    end
  end
end
c:barrier()

-- (f) every collective of a loop meets a rank that runs unchecked: it is
-- asked at once each time (100 of them took 44 s at 2 ranks)
local ones = tensor.new(2, "f32")
if me == 1 then gcsh.check(false) end
for i = 1, 100 do
  c:allreduce(ones:fill(1))
  if i == 100 then H.eq(ones[1], n, "(f) the last all-reduce") end
end
gcsh.check(true)

-- (g) a real mismatch: a checked send while its peer, unchecked, is in an
-- all-reduce of the same communicator (which waits for the sender): both
-- are told, none waits forever
if paired and me < 2 then
  local t = tensor.new(4, "f32")
  if odd then gcsh.check(false) end
  local ok, err = pcall(function()
    if odd then c:allreduce(t) else c:send(t, mate) end
  end)
  gcsh.check(true)
  H.truthy(not ok, "(g) the mismatch is an error on rank " .. me)
  if odd then
    H.truthy(tostring(err):find("stopped: rank 0's check failed", 1, true),
             "(g) the unchecked rank is stopped: " .. tostring(err))
  else
    H.truthy(tostring(err):find("[1] allreduce #", 1, true),
             "(g) the sender is told of the all-reduce: " .. tostring(err))
  end
end
-- (i) a real mismatch in a loop's third call: an unchecked loop of f32
-- sends, received as f32, f32, then i32: named, with the loop's calls
-- (on a split made at the start: (g) aborted c on the unchecked rank)
if paired and me < 2 then
  local ok, err = pcall(function()
    if odd then
      gcsh.check(false); c2:loop("send", 3, filled(4, 2), mate); gcsh.check(true)
    else
      local a, b = tensor.new(4, "f32"), tensor.new(4, "i32")
      c2:recv(a, mate); c2:recv(a, mate); c2:recv(b, mate)
    end
  end)
  gcsh.check(true)
  if not odd then
    H.truthy(not ok and tostring(err):find("%[1%] loop send to 0 on comm %x+ f32 x4 iters 3")
             and tostring(err):find("%[0%] recv from 1 on comm %x+ i32 x4"),
             "(i) the loop's third send against an i32 recv: named: " .. tostring(err))
  end
end
gcsh.check(was)
print("check_p2p_order: ok")
