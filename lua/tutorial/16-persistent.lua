-- A resident kernel: rung, not launched
-- A small all-reduce moves a few bytes and pays for a kernel launch every
-- time.  kernel.persistent starts one worker per rank that stays resident
-- (on GPUs a kernel that never returns; here, on the host backend, a
-- progress thread) and waits on a doorbell: p:allreduce writes a call into
-- the doorbell's ring and returns.  The resident runs the "ll" all-reduce
-- (lesson 14) for each call it finds.  This lesson rings it, fills its ring
-- faster than it drains, and measures what it saves and what it costs.
lesson = require "gcsh.lesson"
bench = require "gcsh.bench"
c = comm.world()

--- What a launch costs
-- kernel.empty() launches a kernel that does nothing: the floor under
-- every kernel call (on the host backend it is the shell's own path, no
-- launch).  kernel.allreduce{algo="ll"} pays it once per call.
w = c:window(64, "i32")
function per_call_us(fn, n)
  fn()
  gcsh.sync()
  local tm = gcsh.timer()
  for _ = 1, n do fn() end
  return tm:stop() / n * 1e6
end
empty_us = per_call_us(kernel.empty, 200)
ll_us = per_call_us(function()
  kernel.allreduce(w, {algo = "ll", n = 2})
end, 200)
if rank == 0 then
  print(string.format("empty kernel: %.2f us", empty_us))
  print(string.format("ll all-reduce of 8 B: %.2f us", ll_us))
end
print("measured on " .. lesson.measured_on())

--- The doorbell
-- p:allreduce{n=} writes {offset, n, op} into entry `calls % 64` of the
-- ring, each word beside the call's number: the last word written is the
-- doorbell.  A GPU resident reads 16 entries in one look across PCIe
-- (about a microsecond a look) and takes an entry once every word carries
-- its call's number, so never a half-written one; the host's thread
-- waits on a count of calls instead.  p:allreduce returns my region's view
-- at once.  p.calls counts the rings, p.done the calls the resident
-- finished; reading the view (or p:wait(), or gcsh.sync()) waits for
-- them, as a read waits for a GPU stream.
p = kernel.persistent(w)
w:tensor():fill(rank + 1)
r = p:allreduce{n = 4}
print(string.format("rung: p.calls = %d", p.calls))
print(r)
print(string.format("after the read: p.done = %d, p.busy = %s",
                    p.done, p.busy))
lesson.expect(r, size * (size + 1) // 2,
              "the resident's all-reduce")

--- Faster than it drains
-- Ring 200 calls in a row, on 50 regions of one element: the ring holds
-- 64, so the 65th ring waits until the first call is done (back-pressure:
-- an entry is never overwritten before its call ran).  A region reduced m
-- times holds size^(m-1) times its first sum: a lost or repeated call
-- would show (a reordered one would not: every call multiplies by size).
w:tensor():fill(1)
for i = 0, 199 do p:allreduce{offset = i % 50, n = 1} end
p:wait()
print(string.format("p.calls = %d, p.done = %d", p.calls, p.done))
lesson.expect(w:tensor():view(0, 50), size ^ 4 // 1,
              "four calls on each region")

--- What it costs
-- Nothing is launched per call, but the resident never leaves: on a GPU it
-- holds an SM (sms= blocks) and spins a warp on the doorbell for as long as
-- it lives, drawing power while nobody rings; here it is a thread that
-- spins, then yields, then sleeps.  bench.allreduce puts the three side by
-- side (on a busy CPU the thread takes turns with the ranks, and the times
-- say so).
rows = bench.allreduce{algos = {"empty", "ll", "persistent"},
                       min = 8, max = 512, factor = 8,
                       iters = 50, warmup = 5, quiet = true}
wrong = 0
for _, row in ipairs(rows) do wrong = wrong + row.wrong end
if rank == 0 then
  print("    size (B)  algo         time (us)  issue (us)")
  for _, row in ipairs(rows) do
    print(string.format("%12d  %-10s %10.2f %11.2f", row.size,
                        row.algo, row.time_us, row.issue_us))
  end
end
print("measured on " .. lesson.measured_on())
lesson.check(wrong == 0, "every persistent row is right")

--- exercise: When does a ring wait?
-- Write must_wait(calls, done): whether ringing one more call waits for a
-- free entry, when `calls` were rung and `done` of them completed (the
-- ring has 64 entries).  Check it:
--     check_must_wait(must_wait)
WHY = "64 entries: wait once 64 calls are in flight"
function check_must_wait(fn)
  local cases = { {64, 0}, {63, 0}, {100, 40}, {100, 36}, {0, 0} }
  local got = lesson.call_each(fn, "must_wait", cases)
  for i, case in ipairs(cases) do
    local want = case[1] - case[2] >= 64
    if got[i] ~= want then
      local name = string.format("must_wait(%d, %d)",
                                 case[1], case[2])
      return lesson.answer(name, got[i], want, WHY)
    end
  end
  lesson.answer("must_wait(64, 0)", got[1], true, WHY)
end

--- solution
function must_wait(calls, done)
  return calls - done >= 64
end
check_must_wait(must_wait)

--- Stopping it
-- p:stop() waits for the calls rung, then ends the resident; so do <close>
-- and the end of the session.  Ctrl-C while calls wait for a rank that
-- never comes stops it too, and aborts its communicator.  While it runs,
-- its window cannot be freed.
print(lesson.wrap(select(2, pcall(w.free, w))))
p:stop()
print(string.format("p.running = %s after %d calls: %s", p.running,
                    p.done, p.stopped))
w:free()

--- The doorbell, a step at a time
-- step.persistent(w) plays the same protocol one step at a time, with the
-- real entries' encoding (kernel.persistent_entry): rung (the host fills
-- an entry, tagged with the call's number + 1, and its last pair rings;
-- rung goes up), look (the resident sees rung > done and takes the entry
-- once every pair carries the call's tag), run (the ll all-reduce, with
-- no launch) and done (the host's p:wait() returns; the entry may be
-- filled again).  Rank r starts with 2^r, so the region's cell names the
-- ranks whose data it holds.  The first call shown, the second quiet.
sw = c:window(8, "i32")
sw:tensor():fill(1 << rank)
bell = step.persistent(sw, {n = 4, calls = 2})
bell:next(4)
bell:next(4, {quiet = true})
lesson.check(bell:run({quiet = true}),
             "two calls rung, looked at, run and done")
bell:free()
sw:free()
