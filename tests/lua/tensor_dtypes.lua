-- tensor: what each dtype stores, bit for bit where it matters: f16/bf16
-- rounding, subnormals, -0, NaN, infinities, integer ranges.
local H = require "harness"

local r = rank

local function one(dt, v)
  return tensor.new(1, dt):fill(v)[0]
end

-- f16 -------------------------------------------------------------------------
H.eq(one("f16", 1 / 3), 0.333251953125, "f16 1/3 rounds to 0x3555")
H.eq(one("f16", 65504), 65504.0, "f16 max")
H.eq(one("f16", 65519), 65504.0, "f16 just below the overflow threshold")
H.eq(one("f16", 65520), math.huge, "f16 overflow threshold rounds to inf")
H.eq(one("f16", 1e6), math.huge, "f16 overflow")
H.eq(one("f16", -1e6), -math.huge, "f16 negative overflow")
H.eq(one("f16", 2 ^ -24), 2 ^ -24, "f16 smallest subnormal")
H.eq(one("f16", 2 ^ -25), 0.0, "f16 half the smallest subnormal ties to 0")
H.eq(one("f16", 3 * 2 ^ -25), 2 ^ -23, "f16 1.5 subnormal ulps ties to even (2)")
H.eq(one("f16", 1e-7), 2 ^ -23, "f16 1e-7 is a subnormal")
H.eq(one("f16", 1e-8), 0.0, "f16 1e-8 underflows to 0")
H.eq(one("f16", 2049), 2048.0, "f16 tie 2049 -> 2048")
H.eq(one("f16", 2051), 2052.0, "f16 tie 2051 -> 2052")
H.eq(one("f16", r + 0.5), r + 0.5, "f16 exact value")
H.eq(1 / one("f16", -0.0), -math.huge, "f16 keeps -0")
local hn = one("f16", 0 / 0)
H.truthy(hn ~= hn, "f16 NaN stays NaN")

-- bf16 ------------------------------------------------------------------------
H.eq(one("bf16", 1 / 3), 0.333984375, "bf16 1/3")
H.eq(one("bf16", 1e-8), 1.0011717677116394e-08, "bf16 1e-8 is normal (0x322c)")
H.eq(one("bf16", 257), 256.0, "bf16 tie 257 -> 256")
H.eq(one("bf16", 259), 260.0, "bf16 tie 259 -> 260")
H.eq(one("bf16", 3.39e38), 3.3895313892515355e38, "bf16 near max rounds to max")
H.eq(one("bf16", 3.4e38), math.huge, "bf16 past max + half an ulp (3.396e38) is inf")
H.eq(one("bf16", 1e39), math.huge, "bf16 overflow")
H.eq(one("bf16", 2 ^ -133), 2 ^ -133, "bf16 smallest subnormal")
H.eq(1 / one("bf16", -0.0), -math.huge, "bf16 keeps -0")
local bn = one("bf16", 0 / 0)
H.truthy(bn ~= bn, "bf16 NaN stays NaN")
-- a double just above a bf16 tie rounds up: no double rounding through f32
H.eq(one("bf16", 1 + 2 ^ -8 + 2 ^ -40), 1 + 2 ^ -7, "bf16 rounds once from the double")

-- f32, f64 --------------------------------------------------------------------
H.eq(one("f32", 1 / 3), 0.3333333432674408, "f32 1/3")
H.eq(one("f32", 1e-45), 1.401298464324817e-45, "f32 smallest subnormal")
H.eq(one("f32", 1e39), math.huge, "f32 overflow")
H.eq(one("f64", 1 / 3), 1 / 3, "f64 exact")
H.eq(one("f64", 2 ^ 53 + 2 * r), 2 ^ 53 + 2 * r, "f64 large")
H.eq(1 / one("f64", -0.0), -math.huge, "f64 keeps -0")

-- -0 and NaN survive element writes, copies and views too
local z = tensor.new(3, "f16"):fill(1)
z[1] = -0.0
z[2] = 0 / 0
local zc = tensor.new(3, "f16"):copy(z)
H.eq(1 / zc[1], -math.huge, "-0 survives copy")
H.truthy(zc[2] ~= zc[2], "NaN survives copy")
H.eq(zc:checksum(), z:checksum(), "copy is bit-exact")

-- integers: every dtype at its bounds ----------------------------------------
local bounds = {
  i64 = {math.mininteger, math.maxinteger},
  i32 = {-2147483648, 2147483647},
  u32 = {0, 4294967295},
  u8 = {0, 255},
  i8 = {-128, 127},
}
for dt, b in pairs(bounds) do
  local t = tensor.from({b[1], b[2], r}, dt)
  H.values(t, {b[1], b[2], r}, nil, dt .. " bounds")
  H.eq(t:sum(), b[1] + b[2] + r, dt .. " sum at bounds (wraps like int64 for i64)")
end

-- integer values land in float dtypes as the nearest float
H.eq(one("f32", 16777217), 16777216.0, "f32 from 2^24 + 1 (tie to even)")
H.eq(one("f64", (1 << 53) + 1), 2.0 ^ 53, "f64 from 2^53 + 1")
H.eq(one("f16", 70000), math.huge, "f16 from a large integer")

-- sizes: a view's length in bytes follows the dtype, visible through checksums
for _, dt in ipairs(tensor.dtypes) do
  local t = tensor.new(10, dt):arange(r)
  H.eq(t:view(0, 5):checksum(), tensor.new(5, dt):arange(r):checksum(), "checksum of view " .. dt)
end
