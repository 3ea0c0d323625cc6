-- Every collective x every op x every dtype, in place and out of place,
-- against references computed in Lua (comm_ref.lua).
-- Run it also with GCSH_HOST_MPI_MAX_COUNT=3 (mpirun -x) to take the host
-- backend's large-count paths (chunked reductions, derived datatypes).
local H = require "harness"
local R = require "comm_ref"

local c = comm.world()
local me, n = c.rank, c.size
local N = 7 -- elements per rank: odd, so chunking cuts unevenly

local function input(dt, count)
  return tensor.from(R.seq(0, count, function(i) return R.value(dt, me, i) end), dt)
end

local function check_allreduce(dt, op, in_place)
  local t = input(dt, N)
  local out = in_place and t or tensor.new(N, dt)
  local got = in_place and c:allreduce(t, op) or c:allreduce(t, op, out)
  H.truthy(rawequal(got, out), "allreduce returns out")
  local what = string.format("allreduce %s %s in_place=%s", dt, op, in_place)
  H.values(out, R.seq(0, N, function(i) return R.reduced(dt, op, n, i) end), nil, what)
  if not in_place then
    H.values(t, R.seq(0, N, function(i) return R.value(dt, me, i) end), nil, what .. " input kept")
  end
end

local function check_reduce(dt, op, in_place, root)
  local t = input(dt, N)
  local out = in_place and t or tensor.new(N, dt):fill(99)
  local got = in_place and c:reduce(t, root, op) or c:reduce(t, root, op, out)
  H.truthy(rawequal(got, out), "reduce returns out")
  local what = string.format("reduce %s %s in_place=%s root=%d", dt, op, in_place, root)
  if me == root then
    H.values(out, R.seq(0, N, function(i) return R.reduced(dt, op, n, i) end), nil, what)
  elseif not in_place then
    H.values(out, R.seq(0, N, function() return 99 end), nil, what .. " (non-root out untouched)")
  end
end

local function check_reducescatter(dt, op, in_place)
  local t = input(dt, N * n)
  local out = in_place and t:view(me * N, N) or tensor.new(N, dt)
  local got = c:reducescatter(t, out, op)
  H.truthy(rawequal(got, out), "reducescatter returns out")
  H.values(out, R.seq(me * N, N, function(i) return R.reduced(dt, op, n, i) end), nil,
           string.format("reducescatter %s %s in_place=%s", dt, op, in_place))
end

local function check_allgather(dt, in_place)
  local out = tensor.new(N * n, dt)
  local t = in_place and out:view(me * N, N) or tensor.new(N, dt)
  local mine = R.seq(0, N, function(i) return R.value(dt, me, i) end)
  for i = 0, N - 1 do t[i] = mine[i + 1] end
  H.truthy(rawequal(c:allgather(t, out), out), "allgather returns out")
  local want = {}
  for r = 0, n - 1 do
    for i = 0, N - 1 do want[#want + 1] = R.value(dt, r, i) end
  end
  H.values(out, want, nil, string.format("allgather %s in_place=%s", dt, in_place))
end

local function check_broadcast(dt, root)
  local t = input(dt, N)
  H.truthy(rawequal(c:broadcast(t, root), t), "broadcast returns t")
  H.values(t, R.seq(0, N, function(i) return R.value(dt, root, i) end), nil,
           string.format("broadcast %s root=%d", dt, root))
end

-- Block j of rank r's input goes to rank j: element i of it is value(r, j*N + i).
local function check_alltoall(dt, in_place)
  local t = input(dt, N * n)
  local out = in_place and t or tensor.new(N * n, dt)
  H.truthy(rawequal(c:alltoall(t, out), out), "alltoall returns out")
  local want = {}
  for from = 0, n - 1 do
    for i = 0, N - 1 do want[#want + 1] = R.value(dt, from, me * N + i) end
  end
  H.values(out, want, nil, string.format("alltoall %s in_place=%s", dt, in_place))
end

for _, dt in ipairs(R.DTYPES) do
  for _, in_place in ipairs { false, true } do
    for _, op in ipairs(R.OPS) do
      check_allreduce(dt, op, in_place)
      check_reducescatter(dt, op, in_place)
      for root = 0, n - 1 do check_reduce(dt, op, in_place, root) end
    end
    check_allgather(dt, in_place)
    check_alltoall(dt, in_place)
  end
  for root = 0, n - 1 do check_broadcast(dt, root) end
end

-- An empty tensor is a valid (no-op) collective.
H.eq(#c:allreduce(tensor.new(0, "f32")), 0, "empty allreduce")

-- A longer out than needed: the extra elements are left alone.
local big = tensor.new(N + 3, "i32"):fill(-5)
c:allreduce(input("i32", N), "sum", big)
H.eq(big[N + 2], -5, "allreduce leaves out's tail alone")
H.eq(big[0], R.reduced("i32", "sum", n, 0), "allreduce into a longer out")

c:barrier()
if me == 0 then print(string.format("comm_collectives: ok on %d ranks", n)) end
