-- Broadcast: a tree, or a chain
-- A broadcast copies the root's buffer to every rank.  Copying from the
-- root alone takes N-1 copies out of one rank.  A binomial tree doubles the
-- ranks that hold the data at each step: ceil(log2 N) steps.  A ring
-- (chain) passes it along: N-1 steps, but each rank sends only once, which
-- pipelines well for large buffers.
lesson = require "gcsh.lesson"
lesson.needs(2)
c = comm.world()
w = c:window(4, "i32")

--- The tree
-- Rank r starts with 2^r, so a cell names whose data a rank holds.  Each
-- step, every rank that holds the root's data copies it to one that does
-- not: the ranks holding it double, 1, 2, 4, ..., so ceil(log2 N) steps
-- reach every rank.  Each step's title says how many hold it after it.
w:tensor():fill(1 << rank)
tree = step.broadcast(w, 0, {algo = "tree"})
tree:next(tree.steps)
lesson.check(tree:run({quiet = true}),
             "the tree broadcast equals c:broadcast")

--- The chain, pipelined
-- The chain passes the data along, one rank further each step: N-1 steps
-- for the whole buffer.  Cut into P pieces, it pipelines: at step s the
-- rank i places down the chain copies piece s - i, so several pieces move
-- at once, on different links, and the chain takes N-1 + P-1 steps of 1/P
-- of the buffer each (NCCL's slices).  Here P = 2: the grid's columns are
-- the two pieces; watch piece c0 reach a rank while c1 is one rank behind.
-- For one small buffer the tree's fewer steps win.
w:tensor():fill(1 << rank)
chain = step.broadcast(w, 0, {algo = "ring", pieces = 2})
chain:next(chain.steps)
lesson.check(chain:run({quiet = true}),
             "the pipelined chain equals c:broadcast")
print(string.format("steps at size %d: tree %d, chain %d, in 2 "
                    .. "pieces %d", size, tree.steps, size - 1,
                    chain.steps))

--- exercise: How many steps?
-- Write tree_steps(n): the number of steps of a binomial-tree broadcast on
-- n ranks (the ranks holding the data double each step).  Check it:
--     check_tree_steps(tree_steps)
function check_tree_steps(fn)
  local calls = {}
  for n = 1, 64 do calls[n] = { n } end
  local got = lesson.call_each(fn, "tree_steps", calls)
  local first, want = 64, 6
  for n = 1, 64 do -- the first n it gets wrong, else 64
    local expect = 0
    while (1 << expect) < n do expect = expect + 1 end
    if got[n] ~= expect then first, want = n, expect; break end
  end
  lesson.answer(string.format("tree_steps(%d)", first), got[first], want, "ceil(log2 n)")
  lesson.check(tree.steps == fn(size), "the stepper took tree_steps(size) steps")
end

--- solution
function tree_steps(n)
  local s = 0
  while (1 << s) < n do s = s + 1 end
  return s
end
check_tree_steps(tree_steps)
tree:free()
chain:free()
w:free()
