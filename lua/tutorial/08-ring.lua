-- Ring all-reduce, and why its bus bandwidth factor is 2(N-1)/N
-- The ring all-reduce cuts the buffer into N chunks and passes them around
-- the ring of ranks.  N-1 reduce-scatter steps: at each, every rank adds
-- the chunk its left neighbour just reduced to its own copy of it; after
-- them rank r holds chunk r fully reduced.  Then N-1 all-gather steps pass
-- the reduced chunks around.  2(N-1) steps, each moving one chunk per rank.
-- Run it on 4 ranks (gcsh -n 4) to see the most.
lesson = require "gcsh.lesson"
lesson.needs(2)
c = comm.world()
w = c:window(2 * size, "i32")
w:tensor():fill(1 << rank)
st = step.allreduce(w, {algo = "ring"})
lesson.check(st.steps == 2 * (size - 1), "2(N-1) steps")

--- The first step
-- Rank r starts with 2^r everywhere, so a cell names the ranks whose data
-- it holds ("0,3" is 2^0 + 2^3).  The arrows say who read what: at 4 ranks
-- "r1: sum(r0.c3, r1.c3) -> r1.c3" is rank 1 loading chunk 3 of rank 0,
-- its left neighbour, adding its own chunk 3, and storing it there.  At
-- every rank count, each rank adds its left neighbour's chunk to its own.
-- * marks what changed.
st:next()

--- The rest of the reduce-scatter
-- Each step every rank adds one more rank's data to the chunk it passes on.
-- After N-1 steps, rank r's chunk r holds every rank's data.
if st.step < size - 1 then st:next(size - 1 - st.step) end
plan = kernel.plan(w, {coll = "allreduce", algo = "ring"})
mine = plan.chunks[rank + 1]
lesson.expect(w:tensor():view(mine.first, mine.count),
              (1 << size) - 1,
              "my own chunk holds every rank's data")

--- The all-gather
-- N-1 more steps copy the reduced chunks around the ring.
if st.step < st.steps then st:next(st.steps - st.step) end
lesson.check(st:run({quiet = true}),
             "the ring's result equals c:allreduce")

--- exercise: Count the traffic
-- Why is the ring good for large messages?  Count what one rank loads from
-- other ranks.  Write loads(plan, me): the number of elements rank me reads
-- from slices other than its own, over the whole plan (plan.steps; a step
-- of kind "move" has moves {rank=, count=, src={{peer=, first=}, ...}}).
-- The check runs it on a ring over n = 2 * size elements:
--     check_loads(loads)
function check_loads(fn)
  local got = lesson.call(fn, "loads", plan, rank)
  local n = 2 * size
  local want = 2 * (size - 1) * n // size
  lesson.answer("loads(plan, rank)", got, want,
                string.format("each rank loads %d elements, 2(N-1)/N of n = %d", want, n))
end

--- solution
function loads(p, me)
  local total = 0
  for _, s in ipairs(p.steps) do
    for _, m in ipairs(s.moves or {}) do
      if m.rank == me then
        for _, src in ipairs(m.src) do
          if src.peer ~= me and src.peer ~= "tmp" then
            total = total + m.count
          end
        end
      end
    end
  end
  return total
end
check_loads(loads)

--- Bus bandwidth
-- That count is the point: each rank moves 2(N-1)/N * n elements, nearly
-- 2n however many ranks there are.  So benchmarks report "busbw" = algbw *
-- 2(N-1)/N for all-reduce (algbw = bytes / time): a number you can compare
-- with the link's bandwidth at any N.  One-shot loads (N-1) * n instead.
-- But two-shot (lesson 7) moves the same 2(N-1)/N: bandwidth alone does
-- not pick the ring.  The ring needs links between neighbours only, and
-- pipelines: its data goes in slices over several channels at once.  Its
-- price is 2(N-1) steps of latency one after another, which is why NCCL
-- takes a tree or NVLS for small messages and the ring for large ones.
st:free()
w:free()
