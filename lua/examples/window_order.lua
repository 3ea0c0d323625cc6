-- Bug class: windows registered in a different order on different ranks.
--
-- Registration is collective: the n-th registration of every rank is one
-- window.  If rank 0 registers A then B while rank 1 registers B then A,
-- each rank's "A" is paired with the other's "B": sizes disagree, peers
-- read past the end of a smaller buffer.  gcsh compares every rank's
-- request before allocating anything and fails on every rank, naming each
-- rank's call.
--
--   gcsh -n 2 lua/examples/window_order.lua         same order everywhere: exit 0
--   gcsh -n 2 lua/examples/window_order.lua --bug   odd ranks swap the order: gcsh's refusal, exit 1
local opt = repro.args()
repro.need { ranks = 2 }

local c = comm.world()
local function make_a() return c:window(64) end
local function make_b() return c:window(128) end

local a, b
if opt.bug and rank % 2 == 1 then
  repro.refused(function() b = make_b(); a = make_a() end, "windows in another order on rank " .. rank)
elseif opt.bug then
  repro.refused(function() a = make_a(); b = make_b() end, "windows in another order on rank " .. rank)
end
a, b = make_a(), make_b()
if a.n ~= 64 or b.n ~= 128 then repro.fail("windows have %d and %d elements", a.n, b.n) end
a:free()
b:free()
if rank == 0 then print("windows of 64 and 128 elements registered in one order") end
