-- Broadcast: a tree, or a chain
-- A broadcast copies the root's buffer to every rank.  Copying from the
-- root alone takes N-1 copies out of one rank.  A binomial tree doubles the
-- ranks that hold the data at each step: ceil(log2 N) steps.  A ring
-- (chain) passes it along: N-1 steps, but each rank sends only once, which
-- pipelines well for large buffers.
lesson = require "gcsh.lesson"
c = comm.world()
w = c:window(4, "i32")

--- The tree
-- Rank r starts with 2^r, so a cell names whose data a rank holds; at the
-- end every rank holds the root's.
w:tensor():fill(1 << rank)
tree = step.broadcast(w, 0, {algo = "tree"})
tree:next()
lesson.check(tree:run({quiet = true}),
             "the tree broadcast equals c:broadcast")

--- The chain
w:tensor():fill(1 << rank)
chain = step.broadcast(w, 0, {algo = "ring"})
lesson.check(chain:run(), "the ring broadcast equals c:broadcast")

--- exercise: How many steps?
-- Write tree_steps(n): the number of steps of a binomial-tree broadcast on
-- n ranks (the ranks holding the data double each step).  Check it:
--     check_tree_steps(tree_steps)
function check_tree_steps(fn)
  for n = 1, 64 do
    local want = 0
    while (1 << want) < n do want = want + 1 end
    if fn(n) ~= want then
      error(string.format("not yet: tree_steps(%d) gave %s, want %d", n,
                          tostring(fn(n)), want), 2)
    end
  end
  lesson.check(tree.steps == fn(size),
               "the stepper took tree_steps(size) steps")
  print("right: ceil(log2 n)")
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
