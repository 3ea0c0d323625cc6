-- gcsh.graph: every capturable call, replayed n times, equals the same call
-- made n times, bit for bit (also mixed with direct calls on the same
-- buffers); every refusal is named and leaves the shell as it was; frees of
-- what a live graph uses are refused naming it; replays are checked and
-- counted in the collective sequence numbers; <close> frees.
--
-- Run by tests/run.sh on the host backend at 1, 2 and 4 ranks; the GPU tests
-- (tests/gpu/graph_*.lua) run it with GRAPH_TEST_KIND set to a window kind.
local H = require "harness"

local c = comm.world()
local T = H.team(c)
local kind = rawget(_G, "GRAPH_TEST_KIND")
local wopts = kind and { kind = kind } or nil
local N, REPS = 64, 3

-- Runs body REPS times on a fresh state directly, and on a second fresh
-- state through a graph (captured: nothing runs; then replayed), and
-- compares every tensor of the two states bit for bit.  mixed: the second
-- state gets replay, direct call, replay (REPS = 3).
local function same(what, make, body, mixed)
  local A, B = make(), make()
  for _ = 1, REPS do body(A) end
  local g = gcsh.graph(function() body(B) end)
  if mixed then
    g:replay()
    body(B)
    g:replay()
  else
    g:replay(REPS)
  end
  for k, t in pairs(A) do
    if type(t) == "userdata" and tostring(t):find("^tensor") then
      H.eq(B[k]:checksum(), t:checksum(), what .. ": " .. k .. " after " .. REPS .. " calls")
    end
  end
  H.eq(g.replays, mixed and 2 or REPS, what .. ": replays")
  g:free()
  for _, s in ipairs { A, B } do -- collective frees: the same order on every rank
    local keys = {}
    for k in pairs(s) do keys[#keys + 1] = k end
    table.sort(keys)
    for _, k in ipairs(keys) do
      local h = s[k]
      if not tostring(h):find("^tensor") and not tostring(h):find("^xfer") then h:free() end
    end
  end
end

local function rand(n, seed, dt) return tensor.new(n, dt or "f32"):rand(seed * 131 + rank) end

-- ---- memory: fill, arange, rand, copy ----
same("memory", function() return { a = rand(N, 1), b = rand(N, 2), d = rand(N, 3) } end,
  function(s)
    s.a:fill(2.5)
    s.b:view(3, 10):arange(1, 0.5)
    s.d:copy(s.b)
    s.b:rand(9)
  end)

-- ---- collectives ----
local size = c.size
local function coll_state()
  return { t = rand(N, 4), o = rand(N, 5), g = rand(N * size, 6), r = rand(N, 7),
           a = rand(N, 8) }
end
same("collectives", coll_state, function(s)
  c:allreduce(s.t)                 -- in place
  c:allreduce(s.t, "max", s.o)     -- out of place
  c:reduce(s.o, 0, "sum")
  c:broadcast(s.t, size - 1)
  c:allgather(s.t, s.g)
  c:reducescatter(s.g, s.r)
  c:alltoall(s.o, s.a)
end)
same("collectives mixed with direct calls", coll_state, function(s)
  c:allreduce(s.t, "sum", s.o)
  c:allreduce(s.o)
end, true)

if size > 1 then
  local nxt, prv = (rank + 1) % size, (rank - 1) % size
  same("send/recv", function() return { t = rand(N, 9), u = rand(N, 10) } end, function(s)
    if rank % 2 == 0 then c:send(s.t, nxt); c:recv(s.u, prv)
    else c:recv(s.u, prv); c:send(s.t, nxt) end
    s.t:copy(s.u)
  end)
end

-- ---- kernels: every algorithm, and every kernel collective ----
local function window_state()
  local w = c:window(N, "f32", wopts)
  w:tensor():rand(11 + rank)
  w:multicast() -- decided before a capture (the exchange cannot run inside one)
  return { w = w, t = w:tensor(), out = rand(N, 12), x = rand(N, 13), y = rand(N, 14) }
end
-- every algorithm that runs on this window kind ("nccl_dev": kind nccl only;
-- its refusals are tests/lua/kernel_nccl_dev.lua's and tests/gpu/nccl_dev.lua's)
local ALGOS = {}
for _, algo in ipairs(kernel.algos) do
  -- (hier makes its communicator at its first call on a window: below)
  if (algo ~= "nccl_dev" or kind == "nccl") and algo ~= "hier" then ALGOS[#ALGOS + 1] = algo end
end
do
  local w = c:window(8, "f32", wopts)
  H.raises(function() gcsh.graph(function() kernel.allreduce(w, { algo = "hier" }) end) end,
           "kernel.allreduce{algo='hier'}'s first call on a window cannot be captured (it makes the "
           .. "window's communicator across nodes: run it once before the capture)", "hier's first call")
  w:tensor():fill(rank + 1)
  kernel.allreduce(w, { algo = "hier" })
  w:tensor():fill(rank + 1)
  local g = gcsh.graph(function() kernel.allreduce(w, { algo = "hier" }) end)
  g:replay()
  H.eq(w:tensor()[7], size * (size + 1) // 2, "hier replayed from a graph")
  g:free()
  c:barrier()
  w:free()
end
for _, algo in ipairs(ALGOS) do
  same("kernel.allreduce " .. algo, window_state, function(s)
    kernel.allreduce(s.w, { algo = algo })
  end)
  same("kernel.allreduce " .. algo .. " mixed", window_state, function(s)
    kernel.allreduce(s.w, { algo = algo })
  end, true)
end
-- two sizes on one window, the larger over many GPU blocks (each block keeps
-- its own barrier count on the device: the counts must stay in step)
local BIG = kind and (1 << 17) + 7 or 1000
local function big_state()
  local w = c:window(BIG, "f32", wopts)
  w:tensor():rand(21 + rank)
  w:multicast()
  return { w = w, t = w:tensor() }
end
for _, algo in ipairs(ALGOS) do
  local cap = ({ ll = kernel.ll_max_bytes // 4, ll128 = kernel.ll128_max_bytes // 4 })[algo]
  local whole = math.min(BIG, cap or BIG)
  same("kernel.allreduce " .. algo .. " at two sizes", big_state, function(s)
    kernel.allreduce(s.w, { algo = algo, offset = 3, n = 5 })
    kernel.allreduce(s.w, { algo = algo, n = whole })
  end, true)
end
same("kernel collectives", window_state, function(s)
  kernel.reduce_scatter(s.w)
  kernel.allgather(s.w)
  kernel.reduce_to(0, s.w, { out = s.out })
  kernel.broadcast(size - 1, s.w)
  kernel.reduce_peers(s.out, s.w)
  kernel.reduce(s.x, { s.x, s.y })
end)

-- ---- signals and transfers ----
local function signal_state()
  local st = window_state()
  st.s = c:signals(4)
  st.src = rand(8, 15)
  st.x = st.w:put(T.next, st.src, 5, { signal = { st.s, 1 } })
  return st
end
same("signals and transfers", signal_state, function(s)
  s.s:add(T.next, 0, 1)
  s.s:wait(0, 1)
  s.x:post()
  s.s:wait(1, 1)
  s.x:wait()
end)

-- ---- refusals: each named, the capture abandoned, the shell as it was ----
local t = tensor.new(N):fill(1)
local w = c:window(N, "f32", wopts)
local s = c:signals(2)
local refusals = {
  { "t[i] (a host read of a tensor)", function() return t[0] end },
  { "t[i] = v (a host write", function() t[0] = 1 end },
  { "a host read of a tensor", function() return t:sum() end },
  { "gcsh.sync()", function() gcsh.sync() end },
  { "c:barrier()", function() c:barrier() end },
  { "an allocation (tensor.new)", function() tensor.new(4) end },
  { "creating a window or signals", function() c:window(4) end },
  { "creating a window or signals", function() c:signals(2) end },
  { "w:free()", function() w:free() end },
  { "c:split()", function() c:split(0) end },
  { "c:agree()", function() c:agree("x") end },
  { "a host read of a signal word (s:read)", function() s:read(0) end },
  { "a fetch-add (s:fetch_add returns the old value to the host)", function() s:fetch_add(T.next, 0, 1) end },
  { "a blocking wait (s:wait{cpu=true})", function() s:wait { slot = 0, value = 0, cpu = true } end },
  { "a timer", function() gcsh.timer() end },
  { "making a transfer (w:put", function() w:put(T.next, t:view(0, 1), 0) end },
  { "gcsh.graph() inside a capture", function() gcsh.graph(function() end) end },
}
for _, r in ipairs(refusals) do
  H.raises(function()
    gcsh.graph(function() c:allreduce(t); r[2]() end)
  end, "gcsh.graph: " .. r[1], "refusal of " .. r[1])
  -- nothing of the capture stays: a direct call runs, and so does a new capture
  t:fill(1)
  c:allreduce(t)
  H.eq(t[0], size, "after refusing " .. r[1] .. ": a direct all-reduce")
  local g <close> = gcsh.graph(function() c:allreduce(t) end)
  g:replay(2)
  H.eq(t[0], size * size * size, "after refusing " .. r[1] .. ": a replay")
end
H.raises(function() gcsh.graph(function() error("boom") end) end,
  "gcsh.graph: the capture is abandoned: ", "an error inside fn")

-- ---- what a graph uses cannot be freed while it lives ----
do
  local c2 = c:split(0)
  local w2 = c2:window(N, "f32", wopts)
  local s2 = c2:signals(2)
  local u = tensor.new(N)
  local x = w2:put(T.next, u:view(0, 4), 0)
  x:post()
  x:wait { cpu = true }
  c2:barrier()
  local g = gcsh.graph(function()
    kernel.allreduce(w2, { algo = "oneshot" })
    s2:add(T.next, 0, 1)
    c2:allreduce(u)
    x:post()
  end)
  H.raises(function() w2:free() end, "w:free(): graph #", "window in use")
  H.raises(function() s2:free() end, "s:free(): graph #", "signals in use")
  H.raises(function() u:free() end, "t:free(): graph #", "tensor in use")
  H.raises(function() x:cancel() end, "x:cancel(): graph #", "transfer in use")
  H.raises(function() c2:free() end, "c:free(): graph #", "communicator in use")
  local msg = H.raises(function() w2:free() end, "uses it", "the graph is named")
  H.truthy(msg:find("captured at ", 1, true), "where the graph was captured: " .. msg)
  g:replay()
  g:free()
  g:free() -- idempotent
  H.raises(function() g:replay() end, "attempt to use a freed graph", "replay after free")
  x:wait { cpu = true }
  x:cancel()
  w2:free()
  s2:free()
  u:free()
  c2:free()
end

-- ---- two graphs on one resource: each is its user until it goes ----
-- (a graph collected without g:free() leaves the lists it was on; the
-- one a refusal names is the first that still uses the resource)
do
  local u = tensor.new(N)
  local g1 = gcsh.graph(function() c:allreduce(u) end)
  local g2 = gcsh.graph(function() c:allreduce(u) end)
  local first = H.raises(function() u:free() end, "t:free(): graph #", "two graphs: refused")
  H.truthy(first:find("graph #" .. g1.id .. " ", 1, true), "the first graph is named: " .. first)
  g1:free()
  local second = H.raises(function() u:free() end, "t:free(): graph #", "one graph left: refused")
  H.truthy(second:find("graph #" .. g2.id .. " ", 1, true), "then the second: " .. second)
  g2 = nil -- luacheck: ignore (collected, never freed: its __gc leaves the list)
  collectgarbage()
  collectgarbage()
  local g3 = gcsh.graph(function() c:allreduce(u) end)
  g3:free()
  u:free() -- nobody uses it any more
  H.truthy(tostring(u):find("freed", 1, true), "freed: " .. tostring(u))
end

-- ---- <close>, fields, tostring ----
do
  local kept
  do
    -- the library's all-reduce (with --share-gpu c:allreduce may take the
    -- kernels, whose calls have other names: bind/comm_route.c)
    local g <close> = gcsh.graph(function() c:allreduce(t, "sum", nil, { algo = "comm" }); t:fill(1) end)
    kept = g
    H.eq(g.calls, 2, "calls")
    H.eq(g.collectives, 1, "collectives")
    H.eq(g.replays, 0, "replays before any")
    H.truthy(tostring(g):find("2 calls: comm.allreduce, mem.fill", 1, true), tostring(g))
  end
  H.truthy(tostring(kept):find("(freed)", 1, true), "<close> freed it: " .. tostring(kept))
end
H.raises(function() gcsh.graph(1) end, "function expected", "fn checked")
H.raises(function() gcsh.graph(function() end):replay(0) end, "n must be 1..1e9", "n checked")

-- ---- checks: replays counted in the sequence numbers; mismatches named ----
if size > 1 then
  local c3 = c:split(0) -- its sequence numbers start at 1
  local u = tensor.new(4):fill(1)
  local g = gcsh.graph(function() c3:allreduce(u); c3:allreduce(u) end) -- #1, #2
  g:replay(3) -- graph.replay #3 counts 6: #3..#8
  local n = rank == 0 and 4 or 3
  -- the library's, named so (with --share-gpu a routed call would make its
  -- staging window first, a collective of its own: bind/comm_route.c)
  local library = gcsh.backend == "cuda" and "nccl" or "comm" -- the label names the library
  local msg = H.raises(function() c3:allreduce(u:view(0, n), "sum", nil, { algo = "comm" }) end,
    "allreduce/" .. library .. " #9", "the next collective after 3 replays of 2")
  -- ranks that replay differently are told so before anything runs
  H.raises(function() g:replay(rank == 0 and 1 or 2) end, "graph.replay #9", "replay counts differ")
  -- ranks that captured different collectives: the usual error
  local differ = H.raises(function()
    local g2 = gcsh.graph(function()
      c3:allreduce(u)
      if rank == 0 then c3:allreduce(u) end
    end)
    g2:replay()
  end, "#10", "captures differ")
  H.truthy(differ:find("graph.replay #10", 1, true), "what the others did: " .. differ)
  collectgarbage() -- g2 of the ranks whose capture ended
  H.truthy(msg:find("[0] f32 x4", 1, true), "the mismatch names ranks: " .. msg)
  g:free()
  c3:free()
end

w:free()
s:free()
print("graph ok")
