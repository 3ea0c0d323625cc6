/* The recording backend table: each function that does work becomes a
 * wrapper that opens a record (the flight recorder's, and a span while
 * tracing), calls the backend's own function and closes the record
 * (trace.h).  The wrappers are made from backend.h's one list of
 * operations: its rows marked TRACED, with their category, flags and facts
 * (what the record says about the call, D: its gcsh_trace_rec).  Functions
 * that do no work or only poll (comm->rank, win->signal_read, xfer->test,
 * the bench timers) are QUIET there and shared unwrapped: a polling loop
 * would flood the record with calls that say nothing.
 *
 * The wrappers open and close records with trace.c's
 * gcsh_trace_call_begin/end; trace.c installs the table that main.c has it
 * fill with gcsh_trace_wrap, without naming this file. */
#include <string.h>

#include "trace/trace_ops.h"
#include "trace/trace_wrap.h"

#define GPU GCSH_TRACE_GPU

static uint64_t plan_bytes(const gcsh_xfer_plan *p)
{
    uint64_t n = 0;
    for (size_t i = 0; i < p->nseg; i++)
        n += p->seg[i].bytes;
    return n;
}

/* What a record says about a call: backend.h's facts, as fields of D. */
#define DESCRIBE(fact) DESCRIBE_##fact;
#define DESCRIBE_NOTHING
#define DESCRIBE_BYTES(b) D->bytes = (uint64_t)(b)
#define DESCRIBE_ELEMS(n, dt) (D->bytes = (uint64_t)(n) * gcsh_dtype_size(dt), D->dtype = (int16_t)(dt))
#define DESCRIBE_REDOP(op) D->redop = (int16_t)(op)
#define DESCRIBE_PEER(rank) D->peer = (rank)
#define DESCRIBE_OBJ(id) D->obj = (id)
#define DESCRIBE_PLAN(p) (D->coll = (int16_t)(p).coll, D->algo = (int16_t)(p).algo)
#define DESCRIBE_COUNT(n) D->value = (n)
#define DESCRIBE_REGION(first) D->offset = (int64_t)(first)
#define DESCRIBE_SEEN(w, d, s) (void)0 /* OBSERVE_SEEN, when the wait returns */
#define DESCRIBE_LOCS(dst, src) (void)0
#define DESCRIBE_KEPT(p) (void)0
/* Symmetric memory: the signals a call works on (equal on every rank), the
 * rank whose word it is, the slot and the value. */
#define DESCRIBE_SIGNAL(d, p, s, v)                                                                \
    (D->obj = (d)->trace_id, D->peer = (d)->team[p], D->slot = (int64_t)(s), D->value = (v),      \
     D->bytes = 8)
/* A wait: the word is the waiting rank's own (its rank in the communicator). */
#define DESCRIBE_WAIT(d, s, v, c)                                                                  \
    (D->obj = (d)->trace_id, D->comm_rank = (d)->team[(d)->team_rank], D->slot = (int64_t)(s),    \
     D->value = (v), D->cmp = (int16_t)(c))
/* A transfer: its plan is described once, when it is made, and recalled by
 * every later call on it (the post with its signal, the waits without). */
#define DESCRIBE_XFER_NEW(p, out)                                                                  \
    (D->bytes = plan_bytes(p), D->peer = (p)->peer, D->obj = (p)->signal ? (p)->signal_obj : 0,   \
     D->slot = (p)->signal ? (p)->signal_slot : -1, D->value = (p)->signal ? (p)->signal_value : 0, \
     D->offset = (int64_t)(p)->trace_offset - 1, D->xfer = (p)->get ? 2 : 1,                      \
     D->net = (p)->net != NULL, made = (out))
/* One operation over the network path: a put or get of bytes, or a signal
 * word's (slot = offset / 8). */
#define DESCRIBE_NET(d, rank, op, offset, bytes, v)                                                \
    (D->obj = (d)->trace_id, D->peer = (rank), D->net = 1,                                         \
     D->bytes = (op) <= GCSH_NET_GET ? (bytes) : 8,                                                \
     D->slot = (op) <= GCSH_NET_GET ? -1 : (int64_t)((offset) / 8),                                \
     D->value = (op) <= GCSH_NET_GET ? 0 : (v))
#define DESCRIBE_XFER_POST(x) gcsh_trace_xfer_recall(ctx, x, D)
#define DESCRIBE_XFER_WAIT(x) (gcsh_trace_xfer_recall(ctx, x, D), D->slot = -1, D->value = 0)
#define DESCRIBE_XFER_GONE(x) (DESCRIBE_XFER_WAIT(x), gcsh_trace_xfer_forget(ctx, x))
#define SYNC GCSH_TRACE_SYNC
#define MEM GCSH_TRACE_MEM

/* What a record learns when the call returns: a signal wait's word as the
 * wait left it (the value that let it go, or the one an interrupt found),
 * where the wait ran on this thread; a stream's wait (a backend with marks:
 * cuda) has only been queued, and its word is not yet what it will see. */
#define OBSERVE(fact) OBSERVE_##fact;
#define OBSERVE_SEEN(w, d, s) observe_word(ctx, &call, w, d, s)
#define OBSERVE_NOTHING
#define OBSERVE_BYTES(b)
#define OBSERVE_ELEMS(n, dt)
#define OBSERVE_REDOP(op)
#define OBSERVE_PEER(rank)
#define OBSERVE_OBJ(id)
#define OBSERVE_PLAN(p)
#define OBSERVE_COUNT(n)
#define OBSERVE_REGION(first)
#define OBSERVE_LOCS(dst, src)
#define OBSERVE_KEPT(p)
#define OBSERVE_SIGNAL(d, p, s, v)
#define OBSERVE_WAIT(d, s, v, c)
#define OBSERVE_XFER_NEW(p, out)
#define OBSERVE_NET(d, rank, op, offset, bytes, v)
#define OBSERVE_XFER_POST(x)
#define OBSERVE_XFER_WAIT(x)
#define OBSERVE_XFER_GONE(x)

static void observe_word(gcsh_ctx *ctx, gcsh_trace_call *call, gcsh_window_impl *w,
                         const gcsh_window_desc *d, size_t slot)
{
    const gcsh_backend *plain = gcsh_trace_plain(ctx);
    if ((call->flags & GPU) && plain->mem->mark)
        return;
    char err[sizeof ctx->err]; /* a failed wait's message stays the error */
    memcpy(err, ctx->err, sizeof err);
    uint64_t v = 0;
    if (plain->win->signal_read && plain->win->signal_read(ctx, w, d, slot, &v) == 0) {
        call->rec.seen = v;
        call->rec.seen_set = 1;
    }
    memcpy(ctx->err, err, sizeof err);
}

/* ---- the wrappers ------------------------------------------------------------ */

#define WRAP(tab, fn, ret, params, args, trace, cat, flags, capture, order, facts)                 \
    WRAP_##trace(tab, fn, ret, params, args, flags, facts)
#define WRAP_QUIET(...)
#define WRAP_TRACED(tab, fn, ret, params, args, flags, facts)                                      \
    WRAP_##ret(tab, fn, params, args, flags, facts)
#define WRAP_BEGIN(tab, fn, flags, facts)                                                          \
    gcsh_trace_call call = {.rec = GCSH_TRACE_REC_BLANK, .slot = -1};                              \
    gcsh_trace_rec *D = &call.rec;                                                                 \
    gcsh_xfer_impl **made = NULL; /* a transfer prepare's, noted once made */                     \
    GCSH_PP_EACH(DESCRIBE, facts)                                                                  \
    (void)D;                                                                                       \
    gcsh_trace_call_begin(ctx, &call, GCSH_TRACE_OP_##tab##_##fn, flags)
#define WRAP_int(tab, fn, params, args, flags, facts)                                              \
    static int tr_##tab##_##fn params                                                              \
    {                                                                                              \
        WRAP_BEGIN(tab, fn, flags, facts);                                                         \
        int rc = gcsh_trace_plain(ctx)->tab->fn args;                                              \
        GCSH_PP_EACH(OBSERVE, facts)                                                               \
        gcsh_trace_call_end(ctx, &call, rc);                                                       \
        if (made && rc == 0)                                                                       \
            gcsh_trace_xfer_note(ctx, *made, D);                                                   \
        return rc;                                                                                 \
    }
#define WRAP_void(tab, fn, params, args, flags, facts)                                             \
    static void tr_##tab##_##fn params                                                             \
    {                                                                                              \
        WRAP_BEGIN(tab, fn, flags, facts);                                                         \
        (void)made;                                                                                \
        gcsh_trace_plain(ctx)->tab->fn args;                                                       \
        gcsh_trace_call_end(ctx, &call, 0);                                                        \
    }
GCSH_BACKEND_OPS(WRAP)

/* ---- the table --------------------------------------------------------------- */

#define SET(tab, fn, ret, params, args, trace, ...) SET_##trace(tab, fn)
#define SET_QUIET(tab, fn)
#define SET_TRACED(tab, fn)                                                                        \
    if (plain->tab && plain->tab->fn)                                                              \
        t->tab.fn = tr_##tab##_##fn;

void gcsh_trace_wrap(gcsh_trace_tables *t, const gcsh_backend *plain)
{
    gcsh_backend_copy_of(t, plain);
    GCSH_BACKEND_OPS(SET)
}
