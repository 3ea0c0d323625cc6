/* The GPU-generic code of src/gpu/ (windows across kinds, signals, the host's
 * polls, w:multicast()'s decision, graphs) over a made-up device runtime on
 * host memory: what it asks of the device, in which order, with which
 * addresses, and what it makes of the answers.  No GPU and no CUDA needed:
 * this is what a second GPU backend gets for free, checked on any machine. */
#include <stdlib.h>
#include <string.h>

#include "core/graph.h"
#include "gpu/gpu_graph.h"
#include "gpu/gpu_mcast.h"
#include "gpu/gpu_window.h"
#include "gpu/gpu_xfer.h"
#include "unit.h"

/* ---- the made-up device: host memory, and a log of what was asked ---- */

struct gcsh_gpu_dev {
    char log[512]; /* "trim wait mc_close destroy(alpha) ..." */
    int peeks;     /* peek calls; at peeks == release_at, *release_word = release_value */
    int release_at;
    uint64_t *release_word;
    uint64_t release_value;
    uint64_t *last_store; /* signal_store's word */
    int last_loc;         /* signal_fetch_add's loc */
    int mc_ok, mc_open_fails, mc_allowed_calls;
    int launch_fails_at, launches, enqueued_null;
    int graph_freed_with_dev;
    int xfer_prepare_fails, queries, done_at, error_at, cancels;
};

struct gcsh_comm_impl {
    int rank, size, aborted;
    const void *other_verdict; /* what rank 1 says in an agree (size 2) */
};

struct gcsh_gpu_win {
    int held;
};

struct gcsh_gpu_graph {
    int id;
};

struct gcsh_gpu_xfer {
    int posts;
};

static struct gcsh_gpu_dev dev;
static int fail_enter;

static void say(const char *what)
{
    size_t used = strlen(dev.log);
    snprintf(dev.log + used, sizeof dev.log - used, "%s%s", used ? " " : "", what);
}

static gcsh_gpu_dev *enter(gcsh_ctx *ctx)
{
    if (fail_enter) {
        gcsh_set_error(ctx, "no device");
        return NULL;
    }
    return &dev;
}

/* The entry that makes no wait the stream owes: it works where enter fails
 * for such a wait (an invalidated capture), not where there is no device
 * at all (fail_enter_device). */
static int fail_enter_device;
static gcsh_gpu_dev *enter_device(gcsh_ctx *ctx)
{
    if (fail_enter_device) {
        gcsh_set_error(ctx, "no device");
        return NULL;
    }
    return &dev;
}

static int location(const gcsh_gpu_dev *st)
{
    (void)st;
    return 7;
}

static int mem_total(gcsh_ctx *ctx, gcsh_gpu_dev *st, size_t *total)
{
    (void)ctx, (void)st;
    *total = 80u << 20;
    return 0;
}

static void pool_trim(gcsh_gpu_dev *st)
{
    (void)st;
    say("trim");
}

static void free_ordered(gcsh_gpu_dev *st, void *p)
{
    (void)st;
    say("free_ordered");
    free(p);
}

static int wait_stream(gcsh_ctx *ctx, gcsh_gpu_dev *st)
{
    (void)ctx, (void)st;
    say("wait");
    return 0;
}

static int peek(gcsh_ctx *ctx, gcsh_gpu_dev *st, const void *p, size_t bytes, uint64_t *bits)
{
    (void)ctx;
    if (++st->peeks == st->release_at)
        *st->release_word = st->release_value;
    *bits = 0;
    memcpy(bits, p, bytes);
    return 0;
}

static int copy(gcsh_ctx *ctx, void *dst, int dst_loc, const void *src, int src_loc, size_t n)
{
    (void)ctx, (void)dst_loc, (void)src_loc;
    memcpy(dst, src, n);
    return 0;
}

static const gcsh_mem_ops mem = {.copy = copy};

static int signal_store(gcsh_ctx *ctx, gcsh_gpu_dev *st, uint64_t *word, uint64_t v, int add)
{
    (void)ctx;
    st->last_store = word;
    *word = add ? *word + v : v;
    return 0;
}

static int signal_fetch_add(gcsh_ctx *ctx, gcsh_gpu_dev *st, uint64_t *word, uint64_t v,
                            int loc, uint64_t *old)
{
    (void)ctx;
    st->last_loc = loc;
    *old = *word;
    *word += v;
    return 0;
}

static int signal_wait(gcsh_ctx *ctx, gcsh_gpu_dev *st, uint64_t *word, uint64_t v,
                       enum gcsh_cmp cmp)
{
    (void)ctx, (void)v, (void)cmp;
    st->last_store = word;
    return 0;
}

static int peer_copy(gcsh_ctx *ctx, gcsh_gpu_dev *st, void *dst, void *table_dev, int peer,
                     size_t offset, size_t bytes)
{
    (void)ctx, (void)st;
    memcpy(dst, (char *)((void **)table_dev)[peer] + offset, bytes);
    return 0;
}

/* agree: rank 0's own entry, and on two ranks rank 1's canned one. */
static int agree(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *mine, void *all, size_t bytes)
{
    (void)ctx;
    memcpy(all, mine, bytes);
    if (c->size == 2)
        memcpy((char *)all + bytes, c->other_verdict, bytes);
    return 0;
}

static const gcsh_comm_ops comm = {.agree = agree};

static void comm_place(const gcsh_comm_impl *c, int *rank, int *size)
{
    *rank = c->rank;
    *size = c->size;
}

static int comm_aborted(const gcsh_comm_impl *c)
{
    return c->aborted;
}

static gcsh_gpu_win *win_new(void)
{
    return calloc(1, sizeof(gcsh_gpu_win));
}

static void win_free(gcsh_gpu_win *own)
{
    say("win_free");
    free(own);
}

static int mc_allowed(gcsh_gpu_dev *st, const gcsh_window_impl *w, char *why, size_t len)
{
    (void)w;
    st->mc_allowed_calls++;
    if (!st->mc_ok)
        snprintf(why, len, "not opted in");
    return st->mc_ok;
}

static int mc_open(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_window_impl *w, gcsh_mcast *out)
{
    (void)w;
    if (st->mc_open_fails)
        return gcsh_set_error(ctx, "no multimem here");
    out->base = (void *)0x1000;
    snprintf(out->why, sizeof out->why, "opened");
    return 0;
}

static int mc_close(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_window_impl *w)
{
    (void)ctx, (void)st, (void)w;
    say("mc_close");
    return 0;
}

static int capture_begin(gcsh_ctx *ctx, gcsh_gpu_dev *st)
{
    (void)ctx, (void)st;
    say("capture_begin");
    return 0;
}

static int capture_end(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_gpu_graph **out)
{
    (void)st;
    if (strstr(dev.log, "refuse"))
        return gcsh_set_error(ctx, "instantiate failed");
    *out = calloc(1, sizeof **out);
    return 0;
}

static void capture_abandon(gcsh_gpu_dev *st)
{
    (void)st;
    say("abandon");
}

static int graph_launch(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_gpu_graph *g)
{
    (void)g;
    if (++st->launches == st->launch_fails_at)
        return gcsh_set_error(ctx, "launch failed");
    return 0;
}

static void graph_free(gcsh_gpu_dev *st, gcsh_gpu_graph *g)
{
    dev.graph_freed_with_dev = st != NULL;
    free(g);
}

static int enqueued(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_comm_impl *c)
{
    (void)ctx;
    if (!c)
        st->enqueued_null++;
    return 0;
}

static int xfer_prepare(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_xfer_impl *x)
{
    x->own = calloc(1, sizeof *x->own);
    if (st->xfer_prepare_fails)
        return gcsh_set_error(ctx, "no event");
    return 0;
}

static void xfer_free(gcsh_gpu_dev *st, gcsh_gpu_xfer *own)
{
    (void)st;
    say("xfer_free");
    free(own);
}

static int xfer_post(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_xfer_impl *x)
{
    (void)ctx, (void)st;
    x->own->posts++;
    return 0;
}

/* Pending until the done_at-th look (or an error at the error_at-th). */
static void xfer_query(gcsh_ctx *ctx, gcsh_xfer_impl *x, enum gcsh_xfer_status *status)
{
    (void)x;
    int n = ++dev.queries;
    *status = n == dev.done_at    ? GCSH_XFER_DONE
              : n == dev.error_at ? GCSH_XFER_ERROR
                                  : GCSH_XFER_PENDING;
    if (*status == GCSH_XFER_ERROR)
        gcsh_set_error(ctx, "the copy failed");
}

static int xfer_wait_stream(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_xfer_impl *x)
{
    (void)ctx, (void)st, (void)x;
    say("wait_stream");
    return 0;
}

static int fence(gcsh_ctx *ctx, gcsh_gpu_dev *st)
{
    (void)ctx, (void)st;
    say("fence");
    return 0;
}

static void cancel_waits(gcsh_gpu_dev *st)
{
    st->cancels++;
}

/* ---- two kinds: alpha, the preferred, and beta ---- */

static const char *const alpha_names[] = {"one", "two"};
static const char *const beta_names[] = {"only"};
static const gcsh_window_plan alpha_plan = {2, alpha_names}, beta_plan = {1, beta_names};

static int usable(gcsh_gpu_dev *st, const gcsh_comm_impl *c, char *why, size_t len)
{
    (void)c;
    snprintf(why, len, "asked with %s", st == &dev ? "the device" : "something else");
    return -1;
}

static int alpha_gran(gcsh_ctx *ctx, gcsh_gpu_dev *st, size_t *gran)
{
    (void)ctx, (void)st;
    *gran = 4096;
    return 0;
}

static int beta_gran(gcsh_ctx *ctx, gcsh_gpu_dev *st, size_t *gran)
{
    (void)ctx, (void)st;
    *gran = 2u << 20;
    return 0;
}

static int stage(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_window_impl *w, gcsh_window_desc *d,
                 int i, char *report, size_t len)
{
    (void)ctx, (void)st, (void)d;
    snprintf(report, len, "%s stage %d", w->kind->name, i);
    return 0;
}

static void undo(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_window_impl *w)
{
    (void)ctx, (void)st, (void)w;
    say("undo");
}

static int destroy(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_window_impl *w)
{
    (void)ctx, (void)st;
    say(w->kind->name);
    return 0;
}

static const gpu_win_kind alpha = {"alpha", &alpha_plan, usable, alpha_gran, stage, undo,
                                   destroy, 1};
static const gpu_win_kind beta = {"beta", &beta_plan, usable, beta_gran, stage, undo, destroy, 0};
static const gpu_win_kind *const kinds[] = {&alpha, &beta, NULL};

static const gcsh_gpu_rt rt = {
    .enter = enter, .enter_device = enter_device, .location = location, .mem_total = mem_total,
    .pool_trim = pool_trim,
    .free_ordered = free_ordered, .wait = wait_stream, .peek = peek, .mem = &mem,
    .signal_store = signal_store, .signal_fetch_add = signal_fetch_add,
    .signal_wait = signal_wait, .peer_copy = peer_copy, .comm = &comm,
    .comm_place = comm_place, .comm_aborted = comm_aborted, .kinds = kinds,
    .win_new = win_new, .win_free = win_free, .mc_allowed = mc_allowed, .mc_open = mc_open,
    .mc_close = mc_close, .capture_begin = capture_begin, .capture_end = capture_end,
    .capture_abandon = capture_abandon, .graph_launch = graph_launch, .graph_free = graph_free,
    .enqueued = enqueued, .xfer_prepare = xfer_prepare, .xfer_free = xfer_free,
    .xfer_post = xfer_post, .xfer_query = xfer_query, .xfer_wait_stream = xfer_wait_stream,
    .fence = fence, .cancel_waits = cancel_waits,
};

static const gcsh_window_ops win = {.kinds = "alpha beta", GCSH_GPU_WINDOW_OPS};
static const gcsh_graph_ops graph = {.pass_down = 1, GCSH_GPU_GRAPH_OPS};
static const gcsh_xfer_ops xfer = {.engines = "ce sm", GCSH_GPU_XFER_OPS};

/* ---- the tests ---- */

static void reset(gcsh_ctx *ctx)
{
    memset(&dev, 0, sizeof dev);
    ctx->err[0] = 0;
    atomic_store(&ctx->interrupt, 0);
    fail_enter = 0;
    fail_enter_device = 0;
}

static void test_kinds(gcsh_ctx *ctx)
{
    reset(ctx);
    CHECK(gcsh_gpu() == &rt, "the runtime in use is the one named");
    CHECK(win.create_plan("beta") == &beta_plan, "beta's plan");
    CHECK(win.create_plan("alpha") == &alpha_plan, "alpha's plan");
    size_t g = 0;
    CHECK(win.granularity(ctx, "beta", &g) == 0 && g == (2u << 20), "beta's granularity: %zu", g);
    CHECK(win.granularity(ctx, "alpha", &g) == 0 && g == 4096, "alpha's granularity: %zu", g);
    CHECK(win.max_bytes(ctx, "beta", &g) == 0 && g == (80u << 20), "the device's memory: %zu", g);
    char why[64] = "";
    gcsh_comm_impl c = {0, 1, 0, NULL};
    CHECK(win.kind_usable(ctx, &c, "beta", why, sizeof why) == -1 &&
              strcmp(why, "asked with the device") == 0,
          "usable asks the kind with the rank's state: %s", why);
    fail_enter = 1;
    CHECK(win.granularity(ctx, "alpha", &g) == -1 && strcmp(ctx->err, "no device") == 0,
          "no device: the entry's error: %s", ctx->err);
}

static void test_create_destroy(gcsh_ctx *ctx)
{
    reset(ctx);
    gcsh_comm_impl c = {1, 3, 1, NULL};
    gcsh_window_desc d;
    memset(&d, 0, sizeof d);
    d.alloc_bytes = 4096;
    gcsh_window_impl *w = NULL;
    CHECK(win.create_begin(ctx, &c, "beta", &d, &w) == -1 &&
              strstr(ctx->err, "communicator was aborted") && !w && !d.team,
          "an aborted communicator is refused, nothing made: %s", ctx->err);
    c.aborted = 0;
    CHECK(win.create_begin(ctx, &c, "beta", &d, &w) == 0 && w, "begin");
    CHECK(w->kind == &beta && w->c == &c && w->bytes == 4096 && w->own,
          "the window: its kind, communicator, slice and own part");
    CHECK(d.loc == 7 && d.team && d.peer, "desc: the device's location and room for the team");
    CHECK(strcmp(dev.log, "trim") == 0, "the pool is trimmed first: %s", dev.log);
    char report[64];
    CHECK(win.create_stage(ctx, w, &d, 0, report, sizeof report) == 0 &&
              strcmp(report, "beta stage 0") == 0,
          "a stage is the kind's: %s", report);
    d.peer_table_dev = malloc(16);
    win.create_abort(ctx, w, &d);
    CHECK(strcmp(dev.log, "trim undo free_ordered win_free") == 0,
          "abort: the kind's undo, the peer table freed in order, the own part: %s", dev.log);
    CHECK(!d.team && !d.peer && !d.peer_table_dev && d.team_size == 0, "abort clears desc");

    reset(ctx);
    CHECK(win.create_begin(ctx, &c, "alpha", &d, &w) == 0, "begin again");
    dev.log[0] = 0;
    d.peer_table_dev = malloc(16);
    CHECK(win.destroy(ctx, w, &d) == 0, "destroy");
    CHECK(strcmp(dev.log, "wait mc_close alpha free_ordered win_free") == 0,
          "destroy: the stream, the multicast set-up, the kind's destroy, then memory: %s",
          dev.log);
}

static void test_signals(gcsh_ctx *ctx)
{
    reset(ctx);
    uint64_t slices[2][4] = {{0}};
    void *peer[2] = {slices[0], slices[1]};
    gcsh_window_desc d;
    memset(&d, 0, sizeof d);
    d.peer = peer;
    d.peer_table_dev = peer;
    d.team_size = 2;
    d.team_rank = 1;
    d.loc = 3;
    CHECK(win.signal_set(ctx, NULL, &d, 0, 2, 5) == 0 && slices[0][2] == 5 &&
              dev.last_store == &slices[0][2],
          "set: the peer's word at its slot");
    CHECK(win.signal_add(ctx, NULL, &d, 0, 2, 3) == 0 && slices[0][2] == 8, "add adds");
    uint64_t old = 0;
    CHECK(win.signal_fetch_add(ctx, NULL, &d, 0, 2, 1, &old) == 0 && old == 8 &&
              slices[0][2] == 9 && dev.last_loc == 3,
          "fetch_add: the old value, from the window's location");
    CHECK(win.signal_wait(ctx, NULL, &d, 3, 1, GCSH_CMP_GE) == 0 &&
              dev.last_store == &slices[1][3],
          "wait: my own word (team_rank), at its slot");
    uint64_t v = 0;
    slices[1][1] = 42;
    CHECK(win.signal_read(ctx, NULL, &d, 1, &v) == 0 && v == 42, "read: my word: %llu",
          (unsigned long long)v);
    uint64_t got = 0;
    CHECK(win.peer_read(ctx, NULL, &d, 0, 16, &got, sizeof got) == 0 && got == 9,
          "peer_read: through the peer table, at the byte offset");

    /* the CPU's poll: the word changes at the third look */
    dev.release_at = 3;
    dev.release_word = &slices[1][0];
    dev.release_value = 10;
    CHECK(win.signal_wait_cpu(ctx, NULL, &d, 0, 10, GCSH_CMP_EQ, 60) == 0 && dev.peeks == 3,
          "wait_cpu polls until the word holds: %d looks", dev.peeks);
    CHECK(win.signal_wait_cpu(ctx, NULL, &d, 0, 11, GCSH_CMP_EQ, 0) == 1,
          "wait_cpu: 1 at its timeout");
    atomic_store(&ctx->interrupt, 1);
    CHECK(win.signal_wait_cpu(ctx, NULL, &d, 0, 11, GCSH_CMP_EQ, 60) == -1 &&
              strcmp(ctx->err, "signal wait interrupted") == 0,
          "wait_cpu: an interrupt ends it: %s", ctx->err);

    /* t:wait on an f32 element of member 0 */
    atomic_store(&ctx->interrupt, 0);
    float *elems = (float *)slices[0];
    elems[0] = 1.5f;
    dev.peeks = 0;
    dev.release_at = 4;
    dev.release_word = &slices[0][1]; /* elements 2 and 3 */
    float two[2] = {0, 2.5f};
    memcpy(&dev.release_value, two, sizeof two);
    gcsh_scalar want = {.is_int = 0, .f = 2.5};
    CHECK(win.elem_wait(ctx, NULL, &d, 0, 3 * sizeof(float), GCSH_F32, want, GCSH_CMP_EQ,
                        "t[3]") == 0 && dev.peeks == 4,
          "elem_wait polls the element until it holds: %d looks", dev.peeks);
    CHECK(!ctx->wait_note.active, "the hang report's note is gone after the wait");
    atomic_store(&ctx->interrupt, 1);
    gcsh_scalar never = {.is_int = 0, .f = 7};
    CHECK(win.elem_wait(ctx, NULL, &d, 0, 0, GCSH_F32, never, GCSH_CMP_EQ, "t[0]") == -1 &&
              strcmp(ctx->err, "element wait interrupted") == 0 && !ctx->wait_note.active,
          "elem_wait: an interrupt ends it and its note: %s", ctx->err);
}

/* What rank 1 sends in gpu_mcast.c's two exchanges (a verdict: ok and a
 * reason; a step's status: ok and an error), room for the larger. */
typedef struct canned {
    int ok;
    char text[236];
} canned;

static void test_multicast(gcsh_ctx *ctx)
{
    reset(ctx);
    gcsh_comm_impl c = {0, 1, 0, NULL};
    gcsh_window_impl w;
    memset(&w, 0, sizeof w);
    w.c = &c;
    w.kind = &alpha;
    gcsh_mcast m;
    CHECK(gpu_kern_mc_open(ctx, &w, NULL, &m) == 0 && !m.nvls &&
              strcmp(m.why, "not opted in") == 0,
          "not allowed here: emulated, with this rank's reason: %s", m.why);
    dev.mc_ok = 1;
    CHECK(gpu_kern_mc_open(ctx, &w, NULL, &m) == 0 && !m.nvls && dev.mc_allowed_calls == 1,
          "decided once a window: the second open asks nothing");

    memset(&w, 0, sizeof w);
    w.c = &c;
    w.kind = &alpha;
    CHECK(gpu_kern_mc_open(ctx, &w, NULL, &m) == 0 && m.nvls && m.base == (void *)0x1000 &&
              strcmp(m.why, "opened") == 0,
          "allowed everywhere: nvls, the runtime's address and words");

    canned other = {0, "rank one says no"};
    gcsh_comm_impl two = {0, 2, 0, &other};
    memset(&w, 0, sizeof w);
    w.c = &two;
    w.kind = &alpha;
    CHECK(gpu_kern_mc_open(ctx, &w, NULL, &m) == 0 && !m.nvls &&
              strcmp(m.why, "rank 1: rank one says no") == 0,
          "another rank's refusal names it: %s", m.why);

    other.ok = 1;
    dev.mc_open_fails = 1;
    memset(&w, 0, sizeof w);
    w.c = &two;
    w.kind = &alpha;
    CHECK(gpu_kern_mc_open(ctx, &w, NULL, &m) == -1 &&
              strcmp(ctx->err, "multicast (nvls) failed on rank 0: no multimem here") == 0 &&
              !w.mc_decided,
          "a failed set-up is every rank's error, and nothing is decided: %s", ctx->err);
}

static void test_graph(gcsh_ctx *ctx)
{
    reset(ctx);
    CHECK(graph.begin(ctx) == 0 && strcmp(dev.log, "capture_begin") == 0, "begin captures");
    gcsh_graph_impl *g = NULL;
    CHECK(graph.end(ctx, calloc(1, sizeof(gcsh_graph_rec)), &g) == 0 && g, "end: a graph");
    CHECK(graph.launch(ctx, g, 3) == 0 && dev.launches == 3 && dev.enqueued_null == 3,
          "3 replays, each through the throttle (no communicator)");
    dev.launches = 0;
    dev.launch_fails_at = 2;
    CHECK(graph.launch(ctx, g, 3) == -1 && dev.launches == 2 &&
              strcmp(ctx->err, "launch failed") == 0,
          "a failed launch stops the replays");
    atomic_store(&ctx->interrupt, 1);
    CHECK(graph.launch(ctx, g, 3) == -1 && strcmp(ctx->err, "interrupted in replay 1 of 3") == 0,
          "an interrupt between replays: %s", ctx->err);
    graph.release(ctx, g);
    CHECK(dev.graph_freed_with_dev, "release frees the runtime's graph on the device");

    reset(ctx);
    say("refuse");
    CHECK(graph.end(ctx, calloc(1, sizeof(gcsh_graph_rec)), &g) == -1 &&
              strcmp(ctx->err, "instantiate failed") == 0,
          "a capture that does not end as a graph fails (and frees its record)");
    graph.abandon(ctx);
    CHECK(strstr(dev.log, "abandon") != NULL, "abandon ends the capture");

    /* the entry that makes the stream's owed waits fails (a capture the
     * driver invalidated): the capture still ends, or is abandoned, and a
     * graph is still freed on the device */
    reset(ctx);
    fail_enter = 1;
    CHECK(graph.end(ctx, calloc(1, sizeof(gcsh_graph_rec)), &g) == 0 && g,
          "end needs no owed wait: %s", ctx->err);
    graph.release(ctx, g);
    CHECK(dev.graph_freed_with_dev, "release needs none either");
    graph.abandon(ctx);
    CHECK(strstr(dev.log, "abandon") != NULL, "abandon needs none either");
}

static void test_xfer(gcsh_ctx *ctx)
{
    reset(ctx);
    char a[8], b[8];
    uint64_t word = 0;
    gcsh_xfer_seg seg[3] = {{a, b, 8}, {a, b, 0}, {b, a, 4}};
    gcsh_xfer_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.engine = GCSH_XFER_SM;
    plan.nseg = 3;
    plan.seg = seg;
    plan.signal = &word;
    plan.signal_value = 5;
    gcsh_xfer_impl *x = NULL;
    CHECK(xfer.prepare(ctx, &plan, &x) == 0 && x, "prepare");
    CHECK(x->nseg == 2 && x->dsts[1] == b && x->srcs[1] == a && x->sizes[1] == 4,
          "the empty segment is dropped, the rest kept in order");
    CHECK(x->engine == GCSH_XFER_SM && x->signal == &word && x->value == 5 && x->own,
          "engine, signal and the runtime's part");
    CHECK(xfer.post(ctx, x) == 0 && x->own->posts == 1, "post is the runtime's");
    enum gcsh_xfer_status status;
    CHECK(xfer.test(ctx, x, &status) == 0 && status == GCSH_XFER_PENDING, "test: pending");
    dev.queries = 0;
    dev.done_at = 3;
    CHECK(xfer.wait_cpu(ctx, x, 60) == 0 && dev.queries == 3, "wait_cpu polls until done");
    dev.queries = 0;
    dev.done_at = 0;
    dev.error_at = 2;
    CHECK(xfer.wait_cpu(ctx, x, 60) == -1 && strcmp(ctx->err, "the copy failed") == 0,
          "wait_cpu: the post's error: %s", ctx->err);
    dev.error_at = 0;
    CHECK(xfer.wait_cpu(ctx, x, 0) == 1, "wait_cpu: 1 at its timeout");
    atomic_store(&ctx->interrupt, 1);
    CHECK(xfer.wait_cpu(ctx, x, 60) == -1 && dev.cancels == 1 &&
              strcmp(ctx->err, "interrupted while waiting for a transfer") == 0,
          "wait_cpu: an interrupt cancels the GPU's waits and ends it: %s", ctx->err);
    atomic_store(&ctx->interrupt, 0);
    CHECK(xfer.wait_stream(ctx, x) == 0 && xfer.quiet(ctx) == 0 &&
              strcmp(dev.log, "wait_stream fence wait") == 0,
          "wait_stream, then quiet: a fence, then the stream: %s", dev.log);
    xfer.release(ctx, x);
    CHECK(strstr(dev.log, "xfer_free") != NULL, "release frees the runtime's part");

    reset(ctx);
    dev.xfer_prepare_fails = 1;
    x = NULL;
    CHECK(xfer.prepare(ctx, &plan, &x) == -1 && !x && strcmp(ctx->err, "no event") == 0 &&
              strcmp(dev.log, "xfer_free") == 0,
          "a failed prepare frees what the runtime made: %s", dev.log);
}

/* A peer off the team (plan->net): the plan kept as it is for the network
 * path (gpu_net.c), nothing for the runtime's engine; the window's net op
 * refuses a rank no server was gathered for (a window of one node). */
static void test_net(gcsh_ctx *ctx)
{
    reset(ctx);
    gcsh_comm_impl c = {0, 3, 0, NULL};
    gcsh_window_desc d;
    memset(&d, 0, sizeof d);
    d.alloc_bytes = 4096;
    gcsh_window_impl *w = NULL;
    CHECK(win.create_begin(ctx, &c, "beta", &d, &w) == 0 && w && !w->remote && !w->net_id,
          "a window of one node: no servers gathered");
    CHECK(win.net == gpu_win_net && strcmp(win.net_path, "tcp") == 0,
          "the window table's network path is gpu_net.c's");
    uint64_t old = 0;
    CHECK(win.net(ctx, w, &d, 2, GCSH_NET_ADD, 0, NULL, 0, 1, &old) == -1 &&
              strcmp(ctx->err, "window: rank 2 is not reached over the network") == 0,
          "net op without a server for the rank: %s", ctx->err);

    char a[8];
    gcsh_xfer_seg seg[2] = {{(void *)(uintptr_t)16, a, 8}, {(void *)(uintptr_t)24, a, 0}};
    gcsh_xfer_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.engine = GCSH_XFER_CE;
    plan.nseg = 2;
    plan.seg = seg;
    plan.signal = (uint64_t *)(uintptr_t)8; /* an offset at the peer */
    plan.signal_value = 3;
    plan.peer = 2;
    plan.net = w;
    plan.net_desc = &d;
    plan.signal_net = w;
    plan.signal_net_desc = &d;
    gcsh_xfer_impl *x = NULL;
    CHECK(xfer.prepare(ctx, &plan, &x) == 0 && x, "prepare (net)");
    CHECK(x->nseg == 0 && !x->signal && x->net.net == w && x->net.seg != seg &&
              x->net.nseg == 2 && x->net.seg[0].dst == (void *)(uintptr_t)16 &&
              x->net.signal == (uint64_t *)(uintptr_t)8,
          "the plan kept for the network path, no segment or signal for the engine");
    ctx->err[0] = 0;
    CHECK(xfer.post(ctx, x) == -1 && x->own->posts == 0 &&
              strcmp(ctx->err, "window: rank 2 is not reached over the network") == 0,
          "a failed network post is not marked done: %s", ctx->err);
    xfer.release(ctx, x);

    seg[0].bytes = 0; /* nothing to move and no signal: only the mark */
    plan.signal_net = NULL;
    x = NULL;
    CHECK(xfer.prepare(ctx, &plan, &x) == 0 && xfer.post(ctx, x) == 0 && x->own->posts == 1,
          "an empty network post: the runtime's mark alone");
    xfer.release(ctx, x);
    win.destroy(ctx, w, &d);
}

int main(void)
{
    gcsh_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    gcsh_gpu_use(&rt);
    ctx.be_state = &dev;
    test_kinds(&ctx);
    test_create_destroy(&ctx);
    test_signals(&ctx);
    test_multicast(&ctx);
    test_graph(&ctx);
    test_xfer(&ctx);
    test_net(&ctx);
    UNIT_END();
}
