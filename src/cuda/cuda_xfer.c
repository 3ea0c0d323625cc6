/* One-sided transfers on the cuda backend: the device runtime's transfer
 * part (gpu/gpu_rt.h; the record, the CPU's wait and c:quiet are
 * gpu/gpu_xfer.c's).  Copies between this rank's device memory and peers'
 * window slices, through the addresses of the peer pointer table (UVA:
 * valid in this process for copies and kernels).
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
 * A peer on another node (plan->net): the network path (gpu/gpu_net.c,
 * gpu/gpu_xfer.c's post), each segment one put or get and then the
 * signal's add, each applied at the target before the next and before post
 * returns; the engine does not apply there (no segments, no signal: the
 * post here only records the event).
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

#include "cuda/cuda.h"
#include "gpu/gpu_xfer.h"
#include "xferkern.h"

/* Blocks per SM for the copy kernel (256 threads each). */
#define BLOCKS_PER_SM 8

struct gcsh_gpu_xfer {
    int one_by_one;          /* ce putv: the runtime refused the batch once */
    gcsh_kseg *dev;          /* sm: [nseg] on the device, then the arrival word */
    unsigned *arrived;
    size_t chunks;
    unsigned max_blocks;
    cudaEvent_t done;
};

const gcsh_xfer_ops gcsh_cuda_xfer_ops = {.engines = "ce sm", GCSH_GPU_XFER_OPS};

void cuda_xfer_free(cuda_state *st, gcsh_gpu_xfer *own)
{
    if (own->done)
        cudaEventDestroy(own->done); /* fine while pending: released when it completes */
    if (own->dev)
        cudaFreeAsync(own->dev, st->stream); /* after every post queued so far */
    free(own);
}

/* The device descriptors of the sm engine, copied on the poll stream: the
 * rank's stream may be held by a GPU signal wait, and making a handle must
 * not wait for that. */
static int upload_descriptors(gcsh_ctx *ctx, cuda_state *st, gcsh_xfer_impl *x)
{
    gcsh_gpu_xfer *own = x->own;
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
    own->chunks = gcsh_k_xfer_layout(host, x->nseg);
    if (x->nseg && own->chunks < x->nseg) {
        gcsh_set_error(ctx, "transfer: bad segment layout (an empty segment was kept)");
        goto fail;
    }
    CUDA_TRY(ctx, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, st->dev));
    own->max_blocks = (unsigned)(sms > 0 ? sms : 1) * BLOCKS_PER_SM;
    CUDA_TRY(ctx, cudaMallocAsync((void **)&own->dev, bytes, st->poll_stream));
    own->arrived = (unsigned *)(own->dev + x->nseg);
    CUDA_TRY(ctx, cudaMemcpyAsync(own->dev, host, x->nseg * sizeof *host, cudaMemcpyHostToDevice,
                                  st->poll_stream));
    CUDA_TRY(ctx, cudaMemsetAsync(own->arrived, 0, sizeof *own->arrived, st->poll_stream));
    CUDA_TRY(ctx, cudaStreamSynchronize(st->poll_stream));
    free(host);
    return 0;
fail:
    free(host);
    return -1;
}

/* The runtime's xfer_prepare: x's device part (x->own, freed by
 * cuda_xfer_free however far this got). */
int cuda_xfer_prepare(gcsh_ctx *ctx, cuda_state *st, gcsh_xfer_impl *x)
{
    x->own = calloc(1, sizeof *x->own);
    if (!x->own)
        return gcsh_set_error(ctx, "transfer: out of host memory");
    if (x->engine == GCSH_XFER_SM && x->nseg && upload_descriptors(ctx, st, x) != 0)
        return -1;
    CUDA_TRY(ctx, cudaEventCreateWithFlags(&x->own->done, cudaEventDisableTiming));
    return 0;
fail:
    return -1;
}

/* Several segments through the copy engines: one batch when the runtime
 * takes it, else one copy each. */
static int copy_engine_many(gcsh_ctx *ctx, cuda_state *st, gcsh_xfer_impl *x)
{
#if CUDART_VERSION >= 13000
    if (!x->own->one_by_one) {
        struct cudaMemcpyAttributes attr;
        memset(&attr, 0, sizeof attr);
        attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream; /* sources are read in stream order */
        size_t attr_index = 0;
        cudaError_t e = cudaMemcpyBatchAsync((void *const *)x->dsts, (const void *const *)x->srcs,
                                             x->sizes, x->nseg, &attr, &attr_index, 1, st->stream);
        if (e == cudaSuccess)
            return 0;
        (void)cudaGetLastError();
        x->own->one_by_one = 1;
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
        CUDA_TRY(ctx, gcsh_k_xfer(x->own->dev, x->nseg, x->own->chunks, x->own->max_blocks,
                                  x->own->arrived, x->signal, x->value, st->stream));
    else if (x->signal) /* nothing to copy: the signal alone */
        CUDA_TRY(ctx, gcsh_k_signal_store(x->signal, x->value, 1, st->stream));
    return 0;
fail:
    return -1;
}

int cuda_xfer_post(gcsh_ctx *ctx, cuda_state *st, gcsh_xfer_impl *x)
{
    int rc = x->engine == GCSH_XFER_SM ? post_kernel(ctx, st, x) : post_copy_engine(ctx, st, x);
    if (rc != 0)
        return -1;
    /* In a graph (gcsh.graph) the record is a node of its own, so every
     * replay marks the event, and x:test() after a replay sees it. */
    CUDA_TRY(ctx, cudaEventRecordWithFlags(x->own->done, st->stream,
                                           ctx->graph ? cudaEventRecordExternal
                                                      : cudaEventRecordDefault));
    return 0;
fail:
    return -1;
}

/* The last post's status (the runtime's xfer_query). */
void cuda_xfer_query(gcsh_ctx *ctx, gcsh_xfer_impl *x, enum gcsh_xfer_status *status)
{
    cudaError_t e = cudaEventQuery(x->own->done);
    if (e == cudaSuccess) {
        *status = GCSH_XFER_DONE;
    } else if (e == cudaErrorNotReady) {
        *status = GCSH_XFER_PENDING;
    } else {
        (void)cudaGetLastError();
        *status = GCSH_XFER_ERROR;
        cuda_error(ctx, __FILE__, __LINE__, "cudaEventQuery", e);
    }
}

int cuda_xfer_wait_stream(gcsh_ctx *ctx, cuda_state *st, gcsh_xfer_impl *x)
{
    /* A graph waits for the event's last record at each replay (a node). */
    CUDA_TRY(ctx, cudaStreamWaitEvent(st->stream, x->own->done,
                                      ctx->graph ? cudaEventWaitExternal : cudaEventWaitDefault));
    return 0;
fail:
    return -1;
}

/* Ordering.  Every one-sided operation of this backend runs on the rank's
 * stream (copies, the copy kernel, the signal kernels; the poll stream only
 * reads), so each starts after the one before it finished.  The fence adds
 * a system-scope fence kernel there: the writes before it are visible to
 * every GPU and the host before anything the stream runs after it. */
int cuda_fence(gcsh_ctx *ctx, cuda_state *st)
{
    CUDA_TRY(ctx, gcsh_k_fence(st->stream));
    return 0;
fail:
    return -1;
}
