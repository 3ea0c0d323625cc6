-- A kernel collective runs over the window's team.  Where that team is the
-- whole communicator it runs; where it is one node of several
-- (tests/sh/window.sh runs this under GCSH_RANKS_PER_NODE=2 at 4 ranks) it
-- is refused on every rank, naming the team and the communicator's call,
-- for every algorithm that runs over the team: its result would be the
-- node's, labelled as the communicator's.  The all-reduce's "hier" (in the
-- node, then across nodes), "comm" and "auto" (which picks hier) give the
-- communicator's sum.  A window on the node's own communicator runs.
local H = require "harness"

local c = comm.world()
local me, k = c.rank, c.size
local T = H.team(c)
local w = c:window(16, "i32")
w:tensor():fill(me + 1)
c:barrier()
H.eq(#w.team, T.size, "the window's team")

local calls = {
  { "allreduce", "c:allreduce", function(algo) return kernel.allreduce(w, { algo = algo }) end },
  { "reduce_scatter", "c:reducescatter", function() return kernel.reduce_scatter(w) end },
  { "allgather", "c:allgather", function() return kernel.allgather(w) end },
  { "reduce_to", "c:reduce", function() return kernel.reduce_to(T.first, w) end },
  { "broadcast", "c:broadcast", function() return kernel.broadcast(T.first, w) end },
  { "persistent", "c:allreduce", function() return kernel.persistent(w) end },
  { "alltoallv", "c:alltoall", function()
      local counts = {}
      for j = 1, k do counts[j] = 1 end
      return kernel.alltoallv(w, counts)
    end },
}
if T.size < k then
  local team = T.size == 1 and tostring(T.first) or (T.first .. "-" .. (T.first + T.size - 1))
  for _, call in ipairs(calls) do
    local algos = call[1] == "allreduce" and kernel.algos or { "default" }
    for _, algo in ipairs(algos) do
      if call[1] ~= "allreduce" then
      H.raises(function() call[3](algo) end,
               string.format("%s: the window's team is ranks %s (node %d) of the communicator's 0-%d: "
                             .. "a kernel collective runs over the team, so it would cover this node "
                             .. "only; use %s (the whole communicator), or a window on a communicator "
                             .. "of one node (c:split(gcsh.node))", call[1], team, gcsh.node, k - 1, call[2]),
               call[1] .. " " .. algo)
      elseif algo ~= "hier" and algo ~= "comm" and algo ~= "auto" then
        H.raises(function() call[3](algo) end,
                 string.format("allreduce: algo '%s' runs over the window's team, ranks %s (node %d) of "
                               .. "the communicator's 0-%d, so it would reduce this node only; across "
                               .. "nodes use algo 'hier' (in the node, then across nodes; 'auto' picks "
                               .. "it) or 'comm' (the communicator's all-reduce)", algo, team, gcsh.node, k - 1),
                 "allreduce " .. algo)
      end
    end
  end
  H.eq(w:tensor():sum(), 16 * (me + 1), "nothing ran")
  for _, algo in ipairs({ "hier", "comm", "auto" }) do
    w:tensor():fill(me + 1)
    local res, ran = kernel.allreduce(w, { algo = algo })
    H.eq(ran, algo == "auto" and "hier" or algo, "auto picks hier across nodes")
    H.eq(res[0], k * (k + 1) // 2, "allreduce " .. algo .. ": the communicator's sum")
    H.eq(res[15], k * (k + 1) // 2, "allreduce " .. algo .. ": the communicator's sum, last element")
  end
  -- the node's own communicator: its team is all of it
  local node = c:split(gcsh.node)
  local nw = node:window(16, "i32")
  nw:tensor():fill(me + 1)
  local res, ran = kernel.allreduce(nw, { algo = "twoshot" })
  local want = 0
  for _, r in ipairs(T.members) do want = want + r + 1 end
  H.eq(res[0], want, "on the node's communicator (" .. ran .. ")")
  node:barrier()
  nw:free()
  node:free()
else
  for _, algo in ipairs(kernel.algos) do
    if algo ~= "nccl_dev" or gcsh.backend == "cuda" then
      w:tensor():fill(me + 1)
      local res, ran = kernel.allreduce(w, { algo = algo })
      H.eq(res[0], k * (k + 1) // 2, "allreduce " .. algo .. " (" .. ran .. ") over the whole communicator")
      c:barrier()
    end
  end
end
c:barrier()
w:free()
