/* Error reporting, device entry, interruptible stream waits, dtype mapping. */
#include <sched.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <strings.h>
#include <time.h>

#include "cuda/cuda.h"

/* Errors after which the CUDA context is unusable: every later call fails,
 * so the process cannot recover (collcheck.h: every rank exits). */
static int sticky(cudaError_t e)
{
    switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
        return 1;
    default:
        return 0;
    }
}

int cuda_error(gcsh_ctx *ctx, const char *file, int line, const char *call, cudaError_t e)
{
    if (sticky(e))
        ctx->fatal = 1;
    else
        cudaGetLastError(); /* not sticky: clear it, the next call starts clean */
    return gcsh_set_error(ctx, "%s:%d: %s: %s (%s)", file, line, call, cudaGetErrorString(e),
                          cudaGetErrorName(e));
}

int nccl_error(gcsh_ctx *ctx, ncclComm_t comm, const char *file, int line, const char *call,
               ncclResult_t r)
{
    const char *last = ncclGetLastError(comm);
    return gcsh_set_error(ctx, "%s:%d: %s: NCCL error: %s%s%s", file, line, call,
                          ncclGetErrorString(r), last && *last ? ": " : "", last ? last : "");
}

int gcsh_cuda_lazy_loading(void)
{
    const char *mode = getenv("CUDA_MODULE_LOADING");
    return mode && strcasecmp(mode, "EAGER") != 0;
}

cuda_state *cuda_enter(gcsh_ctx *ctx)
{
    cuda_state *st = cuda_enter_clean(ctx);
    if (st)
        st->stream_dirty = 1;
    return st;
}

cuda_state *cuda_enter_clean(gcsh_ctx *ctx)
{
    cuda_state *st = cuda_enter_device(ctx);
    if (st && st->enter_owed && st->enter_owed(ctx, st) != 0)
        return NULL;
    return st;
}

cuda_state *cuda_enter_device(gcsh_ctx *ctx)
{
    cuda_state *st = ctx->be_state;
    if (!st) {
        gcsh_set_error(ctx, "cuda backend is not initialised");
        return NULL;
    }
    /* every entry point comes here: cudaGetDevice reads a thread-local,
     * cheaper than setting the device again on every collective */
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess || current != st->dev)
        CUDA_TRY(ctx, cudaSetDevice(st->dev));
    return st;
fail:
    return NULL;
}

/* Stops c's residents and aborts its NCCL communicators (the non-blocking
 * one unless it was aborted already). */
static void abort_one(gcsh_comm_impl *c, int comm_too)
{
    if (c->aborted)
        return;
    c->aborted = 1;
    if (c->on_abort)
        c->on_abort(c);
    if (c->coll)
        ncclCommAbort(c->coll);
    if (comm_too)
        ncclCommAbort(c->comm);
}

/* Communicators that share NCCL's resources share its abort flag: once one
 * is aborted, every call on the others fails, so they are aborted too (and
 * say so, rather than fail later with an error that names none of this).
 * The newest first: a split goes before the communicator it shares. */
static void abort_family(gcsh_comm_impl *c)
{
    if (!c->family)
        return;
    for (gcsh_comm_impl *m = c->family->tail; m; m = m->fam_prev)
        abort_one(m, 1);
}

void cuda_comm_lost(gcsh_comm_impl *c)
{
    if (c->aborted)
        return;
    abort_one(c, 0);
    abort_family(c);
}

void cuda_abort_comm(gcsh_comm_impl *c)
{
    if (c->aborted)
        return;
    if (c->family)
        abort_family(c); /* c among them, in their order */
    else
        abort_one(c, 1);
}

/* Polls c's asynchronous state: 1 while its last call is still being issued
 * (the non-blocking communicator), 0 when done, -1 with ctx->err (and c
 * aborted) on an error of either communicator. */
static int comm_pending(gcsh_ctx *ctx, gcsh_comm_impl *c)
{
    if (!c || c->aborted)
        return 0;
    ncclResult_t async = ncclSuccess, coll = ncclSuccess;
    ncclCommGetAsyncError(c->comm, &async);
    if (c->coll)
        ncclCommGetAsyncError(c->coll, &coll);
    if (async == ncclSuccess && coll != ncclSuccess)
        async = coll;
    if (async == ncclInProgress)
        return 1;
    if (async == ncclSuccess)
        return 0;
    nccl_error(ctx, c->comm, __FILE__, __LINE__, "collective", async);
    cuda_abort_comm(c);
    /* a kernel fault shows as an NCCL error: the stream says which */
    cudaError_t e = cudaStreamQuery(ctx->be_state ? ((cuda_state *)ctx->be_state)->stream : 0);
    if (sticky(e))
        cuda_error(ctx, __FILE__, __LINE__, "collective", e);
    return -1;
}

/* ---- communicators with work in flight ----------------------------------------- */

void cuda_forget_busy(cuda_state *st, gcsh_comm_impl *c)
{
    for (int i = 0; c->busy && i < st->nbusy; i++)
        if (st->busy[i] == c) {
            st->busy[i] = st->busy[--st->nbusy];
            break;
        }
    c->busy = 0;
}

static void clear_busy(cuda_state *st)
{
    for (int i = 0; i < st->nbusy; i++)
        st->busy[i]->busy = 0;
    st->nbusy = 0;
    st->enqueued = 0;
}

/* 0, or -1 with ctx->err after an asynchronous error of a busy communicator. */
static int busy_pending(gcsh_ctx *ctx, cuda_state *st)
{
    for (int i = 0; i < st->nbusy; i++)
        if (comm_pending(ctx, st->busy[i]) < 0)
            return -1;
    return 0;
}

/* An interrupt during a wait: a collective whose peer never comes keeps the
 * stream forever, and only aborting its communicator stops it.  Returns
 * how many were aborted. */
static int abort_busy(cuda_state *st, gcsh_comm_impl *c)
{
    int n = 0;
    if (c && !c->aborted) {
        cuda_abort_comm(c);
        n++;
    }
    for (int i = 0; i < st->nbusy; i++)
        if (!st->busy[i]->aborted) {
            cuda_abort_comm(st->busy[i]);
            n++;
        }
    clear_busy(st);
    return n;
}

void cuda_cancel_waits(cuda_state *st)
{
    unsigned next = st->wctl->cancel_gen + 1;
    st->wctl->cancel_gen = next == GCSH_WAIT_GEN_CAPTURED ? next + 1 : next;
}

unsigned cuda_wait_gen(const gcsh_ctx *ctx, const cuda_state *st)
{
    return ctx->graph ? GCSH_WAIT_GEN_CAPTURED : st->wctl->cancel_gen;
}

static const char *cmp_name(int cmp)
{
    static const char *name[] = {">=", ">", "==", "~=", "<=", "<"};
    return cmp >= 0 && cmp < 6 ? name[cmp] : "?";
}

/* A signal wait that timed out let the stream go on without its condition:
 * what ran after it may have read data too early.  Report it once, on the
 * first wait for the stream that follows.  (Waits cancelled by an interrupt
 * are not reported again: the interrupted call already failed.) */
static int report_gave_up(gcsh_ctx *ctx, cuda_state *st)
{
    const gcsh_wait_ctl *w = st->wctl;
    unsigned n = w->gave_up;
    if (n == st->wctl_seen)
        return 0;
    st->wctl_seen = n;
    if (w->why != GCSH_WAIT_TIMED_OUT)
        return 0;
    return gcsh_set_error(ctx, "a GPU signal wait (word %s %llu) gave up after "
                               "GCSH_GPU_WAIT_TIMEOUT with the word at %llu; the stream went "
                               "on without it",
                          cmp_name(w->cmp), w->want, w->seen);
}

/* Polls query() until it is no longer cudaErrorNotReady (an interrupt or an
 * asynchronous NCCL error ends it sooner: cuda_wait says how). */
static int wait_until(gcsh_ctx *ctx, cuda_state *st, gcsh_comm_impl *c,
                      cudaError_t (*query)(void *), void *arg, const char *call)
{
    for (unsigned polls = 0;; polls++) {
        int pending = comm_pending(ctx, c);
        if (pending < 0 || busy_pending(ctx, st) < 0)
            return -1;
        if (!pending) {
            cudaError_t e = query(arg);
            if (e == cudaSuccess)
                return 0;
            if (e != cudaErrorNotReady)
                return cuda_error(ctx, __FILE__, __LINE__, call, e);
        }
        if (atomic_load(&ctx->interrupt)) {
            cuda_cancel_waits(st); /* a pending signal wait must not outlive the chunk */
            if (abort_busy(st, c) > 0)
                return gcsh_set_error(ctx, "interrupted while waiting for a collective; "
                                           "communicator aborted, create a new one");
            return gcsh_set_error(ctx, "interrupted while waiting for the GPU stream");
        }
        gcsh_gpu_poll_pause(polls);
    }
}

static cudaError_t stream_query(void *s)
{
    return cudaStreamQuery((cudaStream_t)s);
}

static cudaError_t event_query(void *e)
{
    return cudaEventQuery((cudaEvent_t)e);
}

int cuda_wait(gcsh_ctx *ctx, cuda_state *st, gcsh_comm_impl *c)
{
    if (wait_until(ctx, st, c, stream_query, st->stream, "cudaStreamQuery") != 0)
        return -1;
    clear_busy(st); /* everything enqueued so far is done */
    st->stream_dirty = 0;
    return report_gave_up(ctx, st);
}

int cuda_mark_busy(gcsh_ctx *ctx, cuda_state *st, gcsh_comm_impl *c)
{
    if (ctx->graph || !c || c->busy)
        return 0;
    if (st->nbusy == st->cap_busy) {
        int cap = st->cap_busy ? 2 * st->cap_busy : 8;
        gcsh_comm_impl **p = realloc(st->busy, (size_t)cap * sizeof *p);
        if (!p)
            return cuda_wait(ctx, st, c); /* no room to remember it: wait instead */
        st->busy = p;
        st->cap_busy = cap;
    }
    st->busy[st->nbusy++] = c;
    c->busy = 1;
    return 0;
}

int cuda_enqueued(gcsh_ctx *ctx, cuda_state *st, gcsh_comm_impl *c)
{
    if (ctx->graph)
        return 0;
    if (cuda_mark_busy(ctx, st, c) != 0)
        return -1;
    if (++st->enqueued % CUDA_THROTTLE_EVERY != 0)
        return 0;
    int slot = (int)(st->enqueued / CUDA_THROTTLE_EVERY) % CUDA_THROTTLE_MARKS;
    if (!st->throttle[slot])
        CUDA_TRY(ctx, cudaEventCreateWithFlags(&st->throttle[slot], cudaEventDisableTiming));
    else if (st->throttle_set[slot] &&
             wait_until(ctx, st, NULL, event_query, st->throttle[slot], "cudaEventQuery") != 0)
        return -1;
    CUDA_TRY(ctx, cudaEventRecord(st->throttle[slot], st->stream));
    st->throttle_set[slot] = 1;
    return 0;
fail:
    return -1;
}

int cuda_nccl_settle(gcsh_ctx *ctx, ncclComm_t comm, const char *what)
{
    for (unsigned polls = 0;; polls++) {
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(comm, &async);
        if (async == ncclSuccess)
            return 0;
        if (async != ncclInProgress) {
            nccl_error(ctx, comm, __FILE__, __LINE__, what, async);
            ncclCommAbort(comm);
            return -1;
        }
        if (atomic_load(&ctx->interrupt)) {
            ncclCommAbort(comm);
            return gcsh_set_error(ctx, "%s: interrupted; the new communicator is aborted", what);
        }
        gcsh_gpu_poll_pause(polls);
    }
}

ncclDataType_t cuda_nccl_type(gcsh_dtype dt)
{
    static const ncclDataType_t type[GCSH_NDTYPES] = {
        [GCSH_F64] = ncclFloat64, [GCSH_F32] = ncclFloat32, [GCSH_F16] = ncclFloat16,
        [GCSH_BF16] = ncclBfloat16, [GCSH_I64] = ncclInt64, [GCSH_I32] = ncclInt32,
        [GCSH_U32] = ncclUint32,  [GCSH_U8] = ncclUint8,  [GCSH_I8] = ncclInt8,
    };
    return type[dt];
}
