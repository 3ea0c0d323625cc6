-- The soak (issue 35): rounds that make and free what a user explores in an
-- afternoon (a split with an all-reduce, also on the kernels through its
-- staging window, windows of every kind, signals, a
-- graph, a persistent resident, one-sided transfers) and checks that the
-- rank stays flat after a warm-up: RSS grows by at most 64 KiB per 100
-- rounds (host; on cuda host memory as well, and device memory by at most
-- 1 MiB over the run), and open fds, threads and the /dev/shm files it maps
-- or holds open do not grow at all.  Device memory is what the whole GPU has
-- in use (cudaMemGetInfo: every process on it), so the figure is this job's
-- only when nothing else runs on its GPUs; the line says "whole GPU".
--   GCSH_SOAK_ROUNDS  rounds (default 100, the suite's short form; 1000 on GPUs)
--   GCSH_SOAK_ONLY    some of split,window,signals,graph (default all): which
--                     parts make a round, to find what grows
--   GCSH_SOAK_KINDS   the window kinds (default nccl,vmm on cuda, host on host)
--   GCSH_SOAK_SPLIT_KERNEL  0: a split round leaves out its all-reduce on the
--                     kernels (and so the staging window), to find what grows
--   GCSH_SOAK_SPLIT_BY  N: a split round splits by rank % N (default 2; 1:
--                     one split of every rank, so 2 GPUs make the splits of
--                     two ranks that 4 GPUs make by default)
--   GCSH_SOAK_EVERY   N: rank 0 says on stderr every N rounds how far it is
--                     (a long run cut short by its time limit still tells),
--                     and every rank, every N measured rounds, how far its
--                     RSS and malloc's count have moved since the warm-up
--                     (the curve: a steady climb, or steps that stop)
--   GCSH_SOAK_WARMUP  N: exactly N warm-up rounds (default: at least a tenth
--                     of the rounds, until RSS stays flat; see below), for a
--                     short diagnosis whose growth is the steady rate
--   GCSH_SOAK_MAPS    1: each rank says on stderr which of its mappings
--                     grew over the measured rounds (/proc/self/smaps: the
--                     malloc heap, an anonymous mapping, a driver's), to
--                     find whose memory grows; a diagnosis, not a verdict:
--                     its reads move RSS themselves (on cuda a free's
--                     malloc_trim gives their garbage back: RSS falls)
-- Prints, per rank, rounds a second and the growth, for the issue's note.
local H = require "harness"

-- Under AddressSanitizer (make test-asan sets ASAN_OPTIONS) freed memory
-- waits in a quarantine, so RSS grows by design: a short run that checks
-- the rest (and lets ASan watch every free of the rounds).
local SANITIZED = os.getenv("ASAN_OPTIONS") ~= nil
local ROUNDS = tonumber(os.getenv("GCSH_SOAK_ROUNDS") or "") or (SANITIZED and 20 or 100)
local WARMUP = math.max(10, ROUNDS // 10) -- the least warm-up (see below)
local RSS_PER_100 = 64 * 1024       -- bytes of RSS growth allowed per 100 rounds
local DEVICE_BUDGET = 1024 * 1024   -- bytes of device memory over the run

-- the parts a round makes; one not known would make rounds that hold
-- nothing, and pass (checked before anything is made)
local PARTS = "split,window,signals,graph"
local ONLY = os.getenv("GCSH_SOAK_ONLY") or PARTS
local function part(name) return ("," .. ONLY .. ","):find("," .. name .. ",", 1, true) end
for name in ONLY:gmatch("[^,]*") do
  assert(("," .. PARTS .. ","):find("," .. name .. ",", 1, true),
         string.format("GCSH_SOAK_ONLY: unknown part '%s' (valid: %s, comma-separated, none empty)",
                       name, PARTS))
end

-- no hang reports: the first one, 10 s into the run, reads every rank's
-- flight recorder and would be measured as growth of rank 0
gcsh.timeout(0)

local c = comm.world()
local me, n = c.rank, c.size
local nxt = (me + 1) % n

local KINDS = gcsh.backend == "cuda" and { "nccl", "vmm" } or { "host" }
if os.getenv("GCSH_SOAK_KINDS") then -- the window kinds a round makes, to find which grows
  KINDS = {}
  for kind in os.getenv("GCSH_SOAK_KINDS"):gmatch("[^,]+") do KINDS[#KINDS + 1] = kind end
end

-- ---- what the rank holds -------------------------------------------------

local function read_file(path)
  local f = assert(io.open(path))
  local s = f:read("a")
  f:close()
  return s
end

local PID = read_file("/proc/self/stat"):match("^(%d+)")

-- Lines of a command's output (its own fds are the pipe's: the same each time).
local function lines_of(cmd)
  local out, p = {}, assert(io.popen(cmd))
  for l in p:lines() do out[#out + 1] = l end
  p:close()
  return out
end

-- The /dev/shm files this rank maps or holds open (other sessions on the
-- machine have theirs: the machine-wide count says nothing).
local function shm_files()
  local seen, count = {}, 0
  for l in io.lines("/proc/self/maps") do
    local path = l:match("%s(/dev/shm/%S+)")
    if path and not seen[path] then seen[path] = true; count = count + 1 end
  end
  for _, path in ipairs(lines_of("find /proc/" .. PID .. "/fd -lname '/dev/shm/*' 2>/dev/null")) do
    if not seen[path] then seen[path] = true; count = count + 1 end
  end
  return count
end

-- Rss by mapping (/proc/self/smaps), keyed by start address and name (a
-- heap that grows keeps its start).
local function mappings()
  local rss, key = {}, nil
  for l in io.lines("/proc/self/smaps") do
    local start, name = l:match("^(%x+)%-%x+ %S+ %S+ %S+ %S+%s*(.*)$")
    if start then key = start .. " " .. (name ~= "" and name or "[anon]")
    elseif key then
      local kb = l:match("^Rss:%s*(%d+) kB")
      if kb then rss[key] = tonumber(kb) end
    end
  end
  return rss
end

-- The mappings whose Rss changed from before to after, largest first.
local function mappings_grown(before, after)
  local rows = {}
  for key, kb in pairs(after) do
    local delta = kb - (before[key] or 0)
    if delta ~= 0 then rows[#rows + 1] = { key = key, delta = delta } end
  end
  for key, kb in pairs(before) do
    if not after[key] and kb ~= 0 then rows[#rows + 1] = { key = key, delta = -kb } end
  end
  table.sort(rows, function(a, b) return math.abs(a.delta) > math.abs(b.delta) end)
  local out = {}
  for i = 1, math.min(8, #rows) do
    out[i] = string.format("  %+6d KiB  %s", rows[i].delta, rows[i].key)
  end
  return out
end

local function sample()
  collectgarbage("collect")
  collectgarbage("collect")
  local status = read_file("/proc/self/status")
  local s = {
    rss = tonumber(status:match("VmRSS:%s*(%d+) kB")) * 1024,
    shmem = tonumber(status:match("RssShmem:%s*(%d+) kB")) * 1024,
    threads = tonumber(status:match("Threads:%s*(%d+)")),
    -- the least of three looks: a thread of MPI or of the rank may hold a
    -- file open for a moment (/proc reads), which is no leak
    fds = math.min(#lines_of("ls /proc/" .. PID .. "/fd"), #lines_of("ls /proc/" .. PID .. "/fd"),
                   #lines_of("ls /proc/" .. PID .. "/fd")),
    -- what each fd is, to name the ones that grew (sorted: fd -> target)
    fd_list = lines_of("find /proc/" .. PID .. "/fd -mindepth 1 -printf '%f -> %l\\n' 2>/dev/null | sort -n"),
    shm = shm_files(),
  }
  local info = gcsh.info()
  s.device = tonumber(info.gpu_memory_used or "")
  -- malloc's own count (glibc): what someone keeps grows in_use, what
  -- fragmentation costs grows held alone
  s.heap_in_use, s.heap_held = info.heap_in_use, info.heap_held
  return s
end

-- ---- one round ------------------------------------------------------------

local t = tensor.new(256):fill(1)

local SPLIT_KERNEL = os.getenv("GCSH_SOAK_SPLIT_KERNEL") ~= "0"
local SPLIT_BY = math.tointeger(tonumber(os.getenv("GCSH_SOAK_SPLIT_BY") or "2"))
assert(SPLIT_BY and SPLIT_BY >= 1, "GCSH_SOAK_SPLIT_BY must be an integer >= 1")
local function split_round()
  local s = c:split(me % SPLIT_BY, me)
  local x = tensor.new(64):fill(1)
  s:allreduce(x)
  H.eq(x[0], s.size, "the split's all-reduce")
  -- the kernel route's staging window (bind/comm_route.c) goes with s
  if SPLIT_KERNEL then
    s:allreduce(x, "sum", nil, { algo = "kernel" })
    H.eq(x[0], s.size * s.size, "the split's all-reduce on the kernels")
  end
  s:free()
end

local function window_round(kind)
  local w = c:window(1024, "f32", { kind = kind })
  w:tensor():fill(me)
  c:barrier() -- every slice filled before any put lands
  local x = w:put(nxt, tensor.new(16):fill(me + 1), 0)
  x:post():wait { cpu = true }
  x:free()
  c:barrier()
  H.eq(w:tensor()[0], (me - 1) % n + 1, kind .. ": the put landed")
  local p = kernel.persistent(w)
  w:tensor():fill(1)
  c:barrier()
  local res = p:allreduce { n = 8 }
  p:wait()
  H.eq(res[0], #w.team, kind .. ": the resident's all-reduce")
  p:stop()
  p:free()
  w:free()
end

local function signals_round(round)
  local s = c:signals(4)
  s:add(nxt, 0, 1)
  s:wait(0, 1)
  H.eq(s:read(0), 1, "the signal")
  s:free()
  return round
end

local function graph_round()
  local g = gcsh.graph(function() c:allreduce(t, "max") end)
  g:replay(2)
  g:free()
end

local usable = {}
for _, kind in ipairs(KINDS) do
  -- a kind the communicator cannot take is refused on every rank alike
  local ok, err = pcall(function() c:window(1, "f32", { kind = kind }):free() end)
  if ok then usable[#usable + 1] = kind
  elseif me == 0 then io.stderr:write("soak: kind ", kind, " not here: ", tostring(err), "\n") end
end
H.truthy(#usable > 0, "some window kind works here")


local EVERY = tonumber(os.getenv("GCSH_SOAK_EVERY") or "")
local started = gcsh.wtime()
local function round(i)
  if EVERY and me == 0 and i % EVERY == 0 then
    io.stderr:write(string.format("soak: %d rounds in %.1f s\n", i, gcsh.wtime() - started))
  end
  if part("split") then split_round() end
  if part("window") then for _, kind in ipairs(usable) do window_round(kind) end end
  if part("signals") then signals_round(i) end
  if part("graph") then graph_round() end
  -- each round's garbage goes with it: what grows is then what is kept,
  -- not how far Lua's collector lets the heap rise between its cycles
  collectgarbage("collect")
end

-- ---- the run --------------------------------------------------------------

-- Warm-up: at least WARMUP rounds, then blocks of 10 until a block leaves
-- RSS where it was on every rank (what fills once stays: the flight
-- recorder's ring of 2000 calls, MPI's and the allocator's pools), at most
-- MAX_WARMUP rounds (5 x the rounds up to 500: the long form's 1000 rounds
-- need no longer a start than the short form's); then the measured rounds.
local MAX_WARMUP = SANITIZED and WARMUP or math.min(5 * ROUNDS, math.max(500, WARMUP))
local FIXED_WARMUP = tonumber(os.getenv("GCSH_SOAK_WARMUP") or "")
if FIXED_WARMUP then WARMUP, MAX_WARMUP = FIXED_WARMUP, FIXED_WARMUP end
local function all_flat(flat)
  local votes = c:agree(flat and "1" or "0")
  for _, v in ipairs(votes) do if v ~= "1" then return false end end
  return true
end
local warm, last = 0, nil
while warm < MAX_WARMUP do
  for _ = 1, warm < WARMUP and WARMUP or 10 do warm = warm + 1; round(warm) end
  local now = sample().rss
  if last and all_flat(now <= last) then break end
  last = now
end
-- (two read and dropped first: the heap then has room for the two tables
-- the comparison holds at once, whose growth is not the rounds')
local MAPS = os.getenv("GCSH_SOAK_MAPS") == "1"
if MAPS then
  local room = { mappings(), mappings() }
  room = nil
  collectgarbage("collect")
end
local EVERY_MEASURED = EVERY and EVERY < ROUNDS
if EVERY_MEASURED then -- said before the first sample: its buffers are not the rounds' growth
  io.stderr:write(string.format("soak: rank %d, measuring %d rounds\n", me, ROUNDS))
end
c:barrier()
local maps_before = MAPS and mappings()
local before = sample()
-- the curve (GCSH_SOAK_EVERY): only RSS and malloc's count, cheap to read
local function say_growth(i)
  collectgarbage("collect")
  local rss = tonumber(read_file("/proc/self/status"):match("VmRSS:%s*(%d+) kB")) * 1024
  local info = gcsh.info()
  io.stderr:write(string.format("soak: rank %d, %d measured rounds: RSS %+d KiB%s\n", me, i,
                                (rss - before.rss) // 1024,
                                before.heap_in_use and string.format(", malloc in use %+d KiB",
                                  (info.heap_in_use - before.heap_in_use) // 1024) or ""))
end
local t0 = gcsh.wtime()
for i = 1, ROUNDS do
  round(warm + i)
  if EVERY_MEASURED and i % EVERY == 0 and i < ROUNDS then say_growth(i) end
end
c:barrier()
local seconds = gcsh.wtime() - t0
local after = sample()
if MAPS then
  local grown = mappings_grown(maps_before, mappings())
  io.stderr:write(string.format("soak: rank %d's mappings that changed:\n%s\n", me,
                                #grown > 0 and table.concat(grown, "\n") or "  (none)"))
end

local measured = ROUNDS
local rss_growth = after.rss - before.rss
local per_100 = rss_growth * 100 / measured
print(string.format("rank %d: %d rounds (%s), %.1f rounds/s; after %d warm-up rounds: "
                    .. "RSS %+d KiB (%+.1f KiB per 100; shared %+d KiB), fds %+d, threads %+d, /dev/shm %+d%s",
                    me, measured, table.concat(usable, "+"), measured / seconds, warm,
                    rss_growth // 1024, per_100 / 1024, (after.shmem - before.shmem) // 1024, after.fds - before.fds,
                    after.threads - before.threads, after.shm - before.shm,
                    before.device and string.format(", device (whole GPU) %+d KiB",
                                                    (after.device - before.device) // 1024) or "")
      .. (before.heap_in_use and string.format("; malloc: in use %+d KiB, held %+d KiB",
                                               (after.heap_in_use - before.heap_in_use) // 1024,
                                               (after.heap_held - before.heap_held) // 1024) or "")
      .. (SANITIZED and " (ASan: RSS not checked)" or ""))

H.truthy(SANITIZED or per_100 <= RSS_PER_100,
         string.format("RSS grew %.1f KiB per 100 rounds (at most %d)", per_100 / 1024,
                       RSS_PER_100 // 1024))
-- no growth (one fewer is a file some thread held open at the first look)
local function no_growth(what, b, a)
  H.truthy(a <= b, string.format("%s grew from %d to %d after the warm-up", what, b, a))
end
-- the fds open now that were not before, named, when their count grew
local function new_fds()
  local old = {}
  for _, l in ipairs(before.fd_list) do old[l] = true end
  local new = {}
  for _, l in ipairs(after.fd_list) do if not old[l] then new[#new + 1] = l end end
  return table.concat(new, ", ")
end
H.truthy(after.fds <= before.fds, string.format("open fds grew from %d to %d after the warm-up (new: %s)",
                                                before.fds, after.fds, after.fds > before.fds and new_fds() or ""))
no_growth("threads", before.threads, after.threads)
no_growth("/dev/shm files mapped or open", before.shm, after.shm)
if before.device then
  H.truthy(after.device - before.device <= DEVICE_BUDGET,
           string.format("device memory in use on the whole GPU grew %d KiB (at most %d)",
                         (after.device - before.device) // 1024, DEVICE_BUDGET // 1024))
end
