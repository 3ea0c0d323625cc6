-- The resident kernel of kernel.persistent (kernels/persist.cu) on both
-- window kinds, small enough to run under compute-sanitizer
-- (scripts/gpu-check.sh runs it plainly and under memcheck and synccheck):
-- odd tails and offsets, a region of max_bytes, two blocks (sms=2), twenty
-- calls back to back, then a stop.
--
-- While a resident runs, nothing else goes onto the GPU here: the data is
-- filled before it starts and read after it stopped, and the rings in
-- between make no CUDA call (core/kpersist.h).  compute-sanitizer's API
-- callbacks wait for the device to go idle, which it never does while a
-- resident runs, so a fill or a read between rings would wait forever
-- under it.  (Rings interleaved with other GPU work: tests/lua/persistent.lua.)
-- Calls with op "max" give the same result however many run; the "sum"
-- region takes three calls: (1 + ... + k) * k * k.
local H = require "harness"

local c = comm.world()
local k = c.size
local SUM_AT, SUM_N = 3000, 37

local function run_case(w, dt, sms)
  w:tensor():fill(c.rank + 1)
  gcsh.sync()
  local p = kernel.persistent(w, { max_bytes = 4096, sms = sms })
  local max = 4096 // (dt == "f16" and 2 or 4)
  local cases = { { 0, 1 }, { 1, 3 }, { 3, 37 }, { 3, max } }
  for _, case in ipairs(cases) do
    for _ = 1, 20 do p:allreduce { offset = case[1], n = case[2], op = "max" } end
  end
  for _ = 1, 3 do p:allreduce { offset = SUM_AT, n = SUM_N } end
  p:wait()
  H.eq(p.done, 20 * #cases + 3, "every call done before the stop")
  p:stop()
  H.eq(p.running, false, "stopped")
  local what = string.format("%s %s sms=%d", w.kind, dt, sms)
  for _, case in ipairs(cases) do
    local off, n = case[1], case[2]
    H.eq(w:tensor()[off], k, string.format("%s off=%d n=%d: first", what, off, n))
    H.eq(w:tensor()[off + n - 1], k, string.format("%s off=%d n=%d: last", what, off, n))
  end
  H.eq(w:tensor()[3 + max], c.rank + 1, what .. ": past the largest region, untouched")
  local sum = k * (k + 1) // 2 * k * k
  H.eq(w:tensor()[SUM_AT], sum, what .. ": sum, first")
  H.eq(w:tensor()[SUM_AT + SUM_N - 1], sum, what .. ": sum, last")
end

for _, kind in ipairs(require("common").kinds(comm.world())) do
  for _, dt in ipairs { "f32", "f16", "u32" } do
    local w = c:window(4099, dt, { kind = kind })
    for _, sms in ipairs { 1, 2 } do run_case(w, dt, sms) end
    w:free()
  end
end
