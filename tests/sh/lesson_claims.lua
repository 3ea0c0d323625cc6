-- Every lesson walked through the shell at N ranks, the way tests/sh/lessons.sh
-- runs it (lua5.4 tests/sh/lesson_claims.lua GCSH N), and what its text
-- claims about the output checked against the output: a check per claim.
--
-- One session per rank count walks every lesson: .lesson L, .next through
-- every part, a wrong answer at the exercise's turn (its feedback: one
-- folded line per message, at most 3 lines at 80 columns, no traceback),
-- then .part 2, .prev and .again, then .lesson L again and collectgarbage()
-- (a reopened lesson leaves nothing unfreed: no "garbage-collected"
-- warning).  Markers printed between the stages cut the output apart.
--
-- Prints "pass NAME" or "fail NAME" and detail lines "  | ..." for
-- tests/sh/lessons.sh to count.
local GCSH, N = arg[1], tonumber(arg[2])
local ALL = N == 1 and "0" or ("0-" .. (N - 1))
local lib = dofile("tests/sh/lesson_lib.lua")
local result, marker = lib.result, lib.marker

-- ---- rank sets as a stepper's cells fold them ------------------------------------

-- "0-2,5" for a list of ranks as step_cells.lua's ranks_text writes it:
-- the shell's fold (lesson_lib.lua's ranges), but a pair is "0,1".
local function ranges(list)
  return (lib.ranges(list):gsub("(%d+)%-(%d+)", function(a, b)
    if tonumber(b) == tonumber(a) + 1 then return a .. "," .. b end
  end))
end

local function ranks_where(pred)
  local list = {}
  for r = 0, N - 1 do if pred(r) then list[#list + 1] = r end end
  return ranges(list)
end

-- The text a stepper cell shows for every rank's data (bits 0..N-1).
local function all_ranks_cell()
  return ranges((function() local t = {} for r = 0, N - 1 do t[#t + 1] = r end return t end)())
end

local function ceil_log2(n)
  local s = 0
  while (1 << s) < n do s = s + 1 end
  return s
end

-- ---- the session ---------------------------------------------------------------------

-- LESSONS="19 20" in the environment walks those only (a quicker run
-- while a lesson is written).
local ONLY = {}
for num in (os.getenv("LESSONS") or ""):gmatch("%d+") do ONLY[tonumber(num)] = true end
local LESSONS, EVERY = {}, {}
for name in io.popen("ls lua/tutorial"):lines() do
  local num = tonumber(name:match("^(%d%d)%-.*%.lua$"))
  if num then EVERY[#EVERY + 1] = num end
  if num and (next(ONLY) == nil or ONLY[num]) then
    LESSONS[#LESSONS + 1] = { num = num, file = "lua/tutorial/" .. name }
  end
end
-- the lesson after each one (nil after the last), of every lesson
local NEXT = {}
for i, num in ipairs(EVERY) do NEXT[num] = EVERY[i + 1] end

-- A lesson's parts: {title=, exercise=} in order (from its "---" lines).
local function parts_of(file)
  local parts = {}
  for line in io.lines(file) do
    local title = line:match("^%-%-%-%s*(.-)%s*$")
    if title then parts[#parts + 1] = { title = title, exercise = title:match("^exercise") ~= nil } end
  end
  return parts
end

-- What a learner types wrong at each lesson's exercise, and a piece of
-- the one line that must come back.
local WANT_SUM = N * (N - 1) // 2
local WRONG = {
  [1] = { 'check_sum(tostring(size * (size - 1) // 2))',
          string.format('my_sum is "%d" (a string), want %d (a number)', WANT_SUM, WANT_SUM) },
  [2] = { "check_ranks(tensor.new(size):fill(1))", "element i is i on every rank: [0] is 1, want 0" },
  [4] = { "check_copy_left(function(w, out) end)", "not yet: out holds the left neighbour's slice:" },
  [6] = { "check_oneshot(function(w, out) end)", "not yet: your one-shot equals c:allreduce:" },
  [7] = { "check_twoshot(function(w) end)", "not yet: every slice holds the sum after your two-shot:" },
  [8] = { "check_loads(function() return 0 end)",
          string.format("loads(plan, rank) is 0 (a number), want %d (a number)", 2 * (N - 1) * 2 * N // N) },
  [9] = { "check_mc(function() end)", "not yet: every slice holds the sum after your multicast" },
  [10] = { "check_pass(function() end)", "my signal word 0, 2 s after your put, is 0 (a number), want 1" },
  [11] = { "check_factor(function() return 0 end)", 'busbw_factor("allreduce", ' .. N .. ') is 0 (a number)' },
  [13] = { "check_tree_steps(function(n) return n end)", "tree_steps(1) is 1 (a number), want 0 (a number)" },
  [14] = { "check_ll_bytes(function(n) return n end)", "ll_bytes(1) is 1 (a number), want 16 (a number)" },
  [15] = { "check_crossover(function() return 0 end)", "crossover(RING.LL, RING.SIMPLE) is 0 (a number)" },
  [16] = { "check_must_wait(function() return false end)", "must_wait(64, 0) is false (a boolean), want true (a boolean)" },
  [17] = { "check_halves(function(t) end)", "not yet: a reduce-scatter, then an all-gather, is an all-reduce:" },
  [18] = { "check_fit(function() return 0, 0 end)", "not yet: my_fit's latency is 0 (a number), want 5 (a number)" },
  [19] = { "check_wire(function(p, n, k) return k * n end)",
           'not yet: wire_bytes("simple", 8, 2) is 16 (a number), want 32 (a number)' },
  [20] = { "check_steps(function(a, n) return n end)", 'not yet: steps("tree", 3) is 3 (a number), want 4 (a number)' },
  [21] = { "check_member(function(r) return 0 end)", "not yet: member(1) is 0 (a number), want 1 (a number)" },
}

local function session_input()
  local lines = {}
  local function add(l) lines[#lines + 1] = l end
  for _, l in ipairs(LESSONS) do
    local parts = parts_of(l.file)
    l.parts = parts
    add(".lesson " .. l.num)
    for i, part in ipairs(parts) do
      if l.num == 12 and part.title == "The hang report" then add(".timeout 1") end
      add(".next")
      if part.exercise and WRONG[l.num] then
        add(marker("wrong " .. l.num))
        add(WRONG[l.num][1])
        add(marker("after wrong " .. l.num))
      end
    end
    add(".timeout 10")
    add(marker("nav " .. l.num))
    add(".part 2")
    add(marker("prev " .. l.num))
    add(".prev")
    add(marker("again " .. l.num))
    add(".again")
    add(marker("reopen " .. l.num))
    add(".lesson " .. l.num)
    add("collectgarbage() collectgarbage()")
    add(marker("done " .. l.num))
  end
  return lines
end

-- ---- cutting the output apart ------------------------------------------------------------

local between = lib.between

-- A lesson's walk: from "Lesson L:" to the marker before .part 2.
local function walk_of(text, num)
  local s = (text:sub(1, 1) == "L" and num == LESSONS[1].num) and 1
            or text:find("\nLesson " .. num .. ": ", 1, true)
  if not s then return "" end
  local rest = "\n" .. text:sub(s)
  local stop = rest:find("%[[%d,%-]+%] === nav " .. num .. "\n")
  return stop and rest:sub(1, stop - 1) or rest
end

-- Part i of a walk: its header line to the next header (or the end).
local function part_of(walk, num, i)
  local head = "[" .. num .. "." .. i .. "] "
  local s = walk:find("\n" .. head, 1, true)
  if not s then return "" end
  local rest = walk:sub(s + 1)
  local stop = rest:find("\n%[" .. num .. "%.%d+%] ")
  return stop and rest:sub(1, stop) or rest
end

local function has(text, plain) return text:find(plain, 1, true) ~= nil end

-- The text with wrapped lines joined: a line indented 2 or more after its
-- prefix (a continuation, or a grid row) joins the one above with a space.
local function flat(text)
  return (text:gsub("\n%[[%d,%-]+%]   +", " "))
end

-- Whether some line rank 0 printed (a stepper's, show's) has a mark.
local function marked(text, mark)
  for line in text:gmatch("[^\n]+") do
    if line:find("^%[0%]") and line:find(mark, 1, true) then return true end
  end
  return false
end

-- ---- the claims of each lesson --------------------------------------------------------------
--
-- CLAIMS[L](part, walk) -> list of {name, ok [, detail]}: part(i) is the
-- text of part i of lesson L's walk.

local CLAIMS = {}

local function line_for(ranks, text) return "[" .. ranks .. "] " .. text end
local function shows(t, ranks, text) return has(t, "\n" .. line_for(ranks, text) .. "\n") end

CLAIMS[1] = function(part)
  local c = {}
  local p1 = part(1)
  local every = true
  for r = 0, N - 1 do every = every and shows(p1, N == 1 and "0" or tostring(r), "hello from rank " .. r .. " of " .. N) end
  if N == 1 then every = has(p1, "\nhello from rank 0 of 1\n") end
  c[#c + 1] = { "1.1: one line per rank, each under its own prefix", every, p1 }
  local p2 = part(2)
  local evens, odds = ranks_where(function(r) return r % 2 == 0 end), ranks_where(function(r) return r % 2 == 1 end)
  c[#c + 1] = { "1.2: the same text comes back once, under [" .. ALL .. "]", shows(p2, ALL, "the same text on every rank"), p2 }
  c[#c + 1] = { "1.2: the second line splits the ranks in two groups",
                shows(p2, evens, "even rank") and shows(p2, odds, "odd rank"), p2 }
  local p3 = part(3)
  c[#c + 1] = { "1.3: one command's output folds as a whole (each group prints both lines)",
                has(p3, line_for(evens, "the same text") .. "\n" .. line_for(evens, "even"))
                and has(p3, line_for(odds, "the same text") .. "\n" .. line_for(odds, "odd"))
                and not shows(p3, ALL, "the same text"), p3 }
  c[#c + 1] = { "1.4: a checkpoint prints 'checkpoint: ...'", shows(part(4), ALL, "checkpoint: rank is 0 .. size-1"), part(4) }
  c[#c + 1] = { "1.5: only the last rank prints", shows(part(5), tostring(N - 1), "only the last rank says this"), part(5) }
  c[#c + 1] = { "1.7: the solution is right", shows(part(7), ALL, "right: the ranks add up to " .. WANT_SUM), part(7) }
  return c
end

CLAIMS[2] = function(part)
  local sum = N * (N + 1) // 2
  local t4 = string.format("tensor(f32, 4, host) [%d, %d, %d, %d]", sum, sum, sum, sum)
  local g = {}
  for r = 0, N - 1 do g[#g + 1] = r; g[#g + 1] = r end
  local tg = string.format("tensor(f32, %d, host) [%s]", 2 * N, table.concat(g, ", "))
  return {
    { "2.2: every element is 1 + ... + size, on every rank", shows(part(2), ALL, t4), part(2) },
    { "2.3: rank r's two elements at 2r and 2r+1", shows(part(3), ALL, tg), part(3) },
    { "2.4: max gives the largest rank", shows(part(4), ALL, "checkpoint: the largest rank"), part(4) },
    { "2.6: the solution is right", shows(part(6), ALL, "right: element i is i on every rank"), part(6) },
  }
end

CLAIMS[3] = function(part)
  local p4 = part(4)
  local addresses, distinct = {}, 0
  for a in p4:gmatch("my slice at (0x%x+) %(in my own address space%)") do
    if not addresses[a] then distinct = distinct + 1; addresses[a] = true end
  end
  return {
    { "3.1: a host window of 8 i32 per rank", shows(part(1), ALL, "host window, 8 i32 per rank"), part(1) },
    { "3.3: every rank's value differs: nothing marked", not marked(part(3), "*"), part(3) },
    { "3.4: each rank's own address, different from rank to rank", distinct == N, p4 },
    { "3.4: slices one after another in each rank's mapping",
      has(p4, "member i at member 0's slice + i x 4 KiB, in each rank's own mapping") or N == 1, p4 },
    { "3.5: a freed window refuses use", shows(part(5), ALL, "checkpoint: a freed window refuses use"), part(5) },
  }
end

CLAIMS[4] = function(part)
  local ok = true
  for r = 0, N - 1 do
    local right = (r + 1) % N
    ok = ok and has(part(2), string.format("rank %d's element 3 is %d", right, right * 100 + 3))
  end
  return {
    { "4.2: each rank reads element 3 of its right neighbour", ok, part(2) },
    { "4.3: every rank's value differs: nothing marked", not marked(part(3), "*"), part(3) },
    { "4.6: the solution is right", shows(part(6), ALL, "right: out holds the left neighbour's slice"), part(6) },
  }
end

CLAIMS[5] = function(part)
  local p3 = part(3)
  local early = flat(p3):match("r0 read r" .. (N - 1) .. "%.c%d+ too early, before step %d+ wrote it")
  return {
    { "5.1: each rank read its left neighbour's value after the signal",
      shows(part(1), "0", "from my left neighbour: " .. (1000 + N - 1)), part(1) },
    { "5.3: rank 0 reads the late rank's chunk too early (a note names it)", early ~= nil, p3 },
    { "5.3: the result is wrong", has(p3, "result: WRONG") and not has(p3, "checkpoint FAILED"), p3 },
    { "5.3: at 2 ranks, the late rank also reads too late, data counted twice",
      N ~= 2 or (has(flat(p3), "r1 read r0.c1 too late") and has(p3, "1+1 (rank 1's data twice)")), p3 },
    { "5.4: one step per line: nothing wrong, the stepper says why",
      has(part(4), "step 1 of ") and not part(4):find("%d!") and has(part(4), "(race options: the shell waits"), part(4) },
    { "5.5: with its barriers, right again", shows(part(5), ALL, "checkpoint: with its barriers, a late rank only delays"), part(5) },
  }
end

-- "r*" or the names, as the stepper prints every rank's chunk
CLAIMS[6] = function(part)
  local sum = N * (N + 1) // 2
  local p8 = part(8)
  local slots = true
  for r = 0, N - 1 do
    local want = {}
    for s = 0, N - 1 do want[#want + 1] = s .. " f1*" end
    slots = slots and p8:find("r" .. r .. " ll  " .. table.concat(want, "%s+"):gsub("%*", "%%*")) ~= nil
  end
  return {
    { "6.1: every element is 1 + ... + size",
      has(part(1), "[" .. ALL .. "] tensor(f32, 8, host) [" .. sum), part(1) },
    { "6.4: one-shot's first step reduces into tmp", has(part(4), "step 1 of 2 (reduce)"), part(4) },
    { "6.5: then stores", has(part(5), "step 2 of 2 (store)"), part(5) },
    { "6.7: the ll kernel is right", shows(part(7), ALL, "checkpoint: kernel.allreduce ll"), part(7) },
    { "6.8: ll's phases, each its own step",
      has(p8, "step 1 of 2 (store with flags)") and has(p8, "step 2 of 2 (reduce as flags arrive)"), p8 },
    { "6.8: slot S of every rank holds rank S's data with its flag", slots, p8 },
    { "6.8: then every rank holds every rank's data", has(p8, "r0     " .. all_ranks_cell() .. "*"), p8 },
  }
end

CLAIMS[7] = function(part)
  local p1, p2 = part(1), part(2)
  local first = tonumber(p1:match("rank 0 owns %[0, (%d+)%)"))
  local a, b = p1:match("rank 1 owns %[(%d+), (%d+)%)")
  local diag = true
  for r = 0, N - 1 do
    local row = p2:match("\n%[0%]   r" .. r .. "  ([^\n]*)")
    local cells = {}
    for cell in (row or ""):gmatch("%S+") do cells[#cells + 1] = cell end
    for c = 0, N - 1 do
      local want = c == r and (all_ranks_cell() .. "*") or tostring(r)
      diag = diag and cells[c + 1] == want
    end
  end
  return {
    { "7.1: rank 0 owns one element more", N == 1 or (first and a and first == (b - a) + 1), p1 },
    { "7.2: two steps, reduce-scatter then all-gather",
      has(p2, "step 1 of 2 (reduce-scatter)") and has(p2, "step 2 of 2 (all-gather)"), p2 },
    { "7.2: after the reduce-scatter, rank r's own chunk r holds every rank's data", diag, p2 },
    { "7.4: the solution is right", has(part(4), "right: every slice holds the sum after your two-shot"), part(4) },
  }
end

CLAIMS[8] = function(part, walk)
  local steps = 2 * (N - 1)
  local p1 = part(1)
  local moves = true
  for r = 0, N - 1 do
    local left, c = (r - 1) % N, (r - 2) % N
    moves = moves and has(p1, string.format("r%d: sum(r%d.c%d, r%d.c%d) -> r%d.c%d", r, left, c, r, c, r, c))
  end
  local rs, ag = 0, 0
  for _ in (part(1) .. part(2)):gmatch(": step %d+ of " .. steps .. " %(reduce%-scatter%)") do rs = rs + 1 end
  for _ in part(3):gmatch(": step %d+ of " .. steps .. " %(all%-gather%)") do ag = ag + 1 end
  local loads = 2 * (N - 1) * 2 * N // N
  return {
    { "8: 2(N-1) steps", has(walk, "checkpoint: 2(N-1) steps"), walk },
    { "8.1: each rank adds its left neighbour's chunk to its own", moves, p1 },
    { "8.1-8.2: N-1 reduce-scatter steps", rs == N - 1, part(1) .. part(2) },
    { "8.3: N-1 all-gather steps", ag == N - 1, part(3) },
    { "8.5: each rank loads 2(N-1)/N of n", has(part(5), "right: each rank loads " .. loads .. " elements"), part(5) },
  }
end

CLAIMS[9] = function(part)
  local p3 = part(3)
  return {
    { "9.3: ld_reduce, then store, each a step",
      has(p3, "step 1 of 2 (ld_reduce)") and has(p3, "step 2 of 2 (store)"), p3 },
    { "9.3: the ld_reduce lands in the rank's own scratch row", has(p3, "r0 tmp  " .. all_ranks_cell() .. "*"), p3 },
    { "9.5: the solution is right", has(part(5), "right: every slice holds the sum after your multicast"), part(5) },
  }
end

CLAIMS[10] = function(part)
  return {
    { "10.1: the put landed before its signal", shows(part(1), ALL, "checkpoint: my left neighbour's put landed before its signal"), part(1) },
    { "10.3: both pieces arrived", shows(part(3), ALL, "checkpoint: both pieces from my left neighbour arrived"), part(3) },
    { "10.5: the solution is right", has(part(5), "right: the left neighbour's tensor arrived, signalled"), part(5) },
  }
end

CLAIMS[11] = function(part)
  local p1 = part(1)
  local rows = 0
  for line in p1:gmatch("[^\n]+") do
    if line:match("^%[0%] +%d+ +[%d.]+ +[%d.]+ +[%d.]+ +0$") then rows = rows + 1 end
  end
  return {
    { "11.1: three sizes, none wrong", rows == 3, p1 },
    { "11.1: where the times come from", has(p1, "measured on this machine's CPUs (host backend"), p1 },
    { "11.2: algbw = size / time", shows(part(2), ALL, "checkpoint: algbw = size / time"), part(2) },
    { "11.3: busbw = algbw * 2(N-1)/N", shows(part(3), ALL, "checkpoint: busbw = algbw * 2(N-1)/N for all-reduce"), part(3) },
    { "11.4: a graph replays its calls", shows(part(4), ALL, "checkpoint: three replays: three all-reduces"), part(4) },
    { "11.4: graph replays timed, results right", shows(part(4), ALL, "checkpoint: 100 calls captured, replayed 10 times, results right"), part(4) },
    { "11.4: the issue times, with and without", has(part(4), "[0] host issue per 8 B all-reduce: "), part(4) },
    { "11.6: the solution is right", has(part(6), "right: the factors of nccl-tests"), part(6) },
  }
end

CLAIMS[12] = function(part)
  local p4 = part(4)
  local others = N == 2 and "0" or ("0-" .. (N - 2))
  return {
    { "12.1: the mismatch is the same error on every rank", has(part(1), "[" .. ALL .. "] collective mismatch: allreduce #"), part(1) },
    { "12.3: the error names both calls",
      has(flat(part(3)), "barrier #") and has(flat(part(3)), "[" .. (N - 1) .. "] allreduce #"), part(3) },
    { "12.4: with .timeout 1, a report: the others wait for the signal",
      has(p4, "gcsh:   [" .. others .. "] in signal wait"), p4 },
    { "12.4: and the slow rank sleeps", has(p4, "gcsh:   [" .. (N - 1) .. "] in gcsh.sleep(1.5)"), p4 },
    { "12.5: the barrier gives up, naming the late rank",
      -- 1.0 s, or a little more on a loaded machine
      flat(part(5)):find("waited 1%.%d s for %[" .. (N - 1) .. "%]") ~= nil, part(5) },
  }
end

CLAIMS[13] = function(part)
  local p1 = part(1)
  local want = ceil_log2(N)
  local steps, doubling = 0, true
  for s, held in p1:gmatch(": step (%d+) of " .. want .. " %((%d+) ranks hold it%)") do
    steps = steps + 1
    doubling = doubling and tonumber(held) == math.min(1 << tonumber(s), N)
  end
  return {
    { "13.1: every doubling is shown: ceil(log2 N) steps", steps == want, p1 },
    { "13.1: each step doubles the ranks that hold the data", doubling, p1 },
    { "13.2: the chain takes N-1 steps, N-1 + 1 in 2 pieces",
      shows(part(2), ALL, string.format("steps at size %d: tree %d, chain %d, in 2 pieces %d", N, want, N - 1, N)),
      part(2) },
    { "13.2: every step of the pipeline shown, two pieces in flight in the middle", (function()
        local p2, seen, both = flat(part(2)), 0, N < 3
        for s, moving in p2:gmatch(": step (%d+) of " .. N .. " %((%d) in flight%)") do
          seen = seen + 1
          if tonumber(s) > 1 and tonumber(s) < N and tonumber(moving) == 2 then both = true end
        end
        return seen == N and both
      end)(), part(2) },
    { "13.4: the solution is right", has(part(4), "right: ceil(log2 n)"), part(4) },
  }
end

CLAIMS[14] = function(part)
  local p3 = part(3)
  local faster = {}
  for line in p3:gmatch("[^\n]+") do
    local size, one, ll = line:match("^%[0%] +(%d+) +([%d.]+) +([%d.]+)$")
    if size and tonumber(ll) < tonumber(one) then faster[#faster + 1] = size end
  end
  local said = p3:match("%] ll was the faster at: ([^\n]*)")
  local want = #faster > 0 and table.concat(faster, ", ") .. " B" or "no size"
  return {
    { "14.1: LL stores twice the data", shows(part(1), ALL, "  4096 B of data: LL stores   8192 B, LL128   4480 B"), part(1) },
    { "14.2: a late rank, no barrier: right", has(part(2), "checkpoint: with a late rank and no barrier, the sum is right"), part(2) },
    { "14.3: the sizes named are those where ll's time was lower", said == want, p3 },
    { "14.3: where the times come from", has(p3, "measured on this machine's CPUs"), p3 },
    { "14.4: on the host backend, no NCCL", has(part(4), "host backend: no NCCL here"), part(4) },
    { "14.6: the solution is right", has(part(6), "right: 16 bytes per 8 of data, rounded up"), part(6) },
  }
end

CLAIMS[15] = function(part)
  local p2 = part(2)
  return {
    { "15.1: the line read back", shows(part(1), ALL, "AllReduce of 4096 B: RING with LL on 2 channels"), part(1) },
    { "15.2: LL, then LL128, then SIMPLE as sizes grow",
      has(p2, "1024 B: RING LL ") and has(p2, "1048576 B: RING LL128") and has(p2, "67108864 B: RING SIMPLE"), p2 },
    { "15.4: the solution is right", has(part(4), "right: from 197190 B, ring SIMPLE is no dearer than LL"), part(4) },
    { "15.5: the live part says it needs the cuda backend", has(part(5), "host backend: NCCL chooses only on the cuda backend"), part(5) },
  }
end

CLAIMS[16] = function(part)
  local p8 = part(8)
  local order, at = true, 1
  for _, what in ipairs({ "rung", "look", "run", "done" }) do
    local s, e = p8:find("(call 0: " .. what .. ")", at, true)
    order = order and s ~= nil
    at = e or at
  end
  local rung, ran = true, true
  local after_rung = p8:match("%(call 0: rung%)(.-)%(call 0: look%)") or ""
  local after_run = p8:match("%(call 0: run%)(.-)%(call 0: done%)") or ""
  for r = 0, N - 1 do
    rung = rung and after_rung:find("\n%[0%]   r" .. r .. " +1%* +0 +1 1 1 1%* +waits +" .. r .. "\n") ~= nil
    ran = ran and after_run:find("\n%[0%]   r" .. r .. " +1 +0 +1 1 1 1 +ran call 0 +all%*\n") ~= nil
  end
  return {
    { "16.8: the first call's four steps, in order", order, p8 },
    { "16.8: rung: every rank's entry tagged 1, rung 1, its own data", rung, after_rung },
    { "16.8: run: every rank's region holds every rank's data", ran, after_run },
    { "16.8: both calls right", shows(p8, ALL, "checkpoint: two calls rung, looked at, run and done"), p8 },
  }
end

CLAIMS[17] = function(part)
  local p1, p2 = part(1), part(2)
  local rs, ag = 0, 0
  for _ in p1:gmatch(": step %d+ of " .. (N - 1) .. " %(reduce%-scatter%)") do rs = rs + 1 end
  for _ in p2:gmatch(": step %d+ of " .. (N - 1) .. " %(all%-gather%)") do ag = ag + 1 end
  -- after the last reduce-scatter step, rank r's chunk r holds every rank's data
  local last = p1:match(".*(step " .. (N - 1) .. " of " .. (N - 1) .. ".*)$") or ""
  local diag = true
  for r = 0, N - 1 do
    local row = last:match("\n%[0%]   r" .. r .. "  ([^\n]*)")
    local cells = {}
    for cell in (row or ""):gmatch("%S+") do cells[#cells + 1] = cell end
    diag = diag and cells[r + 1] == all_ranks_cell() .. "*"
  end
  return {
    { "17.1: N-1 reduce-scatter steps", rs == N - 1, p1 },
    { "17.1: then rank r's chunk r holds every rank's data", diag, last },
    { "17.1: the stepper equals c:reducescatter", shows(p1, ALL, "checkpoint: rank r's chunk r equals c:reducescatter's"), p1 },
    { "17.2: N-1 all-gather steps", ag == N - 1, p2 },
    { "17.2: the stepper equals c:allgather", shows(p2, ALL, "checkpoint: every rank's window equals c:allgather's"), p2 },
    { "17.3: the factors", shows(part(3), ALL, string.format("at %d ranks: (N-1)/N = %.3f, 2(N-1)/N = %.3f",
                                                             N, (N - 1) / N, 2 * (N - 1) / N)), part(3) },
    { "17.5: the solution is right", shows(part(5), ALL, "right: a reduce-scatter, then an all-gather, is an all-reduce"), part(5) },
  }
end

CLAIMS[18] = function(part)
  local p1, p2, p3 = part(1), part(2), part(3)
  local rows, faster = 0, {}
  for line in p1:gmatch("[^\n]+") do
    local size, one, ll = line:match("^%[0%] +(%d+) +([%d.]+) +([%d.]+)$")
    if size then
      rows = rows + 1
      if tonumber(ll) < tonumber(one) then faster[#faster + 1] = size end
    end
  end
  local said = p3:match("%] measured: ll was the faster at: ([^\n]*)")
  local model = p3:match("%] the model: ([^\n]*)") or ""
  local forms = model:match("^ll is faster below %d+ B$") or model:match("^ll is faster above %d+ B$")
                or model == "ll is faster at every size" or model == "one-shot is faster at every size"
                or model == "a slope of 0 or less, no crossover to trust here"
  return {
    { "18.1: both algorithms timed at five sizes or more", rows >= 5, p1 },
    { "18.1: where the times come from", has(p1, "measured on this machine's CPUs"), p1 },
    { "18.2: a line fitted to each", shows(p2, ALL, "checkpoint: each line passes through its points' mean")
      and p2:find("%] oneshot +%-?[%d.]+ us %+ n x %-?[%d.]+ us/B\n") ~= nil
      and p2:find("%] ll +%-?[%d.]+ us %+ n x %-?[%d.]+ us/B\n") ~= nil, p2 },
    { "18.3: the sizes named are those where ll's time was lower",
      said == (#faster > 0 and table.concat(faster, ", ") .. " B" or "no size"), p3 },
    { "18.3: the model says where, in one of its forms", forms and true or false, p3 },
    { "18.5: the solution is right", shows(part(5), ALL, "right: 5 us + n x 0.01 us/B"), part(5) },
  }
end

-- "0-2,4" -> {0, 1, 2, 4}
local function rank_list(text)
  local list = {}
  for a, b in text:gmatch("(%d+)%-?(%d*)") do
    for r = tonumber(a), tonumber(b ~= "" and b or a) do list[#list + 1] = r end
  end
  return list
end

CLAIMS[19] = function(part)
  local p1, p2, p3, p4 = part(1), part(2), part(3), part(4)
  local stores = true
  for _, n in ipairs({ 8, 4096, 65536 }) do
    local simple, ll = N * (n + 8), N * 16 * ((n + 7) // 8)
    stores = stores and shows(p2, ALL, string.format("%6d B: Simple stores %8d B, LL %8d B (%.2fx)",
                                                     n, simple, ll, ll / simple))
  end
  local rows, won_ok, table_rows = 0, true, {}
  local said = p3:match("%] averages: ll won at ([^\n]*)") or ""
  local named = {}
  for size in said:gmatch("%d+") do named[size] = true end
  for line in p3:gmatch("[^\n]+") do
    local size, simple, ll = line:match("^%[0%] +(%d+) +([%d.]+) +([%d.]+)$")
    if size then
      rows = rows + 1
      table_rows[#table_rows + 1] = { tonumber(size), tonumber(simple), tonumber(ll) }
      -- printed with 2 decimals: a named size's ll is no higher, another's no lower
      if named[size] then won_ok = won_ok and tonumber(ll) <= tonumber(simple)
      else won_ok = won_ok and tonumber(ll) >= tonumber(simple) end
    end
  end
  -- every rank says where ll won by its own times: one line per group, every rank once
  local seen, once = {}, true
  for ranks in p3:gmatch("\n%[([%d,%-]+)%] my times: ll won at [^\n]+") do
    for _, r in ipairs(rank_list(ranks)) do once = once and not seen[r]; seen[r] = true end
  end
  for r = 0, N - 1 do once = once and seen[r] == true end
  local a, sa, b, sb = p4:match("LL/Simple: ([%d.]+)x at (%d+) B, ([%d.]+)x at (%d+) B")
  local first, last = table_rows[1] or {}, table_rows[#table_rows] or {}
  local function near(ratio, row)
    local want = row[3] and row[3] / row[2]
    return ratio and want and math.abs(tonumber(ratio) - want) <= 0.01 + 0.02 * want
  end
  return {
    { "19.1: Simple's one-shot and LL's leave the sum",
      shows(p1, ALL, "checkpoint: Simple's one-shot leaves the sum on every rank")
      and shows(p1, ALL, "checkpoint: LL's one-shot leaves the same sum"), p1 },
    { "19.2: the bytes each stores at N ranks", stores, p2 },
    { "19.3: six sizes timed both ways", rows == 6, p3 },
    { "19.3: the sizes named are those where ll's average was lower", said ~= "" and won_ok, p3 },
    { "19.3: every rank's own verdict, every rank once", once, p3 },
    { "19.3: where the times come from", has(p3, "measured on this machine's CPUs"), p3 },
    { "19.4: the ratios are the table's", near(a, first) and near(b, last)
      and tonumber(sa) == first[1] and tonumber(sb) == last[1], p4 .. "\n" .. p3 },
    { "19.6: the solution is right",
      shows(part(6), ALL, "right: Simple sends the data and a flag, LL twice the data"), part(6) },
  }
end

CLAIMS[20] = function(part)
  local p1, p2, p3, p4, p5 = part(1), part(2), part(3), part(4), part(5)
  local T = 2 * (N - 1)
  local grids = 0
  for _ in p1:gmatch("on " .. N .. " ranks: step 1 of " .. T .. " %(reduce%-scatter%)") do grids = grids + 1 end
  local ticks = 0
  for _ in p2:gmatch("%] tick %d+: slice 0 at step %d+, slice 1 at step %d+ of " .. T .. "\n") do
    ticks = ticks + 1
  end
  -- each rank's place in the two trees: a parent lists the rank among its children
  local parent, children, lines = { {}, {} }, { {}, {} }, 0
  for r, a, b in p3:gmatch("%] r(%d+)  tree A: ([^\n]-) +tree B: ([^\n]+)") do
    lines = lines + 1
    for t, text in ipairs({ a, b }) do
      parent[t][tonumber(r)] = tonumber(text:match("parent (%d+)") or -1)
      children[t][tonumber(r)] = text:match("children ([%d,]+)") or ""
    end
  end
  local consistent, roots = lines == N, { 0, 0 }
  for t = 1, 2 do
    for r = 0, N - 1 do
      local p = parent[t][r]
      if p == -1 then roots[t] = roots[t] + 1
      elseif p then consistent = consistent and ("," .. (children[t][p] or "") .. ","):find("," .. r .. ",", 1, true) ~= nil end
    end
  end
  local D = ceil_log2(N)
  local steps = 0
  for _ in p4:gmatch("step %d+ of " .. 2 * D .. " %(") do steps = steps + 1 end
  local last = p4:match(".*(step " .. 2 * D .. " of .*)$") or ""
  local all = 0
  for _ in last:gmatch("\n%[0%]   r%d+ +all +all") do all = all + 1 end
  return {
    { "20.1: the first step of each channel's ring", grids == 2, p1 },
    { "20.1: both rings right", shows(p1, ALL, "checkpoint: both channels' rings equal c:allreduce's"), p1 },
    { "20.2: T + 1 ticks", ticks == T + 1
      and shows(p2, ALL, string.format("2 slices: %d ticks of half a chunk: %.1f chunk-times, not %d",
                                       T + 1, (T + 1) / 2, T)), p2 },
    { "20.3: every rank's place in both trees, parents and children agreeing",
      consistent and roots[1] == 1 and roots[2] == 1, p3 },
    { "20.4: 2 ceil(log2 N) steps, the last with every rank's data everywhere",
      steps == 2 * D and all == N and shows(p4, ALL, "checkpoint: after 2D steps, both halves hold every rank's data"), p4 },
    { "20.5: the steps at this N", shows(p5, ALL, string.format("N = %4d: ring %4d steps, double tree %2d",
                                                              N, T, 2 * D)), p5 },
    { "20.7: the solution is right",
      shows(part(7), ALL, "right: 2(n-1) around the ring, 2 log2 n up and down"), part(7) },
  }
end

-- ---- what every lesson must do ----------------------------------------------------------------

local function fits(text, cols)
  local rows = 0
  for line in (text .. "\n"):gmatch("(.-)\n") do rows = rows + math.max(1, (#line + cols - 1) // cols) end
  return rows
end

local function trim(text) return (text:gsub("^%s+", ""):gsub("%s+$", "")) end

local function common_claims(text, l)
  local num, walk = l.num, walk_of(text, l.num)
  local function part(i) return part_of(walk, num, i) end
  local name = "lesson " .. num .. " at " .. N
  result(walk ~= "", name .. ": opens", text:sub(1, 2000))
  result(not walk:find("%] checkpoint FAILED") and not walk:find("stopped at that error")
         and not walk:find("stack traceback"), name .. ": every part runs, every checkpoint holds", walk)
  local last = l.nums_after
  result(has(walk, last), name .. ": the end says what comes next", walk:sub(-600))
  -- every checkpoint and right answer is one line over every rank
  local split = nil
  for line in walk:gmatch("[^\n]+") do
    local ranks = line:match("^%[([%d,%-]+)%] checkpoint: ") or line:match("^%[([%d,%-]+)%] right: ")
    if ranks and ranks ~= ALL then split = line end
  end
  result(not split, name .. ": every checkpoint folds into one line over every rank", split)
  -- every echoed command fits 80 columns
  local wide = nil
  for line in walk:gmatch("[^\n]+") do
    if line:find("^gcsh%[") and #line > 80 then wide = line end
  end
  result(not wide, name .. ": every command as typed fits 80 columns", wide)
  -- and every line the walk prints (a hang report's too, under load)
  wide = nil
  for line in walk:gmatch("[^\n]+") do
    if #line > 80 then wide = line end
  end
  result(not wide, name .. ": every line of the walk fits 80 columns", wide)
  if WRONG[num] then
    local fb = trim(between(text, "wrong " .. num))
    -- each rank's own line (its own numbers), folded where identical
    local ok = has(flat(fb), WRONG[num][2]) and not has(fb, "traceback") and fb ~= ""
    for line in (flat(fb) .. "\n"):gmatch("(.-)\n") do
      ok = ok and line:match("^%[[%d,%-]+%] not yet: ") ~= nil and fits(line, 80) <= 3
    end
    for line in (fb .. "\n"):gmatch("(.-)\n") do ok = ok and #line <= 80 end
    result(ok, name .. ": a wrong answer is a line per group of ranks, each within 80 columns, "
               .. "no traceback", fb)
  end
  -- a part shown after its needs ran: no error, no failed checkpoint
  local function clean(t)
    return not has(t, "stopped at that error") and not has(t, "stack traceback")
           and not t:find("%] checkpoint FAILED") and not has(t, "ready again)")
  end
  local nav = between(text, "nav " .. num)
  result(has(nav, "(the introduction and part 1 ran first, quietly)") and has(nav, "\n[" .. num .. ".2] ")
         and clean(nav), name .. ": .part 2 runs what it needs first, then shows part 2", nav)
  local prev = between(text, "prev " .. num)
  result(has(prev, "(the introduction's code ran first, quietly)") and has(prev, "\n[" .. num .. ".1] ")
         and clean(prev), name .. ": .prev shows part 1", prev)
  local again = between(text, "again " .. num)
  result(has(again, "\n[" .. num .. ".1] ") and clean(again), name .. ": .again shows part 1 again", again)
  local reopen = between(text, "reopen " .. num)
  result(has(reopen, "Lesson " .. num .. ": ") and not has(reopen, "garbage-collected")
         and not has(reopen, "stack traceback"), name .. ": reopened, it leaves no unfreed object", reopen)
  for _, c in ipairs(CLAIMS[num] and CLAIMS[num](part, walk) or {}) do
    result(c[2] and true or false, name .. ": " .. c[1], c[3])
  end
end

local text = lib.session(GCSH, N, session_input(), 600)
for _, l in ipairs(LESSONS) do
  local after = NEXT[l.num]
  l.nums_after = after and string.format("(end of lesson %d; .lesson %d opens the next one)", l.num, after)
                 or string.format("(end of lesson %d, the last lesson)", l.num)
  common_claims(text, l)
end
