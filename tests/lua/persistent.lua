-- kernel.persistent: one resident worker per rank, rung by p:allreduce.
-- Against a CPU reference computed here: every dtype and op the kernels
-- take, lengths 1 .. max_bytes, offsets of every residue, calls back to back
-- faster than the resident drains them (the ring is 64 deep: back-pressure),
-- interleaved with direct kernel calls and communicator collectives on the
-- same window (stream order), and the handle's life: wait, stop, <close>,
-- free, the window's free refused while it runs, bad arguments, checks.
-- Also run by tests/gpu/persistent_{nccl,vmm}.lua with KERNEL_TEST_KIND set.
local H = require "harness"

local c = comm.world()
local kind = rawget(_G, "KERNEL_TEST_KIND")
local opts = kind and { kind = kind } or nil
local me = c.rank
local team = H.window_team(c, opts) -- reductions run over it
local k = #team

local function value(dt, op, r, i)
  if op == "prod" then return dt == "u32" and (i + r) % 3 or (i + r) % 5 - 2 end
  return dt == "u32" and (i * 7 + r * 3) % 11 or (i * 7 + r * 3) % 11 - 5
end
local COMBINE = {
  sum = function(a, b) return a + b end,
  prod = function(a, b) return a * b end,
  min = math.min, max = math.max,
}
local function reduced(dt, op, i)
  local acc
  for _, r in ipairs(team) do
    local v = value(dt, op, r, i)
    acc = acc == nil and v or COMBINE[op](acc, v)
  end
  return acc
end
local function pattern(dt, op, first, n)
  local t = {}
  for i = 0, n - 1 do t[i + 1] = value(dt, op, me, first + i) end
  return tensor.from(t, dt)
end
local function expect(t, want_of, what)
  local got = t:totable()
  for i = 0, #got - 1 do
    local want = want_of(i)
    if got[i + 1] ~= want then H.eq(got[i + 1], want, string.format("%s: element %d", what, i)) end
  end
end

-- every dtype and op, lengths and offsets of every residue
for _, dt in ipairs { "f32", "f16", "bf16", "i32", "u32" } do
  local w = c:window(700, dt, opts)
  local p <close> = kernel.persistent(w)
  for _, op in ipairs { "sum", "prod", "min", "max" } do
    for _, case in ipairs { { 0, 1 }, { 1, 2 }, { 2, 3 }, { 3, 5 }, { 5, 7 }, { 6, 17 }, { 7, 129 }, { 0, 700 }, { 11, 689 } } do
      local off, n = case[1], case[2]
      local region = w:tensor():view(off, n)
      region:copy(pattern(dt, op, off, n))
      c:barrier()
      local res = p:allreduce { op = op, offset = off, n = n }
      H.eq(#res, n, "the view's length")
      expect(res, function(i) return reduced(dt, op, off + i) end,
             string.format("%s %s off=%d n=%d", dt, op, off, n))
    end
  end
  H.eq(p.calls, 4 * 9, dt .. ": p.calls counts the rings")
  p:stop()
  H.eq(p.running, false, dt .. ": stopped")
  w:free()
end

-- max_bytes: a call of exactly max_bytes, then one element more (an error
-- naming the bound, before anything is rung: the calls stay in step)
do
  local w = c:window(20000, "f32", opts)
  H.raises(function() kernel.persistent(w, { max_bytes = 65537 }) end,
           "max_bytes must be an integer 1..65536", "max_bytes past the LL area")
  local p = kernel.persistent(w, { max_bytes = 4000 })
  H.eq(p.max_bytes, 4000, "p.max_bytes")
  w:tensor():fill(me + 1)
  local res = p:allreduce { offset = 3, n = 1000 }
  local sum_ranks = 0
  for _, r in ipairs(team) do sum_ranks = sum_ranks + r + 1 end
  H.eq(res:sum(), 1000 * sum_ranks, "1000 f32 = max_bytes at offset 3")
  H.eq(w:tensor()[2], me + 1, "the element before the region is untouched")
  H.eq(w:tensor()[1003], me + 1, "the element after the region is untouched")
  H.raises(function() p:allreduce { n = 1001 } end,
           "n must be 1..1000 for this persistent all-reduce (max_bytes 4000 holds 1000 f32), got n = 1001",
           "one element past max_bytes")
  H.raises(function() p:allreduce() end, "got n = 20000", "the default n is the rest of the window")
  H.eq(p.calls, 1, "refused calls are not rung")
  w:tensor():fill(2)
  H.eq(p:allreduce { n = 5 }:sum(), 5 * 2 * k, "it works after the errors")
  p:stop()
  w:free()
end

-- back to back: 400 calls over 50 regions with no read between them, far
-- more than the ring's 64 entries.  A region reduced m times by sum holds
-- k^(m-1) times the first sum: any lost, repeated or reordered call shows.
do
  local w = c:window(50 * 4, "i32", opts)
  local p = kernel.persistent(w, { max_bytes = 16 })
  w:tensor():copy(pattern("i32", "sum", 0, 200))
  c:barrier()
  for call = 0, 399 do
    local region = call % 50
    p:allreduce { offset = region * 4, n = 1 + region % 4 }
  end
  H.eq(p.calls, 400, "400 rung")
  p:wait()
  H.eq(p.done, 400, "all done after p:wait()")
  H.eq(p.busy, false, "not busy after p:wait()")
  local got = w:tensor():totable()
  for region = 0, 49 do
    for j = 0, 3 do
      local i = region * 4 + j
      local want = j < 1 + region % 4 and reduced("i32", "sum", i) * k ^ 7 // 1 or value("i32", "sum", me, i)
      if got[i + 1] ~= want then H.eq(got[i + 1], want, string.format("back to back: element %d", i)) end
    end
  end
  p:stop()
  w:free()
end

-- stream order: ring, then a direct ll and one-shot kernel call, a
-- communicator all-reduce and a fill on the same region, then ring again;
-- each must see the one before it done
do
  local w = c:window(64, "i32", opts)
  local p = kernel.persistent(w)
  local region = w:tensor():view(8, 16)
  region:copy(pattern("i32", "sum", 8, 16))
  c:barrier()
  p:allreduce { offset = 8, n = 16 }
  kernel.allreduce(w, { algo = "ll", offset = 8, n = 16 })
  kernel.allreduce(w, { algo = "oneshot", offset = 8, n = 16 })
  c:allreduce(region)
  p:allreduce { offset = 8, n = 16 }
  expect(region, function(i) return reduced("i32", "sum", 8 + i) * k ^ 4 // 1 end, "interleaved")
  -- a host write after a ring waits for it: the ring reads the old values
  p:allreduce { offset = 8, n = 16 }
  region:fill(1)
  H.eq(region:sum(), 16, "the fill came after the call")
  p:allreduce { offset = 8, n = 16 }
  gcsh.sync()
  H.eq(p.busy, false, "gcsh.sync() waits for the calls")
  H.eq(region:sum(), 16 * k, "the ring after the fill")
  -- two persistents on two windows, rung alternately
  local w2 = c:window(8, "f32", opts)
  local p2 = kernel.persistent(w2)
  w2:tensor():fill(me)
  for _ = 1, 3 do
    p:allreduce { offset = 0, n = 4 }
    p2:allreduce { n = 8 }
  end
  local sum_ranks = 0
  for _, r in ipairs(team) do sum_ranks = sum_ranks + r end
  H.eq(w2:tensor():sum(), 8 * sum_ranks * k * k, "the second persistent")
  p2:stop()
  w2:free()
  p:stop()
  w:free()
end

-- the handle's life
do
  local w = c:window(16, "f32", opts)
  local p = kernel.persistent(w)
  H.truthy(tostring(p):find("^persistent #%d+ %(ll on window #%d+, up to 64 B a call, 1 sm%): running, 0 calls"),
           "tostring: " .. tostring(p))
  H.eq(p.window, w, "p.window")
  H.eq(p.algo, "ll", "p.algo")
  H.eq(p.sms, 1, "p.sms")
  H.eq(p.stopped, nil, "p.stopped while running")
  H.raises(function() w:free() end, "w:free(): persistent #", "free refused while it runs")
  H.raises(function() w:free() end, "runs on it (its resident reads and writes the window); p:stop() it first",
           "the refusal says what to do")
  w:tensor():fill(1)
  H.eq(p:allreduce():sum(), 16 * k, "the window still works after the refusal")
  p:stop()
  p:stop()
  H.eq(p.stopped, "stopped (p:stop())", "p.stopped says why")
  H.raises(function() p:allreduce() end, "is stopped: stopped (p:stop())", "a stopped one refuses rings")
  H.truthy(tostring(p):find("stopped after 1 calls"), "tostring once stopped: " .. tostring(p))
  do
    local q <close> = kernel.persistent(w)
    q:allreduce()
  end
  local q2 = kernel.persistent(w)
  q2:free()
  q2:free()
  H.raises(function() q2:allreduce() end, "attempt to use a freed persistent all-reduce", "after free")
  w:free()
end

-- A window of 16 f32 with a resident on it, its tensor, and the team's sum
-- and max of rank + 1 (the fills below).
local function resident16()
  local w = c:window(16, "f32", opts)
  local S, M = 0, 0
  for _, r in ipairs(team) do S, M = S + r + 1, math.max(M, r + 1) end
  return w, kernel.persistent(w), w:tensor(), S, M
end

-- a graph replayed after a ring follows it: the replay's calls wait for the
-- resident as typed calls do (on the host, the rank's ordered table)
do
  local w, p, t, _, M = resident16()
  local g = gcsh.graph(function() kernel.allreduce(w, { algo = "ll", offset = 0, n = 4 }) end)
  for round = 1, 3 do
    t:fill(me + 1)
    p:allreduce { offset = 0, n = 4, op = "max" }
    g:replay()
    H.eq(t[0], k * M, "a ring, then a replay of a direct call, round " .. round)
  end
  g:free()
  p:stop()
  w:free()
end

-- rings from graphs: a captured p:allreduce rings the resident at every
-- replay (cuda: from the graph itself), in stream order with host rings and
-- direct kernel calls around it (an order-sensitive chain: max, then sums);
-- the graph keeps p (its free is refused while the graph lives); p:stop()
-- right after a replay waits for the calls it queued; a replay after p
-- stopped is refused on every rank alike, before anything runs, the
-- communicator still usable
do
  local w, p, t, S, M = resident16()
  local g = gcsh.graph(function()
    p:allreduce { offset = 0, n = 4 }
    p:allreduce { offset = 4, n = 4, op = "max" }
    p:allreduce { offset = 0, n = 4 } -- the same call again: the same slot
  end)
  H.eq(g.collectives, 3, "the graph holds three rings")
  H.eq(p.calls, 0, "capturing rings nothing")
  t:fill(me + 1)
  g:replay()
  -- one replay: the first region reduced twice, the second once
  H.eq(t[0], S * k, "replay 1: sum, rung twice")
  H.eq(t[7], M, "replay 1: max")
  H.eq(t[8], me + 1, "replay 1: outside the regions, untouched")
  H.eq(p.calls, 3, "p.calls counts the graph's calls")
  t:fill(me + 1)
  p:allreduce { offset = 0, n = 4, op = "max" } -- a host ring before the replays: M
  kernel.allreduce(w, { algo = "ll", offset = 0, n = 4 }) -- a direct call: k M
  g:replay(3) -- six sums: k^7 M
  p:allreduce { offset = 0, n = 4 } -- and a ring after them: k^8 M
  H.eq(t[0], M * k ^ 8, "max, a direct sum, three replays and a ring, in that order")
  H.eq(t[5], M, "max after three replays")
  H.eq(t[15], me + 1, "outside the regions, untouched")
  H.eq(p.calls, 3 + 1 + 9 + 1, "p.calls after rings and replays")
  H.eq(p.done, p.calls, "p.done once read")
  -- inside a graph too: a direct call after a ring follows it
  local gm = gcsh.graph(function()
    p:allreduce { offset = 0, n = 4, op = "max" }
    kernel.allreduce(w, { algo = "ll", offset = 0, n = 4 })
  end)
  for round = 1, 3 do
    t:fill(me + 1)
    gm:replay()
    H.eq(t[0], k * M, "a graph's ring, then its direct call, round " .. round)
  end
  gm:free()
  H.raises(function() p:free() end, "p:free(): graph #", "free refused while a graph rings it")
  local g2 = gcsh.graph(function() p:allreduce { n = 2 } end)
  -- a stop right after replays, no host read between: it waits for their calls
  t:fill(1)
  g:replay(2)
  p:stop()
  H.eq(t[0], k ^ 4, "the replays' calls ran before the stop")
  H.eq(t[4], 1, "max of ones")
  H.eq(p.calls, 3 + 1 + 9 + 1 + 3 + 6, "p.calls after the stop")
  g:free()
  H.raises(function() g2:replay() end,
           "g:replay(): the graph rings a persistent all-reduce that is stopped (stopped (p:stop()))",
           "a replay after p:stop()")
  c:barrier()
  H.eq(c:allreduce(tensor.new(1):fill(1))[0], c.size, "the communicator after the refusal")
  g2:free()
  p:free()
  w:free()
end

-- a long graph of rings: more calls than graph slots, the same calls again
-- and again (on cuda a sequence's slots go up, at most 16 calls, and the
-- next is rung while the resident runs it; once the slots a repeat may take
-- are in flight, the next sequence waits for the oldest and reuses its
-- slots), a direct call late in it; every region reduced as often as it
-- was rung (k^24 at most: exact in f32 for the power-of-two teams it runs at)
do
  local w, p, t = resident16()
  local g = gcsh.graph(function()
    for i = 1, 70 do -- more calls than the 64 slots on cuda (repeats take 0-31)
      p:allreduce { offset = (i % 3) * 4, n = 4 }
      -- late: sequences in flight and waited for before it
      if i == 68 then kernel.allreduce(w, { algo = "ll", offset = 12, n = 4 }) end
    end
  end)
  for round = 1, 2 do
    t:fill(1)
    g:replay()
    H.eq(t[0], k ^ 23, "region 0, rung 23 times, round " .. round)
    H.eq(t[4], k ^ 24, "region 1, rung 24 times, round " .. round)
    H.eq(t[11], k ^ 23, "region 2, rung 23 times, round " .. round)
    H.eq(t[12], k, "the direct call's region, round " .. round)
  end
  H.eq(p.calls, 140, "p.calls after two replays of 70")
  g:free()
  p:stop()
  w:free()
end

-- a run of 20 different calls back to back (on cuda two sequences, 16
-- calls and 4, the second rung while the resident may still run the
-- first), in capture order: sums of single elements, then maxes of the
-- first four (a max first would give k M there, not S)
do
  local w, p, t, S = resident16()
  local g = gcsh.graph(function()
    for i = 0, 15 do p:allreduce { offset = i, n = 1 } end
    for i = 0, 3 do p:allreduce { offset = i, n = 1, op = "max" } end
  end)
  for round = 1, 2 do
    t:fill(me + 1)
    g:replay()
    for i = 0, 15 do H.eq(t[i], S, "element " .. i .. ": its sum (then a max), round " .. round) end
  end
  H.eq(p.calls, 40, "p.calls after two replays of 20")
  g:free()
  p:stop()
  w:free()
end

-- sequences in flight (on cuda): 60 calls alternating between two regions
-- fill the slots repeats may take with two sequences, so the third waits
-- for the first and reuses its slots, and so on; every call runs, once,
-- and a direct call after the replay follows all of them.  Region 0 is
-- summed 30 times (S k^29: exact in f32 for k a power of two up to 8, as the
-- test runs), region 2 maxed.  With
-- one block and with two (sms=2: block 0 takes each sequence and posts it
-- to the other, the last block to finish clears its slots).
for _, sms in ipairs { 1, 2 } do
  local w = c:window(16, "f32", opts)
  local p, t = kernel.persistent(w, { sms = sms }), w:tensor()
  local S, M = 0, 0
  for _, r in ipairs(team) do S, M = S + r + 1, math.max(M, r + 1) end
  local g = gcsh.graph(function()
    for _ = 1, 30 do
      p:allreduce { offset = 0, n = 4 }
      p:allreduce { offset = 8, n = 4, op = "max" }
    end
  end)
  for round = 1, 3 do
    t:fill(me + 1)
    g:replay()
    local tag = string.format("sms=%d, round %d", sms, round)
    H.eq(t[3], S * k ^ 29, "region 0 summed 30 times, " .. tag)
    H.eq(t[8], M, "region 2 maxed, " .. tag)
    H.eq(t[4], me + 1, "between the regions, untouched, " .. tag)
    kernel.allreduce(w, { algo = "ll", offset = 8, n = 4 })
    H.eq(t[11], k * M, "a direct sum after the replay, " .. tag)
  end
  H.eq(p.calls, 180, "p.calls after three replays of 60, sms=" .. sms)
  g:free()
  p:stop()
  w:free()
end

-- the graph slots (cuda): repeats of a call take slots while more than
-- half of the 64 are free, so 32 stay for other calls.  40 repeats take
-- slots 0-31; a graph of that call and 32 different ones takes slot 0 and
-- 32-63, in sequences that cross slot 32 (0, 32-46; 47-62; 63); one more
-- different call is refused at its capture, naming the slots, and both
-- graphs before it still replay exactly (sums: a call lost or run twice
-- shows).  The host backend replays rings (no slots): the values only.
do
  local w, p, t, S = resident16()
  local shapes = {} -- 36 different (offset, n), none the repeated call's
  for n = 2, 16 do
    for off = 0, 16 - n, 4 do shapes[#shapes + 1] = { off, n } end
  end
  local repeats = gcsh.graph(function() for _ = 1, 40 do p:allreduce { n = 1 } end end)
  local covered = {} -- element i: how many of the second graph's calls sum it
  for i = 0, 15 do covered[i] = i == 0 and 1 or 0 end
  local mixed = gcsh.graph(function()
    p:allreduce { n = 1 }
    for j = 1, 32 do
      local off, n = shapes[j][1], shapes[j][2]
      p:allreduce { offset = off, n = n }
    end
  end)
  for j = 1, 32 do
    for i = shapes[j][1], shapes[j][1] + shapes[j][2] - 1 do covered[i] = covered[i] + 1 end
  end
  if gcsh.backend == "cuda" then
    local ok, err = pcall(gcsh.graph, function()
      p:allreduce { offset = shapes[33][1], n = shapes[33][2] }
    end)
    H.truthy(not ok, "a 33rd different call: refused")
    H.truthy(tostring(err):find("its 64 graph slots are taken", 1, true), "names the slots: " .. tostring(err))
  end
  for round = 1, 2 do
    t:fill(me + 1)
    repeats:replay()
    H.eq(t[0], S * k ^ 39, "40 sums of element 0, round " .. round)
    H.eq(t[1], me + 1, "the rest untouched, round " .. round)
    t:fill(me + 1)
    mixed:replay()
    for i = 0, 15 do
      H.eq(t[i], S * k ^ (covered[i] - 1), "the mixed graph: element " .. i .. ", round " .. round)
    end
  end
  H.eq(p.calls, 2 * (40 + 33), "p.calls after two replays of each")
  repeats:free()
  mixed:free()
  p:stop()
  w:free()
end

-- how many run at once: one a window (two would share its LL area), 16 a
-- rank (each holds an SM or a thread); a refusal names what runs or the
-- bound, and a stopped or collected one makes room.  Handles collected
-- while others run end at once (on cuda nothing is freed then that would
-- wait for the residents still running: it would wait forever).
do
  local ws, ps = {}, {}
  for i = 1, 17 do ws[i] = c:window(8, "f32", opts) end
  for i = 1, 16 do ps[i] = kernel.persistent(ws[i]) end
  local err = H.raises(function() kernel.persistent(ws[1]) end, "kernel.persistent: persistent #",
                       "a second on one window")
  H.truthy(err:find("runs on it (its resident reads and writes the window); p:stop() it first", 1, true),
           "the refusal says what runs and what to do: " .. err)
  H.raises(function() kernel.persistent(ws[17]) end,
           "kernel.persistent: 16 residents already run on this rank", "the 17th")
  ps[16]:stop()
  ps[16] = kernel.persistent(ws[17])
  ps[15] = nil
  collectgarbage()
  collectgarbage()
  ps[15] = kernel.persistent(ws[15])
  for i = 1, 16 do
    ws[i == 16 and 17 or i]:tensor():fill(i)
    ps[i]:allreduce()
  end
  for i = 1, 16 do
    H.eq(ws[i == 16 and 17 or i]:tensor():sum(), 8 * i * k, "resident " .. i .. " of 16")
    ps[i]:stop()
  end
  for i = 1, 17 do ws[i]:free() end
end

-- bad arguments: each names the argument and the bound; nothing starts
do
  local w = c:window(16, "f32", opts)
  H.raises(function() kernel.persistent(w, { algo = "oneshot" }) end, "unknown algo 'oneshot' (valid: ll)", "algo")
  H.raises(function() kernel.persistent(w, { sms = 0 }) end, "sms must be an integer 1..32", "sms")
  H.raises(function() kernel.persistent(w, { max_bytes = 0 }) end, "max_bytes must be an integer 1..64", "max_bytes 0")
  H.raises(function() kernel.persistent(w, { bytes = 8 }) end, "bytes", "an unknown option")
  H.raises(function() kernel.persistent(nil) end, "window expected", "no window")
  local p = kernel.persistent(w)
  H.raises(function() p:allreduce { dtype = "f16" } end, "dtype must be the window's (f32), got f16", "dtype")
  H.raises(function() p:allreduce { op = "avg" } end, "avg", "an op the kernels do not take")
  H.raises(function() p:allreduce { offset = 16 } end, "offset", "offset past the window")
  H.raises(function() p:allreduce { algo = "ll" } end, "algo", "an option of kernel.allreduce only")
  w:tensor():fill(1)
  H.eq(p:allreduce { dtype = "f32" }:sum(), 16 * k, "dtype= the window's")
  p:stop()
  w:free()
end

-- a rank that rings differently is caught by the check before anything is
-- rung, on every rank; the persistent goes on
if c.size > 1 then
  local w = c:window(16, "f32", opts)
  local p = kernel.persistent(w)
  H.raises(function() p:allreduce { n = me == 0 and 4 or 8 } end, "persistent.allreduce", "a mismatched ring")
  H.eq(p.calls, 0, "nothing rung")
  w:tensor():fill(1)
  H.eq(p:allreduce():sum(), 16 * k, "in step after the mismatch")
  p:stop()
  w:free()
end
