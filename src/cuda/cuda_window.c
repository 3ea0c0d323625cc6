/* The cuda side of windows and signals: the device runtime's window part
 * (gpu/gpu_rt.h; the bookkeeping across kinds is gpu/gpu_window.c's).
 *
 * Kinds: "nccl" (ncclMemAlloc + ncclCommWindowRegister(SYMMETRIC) + a device
 * communicator; cuda_win_nccl.c) and "vmm" (cuMemCreate, POSIX-fd export
 * over a private Unix socket, cuMemMap; cuda_win_vmm.c).  Both end as a
 * peer pointer table valid in this process for copies (UVA) and kernels.
 *
 * Signals are 64-bit words in a window: set/add/wait are small kernels on
 * the rank's stream (kernels/window.cu; see the comments there for the
 * memory ordering). */
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_window.h"

/* The kinds, in the order of .kinds below. */
const gpu_win_kind *const cuda_win_kinds[] = {&win_nccl_kind, &win_vmm_kind, NULL};

const gcsh_window_ops gcsh_cuda_window_ops = {
    .kinds = "nccl vmm", /* cuda_win_kinds' names, in order of preference */
    GCSH_GPU_WINDOW_OPS,
};

gcsh_gpu_win *cuda_win_new(void)
{
    gcsh_gpu_win *own = calloc(1, sizeof *own);
    if (own) {
        own->fd = -1;
        own->x.listen_fd = -1;
    }
    return own;
}

void cuda_win_free(gcsh_gpu_win *own)
{
    free(own);
}

int cuda_signal_store(gcsh_ctx *ctx, cuda_state *st, uint64_t *word, uint64_t v, int add)
{
    CUDA_TRY(ctx, gcsh_k_signal_store(word, v, add, st->stream));
    return 0;
fail:
    return -1;
}

/* Stream-ordered, then waited for: the kernel leaves the old value in
 * poll_dev (free: the poll stream is only used inside a call), which the
 * stream-ordered copy of s:read brings to the host. */
int cuda_signal_fetch_add(gcsh_ctx *ctx, cuda_state *st, uint64_t *word, uint64_t v, int loc,
                          uint64_t *old)
{
    CUDA_TRY(ctx, gcsh_k_signal_fetch_add(word, v, st->poll_dev, st->stream));
    return gcsh_cuda_mem_ops.copy(ctx, old, GCSH_LOC_HOST, st->poll_dev, loc, sizeof *old);
fail:
    return -1;
}

/* Bounded by st->wait_bound_ns and released early by cuda_cancel_waits
 * (interrupts). */
int cuda_signal_wait(gcsh_ctx *ctx, cuda_state *st, uint64_t *word, uint64_t v,
                     enum gcsh_cmp cmp)
{
    CUDA_TRY(ctx, gcsh_k_signal_wait(word, v, (int)cmp, st->wctl, cuda_wait_gen(ctx, st),
                                     st->wait_bound_ns, st->stream));
    return 0;
fail:
    return -1;
}

/* Reads `bytes` (<= 8) at p now, off the rank's stream (which a GPU wait
 * may hold): on the poll stream, device to device into poll_dev, then into
 * pinned memory (window memory is only copied device to device: see
 * cuda_copy); into the first bytes of *bits, the rest zero. */
int cuda_peek(gcsh_ctx *ctx, cuda_state *st, const void *p, size_t bytes, uint64_t *bits)
{
    CUDA_TRY(ctx, cudaMemcpyAsync(st->poll_dev, p, bytes, cudaMemcpyDeviceToDevice,
                                  st->poll_stream));
    CUDA_TRY(ctx, cudaMemcpyAsync(st->poll_buf, st->poll_dev, bytes, cudaMemcpyDeviceToHost,
                                  st->poll_stream));
    CUDA_TRY(ctx, cudaStreamSynchronize(st->poll_stream));
    *bits = 0;
    memcpy(bits, st->poll_buf, bytes);
    return 0;
fail:
    return -1;
}

int cuda_peer_copy(gcsh_ctx *ctx, cuda_state *st, void *dst, void *table_dev, int peer,
                   size_t offset, size_t bytes)
{
    CUDA_TRY(ctx, gcsh_k_peer_copy(dst, table_dev, peer, offset, bytes, st->stream));
    return 0;
fail:
    return -1;
}
