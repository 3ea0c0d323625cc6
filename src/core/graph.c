/* The capture layer (graph.h): a copy of the backend's table whose calls are
 * recorded, passed down while the backend captures, or refused.  The
 * recorded calls come from one list, CAPTURED_OPS, whose rows give a
 * function's table and name, its parameters, the fields a recorded call
 * keeps, how the call fills them, the arguments its replay passes, and what
 * makes a call of it refused (NULL: never).  Calls that do no work (rank,
 * can_reduce, the window kinds' facts, the trace marks) are shared as they
 * are; the rest are refused by REFUSED_OPS, or deferred (releases). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gcsh.h"
#include "core/graph.h"

/* A copy to or from memory elsewhere than the rank's (host memory on cuda)
 * must reach the host now. */
#define FOREIGN_COPY(ctx, dl, sl)                                                                  \
    ((dl) != (ctx)->loc || (sl) != (ctx)->loc                                                      \
         ? "a copy between host and device memory (a host read or write of a device tensor)"     \
         : NULL)
#define NEVER NULL

/* X(table, fn, (params), fields, (record: fill a from params), (replay args, from a),
 *   refused-when, bytes) */
#define CAPTURED_OPS(X)                                                                            \
    X(mem, copy, (gcsh_ctx * ctx, void *dst, int dl, const void *src, int sl, size_t bytes),      \
      void *dst; int dl; const void *src; int sl; size_t bytes;,                                 \
      (a->dst = dst, a->dl = dl, a->src = src, a->sl = sl, a->bytes = bytes),                     \
      (ctx, a->dst, a->dl, a->src, a->sl, a->bytes), FOREIGN_COPY(ctx, dl, sl), bytes)             \
    X(mem, fill, (gcsh_ctx * ctx, void *p, int loc, gcsh_dtype dt, size_t n, gcsh_scalar v),      \
      void *p; int loc; gcsh_dtype dt; size_t n; gcsh_scalar v;,                                 \
      (a->p = p, a->loc = loc, a->dt = dt, a->n = n, a->v = v),                                   \
      (ctx, a->p, a->loc, a->dt, a->n, a->v), NEVER, n * gcsh_dtype_size(dt))                      \
    X(mem, arange,                                                                                 \
      (gcsh_ctx * ctx, void *p, int loc, gcsh_dtype dt, size_t n, gcsh_scalar s, gcsh_scalar st), \
      void *p; int loc; gcsh_dtype dt; size_t n; gcsh_scalar s; gcsh_scalar st;,                 \
      (a->p = p, a->loc = loc, a->dt = dt, a->n = n, a->s = s, a->st = st),                       \
      (ctx, a->p, a->loc, a->dt, a->n, a->s, a->st), NEVER, n * gcsh_dtype_size(dt))               \
    X(mem, rand, (gcsh_ctx * ctx, void *p, int loc, gcsh_dtype dt, size_t n, uint64_t seed),      \
      void *p; int loc; gcsh_dtype dt; size_t n; uint64_t seed;,                                 \
      (a->p = p, a->loc = loc, a->dt = dt, a->n = n, a->seed = seed),                             \
      (ctx, a->p, a->loc, a->dt, a->n, a->seed), NEVER, n * gcsh_dtype_size(dt))                   \
    X(comm, allreduce,                                                                             \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, const void *in, void *out, size_t n, gcsh_dtype dt,     \
       gcsh_redop op),                                                                             \
      gcsh_comm_impl *c; const void *in; void *out; size_t n; gcsh_dtype dt; gcsh_redop op;,     \
      (a->c = c, a->in = in, a->out = out, a->n = n, a->dt = dt, a->op = op),                     \
      (ctx, a->c, a->in, a->out, a->n, a->dt, a->op), NEVER, n * gcsh_dtype_size(dt))              \
    X(comm, broadcast,                                                                             \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, void *buf, size_t n, gcsh_dtype dt, int root),          \
      gcsh_comm_impl *c; void *buf; size_t n; gcsh_dtype dt; int root;,                          \
      (a->c = c, a->buf = buf, a->n = n, a->dt = dt, a->root = root),                             \
      (ctx, a->c, a->buf, a->n, a->dt, a->root), NEVER, n * gcsh_dtype_size(dt))                   \
    X(comm, reduce,                                                                                \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, const void *in, void *out, size_t n, gcsh_dtype dt,     \
       gcsh_redop op, int root),                                                                   \
      gcsh_comm_impl *c; const void *in; void *out; size_t n; gcsh_dtype dt; gcsh_redop op;      \
      int root;,                                                                                   \
      (a->c = c, a->in = in, a->out = out, a->n = n, a->dt = dt, a->op = op, a->root = root),     \
      (ctx, a->c, a->in, a->out, a->n, a->dt, a->op, a->root), NEVER, n * gcsh_dtype_size(dt))     \
    X(comm, allgather,                                                                             \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, const void *in, void *out, size_t n, gcsh_dtype dt),    \
      gcsh_comm_impl *c; const void *in; void *out; size_t n; gcsh_dtype dt;,                    \
      (a->c = c, a->in = in, a->out = out, a->n = n, a->dt = dt),                                 \
      (ctx, a->c, a->in, a->out, a->n, a->dt), NEVER, n * gcsh_dtype_size(dt))                     \
    X(comm, reducescatter,                                                                         \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, const void *in, void *out, size_t n, gcsh_dtype dt,     \
       gcsh_redop op),                                                                             \
      gcsh_comm_impl *c; const void *in; void *out; size_t n; gcsh_dtype dt; gcsh_redop op;,     \
      (a->c = c, a->in = in, a->out = out, a->n = n, a->dt = dt, a->op = op),                     \
      (ctx, a->c, a->in, a->out, a->n, a->dt, a->op), NEVER, n * gcsh_dtype_size(dt))              \
    X(comm, alltoall,                                                                              \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, const void *in, void *out, size_t n, gcsh_dtype dt),    \
      gcsh_comm_impl *c; const void *in; void *out; size_t n; gcsh_dtype dt;,                    \
      (a->c = c, a->in = in, a->out = out, a->n = n, a->dt = dt),                                 \
      (ctx, a->c, a->in, a->out, a->n, a->dt), NEVER, n * gcsh_dtype_size(dt))                     \
    X(comm, send,                                                                                  \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, const void *buf, size_t n, gcsh_dtype dt, int peer),    \
      gcsh_comm_impl *c; const void *buf; size_t n; gcsh_dtype dt; int peer;,                    \
      (a->c = c, a->buf = buf, a->n = n, a->dt = dt, a->peer = peer),                             \
      (ctx, a->c, a->buf, a->n, a->dt, a->peer), NEVER, n * gcsh_dtype_size(dt))                   \
    X(comm, recv,                                                                                  \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, void *buf, size_t n, gcsh_dtype dt, int peer),          \
      gcsh_comm_impl *c; void *buf; size_t n; gcsh_dtype dt; int peer;,                          \
      (a->c = c, a->buf = buf, a->n = n, a->dt = dt, a->peer = peer),                             \
      (ctx, a->c, a->buf, a->n, a->dt, a->peer), NEVER, n * gcsh_dtype_size(dt))                   \
    X(win, signal_set,                                                                             \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, int peer, size_t slot,     \
       uint64_t v),                                                                                \
      gcsh_window_impl *w; const gcsh_window_desc *d; int peer; size_t slot; uint64_t v;,        \
      (a->w = w, a->d = d, a->peer = peer, a->slot = slot, a->v = v),                             \
      (ctx, a->w, a->d, a->peer, a->slot, a->v), NEVER, 8)                                         \
    X(win, signal_add,                                                                             \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, int peer, size_t slot,     \
       uint64_t v),                                                                                \
      gcsh_window_impl *w; const gcsh_window_desc *d; int peer; size_t slot; uint64_t v;,        \
      (a->w = w, a->d = d, a->peer = peer, a->slot = slot, a->v = v),                             \
      (ctx, a->w, a->d, a->peer, a->slot, a->v), NEVER, 8)                                         \
    X(win, signal_wait,                                                                            \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, size_t slot, uint64_t v,   \
       enum gcsh_cmp cmp),                                                                         \
      gcsh_window_impl *w; const gcsh_window_desc *d; size_t slot; uint64_t v;                   \
      enum gcsh_cmp cmp;,                                                                          \
      (a->w = w, a->d = d, a->slot = slot, a->v = v, a->cmp = cmp),                               \
      (ctx, a->w, a->d, a->slot, a->v, a->cmp), NEVER, 0)                                          \
    X(win, peer_read,                                                                              \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, int peer, size_t offset,   \
       void *dst, size_t bytes),                                                                   \
      gcsh_window_impl *w; const gcsh_window_desc *d; int peer; size_t offset; void *dst;        \
      size_t bytes;,                                                                               \
      (a->w = w, a->d = d, a->peer = peer, a->offset = offset, a->dst = dst, a->bytes = bytes),   \
      (ctx, a->w, a->d, a->peer, a->offset, a->dst, a->bytes), NEVER, bytes)                       \
    X(kern, reduce, (gcsh_ctx * ctx, const gcsh_kjob *j), gcsh_kjob j;, (a->j = *j),              \
      (ctx, &a->j), NEVER, j->n * gcsh_dtype_size(j->dt))                                          \
    X(kern, empty, (gcsh_ctx * ctx), int unused;, (void)a, (ctx), NEVER, 0)                       \
    X(kern, collective,                                                                            \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, const gcsh_kcoll_args *k), \
      gcsh_window_impl *w; const gcsh_window_desc *d; gcsh_kcoll_args k;,                        \
      (a->w = w, a->d = d, a->k = *k), (ctx, a->w, a->d, &a->k), NEVER,                           \
      k->plan.n * gcsh_dtype_size(k->dt))                                                          \
    X(kern, ll_allreduce,                                                                          \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, const gcsh_kll_args *k),   \
      gcsh_window_impl *w; const gcsh_window_desc *d; gcsh_kll_args k;,                          \
      (a->w = w, a->d = d, a->k = *k), (ctx, a->w, a->d, &a->k), NEVER,                           \
      k->n * gcsh_dtype_size(k->dt))                                                               \
    X(kern, dev_allreduce,                                                                         \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, const gcsh_kdev_args *k),  \
      gcsh_window_impl *w; const gcsh_window_desc *d; gcsh_kdev_args k;,                         \
      (a->w = w, a->d = d, a->k = *k), (ctx, a->w, a->d, &a->k), NEVER,                           \
      k->n * gcsh_dtype_size(k->dt))                                                               \
    X(kern, mc_ld_reduce,                                                                          \
      (gcsh_ctx * ctx, const gcsh_mcast *m, size_t offset, void *out, size_t n, gcsh_dtype dt,     \
       gcsh_redop op),                                                                             \
      const gcsh_mcast *m; size_t offset; void *out; size_t n; gcsh_dtype dt; gcsh_redop op;,    \
      (a->m = m, a->offset = offset, a->out = out, a->n = n, a->dt = dt, a->op = op),             \
      (ctx, a->m, a->offset, a->out, a->n, a->dt, a->op), NEVER, n * gcsh_dtype_size(dt))          \
    X(kern, mc_st,                                                                                 \
      (gcsh_ctx * ctx, const gcsh_mcast *m, size_t offset, const void *src, size_t n,              \
       gcsh_dtype dt),                                                                             \
      const gcsh_mcast *m; size_t offset; const void *src; size_t n; gcsh_dtype dt;,             \
      (a->m = m, a->offset = offset, a->src = src, a->n = n, a->dt = dt),                         \
      (ctx, a->m, a->offset, a->src, a->n, a->dt), NEVER, n * gcsh_dtype_size(dt))                 \
    X(xfer, post, (gcsh_ctx * ctx, gcsh_xfer_impl * x), gcsh_xfer_impl *x;, (a->x = x),           \
      (ctx, a->x), NEVER, 0)                                                                       \
    X(xfer, wait_stream, (gcsh_ctx * ctx, gcsh_xfer_impl * x), gcsh_xfer_impl *x;, (a->x = x),    \
      (ctx, a->x), NEVER, 0)

/* X(table, fn, (params), (unused params), what, why): calls that must reach
 * the host now, refused while capturing. */
#define REFUSED_OPS(X)                                                                             \
    X(mem, alloc, (gcsh_ctx * ctx, size_t bytes, void **out, int *loc), (bytes, out, loc),        \
      "an allocation (tensor.new)", "make the tensors before the capture")                        \
    X(mem, sync, (gcsh_ctx * ctx), (0), "a wait for the GPU (gcsh.sync, a host read)",            \
      "the capture runs nothing to wait for")                                                     \
    X(mem, timer_begin, (gcsh_ctx * ctx, void **tok), (tok), "a timer (gcsh.timer, bench)",        \
      "time the replays instead")                                                                 \
    X(mem, timer_end, (gcsh_ctx * ctx, void *tok, double *s), (tok, s),                            \
      "a timer (gcsh.timer, bench)", "time the replays instead")                                  \
    X(comm, world, (gcsh_ctx * ctx, gcsh_comm_impl * *out), (out), "comm.world()",               \
      "make communicators before the capture")                                                    \
    X(comm, split, (gcsh_ctx * ctx, gcsh_comm_impl * p, int co, int k, gcsh_comm_impl **out),    \
      (p, co, k, out), "c:split()", "make communicators before the capture")                      \
    X(comm, barrier, (gcsh_ctx * ctx, gcsh_comm_impl * c), (c), "c:barrier()",                    \
      "it returns to the host once every rank reached it")                                        \
    X(comm, agree, (gcsh_ctx * ctx, gcsh_comm_impl * c, const void *m, void *all, size_t b),       \
      (c, m, all, b), "a control exchange (c:agree, a window's creation or free)",                \
      "it exchanges host memory now")                                                             \
    X(comm, agree_blocking,                                                                        \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, const void *m, void *all, size_t b), (c, m, all, b),    \
      "a control exchange (a window's registration)", "it exchanges host memory now")             \
    X(win, create_begin,                                                                           \
      (gcsh_ctx * ctx, gcsh_comm_impl * c, const char *k, gcsh_window_desc *d,                     \
       gcsh_window_impl **out),                                                                    \
      (c, k, d, out), "creating a window", "make windows before the capture")                     \
    X(win, create_stage,                                                                           \
      (gcsh_ctx * ctx, gcsh_window_impl * w, gcsh_window_desc * d, int i, char *r, size_t len),    \
      (w, d, i, r, len), "creating a window", "make windows before the capture")                  \
    X(win, destroy, (gcsh_ctx * ctx, gcsh_window_impl * w, gcsh_window_desc * d), (w, d),          \
      "freeing a window", "free it after the capture")                                            \
    X(win, signal_wait_cpu,                                                                        \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, size_t s, uint64_t v,      \
       enum gcsh_cmp c, double t),                                                                 \
      (w, d, s, v, c, t), "a blocking wait (s:wait{cpu=true})",                                   \
      "the host would wait for what the capture does not run")                                    \
    X(win, signal_read,                                                                            \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, size_t s, uint64_t *v),    \
      (w, d, s, v), "a host read of a signal word (s:read)", "the capture runs nothing")          \
    X(win, signal_fetch_add,                                                                       \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, int p, size_t s,           \
       uint64_t v, uint64_t *old),                                                                 \
      (w, d, p, s, v, old), "a fetch-add (s:fetch_add returns the old value to the host)",        \
      "the capture runs nothing; s:add is captured")                                              \
    X(kern, mc_open,                                                                               \
      (gcsh_ctx * ctx, gcsh_window_impl * w, const gcsh_window_desc *d, gcsh_mcast *m), (w, d, m), \
      "w:multicast()", "open the multicast before the capture")                                   \
    X(xfer, prepare, (gcsh_ctx * ctx, const gcsh_xfer_plan *p, gcsh_xfer_impl **out), (p, out),  \
      "making a transfer (w:put, w:get, w:putv)",                                                 \
      "it sets up memory now: make it before the capture and post it inside")                     \
    X(xfer, test,                                                                                  \
      (gcsh_ctx * ctx, gcsh_xfer_impl * x, enum gcsh_xfer_status * s), (x, s),                     \
      "a host query of a transfer (x:test)", "the capture runs nothing")                          \
    X(xfer, wait_cpu, (gcsh_ctx * ctx, gcsh_xfer_impl * x, double t), (x, t),                      \
      "a blocking wait (x:wait{cpu=true})",                                                       \
      "the host would wait for what the capture does not run")                                    \
    X(graph, launch, (gcsh_ctx * ctx, gcsh_graph_impl * g, uint64_t n), (g, n),                   \
      "g:replay() inside a capture", "replay it before or after")

/* ---- the recording ----------------------------------------------------------- */

#define OP_ID(tab, fn, ...) OP_##tab##_##fn,
enum { CAPTURED_OPS(OP_ID) OP_COUNT };

#define OP_NAME(tab, fn, ...) #tab "." #fn,
static const char *const op_names[] = {CAPTURED_OPS(OP_NAME)};

#define ARGS_STRUCT(tab, fn, params, fields, ...) typedef struct { fields } args_##tab##_##fn;
CAPTURED_OPS(ARGS_STRUCT)

#define ARGS_MEMBER(tab, fn, ...) args_##tab##_##fn tab##_##fn;
struct gcsh_graph_call {
    int op;
    union {
        CAPTURED_OPS(ARGS_MEMBER)
    } u;
};

typedef struct deferred {
    enum { DEFER_MEM, DEFER_COMM, DEFER_XFER, DEFER_GRAPH } what;
    void *p;
    int loc;
} deferred;

struct gcsh_graph_capture {
    const gcsh_backend *below;  /* where capturable calls go (graph.h) */
    const gcsh_backend *before; /* ctx->be before the capture */
    int pass_down;              /* the backend captures by itself (it has begin) */
    gcsh_backend_copy tables;   /* below's, with capturing and refusing functions */
    gcsh_graph_rec *rec;
    deferred *defer;
    size_t ndefer, cap_defer;
    int out_of_memory;
    char refusal[1024]; /* as big as ctx->err */
};

static gcsh_graph_call *rec_push(gcsh_ctx *ctx, int op, uint64_t bytes)
{
    gcsh_graph_capture *g = ctx->graph;
    gcsh_graph_rec *r = g->rec;
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        gcsh_graph_call *p = realloc(r->call, cap * sizeof *p);
        if (!p) {
            g->out_of_memory = 1;
            gcsh_set_error(ctx, "gcsh.graph: out of host memory recording call %zu", r->n + 1);
            return NULL;
        }
        r->call = p;
        r->cap = cap;
    }
    r->bytes += bytes;
    gcsh_graph_call *c = &r->call[r->n++];
    c->op = op;
    return c;
}

int gcsh_graph_refuse(gcsh_ctx *ctx, const char *what, const char *why)
{
    gcsh_set_error(ctx, "gcsh.graph: %s cannot be captured (%s); the capture is abandoned", what,
                   why);
    gcsh_graph_capture *g = ctx->graph;
    if (g && !g->refusal[0])
        snprintf(g->refusal, sizeof g->refusal, "%s", ctx->err);
    return -1;
}

/* A captured call: recorded, then passed down where the backend captures. */
#define CAPTURE(tab, fn, params, fields, record, replay, refused, bytes)                           \
    static int cap_##tab##_##fn params                                                             \
    {                                                                                              \
        const char *why_not = refused;                                                             \
        if (why_not)                                                                               \
            return gcsh_graph_refuse(ctx, why_not, "it must reach the host now");                 \
        gcsh_graph_call *call = rec_push(ctx, OP_##tab##_##fn, (uint64_t)(bytes));                \
        if (!call)                                                                                 \
            return -1;                                                                             \
        args_##tab##_##fn *a = &call->u.tab##_##fn;                                                \
        record;                                                                                    \
        if (!ctx->graph->pass_down)                                                                \
            return 0;                                                                              \
        const gcsh_backend *below = ctx->graph->below;                                             \
        return below->tab->fn replay;                                                              \
    }
CAPTURED_OPS(CAPTURE)

#define REFUSE(tab, fn, params, unused, what, why)                                                 \
    static int no_##tab##_##fn params                                                              \
    {                                                                                              \
        return gcsh_graph_refuse(ctx, what, why);                                                  \
    }
#pragma GCC diagnostic push /* a refusal looks at nothing but ctx */
#pragma GCC diagnostic ignored "-Wunused-parameter"
REFUSED_OPS(REFUSE)
#pragma GCC diagnostic pop

/* ---- releases wait for the capture's end ------------------------------------ */

static void defer(gcsh_ctx *ctx, int what, void *p, int loc)
{
    gcsh_graph_capture *g = ctx->graph;
    if (g->ndefer == g->cap_defer) {
        size_t cap = g->cap_defer ? 2 * g->cap_defer : 8;
        deferred *d = realloc(g->defer, cap * sizeof *d);
        if (!d) { /* cannot keep it: leak it rather than break the capture */
            g->out_of_memory = 1;
            return;
        }
        g->defer = d;
        g->cap_defer = cap;
    }
    g->defer[g->ndefer++] = (deferred){.what = what, .p = p, .loc = loc};
}

static void later_mem_release(gcsh_ctx *ctx, void *p, int loc)
{
    defer(ctx, DEFER_MEM, p, loc);
}

static void later_comm_release(gcsh_ctx *ctx, gcsh_comm_impl *c)
{
    defer(ctx, DEFER_COMM, c, 0);
}

static void later_xfer_release(gcsh_ctx *ctx, gcsh_xfer_impl *x)
{
    defer(ctx, DEFER_XFER, x, 0);
}

/* An earlier graph collected meanwhile (cudaGraphExecDestroy inside a
 * capture is not a call to risk). */
static void later_graph_release(gcsh_ctx *ctx, gcsh_graph_impl *gi)
{
    defer(ctx, DEFER_GRAPH, gi, 0);
}

static void run_deferred(gcsh_ctx *ctx, gcsh_graph_capture *g)
{
    for (size_t i = 0; i < g->ndefer; i++) {
        deferred *d = &g->defer[i];
        if (d->what == DEFER_MEM)
            g->below->mem->release(ctx, d->p, d->loc);
        else if (d->what == DEFER_COMM)
            g->below->comm->release(ctx, d->p);
        else if (d->what == DEFER_GRAPH)
            g->below->graph->release(ctx, d->p);
        else
            g->below->xfer->release(ctx, d->p);
    }
    free(g->defer);
    g->defer = NULL;
    g->ndefer = g->cap_defer = 0;
}

/* ---- the table ----------------------------------------------------------------- */

#define SET_CAPTURED(tab, fn, ...)                                                                 \
    if (b->tab && b->tab->fn)                                                                      \
        g->tables.tab.fn = cap_##tab##_##fn;
#define SET_REFUSED(tab, fn, ...)                                                                  \
    if (b->tab && b->tab->fn)                                                                      \
        g->tables.tab.fn = no_##tab##_##fn;

static void make_table(gcsh_graph_capture *g, const gcsh_backend *b)
{
    gcsh_backend_copy *t = &g->tables;
    gcsh_backend_copy_of(t, b);
    CAPTURED_OPS(SET_CAPTURED)
    REFUSED_OPS(SET_REFUSED)
    t->mem.release = later_mem_release;
    t->comm.release = later_comm_release;
    if (b->xfer)
        t->xfer.release = later_xfer_release;
    t->graph.release = later_graph_release;
}

/* ---- capture ------------------------------------------------------------------- */

int gcsh_graph_capturing(const gcsh_ctx *ctx)
{
    return ctx->graph != NULL;
}

const char *gcsh_graph_refusal(const gcsh_ctx *ctx)
{
    return ctx->graph ? ctx->graph->refusal : "";
}

int gcsh_graph_capture_begin(gcsh_ctx *ctx, const gcsh_backend *below)
{
    if (ctx->graph)
        return gcsh_set_error(ctx, "gcsh.graph: a capture is already running on this rank "
                                   "(a graph cannot be captured inside another)");
    if (!below->graph)
        return gcsh_set_error(ctx, "gcsh.graph: the %s backend has no graphs", below->name);
    gcsh_graph_capture *g = calloc(1, sizeof *g);
    gcsh_graph_rec *rec = calloc(1, sizeof *rec);
    if (!g || !rec) {
        free(g);
        free(rec);
        return gcsh_set_error(ctx, "gcsh.graph: out of host memory");
    }
    g->below = below;
    g->before = ctx->be;
    g->rec = rec;
    g->pass_down = below->graph->pass_down;
    make_table(g, below);
    if (below->graph->begin(ctx) != 0) {
        gcsh_graph_rec_free(rec);
        free(g);
        return -1;
    }
    ctx->graph = g;
    ctx->be = &g->tables.be;
    return 0;
}

/* Restores the rank's table and runs the releases that waited. */
static gcsh_graph_capture *finish(gcsh_ctx *ctx)
{
    gcsh_graph_capture *g = ctx->graph;
    ctx->be = g->before;
    ctx->graph = NULL;
    run_deferred(ctx, g);
    return g;
}

void gcsh_graph_capture_abandon(gcsh_ctx *ctx)
{
    if (!ctx->graph)
        return;
    const gcsh_backend *below = ctx->graph->below;
    below->graph->abandon(ctx);
    gcsh_graph_capture *g = finish(ctx);
    gcsh_graph_rec_free(g->rec);
    free(g);
}

int gcsh_graph_capture_end(gcsh_ctx *ctx, gcsh_graph_impl **out, const gcsh_graph_rec **rec_out)
{
    gcsh_graph_capture *g = ctx->graph;
    if (g->refusal[0] || g->out_of_memory) {
        char why[sizeof g->refusal];
        snprintf(why, sizeof why, "%s", g->refusal[0] ? g->refusal : ctx->err);
        gcsh_graph_capture_abandon(ctx);
        return gcsh_set_error(ctx, "%s", why);
    }
    const gcsh_backend *below = g->below;
    gcsh_graph_rec *rec = g->rec;
    g->rec = NULL;
    int rc = below->graph->end(ctx, rec, out); /* takes rec, also on failure */
    g = finish(ctx);
    free(g);
    if (rc == 0)
        *rec_out = rec;
    return rc;
}

void gcsh_graph_note_check(gcsh_ctx *ctx, void *cc, gcsh_comm_impl *impl)
{
    gcsh_graph_capture *g = ctx->graph;
    gcsh_graph_rec *r = g->rec;
    for (size_t i = 0; i < r->ncomm; i++)
        if (r->comm[i].check == cc) {
            r->comm[i].collectives++;
            return;
        }
    if (r->ncomm == r->cap_comm) {
        size_t cap = r->cap_comm ? 2 * r->cap_comm : 4;
        gcsh_graph_comm *p = realloc(r->comm, cap * sizeof *p);
        if (!p) {
            g->out_of_memory = 1;
            gcsh_set_error(ctx, "gcsh.graph: out of host memory");
            return;
        }
        r->comm = p;
        r->cap_comm = cap;
    }
    r->comm[r->ncomm++] = (gcsh_graph_comm){.check = cc, .impl = impl, .collectives = 1};
}

/* ---- replay ----------------------------------------------------------------------- */

#define RUN(tab, fn, params, fields, record, replay, ...)                                          \
    case OP_##tab##_##fn: {                                                                        \
        const args_##tab##_##fn *a = &c->u.tab##_##fn;                                             \
        (void)a; /* kern.empty has no arguments */                                                 \
        return be->tab->fn replay;                                                                 \
    }

static int run_call(gcsh_ctx *ctx, const gcsh_graph_call *c, const gcsh_backend *be)
{
    switch (c->op) {
        CAPTURED_OPS(RUN)
    }
    return gcsh_set_error(ctx, "gcsh.graph: recorded call of unknown kind %d", c->op);
}

int gcsh_graph_rec_run(gcsh_ctx *ctx, const gcsh_graph_rec *rec, const gcsh_backend *be)
{
    for (size_t i = 0; i < rec->n; i++) {
        if (atomic_load(&ctx->interrupt))
            return gcsh_set_error(ctx, "interrupted");
        if (run_call(ctx, &rec->call[i], be) != 0)
            return -1;
    }
    return 0;
}

char *gcsh_graph_rec_describe(const gcsh_graph_rec *rec, char *buf, size_t len)
{
    size_t count[OP_COUNT] = {0};
    int order[OP_COUNT], nordered = 0;
    for (size_t i = 0; i < rec->n; i++)
        if (count[rec->call[i].op]++ == 0)
            order[nordered++] = rec->call[i].op;
    int used = snprintf(buf, len, "%zu call%s", rec->n, rec->n == 1 ? "" : "s");
    for (int k = 0; k < nordered && used >= 0 && (size_t)used < len; k++) {
        size_t c = count[order[k]];
        char times[32] = "";
        if (c > 1)
            snprintf(times, sizeof times, " x%zu", c);
        used += snprintf(buf + used, len - (size_t)used, "%s%s%s", k ? ", " : ": ",
                         op_names[order[k]], times);
    }
    return buf;
}

void gcsh_graph_rec_free(gcsh_graph_rec *rec)
{
    if (!rec)
        return;
    free(rec->call);
    free(rec->comm);
    free(rec);
}
