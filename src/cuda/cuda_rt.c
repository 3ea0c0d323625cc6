/* The cuda backend's device runtime (gpu/gpu_rt.h): what the GPU-generic
 * code of src/gpu/ asks of the device, answered with the CUDA runtime and
 * driver and NCCL.  cuda_init names it (gcsh_gpu_use) before anything of
 * src/gpu/ can run. */
#include "cuda/cuda_window.h"

static gcsh_gpu_dev *rt_enter(gcsh_ctx *ctx)
{
    return cuda_enter(ctx);
}

static gcsh_gpu_dev *rt_enter_device(gcsh_ctx *ctx)
{
    return cuda_enter_device(ctx);
}

static int rt_location(const gcsh_gpu_dev *st)
{
    return st->dev;
}

static int rt_mem_total(gcsh_ctx *ctx, gcsh_gpu_dev *st, size_t *total)
{
    (void)st;
    size_t free_b = 0;
    CUDA_TRY(ctx, cudaMemGetInfo(&free_b, total));
    return 0;
fail:
    return -1;
}

static int rt_wait(gcsh_ctx *ctx, gcsh_gpu_dev *st)
{
    return cuda_wait(ctx, st, NULL);
}

static void rt_comm_place(const gcsh_comm_impl *c, int *rank, int *size)
{
    *rank = c->rank;
    *size = c->size;
}

static int rt_comm_aborted(const gcsh_comm_impl *c)
{
    return c->aborted;
}

static MPI_Comm rt_comm_mpi(const gcsh_comm_impl *c)
{
    return c->mpi;
}

static gcsh_gpu_net *rt_net(gcsh_gpu_dev *st)
{
    return &st->net;
}

const gcsh_gpu_rt gcsh_cuda_rt = {
    .enter = rt_enter,
    .enter_device = rt_enter_device,
    .location = rt_location,
    .mem_total = rt_mem_total,
    .pool_trim = cuda_pool_trim,
    .free_ordered = cuda_free_ordered,
    .wait = rt_wait,
    .peek = cuda_peek,
    .mem = &gcsh_cuda_mem_ops,
    .signal_store = cuda_signal_store,
    .signal_fetch_add = cuda_signal_fetch_add,
    .signal_wait = cuda_signal_wait,
    .peer_copy = cuda_peer_copy,
    .comm = &gcsh_cuda_comm_ops,
    .comm_place = rt_comm_place,
    .comm_aborted = rt_comm_aborted,
    .kinds = cuda_win_kinds,
    .win_new = cuda_win_new,
    .win_free = cuda_win_free,
    .mc_allowed = cuda_mc_allowed,
    .mc_open = cuda_mc_open,
    .mc_close = cuda_kern_window_gone,
    .capture_begin = cuda_capture_begin,
    .capture_end = cuda_capture_end,
    .capture_abandon = cuda_capture_abandon,
    .graph_launch = cuda_graph_launch,
    .graph_free = cuda_graph_free,
    .enqueued = cuda_enqueued,
    .xfer_prepare = cuda_xfer_prepare,
    .xfer_free = cuda_xfer_free,
    .xfer_post = cuda_xfer_post,
    .xfer_query = cuda_xfer_query,
    .xfer_wait_stream = cuda_xfer_wait_stream,
    .fence = cuda_fence,
    .cancel_waits = cuda_cancel_waits,
    .comm_mpi = rt_comm_mpi,
    .net = rt_net,
    .net_server = cuda_net_server,
};
