-- What an attendee's wrong answers get, at N ranks, through the shell
-- (lua5.4 tests/sh/lesson_feedback.lua GCSH N; tests/sh/lesson_feedback.sh):
--
-- * the slips of issue 38 in lessons 1, 2, 6, 7, 10, 14 and 15, the
--   rank-dependent ones included: each rank's line carries its own numbers,
--   one line per group of ranks whose line is identical, and exactly those
--   lines: no traceback, no frame or file of gcsh's own Lua, no collective
--   check's cascade, every line within 80 columns;
-- * for every lesson with an exercise: every global the lesson defined
--   (all but its check_ functions) overwritten with a hostile value (a
--   callable table that answers 16 to every call and itself to every
--   field), then a wrong answer is still "not yet" on every rank and a
--   right one still "right" on every rank.
--
-- Prints "pass NAME" or "fail NAME" and detail lines "  | ...".
local GCSH, N = arg[1], tonumber(arg[2])
local ALL = N == 1 and "0" or ("0-" .. (N - 1))
local lib = dofile("tests/sh/lesson_lib.lua")
local result, marker, ranges = lib.result, lib.marker, lib.ranges

local function others(r) -- every rank but r
  local l = {}
  for q = 0, N - 1 do if q ~= r then l[#l + 1] = q end end
  return ranges(l)
end

local function s_(list) return #list > 1 and "s " or " " end

local S = N * (N - 1) // 2

-- A slip whose check gives each rank a verdict: mine(r) is rank r's own
-- text when wrong there, nil when right; a right rank says "HEAD RIGHT,
-- wrong on ranks ...".
local function verdicts(head, right_here, mine)
  return function(r)
    local wrong = {}
    for q = 0, N - 1 do if mine(q) then wrong[#wrong + 1] = q end end
    local m = mine(r)
    if m then return "not yet: " .. head .. m end
    return string.format("not yet: %s%s, wrong on rank%s%s", head, right_here, s_(wrong), ranges(wrong))
  end
end

-- The first wrong element of got(i) against want(i), i < n, as grade says it.
local function elements(n, got, want, dtype)
  local first, count
  for i = 0, n - 1 do
    if got(i) ~= want(i) then first = first or i; count = (count or 0) + 1 end
  end
  if not first then return nil end
  return string.format("[%d] is %d, want %d (%d of %d %s elements wrong)", first, got(first), want(first),
                       count, n, dtype)
end

local SLIPS = {
  [1] = { { "check_sum(rank)", verdicts("", "my_sum is right here", function(r)
            if r == S then return nil end
            return string.format("my_sum is %d (a number), want %d (a number)", r, S)
          end) } },
  [2] = { { "_m = tensor.new(size):fill(0); _m[rank] = rank; check_ranks(_m)",
            verdicts("element i is i on every rank: ", "right here", function(r)
              return elements(N, function(i) return i == r and r or 0 end, function(i) return i end, "f32")
            end) } },
  [6] = { { "check_oneshot(function(w, out) out:fill(rank) end)",
            verdicts("your one-shot equals c:allreduce: ", "right here", function(r)
              return elements(8, function() return r end, function(i) return S + N * i end, "f32")
            end) },
          { "check_oneshot(function(w, out) if rank == 0 then c:barrier() end end)", function(r)
            if r == 0 then
              return string.format("not yet: stdin:1: barrier here; rank%s%s had returned from my_oneshot",
                                   N > 2 and "s " or " ", others(0))
            end
            return "not yet: my_oneshot called a collective on rank 0 only (shown there)"
          end } },
  -- the 0-based slip: rank 0 fails after a barrier, the others go on to the next one
  [7] = { { "check_twoshot(function(win) local ch = plan.chunks[rank]; c:barrier(); "
            .. "local k = ch.count; c:barrier(); c:barrier() end)", function(r)
            if r == 0 then return "not yet: my_twoshot failed: stdin:1: attempt to index a nil value (local 'ch')" end
            return "not yet: my_twoshot failed on rank 0 (its error is shown there)"
          end } },
  [10] = { { "check_pass(function(win, sig, t) if rank == 0 then local p = win:put(1, t, 0, "
             .. "{signal = {sig, 0}}); p:post(); p:wait{cpu = true}; p:free() end end)",
             verdicts("", "my signal word 0, 2 s after your put, is right here", function(r)
               if r == 1 then return nil end
               return "my signal word 0, 2 s after your put, is 0 (a number), want 1 (a number)"
             end) } },
  [14] = { { "check_ll_bytes(function(n) return rank == 0 and 16 * ((n + 7) // 8) or 2 * n end)",
             verdicts("", "ll_bytes(65535) is right here", function(r)
               if r == 0 then return nil end
               return "ll_bytes(1) is 2 (a number), want 16 (a number)"
             end) } },
  [15] = { { "check_crossover(function() return rank end)", verdicts("", "", function(r)
             return string.format("crossover(RING.LL, RING.SIMPLE) is %d (a number), want 197190 (a number)", r)
           end) } },
  -- the data's bytes without the flags, on every rank but 0
  [19] = { { "check_wire(function(p, n, k) if rank == 0 then return p == 'simple' and k * (n + 8) "
             .. "or k * 16 * ((n + 7) // 8) end return k * n end)",
             verdicts("", 'wire_bytes("simple", 1, 8) is right here', function(r)
               if r == 0 then return nil end
               return 'wire_bytes("simple", 8, 2) is 16 (a number), want 32 (a number)'
             end) } },
  -- log2 n rounded down, on every rank but 0
  [20] = { { "check_steps(function(a, n) if a == 'ring' then return 2 * (n - 1) end local l = 0 "
             .. "while (2 << l) <= n do l = l + 1 end if rank == 0 and (1 << l) < n then l = l + 1 end "
             .. "return 2 * l end)",
             verdicts("", 'steps("tree", 1) is right here', function(r)
               if r == 0 then return nil end
               return 'steps("tree", 3) is 2 (a number), want 4 (a number)'
             end) } },
}

-- A right answer, made of nothing the lesson defined, and a wrong one.
local TWOSHOT = "check_twoshot(function(win) local cw = comm.world(); local ch = kernel.plan(win, "
  .. "{coll = 'allreduce', algo = 'twoshot'}).chunks[rank + 1]; cw:barrier(); if ch.count > 0 then "
  .. "local parts = {} for r = 0, size - 1 do parts[#parts + 1] = win:peer(r):view(ch.first, ch.count) end "
  .. "local sum = tensor.new(ch.count, win.dtype); kernel.reduce(sum, parts); for r = 0, size - 1 do "
  .. "win:peer(r):view(ch.first, ch.count):copy(sum) end end cw:barrier() end)"
local ANSWERS = {
  [1] = { "check_sum(size * (size - 1) // 2)", "check_sum(tostring(size * (size - 1) // 2))" },
  [2] = { "_m = tensor.new(size):fill(0); _m[rank] = rank; comm.world():allreduce(_m); check_ranks(_m)",
          "check_ranks(tensor.new(size):fill(1))" },
  [4] = { "check_copy_left(function(w, out) out:copy(w:peer((rank - 1) % size)) end)",
          "check_copy_left(function(w, out) end)" },
  [6] = { "check_oneshot(function(w, out) local v = {} for r = 0, size - 1 do v[#v + 1] = w:peer(r) end "
          .. "kernel.reduce(out, v) end)", "check_oneshot(function(w, out) end)" },
  [7] = { TWOSHOT, "check_twoshot(function(w) end)" },
  [8] = { "check_loads(function() return 2 * (size - 1) * (2 * size) // size end)",
          "check_loads(function() return 16 end)" },
  [9] = { "check_mc(function(win, mc) local ch = kernel.plan(win, {coll = 'allreduce', algo = 'multicast'})"
          .. ".chunks[rank + 1]; if ch.count > 0 then local part = tensor.new(ch.count); "
          .. "mc:ld_reduce(part, {offset = ch.first}); mc:st(part, ch.first) end end)", "check_mc(function() end)" },
  [10] = { "check_pass(function(win, sig, t) local p = win:put((rank + 1) % size, t, 0, {signal = {sig, 0}}); "
           .. "p:post(); p:wait{cpu = true}; p:free() end)", "check_pass(function() end)" },
  [11] = { "check_factor(function(op, n) if op == 'allreduce' then return 2 * (n - 1) / n end "
           .. "if op == 'broadcast' then return 1 end return (n - 1) / n end)",
           "check_factor(function() return 16 end)" },
  [13] = { "check_tree_steps(function(n) local s = 0 while (1 << s) < n do s = s + 1 end return s end)",
           "check_tree_steps(function() return 16 end)" },
  [14] = { "check_ll_bytes(function(n) return 16 * ((n + 7) // 8) end)", "check_ll_bytes(function() return 16 end)" },
  [15] = { "check_crossover(function(a, b) return math.ceil((b[1] - a[1]) * 1000 / (1 / a[2] - 1 / b[2])) end)",
           "check_crossover(function() return 16 end)" },
  [16] = { "check_must_wait(function(c, d) return c - d >= 64 end)", "check_must_wait(function() return 16 end)" },
  [17] = { "check_halves(function(t) local p = tensor.new(#t // size, t.dtype); comm.world():reducescatter(t, p); "
           .. "comm.world():allgather(p, t) end)", "check_halves(function(t) end)" },
  [18] = { "check_fit(function(p) local sn, st = 0, 0 for _, q in ipairs(p) do sn, st = sn + q[1], st + q[2] end "
           .. "local mn, mt = sn / #p, st / #p local cv, vr = 0, 0 for _, q in ipairs(p) do "
           .. "cv = cv + (q[1] - mn) * (q[2] - mt) vr = vr + (q[1] - mn) ^ 2 end return mt - cv / vr * mn, cv / vr end)",
           "check_fit(function() return 5, 16 end)" },
  [19] = { "check_wire(function(p, n, k) if p == 'simple' then return k * (n + 8) end "
           .. "return k * 16 * ((n + 7) // 8) end)", "check_wire(function() return 16 end)" },
  [20] = { "check_steps(function(a, n) local l = 0 while (1 << l) < n do l = l + 1 end "
           .. "return a == 'ring' and 2 * (n - 1) or 2 * l end)", "check_steps(function() return 16 end)" },
  [21] = { "check_member(function(r) local t = 0 for q = 0, r - 1 do "
           .. "if gcsh.node_of(q) == gcsh.node_of(r) then t = t + 1 end end return t end)",
           "check_member(function() return 16 end)" },
}

local HOSTILE = "_h = setmetatable({}, {__call = function() return 16 end, __index = function(t) return t end}); "
  .. "for k in pairs(_G) do if not _base[k] and not k:match('^check_') and k ~= '_h' then _G[k] = _h end end"

-- ---- the session ----------------------------------------------------------------------------

local function exercise_part(num)
  local file = io.popen("ls lua/tutorial/" .. string.format("%02d", num) .. "-*.lua"):read("l")
  local i = 0
  for line in io.lines(file) do
    local title = line:match("^%-%-%-%s*(.-)%s*$")
    if title then
      i = i + 1
      if title:match("^exercise") then return i end
    end
  end
end

-- LESSONS="19 20" in the environment: those only (a quicker run)
local ONLY = {}
for num in (os.getenv("LESSONS") or ""):gmatch("%d+") do ONLY[tonumber(num)] = true end
local LESSONS = {}
for num in pairs(ANSWERS) do
  if next(ONLY) == nil or ONLY[num] then LESSONS[#LESSONS + 1] = num end
end
table.sort(LESSONS)

local lines = { "_base = {} for k in pairs(_G) do _base[k] = true end" }
local function add(l) lines[#lines + 1] = l end
for _, num in ipairs(LESSONS) do
  add(".lesson " .. num)
  add(".part " .. exercise_part(num))
  for i, slip in ipairs(SLIPS[num] or {}) do
    add(marker("slip " .. num .. "." .. i))
    add(slip[1])
  end
  add(marker("hostile " .. num))
  add(HOSTILE)
  add(marker("wrong " .. num))
  add(ANSWERS[num][2])
  add(marker("right " .. num))
  add(ANSWERS[num][1])
  add(marker("end " .. num))
end

local text = lib.session(GCSH, N, lines, 600)

-- ---- the checks ---------------------------------------------------------------------------------

local function between(a) return lib.between(text, a) end

-- The feedback's lines, wrapped lines joined (a continuation is indented
-- by 2 or more after its tag), echoed commands left out.
local function feedback_lines(t)
  local flat = t:gsub("\n%[[%d,%-]+%]   +", " ")
  local out = {}
  for line in flat:gmatch("[^\n]+") do
    if not line:find("^gcsh%[") then out[#out + 1] = line end
  end
  return out
end

local function clean(name, t)
  local wide
  for line in t:gmatch("[^\n]+") do if #line > 80 then wide = line end end
  result(not wide, name .. ": every line fits 80 columns", wide)
  result(not t:find("traceback", 1, true) and not t:find("/gcsh/", 1, true) and not t:find("lesson.lua", 1, true)
         and not t:find("mismatch", 1, true), name .. ": no traceback, no gcsh file, no collective cascade", t)
end

for _, num in ipairs(LESSONS) do
  for i, slip in ipairs(SLIPS[num] or {}) do
    local name = string.format("lesson %d slip %d at %d ranks", num, i, N)
    local t = between("slip " .. num .. "." .. i)
    local groups, order = {}, {}
    for r = 0, N - 1 do
      local line = slip[2](r)
      if not groups[line] then groups[line] = {}; order[#order + 1] = line end
      table.insert(groups[line], r)
    end
    local want = {}
    for _, line in ipairs(order) do want[#want + 1] = "[" .. ranges(groups[line]) .. "] " .. line end
    table.sort(want)
    local got = feedback_lines(t)
    table.sort(got)
    result(table.concat(got, "\n") == table.concat(want, "\n"),
           name .. ": one true line per group of ranks", "want:\n" .. table.concat(want, "\n") .. "\ngot:\n" .. t)
    clean(name, t)
  end
  local name = string.format("lesson %d, its globals overwritten, at %d ranks", num, N)
  local hostile = between("hostile " .. num)
  result(not hostile:find("%S"), name .. ": the overwriting ran", hostile)
  local wrong = between("wrong " .. num)
  local all_wrong = true
  for _, line in ipairs(feedback_lines(wrong)) do
    all_wrong = all_wrong and line:match("^%[[%d,%-]+%] not yet: ") ~= nil
  end
  result(all_wrong and wrong:find("%] not yet: ") ~= nil and not wrong:find("right:", 1, true),
         name .. ": a wrong answer stays wrong", wrong)
  clean(name .. " (wrong)", wrong)
  local right = between("right " .. num)
  local every, said = #feedback_lines(right) > 0, false
  for _, line in ipairs(feedback_lines(right)) do
    every = every and (line:find("^%[" .. ALL:gsub("%-", "%%-") .. "%] right: ")
                       or line:find("^%[" .. ALL:gsub("%-", "%%-") .. "%] checkpoint: ")) ~= nil
    said = said or line:find("] right: ", 1, true) ~= nil
  end
  result(every and said, name .. ": a right answer stays right", right)
end
