-- Every reduce-kernel algorithm (kernel.algos; nccl_dev on kind nccl only)
-- and the other kernel collectives, on every window kind that works here, small enough to run
-- under compute-sanitizer (scripts/gpu-check.sh runs it plainly and under
-- memcheck and synccheck, at 2 ranks sharing a GPU on one-GPU machines):
-- odd lengths, odd offsets, out at an odd alignment, three calls in a row;
-- then tests/lua/kernel_mismatch.lua per kind (a mismatch of each algorithm).
local H = require "harness"
local G = require "common"

local c = comm.world()
local k, me = c.size, c.rank
local tri = k * (k + 1) // 2 -- sum over ranks of (rank + 1)
-- the algorithms whose result is always the window's (out= refused)
KEEPS_RESULT_IN_WINDOW = { multicast = true, hier = true }

for _, kind in ipairs(G.kinds(c)) do
  for _, dt in ipairs { "f32", "f16" } do
    local w = c:window(1031 + 5, dt, { kind = kind })
    w:multicast { lax = true } -- odd f16 offsets: the emulation beyond NVLS's rules
    for _, algo in ipairs(G.algos_for(kind)) do
      for _, case in ipairs { { 0, 1 }, { 1, 7 }, { 3, 1031 } } do
        local off, n = case[1], case[2]
        for call = 1, 3 do
          w:tensor():view(off, n):fill(me + 1)
          local out = call == 2 and tensor.new(n + 1, dt):view(1, n) or nil
          local opts = { algo = algo, offset = off, n = n, out = out }
          if out and KEEPS_RESULT_IN_WINDOW[algo] then
            -- these refuse out= (tests/lua/kernel_out.lua checks the words)
            H.raises(function() kernel.allreduce(w, opts) end, "allreduce: algo '" .. algo .. "'")
            opts.out = nil
          end
          local res = kernel.allreduce(w, opts)
          local tag = string.format("%s %s %s off=%d n=%d call %d", kind, dt, algo, off, n, call)
          H.eq(res[0], tri, tag .. " first")
          H.eq(res[n - 1], tri, tag .. " last")
        end
      end
    end
    -- reduce-scatter, all-gather, broadcast and reduce_to over one region
    local n = 8 * k + 3
    w:tensor():view(1, n):fill(me + 1)
    local rs = kernel.reduce_scatter(w, { offset = 1, n = n })
    H.eq(rs[0], tri, kind .. " " .. dt .. " reduce_scatter")
    w:tensor():view(1, n):fill(me + 1)
    local ag = kernel.allgather(w, { offset = 1, n = n })
    H.eq(ag[n - 1], (k - 1) + 1, kind .. " " .. dt .. " allgather: the last chunk is rank k-1's")
    w:tensor():view(1, n):fill(me + 1)
    local bc = kernel.broadcast(0, w, { offset = 1, n = n })
    H.eq(bc[n - 1], 1, kind .. " " .. dt .. " broadcast of rank 0's region")
    w:tensor():view(1, n):fill(me + 1)
    local rt = kernel.reduce_to(0, w, { offset = 1, n = n })
    if me == 0 then H.eq(rt[n - 1], tri, kind .. " " .. dt .. " reduce_to 0") end
    w:free()
  end
end
-- a mismatch of each algorithm, refused before anything runs, and the call after it
for _, kind in ipairs(G.kinds(c)) do
  KERNEL_TEST_KIND = kind
  dofile(assert(package.searchpath("kernel_mismatch", package.path)))
end
print(string.format("algos_sanitize: ok on %d ranks", k))
