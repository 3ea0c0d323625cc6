-- algo="auto": kernel.choose reads the crossover table (kernel.crossovers,
-- src/core/kreduce_tune.h) as documented, at and either side of every
-- limit, and kernel.allreduce{algo="auto"} runs what kernel.choose names
-- for the window's team, with the same bits as that algorithm run directly.
-- Also run by tests/gpu/kernel_*.lua with KERNEL_TEST_KIND set.
local H = require "harness"

local c = comm.world()
local kind = rawget(_G, "KERNEL_TEST_KIND")
local LL_MAX = kernel.ll_max_bytes
H.eq(LL_MAX, 64 << 10, "kernel.ll_max_bytes")
local LL128_MAX = kernel.ll128_max_bytes

-- the row auto reads for (backend, team): the first with team_size >= team,
-- else the last of the backend
local function row_for(backend, team)
  local last
  for _, r in ipairs(kernel.crossovers) do
    if r.backend == backend then
      if r.team_size >= team then return r end
      last = r
    end
  end
  return last
end

-- what the table says auto runs, written out from the README's rule
local function expected(r, bytes)
  if bytes <= r.ll_max then return "ll" end
  if bytes <= r.ll128_max then return "ll128" end
  if bytes <= r.oneshot_max then return "oneshot" end
  return bytes <= r.twoshot_max and "twoshot" or "comm"
end

local backends = {}
for _, r in ipairs(kernel.crossovers) do
  H.truthy(r.ll_max <= LL_MAX, r.backend .. " " .. r.team_size .. ": ll_max within what ll takes")
  H.truthy(r.ll128_max <= LL128_MAX, r.backend .. " " .. r.team_size .. ": ll128_max within its bound")
  H.truthy(r.oneshot_max <= r.twoshot_max, r.backend .. " " .. r.team_size .. ": one-shot's limit below two-shot's")
  backends[r.backend] = true
end
H.truthy(backends.cuda and backends.host, "rows for both backends")

for backend in pairs(backends) do
  for _, team in ipairs { 2, 3, 4, 5, 8, 64 } do
    local r = row_for(backend, team)
    local probes = { 0, 1, 8, 4096, 1 << 30 }
    for _, limit in ipairs { r.ll_max, r.ll128_max, r.oneshot_max, r.twoshot_max } do
      if limit ~= math.huge then
        for _, b in ipairs { limit - 1, limit, limit + 1 } do
          if b >= 0 then probes[#probes + 1] = b end
        end
      end
    end
    for _, bytes in ipairs(probes) do
      H.eq(kernel.choose(bytes, team, backend), expected(r, bytes),
           string.format("choose(%d, %d, %s)", bytes, team, backend))
    end
  end
  -- one rank: a local copy, whatever the size
  H.eq(kernel.choose(8, 1, backend), "oneshot", backend .. ": a team of one")
  H.eq(kernel.choose(1 << 20, 1, backend), "oneshot", backend .. ": a team of one, 1 MiB")
end

-- the measured rows (docs/benchmarks.md, "2 GPUs against nccl-tests"): ll is auto's
-- choice at 2 GPUs up to all it takes; the host's at 2 ranks only up to 32 B
H.eq(kernel.choose(8, 2, "cuda"), "ll", "cuda, 2 ranks, 8 B")
H.eq(kernel.choose(LL_MAX, 2, "cuda"), "ll", "cuda, 2 ranks, 64 KiB")
H.eq(kernel.choose(LL_MAX + 4, 2, "cuda"), "ll128", "cuda, 2 ranks, past ll: ll128")
H.eq(kernel.choose(LL128_MAX, 2, "cuda"), "ll128", "cuda, 2 ranks, 256 KiB")
H.eq(kernel.choose(LL128_MAX + 4, 2, "cuda"), "twoshot", "cuda, 2 ranks, past ll128")
H.eq(kernel.choose(LL_MAX + 4, 4, "cuda"), "ll128", "cuda, 4 ranks: ll128 past ll")
H.eq(kernel.choose((128 << 10) + 4, 4, "cuda"), "twoshot", "cuda, 4 ranks: two-shot from 128 KiB")
H.eq(kernel.choose(LL_MAX + 4, 8, "cuda"), "twoshot", "cuda, 8 ranks: ll128 not measured, not taken")
H.eq(kernel.choose(32, 2, "host"), "ll", "host, 2 ranks, 32 B")
H.eq(kernel.choose(64, 2, "host"), "oneshot", "host, 2 ranks, 64 B")

-- bad arguments name themselves
H.raises(function() kernel.choose(-1) end, "bytes must be >= 0", "negative bytes")
H.raises(function() kernel.choose(8, 0) end, "team size must be >= 1", "team of 0")

-- crossovers is a copy: changing it changes nothing auto does
local before = kernel.choose(8, 2, "cuda")
local kept = kernel.crossovers[1].ll_max
kernel.crossovers[1].ll_max = 0
H.eq(kernel.choose(8, 2, "cuda"), before, "kernel.crossovers is a copy")
kernel.crossovers[1].ll_max = kept -- (row_for below reads the table: on cuda at 2 ranks, this row)

-- auto on a window runs what choose names for its team, with that
-- algorithm's bits: sizes around this backend's limits for this team
-- (the window's team: GCSH_RANKS_PER_NODE can make it part of c)
local w = c:window(LL_MAX // 4 + 1, "f32", kind and { kind = kind } or nil)
local team = #w.team
local r = row_for(gcsh.backend, team)
local sizes = { 4, 8, 32, 36, 64, 512, 516, LL_MAX, LL_MAX + 4 }
for _, bytes in ipairs(sizes) do
  local n = bytes // 4
  local want = kernel.choose(bytes, team)
  H.eq(want, team == 1 and "oneshot" or expected(r, bytes), "choose at this team, " .. bytes .. " B")
  -- the communicator runs only a window whose team is all of it; else two-shot
  if want == "comm" and team ~= c.size then want = "twoshot" end
  local results = {}
  for _, algo in ipairs { "auto", want } do
    w:tensor():view(0, n):rand(bytes * 8 + c.rank)
    local t, ran = kernel.allreduce(w, { algo = algo, n = n })
    results[#results + 1] = t:totable()
    if algo == "auto" then
      H.eq(ran, want, string.format("auto at %d B on a team of %d ran", bytes, team))
    end
  end
  H.eq(table.concat(results[1], ","), table.concat(results[2], ","),
       "auto's bits are " .. want .. "'s at " .. bytes .. " B")
end
w:free()
