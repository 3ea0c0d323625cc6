-- One-sided transfer figures from Lua (scripts/bench-gpu.sh runs it at 2
-- ranks, after test_cuda_xfer --bench gave the 1 GiB put/get bandwidths):
--   putv of 4096 segments of 4 KiB against 4096 separate puts of the same
--   segments, each engine, posted from Lua (the user's cost: Lua calls,
--   launches, copies), best of 5;
--   ping-pong of an 8-byte put-with-signal: rank 0 puts to rank 1 and waits
--   for rank 1's put back; one-way latency in µs, with stream-ordered waits
--   (everything queued on the GPUs) and with CPU waits (s:wait{cpu=true}).
-- Usage: mpirun -np 2 build-gpu/gcsh scripts/bench/xfer.lua
local c = comm.world()
local me = c.rank
if c.size ~= 2 then
  if me == 0 then print("xfer bench: run at 2 ranks") end
  return
end
local peer = 1 - me
local S, SEG = 4096, 1024 -- f32 elements: 4 KiB segments

local function best_of(reps, fn)
  local best = math.huge
  fn() -- warm-up
  for _ = 1, reps do
    gcsh.sync()
    local t = gcsh.wtime()
    fn()
    gcsh.sync()
    best = math.min(best, gcsh.wtime() - t)
  end
  return best
end

-- (the host backend runs it too, on its one kind: a check of the script)
local kinds = gcsh.backend == "cuda" and { "nccl", "vmm" } or { "host" }
for _, kind in ipairs(kinds) do
  local w = c:window(S * SEG, "f32", { kind = kind })
  local s = c:signals(4, { kind = kind })
  if me == 0 then
    local src = tensor.new(S * SEG, "f32"):fill(1)
    for _, engine in ipairs { "ce", "sm" } do
      local list, singles = {}, {}
      for i = 0, S - 1 do
        local v = src:view(i * SEG, SEG)
        list[#list + 1] = { v, i * SEG }
        singles[#singles + 1] = w:put(1, v, i * SEG, { engine = engine })
      end
      local pv = w:putv(1, list, { engine = engine })
      local t_v = best_of(5, function() pv:post() end)
      local t_s = best_of(5, function() for i = 1, S do singles[i]:post() end end)
      print(string.format("bench xfer %s %s: putv 4096 x 4 KiB %.1f us (%.1f GB/s); 4096 separate puts %.1f us; putv is %.1fx faster",
                          kind, engine, t_v * 1e6, S * SEG * 4 / t_v / 1e9, t_s * 1e6, t_s / t_v))
      pv:cancel()
      for i = 1, S do singles[i]:cancel() end
    end
  end
  c:barrier()

  -- ping-pong: slot 0/1 for ce/sm with GPU waits, 2/3 with CPU waits
  local eight = tensor.new(2, "f32")
  for e, engine in ipairs { "ce", "sm" } do
    for _, cpu in ipairs { false, true } do
      local slot = (e - 1) + (cpu and 2 or 0)
      local iters = cpu and 200 or 2000
      local x = w:put(peer, eight, 0, { engine = engine, signal = { s, slot } })
      local function wait(v)
        if cpu then s:wait { slot = slot, value = v, cpu = true, timeout = 60 } else s:wait(slot, v) end
      end
      c:barrier()
      gcsh.sync()
      local t0 = gcsh.wtime()
      for i = 1, iters do
        if me == 0 then x:post(); wait(i) else wait(i); x:post() end
      end
      gcsh.sync()
      local dt = gcsh.wtime() - t0
      if me == 0 then
        print(string.format("bench xfer %s %s: ping-pong 8 B put-with-signal, %s waits: %.2f us one way (%d round trips)",
                            kind, engine, cpu and "CPU" or "stream-ordered", dt / iters / 2 * 1e6, iters))
      end
      x:cancel()
    end
  end
  c:barrier()
  s:free()
  w:free()
end
