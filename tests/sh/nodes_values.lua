-- Values across nodes (tests/sh/nodes.sh runs it on simulated nodes of 2
-- ranks): the communicator's collectives, a window whose team is the node,
-- and every all-reduce algorithm: hier, comm and auto give the
-- communicator's result on every rank (odd sizes, offsets, the window's
-- end, dtypes, ops); the others are refused naming the team.
local H = require "harness"
local c = comm.world()
local k, me = c.size, c.rank
assert(gcsh.nodes > 1, "nodes_values.lua runs on several nodes (tests/sh/nodes.sh)")

-- the communicator's own collectives
local t = tensor.new(5, "i32"):fill(me + 1)
c:allreduce(t)
H.eq(t[4], k * (k + 1) // 2, "c:allreduce across nodes")

-- a window: the team is this node's ranks, the others are reached by network
local N = 37
local w = c:window(N, "i32")
local info = w:info()
H.eq(info.nodes, gcsh.nodes, "w:info().nodes")
H.eq(info.node, gcsh.node, "w:info().node")
H.eq(#info.lsa + #info.network, k, "lsa and network: every rank once")
for _, r in ipairs(info.lsa) do H.eq(gcsh.node_of(r), gcsh.node, "an lsa peer is on my node") end
for _, r in ipairs(info.network) do H.truthy(gcsh.node_of(r) ~= gcsh.node, "a network peer is elsewhere") end
H.truthy(tostring(w):find(string.format(", node %d of %d)", gcsh.node, gcsh.nodes), 1, true), tostring(w))

local function value(r, i) return (r + 1) * 3 + i % 7 end
local function want_of(op, i)
  local acc
  for r = 0, k - 1 do
    local v = value(r, i)
    if not acc then acc = v elseif op == "sum" then acc = acc + v else acc = math.max(acc, v) end
  end
  return acc
end
-- regions: odd sizes, offsets, the window's end
local REGIONS = { { 0, 1 }, { 0, 3 }, { 5, 7 }, { 0, N }, { N - 4, 4 }, { 11, N - 11 } }
local OPS = { i32 = { "sum", "max" }, u32 = { "sum" }, f32 = { "sum" } }
local RUNS = { hier = true, comm = true, auto = true }
for _, dt in ipairs({ "i32", "u32", "f32" }) do
  local wd = c:window(N, dt)
  for _, algo in ipairs(kernel.algos) do
    for ri, reg in ipairs(REGIONS) do
      for _, op in ipairs(RUNS[algo] and OPS[dt] or ri == 1 and { "sum" } or {}) do
        local off, n = reg[1], reg[2]
        local tag = string.format("%s %s %s offset %d n %d", dt, algo, op, off, n)
        local mine = wd:tensor()
        for i = 0, N - 1 do mine[i] = value(me, i) end
        c:barrier()
        local ok, res, ran = pcall(kernel.allreduce, wd, { algo = algo, op = op, offset = off, n = n })
        if RUNS[algo] then
          H.truthy(ok, tag .. ": " .. tostring(res))
          H.eq(ran, algo == "auto" and "hier" or algo, tag .. ": ran")
          for i = 0, n - 1 do
            if res[i] ~= want_of(op, off + i) then H.eq(res[i], want_of(op, off + i), tag .. ": element " .. i) end
          end
          -- outside the region, the window is as it was
          local whole = wd:tensor()
          for i = 0, N - 1 do
            if (i < off or i >= off + n) and whole[i] ~= value(me, i) then
              H.eq(whole[i], value(me, i), tag .. ": element " .. i .. " outside the region")
            end
          end
        else
          H.truthy(not ok and res:find(string.format("allreduce: algo '%s' runs over the window's team, "
                                                     .. "ranks %s", algo, info.lsa[1]), 1, true),
                   tag .. ": refused naming the team: " .. tostring(res))
        end
        c:barrier()
      end
    end
  end
  wd:free()
end

-- out= across nodes: auto takes the communicator's all-reduce; hier refuses
local out = tensor.new(N, "i32")
w:tensor():fill(me + 1)
c:barrier()
local res, ran = kernel.allreduce(w, { out = out })
H.eq(ran, "comm", "auto with out= across nodes")
H.eq(res[N - 1], k * (k + 1) // 2, "auto with out=: the communicator's sum")
H.raises(function() kernel.allreduce(w, { algo = "hier", out = out }) end,
         "allreduce: algo 'hier' leaves the result in the window")
-- the team's other collectives are refused, never one node's result
H.raises(function() kernel.reduce_scatter(w) end, "reduce_scatter: the window's team is ranks ")
H.raises(function() kernel.allgather(w) end, "allgather: the window's team is ranks ")

-- kernel.plan: the three phases, and what crosses the network
local p = kernel.plan(w, { algo = "hier", offset = 2, n = 9 })
H.eq(#p.phases, 3, "hier's phases")
H.eq(p.phases[1].name .. " " .. p.phases[2].name .. " " .. p.phases[3].name,
     "reduce-scatter all-reduce all-gather", "hier's phases, in order")
H.eq(tostring(p.phases[1].network) .. tostring(p.phases[2].network) .. tostring(p.phases[3].network),
     "falsetruefalse", "only the all-reduce crosses the network")
-- (every move, rank by rank: tests/lua/hier_plan.lua)
c:barrier()
w:free()
print("nodes_values ok")
