-- The kernel collectives' algorithm names come from one table (bind/kalgos.c),
-- which Lua reads as gcsh.kalgos: kernel.algos, what kernel.plan and the
-- collectives accept and name in their errors, and step.algos all agree
-- with it.
local H = require "harness"
local KALGOS = require "gcsh.kalgos"
local step = require "gcsh.step"

local c = comm.world()
local w = c:window(64, "f32")

local COLLS = { "allreduce", "reduce_scatter", "allgather", "broadcast", "reduce" }
local NOT_PLANNED = { auto = true, ll = true, ll128 = true, comm = true, nccl_dev = true, hier = true }

-- the all-reduce's names are kernel.algos, in the same order
H.eq(table.concat(KALGOS.takes.allreduce, " "), table.concat(kernel.algos, " "), "kernel.algos")
H.eq(table.concat(kernel.algos, " "), "auto oneshot twoshot ring ll ll128 multicast comm nccl_dev hier",
     "the all-reduce's names")

local names = {}
for coll in pairs(KALGOS.takes) do names[#names + 1] = coll end
table.sort(names)
H.eq(table.concat(names, " "), "allgather allreduce broadcast reduce reduce_scatter",
     "a list per collective")

for _, coll in ipairs(COLLS) do
  local planned = {}
  for _, algo in ipairs(KALGOS.takes[coll]) do
    H.eq(KALGOS.planned[algo] or false, not NOT_PLANNED[algo], coll .. " " .. algo .. " planned")
    if KALGOS.planned[algo] then
      planned[#planned + 1] = algo
      H.eq(kernel.plan(w, { coll = coll, algo = algo }).algo, algo, "kernel.plan " .. coll .. " " .. algo)
    end
  end
  -- kernel.plan's default is the first planned name; its error lists them all
  H.eq(kernel.plan(w, { coll = coll }).algo, planned[1], coll .. " default plan")
  H.raises(function() kernel.plan(w, { coll = coll, algo = "bogus" }) end,
           "plan: unknown algo 'bogus' (valid: " .. table.concat(planned, " ") .. ")",
           coll .. " plan error")
end

-- the collectives' own errors list the same names
H.raises(function() kernel.allreduce(w, { algo = "bogus" }) end,
         "allreduce: unknown algo 'bogus' (valid: " .. table.concat(KALGOS.takes.allreduce, " ") .. ")",
         "allreduce error")
H.raises(function() kernel.broadcast(0, w, { algo = "bogus" }) end,
         "broadcast: unknown algo 'bogus' (valid: " .. table.concat(KALGOS.takes.broadcast, " ") .. ")",
         "broadcast error")

-- the stepper walks every planned name of its collectives, ll, and hier
-- (whose kernel.plan its own file makes, src/bind/khier.c)
for coll, list in pairs(step.algos) do
  local want = {}
  for _, algo in ipairs(KALGOS.takes[coll]) do
    if KALGOS.planned[algo] or algo == "ll" or algo == "hier" then want[algo] = true end
  end
  local n = 0
  for _ in pairs(want) do n = n + 1 end
  H.eq(#list, n, "step.algos." .. coll .. " count")
  for _, algo in ipairs(list) do H.truthy(want[algo], "step.algos." .. coll .. " has " .. algo) end
end

-- in the table's turns: the order most worth watching, the first the default
for coll, list in pairs(step.algos) do
  H.eq(table.concat(list, " "), table.concat(KALGOS.walks[coll], " "), "step.algos." .. coll .. " order")
end
H.eq(table.concat(KALGOS.walks.allreduce, " "), "ring oneshot twoshot multicast ll hier", "the all-reduce's turns")
H.eq(table.concat(KALGOS.walks.broadcast, " "), "tree ring direct", "broadcast's turns")
H.eq(#KALGOS.walks.reduce, 0, "no stepper walks reduce")

-- an algorithm without a plan says why kernel.plan shows none
H.raises(function() kernel.plan(w, { algo = "ll" }) end, "plan: algo 'll' has no plan of moves", "ll's plan")
H.raises(function() kernel.plan(w, { algo = "nccl_dev" }) end, "plan: algo 'nccl_dev' has no plan of its own",
         "nccl_dev's plan")

w:free()
