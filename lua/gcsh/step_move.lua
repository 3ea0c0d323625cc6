-- One move of a kernel.plan (KPLAN.md), done with the shell's primitives:
-- peer views (w:peer(r)) for loads and stores between ranks, kernel.reduce
-- for the reduction, tensor :copy for copies, and for the multicast
-- algorithm the window's multicast object (m:ld_reduce, m:st: NVLS, or its
-- emulation by peer loads and stores).  The same calls run on the host and
-- cuda backends.
--
-- A move is {rank=, op="reduce"|"copy", count=, src={{peer=, first=}...},
-- dst={...}}; peer is a team index (the communicator rank: steppers run on
-- windows whose team is the whole communicator) or "tmp" (the rank's own
-- buffer of n elements).  ctx: k, me, op, peers (w:peer(r) by rank), tmp,
-- and for the multicast algorithm multicast (w:multicast()) and scratch (a
-- local tensor of n elements).
local M = {}

-- kernel.reduce takes at most this many inputs (src/core/kreduce.h).
local REDUCE_MAX_INPUTS = 16

-- The tensor view of one place: ctx.peers[p] is w:peer(p), ctx.tmp the
-- rank's scratch buffer.
local function view(ctx, loc, count)
  if loc.peer == "tmp" then return ctx.tmp:view(loc.first, count) end
  local peer = ctx.peers[loc.peer]
  if not peer then
    error(string.format("step: the plan names peer %s, which this stepper cannot reach",
                        tostring(loc.peer)), 0)
  end
  return peer:view(loc.first, count)
end

-- Whether places are one index of every team member's slice (what a
-- multicast address reaches at once).
local function every_slice(ctx, places)
  if #places ~= ctx.k then return false end
  local seen = {}
  for _, p in ipairs(places) do
    if type(p.peer) ~= "number" or p.first ~= places[1].first or seen[p.peer] then return false end
    seen[p.peer] = true
  end
  return true
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

-- With the multicast algorithm, a reduction of one index of every slice
-- into that index of every slice (two-shot's move) is one ld_reduce
-- through the multicast address into the scratch buffer, then one st of it
-- back through the address.  Returns true when the move was that.
local function multicast_move(ctx, m)
  local mc = ctx.multicast
  if not (mc and m.op == "reduce" and every_slice(ctx, m.src) and every_slice(ctx, m.dst)) then
    return false
  end
  local first = m.src[1].first
  local scratch = ctx.scratch:view(0, m.count)
  mc:ld_reduce(scratch, { op = ctx.op, offset = first })
  mc:st(scratch, m.dst[1].first)
  return true
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
  if m.count == 0 or multicast_move(ctx, m) then return end
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
