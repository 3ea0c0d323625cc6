-- LL or simple: a flag in every line, or one after a fence
-- NCCL moves data with one of three protocols.  Simple: the data, then a
-- fence and a flag that says it is there: full bandwidth, but the reader
-- waits for that synchronisation.  LL (low latency): a flag beside every
-- 4-byte word, stored with it, 8 bytes of data in every 16-byte line: no
-- fence and no wait for one, but half of every line is flags.  LL128: a
-- flag per 128-byte line, 120 bytes of data, where the hardware keeps a
-- 128-byte store whole (NVLink).  gcsh's kernels make the same trade on a
-- small all-reduce: algo="oneshot" synchronises with a barrier, algo="ll"
-- with flags (lesson 6), algo="ll128" with LL128's lines (and, beside each
-- flag, a checksum of the line: a line is not always whole, under a
-- sanitizer for one).  They are algorithms, not NCCL's protocols on
-- one algorithm: one-shot's barrier stands in for Simple's fence and
-- per-step flag between pairs.  This lesson counts what the flags cost and
-- measures, on this machine, where each way of waiting wins.
lesson = require "gcsh.lesson"
bench = require "gcsh.bench"
c = comm.world()

--- What the flags cost
-- n bytes of data take ceil(n / 8) LL lines of 16 bytes: twice the bytes
-- (a little more when n is no multiple of 8).  LL128 takes ceil(n / 120)
-- lines of 128 bytes; simple moves the n bytes and a flag per chunk.
function ll(n) return 16 * ((n + 7) // 8) end
function ll128(n) return 128 * ((n + 119) // 120) end
for _, n in ipairs({ 4, 8, 100, 4096, 65536 }) do
  print(string.format("%6d B of data: LL stores %6d B, LL128 %6d B",
                      n, ll(n), ll128(n)))
end
lesson.check(ll(4096) == 2 * 4096,
             "LL stores twice the data's bytes")

--- A late rank, and no barrier
-- The flags do the barrier's job.  Here the last rank sleeps 0.2 s before
-- its ll all-reduce; the others start theirs at once, store their data,
-- and wait in the kernel for the late rank's flags, not at a barrier.
-- gcsh.check(false) turns the shell's own check off for the command: it
-- compares every rank's call before the kernel starts, which would make
-- the others wait for the late rank there instead.
w = c:window(64, "i32")
w:tensor():fill(rank + 1)
do
  gcsh.check(false)
  if rank == size - 1 then gcsh.sleep(0.2) end
  kernel.allreduce(w, {algo = "ll"})
end
lesson.expect(w:tensor(), size * (size + 1) // 2,
              "with a late rank and no barrier, the sum is right")
w:free()

--- Measured here: ll against oneshot
-- bench.allreduce times both, in place, from 8 B by factors of 8 while
-- within kernel.ll_max_bytes (64 KiB, the most an ll call takes): 8 B to
-- 32 KiB; then the sizes where ll was the faster, here.  Where ll wins,
-- the synchronisation one-shot pays costs more than moving twice the
-- bytes; where one-shot wins, the other way round.  (With more ranks
-- than cores, the ranks take turns on the cores, and the times measure
-- that as much as the protocols.)
rows = bench.allreduce{algos = {"oneshot", "ll"}, min = 8,
                       max = kernel.ll_max_bytes, factor = 8,
                       iters = 20, warmup = 3, quiet = true}
time, ll_wins, wrong = {}, {}, 0
for _, r in ipairs(rows) do
  time[r.size .. r.algo], wrong = r.time_us, wrong + r.wrong
end
for _, r in ipairs(rows) do
  if r.algo == "ll" and r.time_us < time[r.size .. "oneshot"] then
    ll_wins[#ll_wins + 1] = r.size
  end
end
if rank == 0 then
  print("    size (B)  oneshot (us)  ll (us)")
  for _, r in ipairs(rows) do
    if r.algo == "ll" then
      print(string.format("%12d %13.2f %8.2f", r.size,
                          time[r.size .. "oneshot"], r.time_us))
    end
  end
end
print("ll was the faster at: " .. (#ll_wins > 0
      and table.concat(ll_wins, ", ") .. " B" or "no size"))
print("measured on " .. lesson.measured_on())
lesson.check(wrong == 0, "every size right, both ways")

--- On GPUs: NCCL's own protocols
-- On the cuda backend, c:allreduce is NCCL's, and NCCL_PROTO limits the
-- protocols it may choose: LL, LL128, Simple (NCCL reads it when it makes
-- a communicator, so set it before gcsh starts).  Compare two sessions:
--     NCCL_PROTO=LL gcsh -n 4
--     NCCL_PROTO=Simple gcsh -n 4
-- each running bench.allreduce{algos = {"nccl"}, max = 1 << 20}.  On the
-- host backend c:allreduce is MPI's: NCCL_PROTO changes nothing there.
if gcsh.backend == "cuda" then
  print("NCCL_PROTO is " .. (os.getenv("NCCL_PROTO") or "not set"))
  nccl_rows = bench.allreduce{algos = {"nccl"}, min = 8,
                              max = 1 << 20, factor = 8,
                              quiet = true}
  -- (bench's own table, nccl-tests' 11 columns, is wider than 80)
  -- named by what ran: "copy" at one rank (no NCCL call)
  if rank == 0 then
    local ran = nccl_rows[1] and nccl_rows[1].label or "nccl"
    local head = "    size (B)  %4s (us)  busbw (GB/s)"
    print(head:format(ran))
    local row = "%12d %10.2f %13.2f"
    for _, r in ipairs(nccl_rows) do
      print(row:format(r.size, r.time_us, r.busbw))
    end
  end
  print("measured on " .. lesson.measured_on())
else
  print("host backend: no NCCL here; on GPUs, start gcsh as above")
end

--- exercise: The bytes LL stores
-- Write ll_bytes(n): the bytes an LL store of n bytes of data writes, its
-- flags included (16-byte lines, 8 bytes of data each).  Check it:
--     check_ll_bytes(ll_bytes)
function check_ll_bytes(fn)
  local sizes = { 1, 7, 8, 9, 100, 4096, 65535 }
  local calls = {}
  for i, n in ipairs(sizes) do calls[i] = { n } end
  local got = lesson.call_each(fn, "ll_bytes", calls)
  local first = #sizes
  for i, n in ipairs(sizes) do -- the first one it gets wrong
    if got[i] ~= ll(n) then first = i; break end
  end
  lesson.answer(string.format("ll_bytes(%d)", sizes[first]), got[first], ll(sizes[first]),
                "16 bytes per 8 of data, rounded up")
end

--- solution
function ll_bytes(n)
  return 16 * ((n + 7) // 8)
end
check_ll_bytes(ll_bytes)
