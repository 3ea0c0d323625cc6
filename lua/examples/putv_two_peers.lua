-- Bug class: one scatter-gather request whose descriptors span two peers.
--
-- A putv is one operation to one peer: the backend resolves the peer's
-- address once and moves every segment with one kernel.  Descriptors that
-- name a second peer would be written to the first peer's memory at those
-- offsets -- silent corruption on a GPU.  gcsh checks every descriptor when
-- the request is made and refuses, naming the descriptor and the peers.
--
--   gcsh -n 2 lua/examples/putv_two_peers.lua         one putv per peer: exit 0
--   gcsh -n 2 lua/examples/putv_two_peers.lua --bug   one putv for two peers: gcsh's refusal, exit 1
local opt = repro.args()
repro.need { ranks = 2 }

local c = comm.world()
local w = c:window(16)
w:tensor():fill(0)
c:barrier()
local a = (rank + 1) % size              -- the next rank
local b = size > 2 and (rank + 2) % size or rank -- and another (myself at 2 ranks)
local src = tensor.new(4):fill(rank + 1)

if opt.bug then
  repro.refused(function()
    w:putv(a, { { src, 0 }, { src, 8, peer = b } })
  end, "one putv to ranks " .. a .. " and " .. b)
end
w:putv(a, { { src, 0 } }):post():wait { cpu = true, timeout = 10 }
w:putv(b, { { src, 8 } }):post():wait { cpu = true, timeout = 10 }
c:barrier()
-- who wrote into my slice: the rank before me at 0, the one two before at 8
local t = w:tensor()
local from_a, from_b = (rank - 1) % size, size > 2 and (rank - 2) % size or rank
repro.expect(t:view(0, 4), tensor.new(4):fill(from_a + 1), "elements 0..3", c)
repro.expect(t:view(8, 4), tensor.new(4):fill(from_b + 1), "elements 8..11", c)
w:free()
if rank == 0 then print("two putv requests, one per peer, landed") end
