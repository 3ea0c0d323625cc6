-- Shared by the comm_*.lua tests: per-rank input values and their reductions,
-- computed in Lua.  Values are small integers, exact in every dtype (f16 and
-- bf16 included), signed where the dtype is; integer results wrap like the
-- dtype; avg is the mean for floats and truncates toward zero for integers
-- (NCCL's ncclAvg, which the host backend matches).
--
-- required as a module by the comm tests; run as a test itself (tests/run.sh
-- runs every file here), it checks the reference on known cases.
local as_module = ... == "comm_ref"
local R = {}

R.DTYPES = { "f64", "f32", "f16", "bf16", "i64", "i32", "u32", "u8", "i8" }
R.OPS = { "sum", "prod", "min", "max", "avg" }

local UNSIGNED = { u32 = true, u8 = true }
local FLOAT = { f64 = true, f32 = true, f16 = true, bf16 = true }
local BITS = { i32 = 32, u32 = 32, u8 = 8, i8 = 8 }
local SIGNED = { i32 = true, i8 = true }

function R.is_float(dt) return FLOAT[dt] end

local function wrap(dt, v)
  local bits = BITS[dt]
  if not bits then return v end
  local m = 1 << bits
  v = v % m
  if SIGNED[dt] and v >= m // 2 then v = v - m end
  return v
end

-- Element i of rank r's input: -2..2 (signed and floats) or 1..5 (unsigned).
function R.value(dt, r, i)
  local k = (i + 3 * r) % 5
  if UNSIGNED[dt] then return k + 1 end
  return k - 2
end

local COMBINE = {
  sum = function(a, b) return a + b end,
  avg = function(a, b) return a + b end,
  prod = function(a, b) return a * b end,
  min = math.min,
  max = math.max,
}

-- Element i of the reduction over ranks 0..n-1.
function R.reduced(dt, op, n, i)
  local acc = R.value(dt, 0, i)
  for r = 1, n - 1 do acc = wrap(dt, COMBINE[op](acc, R.value(dt, r, i))) end
  if op == "avg" then
    if FLOAT[dt] then return acc / n end
    local q = acc // n
    if q < 0 and q * n ~= acc then q = q + 1 end
    return q
  end
  return acc
end

-- Lua table of `count` values f(i) for i = first .. first+count-1.
function R.seq(first, count, f)
  local t = {}
  for i = 0, count - 1 do t[i + 1] = f(first + i) end
  return t
end

if as_module then return R end

local H = require "harness"
H.eq(wrap("i8", 130), -126, "i8 wraps")
H.eq(wrap("u8", 300), 44, "u8 wraps")
H.eq(wrap("i8", -129), 127, "i8 wraps below")
H.eq(R.value("u8", 0, 0), 1, "unsigned values are 1..5")
H.eq(R.value("i32", 0, 0), -2, "signed values are -2..2")
-- two ranks, element 0: -2 and 1 (sum -1); element 1: -1 and 2
H.eq(R.reduced("i32", "sum", 2, 0), -1, "sum")
H.eq(R.reduced("i32", "avg", 2, 0), 0, "integer avg truncates toward zero (not floor: -1)")
H.eq(R.reduced("f32", "avg", 2, 0), -0.5, "float avg is the mean")
H.eq(R.reduced("i8", "prod", 2, 1), -2, "prod")
H.eq(R.reduced("i8", "min", 2, 1), -1, "min")
H.eq(R.reduced("i8", "max", 2, 1), 2, "max")
-- four ranks, element 0: -2, 1, -1, 2; unsigned: 1, 4, 2, 5
H.eq(R.reduced("i64", "prod", 4, 0), 4, "prod of four")
H.eq(R.reduced("u8", "prod", 4, 0), 40, "unsigned prod of four")
H.eq(R.reduced("u8", "avg", 4, 0), 3, "unsigned avg 12 / 4")
H.eq(R.reduced("bf16", "avg", 4, 0), 0.0, "float avg of four")
H.values(R.seq(3, 3, function(i) return i * i end), { 9, 16, 25 }, nil, "seq")
if rank == 0 then print("comm_ref: ok") end
