-- Bug class: memory is deregistered while a peer may still read it (a
-- missing barrier before free).
--
-- A rank that is done with a symmetric buffer frees it; a peer that still
-- loads from it then reads unmapped memory -- on a GPU an illegal-address
-- fault that kills the process.  gcsh makes w:free() collective, with a
-- barrier inside, so no rank can tear a window down under a reader; and a
-- view that outlives the window is refused instead of dereferenced.
--
-- The correct pattern reads the peer's slice, then frees.  The buggy one
-- keeps a view of the peer's slice, frees, and reads through the view:
-- gcsh refuses it ("attempt to use a freed window") where a GPU would fault.
--
--   gcsh -n 2 lua/examples/free_then_read.lua         read, then free: exit 0
--   gcsh -n 2 lua/examples/free_then_read.lua --bug   read after free: gcsh's refusal, exit 1
local opt = repro.args()
repro.need { ranks = 2 }

local c = comm.world()
local w = c:window(8)
w:tensor():fill(rank + 1)
c:barrier()
local peer = (rank + 1) % size
local view = w:peer(peer) -- loads from the peer's memory

if opt.bug then
  w:free() -- collective, with its barrier ...
  repro.refused(function() return view[0] end, "reading a peer's slice after w:free()")
end
local got = view[0]
w:free()
if got ~= peer + 1 then repro.fail("read %s from rank %d, expected %d", got, peer, peer + 1) end
print(string.format("read rank %d's slice (%g), then freed the window", peer, got))
