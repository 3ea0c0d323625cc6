-- Graph replays of every kernel algorithm under compute-sanitizer (issue
-- 21): scripts/gpu-check.sh runs it plainly and under memcheck and
-- synccheck, at 2 ranks sharing a GPU on one-GPU machines.  Small regions
-- at odd offsets, captured three calls deep, replayed and mixed with direct
-- calls on the same window; each result equal, bit for bit, to the same
-- calls made directly on a second window.
local H = require "harness"
local G = require "common"

local c = comm.world()
for _, kind in ipairs(G.kinds(c)) do
  for _, dt in ipairs { "f32", "bf16" } do
    for _, algo in ipairs(G.algos_for(kind)) do
      local ws = {}
      for i = 1, 2 do
        ws[i] = c:window(4099, dt, { kind = kind })
        ws[i]:tensor():rand(7 + c.rank)
        ws[i]:multicast { lax = true } -- odd bf16 offsets: the emulation beyond NVLS's rules
      end
      local function calls(w)
        kernel.allreduce(w, { algo = algo, offset = 1, n = 7 })
        kernel.allreduce(w, { algo = algo, offset = 3, n = 4093 })
        kernel.allreduce(w, { algo = algo })
      end
      -- six calls on each window: ws[2]'s first one direct, since some
      -- algorithms' first call on a window cannot be captured (hier makes
      -- the window's cross-node communicator then)
      for _ = 1, 6 do calls(ws[1]) end
      calls(ws[2])
      local g <close> = gcsh.graph(function() calls(ws[2]) end)
      g:replay(2)
      calls(ws[2])
      g:replay(2)
      local tag = string.format("%s %s %s", kind, dt, algo)
      H.eq(ws[2]:tensor():checksum(), ws[1]:tensor():checksum(), tag .. ": replays = calls")
      g:free()
      ws[1]:free()
      ws[2]:free()
    end
  end
end
print(string.format("graph_sanitize: ok on %d ranks", c.size))
