-- Every collective x op x dtype on device tensors against a CPU reference
-- computed here in Lua; in place and out of place; split; send/recv; barrier.
local H = require "harness"
local G = require "common"

local c = comm.world()
H.eq(c.rank, rank, "c.rank")
H.eq(c.size, size, "c.size")
local N = 257 -- odd: no collective gets a power-of-two count for free

-- Rank r's element i for op: small integers, exact in every dtype (f16 and
-- bf16 included) and in every result (products stay <= 2^size).
local function x(op, r, i)
  if op == "prod" then return 1 + (i + r) % 2 end
  return i % 5 + r + 1
end

local function ref(dt, op, i)
  local acc = x(op, 0, i)
  for r = 1, size - 1 do
    local v = x(op, r, i)
    if op == "prod" then acc = acc * v
    elseif op == "min" then acc = math.min(acc, v)
    elseif op == "max" then acc = math.max(acc, v)
    else acc = acc + v end
  end
  if op == "avg" then acc = G.isfloat[dt] and acc / size or acc // size end
  return acc
end

local function mine(op, n, base)
  return G.list(n, function(i) return x(op, rank, (base or 0) + i) end)
end

for _, dt in ipairs(G.dtypes) do
  for _, op in ipairs(G.ops) do
    local what = dt .. " " .. op .. " "
    local want = G.list(N, function(i) return ref(dt, op, i) end)

    local t = tensor.from(mine(op, N), dt)
    local out = tensor.new(N, dt)
    c:allreduce(t, op, out)
    H.values(out, want, nil, what .. "allreduce")
    H.values(t, mine(op, N), nil, what .. "allreduce leaves its input")
    c:allreduce(t, op)
    H.values(t, want, nil, what .. "allreduce in place")

    t = tensor.from(mine(op, N), dt)
    out = tensor.new(N, dt):fill(0)
    c:reduce(t, size - 1, op, out)
    if rank == size - 1 then H.values(out, want, nil, what .. "reduce at the root") end

    t = tensor.from(mine(op, N * size), dt)
    out = tensor.new(N, dt)
    c:reducescatter(t, out, op)
    H.values(out, G.list(N, function(i) return ref(dt, op, rank * N + i) end), nil,
             what .. "reducescatter")
  end

  -- data movement: values (r * N + i) % 100 fit every dtype exactly
  local function val(r, i) return (r * N + i) % 100 end
  local what = dt .. " "
  local t = tensor.from(G.list(N, function(i) return val(rank, i) end), dt)
  c:broadcast(t, size - 1)
  H.values(t, G.list(N, function(i) return val(size - 1, i) end), nil, what .. "broadcast")

  t = tensor.from(G.list(N, function(i) return val(rank, i) end), dt)
  local all = tensor.new(N * size, dt)
  c:allgather(t, all)
  H.values(all, G.list(N * size, function(j) return val(j // N, j % N) end), nil, what .. "allgather")

  -- alltoall: my block p holds val(rank, p * N + i) % 100; I get block rank of each
  local send = tensor.from(G.list(N * size, function(j) return val(rank, j) end), dt)
  local recv = tensor.new(N * size, dt)
  c:alltoall(send, recv)
  H.values(recv, G.list(N * size, function(j) return val(j // N, rank * N + j % N) end), nil,
           what .. "alltoall")

  -- send / recv around a ring; even ranks send first, odd ranks receive first
  if size > 1 then -- a rank cannot send to itself
    local right, left = (rank + 1) % size, (rank - 1) % size
    local s = tensor.from(G.list(N, function(i) return val(rank, i) end), dt)
    local r = tensor.new(N, dt)
    if rank % 2 == 0 then c:send(s, right); c:recv(r, left)
    else c:recv(r, left); c:send(s, right) end
    H.values(r, G.list(N, function(i) return val(left, i) end), nil, what .. "send/recv")
  end
end

-- views as collective buffers: a slice in the middle of a larger tensor
local big = tensor.new(3 * N, "f32"):fill(-1)
local mid = big:view(N, N):fill(rank + 1)
c:allreduce(mid)
H.eq(mid[0], size * (size + 1) / 2, "allreduce on a view")
H.eq(big[N - 1], -1, "before the view untouched")
H.eq(big[2 * N], -1, "after the view untouched")

c:barrier()

-- split: even and odd ranks, key reversing the order
local sub = c:split(rank % 2, size - rank)
local members = (size - rank % 2 + 1) // 2
H.eq(sub.size, members, "split size")
H.eq(sub.rank, members - 1 - rank // 2, "split rank (key reverses)")
local t = tensor.new(8, "i64"):fill(rank)
sub:allreduce(t)
local want = 0
for r = rank % 2, size - 1, 2 do want = want + r end
H.eq(t[7], want, "allreduce in the split communicator")
sub:barrier()
sub:free()

-- a communicator of one rank (a split by rank): every collective's result
-- is its input, a copy on the stream that no NCCL call makes (NCCL keeps
-- host memory for each call there: src/cuda/cuda_comm.c, one_rank); out is
-- a view between sentinels, so a copy too short or too long shows; in a
-- graph as well, replayed
local one = c:split(rank, 0)
H.eq(one.size, 1, "split by rank: one rank")
-- what c:choose says of it: "copy" on cuda, asked for NCCL or not
for _, opts in ipairs({ {}, { algo = gcsh.backend == "cuda" and "nccl" or "comm" } }) do
  local algo, why = one:choose("allreduce", N, "f32", "sum", opts)
  if gcsh.backend == "cuda" then
    H.eq(algo, "copy", "c:choose at one rank on cuda (" .. tostring(opts.algo) .. ")")
    H.truthy(why:find("one rank: the result is the input", 1, true), "why: " .. why)
  else -- the host's library, or its kernels with --share-gpu: never a copy
    H.truthy(algo ~= "copy", "c:choose at one rank on host: " .. algo)
  end
end
local function between(dt) -- a zeroed view of N in a tensor of 3N, -1 around it
  local whole = tensor.new(3 * N, dt):fill(-1)
  return whole:view(N, N):fill(0), whole
end
local function sentinels_kept(whole, what)
  H.eq(whole[N - 1], -1, what .. ": the element before out untouched")
  H.eq(whole[2 * N], -1, what .. ": the element after out untouched")
end
for _, dt in ipairs({ "f32", "i32", "bf16" }) do
  for _, op in ipairs(G.ops) do
    local what = "one rank " .. dt .. " " .. op .. " "
    local t = tensor.from(mine(op, N), dt)
    local out, whole = between(dt)
    one:allreduce(t, op, out)
    H.values(out, mine(op, N), nil, what .. "allreduce")
    sentinels_kept(whole, what .. "allreduce")
    one:allreduce(t, op)
    H.values(t, mine(op, N), nil, what .. "allreduce in place")
    local calls = {
      reduce = function(o) one:reduce(t, 0, op, o) end,
      reducescatter = function(o) one:reducescatter(t, o, op) end,
      scan = op ~= "avg" and function(o) one:scan(t, op, o) end or nil, -- scan has no avg
    }
    for name, call in pairs(calls) do
      out, whole = between(dt)
      call(out)
      H.values(out, mine(op, N), nil, what .. name)
      sentinels_kept(whole, what .. name)
    end
  end
  local what = "one rank " .. dt .. " "
  local t = tensor.from(mine("sum", N), dt)
  for name, call in pairs({ allgather = function(o) one:allgather(t, o) end,
                            alltoall = function(o) one:alltoall(t, o) end }) do
    local out, whole = between(dt)
    call(out)
    H.values(out, mine("sum", N), nil, what .. name)
    sentinels_kept(whole, what .. name)
  end
  one:broadcast(t, 0)
  H.values(t, mine("sum", N), nil, what .. "broadcast")
end
local src = tensor.from(mine("sum", N), "f32")
local dst = tensor.new(N, "f32"):fill(0)
local g = gcsh.graph(function() one:allreduce(src, "sum", dst) end)
src:fill(7)
g:replay(3)
H.values(dst, G.list(N, function() return 7 end), nil, "one rank: allreduce from a graph")
g:free()
one:barrier()
one:free()

c:barrier()
c:free()
print("collectives ok")
