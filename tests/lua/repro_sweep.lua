-- repro.sweep: the grid in order, agreement across ranks, shrinking, the
-- result table, nil on a correct candidate, bad options.
local H = require "harness"

local c = comm.world()

-- out = a + b of the case's length; `wrong(case)` says where to break it.
local function adder(wrong)
  return function(case)
    local a = tensor.new(case.n + case.offset, case.dtype):arange(1):view(case.offset, case.n)
    local out = tensor.new(case.n, case.dtype)
    kernel.reduce(out, { a, a }, case.op)
    if wrong and wrong(case) then out[case.n - 1] = 0 end
    return out
  end
end
local reference = adder(nil)

-- a correct candidate: nil, every case run
local calls = 0
local right = adder(nil)
H.eq(repro.sweep { candidate = function(k) calls = calls + 1; return right(k) end,
                   reference = reference, n = { 1, 2, 3 }, offset = { 0, 1 },
                   dtype = { "f32", "i32" }, quiet = true }, nil, "correct candidate")
H.eq(calls, 12, "every case of the grid ran")

-- the smallest failing case of the grid: smallest n, then offset (shrink = 0:
-- no lengths or offsets outside the grid)
local found = repro.sweep { candidate = adder(function(k) return k.n % 4 == 1 and k.offset >= 1 end),
                            reference = reference, n = { 9, 5, 13, 4 }, offset = { 2, 1, 0 },
                            dtype = { "i32" }, shrink = 0, quiet = true }
H.eq(found.n, 5, "smallest n")
H.eq(found.offset, 1, "then the smallest offset")
H.eq(found.dtype, "i32", "dtype")
H.eq(found.op, "sum", "op default")
H.eq(found.failed, 6, "failing cases counted over the grid")
H.eq(found.cases, 12, "cases in the grid")
H.eq(found.ranks, size == 1 and "0" or ("0-" .. (size - 1)), "failing ranks")
H.truthy(found.detail:find("1 of 5 elements differ; first at [4]", 1, true), found.detail)

-- shrinking below the grid: lengths, then offsets the grid did not try
found = repro.sweep { candidate = adder(function(k) return k.n >= 3 and k.offset >= 1 end),
                      reference = reference, n = { 16, 8 }, offset = { 4 }, quiet = true }
H.eq(found.n, 3, "shrunk to the smallest failing length")
H.eq(found.offset, 1, "then to the smallest failing offset")

-- a case failing on one rank only fails everywhere, naming that rank
local last = size - 1
found = repro.sweep { candidate = adder(function(k) return rank == last and k.n == 2 end),
                      reference = reference, n = { 1, 2, 3 }, quiet = true }
H.eq(found.n, 2, "one rank's failure")
H.eq(found.ranks, tostring(last), "the failing rank")

-- floats: within the dtype's tolerance passes, beyond fails; integers exact
local function scaled(f)
  return function(k) return tensor.new(k.n, k.dtype):fill(1):view(0, k.n):copy(tensor.new(k.n, k.dtype):fill(f)) end
end
H.eq(repro.sweep { candidate = scaled(1 + 1e-7), reference = scaled(1), n = { 4 }, quiet = true },
     nil, "f32 within rtol")
H.truthy(repro.sweep { candidate = scaled(1.001), reference = scaled(1), n = { 4 }, quiet = true },
         "f32 beyond rtol")
H.eq(repro.sweep { candidate = scaled(1.0005), reference = scaled(1), n = { 4 }, dtype = { "f16" },
                   quiet = true }, nil, "f16: one unit in the last place passes")

-- an error in the candidate is a failing case, with its message
found = repro.sweep { candidate = function(k) if k.n > 1 then error("boom") end return reference(k) end,
                      reference = reference, n = { 1, 2 }, quiet = true }
H.eq(found.n, 2, "candidate error")
H.truthy(found.detail:find("candidate raised:", 1, true) and found.detail:find("boom", 1, true),
         found.detail)

-- bad options, named
H.raises(function() repro.sweep { reference = reference, n = { 1 } } end,
         "sweep: candidate must be a function(case) returning a tensor, got nil")
H.raises(function() repro.sweep { candidate = reference, reference = reference } end,
         "sweep: n = {lengths...} is required")
H.raises(function() repro.sweep { candidate = reference, reference = reference, n = { 0 } } end,
         "sweep: n[1] = 0 is not an integer >= 1")
H.raises(function() repro.sweep { candidate = reference, reference = reference, n = { 1 },
                                  offset = { -1 } } end, "sweep: offset[1] = -1 is not an integer >= 0")
H.raises(function() repro.sweep { candidate = reference, reference = reference, n = { 1 },
                                  dtype = { "f31" } } end, "sweep: unknown dtype 'f31'")
H.raises(function() repro.sweep { candidate = reference, reference = reference, n = { 1 },
                                  offsets = { 1 } } end, "sweep: unknown option 'offsets'")
H.raises(function() repro.sweep { candidate = reference, reference = reference, n = {} } end,
         "sweep: n must be a non-empty list of integers")

-- repro.differ: exact for integers, named elements
local a, b = tensor.from({ 1, 2, 3 }, "i32"), tensor.from({ 1, 2, 4 }, "i32")
H.eq(repro.differ(a, a), nil, "equal")
H.eq(repro.differ(a, b), "1 of 3 elements differ; first at [2]: expected 4, got 3", "differ text")
H.eq(repro.differ(a, tensor.new(2, "i32")), "length 3, expected 2", "length")

-- shrinking tries every dtype and op at each shorter length, so the answer
-- does not depend on the order the lists give them in
local function picky(case)
  local out = reference(case)
  local bad = case.dtype == "f32" and case.n >= 5 or case.dtype == "f16" and case.n >= 9
              or case.op == "max" and case.n >= 7
  if bad then out[case.n - 1] = 0 end
  return out
end
for _, lists in ipairs { { { "f16", "f32" }, { "max", "sum" } }, { { "f32", "f16" }, { "sum", "max" } } } do
  found = repro.sweep { candidate = picky, reference = reference, n = { 16 }, dtype = lists[1],
                        op = lists[2], quiet = true }
  H.eq(found.n .. " " .. found.dtype .. " " .. found.op, "5 f32 sum",
       "the smallest case, lists in the order " .. lists[1][1] .. " " .. lists[2][1])
end

-- each kind of failure is reported with its smallest case
found = repro.sweep { candidate = function(k)
                        if k.n == 3 then error("three is not allowed") end
                        return adder(function(q) return q.n >= 5 end)(k)
                      end, reference = reference, n = { 2, 3, 4, 6, 7 }, quiet = true, shrink = 0 }
H.eq(#found.kinds, 2, "two kinds of failure")
H.eq(found.kinds[1].n, 3, "the first kind: the smallest case")
H.truthy(found.kinds[1].detail:find("three is not allowed", 1, true), found.kinds[1].detail)
H.eq(found.kinds[2].n, 6, "the second kind's smallest case")
H.truthy(found.kinds[2].detail:find("elements differ", 1, true), found.kinds[2].detail)

-- ranks=: cases on the first k ranks (case.comm), shrunk to fewer ranks
if size >= 3 then
  local seen_sizes = {}
  found = repro.sweep { candidate = function(k)
                          seen_sizes[k.size] = true
                          local t = k.comm:allreduce(tensor.new(k.n):fill(1))
                          if k.comm.size >= 3 then t[0] = 0 end -- wrong from 3 ranks on
                          return t
                        end,
                        reference = function(k) return tensor.new(k.n):fill(k.comm.size) end,
                        n = { 2 }, ranks = { size }, quiet = true }
  H.eq(found.size, 3, "shrunk to the fewest ranks that fail")
  H.truthy(rank >= 2 or seen_sizes[2], "smaller rank counts were tried")
end
-- the shrink reaches a fixpoint: a length that fails only at fewer ranks is
-- found after the ranks shrank (n >= 2 * size + 1 fails: at size ranks the
-- grid's 9 shrinks to 2 * size + 1, then at 1 rank to 3), and so is a dtype
-- earlier in gcsh's order that fails only there (i32 fails everywhere, f32
-- at 1 rank)
local function wrong_from(k_wrong)
  return function(k)
    local t = k.comm:allreduce(tensor.new(k.n, k.dtype):fill(1))
    if k_wrong(k) then t[0] = 0 end
    return t
  end
end
local function times_size(k) return tensor.new(k.n, k.dtype):fill(k.comm.size) end
found = repro.sweep { candidate = wrong_from(function(k) return k.n >= 2 * k.size + 1 end),
                      reference = times_size, n = { 9 }, ranks = { size }, quiet = true }
H.eq(found.size .. " " .. found.n, "1 3", "shrunk to a fixpoint: n again after the ranks")
found = repro.sweep { candidate = wrong_from(function(k) return k.dtype == "i32" or k.size == 1 end),
                      reference = times_size, n = { 4 }, dtype = { "i32", "f32" },
                      ranks = { size }, quiet = true }
H.eq(string.format("%d %d %s", found.size, found.n, found.dtype), "1 1 f32",
     "shrunk to a fixpoint: the dtype again after the ranks")
H.raises(function() repro.sweep { candidate = reference, reference = reference, n = { 1 },
                                  ranks = { size + 1 } } end,
         "sweep: ranks[] = " .. (size + 1) .. " is more than the communicator's " .. size)

-- help(repro.sweep): its own rows
H.truthy(require("gcsh.help").text(repro.sweep):find("repro.sweep{candidate=, reference=, n=", 1, true),
         "help(repro.sweep)")
