-- help's index by other libraries' names: what someone who knows PyTorch's
-- symmetric memory, NCCL or NVSHMEM types (help("put_signal"),
-- help("ncclGetLsaPointer")) finds: the gcsh call, and how it differs.
-- name = {from = the libraries' names, gcsh = {{the gcsh call, the
-- difference}, ...}, see = the gcsh names help knows (tests/lua/help_names.lua
-- checks each)}.
local S = {
  put_signal = {
    from = "PyTorch symm_mem put_signal; NVSHMEM nvshmem_putmem_signal",
    gcsh = { { "w:put(peer, src, dst_offset, {signal = {s, slot, value = v}})",
               "a handle prepared and checked once, then x:post(); the signal adds v "
               .. "(default 1) to the peer's word after the data, release order; "
               .. "the peer waits with s:wait(slot, v)" } },
    see = { "w:put", "x:post", "s:wait" },
  },
  wait_signal = {
    from = "PyTorch symm_mem wait_signal; NVSHMEM nvshmem_signal_wait_until",
    gcsh = { { "s:wait(slot, v [, cmp=\">=\"])", "stream-ordered on cuda (the CPU goes on); "
               .. "s:wait{..., cpu=true, timeout=S} waits here and fails after S s; "
               .. "the comparison is unsigned (u64 words)" } },
    see = { "s:wait" },
  },
  barrier = {
    from = "torch.distributed barrier; NVSHMEM nvshmem_barrier_all; NCCL's "
           .. "ncclLsaBarrierSession",
    gcsh = { { "c:barrier()", "the communicator's barrier, from the host, checked "
               .. "(every rank must call it)" },
             { "kernel.plan(w)", "the kernels' own barriers (on the window's sync words) "
               .. "are steps of the plan; step.allreduce(w) runs them one at a time; "
               .. "algo=\"nccl_dev\" uses NCCL's LSA barrier on cuda" },
             { "d:sync(b)", "an LSA barrier on the host, from the prompt: step.devcomm(w) "
               .. "(d:arrive(b), d:wait(b): its halves)" } },
    see = { "c:barrier", "kernel.plan", "step.allreduce" },
  },
  ncclGetLsaPointer = {
    from = "NCCL's device API; also nvshmem_ptr, PyTorch symm_mem buffer_ptrs",
    gcsh = { { "w:peer(r)", "rank r's slice as a tensor: loads and stores from the host "
               .. "prompt; the kernels take the same peer pointer table; "
               .. "kernel.allreduce{algo=\"nccl_dev\"} calls the real one on nccl windows" },
             { "d:lsa_pointer(peer)", "on the host, step.devcomm(w)'s emulation, one call "
               .. "at a time" } },
    see = { "w:peer", "kernel.allreduce", "step.devcomm" },
  },
  nvshmem_ptr = "ncclGetLsaPointer",
  nvshmem_quiet = {
    from = "NVSHMEM nvshmem_quiet",
    gcsh = { { "c:quiet()", "every put, get and signal this rank issued (any window) is "
               .. "complete at its target when it returns: the CPU waits (on cuda for "
               .. "the rank's stream); x:wait() is the same for one handle; w:fence() "
               .. "orders without waiting" } },
    see = { "c:quiet", "x:wait", "w:fence" },
  },
  nvshmem_fence = {
    from = "NVSHMEM nvshmem_fence",
    gcsh = { { "w:fence()", "orders this rank's puts and signals to every peer, not just "
               .. "each one; stream-ordered on cuda, where the stream already runs them "
               .. "in order (it adds a system-scope fence); a w:put's signal lands "
               .. "after its data without one; c:quiet() also waits for completion" } },
    see = { "w:fence", "c:quiet" },
  },
  nvshmem_wait_until = {
    from = "NVSHMEM nvshmem_wait_until on a data word",
    gcsh = { { "t:wait(i, v [, cmp=\"eq\"])", "t a window's tensor (or a view of one); "
               .. "the CPU waits; cmp eq ne ge gt le lt; integers exact, floats as "
               .. "doubles; s:wait waits on a signal word instead" } },
    see = { "t:wait", "s:wait" },
  },
  all_to_all_vdev = {
    from = "PyTorch symm_mem all_to_all_vdev; MPI_Alltoallv",
    gcsh = { { "kernel.alltoallv(w, counts [, {offset=, out=}])", "counts are a table "
               .. "(counts[j+1] to rank j, or every rank's), not a tensor; receive counts "
               .. "are exchanged and checked first, then each rank reads its blocks from "
               .. "the senders' slices into out (a new tensor by default); returns out "
               .. "and the receive counts; equal counts give c:alltoall's result" } },
    see = { "kernel.alltoallv", "c:alltoall" },
  },
  nvshmem_malloc = {
    from = "NVSHMEM nvshmem_malloc; NCCL ncclMemAlloc + ncclCommWindowRegister; "
           .. "PyTorch symm_mem.empty + rendezvous",
    gcsh = { { "c:window(n [, dtype [, {kind=}]])", "collective: allocates and registers "
               .. "in one call, arguments compared across ranks; step.window(c, n) "
               .. "shows each registration stage" } },
    see = { "c:window", "step.window" },
  },
  ncclMemAlloc = "nvshmem_malloc",
  ncclCommWindowRegister = "nvshmem_malloc",
  rendezvous = "nvshmem_malloc",
  signal_add = {
    from = "NVSHMEM nvshmemx_signal_op (NVSHMEM_SIGNAL_ADD / SET)",
    gcsh = { { "s:add(peer, slot, v), s:set(peer, slot, v)", "from the host (stream-ordered "
               .. "on cuda), release order; words are u64 (-1 is 2^64-1); "
               .. "s:read(slot) reads my own word" } },
    see = { "s:add", "s:set", "s:read" },
  },
  nvshmem_atomic_fetch_add = {
    from = "NVSHMEM nvshmem_atomic_fetch_add / nvshmem_uint64_atomic_fetch_add",
    gcsh = { { "s:fetch_add(peer, slot, v)", "on a signals object's u64 words only (not on a "
               .. "window's data), from the host; it waits for the rank's stream on cuda, "
               .. "so it is refused inside gcsh.graph" } },
    see = { "s:fetch_add" },
  },
  one_shot_all_reduce = {
    from = "PyTorch symm_mem one_shot_all_reduce / two_shot_all_reduce_ / "
           .. "multimem_all_reduce_",
    gcsh = { { "kernel.allreduce(w, {algo=\"oneshot\"|\"twoshot\"|\"multicast\"})",
               "over the window's region, checked across ranks; returns the result and "
               .. "the algorithm run; out= is out of place; kernel.plan shows its moves" } },
    see = { "kernel.allreduce", "kernel.plan" },
  },
  two_shot_all_reduce_ = "one_shot_all_reduce",
  multimem_all_reduce_ = "one_shot_all_reduce",
  ncclAllReduce = {
    from = "NCCL ncclAllReduce; torch.distributed all_reduce",
    gcsh = { { "c:allreduce(t [, op [, out]])", "blocking from Lua's view (stream-ordered "
               .. "on cuda), arguments compared across ranks first" },
             { "kernel.allreduce(w, {algo=\"comm\"})", "the same on a window's memory" } },
    see = { "c:allreduce", "kernel.allreduce" },
  },
  all_reduce = "ncclAllReduce",
}

local M = {}

-- The entry for name, following one alias; nil when none.
function M.entry(name)
  local e = S[name]
  if type(e) == "string" then e = S[e] end
  return e
end

-- Every name the index answers, sorted.
function M.names()
  local list = {}
  for name in pairs(S) do list[#list + 1] = name end
  table.sort(list)
  return list
end

return M
