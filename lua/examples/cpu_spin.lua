-- Bug class: a CPU thread spins on a transfer instead of a stream-ordered
-- wait on the signal the transfer raises.
--
-- Rank 1 sends rank 0 a block of data, then adds 1 to rank 0's signal word
-- (with release order: whoever sees the signal sees the data).  The reader
-- should wait for the signal -- s:wait(slot, v), which on a GPU is ordered
-- on the stream and does not hold the CPU.  The buggy reader instead spins
-- on the CPU, polling the last element of the destination until it changes,
-- and then uses the whole block.  The bytes of one transfer land in no
-- particular order (copy engines and SMs write in parallel), so the last
-- element says nothing about the first.  Here the writer sends the second
-- half first and the first half 0.3 s later, as a slow copy engine might.
--
--   gcsh -n 2 lua/examples/cpu_spin.lua         wait on the signal: exit 0
--   gcsh -n 2 lua/examples/cpu_spin.lua --bug   spin on the data: stale elements, exit 1
local opt = repro.args()
repro.need { ranks = 2 }

local N = 64
local c = comm.world()
local w = c:window(N)
local s = c:signals(1)
w:tensor():fill(0)
c:barrier()

if rank == 1 then
  local src = tensor.new(N):fill(7)
  local second = w:put(0, src:view(N // 2, N // 2), N // 2)     -- the tail lands first
  local first = w:put(0, src:view(0, N // 2), 0, { signal = { s, 0 } })
  second:post():wait { cpu = true, timeout = 10 }
  gcsh.sleep(0.3)
  first:post():wait { cpu = true, timeout = 10 }
end
local detail
if rank == 0 then
  local t = w:tensor()
  if opt.bug then
    local deadline = gcsh.wtime() + 10
    while t[N - 1] ~= 7 and gcsh.wtime() < deadline do end        -- spin on the data
  else
    s:wait(0, 1)                                                   -- the transfer's signal
  end
  detail = repro.differ(t, tensor.new(N):fill(7))
end
repro.verdict(c, detail, "rank 0 read the block")
if rank == 0 then print("rank 0 read all " .. N .. " elements after the transfer's signal") end
c:barrier()
s:free()
w:free()
