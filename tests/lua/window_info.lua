-- w:info() names where the kernels keep their areas in a slice, and
-- show(w, "info") folds every rank's w:info() into one table: a field equal
-- on every rank once, one that differs a line per group of ranks.
local H = require "harness"
local S = require "gcsh.show"

local c = comm.world()
local me, k = c.rank, c.size
local w = c:window(100, "f32")
local i = w:info()
-- the layout: the user's bytes, the LL area (a header, then the scratch
-- that kernel.allreduce's out= may use), the sync words up to the end
H.truthy(i.bytes <= i.ll_offset, "the LL area after the user's bytes")
H.eq(i.ll_offset + 256 + i.scratch_bytes, i.sync_offset, "the scratch ends where the sync words start")
H.truthy(i.sync_offset < i.alloc_bytes, "the sync words inside the allocation")
-- a slot: ll's 16-byte lines of 8 data bytes (800 bytes for 400), in whole
-- 128-byte lines (896), then ll128's 128-byte lines of 120 (4 lines, 512)
H.eq(i.scratch_bytes, 2 * math.min(k, 16) * (896 + 512), "two sets of a slot per rank (at most 16)")

local text = S.format(w, "info")
local lines = {}
for line in (text .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = line end
H.eq(lines[1], string.format("window(#%d, 100 f32, host, team %s): w:info() on %d rank%s", w.seq,
                             tostring(w):match("team ([^)]*)"), k, k == 1 and "" or "s"), "title")
local function field(name) -- the lines of one field
  local out, on = {}, false
  for _, l in ipairs(lines) do
    if l:match("^  %S") then on = l:match("^  (%S+)") == name end
    if on then out[#out + 1] = l end
  end
  return out
end
local function one_line(name, value)
  local f = field(name)
  H.eq(#f, 1, name .. ": one line")
  H.truthy(f[1]:match("^  " .. name .. " +" .. value:gsub("%p", "%%%0") .. "$"), name .. ": " .. tostring(f[1]))
end
one_line("bytes", "400")
one_line("dtype", "f32")
one_line("ll_offset", tostring(i.ll_offset))
one_line("scratch_bytes", tostring(i.scratch_bytes))
one_line("sync_offset", tostring(i.sync_offset))
if k == 1 then
  one_line("rank", "0")
else
  local ranks = field("rank")
  H.eq(#ranks, k, "rank: a line per rank")
  for r = 0, k - 1 do H.truthy(ranks[r + 1]:find("[" .. r .. "] " .. r, 1, true), "rank " .. r .. ": " .. ranks[r + 1]) end
end
for _, l in ipairs(lines) do H.truthy(#l <= 76, "fits 80 columns under a [0] prefix: " .. l) end
H.raises(function() S.format(w, "bogus") end, "show: unknown aspect 'bogus' (valid: info, for a window or signals; sync, for a window)")
-- an options table (show has none) or anything but a communicator: named
H.raises(function() show(tensor.new(2), { rows = 2 }) end,
         'show: argument #2 must be a communicator (or "info", "sync"), got table (show takes no options table)')
H.raises(function() S.format(tensor.new(2), 5) end, "show: argument #2 must be a communicator")
local s1 = c:signals(1)
H.raises(function() S.format(s1, "sync") end, "show: unknown aspect 'sync' (valid: info")
s1:free()

-- signals too; nothing of the kernels there
local s = c:signals(2)
local st = S.format(s, "info")
H.truthy(st:find("s:info() on " .. k, 1, true), "signals: " .. st)
H.truthy(not st:find("sync_offset", 1, true), "signals have no kernel areas")
c:barrier()
s:free()
w:free()
