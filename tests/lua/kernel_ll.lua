-- The "ll" all-reduce's own protocol (src/core/kll.h): flags in the data,
-- two rotating sets of slots, a call count kept in the window.  What can go
-- wrong there and nowhere else: a call that reads the previous call's lines
-- (same set two calls back, or stale flags), a tail line only partly valid,
-- a region at the LL area's limit, a window smaller than one line, the area
-- spilling into the user's elements or the sync words.  kernel_ops.lua
-- covers every dtype and op against the CPU reference.
-- Also run by tests/gpu/kernel_*.lua with KERNEL_TEST_KIND set.
local H = require "harness"

-- sums run over the members' comm ranks of c's windows' team
-- (GCSH_RANKS_PER_NODE can make it part of c)
local c, _, opts, team = H.kernel_setup()
local me = c.rank
local k = #team
local function over_team(f)
  local s = 0
  for _, r in ipairs(team) do s = s + f(r) end
  return s
end
local ranks_plus_one = over_team(function(r) return r + 1 end)

H.truthy((" " .. table.concat(kernel.algos, " ") .. " "):find(" ll ", 1, true), "kernel.algos lists ll")

-- element i of rank r at call number `call`: distinct per call, so a line
-- left from an earlier call gives a wrong value, not a right one
local function value(r, i, call) return (r + 1) * 1000 + (i % 97) * 3 + call end
local function want_sum(i, call) return over_team(function(r) return value(r, i, call) end) end

local function fill(t, call)
  local v = {}
  for i = 0, #t - 1 do v[i + 1] = value(me, i, call) end
  t:copy(tensor.from(v, t.dtype))
end

local function check(res, call, what)
  local got = res:totable()
  for i = 0, #got - 1 do
    if got[i + 1] ~= want_sum(i, call) then
      H.eq(got[i + 1], want_sum(i, call), string.format("%s: element %d", what, i))
      return
    end
  end
  H.truthy(true, what)
end

-- back to back: many calls, lengths changing between calls (so a short
-- call follows a long one in the same set), in place and into out, at odd
-- offsets: every call must see only its own lines
do
  local w = c:window(3000, "i32", opts)
  local lengths = { 1, 2, 3, 2999, 4, 1000, 1, 17, 2500, 5, 7, 2, 640, 3, 1 }
  for call = 1, 3 * #lengths do
    local n = lengths[(call - 1) % #lengths + 1]
    local off = (call * 7) % (3000 - n + 1)
    local region = w:tensor():view(off, n)
    fill(region, call)
    local out = call % 3 == 0 and tensor.new(n + 1, "i32"):view(1, n) or nil
    local res, ran = kernel.allreduce(w, { algo = "ll", offset = off, n = n, out = out })
    H.eq(ran, "ll", "the algorithm reported")
    check(res, call, string.format("call %d: n=%d offset=%d%s", call, n, off, out and " out" or ""))
    if out then
      local mine = region:totable()
      H.eq(mine[n], value(me, n - 1, call), "with out, my region keeps my values")
    end
  end
  -- and every rank ran the same number of calls: one more agrees
  w:tensor():fill(1)
  H.eq(kernel.allreduce(w, { algo = "ll" }):sum(), 3000 * k, "the whole window after the sequence")
  w:free()
end

-- ll between the other algorithms on one window: they share nothing but
-- the region, and each leaves the other's state alone
do
  local w = c:window(100, "f32", opts)
  for call = 1, 12 do
    local algo = ({ "ll", "oneshot", "ll", "ll", "twoshot", "ring" })[(call - 1) % 6 + 1]
    fill(w:tensor(), call)
    check(kernel.allreduce(w, { algo = algo }), call, "mixed: call " .. call .. " " .. algo)
  end
  w:free()
end

-- the limit: 64 KiB of region per call, exactly; one element more is an
-- error naming the bound, before anything runs (the window still works)
do
  local N = 65536 // 4
  local w = c:window(N + 8, "f32", opts)
  w:tensor():fill(me + 1)
  local res = kernel.allreduce(w, { algo = "ll", offset = 8, n = N })
  H.eq(res:sum(), N * ranks_plus_one, "64 KiB region at offset 8")
  H.eq(w:tensor()[7], me + 1, "the element before the region is untouched")
  H.raises(function() kernel.allreduce(w, { algo = "ll", n = N + 1 }) end,
           "algo 'll' takes at most 65536 bytes (n must be 1..16384 for f32), got n = 16385 (65540 bytes)",
           "past the limit")
  w:tensor():fill(2)
  H.eq(kernel.allreduce(w, { algo = "ll", n = 5 }):sum(), 5 * 2 * k, "the window works after the error")
  w:free()
  local h = c:window(40000, "f16", opts)
  H.raises(function() kernel.allreduce(h, { algo = "ll" }) end, "(n must be 1..32768 for f16)", "f16 bound")
  h:free()
end

-- windows smaller than a line, and odd f16/bf16 tails: the partial last
-- line carries only its valid bytes, and elements past n are untouched
for _, dt in ipairs { "f16", "bf16", "u32" } do
  for _, len in ipairs { 1, 2, 3 } do
    local w = c:window(len, dt, opts)
    for call = 1, 4 do
      w:tensor():fill(me + call)
      local res = kernel.allreduce(w, { algo = "ll" })
      H.eq(res:sum(), len * (ranks_plus_one + k * (call - 1)),
           string.format("%s window of %d, call %d", dt, len, call))
    end
    w:free()
  end
  local w = c:window(9, dt, opts)
  for n = 1, 8 do
    w:tensor():fill(7)
    local res = kernel.allreduce(w, { algo = "ll", offset = 1, n = n })
    H.eq(res:sum(), n * 7 * k, string.format("%s n=%d at offset 1", dt, n))
    local rest = w:tensor():totable()
    H.eq(rest[1], 7, dt .. ": element 0 untouched")
    if n < 8 then H.eq(rest[n + 2], 7, string.format("%s: element %d untouched", dt, n + 1)) end
  end
  w:free()
end

-- a window made after ll calls on another starts fresh (its count at 0,
-- its slots zero), and neither disturbs the other
do
  local w = c:window(64, "f32", opts)
  w:tensor():fill(-1)
  kernel.allreduce(w, { algo = "ll" })
  kernel.allreduce(w, { algo = "ll" })
  local v = c:window(64, "f32", opts)
  v:tensor():fill(me + 1)
  H.eq(kernel.allreduce(v, { algo = "ll" }):sum(), 64 * ranks_plus_one, "a second window")
  H.eq(w:tensor()[63], -k * k, "the first window: two calls in place, -1 -> -k -> -k*k")
  v:free()
  w:free()
end
