/* The host backend's persistent all-reduce (kernel.persistent): a progress
 * thread per rank plays the resident kernel.  It waits on its doorbell
 * (core/kpersist.h, in the rank's own memory: only this process rings it)
 * and runs each rung call with the host's "ll" all-reduce (host_ll.c) over
 * the window's MPI shared memory, exactly as a direct kernel.allreduce{algo=
 * "ll"} would, so the two share the LL area and its call count.
 *
 * The thread has a context of its own (tctx): its errors never touch the
 * rank's ctx->err, and its `interrupt` flag is the stop word, which every
 * host wait polls (host_wait.c): setting it ends the thread's idle wait and
 * any wait for a peer inside a call.  Its idle wait paces itself like every
 * host wait (spins, yields, then sleeps up to a millisecond), so a resident
 * that nobody rings costs little.
 *
 * Stream order.  The host backend has no stream, so the rank's resident
 * threads are its queue: every host operation that touches memory first
 * waits until they drained (host_order.c), and so do host reads of tensors
 * (the binding calls drain).  A wait that an interrupt ends abandons the
 * calls in flight: the thread is stopped and the window's communicator
 * marked aborted, which the collective checks pass on to every rank (their
 * residents stop when their communicator is aborted: host_comm.c runs the
 * state's on_comm_abort, which the first start registers). */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gcsh.h"
#include "core/kll.h"
#include "core/kpersist.h"
#include "host/host.h"

struct gcsh_persist_impl {
    gcsh_persist_bell bell;
    gcsh_ctx tctx;            /* the thread's: its interrupt is the stop word */
    gcsh_window_desc desc;    /* a copy, with arrays of its own */
    gcsh_kll_args ll;         /* the LL area's layout; the region comes per call */
    gcsh_comm_impl *comm;
    pthread_t thread;
    int live;                 /* the thread is not joined yet */
    uint64_t rung;            /* calls rung (bell.rung, as the host wrote it) */
    char stop_why[200];       /* why the host ended it (before the stop word) */
    gcsh_persist_impl *next;  /* the rank's running residents (gcsh_host_state) */
};

static _Atomic uint64_t *word(uint64_t *w)
{
    return (_Atomic uint64_t *)w;
}

static uint64_t done_word(gcsh_persist_impl *p)
{
    return atomic_load_explicit(word(&p->bell.done), memory_order_acquire);
}

/* ---- the progress thread -------------------------------------------------------- */

/* Call n (its entry is all there: the host filled it before rung). */
static int run_call(gcsh_persist_impl *p, uint64_t n)
{
    gcsh_persist_job j;
    if (!gcsh_persist_read(&p->bell.ring[n % GCSH_PERSIST_DEPTH], n, &j))
        return gcsh_set_error(&p->tctx, "persistent: call %llu's ring entry is not there",
                              (unsigned long long)n);
    gcsh_kll_args k = p->ll;
    k.offset = (size_t)j.offset;
    k.n = (size_t)j.n;
    k.dt = (gcsh_dtype)j.dt;
    k.op = (gcsh_redop)j.op;
    k.out = NULL;
    return gcsh_host_ll_allreduce(&p->tctx, NULL, &p->desc, &k);
}

static void *progress_main(void *arg)
{
    gcsh_persist_impl *p = arg;
    uint64_t n = 0;
    uint64_t why = GCSH_PERSIST_STOPPED;
    for (;;) {
        if (gcsh_host_wait_word(&p->tctx, word(&p->bell.rung), GCSH_CMP_GT, n, INFINITY,
                                "stopped") != 0)
            break; /* the stop word */
        if (run_call(p, n) != 0) {
            if (!atomic_load(&p->tctx.interrupt))
                why = GCSH_PERSIST_FAILED; /* tctx.err says why */
            break;
        }
        atomic_store_explicit(word(&p->bell.done), ++n, memory_order_release);
    }
    p->bell.why = why;
    atomic_store_explicit(word(&p->bell.done), n | GCSH_PERSIST_ENDED, memory_order_release);
    return NULL;
}

/* ---- the rank's residents -------------------------------------------------------- */

static gcsh_persist_impl **resident_list(gcsh_ctx *ctx)
{
    gcsh_host_state *st = ctx->be_state;
    return &st->resident;
}

static void unlink_resident(gcsh_ctx *ctx, gcsh_persist_impl *p)
{
    for (gcsh_persist_impl **q = resident_list(ctx); *q; q = &(*q)->next)
        if (*q == p) {
            *q = p->next;
            p->next = NULL;
            return;
        }
}

/* Ends the thread now (why: for p's state, unless it ended by itself
 * first) and joins it; idempotent. */
static void end_now(gcsh_ctx *ctx, gcsh_persist_impl *p, const char *why)
{
    if (!p->live)
        return;
    if (!(done_word(p) & GCSH_PERSIST_ENDED))
        snprintf(p->stop_why, sizeof p->stop_why, "%s", why);
    atomic_store_explicit(word(&p->bell.stop), 1, memory_order_release);
    atomic_store(&p->tctx.interrupt, GCSH_INTERRUPT);
    pthread_join(p->thread, NULL);
    p->live = 0;
    unlink_resident(ctx, p);
}

/* What ended p, once it ended (its error, or the host's reason). */
static const char *end_reason(const gcsh_persist_impl *p)
{
    if (p->bell.why == GCSH_PERSIST_FAILED)
        return p->tctx.err;
    return p->stop_why[0] ? p->stop_why : "stopped";
}

/* c was aborted on this rank (gcsh_host_state.on_comm_abort): its
 * residents stop. */
static void comm_aborted(gcsh_ctx *ctx, gcsh_comm_impl *c)
{
    if (!ctx->be_state)
        return;
    gcsh_persist_impl *p = *resident_list(ctx);
    while (p) {
        gcsh_persist_impl *next = p->next;
        if (p->comm == c)
            end_now(ctx, p, "its communicator was aborted (an interrupt, .abort, or a failed "
                            "collective on some rank)");
        p = next;
    }
}

/* ---- the ops --------------------------------------------------------------------- */

static int copy_desc(gcsh_window_desc *to, const gcsh_window_desc *d)
{
    *to = *d;
    to->team = malloc((size_t)d->team_size * sizeof *to->team);
    to->peer = malloc((size_t)d->team_size * sizeof *to->peer);
    if (!to->team || !to->peer)
        return -1;
    memcpy(to->team, d->team, (size_t)d->team_size * sizeof *to->team);
    memcpy(to->peer, d->peer, (size_t)d->team_size * sizeof *to->peer);
    return 0;
}

static void free_impl(gcsh_persist_impl *p)
{
    free(p->desc.team);
    free(p->desc.peer);
    free(p);
}

static int host_persist_start(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                              const gcsh_persist_args *a, gcsh_persist_impl **out)
{
    (void)w;
    if (gcsh_host_persist_drain(ctx) != 0) /* after the rank's earlier work */
        return -1;
    int running = 0;
    for (gcsh_persist_impl *q = *resident_list(ctx); q; q = q->next)
        running++;
    if (running >= GCSH_PERSIST_MAX_RUNNING)
        return gcsh_persist_error_full(ctx);
    gcsh_persist_impl *p = calloc(1, sizeof *p);
    if (!p || copy_desc(&p->desc, d) != 0) {
        if (p)
            free_impl(p);
        return gcsh_set_error(ctx, "kernel.persistent: out of host memory");
    }
    p->tctx.rank = ctx->rank;
    p->tctx.size = ctx->size;
    p->tctx.be = ctx->be;
    p->ll = (gcsh_kll_args){.ll_off = a->ll_off, .window_bytes = a->window_bytes,
                            .slots = a->slots};
    p->comm = a->comm;
    int e = pthread_create(&p->thread, NULL, progress_main, p);
    if (e != 0) {
        free_impl(p);
        return gcsh_set_error(ctx, "kernel.persistent: cannot start the progress thread: %s",
                              strerror(e));
    }
    p->live = 1;
    p->next = *resident_list(ctx);
    *resident_list(ctx) = p;
    ((gcsh_host_state *)ctx->be_state)->on_comm_abort = comm_aborted;
    *out = p;
    return 0;
}

/* An interrupt ended a wait of the host for p: its calls in flight are
 * abandoned, so p stops and its communicator is aborted (on every rank,
 * through the checks: collcheck.h). */
static int abandon(gcsh_ctx *ctx, gcsh_persist_impl *p)
{
    end_now(ctx, p, "interrupted while its calls were in flight");
    gcsh_host_comm_ops.abort(ctx, p->comm);
    return gcsh_persist_error_interrupted(ctx);
}

/* Waits until done reaches `want` or p ended: 0, or -1 (interrupt). */
static int wait_done(gcsh_ctx *ctx, gcsh_persist_impl *p, uint64_t want)
{
    if (gcsh_host_wait_word(ctx, word(&p->bell.done), GCSH_CMP_GE, want, INFINITY,
                            "interrupted") != 0)
        return abandon(ctx, p);
    return 0;
}

static int ended_error(gcsh_ctx *ctx, gcsh_persist_impl *p, uint64_t completed)
{
    end_now(ctx, p, "stopped");
    return gcsh_persist_error_ended(ctx, completed, p->rung, end_reason(p));
}

static int host_persist_ring(gcsh_ctx *ctx, gcsh_persist_impl *p, const gcsh_persist_call *c)
{
    uint64_t r = p->rung;
    if (r >= GCSH_PERSIST_DEPTH && wait_done(ctx, p, r - GCSH_PERSIST_DEPTH + 1) != 0)
        return -1;
    uint64_t done = done_word(p);
    if (done & GCSH_PERSIST_ENDED)
        return ended_error(ctx, p, done & ~GCSH_PERSIST_ENDED);
    gcsh_persist_job j = {c->offset, c->n, (int32_t)c->dt, (int32_t)c->op};
    gcsh_persist_fill(&p->bell.ring[r % GCSH_PERSIST_DEPTH], r, &j, 4);
    p->rung = r + 1;
    atomic_store_explicit(word(&p->bell.rung), p->rung, memory_order_release);
    return 0;
}

static int host_persist_wait(gcsh_ctx *ctx, gcsh_persist_impl *p)
{
    if (!p->live) {
        uint64_t done = done_word(p) & ~GCSH_PERSIST_ENDED;
        return done < p->rung ? ended_error(ctx, p, done) : 0;
    }
    if (wait_done(ctx, p, p->rung) != 0)
        return -1;
    uint64_t done = done_word(p);
    if ((done & GCSH_PERSIST_ENDED) && (done & ~GCSH_PERSIST_ENDED) < p->rung)
        return ended_error(ctx, p, done & ~GCSH_PERSIST_ENDED);
    return 0;
}

int gcsh_host_persist_drain(gcsh_ctx *ctx)
{
    gcsh_host_state *st = ctx->be_state;
    if (!st || !st->resident)
        return 0;
    int rc = 0;
    gcsh_persist_impl *p = st->resident;
    while (p) {
        gcsh_persist_impl *next = p->next; /* a failed wait unlinks p */
        if (host_persist_wait(ctx, p) != 0 && rc == 0) {
            rc = -1;
            if (atomic_load(&ctx->interrupt))
                break; /* abandon the rest at their own waits */
        }
        p = next;
    }
    return rc;
}

static void host_persist_state(gcsh_persist_impl *p, gcsh_persist_state *out)
{
    uint64_t done = done_word(p);
    out->rung = p->rung;
    out->done = done & ~GCSH_PERSIST_ENDED;
    out->running = p->live && !(done & GCSH_PERSIST_ENDED);
    out->graph_done = 0; /* a replay rings as the host does: rung counts it */
    snprintf(out->why, sizeof out->why, "%s", out->running ? "" : end_reason(p));
}

static int host_persist_stop(gcsh_ctx *ctx, gcsh_persist_impl *p, int drain)
{
    int rc = drain ? host_persist_wait(ctx, p) : 0;
    const char *why = drain ? "stopped (p:stop())"
                           : "stopped without draining (an interrupt, or freed with calls in "
                             "flight)";
    end_now(ctx, p, why);
    return rc;
}

static void host_persist_release(gcsh_ctx *ctx, gcsh_persist_impl *p)
{
    end_now(ctx, p, "stopped (its handle was collected, or the session ended)");
    free_impl(p);
}

const gcsh_persist_ops gcsh_host_persist_ops = {
    .start = host_persist_start,
    .ring = host_persist_ring,
    .wait = host_persist_wait,
    .drain = gcsh_host_persist_drain,
    .state = host_persist_state,
    .stop = host_persist_stop,
    .release = host_persist_release,
};
