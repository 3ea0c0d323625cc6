/* Traces, every rank's side: spans of Lua lines, checks and backend calls,
 * GPU marks, the clock offset to rank 0, and the blob shipped to rank 0.
 * See trace.h.
 *
 * The worker thread records; the watcher thread may copy what is recorded
 * at any time (a flush during a hang), so the lists are behind one mutex,
 * taken twice per call (uncontended: tens of ns).  Calls still running are
 * on a small stack that a copy includes, marked unfinished. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "trace/trace.h"

#define MAX_DEPTH 16            /* calls running inside each other, Lua line included */
#define MAX_EVENTS_DEFAULT ((size_t)1 << 20)
#define LINE_TEXT_MAX 240       /* bytes of a Lua line kept */
#define SYNC_ROUNDS 10          /* clock ping-pongs per rank */
#define SYNC_TAG 0x7ace
#define LABELS 32               /* collective names kept for reuse */

typedef struct trace_event {
    gcsh_trace_rec rec;
    void *m0, *m1;  /* GPU marks before and after, or NULL */
    int anchor;     /* the anchor they are timed from, -1: none */
} trace_event;

typedef struct anchor {
    void *mark;
    int64_t host;   /* the host clock when the mark was recorded (the stream idle) */
} anchor;

struct gcsh_trace {
    gcsh_trace_tables tables;
    const gcsh_backend *plain;
    pthread_mutex_t lock;
    int on;
    trace_event *ev;
    size_t n, cap, max, dropped;
    char *pool;
    size_t plen, pcap;
    trace_event open[MAX_DEPTH];
    int depth;
    /* the collective the calls belong to, between check_end and check_leave */
    int in_coll;
    uint64_t comm, seq;
    int32_t comm_rank, comm_size;
    uint32_t label;
    struct { char name[24]; uint32_t at; } labels[LABELS];
    int nlabels;
    anchor *anchors;
    size_t nanchors, capanchors;
    int cur_anchor;
    int64_t offset, rtt;
    char host[64];
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static gcsh_trace_rec blank_rec(void)
{
    return (gcsh_trace_rec)GCSH_TRACE_REC_BLANK;
}

const gcsh_backend *gcsh_trace_plain(const gcsh_ctx *ctx)
{
    return ctx->trace ? ctx->trace->plain : ctx->be;
}

/* ---- strings ----------------------------------------------------------------- */

/* 1 + the offset of a copy of s (n bytes) in the pool, or 0.  Lock held. */
static uint32_t pool_add(gcsh_trace *t, const char *s, size_t n)
{
    if (t->plen + n + 1 > UINT32_MAX - 1)
        return 0;
    if (t->plen + n + 1 > t->pcap) {
        size_t cap = t->pcap ? t->pcap : 4096;
        while (cap < t->plen + n + 1)
            cap *= 2;
        char *p = realloc(t->pool, cap);
        if (!p)
            return 0;
        t->pool = p;
        t->pcap = cap;
    }
    memcpy(t->pool + t->plen, s, n);
    t->pool[t->plen + n] = '\0';
    uint32_t at = (uint32_t)t->plen + 1;
    t->plen += n + 1;
    return at;
}

/* A collective's name, kept once.  Lock held. */
static uint32_t label_of(gcsh_trace *t, const char *name)
{
    for (int i = 0; i < t->nlabels; i++)
        if (strcmp(t->labels[i].name, name) == 0)
            return t->labels[i].at;
    uint32_t at = pool_add(t, name, strlen(name));
    if (t->nlabels < LABELS) {
        snprintf(t->labels[t->nlabels].name, sizeof t->labels[0].name, "%s", name);
        t->labels[t->nlabels++].at = at;
    }
    return at;
}

/* ---- spans ------------------------------------------------------------------- */

static void append(gcsh_trace *t, const trace_event *e)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 1024;
        if (cap > t->max)
            cap = t->max;
        trace_event *p = t->n < cap ? realloc(t->ev, cap * sizeof *p) : NULL;
        if (!p) {
            t->dropped++;
            if (e->m0 && t->plain->mem->mark_free)
                t->plain->mem->mark_free(NULL, e->m0);
            if (e->m1 && t->plain->mem->mark_free)
                t->plain->mem->mark_free(NULL, e->m1);
            return;
        }
        t->ev = p;
        t->cap = cap;
    }
    t->ev[t->n++] = *e;
}

/* Opens a span: on the stack of running calls (a copy sees it). */
static int push(gcsh_trace *t, const trace_event *e)
{
    pthread_mutex_lock(&t->lock);
    int slot = t->depth < MAX_DEPTH ? t->depth++ : -1;
    if (slot >= 0)
        t->open[slot] = *e;
    pthread_mutex_unlock(&t->lock);
    return slot;
}

/* Closes the span opened in slot: off the stack, into the list. */
static void pop(gcsh_trace *t, int slot, const trace_event *e)
{
    pthread_mutex_lock(&t->lock);
    if (slot >= 0 && slot == t->depth - 1)
        t->depth--;
    append(t, e);
    pthread_mutex_unlock(&t->lock);
}

static void *mark(gcsh_trace *t, gcsh_ctx *ctx)
{
    void *m = NULL;
    if (t->plain->mem->mark && t->cur_anchor >= 0 && t->plain->mem->mark(ctx, &m) != 0)
        m = NULL;
    return m;
}

void gcsh_trace_call_begin(gcsh_ctx *ctx, gcsh_trace_call *call, uint32_t op, unsigned flags)
{
    gcsh_trace *t = ctx->trace;
    gcsh_trace_rec *r = &call->rec;
    r->op = op;
    r->track = GCSH_TRACK_CALLS;
    if (t->in_coll) {
        r->comm = t->comm;
        r->seq = t->seq;
        r->comm_rank = t->comm_rank;
        r->comm_size = t->comm_size;
        r->label = t->label;
    }
    call->m0 = (flags & GCSH_TRACE_GPU) ? mark(t, ctx) : NULL;
    r->t0 = now_ns();
    trace_event e = {.rec = *r, .m0 = call->m0, .anchor = t->cur_anchor};
    call->slot = push(t, &e);
}

void gcsh_trace_call_end(gcsh_ctx *ctx, gcsh_trace_call *call, int rc)
{
    gcsh_trace *t = ctx->trace;
    trace_event e = {.rec = call->rec, .m0 = call->m0, .anchor = t->cur_anchor};
    e.rec.t1 = now_ns();
    e.rec.failed = rc != 0;
    if (call->m0)
        e.m1 = mark(t, ctx);
    pop(t, call->slot, &e);
}

/* ---- Lua lines and checks ------------------------------------------------------ */

void gcsh_trace_chunk_begin(gcsh_ctx *ctx, const char *src, size_t len)
{
    gcsh_trace *t = ctx->trace;
    if (!t)
        return;
    /* a GPU anchor per command: the stream is idle between commands (each
     * ends with a sync), so its mark passes at once */
    t->cur_anchor = -1;
    void *m = NULL;
    if (t->plain->mem->mark && t->plain->mem->mark(ctx, &m) == 0) {
        pthread_mutex_lock(&t->lock);
        if (t->nanchors == t->capanchors) {
            size_t cap = t->capanchors ? 2 * t->capanchors : 64;
            anchor *p = realloc(t->anchors, cap * sizeof *p);
            if (p) {
                t->anchors = p;
                t->capanchors = cap;
            }
        }
        if (t->nanchors < t->capanchors) {
            t->anchors[t->nanchors] = (anchor){.mark = m, .host = now_ns()};
            t->cur_anchor = (int)t->nanchors++;
        }
        pthread_mutex_unlock(&t->lock);
        if (t->cur_anchor < 0)
            t->plain->mem->mark_free(ctx, m);
    }
    if (len > 7 && memcmp(src, "return ", 7) == 0) { /* the prompt's "=expr" form */
        src += 7;
        len -= 7;
    }
    trace_event e = {.rec = blank_rec(), .anchor = -1};
    e.rec.op = gcsh_trace_op_lua();
    e.rec.track = GCSH_TRACK_LUA;
    pthread_mutex_lock(&t->lock);
    e.rec.text = pool_add(t, src, len < LINE_TEXT_MAX ? len : LINE_TEXT_MAX);
    pthread_mutex_unlock(&t->lock);
    e.rec.t0 = now_ns();
    push(t, &e);
}

void gcsh_trace_chunk_end(gcsh_ctx *ctx, int failed)
{
    gcsh_trace *t = ctx->trace;
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    /* the Lua line is the bottom of the stack; calls an error left open
     * (none should) are closed with it */
    while (t->depth > 0) {
        trace_event e = t->open[--t->depth];
        e.rec.t1 = now_ns();
        e.rec.failed = e.rec.track == GCSH_TRACK_LUA ? failed != 0 : 1;
        append(t, &e);
    }
    t->in_coll = 0;
    pthread_mutex_unlock(&t->lock);
}

int gcsh_trace_check_begin(gcsh_ctx *ctx, const gcsh_comm_check *cc, const gcsh_fingerprint *fp)
{
    gcsh_trace *t = ctx->trace;
    if (!t || !gcsh_check_enabled(ctx))
        return -1; /* .check off: no exchange, no span */
    trace_event e = {.rec = blank_rec(), .anchor = -1};
    e.rec.op = gcsh_trace_op_check();
    e.rec.track = GCSH_TRACK_CALLS;
    e.rec.comm = cc->id;
    e.rec.seq = fp->kind == GCSH_FP_COLLECTIVE ? fp->seq : 0;
    e.rec.comm_rank = cc->rank;
    e.rec.comm_size = cc->size;
    pthread_mutex_lock(&t->lock);
    e.rec.label = label_of(t, fp->op);
    pthread_mutex_unlock(&t->lock);
    e.rec.t0 = now_ns();
    return push(t, &e);
}

void gcsh_trace_check_end(gcsh_ctx *ctx, int token, const gcsh_comm_check *cc,
                          const gcsh_fingerprint *fp, int rc)
{
    gcsh_trace *t = ctx->trace;
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    if (token >= 0 && token == t->depth - 1) {
        trace_event e = t->open[--t->depth];
        e.rec.t1 = now_ns();
        e.rec.failed = rc != 0;
        append(t, &e);
    }
    if (rc == 0) {
        t->in_coll = 1;
        t->comm = cc->id;
        t->seq = fp->kind == GCSH_FP_COLLECTIVE ? fp->seq : 0;
        t->comm_rank = cc->rank;
        t->comm_size = cc->size;
        t->label = label_of(t, fp->op);
    }
    pthread_mutex_unlock(&t->lock);
}

void gcsh_trace_check_leave(gcsh_ctx *ctx)
{
    if (ctx->trace)
        ctx->trace->in_coll = 0;
}

/* ---- the clock -------------------------------------------------------------- */

/* Rank 0's clock minus mine, from the ping-pong with the least round trip.
 * Collective over MPI_COMM_WORLD; rank 0 answers each rank in turn. */
static void measure_offset(gcsh_ctx *ctx, int64_t *offset, int64_t *rtt)
{
    *offset = 0;
    *rtt = -1;
    if (ctx->rank == 0) {
        for (int r = 1; r < ctx->size; r++)
            for (int k = 0; k < SYNC_ROUNDS; k++) {
                int64_t v;
                MPI_Recv(&v, 1, MPI_INT64_T, r, SYNC_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                v = now_ns();
                MPI_Send(&v, 1, MPI_INT64_T, r, SYNC_TAG, MPI_COMM_WORLD);
            }
        return;
    }
    for (int k = 0; k < SYNC_ROUNDS; k++) {
        int64_t t1 = now_ns(), t0;
        MPI_Send(&t1, 1, MPI_INT64_T, 0, SYNC_TAG, MPI_COMM_WORLD);
        MPI_Recv(&t0, 1, MPI_INT64_T, 0, SYNC_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        int64_t t2 = now_ns();
        if (*rtt < 0 || t2 - t1 < *rtt) {
            *rtt = t2 - t1;
            *offset = t0 - (t1 + t2) / 2;
        }
    }
}

/* Ranks on rank 0's host read the same monotonic clock: their offset is 0
 * (a measured one would only add the ping-pong's asymmetry). */
static void sync_clock(gcsh_ctx *ctx, gcsh_trace *t)
{
    char host0[sizeof t->host];
    memcpy(host0, t->host, sizeof host0);
    MPI_Bcast(host0, (int)sizeof host0, MPI_CHAR, 0, MPI_COMM_WORLD);
    measure_offset(ctx, &t->offset, &t->rtt);
    if (strcmp(host0, t->host) == 0)
        t->offset = 0;
}

/* ---- start, stop, copies ---------------------------------------------------- */

static size_t max_events(void)
{
    const char *s = getenv("GCSH_TRACE_EVENTS");
    long long v = s ? atoll(s) : 0;
    return v > 0 ? (size_t)v : MAX_EVENTS_DEFAULT;
}

int gcsh_trace_start(gcsh_ctx *ctx)
{
    gcsh_trace *t = ctx->trace_store;
    if (!t) {
        t = calloc(1, sizeof *t);
        if (!t)
            return gcsh_set_error(ctx, "trace: out of host memory");
        pthread_mutex_init(&t->lock, NULL);
        ctx->trace_store = t;
    }
    if (ctx->trace)
        return 0; /* already on */
    t->plain = ctx->be;
    gcsh_trace_wrap(&t->tables, t->plain);
    t->max = max_events();
    t->cur_anchor = -1;
    gethostname(t->host, sizeof t->host - 1);
    sync_clock(ctx, t);
    pthread_mutex_lock(&t->lock);
    t->on = 1;
    pthread_mutex_unlock(&t->lock);
    ctx->trace = t;
    ctx->be = &t->tables.be;
    return 0;
}

/* Seconds from anchor a to mark m, as a time on this rank's clock; -1 when
 * m has not passed (or cannot be read). */
static int64_t gpu_time(gcsh_ctx *ctx, gcsh_trace *t, int a, void *m)
{
    double s;
    if (!m || a < 0 || (size_t)a >= t->nanchors ||
        t->plain->mem->mark_seconds(ctx, t->anchors[a].mark, m, &s) != 0)
        return -1;
    return t->anchors[a].host + (int64_t)(s * 1e9);
}

static void resolve_gpu(gcsh_ctx *ctx, gcsh_trace *t, const trace_event *e, gcsh_trace_rec *out)
{
    if (!e->m0 || !t->plain->mem->mark_seconds)
        return;
    out->g0 = gpu_time(ctx, t, e->anchor, e->m0);
    out->g1 = out->g0 >= 0 ? gpu_time(ctx, t, e->anchor, e->m1) : -1;
}

/* The blob of what is recorded, running calls included.  Lock held. */
static void *build_blob(gcsh_ctx *ctx, gcsh_trace *t, int final, size_t *len)
{
    size_t nrec = t->n + (size_t)t->depth;
    size_t bytes = sizeof(gcsh_trace_blob) + nrec * sizeof(gcsh_trace_rec) + t->plen;
    char *p = malloc(bytes);
    if (!p)
        return NULL;
    gcsh_trace_blob *b = (gcsh_trace_blob *)(void *)p;
    *b = (gcsh_trace_blob){.rank = ctx->rank, .final = final, .now = now_ns(),
                           .offset = t->offset, .rtt = t->rtt, .nrec = nrec, .npool = t->plen,
                           .dropped = t->dropped};
    snprintf(b->host, sizeof b->host, "%s", t->host);
    snprintf(b->device, sizeof b->device, "%s", ctx->device);
    gcsh_trace_rec *rec = (gcsh_trace_rec *)(void *)(p + sizeof *b);
    for (size_t i = 0; i < t->n; i++) {
        rec[i] = t->ev[i].rec;
        resolve_gpu(ctx, t, &t->ev[i], &rec[i]);
    }
    for (int i = 0; i < t->depth; i++) { /* still running: t1 = -1 */
        rec[t->n + (size_t)i] = t->open[i].rec;
        resolve_gpu(ctx, t, &t->open[i], &rec[t->n + (size_t)i]);
    }
    if (t->plen)
        memcpy(p + sizeof *b + nrec * sizeof *rec, t->pool, t->plen);
    *len = bytes;
    return p;
}

void *gcsh_trace_snapshot(gcsh_ctx *ctx, size_t *len)
{
    gcsh_trace *t = ctx->trace_store;
    void *blob = NULL;
    if (!t)
        return NULL;
    pthread_mutex_lock(&t->lock);
    if (t->on)
        blob = build_blob(ctx, t, 0, len);
    pthread_mutex_unlock(&t->lock);
    return blob;
}

/* Forgets everything recorded (marks released).  Lock held. */
static void clear(gcsh_ctx *ctx, gcsh_trace *t)
{
    void (*mark_free)(gcsh_ctx *, void *) = t->plain ? t->plain->mem->mark_free : NULL;
    for (size_t i = 0; mark_free && i < t->n; i++) {
        if (t->ev[i].m0)
            mark_free(ctx, t->ev[i].m0);
        if (t->ev[i].m1)
            mark_free(ctx, t->ev[i].m1);
    }
    for (size_t i = 0; mark_free && i < t->nanchors; i++)
        mark_free(ctx, t->anchors[i].mark);
    free(t->ev);
    free(t->pool);
    free(t->anchors);
    t->ev = NULL;
    t->anchors = NULL;
    t->pool = NULL;
    t->n = t->cap = t->plen = t->pcap = t->nanchors = t->capanchors = t->dropped = 0;
    t->depth = t->nlabels = 0;
    t->in_coll = 0;
    t->cur_anchor = -1;
}

void *gcsh_trace_stop(gcsh_ctx *ctx, size_t *len)
{
    gcsh_trace *t = ctx->trace;
    if (!t)
        return NULL;
    ctx->be = t->plain;
    ctx->trace = NULL;
    pthread_mutex_lock(&t->lock);
    void *blob = build_blob(ctx, t, 1, len);
    t->on = 0;
    clear(ctx, t);
    pthread_mutex_unlock(&t->lock);
    return blob;
}

void gcsh_trace_free(gcsh_ctx *ctx)
{
    gcsh_trace *t = ctx->trace_store;
    if (!t)
        return;
    if (ctx->trace) {
        ctx->be = t->plain;
        ctx->trace = NULL;
    }
    pthread_mutex_lock(&t->lock);
    t->on = 0;
    clear(ctx, t);
    pthread_mutex_unlock(&t->lock);
    pthread_mutex_destroy(&t->lock);
    free(t);
    ctx->trace_store = NULL;
}
