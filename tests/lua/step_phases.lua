-- Every phase of every algorithm is its own step, with its own label, and
-- the state after each step is what a reference simulation of the
-- algorithm gives: the textbook algorithms written out here on sets of
-- ranks (bit masks), apart from kernel.plan and the steppers.  Two-shot:
-- reduce-scatter then all-gather; multicast: ld_reduce (into the rank's
-- scratch row) then store; ll: store with flags (into every rank's ll
-- area), then the reduce; one-shot: reduce into tmp, then store; ring:
-- N-1 reduce-scatter then N-1 all-gather steps; tree broadcast: one step
-- per doubling; hier (one node here): reduce-scatter, the step across
-- nodes, all-gather.  Rank r starts with 2^r, so every cell is a set of ranks.
local H = require("harness")

local c = comm.world()
local k, me = c.size, c.rank
local N = 2 * k + 1 -- one chunk per rank, uneven
local ROOT = 0

-- ---- the diagram's cell text for a set of ranks (its own formatting) ----------

local function ranks(mask)
  if mask == 0 then return "-" end
  local parts, r = {}, 0
  while r < k do
    if mask >> r & 1 == 1 then
      local s = r
      while r + 1 < k and mask >> (r + 1) & 1 == 1 do r = r + 1 end
      parts[#parts + 1] = s == r and tostring(s) or (s .. (r == s + 1 and "," or "-") .. r)
    end
    r = r + 1
  end
  return table.concat(parts, ",")
end

-- ---- the simulation: state[row label][cell] = mask (ll cells: {mask, flag}) ----

local function copy(state)
  local out = {}
  for label, row in pairs(state) do
    out[label] = {}
    for i, v in pairs(row) do out[label][i] = type(v) == "table" and { v[1], v[2] } or v end
  end
  return out
end

-- rows "r0".."r(k-1)" with `cells` cells each holding 2^r; tmp and ll rows
-- when asked
local function start(cells, opts)
  local s = {}
  for r = 0, k - 1 do
    s["r" .. r] = {}
    for i = 1, cells do s["r" .. r][i] = 1 << r end
    if opts.tmp then
      s["r" .. r .. " tmp"] = {}
      for i = 1, opts.tmp do s["r" .. r .. " tmp"][i] = 0 end
    end
    if opts.ll then
      s["r" .. r .. " ll"] = {}
      for i = 1, k do s["r" .. r .. " ll"][i] = { 0, 0 } end
    end
  end
  return s
end

local function all_of(s, chunk) -- the OR of every rank's chunk
  local m = 0
  for q = 0, k - 1 do m = m | s["r" .. q][chunk] end
  return m
end

local function left(r) return (r - 1) % k end

-- Each simulation: a list of {label=, state=} after each step.
local SIM = {}

local function ring_steps(steps, s, phase, count)
  for step = 1, count do
    local prev = copy(s)
    for r = 0, k - 1 do
      if phase == "reduce-scatter" then
        local ch = (r - step - 1) % k + 1
        s["r" .. r][ch] = prev["r" .. left(r)][ch] | prev["r" .. r][ch]
      else
        local ch = (r - step) % k + 1
        s["r" .. r][ch] = prev["r" .. left(r)][ch]
      end
    end
    steps[#steps + 1] = { label = phase, state = copy(s) }
  end
end

SIM["allreduce ring"] = function()
  local s, steps = start(k, {}), {}
  ring_steps(steps, s, "reduce-scatter", k - 1)
  ring_steps(steps, s, "all-gather", k - 1)
  return steps, start(k, {})
end

SIM["allreduce oneshot"] = function()
  local s = start(1, { tmp = 1 })
  local steps = {}
  for r = 0, k - 1 do s["r" .. r .. " tmp"][1] = all_of(s, 1) end
  steps[1] = { label = "reduce", state = copy(s) }
  for r = 0, k - 1 do s["r" .. r][1] = s["r" .. r .. " tmp"][1] end
  steps[2] = { label = "store", state = copy(s) }
  return steps, start(1, { tmp = 1 })
end

SIM["allreduce twoshot"] = function()
  local s, steps = start(k, {}), {}
  local prev = copy(s)
  for r = 0, k - 1 do s["r" .. r][r + 1] = all_of(prev, r + 1) end
  steps[1] = { label = "reduce-scatter", state = copy(s) }
  if k > 1 then
    for r = 0, k - 1 do
      for q = 0, k - 1 do s["r" .. q][r + 1] = s["r" .. r][r + 1] end
    end
    steps[2] = { label = "all-gather", state = copy(s) }
  end
  return steps, start(k, {})
end

-- hier on one node (these tests' ranks): two-shot's reduce-scatter and
-- all-gather in the node, and between them the all-reduce across nodes,
-- which has no other node to reduce with and changes nothing
SIM["allreduce hier"] = function()
  local two, at_start = SIM["allreduce twoshot"]()
  local steps = { { label = "reduce-scatter in the node", state = two[1].state },
                  { label = "all-reduce across nodes", state = two[1].state } }
  if two[2] then steps[3] = { label = "all-gather in the node", state = two[2].state } end
  return steps, at_start
end

SIM["allreduce multicast"] = function()
  local s, steps = start(k, { tmp = k }), {}
  for r = 0, k - 1 do s["r" .. r .. " tmp"][r + 1] = all_of(s, r + 1) end
  steps[1] = { label = "ld_reduce", state = copy(s) }
  for r = 0, k - 1 do
    for q = 0, k - 1 do s["r" .. q][r + 1] = s["r" .. r .. " tmp"][r + 1] end
  end
  steps[2] = { label = "store", state = copy(s) }
  return steps, start(k, { tmp = k })
end

SIM["allreduce ll"] = function()
  local s, steps = start(1, { ll = true }), {}
  for r = 0, k - 1 do
    for p = 0, k - 1 do s["r" .. p .. " ll"][r + 1] = { s["r" .. r][1], 1 } end
  end
  steps[1] = { label = "store with flags", state = copy(s) }
  for r = 0, k - 1 do
    local m = 0
    for slot = 1, k do m = m | s["r" .. r .. " ll"][slot][1] end
    s["r" .. r][1] = m
  end
  steps[2] = { label = "reduce as flags arrive", state = copy(s) }
  return steps, start(1, { ll = true })
end

SIM["reduce_scatter ring"] = function()
  local s, steps = start(k, {}), {}
  ring_steps(steps, s, "reduce-scatter", k - 1)
  return steps, start(k, {})
end

SIM["reduce_scatter direct"] = function()
  local s, steps = start(k, {}), {}
  local prev = copy(s)
  for r = 0, k - 1 do s["r" .. r][r + 1] = all_of(prev, r + 1) end
  steps[1] = { label = "reduce-scatter", state = copy(s) }
  return steps, start(k, {})
end

SIM["allgather ring"] = function()
  local s, steps = start(k, {}), {}
  ring_steps(steps, s, "all-gather", k - 1)
  return steps, start(k, {})
end

SIM["allgather direct"] = function()
  local s, steps = start(k, {}), {}
  if k > 1 then
    for r = 0, k - 1 do
      for q = 0, k - 1 do s["r" .. q][r + 1] = s["r" .. r][r + 1] end
    end
    steps[1] = { label = "all-gather", state = copy(s) }
  end
  return steps, start(k, {})
end

SIM["broadcast tree"] = function()
  local s, steps = start(1, {}), {}
  local have = 1
  while have < k do
    local prev = copy(s)
    for v = have, math.min(2 * have, k) - 1 do s["r" .. v][1] = prev["r" .. (v - have)][1] end
    have = math.min(2 * have, k)
    steps[#steps + 1] = { label = have .. " ranks hold it", state = copy(s) }
  end
  return steps, start(1, {})
end

SIM["broadcast ring"] = function()
  local s, steps = start(1, {}), {}
  for step = 1, k - 1 do
    s["r" .. step][1] = s["r" .. (step - 1)][1]
    steps[#steps + 1] = { label = "broadcast", state = copy(s) }
  end
  return steps, start(1, {})
end

SIM["broadcast direct"] = function()
  local s, steps = start(1, {}), {}
  if k > 1 then
    for r = 1, k - 1 do s["r" .. r][1] = s["r" .. ROOT][1] end
    steps[1] = { label = "broadcast", state = copy(s) }
  end
  return steps, start(1, {})
end

-- ---- comparing -------------------------------------------------------------------

local function cell_text(v)
  if type(v) == "table" then return ranks(v[1]) .. " f" .. v[2] end
  return ranks(v)
end

local function same_state(what, st, want)
  for label, row in pairs(want) do
    H.truthy(st.cells[label], what .. ": the diagram has row " .. label)
    for i, v in ipairs(row) do
      H.eq(st.cells[label][i]:gsub("[*!]$", ""), cell_text(v),
           string.format("%s: %s cell %d", what, label, i))
    end
  end
end

local w = c:window(N, "i32")
for _, coll in ipairs({ "allreduce", "reduce_scatter", "allgather", "broadcast" }) do
  for _, algo in ipairs(step.algos[coll]) do
    local name = coll .. " " .. algo
    local sim = SIM[name]
    H.truthy(sim, name .. ": a simulation of it here")
    local want, at_start = sim()
    w:tensor():fill(1 << me)
    local st = coll == "broadcast" and step.broadcast(w, ROOT, { algo = algo }) or step[coll](w, { algo = algo })
    local what = string.format("%s at %d ranks", name, k)
    H.eq(st.steps, #want, what .. ": a step per phase")
    same_state(what .. " at the start", st, at_start)
    for s, phase in ipairs(want) do
      st:next()
      local head = string.format(": step %d of %d (%s)", s, #want, phase.label)
      local text = st.text:gsub("\n +", " ") -- a long title wraps
      H.truthy(text:find(head, 1, true), what .. ": step " .. s .. " is labelled '" .. head .. "'")
      same_state(string.format("%s step %d", what, s), st, phase.state)
    end
    H.eq(st:run({ quiet = true }), true, what .. ": right at the end")
    st:free()
  end
end
w:free()
print("step_phases: ok")
