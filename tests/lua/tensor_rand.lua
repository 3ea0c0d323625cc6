-- tensor:rand: counter-based, reproducible, in range, rank-dependent by
-- default, and pinned to values computed independently (a Python splitmix64),
-- which the cuda backend must reproduce too.
local H = require "harness"

local r = rank

-- pinned values --------------------------------------------------------------
H.values(tensor.new(3, "f32"):rand(42), {0.34329187870025635, 0.9557467103004456, 0.48634952306747437},
  nil, "f32 seed 42")
H.values(tensor.new(3, "f64"):rand(42), {0.34329192209867343, 0.9557467261317436, 0.48634953628166855},
  nil, "f64 seed 42")
H.values(tensor.new(10, "i32"):rand(7), {49, 45, 86, 31, 17, 46, 56, 8, 98, 28}, nil, "i32 seed 7")
H.values(tensor.new(5, "f16"):rand(1), {0.3662109375, 0.74072265625, 0.51025390625, 0.9267578125, 0.51171875},
  nil, "f16 seed 1")
H.values(tensor.new(5, "bf16"):rand(1), {0.36328125, 0.73828125, 0.5078125, 0.92578125, 0.51171875},
  nil, "bf16 seed 1")
H.values(tensor.new(5, "u8"):rand(-1), {64, 31, 59, 21, 72}, nil, "negative seeds are fine")
H.eq(tensor.new(1000, "f32"):rand(42):checksum(), "0x5d0d2369131adb6e", "f32 seed 42 checksum")
H.eq(tensor.new(10, "i32"):rand(7):checksum(), "0x3670bafce891d6c1", "i32 seed 7 checksum")

-- reproducible, seed-dependent, and the default seed is the rank -------------
for _, dt in ipairs(tensor.dtypes) do
  local a = tensor.new(4096, dt):rand(r + 10)
  local b = tensor.new(4096, dt):rand(r + 10)
  H.truthy(a:equal(b), "same seed, same values " .. dt)
  H.eq(a:checksum(), b:checksum(), "same seed, same bits " .. dt)
  H.truthy(not a:equal(tensor.new(4096, dt):rand(r + 11)), "other seed, other values " .. dt)
  H.truthy(tensor.new(4096, dt):rand():equal(tensor.new(4096, dt):rand(r)), "default seed is the rank " .. dt)
end
-- ranks differ: each rank's default draw equals the explicit seed of its rank
-- and differs from the neighbouring rank's seed
H.truthy(not tensor.new(64):rand():equal(tensor.new(64):rand(r + 1)), "ranks differ")

-- ranges and rough uniformity -------------------------------------------------
local n = 1 << 16
for _, dt in ipairs({"f64", "f32", "f16", "bf16"}) do
  local vals = tensor.new(n, dt):rand(r):totable()
  local lo, hi, sum = math.huge, -math.huge, 0
  for i = 1, n do
    local x = vals[i]
    lo, hi, sum = math.min(lo, x), math.max(hi, x), sum + x
  end
  H.truthy(lo >= 0 and hi < 1, dt .. " in [0,1): " .. lo .. ".." .. hi)
  H.truthy(lo < 0.01 and hi > 0.99, dt .. " spans [0,1)")
  H.near(sum / n, 0.5, 0.01, dt .. " mean")
end
for _, dt in ipairs({"i64", "i32", "u32", "u8", "i8"}) do
  local vals = tensor.new(n, dt):rand(r):totable()
  local counts = {}
  for i = 1, n do
    local k = vals[i]
    H.truthy(math.type(k) == "integer" and k >= 0 and k < 100, dt .. " value in [0,100)")
    counts[k] = (counts[k] or 0) + 1
  end
  for k = 0, 99 do
    -- expected 655 per value, sd ~25: 6 sd either way
    local c = counts[k] or 0
    H.truthy(c > 500 and c < 810, dt .. " value " .. k .. " drawn " .. c .. " times")
  end
end
