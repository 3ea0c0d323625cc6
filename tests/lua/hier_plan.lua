-- kernel.plan(w, {algo="hier"}) and step.allreduce(w, {algo="hier"}): the
-- three phases (reduce-scatter in the node, all-reduce of each chunk across
-- nodes, all-gather in the node) and which moves cross the network, the
-- same plan on every rank.  Runs on one node (tests/run.sh, 1, 2 and 4
-- ranks: hier degenerates, its step across nodes has no moves and says
-- so) and on simulated nodes (tests/sh/nodes.sh, 2 x 2 and 3 x 2): what it
-- expects follows gcsh.nodes.
local H = require "harness"

local c = comm.world()
local k, me = c.size, c.rank
local N = 19
local w = c:window(N, "i32")
local team, nodes = #w.team, gcsh.nodes

-- every node's ranks in rank order (its team's order), nodes by number
local members = {}
for r = 0, k - 1 do
  local j = gcsh.node_of(r)
  members[j] = members[j] or {}
  table.insert(members[j], r)
end
local function member(r) -- r's index in its node's team
  for t, q in ipairs(members[gcsh.node_of(r)]) do if q == r then return t - 1 end end
end
local function chunk(n, offset, t) -- kplan.h's rule
  local base, extra = n // team, n % team
  return offset + t * base + math.min(t, extra), base + (t < extra and 1 or 0)
end

-- a table as text, keys sorted, to compare every rank's plan
local function serial(v)
  if type(v) ~= "table" then return tostring(v) end
  local keys = {}
  for key in pairs(v) do keys[#keys + 1] = key end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  local parts = {}
  for _, key in ipairs(keys) do parts[#parts + 1] = tostring(key) .. "=" .. serial(v[key]) end
  return "{" .. table.concat(parts, ",") .. "}"
end

local function peers(places)
  local out = {}
  for i, p in ipairs(places) do out[i] = p.peer end
  return table.concat(out, " ")
end

local NET_OVER = "member t of every node: the communicator's all-reduce"
local ONE_NODE_NOTE = "one node: no other node holds chunk t; nothing crosses the network"

local function check_plan(offset, n)
  local what = string.format("plan offset %d n %d", offset, n)
  local p = kernel.plan(w, { algo = "hier", offset = offset, n = n })
  H.eq(p.algo, "hier", what .. ": algo")
  H.eq(p.nodes, nodes, what .. ": nodes")
  H.eq(p.team_size, team, what .. ": team_size")
  for t = 0, team - 1 do
    local first, count = chunk(n, offset, t)
    H.eq(p.chunks[t + 1].first, first, what .. ": chunk " .. t .. " first")
    H.eq(p.chunks[t + 1].count, count, what .. ": chunk " .. t .. " count")
  end
  local names, nets = {}, {}
  for i, ph in ipairs(p.phases) do names[i], nets[i] = ph.name, tostring(ph.network) end
  H.eq(table.concat(names, " | "), "reduce-scatter | all-reduce | all-gather", what .. ": phases")
  H.eq(table.concat(nets, " "), "false " .. tostring(nodes > 1) .. " false", what .. ": network phases")
  H.eq(p.phases[2].over, nodes > 1 and NET_OVER or "one node: nothing crosses the network",
       what .. ": the phase across nodes")
  -- the move steps, in order, and every move: network exactly when a place
  -- is on another node
  local phases = {}
  for _, s in ipairs(p.steps) do
    if s.kind == "barrier" then
      H.eq(s.over, "node", what .. ": a barrier is each node's")
    else
      phases[#phases + 1] = s.phase
      for _, m in ipairs(s.moves) do
        local crosses = false
        for _, list in ipairs({ m.src, m.dst }) do
          for _, pl in ipairs(list) do crosses = crosses or gcsh.node_of(pl.peer) ~= gcsh.node_of(m.rank) end
        end
        H.eq(m.network, crosses, what .. ": " .. s.phase .. ": r" .. m.rank .. "'s network flag")
        H.eq(m.network, s.phase == "all-reduce across nodes", what .. ": only the step across nodes crosses")
      end
    end
  end
  H.eq(table.concat(phases, " | "), "reduce-scatter in the node | all-reduce across nodes"
       .. (team > 1 and " | all-gather in the node" or ""), what .. ": move steps")
  -- each move step by rank
  local by_phase = {}
  for _, s in ipairs(p.steps) do
    if s.kind == "move" then
      by_phase[s.phase] = { step = s, of = {} }
      for _, m in ipairs(s.moves) do
        H.eq(by_phase[s.phase].of[m.rank], nil, what .. ": one move per rank")
        by_phase[s.phase].of[m.rank] = m
      end
    end
  end
  local net = by_phase["all-reduce across nodes"]
  if nodes == 1 then
    H.eq(#net.step.moves, 0, what .. ": one node: nothing moves across nodes")
    H.eq(net.step.note, ONE_NODE_NOTE, what .. ": one node: the note")
  end
  for r = 0, k - 1 do
    local t = member(r)
    local first, count = chunk(n, offset, t)
    local node = members[gcsh.node_of(r)]
    local rs = by_phase["reduce-scatter in the node"].of[r]
    if count > 0 then
      H.eq(peers(rs.src), table.concat(node, " "), what .. ": r" .. r .. " reduces its node's chunk " .. t)
      H.eq(peers(rs.dst) .. " " .. rs.dst[1].first .. " " .. rs.count, r .. " " .. first .. " " .. count,
           what .. ": r" .. r .. " into its own chunk")
    end
    if nodes > 1 and count > 0 then
      local m = net.of[r]
      local across = {}
      for j = 0, nodes - 1 do across[#across + 1] = members[j][t + 1] end
      H.eq(m.via, "network", what .. ": r" .. r .. " across nodes: via")
      H.eq(peers(m.src), table.concat(across, " "), what .. ": r" .. r .. " reduces chunk " .. t .. " of every node")
      for _, pl in ipairs(m.src) do H.eq(pl.first, first, what .. ": r" .. r .. " a source's first") end
      H.eq(peers(m.dst) .. " " .. m.dst[1].first .. " " .. m.count, r .. " " .. first .. " " .. count,
           what .. ": r" .. r .. " across nodes, into its own chunk")
    elseif nodes > 1 then
      H.eq(net.of[r], nil, what .. ": r" .. r .. " has an empty chunk: no move across nodes")
    end
    if team > 1 and count > 0 then
      local ag = by_phase["all-gather in the node"].of[r]
      local others = {}
      for _, q in ipairs(node) do if q ~= r then others[#others + 1] = q end end
      H.eq(peers(ag.src) .. " > " .. peers(ag.dst), r .. " > " .. table.concat(others, " "),
           what .. ": r" .. r .. " stores its chunk into its node's others")
    end
  end
  -- the same plan on every rank
  local all = c:agree(serial(p))
  for r = 1, k do H.eq(all[r], all[1], what .. ": rank " .. (r - 1) .. "'s plan is rank 0's") end
end

check_plan(0, N)
check_plan(3, 13)
check_plan(N - 2, 2) -- fewer elements than a node's ranks at 4 ranks on one node

-- ---- the stepper follows it: cells after each step, from the data --------------

local function ranks_text(mask) -- the diagram's cell text for a set of ranks
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

local ALL = (1 << k) - 1
local function node_mask(r)
  local m = 0
  for _, q in ipairs(members[gcsh.node_of(r)]) do m = m | 1 << q end
  return m
end
-- the cell of rank r's chunk t after step s (1 reduce-scatter, 2 across
-- nodes, 3 all-gather)
local function want_cell(r, t, s)
  if s >= 3 then return ALL end
  if t ~= member(r) then return 1 << r end
  if s == 2 and nodes > 1 then return ALL end
  return node_mask(r)
end

local function check_cells(st, s, what)
  for r = 0, k - 1 do
    for t = 0, (team > 1 and team or 1) - 1 do
      local cell = st.cells["r" .. r][t + 1]:gsub("[*!]$", "")
      H.eq(cell, ranks_text(want_cell(r, team > 1 and t or member(r), s)),
           string.format("%s: step %d: r%d's chunk %d", what, s, r, t))
    end
  end
end

local OFFSET, NS = 3, 13
w:tensor():fill(1 << me)
local st = step.allreduce(w, { algo = "hier", offset = OFFSET, n = NS })
local what = "stepper"
H.eq(st.steps, team > 1 and 3 or 2, what .. ": a step per phase")
for s = 1, st.steps do
  st:next()
  check_cells(st, s, what)
  for line in st.text:gmatch("[^\n]+") do
    H.truthy(#line <= 76, what .. ": a line fits 80 columns with rank 0's tag: " .. line)
  end
  local text = st.text:gsub("\n +", " ")
  if s == 2 then
    H.truthy(text:find("step 2 of " .. st.steps .. " (all-reduce across nodes)", 1, true), what .. ": step 2's title")
    if nodes > 1 then
      H.truthy(text:find(" (net) ", 1, true), what .. ": the moves across nodes are marked: " .. text)
      H.truthy(text:find("(net): crosses the network", 1, true), what .. ": and the mark explained")
    else
      H.truthy(text:find(ONE_NODE_NOTE, 1, true), what .. ": one node: the note: " .. text)
      H.truthy(not text:find("(net)", 1, true), what .. ": one node: no move marked network")
    end
  elseif s == 1 then
    H.truthy(not text:find("(net)", 1, true), what .. ": the reduce-scatter stays in the node")
  end
end
H.eq(st:run({ quiet = true }), true, what .. ": right at the end")
st:free()

-- a late rank only delays it: the barriers and the all-reduce wait for it
w:tensor():fill(1 << me)
st = step.allreduce(w, { algo = "hier", delay = { rank = k - 1, ms = 20, step = 2 } })
H.eq(st:run({ quiet = true }), true, "a late rank at the step across nodes")
H.eq(#st.wrong, 0, "a late rank: no wrong cell")
st:free()
w:free()
print("hier_plan: ok")
