-- c:translate(r [, other]): a rank of one communicator as a rank of another
-- (or of the world), nil where it is not a member; local, no collective.
local H = require "harness"

local c = comm.world()
local me, k = c.rank, c.size
for r = 0, k - 1 do H.eq(c:translate(r), r, "world to world " .. r) end

-- odd and even ranks, numbered backwards inside each half (key = -rank)
local half = c:split(me % 2, -me)
local mine = {}
for r = k - 1, 0, -1 do if r % 2 == me % 2 then mine[#mine + 1] = r end end
H.eq(half.size, #mine, "half size")
for i, w in ipairs(mine) do
  H.eq(half:translate(i - 1), w, "half rank " .. (i - 1) .. " is world rank " .. w)
  H.eq(half:translate(i - 1, c), w, "the same with other = world")
  H.eq(c:translate(w, half), i - 1, "world rank " .. w .. " in my half")
end
for r = 0, k - 1 do
  if r % 2 ~= me % 2 then H.eq(c:translate(r, half), nil, "world rank " .. r .. " is not in my half") end
end
H.eq(half:translate(half.rank), me, "my own rank")
H.raises(function() half:translate(half.size) end,
         string.format("bad argument #1 to 'translate' (rank %d out of range (the comm has ranks 0..%d))",
                       half.size, half.size - 1))
H.raises(function() c:translate(0, 5) end, "comm expected")
half:free()
