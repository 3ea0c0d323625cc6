/* The host backend's stream order.  On cuda, work is queued on the rank's
 * stream, so whatever the rank issues runs after what it issued before.
 * On the host every operation runs as it is called, with one exception:
 * the calls rung on a persistent all-reduce run on the rank's progress
 * threads (host_persist.c).  So every operation here that reads or writes
 * memory first waits until those threads completed the calls rung so far
 * (gcsh_host_persist_drain: nothing to wait for, and nearly free, when no
 * persistent all-reduce runs), then calls the host's own.  host_init
 * makes the rank's ctx->be this ordered copy of gcsh_host_backend (per
 * rank, in its backend state); the operations that touch no memory
 * (creation, release, control exchanges, rank and size) stay the host's own. */
#include <stdlib.h>

#include "core/gcsh.h"
#include "host/host.h"

/* X(table, fn, (params), (args)): an operation that waits for the residents */
#define ORDERED_OPS(X)                                                                             \
    X(mem, copy, (gcsh_ctx * ctx, void *dst, int dl, const void *src, int sl, size_t bytes),      \
      (ctx, dst, dl, src, sl, bytes))                                                              \
    X(mem, fill, (gcsh_ctx * ctx, void *p, int loc, gcsh_dtype dt, size_t n, gcsh_scalar v),      \
      (ctx, p, loc, dt, n, v))                                                                     \
    X(mem, arange,                                                                                 \
      (gcsh_ctx * ctx, void *p, int loc, gcsh_dtype dt, size_t n, gcsh_scalar a, gcsh_scalar b),   \
      (ctx, p, loc, dt, n, a, b))                                                                  \
    X(mem, rand, (gcsh_ctx * ctx, void *p, int loc, gcsh_dtype dt, size_t n, uint64_t seed),      \
      (ctx, p, loc, dt, n, seed))                                                                  \
    X(mem, sync, (gcsh_ctx * ctx), (ctx))                                                          \
    X(mem, timer_begin, (gcsh_ctx * ctx, void **tok), (ctx, tok))                                  \
    X(mem, timer_end, (gcsh_ctx * ctx, void *tok, double *s), (ctx, tok, s))                       \
    X(comm, barrier, (gcsh_ctx * ctx, gcsh_comm_impl * c), (ctx, c))                               \
    X(comm, allreduce,                                                                             \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, const void *in, void *out, size_t n, gcsh_dtype dt,     \
       gcsh_redop op),                                                                             \
      (ctx, c, in, out, n, dt, op))                                                                \
    X(comm, broadcast,                                                                             \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, void *buf, size_t n, gcsh_dtype dt, int root),          \
      (ctx, c, buf, n, dt, root))                                                                  \
    X(comm, reduce,                                                                                \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, const void *in, void *out, size_t n, gcsh_dtype dt,     \
       gcsh_redop op, int root),                                                                   \
      (ctx, c, in, out, n, dt, op, root))                                                          \
    X(comm, allgather,                                                                             \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, const void *in, void *out, size_t n, gcsh_dtype dt),    \
      (ctx, c, in, out, n, dt))                                                                    \
    X(comm, reducescatter,                                                                         \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, const void *in, void *out, size_t n, gcsh_dtype dt,     \
       gcsh_redop op),                                                                             \
      (ctx, c, in, out, n, dt, op))                                                                \
    X(comm, alltoall,                                                                              \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, const void *in, void *out, size_t n, gcsh_dtype dt),    \
      (ctx, c, in, out, n, dt))                                                                    \
    X(comm, send,                                                                                  \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, const void *buf, size_t n, gcsh_dtype dt, int peer),    \
      (ctx, c, buf, n, dt, peer))                                                                  \
    X(comm, recv,                                                                                  \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, void *buf, size_t n, gcsh_dtype dt, int peer),          \
      (ctx, c, buf, n, dt, peer))                                                                  \
    X(win, signal_set,                                                                             \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, int peer, size_t slot,     \
       uint64_t v),                                                                                \
      (ctx, w, d, peer, slot, v))                                                                  \
    X(win, signal_add,                                                                             \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, int peer, size_t slot,     \
       uint64_t v),                                                                                \
      (ctx, w, d, peer, slot, v))                                                                  \
    X(win, signal_fetch_add,                                                                       \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, int peer, size_t slot,     \
       uint64_t v, uint64_t *old),                                                                 \
      (ctx, w, d, peer, slot, v, old))                                                             \
    X(win, signal_wait,                                                                            \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, size_t slot, uint64_t v,   \
       enum gcsh_cmp cmp),                                                                         \
      (ctx, w, d, slot, v, cmp))                                                                   \
    X(win, signal_wait_cpu,                                                                        \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, size_t slot, uint64_t v,   \
       enum gcsh_cmp cmp, double t),                                                               \
      (ctx, w, d, slot, v, cmp, t))                                                                \
    X(win, signal_read,                                                                            \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, size_t slot, uint64_t *v), \
      (ctx, w, d, slot, v))                                                                        \
    X(kern, reduce, (gcsh_ctx * ctx, const gcsh_kjob *j), (ctx, j))                                \
    X(kern, empty, (gcsh_ctx * ctx), (ctx))                                                        \
    X(kern, collective,                                                                            \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, const gcsh_kcoll_args *k), \
      (ctx, w, d, k))                                                                              \
    X(kern, ll_allreduce,                                                                          \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, const gcsh_kll_args *k),   \
      (ctx, w, d, k))                                                                              \
    X(xfer, post, (gcsh_ctx * ctx, gcsh_xfer_impl * x), (ctx, x))                                  \
    X(xfer, wait_stream, (gcsh_ctx * ctx, gcsh_xfer_impl * x), (ctx, x))                           \
    X(xfer, wait_cpu, (gcsh_ctx * ctx, gcsh_xfer_impl * x, double t), (ctx, x, t))                 \
    X(graph, launch, (gcsh_ctx * ctx, gcsh_graph_impl * g, uint64_t n), (ctx, g, n))

#define HOST_TABLE_mem gcsh_host_mem_ops
#define HOST_TABLE_comm gcsh_host_comm_ops
#define HOST_TABLE_win gcsh_host_window_ops
#define HOST_TABLE_kern gcsh_host_kernel_ops
#define HOST_TABLE_xfer gcsh_host_xfer_ops
#define HOST_TABLE_graph gcsh_host_graph_ops

#define ORDERED_FN(tab, fn, params, args)                                                          \
    static int ordered_##tab##_##fn params                                                         \
    {                                                                                              \
        if (gcsh_host_persist_drain(ctx) != 0)                                                     \
            return -1;                                                                             \
        return HOST_TABLE_##tab.fn args;                                                           \
    }
ORDERED_OPS(ORDERED_FN)

#define SET_ORDERED(tab, fn, ...) t->tables.tab.fn = ordered_##tab##_##fn;

struct gcsh_host_ordered {
    gcsh_backend_copy tables;
};

gcsh_host_ordered *gcsh_host_ordered_new(const gcsh_backend *host)
{
    gcsh_host_ordered *t = malloc(sizeof *t);
    if (!t)
        return NULL;
    gcsh_backend_copy_of(&t->tables, host);
    ORDERED_OPS(SET_ORDERED)
    return t;
}

const gcsh_backend *gcsh_host_ordered_backend(const gcsh_host_ordered *t)
{
    return &t->tables.be;
}
