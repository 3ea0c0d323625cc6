-- The "ll" all-reduce's kernel (kernels/ll.cu) on both window kinds, small
-- enough to run under compute-sanitizer (scripts/gpu-check.sh runs it
-- plainly and under memcheck and synccheck): odd tails, odd offsets, out at
-- an odd alignment, a region at the 64 KiB limit, ten calls in a row.
local H = require "harness"

local c = comm.world()
local k = c.size
for _, kind in ipairs(require("common").kinds(comm.world())) do
  for _, dt in ipairs { "f32", "f16", "u32" } do
    local es = dt == "f16" and 2 or 4
    local max = kernel.ll_max_bytes // es
    local w = c:window(max + 3, dt, { kind = kind })
    for _, case in ipairs { { 0, 1 }, { 1, 3 }, { 3, 37 }, { 0, max }, { 3, max } } do
      local off, n = case[1], case[2]
      for call = 1, 10 do
        local out = call % 2 == 0 and tensor.new(n + 1, dt):view(1, n) or nil
        w:tensor():view(off, n):fill(c.rank + call % 3)
        local res = kernel.allreduce(w, { algo = "ll", offset = off, n = n, out = out })
        local want = n * (k * (k - 1) // 2 + k * (call % 3))
        if dt == "f16" then want = nil end -- sums past 2048 round in f16: compare one element
        if want then
          H.eq(res:sum(), want, string.format("%s %s off=%d n=%d call %d", kind, dt, off, n, call))
        else
          H.eq(res[n - 1], k * (k - 1) // 2 + k * (call % 3), string.format("%s f16 n=%d call %d", kind, n, call))
        end
      end
    end
    w:free()
  end
end
