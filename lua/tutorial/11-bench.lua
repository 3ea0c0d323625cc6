-- Reading a benchmark: algbw and busbw
-- gcsh's bench prints the columns of nccl-tests: size, count, type, redop,
-- root, time, algbw, busbw, #wrong (and issue: the host's time to issue a
-- call), a table wider than 80 columns; this lesson prints the columns it
-- reads.  Two bandwidths: algbw is bytes / time, what the caller sees;
-- busbw scales it by what each rank must move, so it can be compared with
-- the hardware's link bandwidth at any rank count.  Times here are
-- whatever this machine gives; the lesson checks the arithmetic, not the
-- speed.
lesson = require "gcsh.lesson"
bench = require "gcsh.bench"
c = comm.world()

--- Run one
-- An all-reduce from 1 KiB to 64 KiB, checked (#wrong counts elements that
-- differ from a reference computed in Lua).  The times are this machine's:
-- the line under the table says where they were measured.
rows = bench.collective{op = "allreduce",
                        min = 1024, max = 64 * 1024,
                        factor = 8, iters = 5,
                        warmup = 1, check = true, quiet = true}
if rank == 0 then
  print("  size (B)  time (us)  algbw (GB/s)  busbw (GB/s)  #wrong")
  for _, r in ipairs(rows) do
    print(string.format("%10d %10.2f %13.3f %13.3f %7d", r.size,
                        r.time_us, r.algbw, r.busbw, r.wrong))
  end
end
last = rows[#rows]
print("measured on " .. lesson.measured_on())
lesson.check(last.wrong == 0, "#wrong is 0: every element right")

--- algbw is size / time
-- size in bytes, time in microseconds, bandwidth in GB/s (10^9 bytes).
algbw = last.size / (last.time_us * 1e-6) / 1e9
print(string.format("%d bytes in %.2f us: algbw %.3f GB/s",
                    last.size, last.time_us, algbw))
lesson.check(math.abs(algbw - last.algbw) <= 1e-6 * last.algbw,
             "algbw = size / time")

--- busbw is algbw times the collective's factor
-- All-reduce moves 2(N-1)/N of the buffer through each rank's links (the
-- ring lesson counted it), so busbw = algbw * 2(N-1)/N.  At 1 rank nothing
-- moves: 0.
factor = 2 * (size - 1) / size
busbw = last.algbw * factor
lesson.check(math.abs(last.busbw - busbw) <= 1e-6 * last.algbw,
             "busbw = algbw * 2(N-1)/N for all-reduce")

--- What a graph saves
-- A loop typed at the prompt pays the host for every call: Lua, the
-- binding, the backend, the launch; the issue column is that time.
-- gcsh.graph(fn) runs fn once under capture: nothing runs, the calls are
-- recorded (CUDA stream capture on a GPU, the backend's calls on the host),
-- and g:replay(n) launches them n times from C.  bench's graph=N times
-- replays as nccl-tests -G N does: compare issue with and without.  On a
-- GPU a replay issues one launch for all 100 calls, so issue drops far
-- below the time; on the host backend the host is the device, a replay
-- runs the calls, and only Lua's and the binding's share goes.  Not always
-- a saving: with more ranks than cores, a replay's calls wait their turn
-- for a core as the loop's do, and the figure below may come out higher
-- from a graph than in a loop; read it as this machine's, not a rule.
t = tensor.new(4):fill(1)
g = gcsh.graph(function() c:allreduce(t) end)
print(g)
g:replay(3)
lesson.check(t[0] == size ^ 3, "three replays: three all-reduces")
g:free()
o = {op = "allreduce", min = 8, max = 8, iters = 100,
     warmup = 5, quiet = true}
plain = bench.collective(o)[1]
o.graph = 10
graphed = bench.collective(o)[1]
if rank == 0 then
  print(string.format("host issue per 8 B all-reduce: %.2f us"
                      .. " in a loop, %.2f from a graph",
                      plain.issue_us, graphed.issue_us))
end
lesson.check(graphed.graph == 10 and graphed.wrong == 0,
             "100 calls captured, replayed 10 times, results right")

--- exercise: The other factors
-- Write busbw_factor(op, n) for "allreduce", "allgather", "reducescatter"
-- and "broadcast" on n ranks.  All-gather and reduce-scatter move (N-1)/N
-- of the buffer per rank; a broadcast moves all of it once.  Check it:
--     check_factor(busbw_factor)
function check_factor(fn)
  local ops = { "allreduce", "allgather", "reducescatter", "broadcast" }
  local want = { allreduce = 2 * (size - 1) / size, allgather = (size - 1) / size,
                 reducescatter = (size - 1) / size, broadcast = 1.0 }
  local calls = {}
  for i, op in ipairs(ops) do calls[i] = { op, size } end
  local got = lesson.call_each(fn, "busbw_factor", calls)
  local first = #ops
  for i, op in ipairs(ops) do -- the first wrong one
    if type(got[i]) ~= "number" or math.abs(got[i] - want[op]) > 1e-9 then
      first = i
      break
    end
  end
  lesson.answer(string.format('busbw_factor("%s", %d)', ops[first], size), got[first],
                want[ops[first]], "the factors of nccl-tests")
end

--- solution
function busbw_factor(op, n)
  if op == "allreduce" then return 2 * (n - 1) / n end
  if op == "allgather" or op == "reducescatter" then
    return (n - 1) / n
  end
  return 1
end
check_factor(busbw_factor)
