-- One-sided operations across nodes (tests/sh/nodes.sh runs it on simulated
-- nodes of 2 ranks): w:put, w:get, w:putv and put-with-signal, s:set, s:add
-- and s:fetch_add reach a rank of another node over the network path and
-- land exactly, also at the window's end and past one network piece (odd
-- sizes and offsets); a put's signal comes after its data; ranges are
-- checked as for the node's ranks.  scripts/gpu-proxy.sh runs it on GPUs.
local H = require "harness"
local c = comm.world()
local k, me = c.size, c.rank
assert(gcsh.nodes > 1, "nodes_net.lua runs on several nodes (tests/sh/nodes.sh)")
local per = #c:window(1).team -- (collected at the end: reported, freed at exit)
local far = (me + per) % k    -- the same place on the next node
local from = (me - per) % k   -- who puts into my slice
H.truthy(gcsh.node_of(far) ~= gcsh.node, "far is on another node")

local N = 1000
for _, dt in ipairs({ "i32", "f32", "u8" }) do
  local w = c:window(N, dt)
  local s = c:signals(4)
  local mod = dt == "u8" and 251 or 1 << 20
  local function v(r, i) return (r * 37 + i) % mod end
  -- a put with its signal, many rounds: the data is there when the signal is
  local src = tensor.new(N, dt)
  for round = 1, 3 do
    for i = 0, N - 1 do src[i] = v(me + round, i) end
    local x = w:put(far, src, 0, { signal = { s, 1 } })
    H.eq(x.path, "tcp", dt .. ": the path")
    H.truthy(tostring(x):find("network tcp", 1, true), tostring(x))
    x:post()
    s:wait(1, round)
    local mine = w:tensor()
    for i = 0, N - 1 do
      if mine[i] ~= v(from + round, i) then H.eq(mine[i], v(from + round, i), dt .. " round " .. round .. ": element " .. i) end
    end
    c:barrier() -- my slice is read before the next round's put lands
  end
  c:barrier()
  -- the window's end: the last element, and a range ending there
  local last = tensor.new(1, dt):fill(v(me, 7))
  w:put(far, last, N - 1):post()
  local tail = tensor.new(5, dt)
  for i = 0, 4 do tail[i] = v(me, 100 + i) end
  w:putv(far, { { tail, N - 6 } }, { signal = { s, 2, 3 } }):post()
  s:wait(2, 3)
  H.eq(w:tensor()[N - 1], v(from, 7), dt .. ": the last element")
  H.eq(w:tensor()[N - 2], v(from, 104), dt .. ": putv's range at the end")
  H.eq(w:tensor()[N - 6], v(from, 100), dt .. ": putv's first element")
  c:barrier()
  -- a get of the far rank's end: what its own source put there
  local got = tensor.new(6, dt)
  local g = w:get(far, got, N - 6)
  H.eq(g.path, "tcp", dt .. ": get's path")
  g:post()
  H.eq(got[0], v(me, 100), dt .. ": get, first")
  H.eq(got[5], v(me, 7), dt .. ": get, the window's last element")
  -- ranges are checked as for the node's ranks
  H.raises(function() w:put(far, tensor.new(2, dt), N - 1) end, "dst_offset")
  H.raises(function() w:get(far, tensor.new(2, dt), N - 1) end, "src_offset")
  c:barrier()
  s:free()
  w:free()
end

-- more than the network path applies at once (4 MiB pieces, core/netpath.h),
-- odd sizes at odd offsets, ending at the window's end: every byte lands
for _, dt in ipairs({ "u8", "i32" }) do
  local es = dt == "u8" and 1 or 4
  local n = (4 << 20) // es + 3          -- a piece and a bit (odd)
  local w = c:window(n + 1, dt)
  local s = c:signals(1)
  local src = tensor.new(n, dt):rand(100 + me)
  local x = w:put(far, src, 1, { signal = { s, 0 } })  -- odd offset, to the end
  H.eq(x.bytes, n * es, dt .. ": the put's bytes")
  x:post()
  s:wait(0, 1)
  local want = tensor.new(n, dt):rand(100 + from)
  H.truthy(w:tensor():view(1, n):equal(want), dt .. ": " .. n .. " elements from another node, "
           .. "every one")
  c:barrier()
  -- a get of the far rank's slice from an odd offset to its end: my source
  local got = tensor.new(n - 2, dt)
  w:get(far, got, 3):post()
  H.truthy(got:equal(src:view(2, n - 2)), dt .. ": a get of " .. (n - 2) .. " elements")
  c:barrier()
  s:free()
  w:free()
end

-- signals across nodes: set, add, fetch_add; the last slot
local s = c:signals(8)
s:set(far, 7, 40)
s:add(far, 7, 2)
local before = s:fetch_add(far, 0, 5)
H.eq(before, 0, "fetch_add gives the word before")
c:barrier()
H.eq(s:read(7), 42, "set then add from another node, the last slot")
H.eq(s:read(0), 5, "fetch_add from another node")
H.raises(function() s:add(far, 8, 1) end, "slot")
c:barrier()
s:free()
print("nodes_net ok")
