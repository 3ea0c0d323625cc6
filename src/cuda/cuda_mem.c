/* Device memory, copies, element-wise initialisers and timers.
 *
 * Everything is enqueued on the rank's stream.  Operations that hand data to
 * or from host memory wait for the stream before returning (the caller reads
 * or frees that host memory next); device-only operations return at once and
 * stay ordered by the stream. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda.h"
#include "elem.h"
#include "initkern.h"

/* The pool keeps what tensors freed (cuda_backend.c: keep_pool_cached);
 * a window's memory needs it back (cuda.h). */
void cuda_pool_trim(cuda_state *st)
{
    cudaMemPool_t pool;
    if (cudaDeviceGetDefaultMemPool(&pool, st->dev) == cudaSuccess)
        cudaMemPoolTrimTo(pool, 0);
}

/* Tensor memory is stream-ordered (cudaMallocAsync/cudaFreeAsync on the
 * rank's stream, from the device's pool, kept cached: cuda_backend.c).
 * cudaFree is not: it waits for the GPU, and under MPS for the work of
 * every process on it.  Ranks sharing a GPU deadlocked that way (4 ranks on
 * one H100 with MPS, tests/lua/kernel_ops.lua: every rank in cudaFree from
 * Lua's garbage collector, each waiting for a peer's kernel that waited for
 * a kernel the collecting rank had not launched yet). */
static int capturing(cuda_state *st)
{
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    return cudaStreamIsCapturing(st->stream, &cs) == cudaSuccess &&
           cs != cudaStreamCaptureStatusNone;
}

/* Frees held back during a capture, once it is over. */
static void release_held(cuda_state *st)
{
    if (st->nheld == 0 || capturing(st))
        return;
    for (int i = 0; i < st->nheld; i++)
        cudaFreeAsync(st->held[i], st->stream);
    st->nheld = 0;
}

static int hold_for_later(cuda_state *st, void *p)
{
    if (st->nheld == st->cap_held) {
        int cap = st->cap_held ? 2 * st->cap_held : 16;
        void **grown = realloc(st->held, (size_t)cap * sizeof *grown);
        if (!grown)
            return -1;
        st->held = grown;
        st->cap_held = cap;
    }
    st->held[st->nheld++] = p;
    return 0;
}

/* cudaMallocAsync, and once more after giving the pool's cached memory
 * back to the device when the GPU has no more. */
static cudaError_t pool_alloc(gcsh_ctx *ctx, cuda_state *st, void **out, size_t bytes)
{
    cudaError_t e = cudaMallocAsync(out, bytes, st->stream);
    if (e != cudaErrorMemoryAllocation)
        return e;
    (void)cudaGetLastError();
    /* the frees enqueued before must have run for their memory to go back */
    if (cuda_wait(ctx, st, NULL) != 0)
        return e;
    cuda_pool_trim(st);
    return cudaMallocAsync(out, bytes, st->stream);
}

static int cuda_alloc(gcsh_ctx *ctx, size_t bytes, void **out, int *loc)
{
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    if (capturing(st))
        return gcsh_set_error(ctx, "device memory cannot be allocated while a graph is "
                                   "being captured: make the tensors before the capture");
    release_held(st);
    /* gcsh.debug.inject("oom"): a real allocation failure, by asking for
     * more than any GPU has */
    if (ctx->inject_oom) {
        ctx->inject_oom = 0;
        bytes = (size_t)1 << 50;
    }
    /* A zero-length tensor still gets a distinct, non-NULL address: NULL
     * marks a released storage.  Sizes are rounded up to 16 bytes: NCCL's LL
     * kernels load a buffer in 4- and 8-byte words, so the last element of
     * an odd-sized f16 tensor was read past the allocation's end
     * (compute-sanitizer memcheck on 2 H200s: ncclDevKernel_AllReduce_Sum_
     * f16_RING_LL, 4 bytes at offset 512 of a 514-byte tensor).  The pool
     * hands out blocks aligned far more coarsely, so the memory was there;
     * rounding makes it the tensor's own. */
    size_t rounded = bytes == 0 ? 16 : bytes > SIZE_MAX - 15 ? bytes : (bytes + 15) / 16 * 16;
    CUDA_TRY(ctx, pool_alloc(ctx, st, out, rounded));
    *loc = st->dev;
    return 0;
fail:
    return -1;
}

void cuda_free_ordered(cuda_state *st, void *p)
{
    if (capturing(st)) {
        if (hold_for_later(st, p) != 0)
            fprintf(stderr, "gcsh: out of host memory: %p of device memory stays allocated\n", p);
        return;
    }
    release_held(st);
    cudaFreeAsync(p, st->stream);
}

/* Stream-ordered: work already enqueued on the tensor finishes first, and
 * nothing here waits for the GPU. */
static void cuda_release(gcsh_ctx *ctx, void *p, int loc)
{
    (void)loc;
    cuda_state *st = p ? cuda_enter(ctx) : NULL;
    if (st)
        cuda_free_ordered(st, p);
}

#define BOUNCE_BYTES (4u << 20)

/* Host<->device copies go through a device bounce buffer of our own
 * (from the stream-ordered pool), so window memory (NCCL's LSA mappings, cuMemMap'ed VMM
 * slices) is only ever copied device to device.  Seen on H200s, driver
 * 580: a device-to-host cudaMemcpyAsync straight from such a mapping
 * crashed inside libcuda, while device-to-device copies from it ran at full
 * NVLink speed.  The extra on-device hop is small next to the PCIe copy. */
static int copy_via_bounce(gcsh_ctx *ctx, cuda_state *st, void *dst, int to_host,
                           const void *src, size_t bytes)
{
    if (!st->bounce)
        CUDA_TRY(ctx, cudaMallocAsync(&st->bounce, BOUNCE_BYTES, st->stream));
    for (size_t done = 0; done < bytes; done += BOUNCE_BYTES) {
        size_t n = bytes - done < BOUNCE_BYTES ? bytes - done : BOUNCE_BYTES;
        char *d = (char *)dst + done;
        const char *s = (const char *)src + done;
        /* A copy to or from pageable host memory first waits inside the
         * driver for everything before it on the stream, and nothing ends
         * that wait: behind a kernel whose peer never comes (.check off)
         * the rank would never answer an interrupt.  So the stream is
         * drained by polling (cuda_wait) before each such copy. */
        if (to_host) {
            CUDA_TRY(ctx, cudaMemcpyAsync(st->bounce, s, n, cudaMemcpyDeviceToDevice, st->stream));
            if (cuda_wait(ctx, st, NULL) != 0)
                return -1;
            CUDA_TRY(ctx, cudaMemcpyAsync(d, st->bounce, n, cudaMemcpyDeviceToHost, st->stream));
        } else {
            if (cuda_wait(ctx, st, NULL) != 0)
                return -1;
            CUDA_TRY(ctx, cudaMemcpyAsync(st->bounce, s, n, cudaMemcpyHostToDevice, st->stream));
            CUDA_TRY(ctx, cudaMemcpyAsync(d, st->bounce, n, cudaMemcpyDeviceToDevice, st->stream));
        }
        /* the next chunk reuses the bounce buffer */
        if (cuda_wait(ctx, st, NULL) != 0)
            return -1;
    }
    return 0;
fail:
    return -1;
}

static int cuda_copy(gcsh_ctx *ctx, void *dst, int dst_loc, const void *src, int src_loc,
                     size_t bytes)
{
    if (bytes == 0)
        return 0;
    if (dst_loc == GCSH_LOC_HOST && src_loc == GCSH_LOC_HOST) {
        memmove(dst, src, bytes);
        return 0;
    }
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    if (dst_loc == GCSH_LOC_HOST || src_loc == GCSH_LOC_HOST)
        return copy_via_bounce(ctx, st, dst, dst_loc == GCSH_LOC_HOST, src, bytes);
    if (dst_loc != src_loc)
        CUDA_TRY(ctx, cudaMemcpyPeerAsync(dst, dst_loc, src, src_loc, bytes, st->stream));
    else
        CUDA_TRY(ctx, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, st->stream));
    return 0;
fail:
    return -1;
}

/* Host-memory initialisers: the same element functions, in a C loop, for the
 * rare host buffer handed to this backend (e.g. a staging tensor). */
static void host_fill(void *p, size_t esize, size_t n, uint64_t bits)
{
    for (size_t i = 0; i < n; i++) /* little-endian: the low bytes are the element */
        memcpy((char *)p + i * esize, &bits, esize);
}

static int cuda_fill(gcsh_ctx *ctx, void *p, int loc, gcsh_dtype dt, size_t n, gcsh_scalar v)
{
    size_t esize = gcsh_dtype_size(dt);
    uint64_t bits = 0; /* the element encoded once, on the host, by the host's code */
    gcsh_elem_store_scalar(&bits, dt, 0, v);
    if (loc == GCSH_LOC_HOST) {
        host_fill(p, esize, n, bits);
        return 0;
    }
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    CUDA_TRY(ctx, gcsh_k_fill(p, esize, n, bits, st->stream));
    return 0;
fail:
    return -1;
}

static int cuda_arange(gcsh_ctx *ctx, void *p, int loc, gcsh_dtype dt, size_t n,
                       gcsh_scalar start, gcsh_scalar step)
{
    if (loc == GCSH_LOC_HOST) {
        for (size_t i = 0; i < n; i++)
            gcsh_elem_arange(p, dt, i, start, step);
        return 0;
    }
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    CUDA_TRY(ctx, gcsh_k_arange(p, dt, n, start, step, st->stream));
    return 0;
fail:
    return -1;
}

static int cuda_rand(gcsh_ctx *ctx, void *p, int loc, gcsh_dtype dt, size_t n, uint64_t seed)
{
    if (loc == GCSH_LOC_HOST) {
        for (size_t i = 0; i < n; i++)
            gcsh_elem_rand(p, dt, i, seed);
        return 0;
    }
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    CUDA_TRY(ctx, gcsh_k_rand(p, dt, n, seed, st->stream));
    return 0;
fail:
    return -1;
}

/* The wait a kernel collective noted in the control block (winkern.h's
 * stall record, kwait.cuh), in the host's words for a hang report:
 * "waits at barrier #17 for [3]'s word (now 16)".  Called by the watcher
 * (gcsh_wait_note_text): it only reads pinned memory. */
static int stall_text(const void *arg, char *buf, size_t len)
{
    const gcsh_wait_ctl *w = arg;
    unsigned long long who = w->stall_who;
    if (who == 0)
        return 0;
    int peer = (int)(who >> GCSH_STALL_SEEN_BITS) - 1;
    unsigned long long seen = who & GCSH_STALL_SEEN_MASK, want = w->stall_want;
    int flagged = w->stall_kind == GCSH_STALL_LL || w->stall_kind == GCSH_STALL_LL128;
    snprintf(buf, len, "waits at %s %s%llu for [%d]'s word (now %llu)",
             w->stall_kind == GCSH_STALL_LL128 ? "ll128" : flagged ? "ll" : "barrier",
             flagged ? "flag " : "#", want, peer, seen);
    return 1;
}

/* The end of a command (and a host copy's wait, gcsh_host_copy): while it
 * waits for the stream, a hang report says what a kernel there waits for. */
static int cuda_sync(gcsh_ctx *ctx)
{
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    st->wctl->stall_who = 0; /* what an earlier wait noted has passed */
    gcsh_wait_note_begin_text(&ctx->wait_note, stall_text, st->wctl);
    int rc = cuda_wait(ctx, st, NULL);
    gcsh_wait_note_end(&ctx->wait_note);
    return rc;
}

/* A timer token: the begin event, recorded on the rank's stream. */
typedef struct cuda_timer {
    cudaEvent_t begin;
} cuda_timer;

static int cuda_timer_begin(gcsh_ctx *ctx, void **tok)
{
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    cuda_timer *t = calloc(1, sizeof *t);
    if (!t)
        return gcsh_set_error(ctx, "timer: out of host memory");
    CUDA_TRY(ctx, cudaEventCreate(&t->begin));
    CUDA_TRY(ctx, cudaEventRecord(t->begin, st->stream));
    *tok = t;
    return 0;
fail:
    if (t->begin)
        cudaEventDestroy(t->begin);
    free(t);
    return -1;
}

static int cuda_timer_end(gcsh_ctx *ctx, void *tok, double *seconds)
{
    cuda_timer *t = tok;
    cudaEvent_t end = NULL;
    float ms = 0;
    int rc = -1;
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        goto fail;
    CUDA_TRY(ctx, cudaEventCreate(&end));
    CUDA_TRY(ctx, cudaEventRecord(end, st->stream));
    /* polled, not cudaEventSynchronize: the timed work may wait for a rank
     * that never comes, and only an interrupt then ends the wait */
    if (cuda_wait(ctx, st, NULL) != 0)
        goto fail;
    CUDA_TRY(ctx, cudaEventElapsedTime(&ms, t->begin, end));
    *seconds = ms * 1e-3;
    rc = 0;
fail:
    if (end)
        cudaEventDestroy(end);
    cudaEventDestroy(t->begin);
    free(t);
    return rc;
}

/* Trace marks (backend.h): one CUDA event each, recorded on the rank's
 * stream.  Errors are returned, not reported: a trace only loses a span. */
static int cuda_mark(gcsh_ctx *ctx, void **tok)
{
    cuda_state *st = ctx->be_state;
    cudaEvent_t e = NULL;
    if (!st || cudaSetDevice(st->dev) != cudaSuccess || cudaEventCreate(&e) != cudaSuccess)
        return -1;
    if (cudaEventRecord(e, st->stream) != cudaSuccess) {
        cudaEventDestroy(e);
        return -1;
    }
    *tok = e;
    return 0;
}

static int cuda_mark_seconds(gcsh_ctx *ctx, void *a, void *b, double *seconds)
{
    cuda_state *st = ctx->be_state;
    if (!st || cudaSetDevice(st->dev) != cudaSuccess)
        return -1;
    if (cudaEventQuery((cudaEvent_t)b) == cudaErrorNotReady)
        return 1;
    float ms = 0;
    cudaError_t e = cudaEventElapsedTime(&ms, (cudaEvent_t)a, (cudaEvent_t)b);
    if (e == cudaErrorNotReady)
        return 1;
    if (e != cudaSuccess)
        return -1;
    *seconds = ms * 1e-3;
    return 0;
}

static void cuda_mark_free(gcsh_ctx *ctx, void *tok)
{
    (void)ctx;
    cudaEventDestroy((cudaEvent_t)tok);
}

const gcsh_mem_ops gcsh_cuda_mem_ops = {
    .alloc = cuda_alloc,
    .release = cuda_release,
    .copy = cuda_copy,
    .fill = cuda_fill,
    .arange = cuda_arange,
    .rand = cuda_rand,
    .sync = cuda_sync,
    .timer_begin = cuda_timer_begin,
    .timer_end = cuda_timer_end,
    .mark = cuda_mark,
    .mark_seconds = cuda_mark_seconds,
    .mark_free = cuda_mark_free,
};
