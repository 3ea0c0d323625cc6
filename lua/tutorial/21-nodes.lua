-- The node boundary: a hierarchical all-reduce, and what crosses it
-- So far every rank shared one machine's memory: a window's loads and
-- stores reached every rank's slice.  A job on several machines has
-- nodes.  Inside a node ranks share memory: a window's team (w.team) is
-- its node's ranks.  Between nodes only the network carries data: w:put
-- and w:get, signals, or a collective on the communicator.
--
-- No cluster at hand?  Tell gcsh how many ranks make a node, with a rank
-- count it divides:
--     GCSH_RANKS_PER_NODE=2 gcsh -n 4      (two nodes of two ranks)
-- or simulate nodes under a real mpirun, each with a host name of its own
-- and TCP between them (README, "Several nodes": scripts/simnode).
-- Started without either, the job is one node: the lesson still runs, and
-- says what changes there.
lesson = require "gcsh.lesson"
lesson.needs(2)
c = comm.world()
w = c:window(8, "i32")
how_many = gcsh.nodes .. (gcsh.nodes == 1 and " node" or " nodes")
team = table.concat(w.team, ",")
print(string.format("%d ranks, %s: I am on node %d, with ranks %s",
                    size, how_many, gcsh.node, team))

--- Loads and stores stop at the node
-- w:peer(r), a view of rank r's slice for loads and stores, exists only
-- for the ranks of my node.  For a rank on another node it is refused,
-- and the error names both nodes; w:info().network lists the ranks that
-- only the network reaches.  Here each rank asks for the rank one node
-- further on (itself, on one node).
net = w:info().network
print("only by network: " ..
      (#net > 0 and table.concat(net, ",") or "none"))
far = (rank + #w.team) % size
ok, err = pcall(function() return w:peer(far) end)
if not ok then
  why = err:match("%((rank .*)%)$") or err
  print(lesson.wrap("w:peer(" .. far .. ") refused: " .. why))
end
lesson.check(ok == (gcsh.node_of(far) == gcsh.node),
             "w:peer reaches my node's ranks and no other")

--- A team algorithm would sum one node
-- kernel.allreduce(w, {algo = "twoshot"}) runs over the window's team
-- (lesson 7).  On several nodes that is one node's ranks: it would sum
-- those and call the result everyone's.  So every team algorithm is
-- refused there, on every rank, saying what to use.  On one node the
-- team is everyone, and two-shot runs.
ok, err = pcall(kernel.allreduce, w, {algo = "twoshot"})
print(ok and "twoshot ran: the team is the whole communicator"
      or lesson.wrap(err))
lesson.check(ok == (gcsh.nodes == 1),
             "team algorithms run only where the team is everyone")

--- hier: three phases, one of them across the network
-- algo = "hier" puts the network in the middle.  With T ranks a node:
--   1. reduce-scatter in each node, by loads and stores: member t of a
--      node sums chunk t (1/T of the window) of its node's slices;
--   2. all-reduce of chunk t across nodes, over member t of every node:
--      the only data that crosses the network, 1/T of a slice per rank;
--   3. all-gather in each node, by loads and stores.
-- kernel.plan gives it as a table, the same on every rank: each phase
-- and each move says whether it crosses the network.  On one node
-- nothing crosses: chunk t has no partner on another node.
p = kernel.plan(w, {algo = "hier"})
for _, ph in ipairs(p.phases) do
  where = ph.network and "crosses the network" or "inside each node"
  print(string.format("%s: %s\n  %s", ph.name, where, ph.over))
end
crossing = 0
for _, s in ipairs(p.steps) do
  for _, m in ipairs(s.moves or {}) do
    if m.network then crossing = crossing + 1 end
  end
end
for t, r in ipairs(w.team) do
  if r == rank then my_chunk = p.chunks[t] end
end
crossed = gcsh.nodes > 1 and 4 * my_chunk.count or 0
print(string.format("network moves: %d; of my %d B, %d B cross",
                    crossing, 4 * w.n, crossed))
lesson.check(crossing == (gcsh.nodes > 1 and size or 0),
             "each rank's chunk crosses once, only between nodes")

--- hier, stepped
-- step.allreduce(w, {algo = "hier"}) walks that plan.  Rank r puts 2^r
-- everywhere, so a cell shows the ranks whose data it holds.  Step 1:
-- chunk t of member t holds its node's sum.  Step 2: the moves marked
-- (net) cross the network, and chunk t of member t holds every rank's
-- data (on one node the step has nothing to do, and says so).  Step 3:
-- each member stores its chunk into its node's other slices.
w:tensor():fill(1 << rank)
st = step.allreduce(w, {algo = "hier"})
st:next()
st:next()
st:next()
lesson.check(st:run({quiet = true}),
             "hier's result equals c:allreduce's on every rank")
st:free()

--- exercise: Partners across nodes
-- Step 2 pairs the ranks that hold the same place in their nodes.  Write
-- member(r): rank r's place in its node's team, 0 for the node's lowest
-- rank (gcsh.node_of(r) is rank r's node; a node's ranks are its team in
-- rank order).  Chunk t's all-reduce then spans member t of every node.
-- Each rank checks member(rank):
--     check_member(member)
function check_member(fn)
  local want = 0
  for _, r in ipairs(w.team) do
    if r < rank then want = want + 1 end
  end
  local got = lesson.call(fn, "member", rank)
  lesson.answer("member(" .. rank .. ")", got, want,
                "member(r) is rank r's place in its node")
end

--- solution
function member(r)
  local t = 0
  for q = 0, r - 1 do
    if gcsh.node_of(q) == gcsh.node_of(r) then t = t + 1 end
  end
  return t
end
check_member(member)
w:free()
