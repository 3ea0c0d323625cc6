/* The one wait of the host backend: a rank polls a 64-bit word in shared
 * memory (a peer stores into it) until a comparison holds.  s:wait, the
 * kernel collectives' barriers and the "ll" all-reduce's lines (the flag
 * half of a word) all wait here.
 *
 * Pacing: bare polls first (a peer on another core answers within
 * microseconds), for up to a millisecond when every rank of the node has a
 * core of its own, then sched_yield, since ranks often share cores (CI runs
 * 4 ranks on 2) and the peer being waited for may need this one; only a
 * long wait sleeps, with a doubling interval up to a millisecond, so that a
 * late rank does not cost a core.  When the kernels' barriers slept from
 * the start, a one-shot of 8 bytes took 47 us at 2 ranks and 160 at 4 on
 * the 2-core CI machine; yielding first made it 1.2 and 8.5 us.  Yielding
 * after a few polls when the ranks do have a core each costs as much on a
 * busy machine: the yield hands the core to another process for its slice
 * (at load 30 on the CI machine, a small all-reduce at 2 ranks, host_small.c,
 * took 8 us a call after 64 polls, 24-36 after 2000, 0.9 polling on), so the
 * bare polls last while the node is not oversubscribed (gcsh_spin_first_s). */
#include <math.h>
#include <sched.h>
#include <time.h>

#include "core/gcsh.h"
#include "host/host.h"

#define WAIT_SPIN_POLLS 64      /* bare polls of every wait */
#define WAIT_CLOCK_EVERY 256    /* polls between two looks at the clock meanwhile */
#define WAIT_YIELD_POLLS 20000
#define WAIT_FIRST_SLEEP_NS 1000L
#define WAIT_MAX_SLEEP_NS 1000000L

/* What a wait waits for: a 64-bit word's masked bits against v, or (elem
 * set) a data element of dt against ev (t:wait). */
typedef struct wait_cond {
    _Atomic uint64_t *word;
    uint64_t mask, v;
    enum gcsh_cmp cmp;
    const void *elem;
    gcsh_dtype dt;
    gcsh_scalar ev;
} wait_cond;

static int cond_holds(const wait_cond *c)
{
    if (c->elem) {
        uint64_t bits = gcsh_load_acquire(c->elem, (int)gcsh_dtype_size(c->dt));
        return gcsh_elem_holds(&bits, c->dt, c->cmp, c->ev);
    }
    return gcsh_cmp_holds(atomic_load_explicit(c->word, memory_order_acquire) & c->mask, c->cmp,
                          c->v);
}

#define SPIN_MORE 2 /* spin_first: the condition still fails; wait_slow next */

/* The bare polls (see the top): 0 when c holds, 1 after timeout, -1
 * interrupted, SPIN_MORE when the time for bare polls is over (*start:
 * when the wait began; the clock is read only once the first polls fail:
 * the "ll" all-reduce waits once per 8 bytes, nearly always on a word
 * already there). */
static int spin_first(gcsh_ctx *ctx, const wait_cond *c, double timeout, const char *interrupted,
                      double *start)
{
    *start = 0;
    for (unsigned polls = 0;; polls++) {
        if (cond_holds(c))
            return 0;
        if (atomic_load_explicit(&ctx->interrupt, memory_order_relaxed))
            return gcsh_set_error(ctx, "%s", interrupted);
        if (polls < WAIT_SPIN_POLLS || (polls > WAIT_SPIN_POLLS && polls % WAIT_CLOCK_EVERY != 0))
            continue;
        double now = gcsh_now_seconds();
        if (polls == WAIT_SPIN_POLLS)
            *start = now;
        if (now - *start >= timeout)
            return 1;
        if (now - *start >= gcsh_spin_first_s(ctx))
            return SPIN_MORE;
    }
}

static int wait_slow(gcsh_ctx *ctx, const wait_cond *c, double start, double timeout,
                     const char *interrupted);

/* The loop of the waits below: until `(*word & mask) cmp v` holds.  0; 1
 * after timeout; -1 interrupted.  A wait that outlasts the bare polls is
 * noted for hang reports (core/waitnote.h), in the words note->text writes
 * (NULL: none): not before, since formatting the note cost more than a
 * short wait (the small collectives wait at every call, host_small.c). */
static int wait_masked(gcsh_ctx *ctx, _Atomic uint64_t *word, uint64_t mask, enum gcsh_cmp cmp,
                       uint64_t v, double timeout, const char *interrupted,
                       const gcsh_host_note *note)
{
    wait_cond c = {.word = word, .mask = mask, .v = v, .cmp = cmp};
    double start;
    int rc = spin_first(ctx, &c, timeout, interrupted, &start);
    if (rc != SPIN_MORE)
        return rc;
    if (!note)
        return wait_slow(ctx, &c, start, timeout, interrupted);
    char what[64];
    note->text(note->arg, what, sizeof what);
    gcsh_wait_note_begin(&ctx->wait_note, what, note->peer, word, mask, note->shift);
    rc = wait_slow(ctx, &c, start, timeout, interrupted);
    gcsh_wait_note_end(&ctx->wait_note);
    return rc;
}

/* After the bare polls: yield, then sleep with a doubling interval; start:
 * when the wait began, for the timeout. */
static int wait_slow(gcsh_ctx *ctx, const wait_cond *c, double start, double timeout,
                     const char *interrupted)
{
    long sleep_ns = WAIT_FIRST_SLEEP_NS;
    for (unsigned polls = 0;; polls++) {
        if (cond_holds(c))
            return 0;
        if (atomic_load(&ctx->interrupt))
            return gcsh_set_error(ctx, "%s", interrupted);
        if (gcsh_now_seconds() - start >= timeout)
            return 1;
        if (polls < WAIT_YIELD_POLLS) {
            sched_yield();
            continue;
        }
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
        sleep_ns = sleep_ns * 2 < WAIT_MAX_SLEEP_NS ? sleep_ns * 2 : WAIT_MAX_SLEEP_NS;
    }
}

int gcsh_host_wait_word(gcsh_ctx *ctx, _Atomic uint64_t *word, enum gcsh_cmp cmp, uint64_t v,
                        double timeout, const char *interrupted)
{
    return wait_masked(ctx, word, UINT64_MAX, cmp, v, timeout, interrupted, NULL);
}

int gcsh_host_wait_noted(gcsh_ctx *ctx, _Atomic uint64_t *word, enum gcsh_cmp cmp, uint64_t v,
                         double timeout, const char *interrupted, const gcsh_host_note *note)
{
    return wait_masked(ctx, word, UINT64_MAX, cmp, v, timeout, interrupted, note);
}

int gcsh_host_wait_bits(gcsh_ctx *ctx, _Atomic uint64_t *word, uint64_t mask, uint64_t v,
                        const char *interrupted, const gcsh_host_note *note)
{
    return wait_masked(ctx, word, mask, GCSH_CMP_EQ, v, INFINITY, interrupted, note);
}

int gcsh_host_wait_elem(gcsh_ctx *ctx, const void *elem, gcsh_dtype dt, enum gcsh_cmp cmp,
                        gcsh_scalar v, const char *interrupted, const char *what, int peer)
{
    wait_cond c = {.elem = elem, .dt = dt, .cmp = cmp, .ev = v};
    double start;
    int rc = spin_first(ctx, &c, INFINITY, interrupted, &start);
    if (rc != SPIN_MORE)
        return rc;
    gcsh_wait_note_begin_elem(&ctx->wait_note, what, peer, elem, (int)gcsh_dtype_size(dt), dt);
    rc = wait_slow(ctx, &c, start, INFINITY, interrupted);
    gcsh_wait_note_end(&ctx->wait_note);
    return rc;
}
