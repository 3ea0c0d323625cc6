/* The recording backend table: each function that does work becomes a
 * wrapper that opens a record (the flight recorder's, and a span while
 * tracing), calls the backend's own function and closes the record
 * (trace.h).  The wrappers are made from one list, TRACED_OPS, whose rows
 * give a function's table, name, category, flags, parameters, arguments,
 * what the record says about the call (D: its gcsh_trace_rec) and what the
 * layer keeps after it.  Functions that do no work or only poll
 * (comm->rank, win->signal_read, xfer->test, the bench timers) are shared
 * unwrapped: a polling loop would flood the record with calls that say
 * nothing.
 *
 * This file and trace.c call each other on purpose: the wrappers open and
 * close records with trace.c's gcsh_trace_call_begin/end, and trace.c
 * installs the table and names operations from TRACED_OPS, which only this
 * file expands (gcsh_trace_wrap, gcsh_trace_op_*). */
#include "trace/trace.h"

#define GPU GCSH_TRACE_GPU
#define ELEMS(n, dt) (D->bytes = (uint64_t)(n) * gcsh_dtype_size(dt), D->dtype = (int16_t)(dt))
#define NONE (void)0

static uint64_t plan_bytes(const gcsh_xfer_plan *p)
{
    uint64_t n = 0;
    for (size_t i = 0; i < p->nseg; i++)
        n += p->seg[i].bytes;
    return n;
}

/* Symmetric memory: the signals a call works on (equal on every rank), the
 * rank whose word it is, the slot and the value. */
#define SIGNAL(d, rank, s, v)                                                                      \
    (D->obj = (d)->trace_id, D->peer = (rank), D->slot = (int64_t)(s), D->value = (v), D->bytes = 8)
/* A wait: the word is the waiting rank's own (its rank in the communicator). */
#define WAIT(d, s, v, c)                                                                           \
    (D->obj = (d)->trace_id, D->comm_rank = (d)->team[(d)->team_rank], D->slot = (int64_t)(s),    \
     D->value = (v), D->cmp = (int16_t)(c))
#define XFER(p)                                                                                    \
    (D->bytes = plan_bytes(p), D->peer = (p)->peer, D->obj = (p)->signal ? (p)->signal_obj : 0,   \
     D->slot = (p)->signal ? (p)->signal_slot : -1, D->value = (p)->signal ? (p)->signal_value : 0, \
     D->net = (p)->net != NULL)
/* One operation over the network path: a put or get of bytes, or a signal
 * word's (slot = offset / 8). */
#define NET(d, rank, op, offset, bytes, v)                                                         \
    (D->obj = (d)->trace_id, D->peer = (rank), D->net = 1,                                         \
     D->bytes = (op) <= GCSH_NET_GET ? (bytes) : 8,                                                \
     D->slot = (op) <= GCSH_NET_GET ? -1 : (int64_t)((offset) / 8),                                \
     D->value = (op) <= GCSH_NET_GET ? 0 : (v))
#define SYNC GCSH_TRACE_SYNC
#define MEM GCSH_TRACE_MEM

/* X(ret, table, fn, category, flags, (params), (args), what the span records
 * before the call, what the layer keeps after it (rc: the call's status)) */
#define TRACED_OPS(X)                                                                              \
    X(INT, mem, alloc, "memory", MEM, (gcsh_ctx * ctx, size_t bytes, void **out, int *loc),         \
      (ctx, bytes, out, loc), D->bytes = bytes, NONE)                                              \
    X(VOID, mem, release, "memory", MEM, (gcsh_ctx * ctx, void *p, int loc), (ctx, p, loc), NONE,   \
      NONE)                                                                                        \
    X(INT, mem, copy, "memory", GPU | MEM,                                                               \
      (gcsh_ctx * ctx, void *dst, int dl, const void *src, int sl, size_t bytes),                  \
      (ctx, dst, dl, src, sl, bytes), D->bytes = bytes, NONE)                                      \
    X(INT, mem, fill, "memory", GPU | MEM,                                                               \
      (gcsh_ctx * ctx, void *p, int loc, gcsh_dtype dt, size_t n, gcsh_scalar v),                  \
      (ctx, p, loc, dt, n, v), ELEMS(n, dt), NONE)                                                 \
    X(INT, mem, arange, "memory", GPU | MEM,                                                             \
      (gcsh_ctx * ctx, void *p, int loc, gcsh_dtype dt, size_t n, gcsh_scalar a, gcsh_scalar b),   \
      (ctx, p, loc, dt, n, a, b), ELEMS(n, dt), NONE)                                              \
    X(INT, mem, rand, "memory", GPU | MEM,                                                               \
      (gcsh_ctx * ctx, void *p, int loc, gcsh_dtype dt, size_t n, uint64_t seed),                  \
      (ctx, p, loc, dt, n, seed), ELEMS(n, dt), NONE)                                              \
    X(INT, mem, sync, "memory", GPU | SYNC | MEM, (gcsh_ctx * ctx), (ctx), NONE, NONE)                  \
    X(INT, comm, world, "communicator", 0, (gcsh_ctx * ctx, gcsh_comm_impl * *out), (ctx, out),   \
      NONE, NONE)                                                                                  \
    X(INT, comm, split, "communicator", 0,                                                         \
      (gcsh_ctx * ctx, gcsh_comm_impl * p, int color, int key, gcsh_comm_impl **out),              \
      (ctx, p, color, key, out), NONE, NONE)                                                       \
    X(VOID, comm, release, "communicator", 0, (gcsh_ctx * ctx, gcsh_comm_impl * c), (ctx, c),     \
      NONE, NONE)                                                                                  \
    X(INT, comm, barrier, "collective", GPU, (gcsh_ctx * ctx, gcsh_comm_impl * c), (ctx, c), NONE, \
      NONE)                                                                                        \
    X(INT, comm, allreduce, "collective", GPU,                                                     \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, const void *in, void *out, size_t n, gcsh_dtype dt,     \
       gcsh_redop op),                                                                             \
      (ctx, c, in, out, n, dt, op), (ELEMS(n, dt), D->redop = (int16_t)op), NONE)                 \
    X(INT, comm, broadcast, "collective", GPU,                                                     \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, void *buf, size_t n, gcsh_dtype dt, int root),          \
      (ctx, c, buf, n, dt, root), (ELEMS(n, dt), D->peer = root), NONE)                           \
    X(INT, comm, reduce, "collective", GPU,                                                        \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, const void *in, void *out, size_t n, gcsh_dtype dt,     \
       gcsh_redop op, int root),                                                                   \
      (ctx, c, in, out, n, dt, op, root), (ELEMS(n, dt), D->redop = (int16_t)op, D->peer = root), \
      NONE)                                                                                        \
    X(INT, comm, allgather, "collective", GPU,                                                     \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, const void *in, void *out, size_t n, gcsh_dtype dt),    \
      (ctx, c, in, out, n, dt), ELEMS(n, dt), NONE)                                                \
    X(INT, comm, reducescatter, "collective", GPU,                                                 \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, const void *in, void *out, size_t n, gcsh_dtype dt,     \
       gcsh_redop op),                                                                             \
      (ctx, c, in, out, n, dt, op), (ELEMS(n, dt), D->redop = (int16_t)op), NONE)                 \
    X(INT, comm, alltoall, "collective", GPU,                                                      \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, const void *in, void *out, size_t n, gcsh_dtype dt),    \
      (ctx, c, in, out, n, dt), ELEMS(n, dt), NONE)                                                \
    X(INT, comm, send, "p2p", GPU,                                                                 \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, const void *buf, size_t n, gcsh_dtype dt, int peer),    \
      (ctx, c, buf, n, dt, peer), (ELEMS(n, dt), D->peer = peer), NONE)                           \
    X(INT, comm, recv, "p2p", GPU,                                                                 \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, void *buf, size_t n, gcsh_dtype dt, int peer),          \
      (ctx, c, buf, n, dt, peer), (ELEMS(n, dt), D->peer = peer), NONE)                           \
    X(INT, comm, agree, "control", 0,                                                              \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, const void *mine, void *all, size_t bytes),             \
      (ctx, c, mine, all, bytes), D->bytes = bytes, NONE)                                          \
    X(VOID, comm, abort, "communicator", 0, (gcsh_ctx * ctx, gcsh_comm_impl * c), (ctx, c), NONE, \
      NONE)                                                                                        \
    X(INT, comm, agree_blocking, "control", 0,                                                     \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, const void *mine, void *all, size_t bytes),             \
      (ctx, c, mine, all, bytes), D->bytes = bytes, NONE)                                          \
    X(INT, win, create_begin, "window", 0,                                                         \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, const char *kind, gcsh_window_desc *d,                  \
       gcsh_window_impl **out),                                                                    \
      (ctx, c, kind, d, out), D->bytes = d->alloc_bytes, NONE)                                     \
    X(INT, win, create_stage, "window", 0,                                                         \
      (gcsh_ctx * ctx, gcsh_window_impl * w, gcsh_window_desc * d, int i, char *report,            \
       size_t len),                                                                                \
      (ctx, w, d, i, report, len), D->bytes = d->alloc_bytes, NONE)                                \
    X(VOID, win, create_abort, "window", 0,                                                        \
      (gcsh_ctx * ctx, gcsh_window_impl * w, gcsh_window_desc * d), (ctx, w, d),                   \
      D->bytes = d->alloc_bytes, NONE)                                                             \
    X(INT, win, destroy, "window", 0,                                                              \
      (gcsh_ctx * ctx, gcsh_window_impl * w, gcsh_window_desc * d), (ctx, w, d),                   \
      (D->bytes = d->alloc_bytes, D->obj = d->trace_id), NONE)                                     \
    X(INT, win, signal_set, "signal", GPU,                                                         \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, int peer, size_t slot,     \
       uint64_t v),                                                                                \
      (ctx, w, d, peer, slot, v), SIGNAL(d, d->team[peer], slot, v), NONE)                         \
    X(INT, win, signal_add, "signal", GPU,                                                         \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, int peer, size_t slot,     \
       uint64_t v),                                                                                \
      (ctx, w, d, peer, slot, v), SIGNAL(d, d->team[peer], slot, v), NONE)                         \
    X(INT, win, signal_fetch_add, "signal", GPU,                                                   \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, int peer, size_t slot,     \
       uint64_t v, uint64_t *old),                                                                 \
      (ctx, w, d, peer, slot, v, old), SIGNAL(d, d->team[peer], slot, v), NONE)                    \
    X(INT, win, net, "transfer", 0,                                                                \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, int rank,                  \
       enum gcsh_net_op op, size_t offset, void *data, size_t bytes, uint64_t v, uint64_t *old),   \
      (ctx, w, d, rank, op, offset, data, bytes, v, old), NET(d, rank, op, offset, bytes, v), NONE) \
    X(INT, win, signal_wait, "signal", GPU,                                                        \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, size_t slot, uint64_t v,   \
       enum gcsh_cmp cmp),                                                                         \
      (ctx, w, d, slot, v, cmp), WAIT(d, slot, v, cmp), NONE)                                      \
    X(INT, win, signal_wait_cpu, "signal", 0,                                                      \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, size_t slot, uint64_t v,   \
       enum gcsh_cmp cmp, double timeout),                                                         \
      (ctx, w, d, slot, v, cmp, timeout), WAIT(d, slot, v, cmp), NONE)                             \
    X(INT, win, peer_read, "window", GPU,                                                          \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, int peer, size_t offset,   \
       void *dst, size_t bytes),                                                                   \
      (ctx, w, d, peer, offset, dst, bytes),                                                       \
      (D->bytes = bytes, D->peer = d->team[peer], D->obj = d->trace_id), NONE)                    \
    X(INT, kern, reduce, "kernel", GPU, (gcsh_ctx * ctx, const gcsh_kjob *j), (ctx, j),            \
      (ELEMS(j->n, j->dt), D->redop = (int16_t)j->op), NONE)                                      \
    X(INT, kern, empty, "kernel", GPU, (gcsh_ctx * ctx), (ctx), NONE, NONE)                        \
    X(INT, kern, collective, "kernel", GPU,                                                        \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, const gcsh_kcoll_args *a), \
      (ctx, w, d, a),                                                                              \
      (ELEMS(a->plan.n, a->dt), D->redop = (int16_t)a->op, D->coll = (int16_t)a->plan.coll,       \
       D->algo = (int16_t)a->plan.algo, D->obj = d->trace_id),                                     \
      NONE)                                                                                        \
    X(INT, kern, dev_allreduce, "kernel", GPU,                                                     \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, const gcsh_kdev_args *a),  \
      (ctx, w, d, a), (ELEMS(a->n, a->dt), D->redop = (int16_t)a->op, D->obj = d->trace_id), NONE) \
    X(INT, kern, mc_open, "kernel", 0,                                                             \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, gcsh_mcast *m),            \
      (ctx, w, d, m), D->obj = d->trace_id, NONE)                                                  \
    X(INT, kern, mc_ld_reduce, "kernel", GPU,                                                      \
      (gcsh_ctx * ctx, const gcsh_mcast *m, size_t offset, void *out, size_t n, gcsh_dtype dt,     \
       gcsh_redop op),                                                                             \
      (ctx, m, offset, out, n, dt, op), (ELEMS(n, dt), D->redop = (int16_t)op), NONE)             \
    X(INT, kern, mc_st, "kernel", GPU,                                                             \
      (gcsh_ctx * ctx, const gcsh_mcast *m, size_t offset, const void *src, size_t n,              \
       gcsh_dtype dt),                                                                             \
      (ctx, m, offset, src, n, dt), ELEMS(n, dt), NONE)                                            \
    X(INT, xfer, prepare, "transfer", 0,                                                           \
      (gcsh_ctx * ctx, const gcsh_xfer_plan *plan, gcsh_xfer_impl **out), (ctx, plan, out),        \
      XFER(plan), if (rc == 0) gcsh_trace_xfer_note(ctx, *out, D))                                 \
    X(INT, xfer, post, "transfer", GPU, (gcsh_ctx * ctx, gcsh_xfer_impl * x), (ctx, x),           \
      gcsh_trace_xfer_recall(ctx, x, D), NONE)                                                     \
    X(INT, xfer, wait_stream, "transfer", GPU, (gcsh_ctx * ctx, gcsh_xfer_impl * x), (ctx, x),    \
      (gcsh_trace_xfer_recall(ctx, x, D), D->slot = -1, D->value = 0), NONE)                       \
    X(INT, xfer, wait_cpu, "transfer", 0, (gcsh_ctx * ctx, gcsh_xfer_impl * x, double timeout),   \
      (ctx, x, timeout), (gcsh_trace_xfer_recall(ctx, x, D), D->slot = -1, D->value = 0), NONE)    \
    X(VOID, xfer, release, "transfer", 0, (gcsh_ctx * ctx, gcsh_xfer_impl * x), (ctx, x),         \
      (gcsh_trace_xfer_recall(ctx, x, D), D->slot = -1, D->value = 0,                              \
       gcsh_trace_xfer_forget(ctx, x)),                                                            \
      NONE)                                                                                        \
    X(INT, graph, launch, "graph", GPU, (gcsh_ctx * ctx, gcsh_graph_impl * g, uint64_t n),        \
      (ctx, g, n), D->value = n, NONE)

/* ---- operation ids, names and categories ---------------------------------- */

#define OP_ID(ret, tab, fn, ...) OP_##tab##_##fn,
enum { TRACED_OPS(OP_ID) OP_LUA, OP_COLL, OP_CHECK, OP_COUNT };

#define OP_NAME(ret, tab, fn, ...) #tab "." #fn,
static const char *const op_names[] = {TRACED_OPS(OP_NAME) "lua", "collective", "check"};

#define OP_CAT(ret, tab, fn, cat, ...) cat,
static const char *const op_cats[] = {TRACED_OPS(OP_CAT) "lua", "collective", "control"};

const char *gcsh_trace_op_name(uint32_t op)
{
    return op < OP_COUNT ? op_names[op] : "?";
}

const char *gcsh_trace_op_cat(uint32_t op)
{
    return op < OP_COUNT ? op_cats[op] : "?";
}

uint32_t gcsh_trace_op_count(void)
{
    return OP_COUNT;
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

#define WRAP_INT(tab, fn, flags, params, args, describe, after)                                    \
    static int tr_##tab##_##fn params                                                              \
    {                                                                                              \
        gcsh_trace_call call = {.rec = GCSH_TRACE_REC_BLANK, .slot = -1};                          \
        gcsh_trace_rec *D = &call.rec;                                                             \
        describe;                                                                                  \
        gcsh_trace_call_begin(ctx, &call, OP_##tab##_##fn, flags);                                \
        int rc = gcsh_trace_plain(ctx)->tab->fn args;                                              \
        gcsh_trace_call_end(ctx, &call, rc);                                                       \
        after;                                                                                     \
        return rc;                                                                                 \
    }
#define WRAP_VOID(tab, fn, flags, params, args, describe, after)                                   \
    static void tr_##tab##_##fn params                                                             \
    {                                                                                              \
        gcsh_trace_call call = {.rec = GCSH_TRACE_REC_BLANK, .slot = -1};                          \
        gcsh_trace_rec *D = &call.rec;                                                             \
        describe;                                                                                  \
        gcsh_trace_call_begin(ctx, &call, OP_##tab##_##fn, flags);                                \
        gcsh_trace_plain(ctx)->tab->fn args;                                                       \
        gcsh_trace_call_end(ctx, &call, 0);                                                        \
        after;                                                                                     \
    }
#define WRAP(ret, tab, fn, cat, flags, params, args, describe, after)                              \
    WRAP_##ret(tab, fn, flags, params, args, (void)D; describe, after)
TRACED_OPS(WRAP)

/* ---- the table --------------------------------------------------------------- */

#define SET(ret, tab, fn, ...)                                                                     \
    if (plain->tab && plain->tab->fn)                                                              \
        t->tab.fn = tr_##tab##_##fn;

void gcsh_trace_wrap(gcsh_trace_tables *t, const gcsh_backend *plain)
{
    gcsh_backend_copy_of(t, plain);
    TRACED_OPS(SET)
}
