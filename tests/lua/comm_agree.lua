-- c:agree and c:free are collectives like any other (issue 26): checked
-- before they run, so a rank that calls one while the others call something
-- else gets the same error as they do, and nothing hangs.
local H = require "harness"

local c = comm.world()
local me, n = c.rank, c.size

-- every rank's string, in rank order
local all = c:agree("r" .. me)
H.eq(#all, n, "one string per rank")
for r = 0, n - 1 do H.eq(all[r + 1], "r" .. r, "rank " .. r .. "'s string") end
H.eq(c:agree(string.rep("x", me))[n], string.rep("x", n - 1), "strings of different lengths")

if n > 1 then
  -- the last rank agrees while the others enter a barrier: one error for all
  local others = n == 2 and "0" or "0-" .. (n - 2)
  H.raises(function()
    if me == n - 1 then c:agree("x") else c:barrier() end
  end, string.format("collective mismatch: [%s] barrier #3, [%d] agree #3", others, n - 1))
  -- a refused check consumes nothing: the ranks stay in step
  H.eq(c:agree("ok")[n], "ok", "agree after a refused one")

  -- c:free on one rank only is refused; the comm stays usable
  local sub = c:split(0)
  H.raises(function()
    if me == 0 then sub:free() else sub:barrier() end
  end, "collective mismatch: [0] comm:free #1 on comm ")
  H.eq(tostring(sub), string.format("comm(rank %d of %d, %s)", me, n, gcsh.backend),
       "still open after the refused free")
  sub:barrier()
  sub:free()
  H.eq(tostring(sub), "comm(freed)", "freed by every rank")
end

-- fields are read-only, and say so
H.raises(function() c.rank = 5 end, "cannot set field 'rank' of a comm (its fields are read-only)")
H.raises(function() c[1] = 5 end, "cannot set a field of a comm (its fields are read-only)")
print("comm_agree ok")
