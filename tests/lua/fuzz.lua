-- Fuzzing every binding with random and malformed calls: wrong types, nil,
-- NaN, huge and negative sizes, freed handles, wrong ranks.  Passes when
-- nothing crashes or hangs (run.sh's timeout) and every failure is a Lua
-- error.  Run by tests/run.sh for a few seconds; scripts/fuzz.sh runs it long.
--   FUZZ_SECONDS (default 2), FUZZ_SEED (default 1)
--
-- Collective calls must be issued identically on every rank, or the fuzzer
-- itself would write a legitimate hang: they draw from `shared`, a generator
-- seeded alike everywhere and advanced alike.  Local-only calls draw from
-- `mine`, seeded per rank.  Deliberate mismatches (a count that depends on the
-- rank) are made only while .check is on, which must catch them.
local seconds = tonumber(os.getenv("FUZZ_SECONDS") or "2")
local seed = math.tointeger(tonumber(os.getenv("FUZZ_SEED") or "1")) or 1

-- xorshift64*: the same numbers on every rank for the same seed
local function generator(s)
  local x = s ~ 0x2545F4914F6CDD1D
  if x == 0 then x = 1 end
  return function(n)
    x = x ~ (x >> 12); x = x ~ (x << 25); x = x ~ (x >> 27)
    local v = (x * 0x2545F4914F6CDD1D) >> 1
    return n and (v % n) + 1 or v
  end
end
local shared, mine = generator(seed), generator(seed * 7919 + rank + 1)

local c = comm.world()
local DTYPES = { "f64", "f32", "f16", "bf16", "i64", "i32", "u32", "u8", "i8" }
local OPS = { "sum", "prod", "min", "max", "avg" }

local function freed_tensor() local t = tensor.new(3) t:free() return t end
local function freed_timer() local t = gcsh.timer() t:free() return t end

-- odd values: anything a binding might be handed
local ODD = { nil, true, false, "", "x", "f32", {}, { 1, 2 }, 0 / 0, math.huge, -math.huge, -1,
              0, 1, 2, 3.5, -0.0, 2 ^ 53, 2 ^ 63, math.mininteger, math.maxinteger, 1 << 40,
              1e300, print, coroutine.create(print), freed_tensor(), freed_timer() }
local NODD = 27

-- ODD's two tables are handed out fresh: a binding may write into a table
-- it is given (a routed collective's options, bench's), and local calls,
-- which draw from `mine`, would leave the ranks different tables to hand
-- the same collective
local FRESH = { [7] = function() return {} end, [8] = function() return { 1, 2 } end }
local function odd(r)
  local i = r(NODD)
  return FRESH[i] and FRESH[i]() or ODD[i]
end
local function small(r) return r(9) - 2 end                   -- -1 .. 7
local function count(r) return ({ 0, 1, 2, 3, 4, 8, 17, 64 })[r(8)] end
local function dtype(r) return r(10) == 1 and odd(r) or DTYPES[r(#DTYPES)] end
local function arg(r, good) return r(5) == 1 and odd(r) or good end

-- tensors this rank owns; some get freed along the way
local pool = {}
local function any_tensor(r)
  if #pool == 0 or r(8) == 1 then return odd(r) end
  return pool[r(#pool)]
end

local calls, errors = 0, 0
local function try(f, ...)
  calls = calls + 1
  local ok, err = pcall(f, ...)
  if not ok then
    errors = errors + 1
    if type(err) ~= "string" then error("a binding raised a non-string error: " .. tostring(err)) end
  end
  return ok, err
end

-- ---- local calls (may differ between ranks) -----------------------------------
local LOCAL = {
  function(r) local ok, t = try(tensor.new, arg(r, count(r)), dtype(r)) if ok and #pool < 64 then pool[#pool + 1] = t end end,
  function(r) local ok, t = try(tensor.from, arg(r, { 1, 2, 3 }), dtype(r)) if ok and #pool < 64 then pool[#pool + 1] = t end end,
  function(r) try(function() return any_tensor(r):fill(arg(r, r(100))) end) end,
  function(r) try(function() return any_tensor(r):arange(arg(r, 1), arg(r, 2)) end) end,
  function(r) try(function() return any_tensor(r):rand(arg(r, r(1000))) end) end,
  function(r) try(function() return any_tensor(r):copy(any_tensor(r)) end) end,
  function(r) try(function() return any_tensor(r)[arg(r, small(r))] end) end,
  function(r) try(function() any_tensor(r)[arg(r, small(r))] = arg(r, 1.5) end) end,
  function(r) try(function() return #any_tensor(r) end) end,
  function(r) try(function() return any_tensor(r):view(arg(r, small(r)), arg(r, small(r))) end) end,
  function(r) try(function() return any_tensor(r):totable() end) end,
  function(r) try(function() return any_tensor(r):sum() end) end,
  function(r) try(function() return any_tensor(r):equal(any_tensor(r)) end) end,
  function(r) try(function() return any_tensor(r):allclose(any_tensor(r), arg(r, 1e-5), arg(r, 0)) end) end,
  function(r) try(function() return any_tensor(r):maxdiff(any_tensor(r)) end) end,
  function(r) try(function() return any_tensor(r):checksum() end) end,
  function(r) try(function() return tostring(any_tensor(r)) end) end,
  function(r) try(function() return any_tensor(r).dtype end) end,
  function(r) if #pool > 0 then try(function() pool[r(#pool)]:free() end) end end,
  function(r) try(function() local t = gcsh.timer() return t:stop(), t:stop() end) end,
  function(r) try(function() return freed_timer():stop() end) end,
  function(r) try(gcsh.wtime) try(gcsh.sync) end,
  function(r) -- odd values, but no long sleeps
    local v = arg(r, 0)
    if type(v) == "number" and v > 0 and v <= 1e6 then v = 0.001 end
    try(gcsh.sleep, v)
  end,
  function(r) try(gcsh.debug.inject, arg(r, "no such fault")) end,
  function(r) try(function() return c[arg(r, "rank")] end) end,
}

-- ---- collective calls (identical on every rank) -------------------------------
local function same_tensor(r) -- the same description on every rank
  local n, dt = count(r), DTYPES[r(#DTYPES)]
  if r(10) == 1 then return odd(r) end
  local ok, t = pcall(tensor.new, n, dt)
  return ok and t or nil
end

local COLLECTIVE = {
  function(r) try(function() return c:allreduce(same_tensor(r), OPS[r(#OPS)]) end) end,
  function(r) try(function() return c:allreduce(same_tensor(r), odd(r)) end) end,
  function(r) try(function() return c:broadcast(same_tensor(r), arg(r, small(r))) end) end,
  function(r) try(function() return c:reduce(same_tensor(r), arg(r, small(r)), OPS[r(#OPS)]) end) end,
  function(r) local t = same_tensor(r) try(function() return c:allgather(t, tensor.new(#t * size, t.dtype)) end) end,
  function(r) local t = same_tensor(r) try(function() return c:reducescatter(t, same_tensor(r)) end) end,
  function(r) local t = same_tensor(r) try(function() return c:alltoall(t, t) end) end,
  function(r) try(function() return c:barrier() end) end,
  function(r) try(function() return c:loop(odd(r), arg(r, 2), same_tensor(r)) end) end,
  function(r) try(function() return c:loop("allreduce", arg(r, 3), same_tensor(r)) end) end,
  function(r) -- a send/recv pair between two ranks chosen alike, the others idle
    -- both ends get odd peers or neither: one end refusing alone would leave
    -- the other waiting (with .check off) or out of step with the fuzzer
    -- (a == b: a send to oneself, refused locally on that rank alone)
    local a, b, t = r(size) - 1, r(size) - 1, same_tensor(r)
    local BAD = { -1, size, 3.5, 0 / 0, "x", {}, math.maxinteger, true }
    local bad = r(5) == 1 and BAD[r(#BAD)] or nil
    local to, from = bad or b, bad or a
    if rank == a then try(function() return c:send(t, to) end)
    elseif rank == b then try(function() return c:recv(t, from) end) end
  end,
  function(r) -- split with a per-rank color (legitimately different), then use and free it
    local modulus = r(3)
    local ok, s = try(function() return c:split(rank % modulus, arg(r, nil)) end)
    if ok and s then try(function() return s:allreduce(tensor.new(2)) end) s:free() end
  end,
  function(r) -- deliberate mismatch, caught by .check
    if gcsh.check() then
      try(function() return c:allreduce(tensor.new(1 + rank % 2 + r(3))) end)
    end
  end,
  function(r) -- roots differ: a mismatch too
    if gcsh.check() then try(function() return c:broadcast(tensor.new(2), rank % 2) end) end
  end,
  function(r) gcsh.check(r(4) ~= 1) end,
}
if c.window then
  COLLECTIVE[#COLLECTIVE + 1] = function(r)
    local ok, w = try(function() return c:window(arg(r, count(r) + 1), dtype(r)) end)
    if ok and w then
      try(function() return w:peer(arg(r, small(r))) end)
      try(function() return w:tensor():fill(1) end)
      try(function() w:free() end)
      try(function() return w:tensor() end)
    end
  end
end

if step and step.window then -- stepped registration: odd arguments, steps, reset
  COLLECTIVE[#COLLECTIVE + 1] = function(r)
    local real = print
    print = function() end -- the steps' lines are not what this tests
    -- options made here, not drawn from ODD: local calls may have written
    -- into ODD's tables, and a collective needs the same options everywhere
    local OPTS = { nil, { kind = "host" }, { knd = "host" }, { kind = 3 }, { 1, 2 }, 7, "host" }
    local ok, st = try(function()
      return step.window(c, arg(r, count(r) + 1), dtype(r), OPTS[r(7)])
    end)
    if ok and st then
      for _ = 1, r(5) - 1 do try(function() st:next() end) end
      if r(2) == 1 then try(function() return st:run() end) end
      try(function() st:reset() end)
      try(function() st:next() st:reset() end)
    end
    print = real
  end
end

-- ---- the run ------------------------------------------------------------------
local start, rounds = gcsh.wtime(), 0
gcsh.check(true)
while true do
  rounds = rounds + 1
  for _ = 1, 4 do LOCAL[mine(#LOCAL)](mine) end
  COLLECTIVE[shared(#COLLECTIVE)](shared)
  if rounds % 25 == 0 then -- stop together: rank 0's clock decides
    gcsh.check(true)
    local stop = tensor.from({ (gcsh.wtime() - start >= seconds) and 1 or 0 }, "i32")
    c:broadcast(stop, 0)
    if stop[0] == 1 then break end
  end
end
gcsh.check(true)
c:barrier()
local total = tensor.from({ calls, errors }, "i64")
c:allreduce(total)
if rank == 0 then
  print(string.format("fuzz: ok on %d ranks, seed %d: %d rounds, %d calls, %d errors (all Lua errors)",
                      size, seed, rounds, total[0], total[1]))
end
