-- tensor: construction, fields, element access, initialisers, reductions,
-- comparisons and printing.  Values depend on `rank`, so every rank checks
-- its own numbers.
local H = require "harness"

local r = rank

-- tensor.dtypes and tensor.new -----------------------------------------
H.values(tensor.dtypes, {"f64", "f32", "f16", "bf16", "i64", "i32", "u32", "u8", "i8"}, nil, "dtypes")

local t = tensor.new(8)
H.eq(t.dtype, "f32", "default dtype")
H.eq(t.n, 8, "t.n")
H.eq(#t, 8, "#t")
H.eq(t.where, "host", "t.where")
H.eq(t.nosuchfield, nil, "unknown field is nil")
H.eq(math.type(t.n), "integer", "n is an integer")

for _, dt in ipairs(tensor.dtypes) do
  local u = tensor.new(5 + r, dt)
  H.eq(u.dtype, dt, "dtype " .. dt)
  H.eq(#u, 5 + r, "length " .. dt)
  -- chaining: initialisers return the tensor itself
  H.eq(u:fill(r + 1), u, "fill returns self " .. dt)
  H.eq(u:arange(), u, "arange returns self " .. dt)
  H.eq(u:rand(1), u, "rand returns self " .. dt)
  H.eq(u:copy(u), u, "copy returns self " .. dt)
end

H.eq(#tensor.new(0), 0, "empty tensor")
H.eq(tensor.new(0):sum(), 0.0, "sum of empty float tensor")
H.eq(tensor.new(0, "i32"):sum(), 0, "sum of empty int tensor")
H.eq(tostring(tensor.new(0, "u8")), "tensor(u8, 0, host) []", "tostring of empty tensor")
H.eq(#tensor.new(3.0), 3, "integral float length accepted")

-- fill, element reads and writes, per dtype --------------------------------
for _, dt in ipairs(tensor.dtypes) do
  local u = tensor.new(4, dt):fill(r + 2)
  H.values(u, {r + 2, r + 2, r + 2, r + 2}, nil, "fill " .. dt)
  u[0] = 7
  u[3] = r
  H.eq(u[0], 7, "write/read [0] " .. dt)
  H.eq(u[3], r, "write/read [3] " .. dt)
  H.eq(u[1], r + 2, "neighbour untouched " .. dt)
  local isfloat = dt == "f64" or dt == "f32" or dt == "f16" or dt == "bf16"
  H.eq(math.type(u[0]), isfloat and "float" or "integer", "element number type " .. dt)
  u[1] = 3.0 -- integral floats are accepted by integer dtypes
  H.eq(u[1], 3, "integral float store " .. dt)
end

-- integer extremes are exact
local i64 = tensor.new(3, "i64"):fill(math.maxinteger)
H.eq(i64[2], math.maxinteger, "i64 max")
i64[1] = math.mininteger
H.eq(i64[1], math.mininteger, "i64 min")
i64:fill((1 << 62) + 1 + r)
H.eq(i64[0], (1 << 62) + 1 + r, "i64 fill beyond 2^53 is exact")
H.eq(tensor.new(1, "u32"):fill(4294967295)[0], 4294967295, "u32 max")
H.eq(tensor.new(1, "i32"):fill(-2147483648)[0], -2147483648, "i32 min")
H.eq(tensor.new(1, "i8"):fill(-128)[0], -128, "i8 min")
H.eq(tensor.new(1, "u8"):fill(255)[0], 255, "u8 max")

-- arange -------------------------------------------------------------------
H.values(tensor.new(5, "i32"):arange(), {0, 1, 2, 3, 4}, nil, "arange default")
H.values(tensor.new(4, "i64"):arange(r), {r, r + 1, r + 2, r + 3}, nil, "arange start")
H.values(tensor.new(4, "i8"):arange(10, -7), {10, 3, -4, -11}, nil, "arange negative step")
H.values(tensor.new(3, "u8"):arange(255, -100), {255, 155, 55}, nil, "arange u8 down")
H.values(tensor.new(4, "f64"):arange(0.5, 0.25), {0.5, 0.75, 1.0, 1.25}, nil, "arange f64")
H.values(tensor.new(3, "f32"):arange(r, 0.1), {r, r + 0.1, r + 0.2}, 1e-6, "arange f32 step 0.1")
H.values(tensor.new(4, "i32"):arange(5.0, 2.0), {5, 7, 9, 11}, nil, "integral float start/step")
H.values(tensor.new(3, "i64"):arange(math.maxinteger - 2), {math.maxinteger - 2, math.maxinteger - 1,
  math.maxinteger}, nil, "arange up to i64 max")
-- f16 cannot hold every integer past 2048: arange rounds to even
local h = tensor.new(4, "f16"):arange(2048)
H.values(h, {2048, 2048, 2050, 2052}, nil, "f16 arange rounds to even past 2048")

-- copy ---------------------------------------------------------------------
for _, dt in ipairs(tensor.dtypes) do
  local src = tensor.new(6, dt):arange(r)
  local dst = tensor.new(6, dt):fill(0):copy(src)
  H.truthy(dst:equal(src), "copy " .. dt)
  src[0] = 99
  H.eq(dst[0], r, "copy is a copy, not an alias " .. dt)
end

-- totable ------------------------------------------------------------------
local tt = tensor.new(4, "i32"):arange(r, 2):totable()
H.eq(type(tt), "table", "totable gives a table")
H.eq(#tt, 4, "totable length")
H.eq(tt[1], r, "totable is 1-based, element 0 first")
H.eq(tt[4], r + 6, "totable last")
H.eq(#tensor.new(0):totable(), 0, "totable of empty")

-- from ---------------------------------------------------------------------
local f = tensor.from({1, 2.5, -3, r})
H.eq(f.dtype, "f32", "from default dtype is f32")
H.values(f, {1, 2.5, -3, r}, nil, "from values")
local fi = tensor.from({5, 6, r}, "i64")
H.eq(fi.dtype, "i64", "from with dtype")
H.eq(math.type(fi[2]), "integer", "from i64 elements are integers")
H.values(fi, {5, 6, r}, nil, "from i64 values")
H.values(tensor.from({}, "u8"), {}, nil, "from empty table")
H.values(tensor.from({1.0, 2.0}, "u8"), {1, 2}, nil, "from integral floats into u8")

-- sum ----------------------------------------------------------------------
local n = 1000 + r
local s = tensor.new(n, "i32"):arange():sum()
H.eq(math.type(s), "integer", "int sum is an integer")
H.eq(s, n * (n - 1) // 2, "int sum")
local fs = tensor.new(n, "f32"):arange():sum()
H.eq(math.type(fs), "float", "float sum is a float")
H.eq(fs, n * (n - 1) / 2, "float sum (exact in f64 accumulation)")
H.eq(tensor.new(4, "u8"):fill(255):sum(), 1020, "u8 sum does not wrap at 8 bits")
H.eq(tensor.new(2, "i64"):fill(math.maxinteger):sum(), -2, "i64 sum wraps like int64")
-- f32 elements that an f32 accumulator would lose: 2^24 + 1 + 1
local acc = tensor.from({16777216, 1, 1}, "f32")
H.eq(acc:sum(), 16777218.0, "sum accumulates in f64")

-- equal, allclose, maxdiff --------------------------------------------------
local a = tensor.new(5, "f64"):arange(r)
local b = tensor.new(5, "f64"):arange(r)
H.truthy(a:equal(b), "equal")
b[4] = b[4] + 1e-9
H.truthy(not a:equal(b), "not equal after a tiny change")
H.truthy(a:allclose(b), "allclose within default tolerance")
H.near(a:maxdiff(b), 1e-9, 1e-6, "maxdiff")
b[4] = b[4] + 1
H.truthy(not a:allclose(b), "not allclose after +1")
H.truthy(a:allclose(b, 0, 1.5), "allclose with atol 1.5")
H.truthy(a:allclose(b, 0.5), "allclose with rtol 0.5")
H.truthy(not a:allclose(b, 0, 0.5), "not allclose with atol 0.5")
H.near(a:maxdiff(b), 1, 1e-6, "maxdiff 1")
H.eq(a:maxdiff(a), 0.0, "maxdiff with itself")
-- mixed dtypes compare values
local ai = tensor.new(5, "i32"):arange(r)
H.truthy(ai:equal(tensor.new(5, "f16"):arange(r)), "equal across dtypes by value")
H.eq(ai:maxdiff(tensor.new(5, "u8"):arange(r + 2)), 2.0, "int maxdiff across dtypes")
H.eq(math.type(ai:maxdiff(ai)), "float", "maxdiff is a float")
-- NaN and infinities (numpy semantics)
local nan = tensor.from({0 / 0, 1}, "f64")
H.truthy(not nan:equal(nan), "NaN is not equal to itself")
H.truthy(not nan:allclose(nan), "NaN is not close to itself")
H.truthy(nan:maxdiff(nan) ~= nan:maxdiff(nan), "maxdiff with NaN is NaN")
local inf = tensor.from({1 / 0, -1 / 0}, "f32")
H.truthy(inf:equal(inf) and inf:allclose(inf), "equal infinities are equal and close")
H.eq(inf:maxdiff(inf), 0.0, "maxdiff of equal infinities")
H.truthy(not inf:allclose(tensor.from({1 / 0, 1 / 0}, "f32")), "opposite infinities are not close")
H.truthy(tensor.from({0.0}):equal(tensor.from({-0.0})), "-0 equals 0")
H.truthy(tensor.new(0):equal(tensor.new(0, "i8")), "empty tensors are equal")

-- checksum -----------------------------------------------------------------
-- Pinned against an independent FNV-1a over the little-endian bytes.
H.eq(tensor.new(8):arange():checksum(), "0x25803f1d38a3dc08", "checksum f32 arange 8")
H.eq(tensor.new(5, "i32"):arange():checksum(), "0xeb29754b740c25f1", "checksum i32 arange 5")
H.eq(tensor.from({1, 2, 3, 4}, "f64"):checksum(), "0x93b2be02cd2882a0", "checksum f64")
H.eq(tensor.from({1, 2, 3}, "u8"):checksum(), "0xd0aa6218672cf5ab", "checksum u8")
H.eq(tensor.new(0):checksum(), "0xcbf29ce484222325", "checksum of empty is the FNV basis")
local c1 = tensor.new(100, "bf16"):arange(r):checksum()
H.eq(c1, tensor.new(100, "bf16"):arange(r):checksum(), "checksum stable")
H.truthy(c1 ~= tensor.new(100, "bf16"):arange(r + 1):checksum(), "checksum sees a change")
H.truthy(tensor.from({0.0}):checksum() ~= tensor.from({-0.0}):checksum(), "checksum sees -0 bits")

-- printing -----------------------------------------------------------------
H.eq(tostring(tensor.new(8):arange()), "tensor(f32, 8, host) [0, 1, 2, 3, 4, 5, 6, 7]", "tostring f32")
H.eq(tostring(tensor.new(1 << 20):fill(r + 3)), string.format(
  "tensor(f32, 1048576, host) [%d, %d, %d, %d, %d, %d, ..., %d, %d, %d, %d, %d, %d]",
  r + 3, r + 3, r + 3, r + 3, r + 3, r + 3, r + 3, r + 3, r + 3, r + 3, r + 3, r + 3), "tostring elided")
H.eq(tostring(tensor.new(16, "i32"):arange()),
  "tensor(i32, 16, host) [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]", "16 elements: no elision")
H.eq(tostring(tensor.new(17, "i32"):arange()),
  "tensor(i32, 17, host) [0, 1, 2, 3, 4, 5, ..., 11, 12, 13, 14, 15, 16]", "17 elements: elided")
H.eq(tostring(tensor.from({1 / 3, 2 / 3}, "f32")), "tensor(f32, 2, host) [0.3333333, 0.6666667]", "%.7g for f32")
H.eq(tostring(tensor.from({1 / 3}, "f64")), "tensor(f64, 1, host) [0.3333333333]", "%.10g for f64")
H.eq(tostring(tensor.from({1 / 3}, "f16")), "tensor(f16, 1, host) [0.3333]", "%.4g for f16")
H.eq(tostring(tensor.from({1 / 3}, "bf16")), "tensor(bf16, 1, host) [0.334]", "%.4g for bf16")
H.eq(tostring(tensor.from({math.mininteger, -1}, "i64")),
  "tensor(i64, 2, host) [-9223372036854775808, -1]", "i64 printed exactly")
H.eq(tostring(tensor.from({4294967295}, "u32")), "tensor(u32, 1, host) [4294967295]", "u32 printed unsigned")
H.eq(tostring(tensor.from({0 / 0, 1 / 0, -1 / 0, -0.0, 1e-8, 65504}, "f32")),
  "tensor(f32, 6, host) [nan, inf, -inf, -0, 1e-08, 65504]", "special values")
H.eq(tostring(tensor.from({-(0 / 0)}, "f64")), "tensor(f64, 1, host) [nan]", "NaN sign not printed")
