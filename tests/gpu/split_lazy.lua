-- A split's NCCL set-up on GPUs (issue 35, src/cuda/cuda_comm.c): its
-- blocking twin is made at its first collective of every rank, so send,
-- recv and barrier before it run on the split's non-blocking communicator;
-- a first collective inside gcsh.graph makes the twin during the capture;
-- .info's splits line says how splits are set up.  GCSH_SPLIT_SHARE=1 (the
-- default; the second half)
-- shares the parent's NCCL resources: a parent freed before its split is
-- kept for it, and a new world after freeing the old one works.
local H = require "harness"

local w = comm.world()
local me, n = w.rank, w.size
local sharing = os.getenv("GCSH_SPLIT_SHARE") ~= "0" -- 1, the default
if gcsh.backend == "cuda" then -- (the rest runs on the host backend too)
  local splits = gcsh.info().splits
  H.truthy(type(splits) == "string" and splits:find("twin at the first collective", 1, true),
           ".info splits: " .. tostring(splits))
  H.eq(splits:sub(1, 5) == "share", sharing, "splits follows GCSH_SPLIT_SHARE: " .. splits)
  -- and when NCCL connects (issue 35): where ranks share a GPU gcsh sets
  -- NCCL_RUNTIME_CONNECT=0 in its own environment when the user did not;
  -- with a GPU each it leaves NCCL's lazy default; the user's setting wins
  local user = os.getenv("NCCL_RUNTIME_CONNECT")
  local shared = gcsh.info().gpu_shared ~= "no"
  local connect
  if user == nil then
    H.truthy(not shared, "gcsh sets NCCL_RUNTIME_CONNECT=0 where ranks share a GPU")
    connect = "; connected at first use (NCCL's default: a GPU each)"
  elseif user == "0" and shared then -- gcsh's, or the user's own 0
    connect = "; connected when made (NCCL_RUNTIME_CONNECT=0, "
  else
    connect = (user == "0" and "; connected when made" or "; connected at first use")
              .. " (NCCL_RUNTIME_CONNECT=" .. user .. ", yours)"
  end
  H.truthy(splits:find(connect, 1, true), ".info splits says how NCCL connects: " .. splits)
end

local function sum_of(members)
  local s = 0
  for _, r in ipairs(members) do s = s + r end
  return s
end

-- send, recv and a barrier before any collective, then the collective that
-- makes the twin, then send and recv on the twin
do
  local s = w:split(0)
  if n > 1 then
    local nxt, prv = (s.rank + 1) % s.size, (s.rank - 1) % s.size
    local out, got = tensor.from({ me + 1 }, "f32"), tensor.new(1, "f32")
    for _ = 1, 3 do -- a ring: even ranks send first, odd ones receive first
      if s.rank % 2 == 0 then s:send(out, nxt); s:recv(got, prv)
      else s:recv(got, prv); s:send(out, nxt) end
      H.eq(got[0], (me - 1) % n + 1, "a ring before the twin")
    end
  end
  s:barrier()
  local x = s:allreduce(tensor.from({ me }, "i64"))
  local all = {}
  for r = 0, n - 1 do all[#all + 1] = r end
  H.eq(x[0], sum_of(all), "the first collective (the twin's)")
  if n > 1 then
    local nxt, prv = (s.rank + 1) % s.size, (s.rank - 1) % s.size
    local out, got = tensor.from({ 2 * me }, "f32"), tensor.new(1, "f32")
    if s.rank % 2 == 0 then s:send(out, nxt); s:recv(got, prv)
    else s:recv(got, prv); s:send(out, nxt) end
    H.eq(got[0], 2 * ((me - 1) % n), "a ring on the twin")
  end
  s:barrier()
  s:free()
end

-- the first collective of a split inside a capture
do
  local s = w:split(me % 2)
  local t = tensor.from({ 1 }, "f32")
  local g = gcsh.graph(function() s:allreduce(t) end)
  g:replay(2)
  H.eq(t[0], s.size * s.size, "two replays of a captured first collective")
  g:free()
  s:free()
end

-- a split of a split, its parent freed first (held while it lives, with sharing)
do
  local s = w:split(0, -me) -- everyone, reversed
  local t = s:split(s.rank % 2)
  s:free()
  local x = t:allreduce(tensor.from({ me }, "i64"))
  local members = {}
  for r = 0, n - 1 do if (n - 1 - r) % 2 == (n - 1 - me) % 2 then members[#members + 1] = r end end
  H.eq(x[0], sum_of(members), "a split outlives the split it came from")
  t:free()
end

-- a new world after the old one was freed with a split still open
do
  local s = w:split(0)
  w:free()
  local w2 = comm.world()
  H.truthy(not rawequal(w2, w), "a new world")
  H.eq(w2:allreduce(tensor.from({ 1 }, "i32"))[0], n, "the new world's all-reduce")
  H.eq(s:allreduce(tensor.from({ 1 }, "i32"))[0], n, "the split of the freed world")
  s:free()
  w2:barrier()
end

if me == 0 then print(string.format("split_lazy: ok on %d ranks (sharing %s)", n, tostring(sharing))) end
