-- kernel.alltoallv(w, counts [, {offset, out}]) (issue 37): an all-to-all
-- with per-peer counts over a window.  With equal counts it gives what
-- c:alltoall gives; with unequal ones (given as this rank's row, or as
-- every rank's table, mixed across ranks) what a Lua reference computes
-- from the layout: rank r's block for rank j at offset + the sum of r's
-- counts before j; rank j's out holds the block from rank i after those
-- from ranks 0..i-1.  Every misuse is an error naming the bound or the
-- ranks; counts that disagree across ranks fail on every rank, and the
-- next call works.  Several dtypes, at 1, 2 and 4 ranks.
local H = require "harness"

local c = comm.world()
local me, k = c.rank, c.size
local DTYPES = { "f32", "f16", "bf16", "i32", "u32" }

-- what rank r sends rank j in the unequal case (0 included)
local function count(r, j) return (r * 7 + j * 3 + 1) % 5 end
-- the value rank r keeps at element i of its slice: exact in every dtype
local function value(r, i) return (r * 37 + i) % 200 end

local function row_of(r)
  local row = {}
  for j = 0, k - 1 do row[j + 1] = count(r, j) end
  return row
end

-- the reference: what rank `me` receives, in order, from every rank
local function reference(offset)
  local want, recv = {}, {}
  for i = 0, k - 1 do
    local before = 0
    for j = 0, me - 1 do before = before + count(i, j) end
    for e = 0, count(i, me) - 1 do want[#want + 1] = value(i, offset + before + e) end
    recv[i + 1] = count(i, me)
  end
  return want, recv
end

for _, dt in ipairs(DTYPES) do
  local n = 5 * k + 3
  local w = c:window(n, dt)
  local mine = w:tensor()
  for i = 0, n - 1 do mine[i] = value(me, i) end
  c:barrier()

  -- equal counts: c:alltoall's result
  local m = 2
  local equal = {}
  for j = 1, k do equal[j] = m end
  local out, recv = kernel.alltoallv(w, equal)
  local want = tensor.new(k * m, dt)
  c:alltoall(tensor.new(k * m, dt):copy(mine:view(0, k * m)), want)
  H.truthy(out:equal(want), dt .. ": equal counts give c:alltoall's result")
  H.eq(#out, k * m, dt .. ": out has what this rank receives")
  H.values(recv, equal, nil, dt .. ": receive counts")

  -- unequal counts, from offset 1; even ranks give their row, odd ones
  -- every rank's table
  local counts = row_of(me)
  if me % 2 == 1 then
    counts = {}
    for r = 0, k - 1 do counts[r + 1] = row_of(r) end
  end
  local ref, ref_recv = reference(1)
  out, recv = kernel.alltoallv(w, counts, { offset = 1 })
  H.values(out, ref, nil, dt .. ": unequal counts against the reference")
  H.values(recv, ref_recv, nil, dt .. ": unequal receive counts")

  -- into a given out, longer than needed: the rest untouched
  local given = tensor.new(#ref + 3, dt):fill(99)
  local res = kernel.alltoallv(w, counts, { offset = 1, out = given })
  H.truthy(rawequal(res, given), dt .. ": returns the given out")
  for i = 0, #ref - 1 do H.eq(given[i], ref[i + 1], dt .. ": given out[" .. i .. "]") end
  for i = #ref, #ref + 2 do H.eq(given[i], 99, dt .. ": past what it receives, untouched") end
  H.values(mine, (function() local t = {} for i = 0, n - 1 do t[i + 1] = value(me, i) end return t end)(),
           nil, dt .. ": the window is not written")
  c:barrier()
  w:free()
end

-- ---- misuse: checked before anything moves, and exchanged, so that a
-- rank's wrong arguments are the same error on every rank (none goes on to
-- pair its next call with this one): "ranks 0-3: ..." when all are wrong
local w = c:window(4, "i32")
local ones = {}
for j = 1, k do ones[j] = 1 end
local every = k == 1 and "alltoallv: rank 0: " or "alltoallv: ranks 0-" .. (k - 1) .. ": "
local function with(j, v) local t = { table.unpack(ones) }; t[j] = v; return t end
H.raises(function() kernel.alltoallv(w, { 1, 1, 1, 1, 1 }) end,
         every .. "counts has 5 entries, the communicator has " .. k .. " ranks (one each: counts[j + 1] for rank j)")
H.raises(function() kernel.alltoallv(w, with(1, -1)) end,
         every .. "counts[1] must be an integer >= 0 (elements), got -1")
H.raises(function() kernel.alltoallv(w, with(k, 1.5)) end,
         every .. "counts[" .. k .. "] must be an integer >= 0 (elements), got 1.5")
H.raises(function() kernel.alltoallv(w, "x") end, every .. "counts must be a table")
if k > 1 then -- every count fits, their sum does not
  H.raises(function() kernel.alltoallv(w, with(1, 4)) end,
           every .. "this rank sends " .. (k + 3) .. " elements from offset 0, past the window's 4 elements (w.n): at most 4")
end
H.raises(function() kernel.alltoallv(w, with(k, math.maxinteger)) end,
         every .. "this rank sends rank " .. (k - 1) .. " 9223372036854775807 elements, more than the window has from offset 0: at most 4 (w.n 4)")
H.raises(function() kernel.alltoallv(w, ones, { offset = 4 }) end, every .. "offset")
H.raises(function() kernel.alltoallv(w, ones, { n = 2 }) end, every .. "unknown option 'n' (valid: offset out)")
H.raises(function() kernel.alltoallv(w, ones, { out = tensor.new(k, "f32") }) end, every .. "out")
local matrix = {}
for r = 1, k do matrix[r] = { table.unpack(ones) } end
matrix[1] = {}
H.raises(function() kernel.alltoallv(w, matrix) end, every .. "counts[1] has 0 entries")
local f64 = c:window(4, "f64")
H.raises(function() kernel.alltoallv(f64, ones) end, every)
c:barrier()
f64:free()
if k > 1 then -- one rank's mistake, heard by all
  H.raises(function() kernel.alltoallv(w, me == 1 and { 1 } or ones) end,
           "alltoallv: rank 1: counts has 1 entries, the communicator has " .. k .. " ranks")
end

-- across ranks: the last rank's table says rank 0 sends 2 to rank 0, out
-- too small on rank 0; each is the same error on every rank
if k > 1 then
  matrix = {}
  for r = 1, k do matrix[r] = { table.unpack(ones) } end
  matrix[1][1] = 2
  local counts = me == k - 1 and matrix or ones
  H.raises(function() kernel.alltoallv(w, counts) end,
           "alltoallv: counts disagree: rank 0 sends 1 elements to rank 0, but rank " .. (k - 1)
           .. "'s counts[1][1] is 2")
  local out = me == 0 and tensor.new(k - 1, "i32") or nil
  H.raises(function() kernel.alltoallv(w, ones, { out = out }) end,
           "alltoallv: rank 0's out has " .. (k - 1) .. " elements, it receives " .. k)
end
H.raises(function() gcsh.graph(function() kernel.alltoallv(w, ones) end) end,
         "gcsh.graph: kernel.alltoallv cannot be captured (it exchanges the counts on the host now)")
-- and the next call works
w:tensor():fill(me)
c:barrier()
local out = kernel.alltoallv(w, ones)
for i = 0, k - 1 do H.eq(out[i], i, "after the refusals: from rank " .. i) end
c:barrier()
w:free()
