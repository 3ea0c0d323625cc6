-- A mismatched call of each kernel algorithm (issue 40: a mismatch test per
-- algorithm, on GPUs too: tests/gpu/kernel_{nccl,vmm}.lua run this file, and
-- tests/gpu/algos_sanitize.lua under compute-sanitizer): every rank gets one
-- message naming every rank's call, nothing runs (the window keeps what it
-- held, on every rank), and the session goes on: the same call, matched,
-- gives the sum.  Mismatches of count, offset, op and algorithm, each
-- against the last member of the window's team.
local H = require "harness"

local c, kind, opts, team = H.kernel_setup()
local me = c.rank
local k = #team
local last = team[k]
local S = 0 -- the team's sum of (rank + 1)
for _, r in ipairs(team) do S = S + r + 1 end

local algos = { "oneshot", "twoshot", "ring", "ll", "ll128", "multicast", "hier" }
if kind == "nccl" then algos[#algos + 1] = "nccl_dev" end

local w = c:window(64, "f32", opts)
w:multicast { lax = true } -- the emulation where NVLS is off: every window here
local t = w:tensor()

-- the call `call` must fail on every rank naming both sides, leave the
-- window as it was, and the matched call after it must give the sum
local function mismatched(algo, what, mine, theirs, matched)
  t:fill(me + 1)
  local ok, err = pcall(kernel.allreduce, w, me == last and theirs or mine)
  local tag = algo .. " " .. what
  if k == 1 then -- no peer to disagree with: the call runs
    H.truthy(ok, tag .. " at one rank: " .. tostring(err))
  else
    H.truthy(not ok, tag .. ": refused on rank " .. me)
    err = tostring(err)
    H.truthy(err:find("collective mismatch: kernel.allreduce #", 1, true), tag .. ": " .. err)
    H.truthy(err:find("[" .. last .. "] ", 1, true), tag .. ": names the last rank: " .. err)
    for i = 0, 63 do
      if t[i] ~= me + 1 then
        H.eq(t[i], me + 1, tag .. ": the window untouched at " .. i)
        break
      end
    end
  end
  t:fill(me + 1)
  kernel.allreduce(w, matched)
  H.eq(t[matched.offset or 0], S, tag .. ": the matched call after it, first element")
  H.eq(t[(matched.offset or 0) + matched.n - 1], S, tag .. ": and last")
  c:barrier()
end

for _, algo in ipairs(algos) do
  local base = { algo = algo, n = 8 }
  mismatched(algo, "count", base, { algo = algo, n = 9 }, base)
  mismatched(algo, "offset", { algo = algo, offset = 4, n = 8 }, { algo = algo, offset = 8, n = 8 },
             { algo = algo, offset = 4, n = 8 })
  mismatched(algo, "op", base, { algo = algo, n = 8, op = "max" }, base)
  local other = algo == "oneshot" and "twoshot" or "oneshot"
  mismatched(algo, "algorithm", base, { algo = other, n = 8 }, base)
end
w:free()
if me == 0 then print(string.format("kernel_mismatch: %d algorithms, %d ranks", #algos, k)) end
