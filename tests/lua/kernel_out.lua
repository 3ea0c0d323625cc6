-- kernel.allreduce's out= is out of place for every algorithm: the window
-- is not written (two-shot and ring go through the window's scratch area,
-- the LL area, and leave it zeroed; multicast refuses out=), the result
-- is right, and the limits say why.
local H = require "harness"

local c = comm.world()
local me, k = c.rank, c.size
-- the GPU tests (tests/gpu/kernel_{nccl,vmm}.lua) set the window kind
local kind = rawget(_G, "KERNEL_TEST_KIND")
local opts = kind and { kind = kind } or nil

-- element i of rank r's slice: small integers (a stale scratch word could
-- pass for an LL flag)
local function value(r, i) return (r + 1) * (i % 7 + 1) end
local function fill(w)
  local t = w:tensor()
  for i = 0, w.n - 1 do t[i] = value(me, i) end
end
local function expect_untouched(w, what)
  local t = w:tensor():totable()
  for i = 0, w.n - 1 do
    if t[i + 1] ~= value(me, i) then H.eq(t[i + 1], value(me, i), what .. ": window element " .. i) end
  end
end
local function expect_sum(out, offset, what)
  local got = out:totable()
  for i = 0, #out - 1 do
    local want = 0
    for r = 0, k - 1 do want = want + value(r, offset + i) end
    if got[i + 1] ~= want then H.eq(got[i + 1], want, what .. ": out element " .. i) end
  end
end

-- every algorithm, a few regions
local w = c:window(200, "i32", opts)
local REGIONS = { { 0, 200 }, { 3, 1 }, { 5, 2 * k + 1 }, { 17, 150 } }
for _, algo in ipairs(kernel.algos) do
  for _, reg in ipairs(REGIONS) do
    local offset, n = reg[1], reg[2]
    local tag = string.format("%s offset %d n %d", algo, offset, n)
    fill(w)
    c:barrier()
    local out = tensor.new(n, "i32"):fill(-9)
    local ok, res, ran = pcall(kernel.allreduce, w, { algo = algo, offset = offset, n = n, out = out })
    if algo == "multicast" then
      H.truthy(not ok and res:find("allreduce: algo 'multicast' cannot keep the window untouched with "
                                   .. "out=: its st stores the result through the multicast address into "
                                   .. "every slice", 1, true), tag .. ": " .. tostring(res))
    elseif algo == "hier" then
      H.truthy(not ok and res:find("allreduce: algo 'hier' leaves the result in the window", 1, true),
               tag .. ": " .. tostring(res))
    elseif algo == "nccl_dev" and not ok then -- runs on cuda's nccl windows only
      H.truthy(res:find("algo 'nccl_dev'", 1, true), tag .. ": " .. tostring(res))
    else
      H.truthy(ok, tag .. ": " .. tostring(res))
      H.eq(res, out, tag .. ": returns out")
      H.truthy(algo == "auto" or ran == algo, tag .. ": ran " .. tostring(ran))
      c:barrier() -- every rank's moves are done before the window is looked at
      expect_untouched(w, tag)
      expect_sum(out, offset, tag)
    end
    c:barrier()
  end
end
w:free()

-- the scratch is zeroed again: a stale result word there would pass for the
-- next LL call's flag.  max over ones leaves ones in the scratch, and the
-- first ll call on a window waits for flag 1; rank 0 comes late, so the
-- others look at its slot before it wrote it.
for _, algo in ipairs { "twoshot", "ring" } do
  local v = c:window(64, "i32", opts)
  v:tensor():fill(1)
  c:barrier()
  kernel.allreduce(v, { algo = algo, op = "max", out = tensor.new(64, "i32") })
  v:tensor():fill(me + 5)
  if me == 0 then gcsh.sleep(0.2) end
  local res = kernel.allreduce(v, { algo = "ll" })
  local want = 0
  for r = 0, k - 1 do want = want + r + 5 end
  local t = res:totable()
  for i = 1, 64 do
    if t[i] ~= want then H.eq(t[i], want, algo .. " then ll: element " .. (i - 1) .. " (a stale flag?)") end
  end
  c:barrier()
  v:free()
end

-- a region past the scratch: refused, naming the bound; auto goes around
do
  local big = c:window(1 << 21, "f32", opts) -- 8 MiB: more than the scratch holds
  big:tensor():fill(me + 1)
  c:barrier()
  -- two sets of a slot per member, each 128 KiB of ll lines (64 KiB of data)
  -- and 256 KiB of ll128 lines (120 of every 128 bytes data: 2185 lines)
  local scratch = 2 * k * (128 * 1024 + 2185 * 128)
  H.eq(big:info().scratch_bytes, scratch, "the scratch area's bytes")
  local out = tensor.new(1 << 21, "f32")
  H.raises(function() kernel.allreduce(big, { algo = "twoshot", out = out }) end,
           "allreduce: algo 'twoshot' with out= gathers the result in the window's scratch area (its LL "
           .. "area), which holds " .. scratch .. " bytes (n up to " .. (scratch // 4)
           .. "), got n = 2097152 (8388608 bytes): oneshot and comm reduce straight into out; or omit "
           .. "out (the result in the window)")
  local _, ran = kernel.allreduce(big, { out = out })
  H.truthy(ran ~= "twoshot", "auto with out= past the scratch: " .. ran)
  c:barrier()
  H.eq(big:tensor():sum(), (me + 1) * (1 << 21), "auto (" .. ran .. "): the window untouched")
  H.eq(out:sum(), (k * (k + 1) // 2) * (1 << 21), "auto (" .. ran .. "): the sum")
  c:barrier()
  big:free()
end

-- out on some ranks only: two-shot cannot honour both, so the check refuses
if k > 1 then
  local m = c:window(64, "f32", opts)
  local out = me == 0 and tensor.new(64, "f32") or nil
  H.raises(function() kernel.allreduce(m, { algo = "twoshot", out = out }) end,
           "collective mismatch: kernel.allreduce #")
  H.raises(function() kernel.allreduce(m, { algo = "ring", out = out }) end, "offset 0 ring out=, [1")
  kernel.allreduce(m, { algo = "oneshot", out = out }) -- mixed is fine where nothing goes through scratch
  c:barrier()
  m:free()
end

-- the persistent all-reduce holds the LL area: the scratch is not free
do
  local p_w = c:window(64, "f32", opts)
  local p = kernel.persistent(p_w)
  H.raises(function() kernel.allreduce(p_w, { algo = "twoshot", out = tensor.new(64, "f32") }) end,
           "kernel.allreduce{algo='twoshot', out=} (it uses the window's LL area as scratch)")
  kernel.allreduce(p_w, { algo = "oneshot", out = tensor.new(64, "f32") })
  p:stop()
  c:barrier()
  p_w:free()
end

-- kernel.plan shows it: every move writes out or the scratch areas, never a
-- slice, and the scratch is cleared before the last barrier
local pw = c:window(64, "f32", opts)
for _, algo in ipairs { "twoshot", "ring", "oneshot" } do
  local plan = kernel.plan(pw, { algo = algo, out = true })
  local phases = {}
  for _, s in ipairs(plan.steps) do
    if s.kind == "move" then
      phases[#phases + 1] = s.phase
      for _, mv in ipairs(s.moves) do
        for _, d in ipairs(mv.dst) do
          H.truthy(d.peer == "out" or d.scratch, algo .. " " .. s.phase .. ": writes " .. tostring(d.peer))
        end
      end
    end
  end
  if algo ~= "oneshot" and (algo ~= "ring" or k > 1) then
    H.eq(phases[#phases], "clear-scratch", algo .. ": the last move clears the scratch")
    H.eq(plan.steps[#plan.steps].kind, "barrier", algo .. ": then a barrier")
  end
end
H.raises(function() kernel.plan(pw, { algo = "multicast", out = true }) end, "plan: algo 'multicast' takes no out")
pw:free()
