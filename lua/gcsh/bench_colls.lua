-- gcsh.bench's collectives, nccl-tests' per-collective files (all_reduce.cu,
-- all_gather.cu, ...) in one: a table of functions per collective, and the
-- per-rank values a check fills in and the reference it compares with.
-- The driver that sizes, runs, times and checks them is gcsh.bench.
local M = {}

-- ---- per-rank values and their reference -------------------------------

local WRAP_BITS = { i64 = 64, i32 = 32, u32 = 32, u8 = 8, i8 = 8 }
local SIGNED = { i64 = true, i32 = true, i8 = true }
-- the dtype facts (C's one list, src/core/dtype.c): which dtypes are floats
local DTYPES = require("gcsh.dtypes")

-- An integer result as the dtype holds it (C wraps integer arithmetic).
local function wrap(dtype, v)
  local bits = WRAP_BITS[dtype]
  if not bits or bits == 64 then return v end
  local m = 1 << bits
  v = v % m
  if SIGNED[dtype] and v >= m // 2 then v = v - m end
  return v
end

-- What rank r contributes: prod gets 1s and 2s so products stay powers of two
-- (exact in f16 and bf16); the other ops get 1..16.
local function rank_value(redop, r)
  if redop == "prod" then return 1 + r % 2 end
  return 1 + r % 16
end

local COMBINE = {
  sum = function(a, b) return a + b end,
  avg = function(a, b) return a + b end,
  prod = function(a, b) return a * b end,
  min = math.min,
  max = math.max,
}

local function reduced_value(dtype, redop, nranks)
  local acc = rank_value(redop, 0)
  for r = 1, nranks - 1 do
    acc = wrap(dtype, COMBINE[redop](acc, rank_value(redop, r)))
  end
  if redop == "avg" then
    if DTYPES[dtype].float then
      acc = acc / nranks
    else
      local q = acc // nranks
      if q < 0 and q * nranks ~= acc then q = q + 1 end -- truncate toward zero
      acc = q
    end
  end
  return acc
end

-- The value rank `from` sends to rank `to` in alltoall: distinct per pair
-- (up to 100 pairs), and within every dtype's range.
local function pair_value(nranks, from, to)
  return 1 + (from * nranks + to) % 100
end

-- Elements of t that differ from v (fast path: one :equal against a filled copy).
local function count_wrong(t, v)
  local want = tensor.new(#t, t.dtype):fill(v)
  if t:equal(want) then return 0 end
  local got, w, wrong = t:totable(), want:totable(), 0
  for i = 1, #got do
    if got[i] ~= w[i] then wrong = wrong + 1 end
  end
  return wrong
end

-- ---- one table per collective --------------------------------------------
-- counts(count, n) -> sendcount, recvcount, paramcount (nccl-tests' GetCollByteCount)
-- buffers(a)       -> send, recv for a.param elements per call, honouring a.inplace
-- init(a)          fills a.send with this rank's values
-- run(a)           one call
-- check(a)         wrong elements on this rank after one call from init
-- busbw(n)         bus bandwidth factor

local function same_counts(count) return count, count, count end
local function per_rank_counts(count, n) local p = count // n; return p, p * n, p end

local function separate_or_same(a, sendcount, recvcount)
  local send = tensor.new(sendcount, a.dtype)
  if a.inplace then return send, send end
  return send, tensor.new(recvcount, a.dtype)
end

local function fill_reduction_input(a) a.send:fill(rank_value(a.redop, a.rank)) end

local COLLS = {}

COLLS.allreduce = {
  reduces = true,
  counts = same_counts,
  busbw = function(n) return 2 * (n - 1) / n end,
  buffers = function(a) return separate_or_same(a, a.param, a.param) end,
  init = fill_reduction_input,
  run = function(a) a.comm:allreduce(a.send, a.redop, a.recv) end,
  check = function(a) return count_wrong(a.recv, reduced_value(a.dtype, a.redop, a.n)) end,
}

COLLS.broadcast = {
  rooted = true,
  counts = same_counts,
  busbw = function() return 1 end,
  buffers = function(a) local t = tensor.new(a.param, a.dtype); return t, t end, -- always in place
  init = function(a) a.send:fill(rank_value("sum", a.rank)) end,
  run = function(a) a.comm:broadcast(a.send, a.root) end,
  check = function(a) return count_wrong(a.send, rank_value("sum", a.root)) end,
}

COLLS.reduce = {
  reduces = true,
  rooted = true,
  counts = same_counts,
  busbw = function() return 1 end,
  buffers = function(a) return separate_or_same(a, a.param, a.param) end,
  init = fill_reduction_input,
  run = function(a) a.comm:reduce(a.send, a.root, a.redop, a.recv) end,
  check = function(a)
    if a.rank ~= a.root then return 0 end
    return count_wrong(a.recv, reduced_value(a.dtype, a.redop, a.n))
  end,
}

COLLS.allgather = {
  counts = per_rank_counts,
  busbw = function(n) return (n - 1) / n end,
  buffers = function(a)
    local recv = tensor.new(a.param * a.n, a.dtype)
    if a.inplace then return recv:view(a.rank * a.param, a.param), recv end
    return tensor.new(a.param, a.dtype), recv
  end,
  init = function(a) a.send:fill(rank_value("sum", a.rank)) end,
  run = function(a) a.comm:allgather(a.send, a.recv) end,
  check = function(a)
    local wrong = 0
    for r = 0, a.n - 1 do
      wrong = wrong + count_wrong(a.recv:view(r * a.param, a.param), rank_value("sum", r))
    end
    return wrong
  end,
}

COLLS.reducescatter = {
  reduces = true,
  counts = function(count, n) local p = count // n; return p * n, p, p end,
  busbw = function(n) return (n - 1) / n end,
  buffers = function(a)
    local send = tensor.new(a.param * a.n, a.dtype)
    if a.inplace then return send, send:view(a.rank * a.param, a.param) end
    return send, tensor.new(a.param, a.dtype)
  end,
  init = fill_reduction_input,
  run = function(a) a.comm:reducescatter(a.send, a.recv, a.redop) end,
  check = function(a) return count_wrong(a.recv, reduced_value(a.dtype, a.redop, a.n)) end,
}

COLLS.alltoall = {
  counts = function(count, n) local p = count // n; return p * n, p * n, p end,
  busbw = function(n) return (n - 1) / n end,
  buffers = function(a) return separate_or_same(a, a.param * a.n, a.param * a.n) end,
  init = function(a)
    for to = 0, a.n - 1 do
      a.send:view(to * a.param, a.param):fill(pair_value(a.n, a.rank, to))
    end
  end,
  run = function(a) a.comm:alltoall(a.send, a.recv) end,
  check = function(a)
    local wrong = 0
    for from = 0, a.n - 1 do
      wrong = wrong + count_wrong(a.recv:view(from * a.param, a.param), pair_value(a.n, from, a.rank))
    end
    return wrong
  end,
}

-- A ring: send to rank+1, receive from rank-1.  Even ranks send first and odd
-- ranks receive first, so blocking sends cannot all wait on each other.
COLLS.sendrecv = {
  min_ranks = 2,
  counts = same_counts,
  busbw = function() return 1 end,
  buffers = function(a) return tensor.new(a.param, a.dtype), tensor.new(a.param, a.dtype) end,
  init = function(a) a.send:fill(rank_value("sum", a.rank)) end,
  run = function(a)
    local c, nxt, prv = a.comm, (a.rank + 1) % a.n, (a.rank - 1) % a.n
    if a.rank % 2 == 0 then
      c:send(a.send, nxt); c:recv(a.recv, prv)
    else
      c:recv(a.recv, prv); c:send(a.send, nxt)
    end
  end,
  check = function(a) return count_wrong(a.recv, rank_value("sum", (a.rank - 1) % a.n)) end,
}

M.colls = COLLS
-- the reductions a check can compute the reference of (bench.collective's redop=)
M.redops = COMBINE
M.count_wrong = count_wrong
return M
