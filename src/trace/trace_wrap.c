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
 * This file and trace.c call each other on purpose: the wrappers open and
 * close records with trace.c's gcsh_trace_call_begin/end, and trace.c
 * installs the table and names operations from the list, which only this
 * file expands (gcsh_trace_wrap, gcsh_trace_op_*). */
#include "trace/trace.h"

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
     made = (out))
#define DESCRIBE_XFER_POST(x) gcsh_trace_xfer_recall(ctx, x, D)
#define DESCRIBE_XFER_WAIT(x) (gcsh_trace_xfer_recall(ctx, x, D), D->slot = -1, D->value = 0)
#define DESCRIBE_XFER_GONE(x) (DESCRIBE_XFER_WAIT(x), gcsh_trace_xfer_forget(ctx, x))
#define SYNC GCSH_TRACE_SYNC
#define MEM GCSH_TRACE_MEM

/* ---- operation ids, names and categories ---------------------------------- */

/* The rows of backend.h marked TRACED, in order, then the records of the
 * layers above the backend. */
#define OP_ID(tab, fn, ret, params, args, trace, ...) OP_ID_##trace(tab, fn)
#define OP_ID_QUIET(tab, fn)
#define OP_ID_TRACED(tab, fn) OP_##tab##_##fn,
enum { GCSH_BACKEND_OPS(OP_ID) OP_LUA, OP_COLL, OP_CHECK, OP_COUNT };

#define OP_NAME(tab, fn, ret, params, args, trace, ...) OP_NAME_##trace(tab, fn)
#define OP_NAME_QUIET(tab, fn)
#define OP_NAME_TRACED(tab, fn) #tab "." #fn,
static const char *const op_names[] = {GCSH_BACKEND_OPS(OP_NAME) "lua", "collective", "check"};

#define OP_CAT(tab, fn, ret, params, args, trace, cat, ...) OP_CAT_##trace(cat)
#define OP_CAT_QUIET(cat)
#define OP_CAT_TRACED(cat) cat,
static const char *const op_cats[] = {GCSH_BACKEND_OPS(OP_CAT) "lua", "collective", "control"};

const char *gcsh_trace_op_name(uint32_t op)
{
    return op < OP_COUNT ? op_names[op] : "?";
}

const char *gcsh_trace_op_cat(uint32_t op)
{
    return op < OP_COUNT ? op_cats[op] : "?";
}

uint32_t gcsh_trace_op_lua(void)
{
    return OP_LUA;
}

uint32_t gcsh_trace_op_coll(void)
{
    return OP_COLL;
}

uint32_t gcsh_trace_op_check(void)
{
    return OP_CHECK;
}

int gcsh_trace_op_signal(uint32_t op)
{
    if (op == OP_win_signal_set || op == OP_win_signal_add || op == OP_xfer_post)
        return 1;
    return op == OP_win_signal_wait || op == OP_win_signal_wait_cpu ? 2 : 0;
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
    gcsh_trace_call_begin(ctx, &call, OP_##tab##_##fn, flags)
#define WRAP_int(tab, fn, params, args, flags, facts)                                              \
    static int tr_##tab##_##fn params                                                              \
    {                                                                                              \
        WRAP_BEGIN(tab, fn, flags, facts);                                                         \
        int rc = gcsh_trace_plain(ctx)->tab->fn args;                                              \
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
