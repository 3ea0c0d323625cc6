-- The "ll" and "ll128" all-reduces' kernels (kernels/ll.cu, ll128.cu) on
-- both window kinds, small enough to run under compute-sanitizer
-- (scripts/gpu-check.sh runs it plainly and under memcheck and synccheck):
-- odd tails, odd offsets, out at an odd alignment, a region at each one's
-- limit (64 and 256 KiB), ten calls in a row (four at the limit), the two mixed on a window.
local H = require "harness"

local c = comm.world()
local k = c.size
for _, kind in ipairs(require("common").kinds(comm.world())) do
  for dt_algo, dt in ipairs { "f32", "f16", "u32" } do
   for _, algo in ipairs { "ll", "ll128" } do
    local es = dt:find("16") and 2 or 4
    local max = (algo == "ll" and kernel.ll_max_bytes or kernel.ll128_max_bytes) // es
    local w = c:window(max + 3, dt, { kind = kind })
    for _, case in ipairs { { 0, 1 }, { 1, 3 }, { 3, 37 }, { 1, 61 }, { 0, max }, { 3, max } } do
      local off, n = case[1], case[2]
      for call = 1, n > 1000 and 4 or 10 do -- (under the sanitizer a call at the limit is slow)
        local out = call % 2 == 0 and tensor.new(n + 1, dt):view(1, n) or nil
        w:tensor():view(off, n):fill(c.rank + call % 3)
        -- every third call the other protocol, on the same LL area
        local a = (call + dt_algo) % 3 == 0 and (algo == "ll" and "ll128" or "ll") or algo
        if a == "ll" and n * es > kernel.ll_max_bytes then a = algo end
        local res = kernel.allreduce(w, { algo = a, offset = off, n = n, out = out })
        local want = n * (k * (k - 1) // 2 + k * (call % 3))
        if es == 2 then want = nil end -- sums past 2048 round in f16: compare one element
        if want then
          H.eq(res:sum(), want, string.format("%s %s %s off=%d n=%d call %d", kind, a, dt, off, n, call))
        else
          H.eq(res[n - 1], k * (k - 1) // 2 + k * (call % 3),
               string.format("%s %s %s n=%d call %d", kind, a, dt, n, call))
          H.eq(res[0], k * (k - 1) // 2 + k * (call % 3),
               string.format("%s %s %s n=%d call %d, element 0", kind, a, dt, n, call))
        end
      end
    end
    w:free()
   end
  end
end
