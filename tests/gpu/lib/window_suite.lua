-- Windows and signals of one cuda kind (nccl or vmm), through the Lua
-- surface of src/DESIGN.md: peer visibility after a barrier, writes through peer
-- views, copies out of a peer, info(), signals with data ordering (no
-- barrier between data, signal and reader), CPU waits and their timeout,
-- use after free, mismatches.  One node: the team is every rank.
local H = require "harness"

return function(K)
  if not require("common").kind_here(comm.world(), K) then return end
  local c = comm.world()
  local me, n = c.rank, c.size
  local nxt, prev = (me + 1) % n, (me - 1) % n
  local all = {}
  for r = 0, n - 1 do all[#all + 1] = r end

  -- peer visibility
  local N = 1000
  local w = c:window(N, "f32", { kind = K })
  H.eq(w.kind, K, "kind")
  H.eq(w.n, N, "n")
  H.values(w.team, all, nil, "team is every rank")
  H.eq(w:tensor():sum(), 0, "a new window reads zeros")
  w:tensor():fill(me + 1)
  c:barrier()
  H.eq(w:peer(nxt)[0], nxt + 1, "peer's element 0")
  H.eq(w:peer(nxt)[N - 1], nxt + 1, "peer's last element")
  H.eq(w:peer(nxt):sum(), N * (nxt + 1), "a kernel over a peer view")
  H.eq(w:peer(me)[3], me + 1, "peer(me) is my slice")
  if show then show(w) end
  c:barrier()

  -- writes through a peer view, and copies out of one
  w:peer(nxt)[1] = 100 + me
  w:peer(nxt):view(8, 4):copy(tensor.new(4, "f32"):fill(200 + me))
  c:barrier()
  H.eq(w:tensor()[1], 100 + prev, "element written by the previous rank")
  H.values(w:tensor():view(8, 4), { 200 + prev, 200 + prev, 200 + prev, 200 + prev }, nil,
           "copy into a peer")
  local out = tensor.new(N, "f32")
  out:copy(w:peer(nxt))
  H.eq(out[1], 100 + me, "copy out of a peer into a device tensor")
  H.eq(out[N - 1], nxt + 1, "copy out of a peer, last element")
  c:barrier()

  -- info: rounding and handles
  local info = w:info()
  H.eq(info.kind, K, "info.kind")
  H.eq(info.bytes, N * 4, "info.bytes")
  H.truthy(info.granularity >= 4096 and info.alloc_bytes % info.granularity == 0,
           "alloc_bytes is whole granules")
  H.eq(#info.peers, n, "one peer address per rank")
  H.truthy(info.handle:find(K == "nccl" and "ncclWindow_t" or "cuMemCreate", 1, true),
           "info.handle: " .. tostring(info.handle))

  -- signals: data, then signal, on the writer's stream; wait, then read, on
  -- the reader's (s:wait returns at once; the element reads queue behind it)
  local s = c:signals(4, { kind = K })
  local D = 1 << 16
  local d = c:window(D, "i32", { kind = K })
  for round = 1, 4 do
    d:peer(nxt):fill(round * 1000 + me)
    s:add(nxt, 0, 1)
    s:wait(0, round)
    H.eq(d:tensor()[0], round * 1000 + prev, "round " .. round .. " first element after the wait")
    H.eq(d:tensor()[D - 1], round * 1000 + prev, "round " .. round .. " last element after the wait")
    -- "read": the writer may overwrite my slice in the next round only then
    s:add(prev, 1, 1)
    s:wait(1, round)
  end
  H.eq(s:read(0), 4, "slot 0 after four rounds")
  s:set(nxt, 2, 7)
  s:wait{ slot = 2, value = 7, cmp = "==", cpu = true, timeout = 30 }
  H.raises(function() s:wait{ slot = 3, value = 1, cpu = true, timeout = 0.05 } end, "timed out",
           "a CPU wait that is never satisfied")
  c:barrier()
  s:free()
  d:free()

  -- use after free, views included
  local view = w:peer(nxt)
  w:free()
  H.raises(function() return w:tensor() end, "attempt to use a freed window", "w after free")
  H.raises(function() return view[0] end, "attempt to use a freed window", "peer view after free")
  w:free() -- idempotent

  -- mismatches and bad kinds: the same error everywhere, nothing registered
  if n > 1 then
    H.raises(function() c:window(me == 1 and 1025 or 1024, "f32", { kind = K }) end,
             "ranks disagree", "n mismatch")
    local other = K == "nccl" and "vmm" or "nccl"
    H.raises(function() c:window(16, "f32", { kind = me == 0 and other or K }) end,
             "ranks disagree", "kind mismatch")
  end
  H.raises(function() c:window(4, "f32", { kind = "host" }) end,
           "unknown kind 'host' (valid: nccl vmm)", "host kind on cuda")
  local w2 = c:window(4, "f32", { kind = K })
  w2:tensor():fill(me)
  c:barrier()
  H.eq(w2:peer(nxt)[3], nxt, "a window after the errors works")
  c:barrier()
  w2:free()
end
