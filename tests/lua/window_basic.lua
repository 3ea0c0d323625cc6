-- Windows on the host backend: registration, my slice, peers' slices,
-- fields, info(), freeing.  Runs at 1, 2 and 4 ranks, and under
-- GCSH_RANKS_PER_NODE (tests/sh/window.sh), where the team is the emulated node.
local H = require "harness"

local c = comm.world()
local T = H.team(c)
local me, n, first, team_size, expected_team = T.me, T.n, T.first, T.size, T.members

-- peer visibility after a barrier
local w = c:window(16, "f32")
H.eq(w.kind, "host", "kind")
H.eq(w.n, 16, "n")
H.eq(w.dtype, "f32", "dtype")
H.eq(w.rank, me, "rank")
H.eq(w.size, n, "size")
H.values(w.team, expected_team, nil, "team")
H.values(w:tensor(), { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }, nil, "a new window reads zeros")
w:tensor():fill(me + 1)
c:barrier()
local nxt = T.next
H.eq(w:peer(nxt)[0], nxt + 1, "peer's element 0 after the barrier")
H.eq(w:peer(nxt)[15], nxt + 1, "peer's last element")
H.eq(w:peer(me)[3], me + 1, "peer(me) is my slice")
H.truthy(w:peer(nxt):equal(tensor.new(16, "f32"):fill(nxt + 1)), "peer view compares")
H.eq(w:peer(nxt):sum(), 16 * (nxt + 1), "peer view sums")
H.truthy(tostring(w:peer(nxt)):find("window of rank " .. nxt, 1, true), "peer view tostring names the owner")
c:barrier()

-- writes through a peer view are seen by the owner
w:peer(nxt)[1] = 100 + me
w:peer(nxt):view(8, 4):copy(tensor.new(4, "f32"):fill(200 + me))
c:barrier()
local prev = T.prev
H.eq(w:tensor()[1], 100 + prev, "element written by the previous rank")
H.values(w:tensor():view(8, 4), { 200 + prev, 200 + prev, 200 + prev, 200 + prev }, nil, "copy into a peer")
-- copy out of a peer into a local tensor
local out = tensor.new(16, "f32")
out:copy(w:peer(nxt))
H.eq(out[1], 100 + me, "copy out of a peer")
c:barrier()

-- info(): sizes rounded to the granularity
local info = w:info()
H.eq(info.kind, "host", "info.kind")
H.eq(info.n, 16, "info.n")
H.eq(info.dtype, "f32", "info.dtype")
H.eq(info.bytes, 64, "info.bytes")
H.truthy(info.granularity >= 4096 and info.granularity % 4096 == 0, "granularity is pages")
H.eq(info.alloc_bytes, info.granularity, "64 bytes round up to one granule")
H.eq(info.seq, w.seq, "info.seq")
H.eq(info.where, "host", "info.where")
H.truthy(info.address:match("^0x%x+$"), "info.address is hex")
H.eq(#info.peers, team_size, "one address per team member")
H.values(info.team, expected_team, nil, "info.team")
local my_index = me - first + 1
H.eq(info.peers[my_index], info.address, "my entry of the peer table is my address")
H.truthy(info.handle:find("MPI_Win_allocate_shared", 1, true), "info.handle")
H.truthy(tostring(w):find("window(#" .. w.seq .. ", 16 f32, host, rank " .. me, 1, true), "tostring")

-- rounding of a size that is not a multiple of the granularity: the data,
-- then the kernels' "ll" area (src/core/kll.h: a 256-byte header and two
-- sets of one slot per rank: 16 bytes per 8 of data up to 64 KiB, in whole
-- 128-byte lines, then ll128's 128 bytes per 120 up to 256 KiB) and the
-- host's 128 bytes of sync words
local big = c:window(info.granularity // 8 + 1, "f64")
local bytes = info.granularity + 8
local ll_part = ((math.min(bytes, 65536) + 7) // 8 * 16 + 127) // 128 * 128
local ll128_part = (math.min(bytes, 262144) + 119) // 120 * 128
local ll = 256 + 2 * math.min(c.size, 16) * (ll_part + ll128_part)
H.eq(big:info().bytes, bytes, "bytes")
H.eq(big:info().alloc_bytes, (bytes + ll + 128 + info.granularity - 1) // info.granularity * info.granularity,
     "data, ll area and sync words rounded up to granules")
big:free()

-- sequence numbers count creations on this comm, equal on every rank
local w2 = c:window(3, "i8")
H.eq(w2.seq, w.seq + 2, "the next window's sequence number")
H.eq(w2.dtype, "i8", "i8 window")
w2:tensor():arange(-1)
c:barrier()
H.values(w2:peer(nxt), { -1, 0, 1 }, nil, "i8 peer values")
w2:free()

-- use after free, through any view
local mine, theirs = w:tensor(), w:peer(nxt)
w:free()
H.raises(function() return mine[0] end, "attempt to use a freed window", "my view after free")
H.raises(function() return theirs[0] end, "attempt to use a freed window", "peer view after free")
H.raises(function() theirs[0] = 1 end, "attempt to use a freed window", "write after free")
H.raises(function() mine:fill(1) end, "attempt to use a freed window", "fill after free")
H.raises(function() w:peer(nxt) end, "attempt to use a freed window", "peer() after free")
H.raises(function() w:tensor() end, "attempt to use a freed window", "tensor() after free")
H.raises(function() return w.n end, "attempt to use a freed window", "a field after free")
H.raises(function() w:info() end, "attempt to use a freed window", "info() after free")
H.eq(tostring(w), "window (freed)", "tostring after free")
H.eq(tostring(mine), "tensor (freed window)", "view tostring after free")
w:free() -- idempotent

-- <close> frees at the end of the scope, on every rank
local view
do
  local scoped <close> = c:window(4, "i32")
  view = scoped:tensor()
  view:fill(7)
  H.eq(view[0], 7, "scoped window works")
end
H.raises(function() return view[0] end, "attempt to use a freed window", "after <close>")

-- the comm cannot be freed under a window
local sub = c:split(0)
local ws = sub:window(2)
H.raises(function() sub:free() end, "still registered on this comm", "comm free refused")
ws:free()
sub:free()

-- every dtype
for _, dt in ipairs(tensor.dtypes) do
  local wd = c:window(5, dt)
  wd:tensor():arange(1)
  c:barrier()
  H.values(wd:peer(nxt), { 1, 2, 3, 4, 5 }, nil, dt .. " window")
  wd:free()
end

-- the README tour: register, write my slice, read the next rank's
if team_size == n then
  local t = c:window(1024)
  t:tensor():fill(rank + 1)
  c:barrier()
  H.eq(t:peer((rank + 1) % size)[0], (rank + 1) % size + 1, "the tour")
  t:free()
end
print("window_basic ok")
