-- kernel.allreduce's "hier", "auto" and "comm" on the cuda backend, on one
-- node or several: scripts/gpu-check.sh runs it on one node (hier then
-- reduce-scatters and all-gathers in the node, and its all-reduce across
-- nodes is over one rank), scripts/gpu-nodes.sh on 2 simulated nodes of 2
-- GPUs (each node its own NCCL_HOSTID, so NCCL's all-reduce of a chunk
-- across nodes takes its network transport).  On every window kind that
-- works here: the communicator's result on every rank for odd sizes,
-- offsets, the window's end, dtypes and ops; the window outside the region
-- untouched; auto picks hier exactly when the window spans nodes; the
-- team algorithms are refused across nodes, naming the team; kernel.plan
-- marks the moves across nodes, the same plan on every rank.
local H = require "harness"

local c = comm.world()
local k, me = c.size, c.rank
local nodes = gcsh.nodes
if me == 0 then print(string.format("nodes_hier: %d ranks on %d node%s", k, nodes, nodes == 1 and "" or "s")) end

local function value(r, i) return (r + 1) * 3 + i % 7 end
local function want_of(op, i)
  local acc
  for r = 0, k - 1 do
    local v = value(r, i)
    if not acc then acc = v elseif op == "sum" then acc = acc + v else acc = math.max(acc, v) end
  end
  return acc
end

local N = 4099 -- odd, and more than one 16-byte line per chunk
local REGIONS = { { 0, 1 }, { 0, 7 }, { 5, 33 }, { 0, N }, { N - 5, 5 }, { 13, N - 13 } }
local OPS = { f32 = { "sum", "max" }, i32 = { "sum", "max" }, bf16 = { "sum" } }

-- The kinds that work here (tests/gpu/lib/common.lua's kinds() also says
-- which must: whether NCCL offers symmetric memory across NCCL hosts is
-- NCCL's to say, so a refusal here is printed, not failed).
local kinds = {}
for _, kind in ipairs({ "nccl", "vmm" }) do
  local ok, w = pcall(c.window, c, 1, "f32", { kind = kind })
  if ok then kinds[#kinds + 1] = kind; w:free()
  elseif me == 0 then print("nodes_hier: kind " .. kind .. " refused here: " .. tostring(w)) end
end
H.truthy(#kinds > 0, "some window kind works here")

for _, kind in ipairs(kinds) do
  for _, dt in ipairs({ "f32", "i32", "bf16" }) do
    local w = c:window(N, dt, { kind = kind })
    local spans = #w.team < k
    for _, algo in ipairs({ "hier", "auto", "comm" }) do
      for _, reg in ipairs(REGIONS) do
        for _, op in ipairs(OPS[dt]) do
          local off, n = reg[1], reg[2]
          local tag = string.format("%s %s %s %s offset %d n %d", kind, dt, algo, op, off, n)
          local mine = w:tensor()
          local start = tensor.new(N, dt)
          for i = 0, N - 1 do start[i] = value(me, i) end
          mine:copy(start)
          c:barrier()
          local res, ran = kernel.allreduce(w, { algo = algo, op = op, offset = off, n = n })
          if algo == "auto" and spans then H.eq(ran, "hier", tag .. ": auto across nodes") end
          if algo ~= "auto" then H.eq(ran, algo, tag .. ": ran") end
          local got = res:totable()
          for i = 0, n - 1 do
            local want = want_of(op, off + i)
            -- bf16 keeps 8 bits of mantissa: sums of small integers up to 256 are exact
            if got[i + 1] ~= want then H.eq(got[i + 1], want, tag .. ": element " .. i) end
          end
          local whole = w:tensor():totable()
          local before = start:totable()
          for i = 0, N - 1 do
            if (i < off or i >= off + n) and whole[i + 1] ~= before[i + 1] then
              H.eq(whole[i + 1], before[i + 1], tag .. ": element " .. i .. " outside the region")
            end
          end
          start:free()
          c:barrier()
        end
      end
    end
    if spans then
      for _, algo in ipairs({ "oneshot", "twoshot", "ring", "ll" }) do
        H.raises(function() kernel.allreduce(w, { algo = algo, n = 8 }) end,
                 string.format("allreduce: algo '%s' runs over the window's team, ranks ", algo),
                 kind .. " " .. dt .. ": " .. algo .. " across nodes is refused")
      end
    end
    -- the plan: the moves across nodes are the network step's, one per rank
    local p = kernel.plan(w, { algo = "hier" })
    local crossing = 0
    for _, s in ipairs(p.steps) do
      for _, m in ipairs(s.moves or {}) do
        if m.network then crossing = crossing + 1 end
        H.eq(m.network, s.phase == "all-reduce across nodes" and nodes > 1, kind .. ": a move's network flag")
      end
    end
    H.eq(crossing, nodes > 1 and k or 0, kind .. " " .. dt .. ": the moves that cross the network")
    H.eq(p.nodes, nodes, kind .. ": the plan's nodes")
    c:barrier()
    w:free()
  end
end
c:barrier()
print("nodes_hier: ok")
