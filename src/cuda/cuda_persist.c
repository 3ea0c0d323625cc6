/* The cuda backend's persistent all-reduce (kernel.persistent): one resident
 * kernel per rank (kernels/persist.cu) on a non-blocking stream of its own,
 * rung through a doorbell in mapped host memory (core/kpersist.h).
 *
 * Stream order, both ways:
 *   - a ring must run after the work the rank queued before it: the host
 *     fills the call's ring entry but its last pair (core/kpersist.h: the
 *     resident takes an entry once all its pairs carry the call's tag);
 *     when the rank's stream is idle (nothing went onto it since it was
 *     last seen idle, or cudaStreamQuery says so: stream_dirty), the host
 *     stores that pair itself (the fast path: a store to host memory),
 *     otherwise the stream stores it (cuStreamWriteValue64), after that
 *     work;
 *   - work queued after a ring must run after its call: the ring only
 *     notes that the stream owes a wait (st->enter_owed, a hook), and the
 *     next entry of the backend that may queue work (cuda_enter) first makes the
 *     stream wait for the completion word (cuStreamWaitValue64, >= the
 *     calls rung).  So rings back to back cost no stream operation at all,
 *     and a host read (a copy on the stream, then a wait) sees the result.
 *
 * Never stuck.  The kernel's waits for peers are bounded and cancelled like
 * every GPU wait (kwait.cuh); the host's waits here poll ctx->interrupt.
 * An interrupt of such a wait stops the resident (stop word, and the
 * cancel generation bumped, which ends a wait in flight), and aborts its
 * communicator, which the checks pass on to every rank; an abort stops the
 * residents on that communicator (comm_aborted, its on_abort hook).  An ended
 * kernel sets GCSH_PERSIST_ENDED in its completion word, which releases
 * every wait for it, on the host and on the stream.
 *
 * Rings from graphs: a p:allreduce() captured by gcsh.graph takes a graph
 * slot of the resident (core/kpersist.h); rings back to back form numbered
 * sequences of up to GCSH_PERSIST_SEQ_CALLS, each captured as one small
 * kernel that numbers it and sets its slots' pending bits (the last slot's
 * last); the graph waits for the resident (until it cleared a sequence's
 * last slot, or ended) only before it reuses slots that sequences in flight
 * hold (the oldest first, until one is free) and once for the newest before
 * whatever it does next and at its end: a replay launches no collective
 * kernel, and the rank's later work follows the calls because the graph
 * waits for them.
 *
 * Nothing is allocated or freed while a resident runs.  cudaFree and
 * cudaFreeHost, and by the programming guide's rule on implicit
 * synchronisation also cudaMalloc and cudaHostAlloc, may wait until every
 * kernel of the device ended, and a resident ends only when told: such a
 * call would never return.  So the doorbells and sync words of all the
 * rank's residents, and a stream and an event per slot, are made once, at
 * the first start (when none runs), and a resident takes a slot of them
 * (take_bell) and gives it back once its kernel is gone (give_back_bell).  Loading a kernel may wait the same
 * way, so every kernel is loaded when CUDA starts (cuda_backend.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda/cuda.h"
#include "reducekern.h"

_Static_assert(GCSH_PERSIST_BELL_ALIGNED, "every bell's ring on a 16-byte boundary");
_Static_assert(GCSH_PERSIST_GRAPH_SLOTS <= 64, "a sequence's slots are the bits of a uint64_t");

struct gcsh_persist_impl {
    cuda_state *st;
    int slot;                       /* its doorbell: st->bells[slot]; -1: none (given back) */
    gcsh_persist_bell *bell;        /* mapped host memory */
    gcsh_persist_bell *bell_dev;    /* its device address */
    void *sync;                     /* GCSH_PERSIST_SYNC_BYTES of device memory */
    uint64_t last_done, last_why;   /* the doorbell's words when it was given back */
    uint64_t last_graph_done;
    cudaStream_t stream;            /* the resident's */
    gcsh_comm_impl *comm;
    uint64_t rung;
    int live;                       /* launched, and not seen gone yet */
    int stop_asked;
    int owed;                       /* rung since the rank's stream last waited */
    gcsh_persist_job graph_job[GCSH_PERSIST_GRAPH_SLOTS]; /* the calls its graphs ring */
    int graph_slots;                /* slots taken */
    int nor_ok;                     /* its GPU has NOR stream waits (asked once) */
    int graph_last;                 /* capturing: the last slot of the open sequence (-1:
                                     * none) */
    uint64_t graph_seq;             /* capturing: the open sequence's slots (bit s), rung
                                     * together when it ends */
    int graph_calls;                /* capturing: calls in the open sequence */
    uint64_t graph_ended[GCSH_PERSIST_GRAPH_SLOTS]; /* capturing: the slots of sequences
                                     * rung and not waited for yet, oldest first (each
                                     * holds a slot: at most one a slot) */
    int graph_nended;
    char stop_why[200];
    gcsh_persist_impl *next;        /* st->resident */
    gcsh_persist_impl *comm_next;   /* comm->resident */
};

static uint64_t done_word(gcsh_persist_impl *p)
{
    return p->slot >= 0 ? __atomic_load_n(&p->bell->done, __ATOMIC_ACQUIRE) : p->last_done;
}

static uint64_t why_word(gcsh_persist_impl *p)
{
    return p->slot >= 0 ? __atomic_load_n(&p->bell->why, __ATOMIC_ACQUIRE) : p->last_why;
}

static CUdeviceptr dev_addr(gcsh_persist_impl *p, const uint64_t *host_field)
{
    return (CUdeviceptr)((const char *)p->bell_dev + ((const char *)host_field -
                                                      (const char *)p->bell));
}

/* ---- the doorbells ---------------------------------------------------------------- */

/* The rank's doorbells and sync words, at the first start (none runs yet,
 * so the allocations cannot wait for one). */
static void free_slot_streams(cuda_state *st)
{
    for (int i = 0; i < GCSH_PERSIST_MAX_RUNNING; i++) {
        if (st->bell_stream[i])
            cudaStreamDestroy(st->bell_stream[i]);
        if (st->bell_event[i])
            cudaEventDestroy(st->bell_event[i]);
        st->bell_stream[i] = NULL;
        st->bell_event[i] = NULL;
    }
}

static int alloc_bells(gcsh_ctx *ctx, cuda_state *st)
{
    gcsh_persist_bell *bells = NULL, *bells_dev = NULL;
    char *sync = NULL;
    CUDA_TRY(ctx, cudaHostAlloc((void **)&bells, GCSH_PERSIST_MAX_RUNNING * sizeof *bells,
                                cudaHostAllocMapped));
    CUDA_TRY(ctx, cudaHostGetDevicePointer((void **)&bells_dev, bells, 0));
    CUDA_TRY(ctx, cudaMalloc((void **)&sync, GCSH_PERSIST_MAX_RUNNING * GCSH_PERSIST_SYNC_BYTES));
    for (int i = 0; i < GCSH_PERSIST_MAX_RUNNING; i++) {
        CUDA_TRY(ctx, cudaStreamCreateWithFlags(&st->bell_stream[i], cudaStreamNonBlocking));
        CUDA_TRY(ctx, cudaEventCreateWithFlags(&st->bell_event[i], cudaEventDisableTiming));
    }
    st->bells = bells;
    st->bells_dev = bells_dev;
    st->bell_sync = sync;
    return 0;
fail:
    free_slot_streams(st);
    if (sync)
        cudaFree(sync);
    if (bells)
        cudaFreeHost(bells);
    return -1;
}

/* A free slot for p, its doorbell zeroed (its sync words are zeroed on the
 * resident's stream, before the launch). */
static int take_bell(gcsh_ctx *ctx, cuda_state *st, gcsh_persist_impl *p)
{
    if (!st->bells && alloc_bells(ctx, st) != 0)
        return -1;
    int slot = 0;
    while (slot < GCSH_PERSIST_MAX_RUNNING && (st->bells_taken >> slot & 1u))
        slot++;
    if (slot == GCSH_PERSIST_MAX_RUNNING)
        return gcsh_persist_error_full(ctx);
    st->bells_taken |= 1u << slot;
    p->slot = slot;
    p->bell = &st->bells[slot];
    p->bell_dev = &st->bells_dev[slot];
    p->sync = st->bell_sync + (size_t)slot * GCSH_PERSIST_SYNC_BYTES;
    p->stream = st->bell_stream[slot];
    memset(p->bell, 0, sizeof *p->bell);
    return 0;
}

/* p's kernel is gone (or never started): its slot is free again, and p
 * keeps the words its state still reads. */
static void give_back_bell(gcsh_persist_impl *p)
{
    if (p->slot < 0)
        return;
    p->last_done = done_word(p);
    p->last_why = why_word(p);
    p->last_graph_done = __atomic_load_n(&p->bell->graph_done, __ATOMIC_ACQUIRE);
    p->st->bells_taken &= ~(1u << p->slot);
    p->slot = -1;
    p->bell = p->bell_dev = NULL;
    p->sync = NULL;
    p->stream = NULL; /* the slot's: the next resident there uses it */
}

void cuda_persist_free_bells(cuda_state *st)
{
    if (!st->bells || st->bells_taken)
        return;
    free_slot_streams(st);
    cudaFreeHost(st->bells);
    cudaFree(st->bell_sync);
    st->bells = st->bells_dev = NULL;
    st->bell_sync = NULL;
}

/* ---- the lists ------------------------------------------------------------------ */

static void unlink_from(gcsh_persist_impl **head, gcsh_persist_impl *p, int by_comm)
{
    for (gcsh_persist_impl **q = head; *q; q = by_comm ? &(*q)->comm_next : &(*q)->next)
        if (*q == p) {
            *q = by_comm ? p->comm_next : p->next;
            return;
        }
}

/* Asks the kernel to end now: the stop word for its idle wait, a new
 * cancel generation for a wait in flight (every GPU wait of the rank ends:
 * this runs on interrupts, aborts and at the end).  Only while the kernel
 * still runs: a new generation also ends the waits of every other kernel
 * of the rank in flight, which then go on without their peers (seen on
 * H100s: a stopped resident's handle collected during the next window's
 * first one-shot let that one-shot pass its barriers alone, wrong sums). */
static void ask_stop(gcsh_persist_impl *p, const char *why, int cancel)
{
    int ended = (done_word(p) & GCSH_PERSIST_ENDED) != 0;
    if (!ended && !p->stop_why[0])
        snprintf(p->stop_why, sizeof p->stop_why, "%s", why);
    p->stop_asked = 1;
    if (p->slot >= 0)
        __atomic_store_n(&p->bell->stop, 1, __ATOMIC_RELEASE);
    if (cancel && p->live && !ended)
        cuda_cancel_waits(p->st);
}

/* c is being aborted (its on_abort): its residents stop, without waiting. */
static void comm_aborted(gcsh_comm_impl *c)
{
    for (gcsh_persist_impl *p = c->resident; p; p = p->comm_next)
        ask_stop(p, "its communicator was aborted (an interrupt, .abort, or a failed collective "
                    "on some rank)", 1);
}

/* Waits until the kernel is gone (its stream idle), polling the interrupt
 * only to stop waiting: an ended kernel goes at once, and one that did not
 * see the stop ends within its wait bound. */
static void wait_gone(gcsh_ctx *ctx, gcsh_persist_impl *p)
{
    if (!p->live)
        return;
    for (unsigned polls = 0; cudaStreamQuery(p->stream) == cudaErrorNotReady; polls++) {
        if (atomic_load(&ctx->interrupt))
            return; /* leave it; the stream is released with the handle */
        gcsh_gpu_poll_pause(polls);
    }
    p->live = 0;
    unlink_from(&p->st->resident, p, 0);
    give_back_bell(p);
}

static const char *end_reason(gcsh_persist_impl *p)
{
    switch (why_word(p)) {
    case GCSH_PERSIST_TIMED_OUT:
        return "a wait for a peer ran past GCSH_GPU_WAIT_TIMEOUT";
    case GCSH_PERSIST_CANCELLED:
        return p->stop_why[0] ? p->stop_why : "a wait for a peer was cancelled (an interrupt)";
    default:
        return p->stop_why[0] ? p->stop_why : "stopped";
    }
}

/* ---- start ----------------------------------------------------------------------- */

/* p's host side.  A kernel that would not end keeps its doorbell slot (it
 * may still read it), and with it the slot's stream. */
static void free_impl(gcsh_persist_impl *p)
{
    if (!p->live)
        give_back_bell(p);
    free(p);
}

/* The resident's stream (its slot's) waits for what the rank's stream
 * holds now. */
static int order_stream(gcsh_ctx *ctx, cuda_state *st, gcsh_persist_impl *p)
{
    cudaEvent_t before = st->bell_event[p->slot];
    CUDA_TRY(ctx, cudaEventRecord(before, st->stream));
    CUDA_TRY(ctx, cudaStreamWaitEvent(p->stream, before, 0));
    return 0;
fail:
    return -1;
}

static int cuda_persist_start(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                              const gcsh_persist_args *a, gcsh_persist_impl **out)
{
    (void)w;
    cuda_state *st = cuda_enter_clean(ctx); /* an event on the stream, nothing to follow */
    if (!st || cuda_driver_load(ctx, st) != 0)
        return -1;
    if (gcsh_cuda_lazy_loading())
        return gcsh_set_error(ctx, "kernel.persistent: CUDA_MODULE_LOADING=%s: a kernel loaded "
                                   "while a resident runs waits for it to end, which it never "
                                   "does; unset it (gcsh loads every kernel at start)",
                              getenv("CUDA_MODULE_LOADING"));
    gcsh_persist_impl *p = calloc(1, sizeof *p);
    if (!p)
        return gcsh_set_error(ctx, "kernel.persistent: out of host memory");
    p->st = st;
    p->slot = -1;
    p->graph_last = -1;
    p->comm = a->comm;
    if (take_bell(ctx, st, p) != 0 || order_stream(ctx, st, p) != 0)
        goto fail;
    /* on the resident's own stream: a non-blocking stream does not wait
     * for the legacy default stream a plain cudaMemset would use */
    CUDA_TRY(ctx, cudaMemsetAsync(p->sync, 0, GCSH_PERSIST_SYNC_BYTES, p->stream));
    /* the go words' alive bits (byte 4 of each: bit 32), before the launch:
     * a graph's wait must not pass before the resident ever ran */
    CUDA_TRY(ctx, cudaMemset2DAsync((char *)p->sync + GCSH_PERSIST_GO_OFFSET + 4, 8, 1, 1,
                                    GCSH_PERSIST_GRAPH_SLOTS, p->stream));
    gcsh_kwait wait = {st->wctl, st->wctl->cancel_gen, st->wait_bound_ns, st->paired_max_blocks,
                       st->one_gpu};
    CUDA_TRY(ctx, gcsh_k_persist_launch(a, a->dt, d, p->bell_dev, p->sync, &wait, p->stream));
    p->live = 1;
    p->next = st->resident;
    st->resident = p;
    p->comm_next = a->comm->resident;
    a->comm->resident = p;
    a->comm->on_abort = comm_aborted;
    *out = p;
    return 0;
fail:
    free_impl(p);
    return -1;
}

/* ---- ring, wait ------------------------------------------------------------------ */

/* An interrupt ended a host wait for p: its calls in flight are abandoned. */
static int abandon(gcsh_ctx *ctx, gcsh_persist_impl *p)
{
    ask_stop(p, "interrupted while its calls were in flight", 1);
    cuda_abort_comm(p->comm);
    return gcsh_persist_error_interrupted(ctx);
}

/* Until done reaches want (or the kernel ended): 0, or -1 (interrupt). */
static int wait_done(gcsh_ctx *ctx, gcsh_persist_impl *p, uint64_t want)
{
    for (unsigned polls = 0; done_word(p) < want; polls++) {
        if (atomic_load(&ctx->interrupt))
            return abandon(ctx, p);
        gcsh_gpu_poll_pause(polls);
    }
    return 0;
}

static int ended_error(gcsh_ctx *ctx, gcsh_persist_impl *p, uint64_t completed)
{
    return gcsh_persist_error_ended(ctx, completed, p->rung, end_reason(p));
}

/* Rings: stores the last pair of entry e (value), from the host when the
 * rank's stream is idle, else by the stream, after what it holds.  The
 * stream is asked only when work may have gone onto it since it was last
 * seen idle: rings back to back make no CUDA call at all (a query cost
 * about 1.4 us a ring on an H100), and neither does a ring that compute-
 * sanitizer watches (its API callbacks wait for the device, which a
 * resident never leaves idle). */
static int publish(gcsh_ctx *ctx, cuda_state *st, gcsh_persist_impl *p, uint64_t *last,
                   uint64_t value)
{
    cudaError_t q = st->stream_dirty ? cudaStreamQuery(st->stream) : cudaSuccess;
    if (q == cudaSuccess) {
        st->stream_dirty = 0;
        __atomic_store_n(last, value, __ATOMIC_RELEASE);
        return 0;
    }
    if (q != cudaErrorNotReady)
        CUDA_TRY(ctx, q);
    CU_TRY(ctx, st, StreamWriteValue64((CUstream)st->stream, dev_addr(p, last), value,
                                       CU_STREAM_WRITE_VALUE_DEFAULT));
    return 0;
fail:
    return -1;
}

static int order_after_rings(gcsh_ctx *ctx, cuda_state *st);

/* Capturing: the slots of p's sequences rung and not waited for (bit s). */
static uint64_t graph_in_flight(const gcsh_persist_impl *p)
{
    uint64_t busy = 0;
    for (int i = 0; i < p->graph_nended; i++)
        busy |= p->graph_ended[i];
    return busy;
}

/* A graph slot for job j above slot `after` (a sequence goes up the slots,
 * the order the resident runs them in) that no sequence in flight holds:
 * the lowest that holds j, or a new one; -1 when there is none. */
static int graph_slot(gcsh_persist_impl *p, const gcsh_persist_job *j, int after)
{
    uint64_t busy = graph_in_flight(p);
    int seen = 0; /* a slot holds j, but not one this sequence may take */
    for (int s = 0; s < p->graph_slots; s++)
        if (memcmp(&p->graph_job[s], j, sizeof *j) == 0) {
            if (s > after && !(busy >> s & 1u))
                return s;
            seen = 1;
        }
    /* a call seen again takes a new slot while more than half are free:
     * room for two sequences of repeats (GCSH_PERSIST_SEQ_CALLS each), one
     * rung while the resident runs the other, and never the slots that
     * other calls need; past that the sequence waits for its own */
    if (p->graph_slots == GCSH_PERSIST_GRAPH_SLOTS ||
        (seen && GCSH_PERSIST_GRAPH_SLOTS - p->graph_slots <= GCSH_PERSIST_GRAPH_SLOTS / 2))
        return -1;
    int s = p->graph_slots++;
    p->graph_job[s] = *j;
    /* before any replay can ring it; the resident reads it once, then keeps it */
    memcpy(&p->bell->graph_job[s], j, sizeof *j);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    return s;
}

/* Whether the device's stream waits can test "bit clear" (the NOR wait);
 * asked once a resident. */
static int nor_waits(gcsh_ctx *ctx, cuda_state *st, gcsh_persist_impl *p)
{
    if (p->nor_ok)
        return 0;
    int nor = 0;
    if (cuda_device_attribute(st->dev, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, &nor) !=
            0 ||
        !nor)
        return gcsh_set_error(ctx, "p:allreduce() in a graph: this GPU's stream waits cannot "
                                   "test a bit (CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR"
                                   " is 0); ring it outside the capture");
    p->nor_ok = 1;
    return 0;
}

static CUdeviceptr go_addr(const gcsh_persist_impl *p, int s)
{
    return (CUdeviceptr)((char *)p->sync + GCSH_PERSIST_GO_OFFSET + 8 * (size_t)s);
}

/* Capturing: a failed node leaves the graph without its rings: its end
 * must not succeed without them. */
static int capture_lost(gcsh_ctx *ctx, cuda_state *st)
{
    if (!st->capture_lost[0])
        snprintf(st->capture_lost, sizeof st->capture_lost, "%.200s", ctx->err);
    return -1;
}

/* Capturing: the graph waits until the resident cleared slot s's pending
 * bit (it clears a sequence's slots once it ran them, the last one last,
 * and runs the sequences in order; or it ended). */
static int capture_wait_slot(gcsh_ctx *ctx, cuda_state *st, gcsh_persist_impl *p, int s)
{
    CU_TRY(ctx, st, StreamWaitValue64((CUstream)st->stream, go_addr(p, s),
                                      ~(GCSH_PERSIST_GO_PENDING | GCSH_PERSIST_GO_ALIVE),
                                      CU_STREAM_WAIT_VALUE_NOR));
    return 0;
fail:
    return capture_lost(ctx, st);
}

static int highest_slot(uint64_t slots)
{
    return 63 - __builtin_clzll(slots);
}

/* Capturing: p's open sequence is rung: one kernel numbers it and writes
 * its slots' pending bits, the last slot's last (a memory-operation node a
 * call cost about as much as the call).  Nothing waits for it yet: it is
 * in flight, and the next sequence is written while the resident runs it. */
static int capture_ring_sequence(gcsh_ctx *ctx, cuda_state *st, gcsh_persist_impl *p)
{
    uint64_t slots = p->graph_seq;
    if (p->graph_last < 0)
        return 0;
    p->graph_last = -1;
    p->graph_seq = 0;
    p->graph_calls = 0;
    CUDA_TRY(ctx, gcsh_k_persist_go(p->sync, slots, st->stream));
    p->graph_ended[p->graph_nended++] = slots;
    return 0;
fail:
    return capture_lost(ctx, st);
}

/* Capturing: the graph waits for p's oldest sequence in flight, whose
 * slots the next sequence may then take. */
static int capture_wait_oldest(gcsh_ctx *ctx, cuda_state *st, gcsh_persist_impl *p)
{
    uint64_t oldest = p->graph_ended[0];
    p->graph_nended--;
    memmove(p->graph_ended, p->graph_ended + 1, (size_t)p->graph_nended * sizeof oldest);
    return capture_wait_slot(ctx, st, p, highest_slot(oldest));
}

/* Capturing: what p's rings owe before whatever the graph does next: the
 * open sequence rung, then one wait, for the newest sequence (every one
 * before it ran first). */
static int capture_graph_wait(gcsh_ctx *ctx, cuda_state *st, gcsh_persist_impl *p)
{
    if (capture_ring_sequence(ctx, st, p) != 0)
        return -1;
    if (p->graph_nended == 0)
        return 0;
    uint64_t newest = p->graph_ended[p->graph_nended - 1];
    p->graph_nended = 0;
    return capture_wait_slot(ctx, st, p, highest_slot(newest));
}

/* Capturing: the waits owed for every resident's rings but p's (NULL: all). */
static int capture_graph_waits(gcsh_ctx *ctx, cuda_state *st, const gcsh_persist_impl *p)
{
    for (gcsh_persist_impl *q = st->resident; q; q = q->next)
        if (q != p && (q->graph_last >= 0 || q->graph_nended > 0) &&
            capture_graph_wait(ctx, st, q) != 0)
            return -1;
    return 0;
}

/* While the rank's stream captures: the ring takes a slot in p's open
 * sequence; a full sequence, or one with no slot above for this call, is
 * rung and the next starts (waiting first for the oldest in flight while
 * they hold every slot this call could take); the open sequence's writes
 * and the wait for the newest are owed (st->enter_owed), so rings back to
 * back in a graph cost a kernel node a sequence and one wait, which
 * whatever the graph does next (another resident's ring, a kernel, a copy,
 * its end) captures first. */
static int ring_from_graph(gcsh_ctx *ctx, cuda_state *st, gcsh_persist_impl *p,
                           const gcsh_persist_job *j)
{
    if (nor_waits(ctx, st, p) != 0 || capture_graph_waits(ctx, st, p) != 0)
        return -1;
    int s = p->graph_calls < GCSH_PERSIST_SEQ_CALLS ? graph_slot(p, j, p->graph_last) : -1;
    if (s < 0) { /* the sequence ends here */
        if (capture_ring_sequence(ctx, st, p) != 0)
            return -1;
        s = graph_slot(p, j, -1);
    }
    while (s < 0 && p->graph_nended > 0) {
        if (capture_wait_oldest(ctx, st, p) != 0)
            return -1;
        s = graph_slot(p, j, -1);
    }
    if (s < 0)
        return gcsh_set_error(ctx, "p:allreduce() in a graph: its %d graph slots are taken (a "
                                   "slot for each different call (region, n, op) captured "
                                   "since it started, and for repeats of a call while "
                                   "more than half are free; kept while it runs, also for graphs "
                                   "freed since); capture calls it has a slot for, or stop "
                                   "it and start another", GCSH_PERSIST_GRAPH_SLOTS);
    p->graph_seq |= (uint64_t)1 << s;
    p->graph_last = s;
    p->graph_calls++;
    st->enter_owed = order_after_rings;
    return 0;
}

int cuda_persist_capture_flush(gcsh_ctx *ctx, cuda_state *st)
{
    return capture_graph_waits(ctx, st, NULL);
}

void cuda_persist_capture_over(cuda_state *st)
{
    for (gcsh_persist_impl *p = st->resident; p; p = p->next)
        p->graph_last = -1, p->graph_seq = 0, p->graph_calls = 0, p->graph_nended = 0;
}

static int cuda_persist_ring(gcsh_ctx *ctx, gcsh_persist_impl *p, const gcsh_persist_call *c)
{
    cuda_state *st = cuda_enter_device(ctx);
    if (!st)
        return -1;
    if (ctx->graph) {
        if ((done_word(p) & GCSH_PERSIST_ENDED) || p->slot < 0)
            return ended_error(ctx, p, done_word(p) & ~GCSH_PERSIST_ENDED);
        gcsh_persist_job j = {c->offset, c->n, (int32_t)c->dt, (int32_t)c->op};
        return ring_from_graph(ctx, st, p, &j);
    }
    uint64_t r = p->rung;
    if (r >= GCSH_PERSIST_DEPTH && wait_done(ctx, p, r - GCSH_PERSIST_DEPTH + 1) != 0)
        return -1;
    uint64_t done = done_word(p);
    if ((done & GCSH_PERSIST_ENDED) || p->slot < 0)
        return ended_error(ctx, p, done & ~GCSH_PERSIST_ENDED);
    /* n fits the entry's 32 bits: a call carries at most max_bytes, <= 64 KiB */
    gcsh_persist_job j = {c->offset, c->n, (int32_t)c->dt, (int32_t)c->op};
    gcsh_persist_entry *e = &p->bell->ring[r % GCSH_PERSIST_DEPTH];
    gcsh_persist_fill(e, r, &j, 3);
    if (publish(ctx, st, p, &e->pair[3], gcsh_persist_pair(&j, r, 3)) != 0)
        return -1;
    p->rung = r + 1;
    p->owed = 1;
    st->enter_owed = order_after_rings;
    /* its communicator has work in flight: an interrupted wait for the
     * stream aborts it (cuda_wait), which stops the resident everywhere */
    return cuda_mark_busy(ctx, st, p->comm);
}

/* The entry's hook after a ring (st->enter_owed): makes the rank's stream
 * wait for every call rung so far (a stream wait on each resident's
 * completion word); 0, or -1 with ctx->err. */
static int order_after_rings(gcsh_ctx *ctx, cuda_state *st)
{
    if (ctx->graph) {
        /* capturing: the waits a graph owes for its rings; the waits for
         * host rings are the replay's, made when it is launched (a wait
         * captured for them would test this resident's count in every
         * replay, whoever holds the doorbell then) */
        if (capture_graph_waits(ctx, st, NULL) != 0)
            return -1;
        int owed = 0;
        for (gcsh_persist_impl *p = st->resident; p; p = p->next)
            owed |= p->owed;
        st->enter_owed = owed ? order_after_rings : NULL;
        return 0;
    }
    st->enter_owed = NULL;
    for (gcsh_persist_impl *p = st->resident; p; p = p->next) {
        if (!p->owed)
            continue;
        p->owed = 0;
        st->stream_dirty = 1; /* later rings follow this wait too */
        CU_TRY(ctx, st, StreamWaitValue64((CUstream)st->stream, dev_addr(p, &p->bell->done),
                                          p->rung, CU_STREAM_WAIT_VALUE_GEQ));
    }
    return 0;
fail:
    return -1;
}

/* The calls its graphs rang are queued on the rank's stream, where the host
 * does not count them: a wait for every call waits for that stream too. */
static int wait_graph_calls(gcsh_ctx *ctx, cuda_state *st, gcsh_persist_impl *p)
{
    return p->graph_slots && p->live ? cuda_wait(ctx, st, p->comm) : 0;
}

static int cuda_persist_wait(gcsh_ctx *ctx, gcsh_persist_impl *p)
{
    cuda_state *st = cuda_enter_device(ctx);
    if (!st || wait_graph_calls(ctx, st, p) != 0)
        return -1;
    if (p->live && wait_done(ctx, p, p->rung) != 0)
        return -1;
    uint64_t done = done_word(p);
    if ((done & GCSH_PERSIST_ENDED) && (done & ~GCSH_PERSIST_ENDED) < p->rung)
        return ended_error(ctx, p, done & ~GCSH_PERSIST_ENDED);
    return 0;
}

/* ---- state, stop, release ---------------------------------------------------------- */

static void cuda_persist_state(gcsh_persist_impl *p, gcsh_persist_state *out)
{
    uint64_t done = done_word(p);
    out->rung = p->rung;
    out->done = done & ~GCSH_PERSIST_ENDED;
    out->running = p->live && !(done & GCSH_PERSIST_ENDED) && !p->stop_asked;
    out->graph_done = p->slot >= 0 ? __atomic_load_n(&p->bell->graph_done, __ATOMIC_ACQUIRE)
                                   : p->last_graph_done;
    snprintf(out->why, sizeof out->why, "%s", out->running ? "" : end_reason(p));
}

static int cuda_persist_stop(gcsh_ctx *ctx, gcsh_persist_impl *p, int drain)
{
    int rc = drain ? cuda_persist_wait(ctx, p) : 0;
    if (!cuda_enter_device(ctx))
        return -1;
    const char *why = drain ? "stopped (p:stop())"
                           : "stopped without draining (an interrupt, or freed with calls in "
                             "flight)";
    ask_stop(p, why, !drain);
    wait_gone(ctx, p);
    return rc;
}

/* Whether the kernel ended within about `ms` milliseconds. */
static int gone_within(gcsh_persist_impl *p, double ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned polls = 0; cudaStreamQuery(p->stream) == cudaErrorNotReady; polls++) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1e3 + (t.tv_nsec - t0.tv_nsec) / 1e6 > ms)
            return 0;
        gcsh_gpu_poll_pause(polls);
    }
    return 1;
}

static void cuda_persist_release(gcsh_ctx *ctx, gcsh_persist_impl *p)
{
    cuda_state *st = cuda_enter_device(ctx);
    if (st) {
        /* a graph's calls still queued run first (a free is not an abort);
         * an interrupt or a failure there leaves them to the stop below */
        if (!atomic_load(&ctx->interrupt) && !ctx->graph) /* (no stream query in a capture) */
            (void)wait_graph_calls(ctx, st, p);
        /* the stop word first: an idle resident ends on it at once, and
         * other kernels' waits are left alone; a new cancel generation
         * only for one still inside a call */
        const char *why = "stopped (its handle was collected, or the session ended)";
        ask_stop(p, why, 0);
        if (p->live && !gone_within(p, 200))
            ask_stop(p, why, 1);
        wait_gone(ctx, p);
    }
    unlink_from(&p->st->resident, p, 0);
    unlink_from(&p->comm->resident, p, 1);
    free_impl(p);
}

const gcsh_persist_ops gcsh_cuda_persist_ops = {
    .start = cuda_persist_start,
    .ring = cuda_persist_ring,
    .wait = cuda_persist_wait,
    .drain = NULL, /* host reads are copies on the rank's stream: cuda_enter orders them */
    .state = cuda_persist_state,
    .stop = cuda_persist_stop,
    .release = cuda_persist_release,
};
