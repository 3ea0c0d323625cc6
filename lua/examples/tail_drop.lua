-- Bug class: a vectorised kernel drops the tail when the byte count is not
-- a multiple of 16.
--
-- A fast reduce kernel works in 16-byte vectors (4 f32 or 8 f16 lanes): a
-- scalar head up to the first 16-byte boundary, then whole vectors, then a
-- scalar tail for what is left.  Forget the tail and every length that does
-- not end on a vector boundary loses its last elements -- while the lengths
-- people test with (powers of two) all pass.
--
-- This script writes that kernel in Lua (out = a + b, lane by lane, the way
-- a CUDA kernel would with float4 loads) and lets repro.sweep compare it
-- with gcsh's own kernel.reduce over lengths 1..48, four offsets, two
-- dtypes and two ops; the sweep shrinks the failures to the smallest one.
--
--   gcsh -n 2 lua/examples/tail_drop.lua          the kernel with its tail: exit 0
--   gcsh -n 2 lua/examples/tail_drop.lua --bug    without: the smallest bad length, exit 1
local opt = repro.args()

local OPS = {
  sum = function(x, y) return x + y end,
  max = function(x, y) return math.max(x, y) end,
}

-- Two inputs of the case's length, at its offset into a larger buffer (so
-- the first element is not always 16-byte aligned), different on each rank.
local function inputs(case)
  local function one(seed)
    local base = tensor.new(case.n + case.offset, case.dtype):rand(seed)
    return base:view(case.offset, case.n)
  end
  return one(2 * rank + 1), one(2 * rank + 2)
end

-- out[i] = a[i] op b[i] in 16-byte vectors.  `bug` forgets the tail.
local function vector_reduce(case, bug)
  local a, b = inputs(case)
  local out = tensor.new(case.n, case.dtype):fill(0)
  local f = OPS[case.op]
  local esize = repro.bytes(case.dtype)
  local lanes = 16 // esize
  local n = case.n
  if n * esize < 16 then -- too short for one vector: all scalar
    for i = 0, n - 1 do out[i] = f(a[i], b[i]) end
    return out
  end
  -- scalar head: elements before the first 16-byte boundary of a
  local head = math.min(n, ((16 - case.offset * esize % 16) % 16) // esize)
  for i = 0, head - 1 do out[i] = f(a[i], b[i]) end
  -- whole vectors
  local body_end = head + (n - head) // lanes * lanes
  for v = head, body_end - 1, lanes do
    for lane = 0, lanes - 1 do out[v + lane] = f(a[v + lane], b[v + lane]) end
  end
  -- scalar tail: the last (n - head) % lanes elements
  if not bug then
    for i = body_end, n - 1 do out[i] = f(a[i], b[i]) end
  end
  return out
end

local function reference(case)
  local a, b = inputs(case)
  local out = tensor.new(case.n, case.dtype)
  kernel.reduce(out, { a, b }, case.op)
  return out
end

local function candidate(case)
  return vector_reduce(case, opt.bug)
end

local lengths = {}
for n = 1, 48 do lengths[n] = n end

local found = repro.sweep {
  candidate = candidate, reference = reference,
  n = lengths, offset = { 0, 1, 2, 3 }, dtype = { "f32", "f16" }, op = { "sum", "max" },
  quiet = true,
}
if found then
  repro.fail("tail dropped: smallest failing case n=%d offset=%d %s %s (%d of %d cases fail): %s",
             found.n, found.offset, found.dtype, found.op, found.failed, found.cases, found.detail)
end
if rank == 0 then print("every length 1..48 at offsets 0..3 matches kernel.reduce") end
