/* The cuda backend's reduce kernels and multicast (kernels/reduce.cu,
 * kernels/ll.cu, kernels/cuda/nccl_dev.cu, kernels/cuda/mcast.cu): stream-ordered
 * launches on the rank's stream; the kernel collectives wait on the
 * window's sync words on the GPU, bounded by GCSH_GPU_WAIT_TIMEOUT and
 * released by an interrupt, as s:wait does (nccl_dev excepted: its
 * barriers are NCCL's).
 *
 * Multicast.  NVLS runs only when the user opted in and the machine allows
 * it (src/DESIGN.md, safety rules): GCSH_MULTICAST=1, NCCL_NVLS_ENABLE not "0",
 * the device reports CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, and the window
 * is of kind nccl (the multicast address comes from NCCL's LSA multimem).
 * The environment is read first, so without the opt-in nothing of the
 * multicast machinery is touched: no device query, no lsaMultimem, no
 * cuMulticastCreate (which gcsh never calls at all).  Every rank's verdict
 * is exchanged (gpu/gpu_mcast.c), so the mode is the same on all of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_window.h"
#include "gpu/gpu_mcast.h"
#include "reducekern.h"

static int cuda_reduce(gcsh_ctx *ctx, const gcsh_kjob *j)
{
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    CUDA_TRY(ctx, gcsh_k_reduce(j, st->stream));
    return 0;
fail:
    return -1;
}

static int cuda_empty(gcsh_ctx *ctx)
{
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    CUDA_TRY(ctx, gcsh_k_empty(st->stream));
    return 0;
fail:
    return -1;
}

/* How this rank's kernel waits end, and how many blocks may wait. */
static gcsh_kwait kernel_wait(const gcsh_ctx *ctx, const cuda_state *st)
{
    gcsh_kwait w = {st->wctl, cuda_wait_gen(ctx, st), st->wait_bound_ns, st->paired_max_blocks,
                    st->one_gpu};
    return w;
}

static int cuda_collective(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                           const gcsh_kcoll_args *a)
{
    (void)w;
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    gcsh_kwait wait = kernel_wait(ctx, st);
    CUDA_TRY(ctx, gcsh_k_collective(a, d, &wait, st->stream));
    return 0;
fail:
    return -1;
}

static int cuda_alltoallv(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                          const gcsh_kv_args *a)
{
    (void)w;
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    gcsh_kwait wait = kernel_wait(ctx, st);
    CUDA_TRY(ctx, gcsh_k_alltoallv(a, d, &wait, st->stream));
    return 0;
fail:
    return -1;
}

static int cuda_ll_allreduce(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                             const gcsh_kll_args *a)
{
    (void)w;
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    gcsh_kwait wait = kernel_wait(ctx, st);
    if (a->proto == GCSH_LL_PROTO_LL128)
        CUDA_TRY(ctx, gcsh_k_ll128_allreduce(a, d, &wait, st->stream));
    else
        CUDA_TRY(ctx, gcsh_k_ll_allreduce(a, d, &wait, st->stream));
    return 0;
fail:
    return -1;
}

/* algo "nccl_dev" needs NCCL's device API, which reaches only NCCL's
 * symmetric memory: a window of kind nccl.  c->symmetric is NCCL's own
 * answer for the communicator, the same on every rank. */
static int cuda_dev_usable(gcsh_ctx *ctx, gcsh_window_impl *w, char *why, size_t len)
{
    if (w->kind->device_api)
        return 0;
    if (w->c->symmetric)
        snprintf(why, len, "it is of kind '%s', and NCCL's device API reaches only NCCL's "
                           "symmetric memory: make the window with {kind='nccl'}", w->kind->name);
    else
        snprintf(why, len, "it is of kind '%s', and the device API needs a window of kind "
                           "'nccl', which this communicator cannot have: %s", w->kind->name,
                 cuda_no_symmetric_reason(ctx->be_state, w->c->size));
    return -1;
}

static int cuda_dev_allreduce(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                              const gcsh_kdev_args *a)
{
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    const char *mine = (const char *)d->peer[d->team_rank] + a->offset * gcsh_dtype_size(a->dt);
    CUDA_TRY(ctx, gcsh_k_nccl_dev_allreduce(w->own->devcomm, w->own->win, mine, a, st->stream));
    return 0;
fail:
    return -1;
}

/* ---- multicast: the opt-in, checked in src/DESIGN.md's order ------------------------ */

static void add_reason(char *why, size_t len, const char *reason)
{
    size_t used = strlen(why);
    snprintf(why + used, len - used, "%s%s", used ? "; " : "", reason);
}

int cuda_nvls_policy(cuda_state *st, const char *refusal, char *why, size_t len)
{
    const char *opt = getenv("GCSH_MULTICAST");
    const char *nvls = getenv("NCCL_NVLS_ENABLE");
    why[0] = 0;
    if (!opt || strcmp(opt, "1") != 0)
        add_reason(why, len, "GCSH_MULTICAST is not set to 1 (NVLS is opt-in)");
    if (nvls && strcmp(nvls, "0") == 0)
        add_reason(why, len, "NCCL_NVLS_ENABLE=0");
    if (refusal)
        add_reason(why, len, refusal);
    if (why[0])
        return 0; /* nothing below runs without the opt-in */
    int v = 0;
    if (cuda_device_attribute(st->dev, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, &v) != 0 || !v) {
        add_reason(why, len, "the device does not report multicast support");
        return 0;
    }
    return 1;
}

/* This rank's verdict for a window (the runtime's mc_allowed): 1 when NVLS
 * may be used, else 0 with the reasons. */
int cuda_mc_allowed(cuda_state *st, const gcsh_window_impl *w, char *why, size_t len)
{
    return cuda_nvls_policy(st, w->kind->device_api ? NULL
                                : "the nvls path needs a window of kind nccl (NCCL's LSA multimem)",
                            why, len);
}

/* The runtime's mc_open: NCCL's LSA multimem over the window. */
int cuda_mc_open(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w, gcsh_mcast *out)
{
    ncclResult_t r = gcsh_nccl_multimem_open(w->c->comm, w->own->win, &w->own->mm_devcomm,
                                             &out->base, st->stream);
    if (r != ncclSuccess)
        return nccl_error(ctx, w->c->comm, __FILE__, __LINE__, "gcsh_nccl_multimem_open", r);
    snprintf(out->why, sizeof out->why,
             "opted in (GCSH_MULTICAST=1), NVLS enabled and supported: multimem over NCCL's "
             "LSA multicast address %p",
             out->base);
    return 0;
}

int cuda_kern_window_gone(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w)
{
    (void)st;
    if (!w->own->mm_devcomm)
        return 0;
    ncclResult_t r = w->c->aborted ? ncclSuccess
                                   : gcsh_nccl_devcomm_destroy(w->c->comm, w->own->mm_devcomm);
    w->own->mm_devcomm = NULL;
    if (r != ncclSuccess)
        return nccl_error(ctx, w->c->comm, __FILE__, __LINE__, "gcsh_nccl_devcomm_destroy", r);
    return 0;
}

static int cuda_mc_ld_reduce(gcsh_ctx *ctx, const gcsh_mcast *m, size_t offset, void *out,
                             size_t n, gcsh_dtype dt, gcsh_redop op)
{
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    CUDA_TRY(ctx, gcsh_k_mc_ld_reduce((char *)m->base + offset, out, n, dt, op, st->stream));
    return 0;
fail:
    return -1;
}

static int cuda_mc_st(gcsh_ctx *ctx, const gcsh_mcast *m, size_t offset, const void *src,
                      size_t n, gcsh_dtype dt)
{
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    CUDA_TRY(ctx, gcsh_k_mc_st((char *)m->base + offset, src, n, dt, st->stream));
    return 0;
fail:
    return -1;
}

const gcsh_kernel_ops gcsh_cuda_kernel_ops = {
    .sync_bytes = (GCSH_KERN_SYNC_WORDS(GCSH_KERN_MAX_BLOCKS) + GCSH_KERN_EPOCH_WORDS) *
                  sizeof(uint64_t),
    .reduce = cuda_reduce,
    .empty = cuda_empty,
    .collective = cuda_collective,
    .alltoallv = cuda_alltoallv,
    .ll_allreduce = cuda_ll_allreduce,
    .dev_usable = cuda_dev_usable,
    .dev_allreduce = cuda_dev_allreduce,
    .mc_open = gpu_kern_mc_open,
    .mc_ld_reduce = cuda_mc_ld_reduce,
    .mc_st = cuda_mc_st,
};
