/* The cuda backend's reduce kernels and multicast (kernels/reduce.cu,
 * kernels/ll.cu, kernels/nccl_dev.cu, kernels/mcast.cu): stream-ordered
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
 * is exchanged, so the mode is the same on all of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_window.h"
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

/* This rank's verdict for a window: 1 when NVLS may be used, else 0 with the
 * reasons. */
static int nvls_allowed_here(cuda_state *st, const gcsh_window_impl *w,
                             char *why, size_t len)
{
    return cuda_nvls_policy(st, w->kind->device_api ? NULL
                                : "the nvls path needs a window of kind nccl (NCCL's LSA multimem)",
                            why, len);
}

typedef struct mc_verdict {
    int ok;
    char why[200];
} mc_verdict;

/* Every rank's verdict; the mode is nvls only when all allow it, and the
 * reason names the first rank that did not (or is this rank's own). */
static int agree_verdict(gcsh_ctx *ctx, gcsh_comm_impl *c, const mc_verdict *mine,
                         gcsh_mcast *out)
{
    mc_verdict *all = calloc((size_t)c->size, sizeof *all);
    if (!all)
        return gcsh_set_error(ctx, "multicast: out of host memory");
    int rc = gcsh_cuda_comm_ops.agree(ctx, c, mine, all, sizeof *mine);
    out->nvls = rc == 0;
    for (int r = 0; rc == 0 && r < c->size && out->nvls; r++) {
        if (all[r].ok)
            continue;
        out->nvls = 0;
        all[r].why[sizeof all[r].why - 1] = 0;
        if (r == c->rank || strcmp(all[r].why, mine->why) == 0)
            snprintf(out->why, sizeof out->why, "%s", all[r].why);
        else
            snprintf(out->why, sizeof out->why, "rank %d: %.180s", r, all[r].why);
    }
    free(all);
    return rc;
}

typedef struct win_status {
    int ok;
    char msg[236];
} win_status;

/* Every rank of c says whether its step succeeded (ok, with its ctx->err
 * when not).  Returns 0 when all did; otherwise -1 on every rank, with the
 * same message everywhere: "<what> failed on rank R: <R's error>".  A rank
 * that could not even exchange (interrupt) fails with its own error.  (The
 * multicast set-up's; window creation has winbuild.h's exchange.) */
static int agree_ok(gcsh_ctx *ctx, gcsh_comm_impl *c, int ok, const char *what)
{
    win_status mine = {ok, {0}};
    if (!ok)
        snprintf(mine.msg, sizeof mine.msg, "%.235s", ctx->err); /* long errors are cut */
    win_status *all = calloc((size_t)c->size, sizeof *all);
    if (!all)
        return gcsh_set_error(ctx, "%s: out of host memory", what);
    int rc = gcsh_cuda_comm_ops.agree(ctx, c, &mine, all, sizeof mine);
    for (int r = 0; rc == 0 && r < c->size; r++)
        if (!all[r].ok) {
            all[r].msg[sizeof all[r].msg - 1] = 0;
            rc = gcsh_set_error(ctx, "%s failed on rank %d: %s", what, r, all[r].msg);
        }
    free(all);
    return rc;
}

static int open_nvls(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w, gcsh_mcast *out)
{
    ncclResult_t r = gcsh_nccl_multimem_open(w->c->comm, w->own->win, &w->own->mm_devcomm, &out->base,
                                             st->stream);
    int ok = r == ncclSuccess;
    if (!ok)
        nccl_error(ctx, w->c->comm, __FILE__, __LINE__, "gcsh_nccl_multimem_open", r);
    if (agree_ok(ctx, w->c, ok, "multicast (nvls)") != 0)
        return -1;
    snprintf(out->why, sizeof out->why,
             "opted in (GCSH_MULTICAST=1), NVLS enabled and supported: multimem over NCCL's "
             "LSA multicast address %p",
             out->base);
    return 0;
}

static int cuda_mc_open(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                        gcsh_mcast *out)
{
    (void)d;
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    if (w->mc_decided) {
        *out = w->mc;
        return 0;
    }
    mc_verdict mine;
    memset(&mine, 0, sizeof mine);
    mine.ok = nvls_allowed_here(st, w, mine.why, sizeof mine.why);
    gcsh_mcast mc;
    memset(&mc, 0, sizeof mc);
    if (agree_verdict(ctx, w->c, &mine, &mc) != 0)
        return -1;
    if (mc.nvls && open_nvls(ctx, st, w, &mc) != 0)
        return -1;
    w->mc = mc;
    w->mc_decided = 1;
    *out = mc;
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
    .mc_open = cuda_mc_open,
    .mc_ld_reduce = cuda_mc_ld_reduce,
    .mc_st = cuda_mc_st,
};
