-- Steppers (lua/gcsh/step.lua) run every collective and algorithm to the
-- end on every dtype, on regions whose length the rank count does not
-- divide, and leave what the communicator's own collective computes from the
-- same data (computed here, apart from the stepper).  Step counts follow the
-- algorithms; :next, :reset and .step agree.  tests/sh/step.sh adds 3 ranks.
local H = require("harness")

local c = comm.world()
local k, me = c.size, c.rank
local WINDOW_N = 13

local REDUCING_DTYPES = { "f32", "f16", "bf16", "i32", "u32" }
local ALL_DTYPES = { "f64", "f32", "f16", "bf16", "i64", "i32", "u32", "u8", "i8" }

local function ceil_log2(v)
  local s = 0
  while (1 << s) < v do s = s + 1 end
  return s
end

-- The number of steps each algorithm takes: a step per phase (a ring step,
-- a tree level; one-shot's reduce and store, two-shot's reduce-scatter and
-- all-gather, multicast's ld_reduce and store, ll's store with flags and
-- reduce).  One rank has no all-gather to do in two-shot.
local STEPS = {
  allreduce = { ring = 2 * (k - 1), oneshot = 2, twoshot = k > 1 and 2 or 1, multicast = 2, ll = 2,
                hier = k > 1 and 3 or 2 },
  reduce_scatter = { ring = k - 1, direct = 1 },
  allgather = { ring = k - 1, direct = k > 1 and 1 or 0 },
  broadcast = { tree = ceil_log2(k), ring = k - 1, direct = k > 1 and 1 or 0 },
}

-- The regions: all of the window, an inner part at an offset, one element
-- (fewer than the ranks), and a length the rank count divides.
local REGIONS = {
  { offset = 0, n = WINDOW_N }, { offset = 3, n = 7 }, { offset = 5, n = 1 }, { offset = 1, n = 3 * k },
}

-- Small integers, different on every rank and element: sums and products
-- of a few stay exact in every dtype (signed ones go negative).
local function fill(t, dtype)
  local signed = dtype ~= "u32" and dtype ~= "u8"
  for i = 0, #t - 1 do
    local v = (me * 7 + i * 3) % 5 + 1
    if signed and (i + me) % 3 == 0 then v = -v end
    t[i] = v
  end
end

-- The reference, from the communicator's own collective on a copy of the
-- start data.  Returns the first index (in the region) and tensor to compare.
local function reference(coll, start, op, root, region)
  local dt, n = start.dtype, #start
  local q, rem = n // k, n % k
  local first = me * q + math.min(me, rem)
  local count = q + (me < rem and 1 or 0)
  if coll == "allreduce" then return 0, c:allreduce(start, op) end
  if coll == "broadcast" then return 0, c:broadcast(start, root) end
  if coll == "reduce_scatter" then
    c:allreduce(start, op)
    return first, count > 0 and start:view(first, count) or nil
  end
  -- allgather: rank r's chunk r, in every rank's region
  local out = tensor.new(n, dt):fill(0)
  if count > 0 then out:view(first, count):copy(start:view(first, count)) end
  c:allreduce(out, "sum")
  return 0, out
end

local function check_result(what, coll, got, want)
  if not want then return end
  if coll == "reduce_scatter" or coll == "allreduce" then
    H.truthy(got:allclose(want, 2e-2, 2e-2), what .. ": result close to the collective's "
             .. tostring(got) .. " vs " .. tostring(want))
  else
    H.truthy(got:equal(want), what .. ": result equals the collective's " .. tostring(got)
             .. " vs " .. tostring(want))
  end
end

local function new_stepper(coll, w, o)
  local opts = { algo = o.algo, n = o.n, offset = o.offset, op = o.op }
  if coll == "broadcast" then return step.broadcast(w, o.root, opts) end
  return step[coll](w, opts)
end

local function one_case(coll, algo, w, region, op)
  local what = string.format("%s %s %s op %s region %d+%d at %d ranks", coll, algo, w.dtype,
                             tostring(op), region.offset, region.n, k)
  local view = w:tensor():view(region.offset, region.n)
  fill(w:tensor(), w.dtype)
  local start = tensor.new(region.n, w.dtype):copy(view)
  local root = (k - 1) // 2
  local st = new_stepper(coll, w, { algo = algo, op = op, n = region.n, offset = region.offset, root = root })
  H.eq(st.steps, STEPS[coll][algo], what .. ": steps")
  H.eq(st.algo, algo, what .. ": algo")
  H.eq(st.step, 0, what .. ": step at the start")
  H.eq(st:run({ quiet = true }), true, what .. ": run")
  H.eq(st.step, st.steps, what .. ": step at the end")
  local first, want = reference(coll, tensor.new(region.n, w.dtype):copy(start), op, root, view)
  check_result(what, coll, want and view:view(first, #want), want)
  -- reset: the start data and step 0 again; one step, then two at once
  st:reset()
  H.eq(st.step, 0, what .. ": step after reset")
  H.truthy(view:equal(start), what .. ": data after reset")
  if st.steps >= 1 then
    st:next()
    H.eq(st.step, 1, what .. ": step after next()")
  end
  if st.steps >= 3 then
    st:next(2)
    H.eq(st.step, 3, what .. ": step after next(2)")
  end
  if st.steps >= 4 then -- quiet: nothing printed, st.text holds the step all the same
    local said, real_print = {}, print
    print = function(s) said[#said + 1] = s end -- luacheck: ignore
    local ok, err = pcall(st.next, st, 1, { quiet = true })
    print = real_print -- luacheck: ignore
    H.truthy(ok, what .. ": next(1, {quiet=true}): " .. tostring(err))
    H.eq(#said, 0, what .. ": next(1, {quiet=true}) prints nothing")
    H.eq(st.step, 4, what .. ": step after a quiet next")
    H.truthy(st.text:find("step 4 of " .. st.steps, 1, true), what .. ": st.text has the quiet step")
  end
  H.eq(st:run({ quiet = true }), true, what .. ": run after reset")
  check_result(what .. " (second run)", coll, want and view:view(first, #want), want)
  st:free()
end

local OPS = { "sum", "prod", "min", "max" }

for _, dtype in ipairs(ALL_DTYPES) do
  local w = c:window(WINDOW_N, dtype)
  -- the emulation's arithmetic at every dtype, op and region: lax (NVLS's
  -- rules, which it keeps by default: mcast_emulated.lua, step_errors.lua)
  w:multicast { lax = true }
  local reducing = false
  for _, d in ipairs(REDUCING_DTYPES) do reducing = reducing or d == dtype end
  for _, region in ipairs(REGIONS) do
    if region.offset + region.n <= WINDOW_N then
      for _, coll in ipairs({ "allreduce", "reduce_scatter", "allgather", "broadcast" }) do
        local reduces = coll == "allreduce" or coll == "reduce_scatter"
        if reducing or not reduces then
          for _, algo in ipairs(step.algos[coll]) do
            local ops = { false } -- no op: the collective only copies
            if reduces then ops = (dtype == "i32" and region.offset == 0) and OPS or { "sum" } end
            for _, op in ipairs(ops) do one_case(coll, algo, w, region, op or nil) end
          end
        end
      end
    end
  end
  w:free()
end

print("step_collectives: ok")
