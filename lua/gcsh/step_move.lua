-- One move of a kernel.plan (src/core/kplan.h), done with the shell's primitives:
-- peer views (w:peer(r)) for loads and stores between ranks, kernel.reduce
-- for the reduction, tensor :copy for copies, and for the multicast
-- algorithm the window's multicast object (m:ld_reduce, m:st: NVLS, or its
-- emulation by peer loads and stores).  The same calls run on the host and
-- cuda backends.
--
-- A move is {rank=, op="reduce"|"copy", count=, src={{peer=, first=}...},
-- dst={...} [, via="multicast"|"ll"|"network"]}; peer is a team index (the
-- communicator rank: steppers run on windows whose team is the whole
-- communicator, and hier's plan names the communicator's ranks) or "tmp" (the rank's own buffer of n elements, first
-- counted from the region's start); a place {peer=, slot=} is a slot of
-- that rank's ll area.  via="multicast": a reduce is one ld_reduce through
-- the multicast address, a copy one st.  via="ll": a copy stores the
-- region with a flag beside every element into slots, a reduce waits for
-- each slot's flags, then reduces the slots in order.  via="network"
-- (hier's step across nodes): the reduce of my chunk with the same chunk
-- of my peers on the other nodes, done as the kernel does it, by the
-- communicator's all-reduce over those ranks (ctx.across), in place.
--
-- ctx: k, me, op, dtype, peers (w:peer(r) by rank, of the ranks loads and
-- stores reach), tmp, multicast (w:multicast()), across (hier's
-- communicator of my chunk across nodes), and for ll: ll = {peers = (the ll window's w:peer(r) by
-- rank), n = elements per slot, flag = the call's flag}.
local M = {}

-- Where element i of slot s sits in an ll area of n-element slots: each
-- element is followed by its flag.  (kll.h puts a flag beside every 4-byte
-- word, two words and their flags to a 16-byte line; for 4-byte dtypes
-- these are the same lines.)
function M.ll_index(n, slot, i)
  return 2 * (slot * n + i)
end

-- kernel.reduce takes at most this many inputs (src/core/kreduce.h).
local REDUCE_MAX_INPUTS = 16

-- The tensor view of one place: ctx.peers[p] is w:peer(p), ctx.tmp the
-- rank's scratch buffer.
local function view(ctx, loc, count)
  if loc.slot then error("step: an ll slot is no tensor view", 0) end
  if loc.peer == "tmp" then return ctx.tmp:view(loc.first, count) end
  local peer = ctx.peers[loc.peer]
  if not peer then
    error(string.format("step: the plan names peer %s, which this stepper cannot reach",
                        tostring(loc.peer)), 0)
  end
  return peer:view(loc.first, count)
end

-- out = op over inputs, in order.  More inputs than one kernel call takes
-- are folded in batches into a scratch tensor (out may be one of the later
-- inputs, so it is written only at the end).
local function reduce_into(out, inputs, op)
  if #inputs <= REDUCE_MAX_INPUTS then
    kernel.reduce(out, inputs, op)
    return
  end
  local acc = tensor.new(#out, out.dtype)
  local batch = {}
  for i = 1, REDUCE_MAX_INPUTS do batch[i] = inputs[i] end
  kernel.reduce(acc, batch, op)
  local i = REDUCE_MAX_INPUTS + 1
  while i <= #inputs do
    batch = { acc }
    for j = i, math.min(#inputs, i + REDUCE_MAX_INPUTS - 2) do batch[#batch + 1] = inputs[j] end
    kernel.reduce(acc, batch, op)
    i = i + REDUCE_MAX_INPUTS - 1
  end
  out:copy(acc)
  acc:free()
end

-- via="multicast": a reduce of one index of every slice into the scratch
-- buffer is one ld_reduce through the multicast address; a copy of the
-- scratch buffer into one index of every slice is one st.
local function multicast_move(ctx, m)
  local mc = ctx.multicast
  if m.op == "reduce" then
    mc:ld_reduce(view(ctx, m.dst[1], m.count), { op = ctx.op, offset = m.src[1].first })
  else
    mc:st(view(ctx, m.src[1], m.count), m.dst[1].first)
  end
end

-- via="ll", a copy: my region, each element followed by the flag, into my
-- slot of every member's ll area: one store per member, flags with data.
local function ll_store(ctx, m)
  local data, line = view(ctx, m.src[1], m.count):totable(), {}
  for i, v in ipairs(data) do line[2 * i - 1], line[2 * i] = v, ctx.ll.flag end
  local t = tensor.from(line, ctx.dtype)
  for _, d in ipairs(m.dst) do
    ctx.ll.peers[d.peer]:view(M.ll_index(ctx.ll.n, d.slot, 0), 2 * m.count):copy(t)
  end
  t:free()
end

-- The data of one slot of my ll area once every element's flag is the
-- call's (polled: a peer's store lands when it lands).
local function ll_receive(ctx, slot, count)
  local area = ctx.ll.peers[ctx.me]:view(M.ll_index(ctx.ll.n, slot, 0), 2 * count)
  while true do
    local v, ready = area:totable(), true
    for i = 2, #v, 2 do if v[i] ~= ctx.ll.flag then ready = false; break end end
    if ready then
      local data = {}
      for i = 1, count do data[i] = v[2 * i - 1] end
      return tensor.from(data, ctx.dtype)
    end
    gcsh.sleep(0.001) -- interruptible
  end
end

-- via="ll", a reduce: every slot as its flags arrive, then the slots
-- reduced in order into my region (the same order as one-shot: the same
-- bits).
local function ll_reduce(ctx, m)
  local inputs = {}
  for i, s in ipairs(m.src) do inputs[i] = ll_receive(ctx, s.slot, m.count) end
  reduce_into(view(ctx, m.dst[1], m.count), inputs, ctx.op)
  for _, t in ipairs(inputs) do t:free() end
end

-- Destinations with the executing rank's own slice first: the reduction
-- lands there by local stores, and goes to the others by peer stores.
local function own_first(dsts, me)
  local out = {}
  for _, d in ipairs(dsts) do if d.peer == me then out[#out + 1] = d end end
  for _, d in ipairs(dsts) do if d.peer ~= me then out[#out + 1] = d end end
  return out
end

-- Does move m (the executing rank is ctx.me).
function M.run(ctx, m)
  if m.count == 0 then return end
  if m.via == "multicast" then return multicast_move(ctx, m) end
  if m.via == "network" then
    ctx.across:allreduce(view(ctx, m.dst[1], m.count), ctx.op)
    return
  end
  if m.via == "ll" then
    if m.op == "copy" then return ll_store(ctx, m) end
    return ll_reduce(ctx, m)
  end
  if m.op == "copy" then
    local src = view(ctx, m.src[1], m.count)
    for _, d in ipairs(m.dst) do view(ctx, d, m.count):copy(src) end
    return
  end
  if m.op ~= "reduce" then
    error(string.format("step: the plan has a move with op '%s' (expected reduce or copy)",
                        tostring(m.op)), 0)
  end
  local inputs = {}
  for i, s in ipairs(m.src) do inputs[i] = view(ctx, s, m.count) end
  local dsts = own_first(m.dst, ctx.me)
  local first = view(ctx, dsts[1], m.count)
  reduce_into(first, inputs, ctx.op)
  for i = 2, #dsts do view(ctx, dsts[i], m.count):copy(first) end
end

return M
