/* One-sided transfers on the cuda backend: copies between this rank's
 * device memory and peers' window slices, through the addresses of the peer
 * pointer table (UVA: valid in this process for copies and kernels).
 *
 * Engines:
 *   "ce"  copy engines.  One segment: cudaMemcpyAsync (cudaMemcpyDefault: the
 *         runtime resolves window mappings by UVA, the path w:peer copies
 *         take, measured at full NVLink speed).  Several (putv): one
 *         cudaMemcpyBatchAsync over host arrays made at prepare (CUDA 13
 *         runtime); if the runtime refuses the batch, that handle copies
 *         segment by segment from then on (copying the same bytes again is
 *         harmless, so a partly queued batch needs no undo) and says so once
 *         on stderr.  A signal is the signal kernel after the copies on the
 *         same stream: it starts when they have finished, and adds with
 *         release ordering at system scope.
 *   "sm"  one launch of the copy kernel (kernels/xfer.cu) for every segment,
 *         which also adds the signal from its last block.
 *
 * A peer on another node (plan->net): the network path (cuda_net.c), each
 * segment one put or get and then the signal's add, each applied at the
 * target before the next and before post returns; the engine does not
 * apply there.
 *
 * Status: an event recorded after each post (cudaEventQuery for test, the
 * host polls it for wait{cpu=true}).  Device descriptors come from the
 * stream-ordered allocator and go back with cudaFreeAsync on the rank's
 * stream, so releasing a handle with a post in flight never blocks and
 * never frees under the kernel.  Everything the launchers need is checked
 * at prepare. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_window.h"
#include "xferkern.h"

/* Blocks per SM for the copy kernel (256 threads each). */
#define BLOCKS_PER_SM 8

struct gcsh_xfer_impl {
    gcsh_xfer_engine engine;
    size_t nseg;             /* non-empty segments (empty ones copy nothing) */
    void **dsts;             /* ce: [nseg] */
    const void **srcs;
    size_t *sizes;
    int one_by_one;          /* ce putv: the runtime refused the batch once */
    gcsh_kseg *dev;          /* sm: [nseg] on the device, then the arrival word */
    unsigned *arrived;
    size_t chunks;
    unsigned max_blocks;
    uint64_t *signal;
    uint64_t value;
    cudaEvent_t done;
    /* over the network path: the plan, its segments' far sides offsets */
    gcsh_xfer_plan net;
    gcsh_xfer_seg *net_seg;
};

static void xfer_free(cuda_state *st, gcsh_xfer_impl *x)
{
    if (x->done)
        cudaEventDestroy(x->done); /* fine while pending: released when it completes */
    if (x->dev)
        cudaFreeAsync(x->dev, st->stream); /* after every post queued so far */
    free(x->dsts);
    free(x->srcs);
    free(x->sizes);
    free(x->net_seg);
    free(x);
}

/* A peer off the team: the plan as it is, for gcsh_netpath_post. */
static int keep_net_plan(gcsh_ctx *ctx, gcsh_xfer_impl *x, const gcsh_xfer_plan *p)
{
    x->net_seg = calloc(p->nseg ? p->nseg : 1, sizeof *x->net_seg);
    if (!x->net_seg)
        return gcsh_set_error(ctx, "transfer: out of host memory");
    memcpy(x->net_seg, p->seg, p->nseg * sizeof *x->net_seg);
    x->net = *p;
    x->net.seg = x->net_seg;
    return 0;
}

static int keep_segments(gcsh_ctx *ctx, gcsh_xfer_impl *x, const gcsh_xfer_plan *p)
{
    x->dsts = calloc(p->nseg, sizeof *x->dsts);
    x->srcs = calloc(p->nseg, sizeof *x->srcs);
    x->sizes = calloc(p->nseg, sizeof *x->sizes);
    if (!x->dsts || !x->srcs || !x->sizes)
        return gcsh_set_error(ctx, "transfer: out of host memory");
    for (size_t i = 0; i < p->nseg; i++) {
        if (p->seg[i].bytes == 0)
            continue;
        x->dsts[x->nseg] = p->seg[i].dst;
        x->srcs[x->nseg] = p->seg[i].src;
        x->sizes[x->nseg] = p->seg[i].bytes;
        x->nseg++;
    }
    return 0;
}

/* The device descriptors of the sm engine, copied on the poll stream: the
 * rank's stream may be held by a GPU signal wait, and making a handle must
 * not wait for that. */
static int upload_descriptors(gcsh_ctx *ctx, cuda_state *st, gcsh_xfer_impl *x)
{
    size_t bytes = x->nseg * sizeof(gcsh_kseg) + sizeof(unsigned);
    gcsh_kseg *host = calloc(x->nseg ? x->nseg : 1, sizeof *host);
    int sms = 0;
    if (!host)
        return gcsh_set_error(ctx, "transfer: out of host memory");
    for (size_t i = 0; i < x->nseg; i++) {
        host[i].dst = x->dsts[i];
        host[i].src = x->srcs[i];
        host[i].bytes = x->sizes[i];
    }
    x->chunks = gcsh_k_xfer_layout(host, x->nseg);
    if (x->nseg && x->chunks < x->nseg) {
        gcsh_set_error(ctx, "transfer: bad segment layout (an empty segment was kept)");
        goto fail;
    }
    CUDA_TRY(ctx, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, st->dev));
    x->max_blocks = (unsigned)(sms > 0 ? sms : 1) * BLOCKS_PER_SM;
    CUDA_TRY(ctx, cudaMallocAsync((void **)&x->dev, bytes, st->poll_stream));
    x->arrived = (unsigned *)(x->dev + x->nseg);
    CUDA_TRY(ctx, cudaMemcpyAsync(x->dev, host, x->nseg * sizeof *host, cudaMemcpyHostToDevice,
                                  st->poll_stream));
    CUDA_TRY(ctx, cudaMemsetAsync(x->arrived, 0, sizeof *x->arrived, st->poll_stream));
    CUDA_TRY(ctx, cudaStreamSynchronize(st->poll_stream));
    free(host);
    return 0;
fail:
    free(host);
    return -1;
}

static int cuda_xfer_prepare(gcsh_ctx *ctx, const gcsh_xfer_plan *plan, gcsh_xfer_impl **out)
{
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    gcsh_xfer_impl *x = calloc(1, sizeof *x);
    if (!x)
        return gcsh_set_error(ctx, "transfer: out of host memory");
    x->engine = plan->engine;
    x->signal = plan->signal;
    x->value = plan->signal_value;
    if (plan->net && keep_net_plan(ctx, x, plan) != 0)
        goto fail;
    if (!plan->net && keep_segments(ctx, x, plan) != 0)
        goto fail;
    if (x->engine == GCSH_XFER_SM && x->nseg && upload_descriptors(ctx, st, x) != 0)
        goto fail;
    CUDA_TRY(ctx, cudaEventCreateWithFlags(&x->done, cudaEventDisableTiming));
    *out = x;
    return 0;
fail:
    xfer_free(st, x);
    return -1;
}

/* Several segments through the copy engines: one batch when the runtime
 * takes it, else one copy each. */
static int copy_engine_many(gcsh_ctx *ctx, cuda_state *st, gcsh_xfer_impl *x)
{
#if CUDART_VERSION >= 13000
    if (!x->one_by_one) {
        struct cudaMemcpyAttributes attr;
        memset(&attr, 0, sizeof attr);
        attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream; /* sources are read in stream order */
        size_t attr_index = 0;
        cudaError_t e = cudaMemcpyBatchAsync((void *const *)x->dsts, (const void *const *)x->srcs,
                                             x->sizes, x->nseg, &attr, &attr_index, 1, st->stream);
        if (e == cudaSuccess)
            return 0;
        (void)cudaGetLastError();
        x->one_by_one = 1;
        fprintf(stderr, "gcsh: rank %d: cudaMemcpyBatchAsync refused (%s); this putv copies "
                        "segment by segment\n", ctx->rank, cudaGetErrorString(e));
    }
#endif
    for (size_t i = 0; i < x->nseg; i++)
        CUDA_TRY(ctx, cudaMemcpyAsync(x->dsts[i], x->srcs[i], x->sizes[i],
                                      cudaMemcpyDefault, st->stream));
    return 0;
fail:
    return -1;
}

static int post_copy_engine(gcsh_ctx *ctx, cuda_state *st, gcsh_xfer_impl *x)
{
    if (x->nseg == 1)
        CUDA_TRY(ctx, cudaMemcpyAsync(x->dsts[0], x->srcs[0], x->sizes[0],
                                      cudaMemcpyDefault, st->stream));
    else if (x->nseg > 1 && copy_engine_many(ctx, st, x) != 0)
        return -1;
    /* stream order: the signal kernel starts once the copies have finished */
    if (x->signal)
        CUDA_TRY(ctx, gcsh_k_signal_store(x->signal, x->value, 1, st->stream));
    return 0;
fail:
    return -1;
}

static int post_kernel(gcsh_ctx *ctx, cuda_state *st, gcsh_xfer_impl *x)
{
    if (x->nseg)
        CUDA_TRY(ctx, gcsh_k_xfer(x->dev, x->nseg, x->chunks, x->max_blocks, x->arrived, x->signal,
                                  x->value, st->stream));
    else if (x->signal) /* nothing to copy: the signal alone */
        CUDA_TRY(ctx, gcsh_k_signal_store(x->signal, x->value, 1, st->stream));
    return 0;
fail:
    return -1;
}

static int cuda_xfer_post(gcsh_ctx *ctx, gcsh_xfer_impl *x)
{
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    int rc = x->net.net                   ? gcsh_netpath_post(ctx, &x->net, cuda_win_net)
             : x->engine == GCSH_XFER_SM ? post_kernel(ctx, st, x)
                                         : post_copy_engine(ctx, st, x);
    if (rc != 0)
        return -1;
    /* In a graph (gcsh.graph) the record is a node of its own, so every
     * replay marks the event, and x:test() after a replay sees it. */
    CUDA_TRY(ctx, cudaEventRecordWithFlags(x->done, st->stream,
                                           ctx->graph ? cudaEventRecordExternal
                                                      : cudaEventRecordDefault));
    return 0;
fail:
    return -1;
}

static int query(gcsh_ctx *ctx, gcsh_xfer_impl *x, enum gcsh_xfer_status *status)
{
    cudaError_t e = cudaEventQuery(x->done);
    if (e == cudaSuccess) {
        *status = GCSH_XFER_DONE;
    } else if (e == cudaErrorNotReady) {
        *status = GCSH_XFER_PENDING;
    } else {
        (void)cudaGetLastError();
        *status = GCSH_XFER_ERROR;
        cuda_error(ctx, __FILE__, __LINE__, "cudaEventQuery", e);
    }
    return 0;
}

static int cuda_xfer_test(gcsh_ctx *ctx, gcsh_xfer_impl *x, enum gcsh_xfer_status *status)
{
    return cuda_enter(ctx) ? query(ctx, x, status) : -1;
}

static int cuda_xfer_wait_stream(gcsh_ctx *ctx, gcsh_xfer_impl *x)
{
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    /* A graph waits for the event's last record at each replay (a node). */
    CUDA_TRY(ctx, cudaStreamWaitEvent(st->stream, x->done,
                                      ctx->graph ? cudaEventWaitExternal : cudaEventWaitDefault));
    return 0;
fail:
    return -1;
}

static int cuda_xfer_wait_cpu(gcsh_ctx *ctx, gcsh_xfer_impl *x, double timeout)
{
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    double deadline = gcsh_now_seconds() + timeout;
    for (unsigned polls = 0;; polls++) {
        enum gcsh_xfer_status status;
        query(ctx, x, &status);
        if (status == GCSH_XFER_DONE)
            return 0;
        if (status == GCSH_XFER_ERROR)
            return -1;
        if (atomic_load(&ctx->interrupt)) {
            cuda_cancel_waits(st); /* a GPU signal wait ahead of it must not outlive the chunk */
            return gcsh_set_error(ctx, "interrupted while waiting for a transfer");
        }
        if (gcsh_now_seconds() >= deadline)
            return 1;
        cuda_poll_pause(polls);
    }
}

static void cuda_xfer_release(gcsh_ctx *ctx, gcsh_xfer_impl *x)
{
    cuda_state *st = x ? cuda_enter(ctx) : NULL;
    if (st)
        xfer_free(st, x);
}

/* Ordering.  Every one-sided operation of this backend runs on the rank's
 * stream (copies, the copy kernel, the signal kernels; the poll stream only
 * reads), so each starts after the one before it finished.  The fence adds
 * a system-scope fence kernel there: the writes before it are visible to
 * every GPU and the host before anything the stream runs after it. */
static int cuda_xfer_fence(gcsh_ctx *ctx)
{
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    CUDA_TRY(ctx, gcsh_k_fence(st->stream));
    return 0;
fail:
    return -1;
}

/* The fence, then the CPU waits for the stream (interruptibly: a GPU signal
 * wait queued before it may be waiting for a peer). */
static int cuda_xfer_quiet(gcsh_ctx *ctx)
{
    cuda_state *st = cuda_enter(ctx);
    if (!st || cuda_xfer_fence(ctx) != 0)
        return -1;
    return cuda_wait(ctx, st, NULL);
}

const gcsh_xfer_ops gcsh_cuda_xfer_ops = {
    .engines = "ce sm",
    .prepare = cuda_xfer_prepare,
    .post = cuda_xfer_post,
    .test = cuda_xfer_test,
    .wait_stream = cuda_xfer_wait_stream,
    .wait_cpu = cuda_xfer_wait_cpu,
    .release = cuda_xfer_release,
    .fence = cuda_xfer_fence,
    .quiet = cuda_xfer_quiet,
};
