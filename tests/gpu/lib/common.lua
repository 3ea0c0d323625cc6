-- Shared by the GPU tests: dtypes, exact-value helpers, and a Lua FNV-1a of
-- packed element bytes (what :checksum() computes over a host tensor).
local G = {}

G.dtypes = {"f64", "f32", "f16", "bf16", "i64", "i32", "u32", "u8", "i8"}
G.isfloat = {f64 = true, f32 = true, f16 = true, bf16 = true}
G.ops = {"sum", "prod", "min", "max", "avg"}

local packfmt = {f64 = "<d", f32 = "<f", i64 = "<i8", i32 = "<i4", u32 = "<I4", u8 = "B", i8 = "b"}

-- The checksum a host tensor of dtype dt holding vals (0-based list in a Lua
-- table, 1-based indices) would give; nil for f16/bf16 (string.pack has no
-- half formats).
function G.fnv(dt, vals)
  local fmt = packfmt[dt]
  if not fmt then return nil end
  local h = 0xcbf29ce484222325
  for i = 1, #vals do
    local v = vals[i]
    if not G.isfloat[dt] then v = math.tointeger(v) end
    local bytes = string.pack(fmt, v)
    for k = 1, #bytes do
      h = (h ~ bytes:byte(k)) * 0x100000001b3 -- Lua integers wrap like uint64
    end
  end
  return string.format("0x%016x", h)
end

function G.list(n, f)
  local t = {}
  for i = 0, n - 1 do t[i + 1] = f(i) end
  return t
end

-- Whether NCCL must offer symmetric memory to c: several ranks, each on a
-- GPU of its own with peer access, and nothing turning it off.
local function nccl_expected(c)
  local info = gcsh.info()
  return c.size > 1 and info.gpu_shared == "no" and info.p2p == "yes" and
         os.getenv("NCCL_WIN_ENABLE") ~= "0" and os.getenv("NCCL_CUMEM_ENABLE") ~= "0"
end

-- Whether windows of kind K work on communicator c here.  Where the
-- backend refuses K (kind "nccl" where NCCL offers no symmetric memory: one
-- rank, ranks sharing a GPU), the refusal must say why and name "vmm", the
-- kind that works; then the caller skips K's tests, and says so.  Where
-- NCCL must offer it (nccl_expected), a refusal fails.
function G.kind_here(c, K)
  local ok, err = pcall(c.window, c, 1, "f32", { kind = K })
  if ok then
    err:free()
    return true
  end
  local H = require "harness"
  H.truthy(K == "nccl" and not nccl_expected(c),
           "kind " .. K .. " refused where it must work: " .. tostring(err))
  H.truthy(tostring(err):find("kind '" .. K .. "' does not work here: ", 1, true),
           "refusal says why: " .. tostring(err))
  H.truthy(tostring(err):find("kind='vmm' works", 1, true), "refusal names vmm: " .. tostring(err))
  if c.rank == 0 then print(string.format("kind %s refused here, as it must be: %s", K, err)) end
  return false
end

-- kernel.algos that run on windows of kind K: all but "nccl_dev" (NCCL's
-- device API) on kinds other than nccl.
function G.algos_for(K)
  local out = {}
  for _, algo in ipairs(kernel.algos) do
    if algo ~= "nccl_dev" or K == "nccl" then out[#out + 1] = algo end
  end
  return out
end

-- The kinds of window that work on c here, in the backend's order.
function G.kinds(c)
  local out = {}
  for _, K in ipairs { "nccl", "vmm" } do
    if G.kind_here(c, K) then out[#out + 1] = K end
  end
  local w = c:window(1)
  require("harness").eq(w.kind, out[1], "a window without kind= gets the first kind that works")
  w:free()
  return out
end

return G
