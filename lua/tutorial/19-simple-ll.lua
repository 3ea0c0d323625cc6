-- Simple or LL on one algorithm: put + signal, or a flag per 8 bytes
-- Lesson 14 set ll against one-shot's barrier: two algorithms.  Here the
-- algorithm stays one-shot (every rank sends its region to every rank,
-- and every rank adds up what it received) and only the protocol, the way
-- the data says it has arrived, changes, as NCCL changes it under one
-- algorithm.  Simple: a put of the data, then a signal the put raises
-- once the data has landed: one flag per pair of ranks per call, which
-- the reader waits for before it reads.  LL: kernel.allreduce's
-- algo="ll", where every 8 bytes of data travel with their flags in one
-- 16-byte line and the reader polls the lines.  Both work on one window:
-- its region (the first n elements), then two sets of slots, a slot for
-- each sending rank; a signal word for each sending rank.
lesson = require "gcsh.lesson"
bench = require "gcsh.bench"
lesson.needs(2)
c = comm.world()
maxn = kernel.ll_max_bytes // 4
box = c:window(maxn * (1 + 2 * size), "f32")
flags = c:signals(size)
calls, puts, slots = 0, {}, {}

--- Simple, made of puts and signals
-- simple_allreduce(n) sums the first n elements of every rank's region.
-- Call number c (from 1) puts my region into slot `rank` of set c % 2 on
-- every rank; each put adds 1 to that rank's word `rank` once its data
-- has landed.  Then it waits for every word q to reach c (one flag per
-- sender) and adds the slots up in rank order.  Nothing is cleared: the
-- call number is the flag, as in LL's lines; the two sets stop a fast
-- rank from overwriting a slot that is still being read.  The puts are
-- made once per size and posted at every call.
function slot(set, q) return maxn * (1 + set * size + q) end
function prepare(n)
  local region = box:tensor():view(0, n)
  puts[n], slots[n] = { [0] = {}, [1] = {} }, { [0] = {}, [1] = {} }
  for set = 0, 1 do
    for q = 0, size - 1 do
      puts[n][set][q] = box:put(q, region, slot(set, rank),
                                {signal = {flags, rank}})
      slots[n][set][q + 1] = box:tensor():view(slot(set, q), n)
    end
  end
end
function simple_allreduce(n)
  if not puts[n] then prepare(n) end
  calls = calls + 1
  local set = calls % 2
  for q = 0, size - 1 do puts[n][set][q]:post() end
  for q = 0, size - 1 do flags:wait(q, calls) end
  kernel.reduce(box:tensor():view(0, n), slots[n][set])
end
function free_puts()
  for _, sets in pairs(puts) do
    for set = 0, 1 do
      for q = 0, size - 1 do sets[set][q]:free() end
    end
  end
  puts, slots = {}, {}
end
region = box:tensor():view(0, 1000)
region:fill(rank + 1)
simple_allreduce(1000)
lesson.expect(region, size * (size + 1) // 2,
              "Simple's one-shot leaves the sum on every rank")
region:fill(rank + 1)
kernel.allreduce(box, {algo = "ll", n = 1000})
lesson.expect(region, size * (size + 1) // 2,
              "LL's one-shot leaves the same sum")

--- What each stores, and what each waits for
-- One call of n bytes, on each rank: Simple stores n bytes into each of
-- the N ranks, then an 8-byte signal word: N (n + 8) bytes.  LL stores
-- each 8 bytes of data in a 16-byte line with its flags: N x 16 ceil(n/8)
-- bytes, about twice the data.  What each waits for differs the other
-- way: Simple's reader waits for a signal that comes after the data, a
-- second trip between the pair (on GPUs: a fence, then a flag store
-- across the link); LL's flag comes in the same store as its data.
for _, n in ipairs({ 8, 4096, kernel.ll_max_bytes }) do
  local simple, ll = size * (n + 8), size * 16 * ((n + 7) // 8)
  print(string.format("%6d B: Simple stores %8d B, LL %8d B "
                      .. "(%.2fx)", n, simple, ll, ll / simple))
end
lesson.check(size * 16 * 8192 == 2 * size * 65536,
             "at 64 KiB, LL stores twice the data")

--- Measured here
-- bench.time(fn) times fn as bench.allreduce times a size: .check off,
-- warm-up calls, then a timed loop (as many calls as fill 2 ms), on
-- every rank.  It returns this rank's own mean per call (mine) and every
-- rank's average (avg).  Rank 0 prints the averages; then every rank says
-- where ll won by its own times, so ranks that measured differently show
-- as lines of their own.  (With more ranks than cores, the ranks take
-- turns on the cores: ll waits once per 8-byte line, Simple once per
-- sender, and the times measure the scheduler as much as the protocols.)
sizes = { 8, 64, 512, 4096, 32768, kernel.ll_max_bytes }
times, wrong = {}, 0
for _, bytes in ipairs(sizes) do
  local n = bytes // 4
  local part = box:tensor():view(0, n)
  part:fill(rank + 1)
  simple_allreduce(n)
  local sum = tensor.new(n):fill(size * (size + 1) // 2)
  if not part:equal(sum) then wrong = wrong + 1 end
  local s = bench.time(function() simple_allreduce(n) end)
  local l = bench.time(function()
    kernel.allreduce(box, {algo = "ll", n = n})
  end)
  times[#times + 1] = { bytes = bytes, simple = s, ll = l }
end
free_puts()
function ll_won(which)
  local won = {}
  for _, t in ipairs(times) do
    if t.ll[which] < t.simple[which] then
      won[#won + 1] = t.bytes
    end
  end
  return #won > 0 and table.concat(won, ", ") .. " B" or "no size"
end
if rank == 0 then
  print("every rank's average:")
  print("    size (B)  Simple (us)  LL (us)")
  for _, t in ipairs(times) do
    print(string.format("%12d %12.2f %8.2f", t.bytes, t.simple.avg,
                        t.ll.avg))
  end
end
print("averages: ll won at " .. ll_won("avg"))
print("my times: ll won at " .. ll_won("mine"))
print("measured on " .. lesson.measured_on())
lesson.check(wrong == 0, "Simple's one-shot right at every size")

--- Why LL wins small and loses large
-- A small call is all latency: Simple pays its signal after its data, a
-- round trip per pair, where LL's reader sees data and flag in one line.
-- A large call is all bandwidth: LL's lines carry 8 bytes of data in 16,
-- half the bandwidth, and the gap grows with the size (in lesson 15's
-- example NCCL's model stops choosing LL at about 200 KiB; LL128 keeps
-- 120 bytes of every 128).  Here the ratio of ll's time to Simple's, from
-- the averages, at the smallest size and the largest:
first, last = times[1], times[#times]
print(string.format("LL/Simple: %.2fx at %d B, %.2fx at %d B",
                    first.ll.avg / first.simple.avg, first.bytes,
                    last.ll.avg / last.simple.avg, last.bytes))
lesson.check(#times == #sizes, "every size timed both ways")

--- exercise: The bytes on the wire
-- Write wire_bytes(proto, n, k): the bytes one rank stores for one
-- one-shot call of n bytes of data on k ranks, flags included, for proto
-- "simple" (n bytes and one 8-byte signal per rank) and "ll" (16-byte
-- lines of 8 data bytes each, rounded up).  Check it:
--     check_wire(wire_bytes)
function check_wire(fn)
  local cases = { { "simple", 8, 2 }, { "ll", 8, 2 },
                  { "ll", 9, 4 }, { "simple", 4096, 4 },
                  { "ll", 65536, 8 }, { "simple", 1, 8 } }
  local got = lesson.call_each(fn, "wire_bytes", cases)
  local want = {}
  for i, cs in ipairs(cases) do
    local proto, n, k = cs[1], cs[2], cs[3]
    want[i] = proto == "simple" and k * (n + 8)
              or k * 16 * ((n + 7) // 8)
  end
  local first = #cases
  for i = 1, #cases do
    if got[i] ~= want[i] then first = i; break end
  end
  local cs = cases[first]
  local call = string.format('wire_bytes("%s", %d, %d)', cs[1],
                             cs[2], cs[3])
  lesson.answer(call, got[first], want[first],
                "Simple sends the data and a flag, LL twice the"
                .. " data")
end

--- solution
function wire_bytes(proto, n, k)
  if proto == "simple" then return k * (n + 8) end
  return k * 16 * ((n + 7) // 8)
end
check_wire(wire_bytes)
