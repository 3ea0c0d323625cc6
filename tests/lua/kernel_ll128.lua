-- The "ll128" all-reduce (src/core/kll.h): ll's protocol in 128-byte lines
-- of 120 data bytes and a flag word.  What can go wrong there and not in
-- ll: a line's boundaries (30 f32, 60 f16 a line; lane 7 carries 8 data
-- bytes, the others 16), every other line 8- and not 16-byte aligned, a
-- tail line or lane only partly the region's, the bound at 256 KiB (past
-- ll's 64 KiB, so the LL area's slots must be the longer), and mixing with
-- ll and the other algorithms on one window's LL area and count.
-- kernel_ll.lua covers what the two share; also run by tests/gpu/kernel_*.lua
-- with KERNEL_TEST_KIND set.
local H = require "harness"

local c, _, opts, team = H.kernel_setup()
local me = c.rank
local k = #team
local function over_team(f)
  local s = 0
  for _, r in ipairs(team) do s = s + f(r) end
  return s
end

H.truthy((" " .. table.concat(kernel.algos, " ") .. " "):find(" ll128 ", 1, true),
         "kernel.algos lists ll128")
H.eq(kernel.ll128_max_bytes, 256 * 1024, "kernel.ll128_max_bytes")

-- element i of rank r at call `call`: distinct per element, rank and call
-- (small enough to be exact in f16 and bf16 sums of up to 4 ranks)
local function value(r, i, call, dt)
  if dt == "f16" or dt == "bf16" then return (r + 1) * 4 + (i + call) % 5 end
  return (r + 1) * 1000 + (i % 97) * 3 + call
end

local function check(res, call, dt, what)
  local got = res:totable()
  for i = 0, #got - 1 do
    local want = over_team(function(r) return value(r, i, call, dt) end)
    if got[i + 1] ~= want then
      H.eq(got[i + 1], want, string.format("%s: element %d", what, i))
      return
    end
  end
  H.truthy(true, what)
end

local function fill(t, call, dt)
  local v = {}
  for i = 0, #t - 1 do v[i + 1] = value(me, i, call, dt) end
  t:copy(tensor.from(v, dt))
end

-- around a line's and a lane's boundaries, at offsets 0-3 (every alignment
-- the region can have), in place and into out at an odd alignment
local call = 0
for _, dt in ipairs { "f32", "f16", "bf16", "i32", "u32" } do
  local es = (dt == "f16" or dt == "bf16") and 2 or 4
  local line = 120 // es
  local w = c:window(4 * line + 8, dt, opts)
  for _, n in ipairs { 1, 16 // es - 1, 16 // es + 1, line - 1, line, line + 1, 2 * line - 1,
                       2 * line + 3, 3 * line, 4 * line + 4 } do
    for off = 0, 3 do
      call = call + 1
      local region = w:tensor():view(off, n)
      fill(region, call, dt)
      local out = call % 2 == 0 and tensor.new(n + 1, dt):view(1, n) or nil
      local res, ran = kernel.allreduce(w, { algo = "ll128", offset = off, n = n, out = out })
      H.eq(ran, "ll128", "the algorithm reported")
      check(res, call, dt, string.format("%s n=%d offset=%d%s", dt, n, off, out and " out" or ""))
      if out then
        H.eq(region[n - 1], value(me, n - 1, call, dt), "with out, my region keeps my values")
      end
    end
  end
  -- elements past the region are never written
  local t = w:tensor()
  t:fill(3)
  fill(t:view(1, line + 1), 1, dt)
  kernel.allreduce(w, { algo = "ll128", offset = 1, n = line + 1 })
  H.eq(t[0], 3, dt .. ": the element before the region is untouched")
  H.eq(t[line + 2], 3, dt .. ": the element after the region is untouched")
  w:free()
end

-- the bound: 256 KiB of region, exactly, at an odd offset; one element more
-- is an error naming the bound before anything runs (the window works on)
do
  local N = kernel.ll128_max_bytes // 4
  local w = c:window(N + 3, "f32", opts)
  w:tensor():fill(me + 1)
  local res = kernel.allreduce(w, { algo = "ll128", offset = 3, n = N })
  H.eq(res:sum(), N * over_team(function(r) return r + 1 end), "256 KiB region at offset 3")
  H.eq(w:tensor()[2], me + 1, "the element before the region is untouched")
  H.raises(function() kernel.allreduce(w, { algo = "ll128", n = N + 1 }) end,
           "algo 'll128' takes at most 262144 bytes (n must be 1..65536 for f32), got n = 65537 "
           .. "(262148 bytes)", "past the bound")
  w:tensor():fill(2)
  H.eq(kernel.allreduce(w, { algo = "ll128", n = 7 }):sum(), 7 * 2 * k, "the window works after it")
  w:free()
end

-- ll, ll128 and the planned algorithms in turn on one window: one LL area,
-- one call count; lengths change so that a short call follows a long one
-- in the same set (a stale line must never pass for a new one)
do
  local w = c:window(20000, "i32", opts)
  local algos = { "ll128", "ll", "ll128", "ll128", "twoshot", "ll", "oneshot", "ll128", "ring" }
  local lengths = { 19000, 3, 16000, 31, 5000, 29, 1, 30, 12000, 61, 2, 8000 }
  for i = 1, 3 * #algos do
    local algo = algos[(i - 1) % #algos + 1]
    local n = lengths[(i - 1) % #lengths + 1]
    if algo == "ll" then n = math.min(n, kernel.ll_max_bytes // 4) end
    local off = (i * 13) % (20000 - n + 1)
    fill(w:tensor():view(off, n), 100 + i, "i32")
    local out = i % 4 == 0 and algo ~= "twoshot" and algo ~= "ring" and tensor.new(n, "i32") or nil
    local res = kernel.allreduce(w, { algo = algo, offset = off, n = n, out = out })
    check(res, 100 + i, "i32", string.format("mixed %d: %s n=%d offset=%d", i, algo, n, off))
  end
  w:free()
end

-- a window smaller than a line, and every op
do
  for _, len in ipairs { 1, 2, 5 } do
    local w = c:window(len, "f32", opts)
    for _, op in ipairs { "sum", "max", "min", "prod" } do
      w:tensor():fill(me + 2)
      local res = kernel.allreduce(w, { algo = "ll128", op = op })
      local want = ({
        sum = over_team(function(r) return r + 2 end),
        max = team[#team] + 2,
        min = team[1] + 2,
        prod = (function() local p = 1 for _, r in ipairs(team) do p = p * (r + 2) end return p end)(),
      })[op]
      H.eq(res[len - 1], want, string.format("window of %d, %s", len, op))
    end
    w:free()
  end
end

-- each protocol's lines only where it keeps them: ll's flags sit in words 1
-- and 3 of its 16-byte lines, which in ll128's lines are data, so an ll
-- call after two ll128 calls (the same set) must never take ll128's data
-- for its flag (it did, when the two shared a slot's bytes: data equal to
-- the coming flag, an i32 fill of the call count, passed); nor the
-- persistent all-reduce (ll's lines), nor ll128 after ll
do
  local N = 4096
  local w = c:window(N, "i32", opts)
  local sum = over_team(function(r) return 10 + r end)
  local function stale_round(last)
    local next_flag = w:sync_state().ll_calls + 3 -- the third call's flag
    w:tensor():fill(next_flag)
    kernel.allreduce(w, { algo = "ll128" })
    w:tensor():fill(1)
    kernel.allreduce(w, { algo = "ll128" })
    w:tensor():fill(10 + me)
    return last()
  end
  for t = 1, 40 do
    local res = stale_round(function() return kernel.allreduce(w, { algo = "ll" }) end)
    if res:sum() ~= N * sum then
      H.eq(res:sum(), N * sum, "ll after two ll128 calls whose data were its flag, round " .. t)
    end
  end
  H.truthy(true, "ll after ll128 calls: 40 rounds")
  local p = kernel.persistent(w)
  for t = 1, 20 do
    local res = stale_round(function() p:allreduce() p:wait() return w:tensor() end)
    if res:sum() ~= N * sum then
      H.eq(res:sum(), N * sum, "the persistent all-reduce after two ll128 calls, round " .. t)
    end
  end
  p:stop()
  H.truthy(true, "the persistent all-reduce after ll128 calls: 20 rounds")
  for t = 1, 40 do -- and the other way round
    local next_flag = w:sync_state().ll_calls + 3
    w:tensor():fill(next_flag)
    kernel.allreduce(w, { algo = "ll" })
    w:tensor():fill(1)
    kernel.allreduce(w, { algo = "ll" })
    w:tensor():fill(10 + me)
    local res = kernel.allreduce(w, { algo = "ll128" })
    if res:sum() ~= N * sum then
      H.eq(res:sum(), N * sum, "ll128 after two ll calls whose data were its flag, round " .. t)
    end
  end
  H.truthy(true, "ll128 after ll calls: 40 rounds")
  -- and w:sync_state's ll_seen is a flag either protocol stored, never data
  w:tensor():fill(123456)
  kernel.allreduce(w, { algo = "ll128" })
  local st = w:sync_state()
  for p_, seen in pairs(st.ll_seen) do
    H.truthy(seen < st.ll_flag, string.format("ll_seen of [%s] is a flag: %d < %d", tostring(p_), seen, st.ll_flag))
  end
  w:free()
end
