-- Signals, and the barrier that was missing
-- A signal is a 64-bit word in symmetric memory that a peer can add to.
-- The writer stores its data, then adds to the reader's word (with release
-- order: the data is visible before the add); the reader waits for the
-- word, then reads.  Barriers are made of signals.  Without them, a read
-- can overtake the write it needs: a race.
lesson = require "gcsh.lesson"
lesson.needs(2)
c = comm.world()
w = c:window(4, "i32")
s = c:signals(2)
right, left = (rank + 1) % size, (rank - 1) % size

--- A signal says the data is there
-- Each rank stores a value into its right neighbour's slice, then adds 1 to
-- the neighbour's word 0.  Each rank waits for its own word 0 to reach 1,
-- and only then reads what its left neighbour stored.  The lines between
-- do and end run as one command: typed one at a time, the shell's wait for
-- every rank between lines (a barrier of its own, part 4) would do the
-- signal's job.
do
  w:peer(right)[0] = 1000 + rank
  s:add(right, 0, 1)
  s:wait(0, 1)
  print("from my left neighbour: " .. w:tensor()[0])
end
lesson.check(w:tensor()[0] == 1000 + left,
             "the data arrived before the signal was seen")

--- A barrier is signals too
-- Every rank adds 1 to word 1 of every rank, then waits for its own word 1
-- to reach size: then every rank has arrived.  This is the barrier the
-- kernels and the steppers use.
do
  for r = 0, size - 1 do s:add(r, 1, 1) end
  s:wait(1, size)
end
lesson.check(s:read(1) == size, "word 1 counted every arrival")

--- The missing barrier, made visible
-- A stepper runs an algorithm step by step with real loads and stores.  Its
-- race options take a barrier away: delay makes the last rank 100 ms late
-- at step 1, skip="signal" makes it signal "done" before it writes.  Its
-- right neighbour, rank 0, then reads its chunk too early.  (The late rank
-- also waits for the others to go as far as they can without it: however
-- slow the machine, the early read comes first.)  Rank r starts
-- with 2^r, so a cell names the ranks whose data it holds; ! marks a wrong
-- one, and a note under the grid names the read that went wrong.  (At 2
-- ranks a second note says the late rank also read a chunk of rank 0's too
-- late: rank 0 had moved on and overwritten it; "1+1" is rank 1's data
-- twice.)
ring = c:window(4 * size, "i32")
ring:tensor():fill(1 << rank)
late = {rank = size - 1, ms = 100, step = 1}
st = step.allreduce(ring, {algo = "ring", skip = "signal",
                          delay = late})
ok = st:run()
lesson.check(size == 1 or ok == false,
             "without its barrier, the ring's result is wrong")

--- Step by step, the race hides
-- The same stepper, one step per line.  Between two lines the shell waits
-- for every rank: a barrier of its own.  So no read can overtake a write,
-- and every step comes out right.
st:reset()
st:next()
lesson.check(#st.wrong == 0, "one step per line: nothing wrong")

--- Put the barrier back
-- Without skip, the late rank only makes the others wait: right again.
st:free()
ring:tensor():fill(1 << rank)
st = step.allreduce(ring, {algo = "ring", delay = late})
lesson.check(st:run({quiet = true}),
             "with its barriers, a late rank only delays")
st:free()
ring:free()
s:free()
w:free()
