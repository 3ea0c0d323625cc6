-- Rings with channels and slices, and NCCL's double binary tree
-- Lesson 8's ring sends every byte through 2(N-1) steps, each one a hop
-- to the neighbour: a latency that grows with N.  NCCL runs it in pieces:
-- channels (each its own ring, on its own part of the data, run by its
-- own block of threads at the same time) and, inside a channel, slices (a
-- chunk cut smaller, so that a step can pass a slice on while the next
-- slice is still arriving: a pipeline).  For small messages at many ranks
-- it uses a double binary tree instead: about log2 N levels up (reduce)
-- and down (broadcast), in two trees that each carry half of the data.
-- Here, a window of 4 elements per rank, i32; rank r puts 2^r, so a cell
-- names the ranks whose data it holds.
lesson = require "gcsh.lesson"
lesson.needs(2)
c = comm.world()
w = c:window(4 * size, "i32")

--- Two channels: two rings on two halves
-- Channel 0 takes the first half of the window, channel 1 the second:
-- two ring steppers, each over its own region (offset=, n=).  They step
-- together: the same step of each ring runs at the same time, as NCCL's
-- channels do.  The first step of each, then the rest: the grids are
-- alike, as the channels' work is.
w:tensor():fill(1 << rank)
half = 2 * size
ch0 = step.allreduce(w, {algo = "ring", offset = 0, n = half})
ch1 = step.allreduce(w, {algo = "ring", offset = half, n = half})
function say(text) if rank == 0 then print(text) end end
say(string.format("channel 0 (elements 0..%d):", half - 1))
ch0:next()
say(string.format("channel 1 (elements %d..%d):", half,
                  2 * half - 1))
ch1:next()
lesson.check(ch0:run({quiet = true}) and ch1:run({quiet = true}),
             "both channels' rings equal c:allreduce's")
ch0:free()
ch1:free()

--- Slices: a pipeline inside a channel
-- Channel 0's half cut into two slices, a ring each.  Slice 1 starts one
-- step after slice 0: at every tick, slice 0 is one step further.  With
-- S slices a ring of T steps takes T + S - 1 ticks, but a tick moves a
-- slice, 1/S of a chunk: the whole takes (T + S - 1) / S chunk-times
-- instead of T.  NCCL cuts a chunk into slices of a few KiB this way.
w:tensor():fill(1 << rank)
sl0 = step.allreduce(w, {algo = "ring", offset = 0, n = size})
sl1 = step.allreduce(w, {algo = "ring", offset = size, n = size})
ticks = 0
while sl0.step < sl0.steps or sl1.step < sl1.steps do
  ticks = ticks + 1
  if sl0.step < sl0.steps then sl0:next(1, {quiet = true}) end
  if ticks > 1 then sl1:next(1, {quiet = true}) end
  print(string.format("tick %d: slice 0 at step %d, slice 1 at step"
                      .. " %d of %d", ticks, sl0.step, sl1.step,
                      sl0.steps))
end
print(string.format("2 slices: %d ticks of half a chunk: %.1f"
                    .. " chunk-times, not %d", ticks, ticks / 2,
                    sl0.steps))
lesson.check(ticks == (sl0.steps > 0 and sl0.steps + 1 or 0)
             and sl0:run({quiet = true})
             and sl1:run({quiet = true}),
             "T + 1 ticks, and both slices right")
sl0:free()
sl1:free()

--- NCCL's double binary tree
-- btree(n, r) is NCCL's first tree (src/graph/trees.cc, ncclGetBtree):
-- rank 0 is the root; a rank's parent and children come from the lowest
-- set bit of its number.  The second tree is the first mirrored (rank r
-- plays N-1-r) when N is even, or shifted by one when N is odd.  At an
-- even N, a rank with children in one tree is a leaf in the other: every
-- rank does the same work over the two trees.  {parent, child, child}, -1
-- for none:
function btree(n, r)
  local bit = 1
  while bit < n and bit & r == 0 do bit = bit << 1 end
  if r == 0 then return { -1, -1, n > 1 and bit >> 1 or -1 } end
  local up = (r ~ bit) | (bit << 1)
  if up >= n then up = r ~ bit end
  local low = bit >> 1
  local d0 = low == 0 and -1 or r - low
  local d1 = low == 0 and -1 or r + low
  while d1 >= n do
    low = low >> 1
    d1 = low == 0 and -1 or r + low
  end
  return { up, d0, d1 }
end
function dtree(n, r) -- the second tree: {parent, child, child}
  local map, back
  if n % 2 == 1 then
    map = function(x) return (x - 1) % n end
    back = function(x) return x == -1 and -1 or (x + 1) % n end
  else
    map = function(x) return n - 1 - x end
    back = function(x) return x == -1 and -1 or n - 1 - x end
  end
  local t = btree(n, map(r))
  return { back(t[1]), back(t[2]), back(t[3]) }
end
trees = { [0] = btree(size, rank), [1] = dtree(size, rank) }
function kids(t)
  local k = {}
  for i = 2, 3 do if t[i] ~= -1 then k[#k + 1] = t[i] end end
  return k
end
function role(t)
  local k = kids(t)
  local up = t[1] == -1 and "root" or "parent " .. t[1]
  return up .. (#k > 0 and ", children " .. table.concat(k, ",")
                or ", a leaf")
end
print(string.format("r%d  tree A: %-24s tree B: %s", rank,
                    role(trees[0]), role(trees[1])))
lesson.check(size % 2 == 1 or #kids(trees[0]) == 0
             or #kids(trees[1]) == 0,
             "at even N, children in one tree at most")

--- The two trees, stepped
-- Tree A reduces and broadcasts the window's first half, tree B the
-- second, in the same steps.  A rank's depth is its distance from its
-- tree's root; D the deepest.  Reduce step s: every rank of depth D - s
-- adds its children's half to its own (peer loads).  Broadcast step
-- D + s: every rank of depth s copies its parent's half.  A barrier after
-- each step.  2D steps in all; the grid shows, after each, the ranks
-- whose data each rank's halves hold.
m = 2
function depth(tree_of, r)
  local d = 0
  while tree_of(size, r)[1] ~= -1 do
    r, d = tree_of(size, r)[1], d + 1
  end
  return d
end
mine = { [0] = depth(btree, rank), [1] = depth(dtree, rank) }
D = 0
for r = 0, size - 1 do
  D = math.max(D, depth(btree, r), depth(dtree, r))
end
function ranks_in(v)
  local l = {}
  for r = 0, size - 1 do
    if v & (1 << r) ~= 0 then l[#l + 1] = r end
  end
  return #l == size and "all" or table.concat(l, ",")
end
function show(s, what)
  local got = tensor.new(4 * size * size, "i32")
  c:allgather(w:tensor(), got)
  if rank == 0 then
    print(string.format("step %d of %d (%s):", s, 2 * D, what))
    print("        half A   half B")
    for r = 0, size - 1 do
      print(string.format("  r%-3d  %-8s %s", r,
                          ranks_in(got[4 * size * r]),
                          ranks_in(got[4 * size * r + m])))
    end
  end
  got:free()
end
function tree_step(s)
  for t = 0, 1 do
    local my = w:tensor():view(t * m, m)
    if s <= D and mine[t] == D - s then
      local parts = { my }
      for _, k in ipairs(kids(trees[t])) do
        parts[#parts + 1] = w:peer(k):view(t * m, m)
      end
      kernel.reduce(my, parts)
    elseif s > D and mine[t] == s - D then
      my:copy(w:peer(trees[t][1]):view(t * m, m))
    end
  end
  c:barrier()
  show(s, s <= D and "reduce up" or "broadcast down")
end
w:tensor():fill(1 << rank)
c:barrier()
for s = 1, 2 * D do tree_step(s) end
lesson.expect(w:tensor():view(0, 2 * m), (1 << size) - 1,
              "after 2D steps, both halves hold every rank's data")

--- Why NCCL picks each
-- A step costs a latency (a hop, a flag, a wait) whatever it carries:
-- the ring pays 2(N-1) of them, the double tree 2 ceil(log2 N).  Per
-- byte, the ring keeps every link busy at every step; the two trees
-- share the work so that no rank does more than its share.  NCCL's
-- model (lesson 15) gives the tree the lower latency and, on most
-- machines, the ring the higher bandwidth: trees for small messages at
-- many ranks, rings for large ones.  The steps at a few sizes:
for _, n in ipairs({ size, 8, 64, 512 }) do
  local lg = 0
  while (1 << lg) < n do lg = lg + 1 end
  print(string.format("N = %4d: ring %4d steps, double tree %2d", n,
                      2 * (n - 1), 2 * lg))
end
lesson.check(2 * D <= 2 * (size - 1),
             "the tree never takes more steps than the ring")

--- exercise: Steps, ring or tree
-- Write steps(algo, n): the steps an all-reduce takes on n ranks, for
-- algo "ring" (2(n-1)) and "tree" (2 ceil(log2 n): up, then down).
-- Check it:
--     check_steps(steps)
function check_steps(fn)
  local cases = { { "ring", 2 }, { "tree", 2 }, { "tree", 3 },
                  { "ring", 8 }, { "tree", 8 }, { "tree", 9 },
                  { "ring", 1 }, { "tree", 1 } }
  local got = lesson.call_each(fn, "steps", cases)
  local want = {}
  for i, cs in ipairs(cases) do
    local lg = 0
    while (1 << lg) < cs[2] do lg = lg + 1 end
    want[i] = cs[1] == "ring" and 2 * (cs[2] - 1) or 2 * lg
  end
  local first = #cases
  for i = 1, #cases do
    if got[i] ~= want[i] then first = i; break end
  end
  local call = string.format('steps("%s", %d)', cases[first][1],
                             cases[first][2])
  lesson.answer(call, got[first], want[first],
                "2(n-1) around the ring, 2 log2 n up and down")
end

--- solution
function steps(algo, n)
  if algo == "ring" then return 2 * (n - 1) end
  local lg = 0
  while (1 << lg) < n do lg = lg + 1 end
  return 2 * lg
end
check_steps(steps)
