-- Device tensors: every tensor method works on GPU memory and gives what a
-- host tensor with the same content gives (values, sums, checksums).
local H = require "harness"
local G = require "common"

H.eq(gcsh.backend, "cuda", "gcsh.backend")
-- rank r of the machine takes GPU r, or r mod the count when ranks share
-- GPUs (--share-gpu)
local gpus = #gcsh.info().devices
H.truthy(gcsh.device:find("^cuda:" .. gcsh.local_rank % gpus .. " "), "gcsh.device " .. gcsh.device)
H.truthy(type(gcsh.nccl) == "string" and gcsh.nccl:find("^2%."), "gcsh.nccl " .. tostring(gcsh.nccl))

for _, dt in ipairs(G.dtypes) do
  -- lengths whose arange stays exact: 8-bit types hold < 128, bf16 integers
  -- are exact up to 256
  local n = (dt == "u8" or dt == "i8") and 100 or dt == "bf16" and 200 or 1000
  local what = dt .. " "
  local t = tensor.new(n, dt)
  H.eq(#t, n, what .. "#t")
  H.eq(t.dtype, dt, what .. ".dtype")
  H.truthy(tostring(t):find("cuda"), what .. "tostring names the GPU: " .. tostring(t))

  -- fill: against tensor.from (host-encoded values) and the Lua checksum
  local three = G.list(n, function() return 3 end)
  t:fill(3)
  H.values(t, three, nil, what .. "fill")
  H.truthy(t:equal(tensor.from(three, dt)), what .. "fill equals tensor.from")
  H.eq(t:checksum(), tensor.from(three, dt):checksum(), what .. "fill checksum")
  if G.fnv(dt, three) then H.eq(t:checksum(), G.fnv(dt, three), what .. "fill checksum vs Lua") end

  -- arange: integer steps everywhere, quarter steps (exact) for floats
  local ints = G.list(n, function(i) return i end)
  t:arange(0, 1)
  H.values(t, ints, nil, what .. "arange")
  H.near(t:sum(), n * (n - 1) / 2, 1e-6, what .. "sum")
  if G.fnv(dt, ints) then H.eq(t:checksum(), G.fnv(dt, ints), what .. "arange checksum") end
  if G.isfloat[dt] then
    local q = G.list(100, function(i) return -1.5 + 0.25 * i end)
    local u = tensor.new(100, dt):arange(-1.5, 0.25)
    H.values(u, q, nil, what .. "arange(-1.5, 0.25)")
    H.truthy(u:equal(tensor.from(q, dt)), what .. "arange equals tensor.from")
  end

  -- t[i] read / write, views share storage
  t[5] = 7
  H.eq(t[5], 7, what .. "t[5] after write")
  H.eq(t[4], 4, what .. "t[4] untouched")
  local v = t:view(10, 20)
  H.eq(#v, 20, what .. "#view")
  H.eq(v[0], 10, what .. "view[0]")
  v:fill(1)
  H.eq(t[10], 1, what .. "fill through a view")
  H.eq(t[9], 9, what .. "before the view")
  H.eq(t[30], 30, what .. "after the view")

  -- copy device -> device, and equal / checksum agree
  local c = tensor.new(n, dt)
  c:copy(t)
  H.truthy(c:equal(t), what .. "copy equal")
  H.eq(c:checksum(), t:checksum(), what .. "copy checksum")
  H.eq(c:maxdiff(t), 0, what .. "maxdiff")
  H.truthy(c:allclose(t), what .. "allclose")
  c[0] = 2
  H.truthy(not c:equal(t), what .. "equal sees one changed element")

  -- rand: deterministic, in range, element i depends on (seed, i) only
  t:rand(42)
  local a = t:totable()
  local lo, hi = math.huge, -math.huge
  for i = 1, n do lo = math.min(lo, a[i]); hi = math.max(hi, a[i]) end
  if G.isfloat[dt] then
    H.truthy(lo >= 0 and hi < 1, what .. "rand in [0,1): " .. lo .. " " .. hi)
  else
    H.truthy(lo >= 0 and hi < 100 and math.type(a[1]) == "integer", what .. "rand in [0,100)")
  end
  H.truthy(hi > lo, what .. "rand is not constant")
  local again = tensor.new(n, dt):rand(42)
  H.truthy(again:equal(t), what .. "rand(42) twice")
  H.eq(again:checksum(), t:checksum(), what .. "rand checksum")
  H.truthy(tensor.from(a, dt):equal(t), what .. "rand read back and written again")
  local other = tensor.new(n, dt):rand(43)
  H.truthy(not other:equal(t), what .. "rand(43) differs")
  local w = tensor.new(n, dt):fill(0)
  w:view(0, 20):rand(42)
  H.values(w:view(0, 20), G.list(20, function(i) return a[i + 1] end), nil, what .. "rand over a view")
  H.eq(w[20], 0, what .. "rand stays inside its view")
end

print("tensor_device ok")
