-- Shared by the comm_*.lua tests: per-rank input values and their reductions,
-- computed in Lua.  Values are small integers, exact in every dtype (f16 and
-- bf16 included), signed where the dtype is; integer results wrap like the
-- dtype; avg is the mean for floats and truncates toward zero for integers
-- (NCCL's ncclAvg, which the host backend matches).
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

return R
