-- Bug class: an off-by-one in a kernel argument.
--
-- A kernel's region is [offset, offset + n): n counts elements.  Computing
-- n from an inclusive last index (last - offset, instead of last - offset
-- + 1) reduces one element too few; the output's last element keeps
-- whatever was there.  (One too many is refused by gcsh before any kernel
-- runs, naming the bound: on a GPU it would read past the slice.)
--
--   gcsh -n 2 lua/examples/off_by_one.lua         n = last - offset + 1: exit 0
--   gcsh -n 2 lua/examples/off_by_one.lua --bug   n = last - offset: the last element is wrong, exit 1
local opt = repro.args()
repro.need { ranks = 2 }

local c = comm.world()
local w = c:window(16)
w:tensor():arange(rank * 100)       -- rank r holds r*100, r*100 + 1, ...
c:barrier()

local offset, last = 4, 11          -- reduce elements 4..11, inclusive
local n = last - offset + (opt.bug and 0 or 1)
local out = tensor.new(last - offset + 1):fill(-1)
kernel.reduce_peers(out:view(0, n), w, { offset = offset })
c:barrier()

-- every rank's element i is r*100 + i: the sum over ranks
local want = tensor.new(#out)
for i = 0, #out - 1 do
  local sum = 0
  for r = 0, size - 1 do sum = sum + r * 100 + offset + i end
  want[i] = sum
end
repro.expect(out, want, "sum of elements " .. offset .. ".." .. last, c)
w:free()
if rank == 0 then print("elements " .. offset .. ".." .. last .. " reduced over every rank") end
