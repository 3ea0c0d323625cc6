-- w:sync_state() and show(w, "sync"): the kernels' machinery of a window
-- as each rank sees it (issue 37): the barriers entered, the barrier number
-- every member last stored into my sync words, the LL area's count, set and
-- the newest flag from every member, my words of a signals set.
local H = require "harness"
local S = require "gcsh.show"

-- the node's communicator: the window's team is all of it (under
-- GCSH_RANKS_PER_NODE too, where kernel collectives on a world window
-- are refused: window_kernel_team.lua)
local c = comm.world():split(gcsh.node)
local k = c.size
local w = c:window(8, "f32")
local s = c:signals(3)

local function barriers(algo) -- the barriers of algo's plan over the window
  local n = 0
  for _, st in ipairs(kernel.plan(w, { algo = algo }).steps) do
    if st.kind == "barrier" then n = n + 1 end
  end
  return n
end

-- every member's words (keys: communicator ranks) hold want
local function all(t, want, what)
  local n = 0
  for r, v in pairs(t) do
    n = n + 1
    H.eq(v, want, what .. " from " .. r)
  end
  H.eq(n, k, what .. ": a word per member")
end

local st = w:sync_state()
H.eq(st.epoch, 0, "fresh: no barrier entered")
all(st.seen, 0, "fresh: barrier words")
H.eq(st.ll_calls, 0, "fresh: no ll call")
H.eq(st.ll_set, 0, "fresh: the first ll call uses set 0")
H.eq(st.ll_flag, 1, "fresh: the first ll flag is 1")
all(st.ll_seen, 0, "fresh: ll flags")
H.eq(st.pad, nil, "no pad without signals")

-- a two-shot: every member entered and left every barrier of its plan
w:tensor():fill(c.rank + 1)
kernel.allreduce(w, { algo = "twoshot" })
local nb = barriers("twoshot")
H.truthy(nb >= 2, "a two-shot has barriers: " .. nb)
st = w:sync_state()
H.eq(st.epoch, nb, "two-shot: its barriers entered")
all(st.seen, nb, "two-shot: every member signalled its last barrier")
H.eq(st.ll_calls, 0, "two-shot: no ll call")

-- then one-shot: the count goes on from there
kernel.allreduce(w, { algo = "oneshot" })
local total = nb + barriers("oneshot")
st = w:sync_state()
H.eq(st.epoch, total, "one-shot after two-shot: the count goes on")
all(st.seen, total, "one-shot after two-shot: every member's word")

-- two ll calls: the count, the set (parity) and the flags
for call = 1, 2 do
  kernel.allreduce(w, { algo = "ll" })
  st = w:sync_state()
  H.eq(st.ll_calls, call, "ll: calls done")
  H.eq(st.ll_set, call % 2, "ll: the next call's set")
  H.eq(st.ll_flag, call + 1, "ll: the next call's flag")
  all(st.ll_seen, call, "ll call " .. call .. ": every member's newest flag")
  H.eq(st.epoch, total, "ll: no barrier")
end

-- the pad: my words of a signals set, u64 carriers as s:read gives them
s:add(c.rank, 1, 5)
s:set(c.rank, 2, -1)
st = w:sync_state(s)
H.eq(st.pad[0], 0, "pad: slot 0")
H.eq(st.pad[1], 5, "pad: slot 1")
H.eq(st.pad[2], -1, "pad: slot 2 (2^64-1)")
H.eq(st.pad[3], nil, "pad: three slots")
H.raises(function() w:sync_state(w) end, "signals expected", "a window is no pad")
H.raises(function() w:sync_state(tensor.new(2)) end, "signals expected", "a tensor is no pad")

-- show(w, "sync"): equal rows fold under their ranks; nothing marked
local text = S.format(w, "sync")
local lines = {}
for line in (text .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = line end
H.eq(lines[1], string.format("window(#%d, 8 f32, %s, team %s): w:sync_state() on %d rank%s",
                             w.seq, w.kind, tostring(w):match("team ([^)]*)"), k, k == 1 and "" or "s"), "title")
local head = "ranks  epoch"
for r = 0, k - 1 do head = head .. "  b[" .. r .. "]" end
head = head .. "  ll"
for r = 0, k - 1 do head = head .. "  ll[" .. r .. "]" end
H.eq(lines[2], head, "header")
H.truthy(lines[3]:match("^%[0" .. (k > 1 and "%-" .. (k - 1) or "") .. "%] +" .. total .. " "), "one row for every rank: " .. lines[3])
H.truthy(lines[3]:match(" 2$"), "the row ends with the ll flags: " .. lines[3])
H.truthy(not text:find("*", 1, true), "nothing marked: " .. text)
H.truthy(lines[4]:find("(epoch: barriers entered", 1, true), "the legend: " .. lines[4])
for _, l in ipairs(lines) do H.truthy(#l <= 76, "fits 80 columns under a [0] prefix: " .. l) end
local with_pad = S.format(w, "sync", s)
H.truthy(with_pad:find("signals #" .. s.seq .. " (3 slots, " .. s.kind .. "): each rank's words", 1, true), "the pad follows: " .. with_pad)

-- (a rank behind, marked: tests/sh/sync_state.sh, where one hangs)

c:barrier()
s:free()
w:free()
H.raises(function() w:sync_state() end, "freed window", "a freed window")
c:free()
