/* The capture layer (graph.h): a copy of the backend's table whose calls are
 * recorded, passed down while the backend captures, or refused, as the
 * capture column of backend.h's one list of operations says: RECORD rows
 * keep their arguments in a recorded call (and its facts say the bytes it
 * moves, a copy that must reach the host, arguments behind a pointer to
 * copy), REFUSE rows are refused in the words of REFUSAL_<table>_<fn> below,
 * DEFER rows (releases) are kept as calls too and run when the capture
 * ends, SHARE rows (rank, can_reduce, the window kinds' facts, the trace
 * marks) are called as they are. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gcsh.h"
#include "core/graph.h"

/* What a refused call is, and why it cannot be captured. */
#define REFUSAL_mem_alloc "an allocation (tensor.new)", "make the tensors before the capture"
#define REFUSAL_mem_sync                                                                           \
    "a wait for the GPU (gcsh.sync, a host read)", "the capture runs nothing to wait for"
#define REFUSAL_mem_timer_begin "a timer (gcsh.timer, bench)", "time the replays instead"
#define REFUSAL_mem_timer_end "a timer (gcsh.timer, bench)", "time the replays instead"
#define REFUSAL_comm_world "comm.world()", "make communicators before the capture"
#define REFUSAL_comm_split "c:split()", "make communicators before the capture"
#define REFUSAL_comm_barrier "c:barrier()", "it returns to the host once every rank reached it"
#define REFUSAL_comm_agree                                                                         \
    "a control exchange (c:agree, a window's creation or free)", "it exchanges host memory now"
#define REFUSAL_comm_agree_blocking                                                                \
    "a control exchange (a window's registration)", "it exchanges host memory now"
#define REFUSAL_win_create_begin "creating a window", "make windows before the capture"
#define REFUSAL_win_create_stage "creating a window", "make windows before the capture"
#define REFUSAL_win_destroy "freeing a window", "free it after the capture"
#define REFUSAL_win_signal_wait_cpu                                                                \
    "a blocking wait (s:wait{cpu=true})", "the host would wait for what the capture does not run"
#define REFUSAL_win_signal_read "a host read of a signal word (s:read)", "the capture runs nothing"
#define REFUSAL_win_signal_fetch_add                                                               \
    "a fetch-add (s:fetch_add returns the old value to the host)",                                 \
        "the capture runs nothing; s:add is captured"
#define REFUSAL_win_elem_wait                                                                      \
    "a wait on a window element (t:wait)", "the host would wait for what the capture does not run"
#define REFUSAL_win_net                                                                            \
    "a put, get or signal to another node's rank (the network path)",                              \
        "the network path runs on the host, now: make it outside the capture"
#define REFUSAL_kern_mc_open "w:multicast()", "open the multicast before the capture"
#define REFUSAL_xfer_prepare                                                                       \
    "making a transfer (w:put, w:get, w:putv)",                                                    \
        "it sets up memory now: make it before the capture and post it inside"
#define REFUSAL_xfer_test "a host query of a transfer (x:test)", "the capture runs nothing"
#define REFUSAL_xfer_wait_cpu                                                                      \
    "a blocking wait (x:wait{cpu=true})", "the host would wait for what the capture does not run"
#define REFUSAL_xfer_quiet                                                                         \
    "c:quiet() (the host waits for the rank's transfers)", "w:fence() is captured; quiet after"
#define REFUSAL_graph_launch "g:replay() inside a capture", "replay it before or after"

/* ---- the recording ----------------------------------------------------------- */

/* The calls a graph keeps: RECORD and DEFER rows, each with a struct of its
 * arguments (its parameters as fields). */
#define ARGS(tab, fn, ret, params, args, trace, cat, flags, capture, ...)                          \
    ARGS_##capture(tab, fn, params)
#define ARGS_RECORD(tab, fn, params) ARGS_DEFER(tab, fn, params)
#define ARGS_DEFER(tab, fn, params) typedef struct { GCSH_PP_EACH(FIELD, params) } args_##tab##_##fn;
#define ARGS_REFUSE(...)
#define ARGS_SHARE(...)
#define FIELD(param) param;
GCSH_BACKEND_OPS(ARGS)

#define OP_ID(tab, fn, ret, params, args, trace, cat, flags, capture, ...) OP_ID_##capture(tab, fn)
#define OP_ID_RECORD(tab, fn) OP_##tab##_##fn,
#define OP_ID_DEFER(tab, fn) OP_##tab##_##fn,
#define OP_ID_REFUSE(tab, fn)
#define OP_ID_SHARE(tab, fn)
enum { GCSH_BACKEND_OPS(OP_ID) OP_COUNT };

#define OP_NAME(tab, fn, ret, params, args, trace, cat, flags, capture, ...)                       \
    OP_NAME_##capture(tab, fn)
#define OP_NAME_RECORD(tab, fn) #tab "." #fn,
#define OP_NAME_DEFER(tab, fn) #tab "." #fn,
#define OP_NAME_REFUSE(tab, fn)
#define OP_NAME_SHARE(tab, fn)
static const char *const op_names[] = {GCSH_BACKEND_OPS(OP_NAME)};

#define MEMBER(tab, fn, ret, params, args, trace, cat, flags, capture, ...)                        \
    MEMBER_##capture(tab, fn)
#define MEMBER_RECORD(tab, fn) args_##tab##_##fn tab##_##fn;
#define MEMBER_DEFER(tab, fn) args_##tab##_##fn tab##_##fn;
#define MEMBER_REFUSE(tab, fn)
#define MEMBER_SHARE(tab, fn)
struct gcsh_graph_call {
    int op;
    void *kept; /* the copy of what a KEPT pointer argument points at, or NULL */
    union {
        GCSH_BACKEND_OPS(MEMBER)
    } u;
};

struct gcsh_graph_capture {
    const gcsh_backend *below;  /* where capturable calls go (graph.h) */
    const gcsh_backend *before; /* ctx->be before the capture */
    int pass_down;              /* the backend captures by itself (it has begin) */
    gcsh_backend_copy tables;   /* below's, with capturing and refusing functions */
    gcsh_graph_rec *rec;
    gcsh_graph_call *defer;     /* releases, run when the capture ends */
    size_t ndefer, cap_defer;
    int out_of_memory;
    char refusal[1024]; /* as big as ctx->err */
};

/* One more call in *calls (n of cap), or NULL when out of memory. */
static gcsh_graph_call *push(gcsh_graph_call **calls, size_t *n, size_t *cap, int op)
{
    if (*n == *cap) {
        size_t more = *cap ? 2 * *cap : 16;
        gcsh_graph_call *p = realloc(*calls, more * sizeof *p);
        if (!p)
            return NULL;
        *calls = p;
        *cap = more;
    }
    gcsh_graph_call *c = &(*calls)[(*n)++];
    c->op = op;
    c->kept = NULL;
    return c;
}

static gcsh_graph_call *rec_push(gcsh_ctx *ctx, int op)
{
    gcsh_graph_capture *g = ctx->graph;
    gcsh_graph_rec *r = g->rec;
    gcsh_graph_call *c = push(&r->call, &r->n, &r->cap, op);
    if (!c) {
        g->out_of_memory = 1;
        gcsh_set_error(ctx, "gcsh.graph: out of host memory recording call %zu", r->n + 1);
    }
    return c;
}

/* A copy of the arguments a pointer points at (a kernel's job), kept with
 * the call: the caller's are gone when the graph replays. */
static const void *keep(gcsh_ctx *ctx, gcsh_graph_call *call, const void *p, size_t bytes)
{
    call->kept = malloc(bytes);
    if (!call->kept) {
        ctx->graph->out_of_memory = 1;
        gcsh_set_error(ctx, "gcsh.graph: out of host memory");
        return NULL;
    }
    return memcpy(call->kept, p, bytes);
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

/* A recorded call's facts (backend.h): what it moves, a copy between host
 * and device memory (a host read or write of a device tensor) that must
 * reach the host now, arguments behind a pointer to keep. */
#define RECORD_FACT(fact) RECORD_##fact;
#define RECORD_BYTES(b) ctx->graph->rec->bytes += (uint64_t)(b)
#define RECORD_ELEMS(n, dt) RECORD_BYTES((uint64_t)(n) * gcsh_dtype_size(dt))
#define RECORD_SIGNAL(d, peer, slot, v) RECORD_BYTES(8)
#define RECORD_LOCS(dst, src)                                                                      \
    if ((dst) != ctx->loc || (src) != ctx->loc)                                                    \
    return gcsh_graph_refuse(ctx, "a copy between host and device memory (a host read or write "  \
                                  "of a device tensor)", "it must reach the host now")
#define RECORD_KEPT(p)                                                                             \
    if (!(kept_args->p = keep(ctx, kept_call, p, sizeof *(p))))                                    \
    return -1
#define RECORD_NOTHING
#define RECORD_REDOP(op)
#define RECORD_PEER(rank)
#define RECORD_OBJ(id)
#define RECORD_PLAN(p)
#define RECORD_COUNT(n)
#define RECORD_WAIT(d, slot, v, cmp)
#define RECORD_SEEN(w, d, slot)
#define RECORD_REGION(first)
#define RECORD_XFER_NEW(plan, out)
#define RECORD_XFER_POST(x)
#define RECORD_XFER_WAIT(x)
#define RECORD_XFER_GONE(x)

#define SAVE(arg) kept_args->arg = arg;

/* A captured call: recorded, then passed down where the backend captures. */
#define CAPTURE(tab, fn, ret, params, args, trace, cat, flags, capture, order, facts)              \
    CAPTURE_##capture(tab, fn, ret, params, args, facts)
#define CAPTURE_RECORD(tab, fn, ret, params, args, facts)                                          \
    static ret cap_##tab##_##fn params                                                             \
    {                                                                                              \
        gcsh_graph_call *kept_call = rec_push(ctx, OP_##tab##_##fn);                               \
        if (!kept_call)                                                                            \
            return -1;                                                                             \
        args_##tab##_##fn *kept_args = &kept_call->u.tab##_##fn;                                   \
        GCSH_PP_EACH(SAVE, args)                                                                   \
        GCSH_PP_EACH(RECORD_FACT, facts)                                                           \
        if (!ctx->graph->pass_down)                                                                \
            return 0;                                                                              \
        return ctx->graph->below->tab->fn args;                                                    \
    }
/* A release: kept until the capture ends (a free inside a CUDA capture
 * breaks it); when there is no room to keep it, it is leaked rather than
 * breaking the capture. */
#define CAPTURE_DEFER(tab, fn, ret, params, args, facts)                                           \
    static ret later_##tab##_##fn params                                                           \
    {                                                                                              \
        gcsh_graph_capture *capture = ctx->graph;                                                  \
        gcsh_graph_call *kept_call =                                                               \
            push(&capture->defer, &capture->ndefer, &capture->cap_defer, OP_##tab##_##fn);         \
        if (!kept_call) {                                                                          \
            capture->out_of_memory = 1;                                                            \
            return;                                                                                \
        }                                                                                          \
        args_##tab##_##fn *kept_args = &kept_call->u.tab##_##fn;                                   \
        GCSH_PP_EACH(SAVE, args)                                                                   \
    }
#define CAPTURE_REFUSE(tab, fn, ret, params, args, facts)                                          \
    static ret no_##tab##_##fn params                                                              \
    {                                                                                              \
        return gcsh_graph_refuse(ctx, REFUSAL_##tab##_##fn);                                       \
    }
#define CAPTURE_SHARE(...)
#pragma GCC diagnostic push /* a refusal looks at nothing but ctx */
#pragma GCC diagnostic ignored "-Wunused-parameter"
GCSH_BACKEND_OPS(CAPTURE)
#pragma GCC diagnostic pop

/* Runs one kept call through be's tables, in this rank's ctx. */
#define RUN(tab, fn, ret, params, args, trace, cat, flags, capture, ...)                           \
    RUN_##capture(tab, fn, ret, args)
#define RUN_RECORD(tab, fn, ret, args) RUN_DEFER(tab, fn, ret, args)
#define RUN_DEFER(tab, fn, ret, args)                                                              \
    case OP_##tab##_##fn: {                                                                        \
        args_##tab##_##fn a = c->u.tab##_##fn;                                                     \
        a.ctx = ctx;                                                                               \
        RUN_##ret(be->tab->fn(GCSH_PP_LIST(FROM_A, args)))                                         \
    }
#define RUN_REFUSE(...)
#define RUN_SHARE(...)
#define RUN_int(call) return call;
#define RUN_void(call)                                                                             \
    call;                                                                                          \
    return 0;
#define FROM_A(arg) a.arg

static int run_call(gcsh_ctx *ctx, const gcsh_graph_call *c, const gcsh_backend *be)
{
    switch (c->op) {
        GCSH_BACKEND_OPS(RUN)
    }
    return gcsh_set_error(ctx, "gcsh.graph: recorded call of unknown kind %d", c->op);
}

static void run_deferred(gcsh_ctx *ctx, gcsh_graph_capture *g)
{
    for (size_t i = 0; i < g->ndefer; i++)
        run_call(ctx, &g->defer[i], g->below);
    free(g->defer);
    g->defer = NULL;
    g->ndefer = g->cap_defer = 0;
}

/* ---- the table ----------------------------------------------------------------- */

#define SET(tab, fn, ret, params, args, trace, cat, flags, capture, ...) SET_##capture(tab, fn)
#define SET_RECORD(tab, fn) SET_TO(tab, fn, cap_##tab##_##fn)
#define SET_DEFER(tab, fn) SET_TO(tab, fn, later_##tab##_##fn)
#define SET_REFUSE(tab, fn) SET_TO(tab, fn, no_##tab##_##fn)
#define SET_SHARE(tab, fn)
#define SET_TO(tab, fn, f)                                                                         \
    if (b->tab && b->tab->fn)                                                                      \
        g->tables.tab.fn = f;

static void make_table(gcsh_graph_capture *g, const gcsh_backend *b)
{
    gcsh_backend_copy_of(&g->tables, b);
    GCSH_BACKEND_OPS(SET)
}

/* ---- capture ------------------------------------------------------------------- */

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

void gcsh_graph_note_p2p(gcsh_ctx *ctx, void *cc, int send, int peer, const void *fp,
                         size_t fp_len)
{
    gcsh_graph_capture *g = ctx->graph;
    gcsh_graph_rec *r = g->rec;
    void *copy = malloc(fp_len);
    if (!copy) {
        g->out_of_memory = 1;
        gcsh_set_error(ctx, "gcsh.graph: out of host memory");
        return;
    }
    memcpy(copy, fp, fp_len);
    if (r->np2p == r->cap_p2p) {
        size_t cap = r->cap_p2p ? 2 * r->cap_p2p : 4;
        gcsh_graph_p2p *p = realloc(r->p2p, cap * sizeof *p);
        if (!p) {
            free(copy);
            g->out_of_memory = 1;
            gcsh_set_error(ctx, "gcsh.graph: out of host memory");
            return;
        }
        r->p2p = p;
        r->cap_p2p = cap;
    }
    r->p2p[r->np2p++] = (gcsh_graph_p2p){.check = cc, .send = send, .peer = peer, .fp = copy};
}

/* ---- replay ----------------------------------------------------------------------- */

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

int gcsh_graph_rec_ready(gcsh_ctx *ctx, const gcsh_graph_rec *rec, const gcsh_backend *be)
{
    for (size_t i = 0; i < rec->n; i++) {
        if (rec->call[i].op != OP_persist_ring)
            continue;
        gcsh_persist_state s;
        memset(&s, 0, sizeof s);
        be->persist->state(rec->call[i].u.persist_ring.p, &s);
        if (!s.running)
            return gcsh_set_error(ctx, "g:replay(): the graph rings a persistent all-reduce that "
                                       "is stopped (%s); a replay would run none of its calls: "
                                       "start another and capture again", s.why);
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
    for (size_t i = 0; i < rec->n; i++)
        free(rec->call[i].kept);
    free(rec->call);
    free(rec->comm);
    for (size_t i = 0; i < rec->np2p; i++)
        free(rec->p2p[i].fp);
    free(rec->p2p);
    free(rec);
}
