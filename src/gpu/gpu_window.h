/* A GPU backend's windows and signals, the part every GPU backend shares
 * (gpu_window.c): the window's record, the kinds' rows and their dispatch,
 * creation's begin/stage/abort and destroy, signal words and the host's
 * polls.  What touches the device goes through the device runtime
 * (gpu_rt.h); what a kind does, through its row.  A backend's window table
 * is GCSH_GPU_WINDOW_OPS and its kinds' names:
 *
 *     const gcsh_window_ops gcsh_cuda_window_ops = {
 *         .kinds = "nccl vmm", GCSH_GPU_WINDOW_OPS};
 */
#ifndef GCSH_GPU_WINDOW_H
#define GCSH_GPU_WINDOW_H

#include "gpu/gpu_rt.h"

struct gcsh_window_impl {
    const gpu_win_kind *kind;
    gcsh_comm_impl *c;      /* the communicator it was created on (outlives it) */
    size_t bytes;           /* alloc_bytes: each member's slice */
    /* w:multicast(), decided once per window on every rank (gpu_mcast.c) */
    int mc_decided;
    gcsh_mcast mc;
    gcsh_gpu_win *own;      /* the backend's part: its kinds' handles */
    /* A communicator of several nodes (gpu_net.c): every rank's slice at
     * its network server ([communicator size]), mine's id at mine (0: none). */
    gcsh_net_addr *remote;
    uint64_t net_id;
};

/* A window kind: everything the window and kernel code do differently per
 * kind, one row each (cuda: cuda_win_nccl.c, cuda_win_vmm.c), listed in the
 * runtime's kinds.  A new kind is a file that exports its row. */
struct gpu_win_kind {
    const char *name;                 /* {kind=...} */
    const gcsh_window_plan *plan;     /* its stages, for step.window */
    /* Whether it works on c (local, the same on every rank of c): 0, or -1
     * with the reason in why, naming the kind that works instead. */
    int (*usable)(gcsh_gpu_dev *st, const gcsh_comm_impl *c, char *why, size_t len);
    /* Its allocation granularity on this GPU (no allocation). */
    int (*granularity)(gcsh_ctx *ctx, gcsh_gpu_dev *st, size_t *gran);
    /* Stage i (backend.h: create_stage; winbuild.h exchanges every rank's
     * outcome after each); desc->team and desc->peer come allocated with
     * room for c->size entries. */
    int (*stage)(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_window_impl *w, gcsh_window_desc *d,
                 int i, char *report, size_t len);
    /* The undo of whatever ran (local once the communicator is aborted). */
    void (*undo)(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_window_impl *w);
    /* Collective destroy of a made window (the binding's barrier came first). */
    int (*destroy)(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_window_impl *w);
    /* The backend's device API and its multimem reach its memory (cuda:
     * NCCL's; algo nccl_dev, the nvls multicast). */
    int device_api;
};

/* The window operations of backend.h's list, gpu_win_<row> (net: gpu_net.c). */
#define GPU_WIN_DECLARE(tab, fn, ret, params, ...) ret gpu_win_##fn params;
GCSH_WINDOW_OPS(GPU_WIN_DECLARE)
#undef GPU_WIN_DECLARE

/* A GPU backend's gcsh_window_ops, less its kinds' names. */
#define GCSH_GPU_WINDOW_OPS                                                          \
    .kind_usable = gpu_win_kind_usable, .granularity = gpu_win_granularity,          \
    .max_bytes = gpu_win_max_bytes, .create_plan = gpu_win_create_plan,              \
    .create_begin = gpu_win_create_begin, .create_stage = gpu_win_create_stage,      \
    .create_abort = gpu_win_create_abort, .destroy = gpu_win_destroy,                \
    .signal_set = gpu_win_signal_set, .signal_add = gpu_win_signal_add,              \
    .signal_fetch_add = gpu_win_signal_fetch_add, .signal_wait = gpu_win_signal_wait, \
    .signal_wait_cpu = gpu_win_signal_wait_cpu, .signal_read = gpu_win_signal_read,  \
    .elem_wait = gpu_win_elem_wait, .peer_read = gpu_win_peer_read,                  \
    .net = gpu_win_net, .net_path = "tcp"

#endif
