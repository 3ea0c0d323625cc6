/* One-sided transfers on a GPU backend (gpu_xfer.c): the transfer's record
 * (its segments, its signal), the CPU's wait and c:quiet, every backend
 * alike; its engines, descriptors and completion are the device runtime's
 * (gpu_rt.h: xfer_prepare ... fence).  A backend's table:
 *
 *     const gcsh_xfer_ops gcsh_cuda_xfer_ops = {.engines = "ce sm", GCSH_GPU_XFER_OPS};
 */
#ifndef GCSH_GPU_XFER_H
#define GCSH_GPU_XFER_H

#include "gpu/gpu_rt.h"

struct gcsh_xfer_impl {
    gcsh_xfer_engine engine;
    size_t nseg;         /* non-empty segments (empty ones copy nothing) */
    void **dsts;         /* [nseg] */
    const void **srcs;
    size_t *sizes;
    uint64_t *signal;    /* the plan's signal word, or NULL */
    uint64_t value;
    gcsh_gpu_xfer *own;  /* the runtime's part: descriptors, its completion */
    /* A peer off the team (plan->net, gpu_net.c): the plan as it is, its
     * segments' far sides offsets; then nseg is 0 and signal NULL, and the
     * runtime's post only marks the completion. */
    gcsh_xfer_plan net;
    gcsh_xfer_seg *net_seg;
};

/* The transfer operations of backend.h's list, gpu_xfer_<row>. */
#define GPU_XFER_DECLARE(tab, fn, ret, params, ...) ret gpu_xfer_##fn params;
GCSH_XFER_OPS(GPU_XFER_DECLARE)
#undef GPU_XFER_DECLARE

#define GPU_XFER_FIELD(tab, fn, ...) .fn = gpu_xfer_##fn,
#define GCSH_GPU_XFER_OPS GCSH_XFER_OPS(GPU_XFER_FIELD)

#endif
