-- The resident kernel of kernel.persistent (kernels/persist.cu) on both
-- window kinds, small enough to run under compute-sanitizer
-- (scripts/gpu-check.sh runs it plainly and under memcheck and synccheck):
-- odd tails and offsets, a region of max_bytes, two blocks (sms=2), twenty
-- calls back to back, then a stop.
local H = require "harness"

local c = comm.world()
local k = c.size
for _, kind in ipairs(require("common").kinds(comm.world())) do
  for _, dt in ipairs { "f32", "f16", "u32" } do
    local w = c:window(4099, dt, { kind = kind })
    for _, sms in ipairs { 1, 2 } do
      local p = kernel.persistent(w, { max_bytes = 4096, sms = sms })
      local max = 4096 // (dt == "f16" and 2 or 4)
      for _, case in ipairs { { 0, 1 }, { 1, 3 }, { 3, 37 }, { 3, max } } do
        local off, n = case[1], case[2]
        for call = 1, 20 do
          w:tensor():view(off, n):fill(c.rank + call % 3)
          p:allreduce { offset = off, n = n }
        end
        local want = k * (k - 1) // 2 + k * (20 % 3)
        H.eq(w:tensor()[off + n - 1], want, string.format("%s %s sms=%d off=%d n=%d", kind, dt, sms, off, n))
        H.eq(w:tensor()[off], want, string.format("%s %s sms=%d off=%d: first", kind, dt, sms, off))
      end
      p:stop()
      H.eq(p.running, false, "stopped")
    end
    w:free()
  end
end
