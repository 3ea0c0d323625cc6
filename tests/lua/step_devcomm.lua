-- step.devcomm (issue 37): NCCL's device communicator emulated on the host
-- for a window of kind nccl, its pieces called one at a time: the LSA team,
-- ncclGetLsaPointer, LSA barriers in halves.  nccl_dev's one-shot, written
-- with them at the prompt, gives the all-reduce; the barrier words say who
-- arrived.
local H = require "harness"
if gcsh.backend ~= "host" then
  print("skipped: the host backend's emulation")
  return
end

local c = comm.world():split(gcsh.node) -- the window's team is all of c
local me, k = c.rank, c.size
local w = c:window(8, "f32", { kind = "nccl" })
w:tensor():fill(me + 1)

local d = step.devcomm(w, { barriers = 2 })
H.eq(d.lsa_rank, me, "lsa_rank")
H.eq(d.lsa_size, k, "lsa_size")
H.eq(d.barriers, 2, "barriers")
H.eq(d.window, w, "window")
H.eq(tostring(d), string.format("devcomm(emulated, window #%d, LSA rank %d of %d, 2 barriers)", w.seq, me, k), "tostring")

-- ncclGetLsaPointer: a peer's slice, at an offset
local right = (me + 1) % k
c:barrier()
H.eq(d:lsa_pointer(right)[0], right + 1, "lsa_pointer: the right's slice")
local p = d:lsa_pointer(right, 6, 2)
H.eq(#p, 2, "lsa_pointer: n elements")
H.eq(p[1], right + 1, "lsa_pointer: from offset")

-- nccl_dev's one-shot, step by step
d:sync(0) -- every member's input is in its slice
local out = tensor.new(8, "f32")
local ptrs = {}
for q = 0, d.lsa_size - 1 do ptrs[#ptrs + 1] = d:lsa_pointer(q) end
kernel.reduce(out, ptrs)
d:sync(0) -- nobody reads my slice any more
w:tensor():copy(out)
d:sync(1)
H.eq(w:tensor()[7], k * (k + 1) // 2, "the one-shot's sum in my slice")
H.eq(w:peer(right)[0], k * (k + 1) // 2, "and in the right's")

-- the words: barrier 0 twice, barrier 1 once, from every member
local st = d:state()
H.eq(st.count[0], 2, "my arrivals at barrier 0")
H.eq(st.count[1], 1, "my arrivals at barrier 1")
-- barrier 0's words stay until I arrive at barrier 1 again; a member past
-- barrier 1 may have arrived there again already (then it waits for me)
for q = 0, k - 1 do
  H.eq(st.words[0][q], 2, "barrier 0: member " .. q .. "'s word")
  local b1 = st.words[1][q]
  H.truthy(b1 == 1 or (q ~= me and b1 == 2), "barrier 1: member " .. q .. "'s word: " .. b1)
end

-- arrive and wait apart: after arrive, my own word is there before the wait
d:arrive(1)
H.eq(d:state().words[1][me], 2, "arrive stored my word here")
d:wait(1)
for q = 0, k - 1 do H.eq(d:state().words[1][q], 2, "after wait: member " .. q .. " arrived") end

-- refusals, before anything collective
H.raises(function() d:lsa_pointer(k) end, "lsa_pointer: peer (an LSA rank) must be an integer 0.." .. (k - 1) .. ", got " .. k, "peer")
H.raises(function() d:lsa_pointer(0, 8) end, "lsa_pointer: offset must be an integer 0..7, got 8", "offset")
H.raises(function() d:lsa_pointer(0, 6, 3) end, "lsa_pointer: n must be an integer 1..2, got 3", "n")
H.raises(function() d:arrive(2) end, "arrive: b (a barrier) must be an integer 0..1, got 2", "barrier index")
H.raises(function() step.devcomm(w, { barrier = 1 }) end, "step.devcomm: unknown option 'barrier' (valid: barriers)", "options")
H.raises(function() step.devcomm(w, { barriers = 0 }) end, "step.devcomm: barriers must be an integer 1..64, got 0", "barriers")
H.raises(function() step.devcomm(tensor.new(1)) end, "step.devcomm: a window expected", "not a window")
local hw = c:window(4)
H.raises(function() step.devcomm(hw) end,
         "step.devcomm: a device communicator belongs to a window of kind nccl, got kind 'host'", "kind host")
hw:free()

d:free()
d:free() -- idempotent
H.eq(tostring(d), "devcomm (freed)", "freed")
H.raises(function() d:sync(0) end, "sync: this device communicator was freed", "after free")
c:barrier()
w:free()
c:free()
