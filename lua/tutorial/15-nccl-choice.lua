-- What NCCL chose for a call, and why
-- For every collective call NCCL chooses an algorithm (RING, TREE, NVLS,
-- NVLS_TREE, COLLNET_DIRECT, COLLNET_CHAIN, PAT), a protocol (LL, LL128,
-- SIMPLE) and how many channels run it (each a CUDA block with its own
-- ring or tree).
-- Its model: at init it sets, for each function, algorithm and protocol, a
-- latency in us and a bandwidth in GB/s from the topology it found; a
-- call of n bytes costs latency + n / (1000 * bandwidth) us, and NCCL
-- takes the cheapest (src/enqueue.cc, topoGetAlgoInfo), then uses fewer
-- channels for small calls.  A tuner plugin (NCCL_TUNER_PLUGIN) gets that
-- cost table for each call and may change it (its getCollInfo).  With
-- NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=TUNING, rank 0 of a communicator
-- logs the table at init and its choice at every call.  The live part
-- needs the cuda backend; the rest runs anywhere.
lesson = require "gcsh.lesson"

--- Reading the choice
-- NCCL 2.28 writes a call's choice as below (host:pid:tid, the CUDA
-- device in brackets, then the subsystem's text): the function, its
-- Bytes (count x the type's size: the message, not what crosses links),
-- the algorithm, the protocol, and the channels it spreads over,
-- first..last.  parse_choice takes such a line apart.
line = "gpu7:2741:2741 [0] NCCL INFO AllReduce: 4096 Bytes -> " ..
       "Algo RING proto LL channel{Lo..Hi}={0..1}"
CHOICE = "NCCL INFO (%a+): (%d+) Bytes %-> Algo (%S+) proto (%S+) "
         .. "channel{Lo..Hi}={(%d+)..(%d+)}"
function parse_choice(text)
  local coll, bytes, algo, proto, lo, hi = text:match(CHOICE)
  if not coll then return nil end
  return { coll = coll, bytes = tonumber(bytes), algo = algo,
           proto = proto, channels = hi - lo + 1 }
end
choice = parse_choice(line)
print(string.format("%s of %d B: %s with %s on %d channels",
                    choice.coll, choice.bytes, choice.algo,
                    choice.proto, choice.channels))
lesson.check(choice.algo == "RING" and choice.channels == 2,
             "the line names the algorithm, protocol, 2 channels")

--- The model, by hand
-- At init the table's lines read, per function, latency/bandwidth for each
-- algorithm and protocol.  Below, one function's entries for two
-- algorithms, with numbers made up for the example (your machine's are in
-- its log).  For each size, the cheapest entry wins: small calls go to the
-- lowest latency (LL), large ones to the highest bandwidth (SIMPLE), and
-- here LL128 wins in between.
model = {
  -- latency (us), bandwidth (GB/s)
  RING = { LL = { 6.8, 12 }, LL128 = { 14, 120 },
           SIMPLE = { 22, 160 } },
  TREE = { LL = { 8.5, 8 }, LL128 = { 17, 50 },
           SIMPLE = { 28, 120 } },
}
function cost(e, bytes) return e[1] + bytes / (1000 * e[2]) end
function cheapest(table_, bytes)
  local best, algo, proto = math.huge, nil, nil
  for _, a in ipairs({ "RING", "TREE" }) do
    for _, p in ipairs({ "LL", "LL128", "SIMPLE" }) do
      local t = cost(table_[a][p], bytes)
      if t < best then best, algo, proto = t, a, p end
    end
  end
  return algo, proto, best
end
for _, bytes in ipairs({ 1024, 64 * 1024, 1 << 20, 64 << 20 }) do
  local a, p, t = cheapest(model, bytes)
  print(string.format("%10d B: %s %-6s %10.1f us", bytes, a, p, t))
end
lesson.check(select(2, cheapest(model, 1024)) == "LL"
             and select(2, cheapest(model, 1 << 20)) == "LL128"
             and select(2, cheapest(model, 64 << 20)) == "SIMPLE",
             "small calls choose LL, then LL128, large ones SIMPLE")

--- exercise: Where LL stops winning
-- Write crossover(ll, simple): the smallest size in bytes at which the
-- entry `simple` ({latency, bandwidth}) costs no more than `ll` (n bytes
-- cost latency + n / (1000 * bandwidth)).  Check it (ring's LL and SIMPLE
-- above):
--     check_crossover(crossover)
function check_crossover(fn)
  local ll, simple = model.RING.LL, model.RING.SIMPLE
  local want = 0
  while cost(simple, want) > cost(ll, want) do want = want + 1 end
  local got = lesson.call(fn, "crossover", ll, simple)
  if type(got) == "number" and math.abs(got - want) <= 1 then got = want end
  lesson.answer("crossover(RING.LL, RING.SIMPLE)", got, want,
                string.format("from %d B, ring SIMPLE is no dearer than LL", want))
end

--- solution
function crossover(a, b)
  -- a[1] + n / (1000 a[2]) = b[1] + n / (1000 b[2]), solved for n
  local n = (b[1] - a[1]) * 1000 / (1 / a[2] - 1 / b[2])
  return math.ceil(n)
end
check_crossover(crossover)

--- Live: what NCCL chose here
-- On the cuda backend, with NCCL's log in a file per process, each call's
-- choice can be read back.  Start gcsh so:
--     NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING \
--     NCCL_DEBUG_FILE=/tmp/nccl.%h.%p.log gcsh -n 4 --backend cuda
-- (%h and %p: NCCL puts the host name and the process id there).  Then
-- this part runs all-reduces of 1 KiB to 64 MiB and prints what rank 0's
-- NCCL logged for them (not the calls of earlier parts or lessons).  On a
-- GPU shared by the ranks (--share-gpu) each rank is its own NCCL host,
-- joined to the others by NCCL's network transport (sockets, or
-- InfiniBand where there is some): its choices
-- are those for that many machines, not for GPUs on NVLink, and the part
-- says so.  On the host backend there is no NCCL: the part says so.
function first_line(path)
  local f = io.open(path)
  if not f then return "?" end
  local text = f:read("l")
  f:close()
  return text
end
function nccl_log_path() -- NCCL_DEBUG_FILE, %h and %p filled in
  local pattern = os.getenv("NCCL_DEBUG_FILE")
  if not pattern then return nil end
  local pid = first_line("/proc/self/stat"):match("^%d+")
  local host = first_line("/proc/sys/kernel/hostname")
  host = host:match("^[^.]*") -- NCCL cuts the name there too
  return (pattern:gsub("%%h", host):gsub("%%p", pid))
end
function logged_choices(path)
  local found, f = {}, io.open(path)
  if not f then return found end
  for text in f:lines() do
    found[#found + 1] = parse_choice(text)
  end
  f:close()
  return found
end
live = gcsh.backend == "cuda" and nccl_log_path()
       and os.getenv("NCCL_DEBUG_SUBSYS") == "TUNING"
if gcsh.backend ~= "cuda" then
  print("host backend: NCCL chooses only on the cuda backend")
elseif not live then
  print("start gcsh with the NCCL_ variables above to see them")
else
  c = comm.world()
  local path = nccl_log_path()
  local before = #logged_choices(path)
  for _, bytes in ipairs({ 1024, 64 * 1024, 1 << 20, 64 << 20 }) do
    c:allreduce(tensor.new(bytes // 4))
  end
  gcsh.sync()
  local choices = rank == 0 and logged_choices(path) or {}
  for i = before + 1, #choices do
    local ch = choices[i]
    print(string.format("%s %10d B: %s %s on %d channels", ch.coll,
                        ch.bytes, ch.algo, ch.proto, ch.channels))
  end
  if lesson.shared_gpu() then
    local why = "a shared GPU: each rank is its own NCCL host, so "
      .. "these are NCCL's choices for that many machines joined "
      .. "by its network transport, not for GPUs on NVLink"
    print(lesson.wrap(why))
  end
end
