-- step.window on the host backend: a window's registration stepped one
-- stage per st:next() (the stages c:window() runs), what each step prints,
-- the usable window after the last one, st:run() and its test of the
-- window, st:reset(), failed steps leaving nothing registered, the check
-- that every rank is at the same step, and bad arguments.  Runs at 1, 2 and
-- 4 ranks, and under GCSH_RANKS_PER_NODE=2 (tests/sh/window.sh), where the
-- team is the emulated node.  Failures injected into a stage and Ctrl-C
-- during one: tests/sh/window_step.sh.
local H = require "harness"

local c = comm.world()
local T = H.team(c)
local me, n = T.me, T.n

-- What fn printed, line by line (print is replaced meanwhile).
local function printed(fn)
  local lines, real = {}, print
  print = function(...)
    local parts = table.pack(...)
    for i = 1, parts.n do parts[i] = tostring(parts[i]) end
    for line in (table.concat(parts, "\t", 1, parts.n) .. "\n"):gmatch("(.-)\n") do
      lines[#lines + 1] = line
    end
  end
  local ok, err = pcall(fn)
  print = real
  if not ok then error(err, 0) end
  return lines
end

local function lines_of(text)
  local lines = {}
  for line in ((text or "") .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = line end
  if lines[#lines] == "" then lines[#lines] = nil end
  return lines
end

-- What fn made the stepper st say: what it printed, which every rank prints
-- alike (the shell folds it) and keeps in st.text.
local function said(st, fn)
  local shown = printed(fn)
  H.values(shown, lines_of(st.text), nil, "what is printed is st.text")
  local all = c:agree(table.concat(shown, "\n"))
  for r = 1, n do H.eq(all[r], all[1], "every rank prints the same text") end
  return shown
end

local function has(lines, plain, what)
  for _, line in ipairs(lines) do
    if line:find(plain, 1, true) then return line end
  end
  error("check failed: " .. what .. ": no line holds '" .. plain .. "' in:\n" ..
        table.concat(lines, "\n"), 2)
end

local function count(lines, pattern)
  local k = 0
  for _, line in ipairs(lines) do
    if line:find(pattern) then k = k + 1 end
  end
  return k
end

local function ranks_text(list)
  local parts, i = {}, 1
  while i <= #list do
    local j = i
    while j < #list and list[j + 1] == list[j] + 1 do j = j + 1 end
    parts[#parts + 1] = i == j and tostring(list[i]) or (list[i] .. "-" .. list[j])
    i = j + 1
  end
  return table.concat(parts, ",")
end
local team_text = ranks_text(T.members)
local one_team = T.size == n

-- ---- before the first step -------------------------------------------------
local st = step.window(c, 1024)
H.eq(st.steps, 3, "steps: the check, segment, peers")
H.eq(st.step, 0, "step before the first")
H.eq(st.algo, "register-host", "algo")
H.eq(st.kind, "host", "kind")
H.eq(st.n, 1024, "n")
H.eq(st.dtype, "f32", "dtype")
H.eq(st.window, nil, "no window before the last step")
H.eq(st.seq, nil, "no sequence number before the check")
H.values(st.names, { "check", "segment", "peers" }, nil, "names")
H.truthy(tostring(st):find("step 0 of 3", 1, true), "tostring: " .. tostring(st))
local out = said(st, function() st:show() end)
H.values(out, { "register-host: a window (1024 f32), step 0 of 3", "  1 check     next",
                "  2 segment", "  3 peers" }, nil, "show at step 0")

-- ---- step 1: the check -----------------------------------------------------
out = said(st, function() st:next() end)
H.eq(out[1], "step 1/3 check", "step 1 heading")
local seq = st.seq
H.truthy(math.type(seq) == "integer", "a sequence number after the check")
H.eq(out[2], string.format("  every rank asks for window #%d: 1024 f32, kind host", seq), "step 1")
-- the check board decides on one node, rank 0 when a member is slow to post
local PATHS = { "  fingerprints agree: compared on the node's check board",
                "  fingerprints agree: compared by rank 0",
                "  fingerprints agree: compared on the node's check board and by rank 0" }
local path_said -- which of PATHS, compared across ranks at the end
for i, line in ipairs(PATHS) do if out[3] == line then path_said = i end end
H.truthy(path_said, out[3])
H.eq(out[4], "  proposals exchanged: n, dtype, kind and seq agree", "step 1 proposals")
H.truthy(out[5]:match("^  %d+ KiB per rank: 4 KiB of data %+ %d+ B of kernel state$"), out[5])
H.eq(out[6], "    (ll slots and sync words), rounded up to the 4 KiB granularity", "step 1 rounding")
H.eq(#out, 6, "step 1 lines")
H.eq(st.step, 1, "step after the check")
H.eq(st.window, nil, "no window after the check")
H.truthy(tostring(st):find(string.format("window #%d (1024 f32), step 1 of 3", seq), 1, true), tostring(st))

-- ---- step 2: the segment -----------------------------------------------------
out = said(st, function() st:next() end)
H.eq(out[1], "step 2/3 segment", "step 2 heading")
local split = string.format("MPI_Comm_split by node: team %s on node", team_text)
local line = has(out, split, "the team")
H.truthy(one_team == (line:find("  MPI_Comm_split", 1, true) == 1),
         "the team line is labelled only with several teams: " .. line)
-- 4 KiB of data, the "ll" area (kll.h: 256 + 2 x slots x (8 KiB of ll
-- lines + 35 ll128 lines of 128 B)) and 128 B of sync words, in whole pages
local slice_kib = (4096 + 256 + 2 * math.min(c.size, 16) * (8192 + 35 * 128) + 128 + 4095) // 4096 * 4
H.eq(count(out, string.format("MPI_Win_allocate_shared: one segment, %d KiB per member", slice_kib)), 1,
     "lines alike on every rank are printed once")
has(out, "MPI_Win_lock_all: passive access for the window's life", "lock_all")
local slices = count(out, "my slice at 0x%x+ %(in my own address space%)$")
if n == 1 then
  H.eq(slices, 1, "one rank: one slice line")
  has(out, "  my slice at 0x", "one rank: no rank label")
else
  H.eq(slices, n, "a slice line per rank (addresses differ)")
  has(out, string.format("  rank %d: my slice at 0x", me), "my own slice line, labelled")
end
H.eq(st.step, 2, "step after the segment")
H.eq(st.window, nil, "no window before the last step")
out = said(st, function() st:show() end)
H.values(out, { string.format("register-host: window #%d (1024 f32), step 2 of 3", seq),
                "  1 check     done", "  2 segment   done", "  3 peers     next" }, nil,
         "show at step 2")

-- ---- step 3: the peers; then a usable window --------------------------------
out = said(st, function() st:next() end)
H.eq(out[1], "step 3/3 peers", "step 3 heading")
has(out, string.format("MPI_Win_shared_query x %d: the peer pointer table", T.size), "query")
if T.size > 1 then
  has(out, string.format("member i at member 0's slice + i x %d KiB, in each rank's own mapping", slice_kib), "the peer table's layout")
else
  has(out, "one member: the table is my own slice", "a team of one")
end
has(out, string.format("zeroed my %d KiB, MPI_Win_sync", slice_kib), "zeroed")
H.eq(out[#out], string.format("  st.window is ready: window #%d, registered on every rank", seq),
     "the last line")
H.eq(st.step, 3, "every step done")
local w = st.window
H.eq(w.seq, seq, "the window is the one checked")
H.eq(w.n, 1024, "w.n")
H.eq(w.dtype, "f32", "w.dtype")
H.eq(w.kind, "host", "w.kind")
H.values(w.team, T.members, nil, "w.team")
H.eq(w:tensor():sum(), 0, "a new window reads zeros")
w:tensor():fill(me + 1)
c:barrier()
H.eq(w:peer(T.next)[1023], T.next + 1, "a peer's slice through the stepped window")
c:barrier()
H.truthy(w:info().handle:find("MPI_Win_allocate_shared", 1, true), "info.handle")
out = said(st, function() st:next() end)
H.values(out, { "all 3 steps are done (st:reset() starts again)" }, nil, "next after the end")

-- run() on a finished stepper tests the window again (and zeroes it)
local ok
out = said(st, function() ok = st:run() end)
H.eq(ok, true, "run: the window works")
H.values(out, { string.format("window #%d works: each rank wrote its rank into its slice and", seq),
                string.format("  read the %d slices of its team back", T.size) }, nil, "run's lines")
H.eq(w:tensor():sum(), 0, "run leaves the window zeroed")

-- a window made by c:window() next takes the next number
local plain = c:window(4)
H.eq(plain.seq, seq + 1, "c:window after the stepper")
plain:free()

-- ---- reset frees what was registered and starts again ---------------------------
local view = w:peer(T.next)
out = said(st, function() st:reset() end)
H.values(out, { string.format("reset: window #%d released on every rank (it was at step 3 of 3)",
                              seq) }, nil, "reset's line")
H.raises(function() return view[0] end, "attempt to use a freed window", "views after reset")
H.raises(function() return w.n end, "attempt to use a freed window", "the window after reset")
H.eq(st.step, 0, "reset: step 0")
H.eq(st.window, nil, "reset: no window")
H.eq(said(st, function() st:reset() end)[1], nil, "a second reset prints nothing")
out = said(st, function() ok = st:run() end)
H.eq(ok, true, "run from step 0")
H.eq(count(out, "^step %d/3 "), 3, "run prints every step")
H.eq(st.seq, seq + 2, "a new registration, a new number")
H.truthy(st.window ~= w, "a new window handle")
said(st, function() st:reset() end)

-- reset part-way: what the stages registered goes (the comm can be freed)
local sub = c:split(0)
local sst = step.window(sub, 100, "i32")
printed(function() sst:next() sst:next() end)
H.raises(function() sub:free() end, "still registered on this comm", "a stepper part-way holds the comm")
out = said(sst, function() sst:reset() end)
H.truthy(out[1]:find("released on every rank (it was at step 2 of 3)", 1, true), out[1])
sub:free()

-- next(k): several steps in one call; run{quiet=true} keeps st.text, prints nothing
local multi = step.window(c, 16)
out = said(multi, function() multi:next(2) end)
H.eq(out[1], "step 1/3 check", "next(2): the first step")
has(out, "step 2/3 segment", "next(2): and the second, in one text")
H.eq(multi.step, 2, "next(2) took two steps")
out = said(multi, function() multi:next(5) end)
H.eq(out[1], "step 3/3 peers", "next(5) with one step left")
H.eq(multi.step, 3, "no step past the last")
said(multi, function() multi:reset() end)
local shown = printed(function() ok = multi:run({ quiet = true }) end)
H.eq(ok, true, "a quiet run")
H.eq(#shown, 0, "a quiet run prints nothing")
H.truthy(multi.text:find("window #%d+ works"), "a quiet run keeps st.text: " .. multi.text)
said(multi, function() multi:reset() end)
H.raises(function() multi:next(0) end, "next: k (steps) must be an integer >= 1, got 0")
H.raises(function() multi:next("x") end, "next: k (steps) must be an integer >= 1, got x")
H.raises(function() multi:run({ loud = true }) end, "run: unknown option 'loud' (valid: quiet)")
H.raises(function() multi:run(3) end, "run: options must be a table (valid keys: quiet), got number")
H.eq(multi.step, 0, "bad arguments take no step")

-- ---- every rank is checked to be at the same step ---------------------------------
if n > 1 then
  local a, b = step.window(c, 8), step.window(c, 8, "i32")
  printed(function() a:next() b:next() a:next() end)
  -- rank 0 steps a (at step 2), the others b (at step 1): caught, nothing runs
  H.raises(function()
    if me == 0 then a:next() else b:next() end
  end, "collective mismatch: window:step", "steppers at different steps")
  H.eq(a.step, 2, "a unchanged")
  H.eq(b.step, 1, "b unchanged")
  printed(function() a:reset() b:reset() end)
  -- the check itself: a different n on one rank is the same error on every rank
  local bad = step.window(c, me == n - 1 and 9 or 8)
  local err = H.raises(function() bad:next() end, "ranks disagree")
  H.truthy(err:find(string.format("[%d] 9 f32 host", n - 1), 1, true), err)
  H.eq(bad.step, 0, "a failed check leaves step 0")
  H.eq(bad.window, nil, "and no window")
end
local after = c:window(4)
local seqs = c:agree(tostring(after.seq))
for r = 1, n do H.eq(seqs[r], tostring(after.seq), "sequence numbers agree after a failed check") end
after:free()

-- ---- every dtype, and a slice of several MiB ------------------------------------------
for _, dt in ipairs(tensor.dtypes) do
  local d = step.window(c, 5, dt)
  printed(function() ok = d:run() end)
  H.eq(ok, true, dt .. " window works")
  H.eq(d.window.dtype, dt, dt .. " window's dtype")
  printed(function() d:reset() end)
end
local big = step.window(c, (1 << 20) + 3, "f64")
printed(function() ok = big:run() end)
H.eq(ok, true, "an 8 MiB slice")
H.eq(big.window:info().alloc_bytes % 4096, 0, "whole pages")
printed(function() big:free() end)
H.eq(big.step, 0, "free is reset")

-- options as a table: kind from it (and the strings the reader leaves behind
-- never take the stepper's place: strings keep their own metatable)
local opt = step.window(c, 4, "u8", { kind = "host" })
H.eq(("abc"):upper(), "ABC", "strings keep their metatable")
H.eq(getmetatable(opt._s).__name, "winstage", "the stepper's C half")
H.eq(opt.kind, "host", "kind from the options")
printed(function() ok = opt:run() end)
H.eq(ok, true, "a window with options")
printed(function() opt:reset() end)

-- ---- bad arguments: clear errors, nothing registered ------------------------------------
H.raises(function() step.window(c, 0) end,
         "bad argument #2 to 'step.window' (n must be 1..1099511627776, got 0)")
H.raises(function() step.window(c, 2.5) end, "bad argument #2 to 'step.window' (n must be an integer, got 2.5)")
H.raises(function() step.window(c) end, "bad argument #2 to 'step.window' (number expected, got nil)")
H.raises(function() step.window(c, 4, "f33") end,
         "bad argument #3 to 'step.window' (unknown dtype 'f33' (valid: f64 f32 f16 bf16 i64 i32 u32 u8 i8))")
H.raises(function() step.window(c, 4, 7) end, "bad argument #3 to 'step.window' (string expected, got number)")
H.raises(function() step.window(c, 4, "f32", { kind = "gpu" }) end,
         "bad argument #4 to 'step.window' (unknown kind 'gpu' (valid: host nccl vmm))")
H.raises(function() step.window(c, 4, "f32", { knd = "host" }) end,
         "bad argument #4 to 'step.window' (unknown option 'knd' (valid: kind))")
H.raises(function() step.window(c, 4, "f32", "host") end,
         "bad argument #4 to 'step.window' (table expected, got string)")
H.raises(function() step.window(nil, 4) end, "bad argument #1 to 'step.window' (comm expected, got nil)")
H.raises(function() step.window(c, 1 << 40, "f64") end, "exceed the host kind's limit here")

-- windows and signals still register (the same stages, back to back)
local s = c:signals(2)
s:add(T.next, 0, 1)
s:wait(0, 1)
s:free()

-- the check step's fingerprint line was the same on every rank (each
-- rank's path went out with its proposal), even when the paths differed
local lo = tensor.new(1, "i32"):fill(path_said)
local hi = tensor.new(1, "i32"):fill(path_said)
c:allreduce(lo, "min")
c:allreduce(hi, "max")
H.eq(lo[0], hi[0], "the fingerprint line is the same on every rank")
print("window_step ok")
