-- gcsh.info() on every rank, and the .info table that rank 0 makes of every
-- rank's (lua/gcsh/info.lua): facts equal everywhere once, a row per rank,
-- differing facts folded by rank range, the GPU link matrix, 80 columns at
-- 8 ranks.  The cuda part is fed made-up ranks here (no GPU in CI);
-- tests/gpu/info.sh looks at real ones.
local H = require "harness"
local info = require "gcsh.info"

-- ---- this rank's facts
local mine = gcsh.info()
H.eq(mine.rank, rank, "info.rank")
H.eq(mine.size, size, "info.size")
H.eq(mine.local_rank, gcsh.local_rank, "info.local_rank")
H.eq(mine.backend, gcsh.backend, "info.backend")
H.eq(mine.device, gcsh.device, "info.device")
H.eq(mine.gcsh, gcsh.version, "info.gcsh")
H.truthy(mine.lua:find("^Lua 5%.4"), "info.lua: " .. tostring(mine.lua))
H.truthy(mine.mpi:find("MPI"), "info.mpi: " .. tostring(mine.mpi))
H.truthy(type(mine.host) == "string" and #mine.host > 0, "info.host")
H.truthy(math.type(mine.numa) == "integer", "info.numa is an integer (-1: unknown)")

-- the C heap as malloc counts it (glibc, not under AddressSanitizer, whose
-- allocator glibc does not see): 4 MiB held by Lua shows in both figures,
-- and goes once freed (at least 3 MiB of it: the collector may free other
-- garbage meanwhile)
if os.getenv("ASAN_OPTIONS") == nil then
  H.truthy(math.type(mine.heap_in_use) == "integer" and mine.heap_in_use > 0,
           "info.heap_in_use: " .. tostring(mine.heap_in_use))
  H.truthy(mine.heap_held >= mine.heap_in_use, "info.heap_held >= heap_in_use")
  local before = gcsh.info()
  local big = string.rep("x", 4 << 20)
  local held = gcsh.info()
  H.truthy(held.heap_in_use - before.heap_in_use >= 3 << 20,
           "4 MiB held shows in heap_in_use: +" .. (held.heap_in_use - before.heap_in_use))
  H.truthy(held.heap_held - before.heap_held >= 3 << 20,
           "4 MiB held shows in heap_held: +" .. (held.heap_held - before.heap_held))
  big = nil
  collectgarbage("collect")
  local after = gcsh.info()
  H.truthy(held.heap_in_use - after.heap_in_use >= 3 << 20,
           "freed, it leaves heap_in_use: -" .. (held.heap_in_use - after.heap_in_use))
end

-- serialize: one "key<TAB>value" line per fact, links as links.<pci>
local text = info.serialize({ rank = 3, host = "h\tx", links = { ["0000:19:00.0"] = "NV" },
                              devices = { { name = "skipped" } } })
H.eq(text, "host\th x\nlinks.0000:19:00.0\tNV\nrank\t3\n", "serialize")

H.eq(info.ranges({ 0, 1, 2, 5, 7, 8 }), "0-2,5,7-8", "ranges")

-- ---- made-up cuda ranks: 8 on one node, the last GPU reached over PCIe only,
-- ranks 4-7 with another driver
local function bus(r) return string.format("0000:%02x:00.0", 0x19 + 0x10 * r) end
local function cuda_rank(r, n, opts)
  opts = opts or {}
  local f = {
    rank = r, size = n, node = opts.node or 0, local_rank = r, host = opts.host or "gpu-node-017.example.org",
    backend = "cuda", device = "cuda:" .. r .. " NVIDIA H200", gcsh = "0.1.0", lua = "Lua 5.4.6",
    mpi = "Open MPI v4.1.6", gpu = r, runtime_version = "13.0", nccl_version = "2.28.3",
    driver_version = r < 4 and "13.0" or "12.9", gpu_name = "NVIDIA H200", gpu_memory = 150754820096,
    compute_capability = "9.0", pci = bus(r), numa = r < 4 and 0 or 1, p2p = "yes", vmm = "yes",
    cumem_fd = "yes", cumem_fabric = "no", nccl_symmetric = "yes",
    nvls = "off: GCSH_MULTICAST is not set to 1 (NVLS is opt-in); NCCL_NVLS_ENABLE=0", links = {},
    splits = "own NCCL resources (GCSH_SPLIT_SHARE=0); twin at the first collective",
  }
  for j = 0, n - 1 do
    if j ~= r then f.links[bus(j)] = (j == n - 1 or r == n - 1) and "P2P" or "NV" end
  end
  return info.serialize(f)
end

local texts = {}
for r = 0, 7 do texts[r + 1] = cuda_rank(r, 8) end
local out = info.format(texts)
local lines = {}
for line in out:gmatch("[^\n]+") do
  lines[#lines + 1] = line
  H.truthy(#line <= 80, "80 columns at 8 ranks: " .. line)
end
H.truthy(#lines <= 24, "8 cuda ranks fit a 24-line screen, got " .. #lines)
H.truthy(out:find("NCCL 2.28.3", 1, true), "the NCCL version once")
local _, nccl_count = out:gsub("2%.28%.3", "")
H.eq(nccl_count, 1, "an equal fact is printed once")
H.truthy(out:find("driver [0-3] 13.0, [4-7] 12.9", 1, true), "a differing fact folded by rank range")
H.truthy(out:find("backend cuda: 8 ranks on 1 node, GPU NVIDIA H200, 140.4 GiB, sm 9.0", 1, true),
         "backend, ranks, nodes and the GPU")
H.truthy(out:find("NVLS off: GCSH_MULTICAST is not set to 1", 1, true), "NVLS and why it is off")
H.truthy(not out:find("splits", 1, true), "splits with their own resources: no line (the default)")
H.truthy(out:find("P2P yes, VMM yes, CUMEM handles fd yes, fabric no, NCCL symmetric yes", 1, true), "capabilities on one line")
H.truthy(out:find("\nrank  host          local  device  pci           numa\n", 1, true), "the rank table's header")
H.truthy(out:find("\n   4  gpu-node-017      4  cuda:4  0000:59:00.0     1\n", 1, true), "rank 4's row")
H.truthy(out:find("\nrank    0    1    2    3    4    5    6    7\n", 1, true), "the link matrix's header")
H.truthy(out:find("\n   0    .   NV   NV   NV   NV   NV   NV  P2P\n", 1, true), "rank 0's links")
H.truthy(out:find("\n   7  P2P  P2P  P2P  P2P  P2P  P2P  P2P    .$"), "rank 7's links")

-- splits that share their parent's resources: a line, wrapped
do
  local shared = {}
  for r = 0, 3 do
    shared[r + 1] = cuda_rank(r, 4) .. info.serialize({ splits = "share the parent's NCCL "
      .. "resources and abort flag (GCSH_SPLIT_SHARE=1, the default); twin at the first collective" })
  end
  out = info.format(shared)
  H.truthy(out:find("\nsplits: share the parent's NCCL resources and abort flag (GCSH_SPLIT_SHARE=1,\n"
                    .. "  the default);\n  twin at the first collective\n", 1, true), "sharing splits: " .. out)
end

-- two nodes of two ranks: "net" between them; a rank that sent nothing is named
texts = { cuda_rank(0, 4), cuda_rank(1, 4), cuda_rank(2, 4, { node = 1, host = "other" }), "" }
out = info.format(texts)
H.truthy(out:find("backend cuda: 4 ranks on 2 nodes", 1, true), "nodes counted: " .. out)
H.truthy(out:find("\n   0    .   NV  net", 1, true), "another node's GPU is 'net'")
H.truthy(out:find("gcsh: .info: [3] sent nothing", 1, true), "a silent rank is named")

-- one cuda rank on a machine of 8 GPUs: links to GPUs no rank has, no matrix
out = info.format({ cuda_rank(0, 8) })
H.truthy(out:find("backend cuda: 1 rank on 1 node", 1, true), "one rank: " .. out)
H.truthy(not out:find("GPU links", 1, true), "no link matrix at one rank: " .. out)

-- a host rank: no pci column, no link matrix
out = info.format({ info.serialize(mine) })
H.truthy(not out:find("pci", 1, true) or gcsh.backend == "cuda", "no pci column on host")
H.truthy(not out:find("GPU links", 1, true) or gcsh.backend == "cuda", "no link matrix on host")
