-- gcsh.info: the .info table.
--
-- Every rank sends gcsh.info() as text (serialize); rank 0 prints one table
-- of all of them (format): what is equal on every rank once (versions,
-- backend, GPU model, capabilities), a row per rank (host, local rank,
-- device, PCI bus, NUMA node), and on cuda the links between the ranks'
-- GPUs.  A fact that differs between ranks is folded by rank range:
--   GPU: [0-3] NVIDIA H200, [4-7] NVIDIA H100
-- Readable at 8 ranks in 80 columns.
local M = {}

local WIDTH = 80

-- ---- every rank: its facts as "key<TAB>value" lines ----------------------

local function one_line(v)
  return (tostring(v):gsub("[\t\n]", " "))
end

-- Scalars as they are; a table of scalars (links) as key.sub lines; deeper
-- tables (devices, peer_access) stay for gcsh.info() itself.
function M.serialize(info)
  local out = {}
  for k, v in pairs(info) do
    if type(v) ~= "table" then
      out[#out + 1] = one_line(k) .. "\t" .. one_line(v)
    else
      for sub, x in pairs(v) do
        if type(x) ~= "table" and type(sub) == "string" then
          out[#out + 1] = one_line(k) .. "." .. one_line(sub) .. "\t" .. one_line(x)
        end
      end
    end
  end
  table.sort(out)
  return table.concat(out, "\n") .. "\n"
end

-- ---- rank 0: one table --------------------------------------------------

local function parse(text)
  local facts, links, other = {}, {}, {}
  for line in text:gmatch("[^\n]+") do
    local k, v = line:match("^([^\t]+)\t(.*)$")
    if not k then
      other[#other + 1] = line
    elseif k:sub(1, 6) == "links." then
      links[k:sub(7)] = v
    else
      facts[k] = v
    end
  end
  return facts, links, other
end

-- "0-2,5" from a sorted list of ranks (the reproducers' helper).
M.ranges = require("gcsh.repro").ranges

-- A fact over every rank: its value when equal on every rank that sent
-- facts (a silent one is named apart), nil when absent everywhere, else
-- "[0-3] a, [4-7] b".
local function folded(ranks, key)
  local order, by, speaking = {}, {}, 0
  for r, f in ipairs(ranks) do
    if next(f) then speaking = speaking + 1 end
    local v = f[key]
    if v ~= nil then
      if not by[v] then by[v] = {}; order[#order + 1] = v end
      table.insert(by[v], r - 1)
    end
  end
  if #order == 0 then return nil end
  if #order == 1 and #by[order[1]] == speaking then return order[1] end
  local parts = {}
  for _, v in ipairs(order) do parts[#parts + 1] = "[" .. M.ranges(by[v]) .. "] " .. v end
  return table.concat(parts, ", ")
end

-- Items joined by sep, wrapped at WIDTH with a two-space indent.
local function wrap(items, sep, out)
  local line = ""
  for _, item in ipairs(items) do
    local add = line == "" and item or (line .. sep .. item)
    if #add > WIDTH and line ~= "" then
      out[#out + 1] = line .. sep:gsub("%s+$", "")
      line = "  " .. item
    else
      line = add
    end
  end
  if line ~= "" then out[#out + 1] = line end
end

local function gib(bytes)
  local n = tonumber(bytes)
  return n and string.format("%.1f GiB", n / 2 ^ 30) or bytes
end

-- Facts printed once (label, key, how to show the value); the rest of the
-- keys not in ROW or USED come out generically at the end.
local VERSIONS = {
  { "gcsh", "gcsh" }, { nil, "lua" }, { nil, "mpi" }, { "NCCL", "nccl_version" },
  { "CUDA", "runtime_version" }, { "driver", "driver_version" },
}
local DEVICE = {
  { "GPU", "gpu_name" }, { nil, "gpu_memory", gib }, { "sm", "compute_capability" },
}
local CAPS = {
  { "P2P", "p2p" }, { "VMM", "vmm" }, { "CUMEM handles fd", "cumem_fd" },
  { "fabric", "cumem_fabric" }, { "NCCL symmetric", "nccl_symmetric" },
}
local NVLS = { { "NVLS", "nvls" } }
-- One long fact, wrapped at its words.
-- One item, wrapped after its "; " parts, and between words where a part
-- alone passes WIDTH.
local function wrap_words(item, out)
  local parts, lines = {}, {}
  for part in (item .. "; "):gmatch("(.-); ") do parts[#parts + 1] = part end
  wrap(parts, "; ", lines)
  for _, line in ipairs(lines) do
    if #line <= WIDTH then
      out[#out + 1] = line
    else
      local words = {}
      for w in line:gmatch("%S+") do words[#words + 1] = w end
      if line:match("^  ") then words[1] = "  " .. words[1] end
      wrap(words, " ", out)
    end
  end
end

-- How c:split makes a communicator (cuda: src/cuda/cuda_comm.c): a line
-- only when splits share their parent's NCCL resources (GCSH_SPLIT_SHARE=1,
-- the default), which changes what an abort takes with it; "own NCCL
-- resources ..." (GCSH_SPLIT_SHARE=0) stays in gcsh.info().splits, off a
-- screen that is full at 8 ranks.
local function splits_line(ranks, used, out)
  used.splits = true
  local v = folded(ranks, "splits")
  if v and not v:find("^own ") then wrap_words("splits: " .. v, out) end
end
-- which networks MPI may use (gcsh -n's launcher: shell/launch_net.h)
local NET = { { "MPI network:", "mpi_network" } }
-- --share-gpu: who shares a GPU, what serves them, how NCCL tells them apart;
-- where c:allreduce and kin run by default (bind/comm_route.c)
local SHARE = {
  { "GPU shared:", "gpu_shared" }, { "MPS:", "mps" }, { "NCCL hosts:", "nccl_hosts" },
  { "collectives:", "comm_route" },
}
local ROW = {
  { "rank", "rank" }, { "host", "host" }, { "node", "node" }, { "pid", "pid" },
  { "local", "local_rank" },
  { "device", "device" },
  { "pci", "pci" }, { "numa", "numa" },
}
-- gpu_memory_used and the heap's figures change from moment to moment:
-- gcsh.info()'s, not .info's
local USED = { size = true, node = true, backend = true, gpu = true, gpu_memory_used = true,
               heap_in_use = true, heap_held = true }

local function items(ranks, specs, used)
  local out = {}
  for _, s in ipairs(specs) do
    local label, key, show = s[1], s[2], s[3]
    used[key] = true
    local v = folded(ranks, key)
    if v then
      if show and not v:find("^%[") then v = show(v) end
      out[#out + 1] = label and (label .. " " .. v) or v
    end
  end
  return out
end

local function count_nodes(ranks)
  local seen, n = {}, 0
  for _, f in ipairs(ranks) do
    local node = f.node or f.host
    if node and not seen[node] then seen[node] = true; n = n + 1 end
  end
  return n
end

-- The device column: "cuda:0" (the model is a fact of its own, gpu_name).
local function short_device(v) return (v or "?"):match("^(%S+)") end

-- (the node column only where there are several: gcsh.node, MPI's shared-memory groups)
local function rank_table(ranks, used, out, nodes)
  local cols = {}
  for _, c in ipairs(ROW) do
    used[c[2]] = true
    for _, f in ipairs(ranks) do
      if c[2] == "node" and nodes < 2 then break end
      if f[c[2]] and f[c[2]] ~= "-1" then cols[#cols + 1] = c; break end
    end
  end
  local grid = { {} }
  for i, c in ipairs(cols) do grid[1][i] = c[1] end
  for r, f in ipairs(ranks) do
    local row = {}
    for i, c in ipairs(cols) do
      local v = f[c[2]]
      if c[2] == "rank" then v = v or tostring(r - 1) end
      if c[2] == "device" then v = short_device(v) end
      if c[2] == "host" and v then v = v:match("^[^.]*"):sub(1, 16) end
      if v == nil or v == "-1" then v = "-" end
      row[i] = v
    end
    grid[#grid + 1] = row
  end
  local width = {}
  for _, row in ipairs(grid) do
    for i, cell in ipairs(row) do width[i] = math.max(width[i] or 0, #cell) end
  end
  for _, row in ipairs(grid) do
    local cells = {}
    for i, cell in ipairs(row) do
      local numeric = cols[i][2] == "rank" or cols[i][2] == "pid" or cols[i][2] == "local_rank"
                      or cols[i][2] == "numa" or cols[i][2] == "node"
      cells[i] = string.format("%" .. (numeric and "" or "-") .. width[i] .. "s", cell)
    end
    out[#out + 1] = (table.concat(cells, "  "):gsub("%s+$", ""))
  end
end

local LINK_TITLE = "GPU links (NV: NVLink, P2P: PCIe, -: no peer access, =: same GPU, net: other)"
-- The link from rank i's GPU to rank j's: what rank i found between its
-- device and the one at rank j's PCI address, on the same host.
local function link_matrix(ranks, links, out)
  -- links to other GPUs, or ranks that share a GPU (--share-gpu); a rank
  -- alone has no pair to show, whatever other GPUs its machine has
  if #ranks < 2 then return end
  local any, seen = false, {}
  for i, l in ipairs(links) do
    local f = ranks[i]
    local gpu = f.pci and ((f.host or "") .. "/" .. (f.node or "") .. "/" .. f.pci)
    if next(l) or (gpu and seen[gpu]) then any = true end
    if gpu then seen[gpu] = true end
  end
  if not any then return end
  out[#out + 1] = LINK_TITLE
  local header = { "rank" }
  for j = 1, #ranks do header[#header + 1] = string.format("%5d", j - 1) end
  out[#out + 1] = table.concat(header)
  for i, fi in ipairs(ranks) do
    local row = { string.format("%4d", i - 1) }
    for j, fj in ipairs(ranks) do
      local cell
      if i == j then cell = "."
      elseif fi.host ~= fj.host or fi.node ~= fj.node then cell = "net"
      elseif fi.pci and fi.pci == fj.pci then cell = "="
      else cell = links[i][fj.pci or ""] or "?" end
      if cell == "none" then cell = "-" end
      row[#row + 1] = string.format("%5s", cell)
    end
    out[#out + 1] = table.concat(row)
  end
end

-- texts[r + 1]: what rank r sent (serialize), "" for a rank that sent nothing.
function M.format(texts)
  local ranks, links, problems = {}, {}, {}
  for r, text in ipairs(texts) do
    local f, l, other = parse(text)
    ranks[r], links[r] = f, l
    if #other > 0 then problems[#problems + 1] = "[" .. (r - 1) .. "] " .. table.concat(other, " ") end
    if text == "" then problems[#problems + 1] = "[" .. (r - 1) .. "] sent nothing (lost?)" end
  end
  local used, out = {}, {}
  wrap(items(ranks, VERSIONS, used), ", ", out)
  local backend = folded(ranks, "backend") or "?"
  local nodes = count_nodes(ranks)
  local head = { string.format("backend %s: %d rank%s on %d node%s", backend, #ranks,
                               #ranks == 1 and "" or "s", nodes, nodes == 1 and "" or "s") }
  for _, item in ipairs(items(ranks, DEVICE, used)) do head[#head + 1] = item end
  wrap(head, ", ", out)
  wrap(items(ranks, CAPS, used), ", ", out)
  for _, item in ipairs(items(ranks, NVLS, used)) do wrap_words(item, out) end
  for _, item in ipairs(items(ranks, NET, used)) do wrap_words(item, out) end
  splits_line(ranks, used, out)
  for _, item in ipairs(items(ranks, SHARE, used)) do wrap_words(item, out) end
  rank_table(ranks, used, out, nodes)
  link_matrix(ranks, links, out)
  -- facts no list above knows (a backend's new ones): generically, sorted
  local rest = {}
  for _, f in ipairs(ranks) do
    for k in pairs(f) do
      if not used[k] and not USED[k] and not rest[k] then rest[k] = true; rest[#rest + 1] = k end
    end
  end
  table.sort(rest)
  local extra = {}
  for _, k in ipairs(rest) do extra[#extra + 1] = k .. " " .. folded(ranks, k) end
  wrap(extra, "; ", out)
  for _, p in ipairs(problems) do out[#out + 1] = "gcsh: .info: " .. p end
  return table.concat(out, "\n")
end

return M
