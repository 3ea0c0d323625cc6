-- kernel.plan is what the backends move: every collective and algorithm is
-- run on random f32 data (so the order of every reduction shows in the
-- bits), and each rank's slice and out are compared, bit for bit, with a
-- simulation of kernel.plan's moves over all ranks' data, in f32 arithmetic.
-- Elements outside the region must stay untouched.  Also: the plan's shape
-- (steps, chunks) and its errors.
--
-- Run by tests/run.sh on the host backend at 1, 2 and 4 ranks, and by the
-- GPU tests with KERNEL_TEST_KIND set to the window kind.
local H = require "harness"

local c = comm.world()
local kind = rawget(_G, "KERNEL_TEST_KIND")
local opts = kind and { kind = kind } or nil
local me, k = c.rank, c.size

-- f32 arithmetic in Lua: a double sum or product of two f32 values rounded
-- once to f32 is the f32 result.
local function f32(x) return (string.unpack("<f", string.pack("<f", x))) end
local COMBINE = {
  sum = function(a, b) return f32(a + b) end,
  prod = function(a, b) return f32(a * b) end,
  max = function(a, b) return b > a and b or a end,
}

-- ---- the simulation -----------------------------------------------------------

-- state: slices[r][i] (absolute slice index i), out[r][i], tmp[r][i] and
-- scratch[r][i] (region index)
local function place_ref(state, r, pl)
  if pl.peer == "out" then return state.out[r], pl.first end
  if pl.peer == "tmp" then return state.tmp[r], pl.first end
  if pl.scratch then return state.scratch[pl.peer], pl.first end
  return state.slices[pl.peer], pl.first
end

local function simulate(plans, state, op)
  local nsteps = #plans[0].steps
  for r = 1, k - 1 do H.eq(#plans[r].steps, nsteps, "the same steps on every rank") end
  for s = 1, nsteps do
    -- every rank's reads first, then its writes: a step's moves never read
    -- what another move of the same step writes (the plan's promise)
    local pending = {}
    for r = 0, k - 1 do
      local step = plans[r].steps[s]
      for _, mv in ipairs(step.moves or {}) do
        if mv.rank == r then
          local vals = {}
          for i = 0, mv.count - 1 do
            if #mv.src == 0 then vals[i] = 0 goto next end -- op "zero"
            local t, f = place_ref(state, r, mv.src[1])
            local acc = t[f + i]
            for q = 2, #mv.src do
              local u, g = place_ref(state, r, mv.src[q])
              acc = COMBINE[op](acc, u[g + i])
            end
            vals[i] = acc
            ::next::
          end
          pending[#pending + 1] = { r = r, mv = mv, vals = vals }
        end
      end
    end
    for _, p in ipairs(pending) do
      for _, d in ipairs(p.mv.dst) do
        local t, f = place_ref(state, p.r, d)
        for i = 0, p.mv.count - 1 do t[f + i] = p.vals[i] end
      end
    end
  end
end

-- ---- one case -------------------------------------------------------------------

local SLICE = 64
local w = c:window(SLICE, "f32", opts)
local function data(r) return tensor.new(SLICE, "f32"):rand(1000 + r) end
local all = {}
for r = 0, k - 1 do all[r] = data(r):totable() end

local function has_out_of(r, variant) return variant == "mixed" and r % 2 == 0 or variant == "all" end

local RUN = {
  allreduce = function(o) return kernel.allreduce(w, o) end,
  reduce_scatter = function(o) return kernel.reduce_scatter(w, o) end,
  allgather = function(o) o.op = nil; return kernel.allgather(w, o) end,
  broadcast = function(o, root) o.op = nil; return kernel.broadcast(root, w, o) end,
  reduce = function(o, root) return kernel.reduce_to(root, w, o) end,
}

-- out= on the all-reduce is out of place (tests/lua/kernel_out.lua): multicast
-- refuses it, and two-shot and ring, which go through the scratch areas,
-- need it on every member (a mixed call is refused by the check)
local function refused(coll, algo, variant)
  if coll ~= "allreduce" or variant == "none" then return false end
  if algo == "multicast" then return true end
  local mixed = variant == "mixed" and k > 1
  return mixed and (algo == "twoshot" or algo == "ring")
end

local function run_case(coll, algo, n, offset, op, root, variant)
  if refused(coll, algo, variant) then return end
  local tag = string.format("%s %s n=%d offset=%d %s root=%d out=%s", coll, algo, n, offset, op, root, variant)
  -- the model: every slice as the data, out and tmp poisoned
  local state = { slices = {}, out = {}, tmp = {}, scratch = {} }
  for r = 0, k - 1 do
    state.slices[r] = {}
    for i = 0, SLICE - 1 do state.slices[r][i] = all[r][i + 1] end
    state.out[r], state.tmp[r], state.scratch[r] = {}, {}, {}
    for i = 0, n - 1 do state.out[r][i] = -7.0 end
  end
  local plans = {}
  for r = 0, k - 1 do
    plans[r] = kernel.plan(w, { coll = coll, algo = algo, n = n, offset = offset, root = root,
                                out = has_out_of(r, variant) })
  end
  simulate(plans, state, op)

  -- the real thing
  w:tensor():copy(data(me))
  local out = has_out_of(me, variant) and tensor.new(n, "f32"):fill(-7) or nil
  local o = { algo = algo, n = n, offset = offset, op = op, out = out }
  RUN[coll](o, root)
  c:barrier()
  local got = w:tensor():totable()
  for i = 0, SLICE - 1 do
    if got[i + 1] ~= state.slices[me][i] then
      H.eq(got[i + 1], state.slices[me][i], tag .. ": my slice, element " .. i)
    end
  end
  if out then
    local g = out:totable()
    local count = coll == "reduce_scatter" and plans[me].chunks[me + 1].count or n
    for i = 0, count - 1 do
      if g[i + 1] ~= state.out[me][i] then H.eq(g[i + 1], state.out[me][i], tag .. ": out, element " .. i) end
    end
  end
  c:barrier()
end

-- a list, not a map: every rank must run the collectives in the same order
local ALGOS = {
  { "allreduce", { "oneshot", "twoshot", "ring", "multicast" } },
  { "reduce_scatter", { "direct", "ring" } },
  { "allgather", { "direct", "ring" } },
  { "broadcast", { "direct", "tree", "ring" } },
  { "reduce", { "direct" } },
}
local LENGTHS = { 1, 2, 3, k, k + 1, 2 * k + 3, 37, 64 - 5 }
for _, entry in ipairs(ALGOS) do
  local coll, algos = entry[1], entry[2]
  for _, algo in ipairs(algos) do
    for li, n in ipairs(LENGTHS) do
      local offset = li % 3 == 0 and 5 or (li % 3 == 1 and 0 or 1)
      if offset + n > SLICE then offset = 0 end
      local op = ({ "sum", "prod", "max" })[li % 3 + 1]
      local root = (li * 7) % k
      local variant = ({ "none", "mixed", "all" })[li % 3 + 1]
      run_case(coll, algo, n, offset, op, root, variant)
    end
  end
end

-- ---- the plan's shape -----------------------------------------------------------

-- move steps where somebody moves
local function moves(p)
  local m = 0
  for _, s in ipairs(p.steps) do if s.kind == "move" and #s.moves > 0 then m = m + 1 end end
  return m
end
local ring = kernel.plan(w, { algo = "ring" })
H.eq(moves(ring), 2 * (k - 1), "ring all-reduce: 2(k-1) move steps")
H.eq(ring.steps[1].kind, "barrier", "a plan starts with a barrier")
H.eq(ring.coll .. " " .. ring.algo .. " " .. ring.dtype .. " " .. ring.n, "allreduce ring f32 " .. SLICE, "plan fields")
H.eq(#ring.team, k, "team")
local levels = 0
while (1 << levels) < k do levels = levels + 1 end
H.eq(moves(kernel.plan(w, { coll = "broadcast", algo = "tree" })), levels, "tree: ceil(log2 k) levels")
H.eq(moves(kernel.plan(w, { coll = "broadcast", algo = "tree", out = true })), levels + 1, "tree with out: one copy more")
H.eq(moves(kernel.plan(w, { coll = "reduce_scatter", algo = "ring" })), k - 1, "ring reduce-scatter: k-1 steps")

-- balanced chunks: the first n % k members get one more
local p = kernel.plan(w, { coll = "reduce_scatter", n = 2 * k + 1, offset = 3 })
local at = 3
for r = 0, k - 1 do
  local want = 2 + (r < 1 and 1 or 0)
  H.eq(p.chunks[r + 1].first, at, "chunk " .. r .. " first")
  H.eq(p.chunks[r + 1].count, want, "chunk " .. r .. " count")
  at = at + want
end

-- errors
H.raises(function() kernel.plan(w, { coll = "gather" }) end,
         "plan: unknown coll 'gather' (valid: allreduce reduce_scatter allgather broadcast reduce)", "unknown coll")
H.raises(function() kernel.plan(w, { coll = "allgather", algo = "tree" }) end,
         "plan: unknown algo 'tree' (valid: direct ring)", "algo of another coll")
H.raises(function() kernel.plan(w, { n = SLICE + 1 }) end, "n must be 1.." .. SLICE, "n past the window")
H.raises(function() kernel.plan(w, { root = k }) end, "root " .. k .. " is not in the window's team", "root")
H.raises(function() kernel.plan(w, { ranks = 2 }) end, "unknown option 'ranks'", "unknown option")
H.raises(function() kernel.plan(w, { algo = "ll" }) end, "algo 'll' has no plan of moves and barriers", "ll has no plan")
H.raises(function() kernel.plan(tensor.new(4)) end, "window expected", "not a window")

-- printed, a plan is a table of moves, a line per member's move, that fits
-- 80 columns under a "[0-3] " prefix; its fields stay a plain table's
for _, algo in ipairs({ "oneshot", "twoshot", "ring" }) do
  local p = kernel.plan(w, { algo = algo, out = algo ~= "oneshot" })
  local text = tostring(p)
  local lines = {}
  for line in text:gmatch("[^\n]+") do
    lines[#lines + 1] = line
    H.truthy(#line <= 74, algo .. ": a line fits 80 columns at 4 ranks: " .. line)
  end
  H.eq(lines[1], string.format("allreduce %s: %d f32 from element 0, team %s, chunks of %d", algo,
    SLICE, k == 1 and "0" or k == 2 and "0,1" or "0-" .. (k - 1), SLICE // k), algo .. ": title")
  local moves = 0
  for _, st in ipairs(p.steps) do moves = moves + (st.moves and math.max(#st.moves, 1) or 1) end
  H.eq(#lines, 2 + moves + 2, algo .. ": a line per barrier and per move")
  H.eq(p.steps[1].kind, "barrier", algo .. ": still a table")
end
local p2 = kernel.plan(w, { algo = "twoshot" })
local team = k == 1 and "0" or k == 2 and "0,1" or "0-" .. (k - 1)
local row = string.format("\n2  reduce%%-scatter +0  %s +%d  w%%[%s%%]@0 +w%%[%s%%]@0\n",
  k == 1 and "copy" or "reduce", SLICE // k, team:gsub("%-", "%%-"), (team:gsub("%-", "%%-")))
H.truthy(tostring(p2):find(row), "twoshot: member 0 reduces chunk 0 of every slice: " .. tostring(p2))
H.truthy(tostring(p2):find("\n4  copy%-out +%-  none\n"), "twoshot: no copy-out without out")
w:free()
