-- c:scan(t [, op [, out]]): rank r gets the op over the inputs of ranks
-- 0..r, on every dtype, in place and out of place; bad input is refused
-- before MPI or NCCL runs, and ranks that disagree fail together.
local H = require "harness"

local c = comm.world()
local me, n = c.rank, c.size

-- rank r's input: element i is r + 1 + i (prod: 1 or 2, so that no dtype overflows)
local function value(op, r, i)
  if op == "prod" then return 1 + (r + i) % 2 end
  return r + 1 + i
end

local function prefix(op, i)
  local acc = value(op, 0, i)
  for r = 1, me do
    local x = value(op, r, i)
    if op == "sum" then acc = acc + x
    elseif op == "prod" then acc = acc * x
    elseif op == "min" then acc = math.min(acc, x)
    else acc = math.max(acc, x) end
  end
  return acc
end

local k = 3
for _, dt in ipairs { "f64", "f32", "f16", "bf16", "i64", "i32", "u32", "u8", "i8" } do
  for _, op in ipairs { "sum", "prod", "min", "max" } do
    local mine, want = {}, {}
    for i = 0, k - 1 do
      mine[#mine + 1] = value(op, me, i)
      want[#want + 1] = prefix(op, i)
    end
    local what = dt .. " " .. op
    local t, out = tensor.from(mine, dt), tensor.new(k, dt)
    H.eq(c:scan(t, op, out), out, what .. ": returns out")
    H.values(out, want, nil, what .. " out of place")
    H.values(t, mine, nil, what .. ": t untouched")
    H.eq(c:scan(t, op), t, what .. ": returns t in place")
    H.values(t, want, nil, what .. " in place")
  end
end

-- the default op is sum; a view scans its own elements only
local big = tensor.new(6, "i32"):fill(-1)
local v = big:view(2, 2):fill(me + 1)
c:scan(v)
local tri = (me + 1) * (me + 2) // 2
H.values(big, { -1, -1, tri, tri, -1, -1 }, nil, "a view: only its elements change")

-- a large scan (past one MPI count on host, when GCSH_HOST_MPI_MAX_COUNT is low)
local m = 100003
local r = tensor.new(m, "i64"):fill(me + 1)
c:scan(r, "sum")
H.eq(r[0], (me + 1) * (me + 2) // 2, "first element")
H.eq(r[m - 1], (me + 1) * (me + 2) // 2, "last element")

-- bad input, named before the backend runs
local t4 = tensor.new(4, "f32")
H.raises(function() c:scan(nil) end, "bad argument #1 to 'scan' (tensor expected, got nil)")
H.raises(function() c:scan(t4, "avg") end,
         "bad argument #2 to 'scan' (op 'avg' is not defined for scan (valid: sum prod min max))")
H.raises(function() c:scan(t4, "mean") end, "bad argument #2 to 'scan'")
H.raises(function() c:scan(t4, "sum", tensor.new(3, "f32")) end,
         "bad argument #3 to 'scan' (out has 3 elements, needs 4 (as many as t))")
H.raises(function() c:scan(t4, "sum", tensor.new(4, "i32")) end,
         "bad argument #3 to 'scan' (out is i32 but t is f32 (dtypes must match))")
local whole = tensor.new(8, "f32")
H.raises(function() c:scan(whole:view(0, 4), "sum", whole:view(2, 4)) end,
         "bad argument #3 to 'scan' (out overlaps t without being the in-place layout (out = t))")

-- ranks that disagree: the same error on every rank, nothing ran; the next runs
if n > 1 then
  local k = me == n - 1 and 5 or 4
  local s = tensor.new(k, "i32"):fill(1)
  local ok, err = pcall(c.scan, c, s, me == 0 and "max" or "sum")
  H.truthy(not ok, "a mismatch fails")
  H.truthy(err:find("collective mismatch: scan #", 1, true), "the mismatch is named: " .. err)
  local all = c:agree(err)
  for i = 2, #all do H.eq(all[i], all[1], "the same message on every rank") end
  H.eq(s[0], 1, "nothing ran")
end
local s = tensor.new(2, "i32"):fill(1)
c:scan(s)
H.eq(s[1], me + 1, "after a mismatch the next scan runs")

-- c:loop knows it (bench's reference loop) and names every collective when asked for another
H.truthy(c:loop("scan", 3, tensor.new(4, "f32"):fill(1)) >= 0, "c:loop runs scan")
H.raises(function() c:loop("bogus", 1, t4) end,
         "unknown collective 'bogus' (valid: allreduce broadcast reduce scan allgather "
           .. "reducescatter alltoall send recv)")

-- a graph records it, and its replays scan again
local g = gcsh.graph(function() c:scan(s) end)
s:fill(1)
g:replay()
H.eq(s[1], me + 1, "a replayed scan")
g:free()
