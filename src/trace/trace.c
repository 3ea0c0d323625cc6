/* Every rank's recorder: calls, Lua lines, collectives and their checks,
 * into the flight recorder (always, flight.h) and, while tracing, into the
 * spans shipped to rank 0 (with GPU marks, the clock offset, the blob).
 * See trace.h.
 *
 * The worker thread records.  The flight recorder needs no lock (its ring
 * is written under per-slot sequence numbers).  Spans are behind one mutex,
 * taken twice per call while tracing (uncontended: tens of ns), because
 * the watcher thread may copy them at any time (a flush during a hang);
 * calls still running are on a small stack that a copy includes, marked
 * unfinished.  Spans are a ring of the most recent GCSH_TRACE_EVENTS: the
 * oldest are dropped, and counted. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <mpi.h>

#include "trace/flight.h"
#include "trace/trace.h"
#include "core/env.h"
#include "trace/trace_clock.h"
#include "trace/trace_ops.h"

#define MAX_DEPTH 16            /* calls running inside each other, Lua line included */
#define MAX_COLLS 8             /* collectives open inside each other */
#define LINE_TEXT_MAX 240       /* bytes of a Lua line kept */
#define LABELS 32               /* collective names kept for reuse */
#define WHERES 1024             /* Lua file:line strings kept for reuse (a hash table) */
#define XFER_NOTES 64           /* transfers whose peer and signal a later post names */

typedef struct trace_event {
    gcsh_trace_rec rec;
    void *m0, *m1;  /* GPU marks before and after, or NULL */
    int anchor;     /* the anchor they are timed from, -1: none */
} trace_event;

typedef struct anchor {
    void *mark;
    int64_t host;   /* the host clock when the mark was recorded (the stream idle) */
} anchor;

/* A record open on the rank (a Lua line, a collective, a check): its
 * flight recorder slot, its span (while tracing), its collective's name. */
typedef struct open_call {
    gcsh_trace_rec rec;
    int fslot, span;
    char label[24];
    char where[64]; /* a collective's Lua file:line: its backend calls are made there too */
} open_call;

/* What a prepared transfer will do, for its posts (trace_wrap.c). */
typedef struct xfer_note {
    const void *x;
    gcsh_trace_rec d;
} xfer_note;

struct gcsh_trace {
    gcsh_trace_tables tables;
    const gcsh_backend *plain;
    int installed;          /* ctx->be is tables.be */
    pthread_mutex_t lock;
    int on;                 /* spans are kept (.trace) */
    trace_event *ev;        /* the ring of spans: n of them from head */
    size_t head, n, cap, max, dropped;
    char *pool;
    size_t plen, pcap;
    struct { uint32_t hash, at; } where[WHERES];
    trace_event open[MAX_DEPTH];
    int depth;
    /* the collectives open (check_begin to check_leave), innermost last;
     * the calls in between belong to the innermost that passed its check */
    open_call coll[MAX_COLLS];
    int ncoll, in_coll;
    struct { char name[24]; uint32_t at; } labels[LABELS];
    int nlabels;
    anchor *anchors;
    size_t nanchors, capanchors;
    int cur_anchor;
    int64_t offset, rtt;
    char host[64];
    uint64_t calls;         /* call numbers given so far */
    pthread_t lua_thread;   /* the worker's: where Lua lines are asked */
    int lua_known;
    xfer_note xfers[XFER_NOTES];
    int nxfers;
    open_call lua_line;     /* the chunk running, for the flight recorder */
    open_call check;        /* the check running */
};

static gcsh_trace_rec blank_rec(void)
{
    return (gcsh_trace_rec)GCSH_TRACE_REC_BLANK;
}

const gcsh_backend *gcsh_trace_plain(const gcsh_ctx *ctx)
{
    return ctx->trace_store ? ctx->trace_store->plain : ctx->be;
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

/* A Lua file:line, kept once (a hash table of the pool's copies).  Lock held. */
static uint32_t where_of(gcsh_trace *t, const char *s)
{
    if (!s[0])
        return 0;
    uint32_t h = 2166136261u;
    for (const char *p = s; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    for (uint32_t i = 0; i < WHERES; i++) {
        uint32_t k = (h + i) % WHERES;
        if (t->where[k].at == 0) {
            t->where[k].hash = h;
            t->where[k].at = pool_add(t, s, strlen(s));
            return t->where[k].at;
        }
        if (t->where[k].hash == h && strcmp(t->pool + t->where[k].at - 1, s) == 0)
            return t->where[k].at;
    }
    return pool_add(t, s, strlen(s));
}

/* Copies s into buf (len bytes, cut, always terminated); cheaper than
 * snprintf on every call. */
static void copy_text(char *buf, size_t len, const char *s)
{
    size_t n = strnlen(s, len - 1);
    memcpy(buf, s, n);
    buf[n] = '\0';
}

/* The Lua file:line that made the running call ("repro.lua:12"): the
 * first Lua frame above the binding, asked only on the worker thread (the
 * one running ctx->L); "" elsewhere. */
static void lua_where(gcsh_ctx *ctx, gcsh_trace *t, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!t->lua_known || !ctx->L || !pthread_equal(pthread_self(), t->lua_thread))
        return;
    lua_Debug ar;
    for (int level = 1; level < 6 && lua_getstack(ctx->L, level, &ar); level++) {
        if (!lua_getinfo(ctx->L, "Sl", &ar))
            return;
        if (ar.currentline > 0) { /* "short_src:line", without snprintf's cost */
            copy_text(buf, len - 12, ar.short_src);
            char digits[12], *d = digits + sizeof digits;
            *--d = '\0';
            for (int v = ar.currentline; v > 0; v /= 10)
                *--d = (char)('0' + v % 10);
            size_t n = strlen(buf);
            buf[n] = ':';
            memcpy(buf + n + 1, d, (size_t)(digits + sizeof digits - d));
            return;
        }
    }
}

/* ---- spans ------------------------------------------------------------------- */

static void free_marks(gcsh_trace *t, const trace_event *e)
{
    void (*mark_free)(gcsh_ctx *, void *) = t->plain->mem->mark_free;
    if (e->m0 && mark_free)
        mark_free(NULL, e->m0);
    if (e->m1 && mark_free)
        mark_free(NULL, e->m1);
}

/* Keeps a finished span: the ring grows to max, then the oldest goes.
 * Lock held. */
static void append(gcsh_trace *t, const trace_event *e)
{
    if (t->n == t->cap && t->cap < t->max) {
        size_t cap = t->cap ? 2 * t->cap : 1024;
        cap = cap > t->max ? t->max : cap;
        trace_event *p = realloc(t->ev, cap * sizeof *p);
        if (p) { /* head is 0 until the ring is full */
            t->ev = p;
            t->cap = cap;
        }
    }
    if (t->n < t->cap) {
        t->ev[(t->head + t->n++) % t->cap] = *e;
        return;
    }
    if (t->cap == 0) { /* no memory at all */
        t->dropped++;
        free_marks(t, e);
        return;
    }
    free_marks(t, &t->ev[t->head]); /* the oldest makes room */
    t->ev[t->head] = *e;
    t->head = (t->head + 1) % t->cap;
    t->dropped++;
}

/* Opens a span: on the stack of running calls (a copy sees it), with its
 * strings put in the pool (label, where: may be empty; a Lua line's text:
 * n bytes, or NULL).  e->rec gets their offsets. */
static int push(gcsh_trace *t, trace_event *e, const char *label, const char *where,
                const char *line, size_t n)
{
    pthread_mutex_lock(&t->lock);
    e->rec.label = label && label[0] ? label_of(t, label) : 0;
    e->rec.where = where ? where_of(t, where) : 0;
    e->rec.text = line ? pool_add(t, line, n < LINE_TEXT_MAX ? n : LINE_TEXT_MAX) : 0;
    int slot = t->depth < MAX_DEPTH ? t->depth++ : -1;
    if (slot >= 0)
        t->open[slot] = *e;
    pthread_mutex_unlock(&t->lock);
    return slot;
}

/* Closes the span opened in slot: off the stack, into the ring. */
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

/* ---- records: the flight recorder always, spans while tracing ------------- */

/* The innermost collective that passed its check: the calls until
 * check_leave belong to it. */
static const open_call *collective(const gcsh_trace *t)
{
    return t->in_coll && t->ncoll > 0 ? &t->coll[t->ncoll - 1] : NULL;
}

/* The collective r is made inside, if any (its numbers go into r), or NULL. */
static const open_call *in_collective(const gcsh_trace *t, gcsh_trace_rec *r, const char **label)
{
    const open_call *c = collective(t);
    *label = "";
    if (!c)
        return NULL;
    r->comm = c->rec.comm;
    r->seq = c->rec.seq;
    r->comm_rank = c->rec.comm_rank;
    r->comm_size = c->rec.comm_size;
    *label = c->label;
    return c;
}

/* Starts a record that is not a backend call (a Lua line, a collective, a
 * check): its call number, the time, its flight recorder slot and, while
 * tracing, its span.  line: a Lua line's text (n bytes), else NULL. */
static void open_rec(gcsh_ctx *ctx, gcsh_trace *t, open_call *o, const char *where,
                     const char *line, size_t n)
{
    o->rec.id = ++t->calls;
    o->rec.t0 = gcsh_trace_now();
    char text[80];
    if (line)
        copy_text(text, n + 1 < sizeof text ? n + 1 : sizeof text, line);
    o->fslot = ctx->flight ? gcsh_flight_begin(ctx->flight, &o->rec, o->label,
                                               line ? text : where)
                           : -1;
    o->span = -1;
    if (t->on) {
        trace_event e = {.rec = o->rec, .anchor = -1};
        o->span = push(t, &e, o->label, where, line, n);
        o->rec = e.rec;
    }
}

static void close_rec(gcsh_ctx *ctx, gcsh_trace *t, open_call *o, int failed)
{
    int64_t t1 = gcsh_trace_now();
    if (o->fslot >= 0)
        gcsh_flight_end(ctx->flight, o->fslot, o->rec.id, t1,
                        failed ? GCSH_CALL_FAILED : GCSH_CALL_DONE);
    if (t->on) {
        trace_event e = {.rec = o->rec, .anchor = -1};
        e.rec.t1 = t1;
        e.rec.failed = failed != 0;
        pop(t, o->span, &e);
    }
    o->fslot = o->span = -1;
}

void gcsh_trace_call_begin(gcsh_ctx *ctx, gcsh_trace_call *call, uint32_t op, unsigned flags)
{
    gcsh_trace *t = ctx->trace_store;
    gcsh_trace_rec *r = &call->rec;
    const char *label;
    char where[64];
    r->op = op;
    r->track = GCSH_TRACK_CALLS;
    const open_call *coll = in_collective(t, r, &label);
    where[0] = '\0';
    if (coll) /* the same Lua line made the collective: no second stack walk */
        copy_text(where, sizeof where, coll->where);
    else if (t->on || !(flags & GCSH_TRACE_MEM))
        lua_where(ctx, t, where, sizeof where);
    r->id = ++t->calls;
    call->flags = flags;
    call->slot = -1;
    call->m0 = t->on && (flags & GCSH_TRACE_GPU) ? mark(t, ctx) : NULL;
    r->t0 = gcsh_trace_now();
    call->fslot = ctx->flight ? gcsh_flight_begin(ctx->flight, r, label, where) : -1;
    if (t->on) {
        trace_event e = {.rec = *r, .m0 = call->m0, .anchor = t->cur_anchor};
        call->slot = push(t, &e, label, where, NULL, 0);
        call->rec = e.rec;
    }
}

void gcsh_trace_call_end(gcsh_ctx *ctx, gcsh_trace_call *call, int rc)
{
    gcsh_trace *t = ctx->trace_store;
    /* a memory call in the flight recorder alone keeps its start only: a
     * clock read is most of what recording it costs */
    int timed = t->on || !(call->flags & GCSH_TRACE_MEM);
    int64_t t1 = timed ? gcsh_trace_now() : call->rec.t0;
    if (call->fslot >= 0) {
        /* where work runs off the calling thread (a backend with marks:
         * cuda), a GPU call is only issued when it returns */
        int queued = (call->flags & GCSH_TRACE_GPU) && t->plain->mem->mark;
        gcsh_flight_end(ctx->flight, call->fslot, call->rec.id, t1,
                        rc ? GCSH_CALL_FAILED : queued ? GCSH_CALL_ISSUED : GCSH_CALL_DONE);
        if (rc == 0 && (call->flags & GCSH_TRACE_SYNC))
            gcsh_flight_synced(ctx->flight, call->rec.id);
    }
    if (!t->on)
        return;
    trace_event e = {.rec = call->rec, .m0 = call->m0, .anchor = t->cur_anchor};
    e.rec.t1 = t1;
    e.rec.failed = rc != 0;
    if (call->m0)
        e.m1 = mark(t, ctx);
    pop(t, call->slot, &e);
}

/* ---- Lua lines and collectives ------------------------------------------------ */

/* A GPU anchor per command while tracing: the stream is idle between
 * commands (each ends with a sync), so its mark passes at once. */
static void new_anchor(gcsh_ctx *ctx, gcsh_trace *t)
{
    t->cur_anchor = -1;
    void *m = NULL;
    if (!t->on || !t->plain->mem->mark || t->plain->mem->mark(ctx, &m) != 0)
        return;
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
        t->anchors[t->nanchors] = (anchor){.mark = m, .host = gcsh_trace_now()};
        t->cur_anchor = (int)t->nanchors++;
    }
    pthread_mutex_unlock(&t->lock);
    if (t->cur_anchor < 0)
        t->plain->mem->mark_free(ctx, m);
}

void gcsh_trace_chunk_begin(gcsh_ctx *ctx, const char *src, size_t len)
{
    gcsh_trace *t = ctx->trace_store;
    if (!t)
        return;
    t->lua_thread = pthread_self(); /* the worker's: where Lua lines are asked */
    t->lua_known = 1;
    new_anchor(ctx, t);
    if (len > 7 && memcmp(src, "return ", 7) == 0) { /* the prompt's "=expr" form */
        src += 7;
        len -= 7;
    }
    t->lua_line = (open_call){.rec = blank_rec()};
    t->lua_line.rec.op = GCSH_TRACE_OP_LUA;
    t->lua_line.rec.track = GCSH_TRACK_LUA;
    open_rec(ctx, t, &t->lua_line, NULL, src, len);
}

void gcsh_trace_chunk_end(gcsh_ctx *ctx, int failed)
{
    gcsh_trace *t = ctx->trace_store;
    if (!t)
        return;
    /* what an error left open (a check, a collective whose call raised)
     * closes with it, innermost first */
    if (t->check.fslot >= 0 || t->check.span >= 0)
        close_rec(ctx, t, &t->check, 1);
    while (t->ncoll > 0)
        close_rec(ctx, t, &t->coll[--t->ncoll], 1);
    int64_t t1 = gcsh_trace_now();
    if (t->lua_line.fslot >= 0)
        gcsh_flight_end(ctx->flight, t->lua_line.fslot, t->lua_line.rec.id, t1,
                        failed ? GCSH_CALL_FAILED : GCSH_CALL_DONE);
    t->lua_line.fslot = -1;
    pthread_mutex_lock(&t->lock);
    while (t->on && t->depth > 0) { /* the Lua line is the bottom of the stack */
        trace_event e = t->open[--t->depth];
        e.rec.t1 = t1;
        e.rec.failed = e.rec.track == GCSH_TRACK_LUA ? failed != 0 : 1;
        append(t, &e);
    }
    t->depth = 0;
    t->in_coll = 0;
    pthread_mutex_unlock(&t->lock);
}

static int check_begin(gcsh_ctx *ctx, const gcsh_check_note *n)
{
    gcsh_trace *t = ctx->trace_store;
    if (!t || t->ncoll == MAX_COLLS)
        return -1;
    open_call *c = &t->coll[t->ncoll++];
    *c = (open_call){.rec = blank_rec()};
    char *where = c->where;
    lua_where(ctx, t, where, sizeof c->where);
    c->rec.op = GCSH_TRACE_OP_COLL;
    c->rec.track = GCSH_TRACK_CALLS;
    c->rec.comm = n->comm;
    c->rec.seq = n->seq;
    c->rec.comm_rank = n->comm_rank;
    c->rec.comm_size = n->comm_size;
    c->rec.peer = n->peer;
    copy_text(c->label, sizeof c->label, n->op);
    t->in_coll = 0;
    open_rec(ctx, t, c, where, NULL, 0);
    if (!n->exchanged)
        return -1; /* .check off: no exchange, no check span */
    t->check = (open_call){.rec = c->rec};
    t->check.rec.op = GCSH_TRACE_OP_CHECK;
    copy_text(t->check.label, sizeof t->check.label, n->op);
    open_rec(ctx, t, &t->check, where, NULL, 0);
    return 0;
}

static void check_end(gcsh_ctx *ctx, int token, const gcsh_check_note *n, int rc)
{
    gcsh_trace *t = ctx->trace_store;
    if (!t)
        return;
    if (token >= 0)
        close_rec(ctx, t, &t->check, rc != 0);
    if (t->ncoll == 0)
        return;
    if (rc != 0) { /* a failed check: no collective runs */
        close_rec(ctx, t, &t->coll[--t->ncoll], 1);
        t->in_coll = 0;
        return;
    }
    t->coll[t->ncoll - 1].rec.seq = n->seq;
    t->in_coll = 1;
}

static void check_leave(gcsh_ctx *ctx)
{
    gcsh_trace *t = ctx->trace_store;
    if (!t || t->ncoll == 0)
        return;
    close_rec(ctx, t, &t->coll[--t->ncoll], 0);
    t->in_coll = t->ncoll > 0; /* back in the outer collective, if any */
}

const gcsh_check_hooks gcsh_trace_check_hooks = {
    .begin = check_begin, .end = check_end, .leave = check_leave,
};

/* ---- transfers: what a post does was said when it was prepared ------------- */

void gcsh_trace_xfer_note(gcsh_ctx *ctx, const void *x, const gcsh_trace_rec *d)
{
    gcsh_trace *t = ctx->trace_store;
    if (!t || !x)
        return;
    int k = t->nxfers < XFER_NOTES ? t->nxfers++ : (int)(t->calls % XFER_NOTES);
    t->xfers[k] = (xfer_note){.x = x, .d = *d};
}

void gcsh_trace_xfer_recall(gcsh_ctx *ctx, const void *x, gcsh_trace_rec *d)
{
    gcsh_trace *t = ctx->trace_store;
    for (int k = 0; t && k < t->nxfers; k++)
        if (t->xfers[k].x == x) {
            d->peer = t->xfers[k].d.peer;
            d->bytes = t->xfers[k].d.bytes;
            d->obj = t->xfers[k].d.obj;
            d->slot = t->xfers[k].d.slot;
            d->value = t->xfers[k].d.value;
            d->net = t->xfers[k].d.net;
            d->offset = t->xfers[k].d.offset;
            d->xfer = t->xfers[k].d.xfer;
            return;
        }
}

void gcsh_trace_xfer_forget(gcsh_ctx *ctx, const void *x)
{
    gcsh_trace *t = ctx->trace_store;
    for (int k = 0; t && k < t->nxfers; k++)
        if (t->xfers[k].x == x)
            t->xfers[k] = t->xfers[--t->nxfers];
}

/* ---- init, start, stop, copies ------------------------------------------------- */

static size_t max_events(void)
{
    return (size_t)gcsh_env_value(GCSH_ENV_TRACE_EVENTS);
}

/* ctx->be is the recording table (or the backend's own again). */
static void install(gcsh_ctx *ctx, gcsh_trace *t, int on)
{
    ctx->be = on ? &t->tables.be : t->plain;
    t->installed = on;
}

int gcsh_trace_init(gcsh_ctx *ctx, gcsh_trace_wrapper *wrap)
{
    if (ctx->trace_store)
        return 0;
    gcsh_trace *t = calloc(1, sizeof *t);
    if (!t)
        return gcsh_set_error(ctx, "trace: out of host memory");
    pthread_mutex_init(&t->lock, NULL);
    t->plain = ctx->be;
    t->cur_anchor = -1;
    t->check.fslot = t->check.span = t->lua_line.fslot = t->lua_line.span = -1;
    gethostname(t->host, sizeof t->host - 1);
    wrap(&t->tables, t->plain);
    ctx->trace_store = t;
    ctx->check_hooks = &gcsh_trace_check_hooks;
    install(ctx, t, ctx->flight != NULL);
    return 0;
}

int gcsh_trace_start(gcsh_ctx *ctx)
{
    gcsh_trace *t = ctx->trace_store;
    if (!t)
        return gcsh_set_error(ctx, "trace: this rank has no recorder");
    if (ctx->trace)
        return 0; /* already on */
    t->max = max_events();
    gcsh_trace_clock(ctx, t->host, &t->offset, &t->rtt);
    pthread_mutex_lock(&t->lock);
    t->on = 1;
    pthread_mutex_unlock(&t->lock);
    ctx->trace = t;
    install(ctx, t, 1);
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

/* The blob of what is recorded, oldest span first, running calls
 * included.  Lock held. */
static void *build_blob(gcsh_ctx *ctx, gcsh_trace *t, int final, size_t *len)
{
    size_t nrec = t->n + (size_t)t->depth;
    size_t bytes = sizeof(gcsh_trace_blob) + nrec * sizeof(gcsh_trace_rec) + t->plen;
    char *p = malloc(bytes);
    if (!p)
        return NULL;
    gcsh_trace_blob *b = (gcsh_trace_blob *)(void *)p;
    *b = (gcsh_trace_blob){.rank = ctx->rank, .final = final, .now = gcsh_trace_now(),
                           .offset = t->offset, .rtt = t->rtt, .nrec = nrec, .npool = t->plen,
                           .dropped = t->dropped};
    snprintf(b->host, sizeof b->host, "%s", t->host);
    snprintf(b->device, sizeof b->device, "%s", ctx->device);
    gcsh_trace_rec *rec = (gcsh_trace_rec *)(void *)(p + sizeof *b);
    for (size_t i = 0; i < t->n; i++) {
        const trace_event *e = &t->ev[(t->head + i) % t->cap];
        rec[i] = e->rec;
        resolve_gpu(ctx, t, e, &rec[i]);
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

/* Forgets every span (marks released).  Lock held. */
static void clear(gcsh_ctx *ctx, gcsh_trace *t)
{
    void (*mark_free)(gcsh_ctx *, void *) = t->plain ? t->plain->mem->mark_free : NULL;
    for (size_t i = 0; i < t->n; i++)
        free_marks(t, &t->ev[(t->head + i) % t->cap]);
    for (size_t i = 0; mark_free && i < t->nanchors; i++)
        mark_free(ctx, t->anchors[i].mark);
    free(t->ev);
    free(t->pool);
    free(t->anchors);
    t->ev = NULL;
    t->anchors = NULL;
    t->pool = NULL;
    t->n = t->head = t->cap = t->plen = t->pcap = t->nanchors = t->capanchors = t->dropped = 0;
    memset(t->where, 0, sizeof t->where);
    t->depth = t->nlabels = 0;
    t->cur_anchor = -1;
}

void *gcsh_trace_stop(gcsh_ctx *ctx, size_t *len)
{
    gcsh_trace *t = ctx->trace;
    if (!t)
        return NULL;
    ctx->trace = NULL;
    install(ctx, t, ctx->flight != NULL);
    pthread_mutex_lock(&t->lock);
    void *blob = build_blob(ctx, t, 1, len);
    t->on = 0;
    clear(ctx, t);
    pthread_mutex_unlock(&t->lock);
    /* records still open keep their flight recorder slots, not their spans */
    t->lua_line.span = t->check.span = -1;
    for (int i = 0; i < t->ncoll; i++)
        t->coll[i].span = -1;
    return blob;
}

void gcsh_trace_free(gcsh_ctx *ctx)
{
    gcsh_trace *t = ctx->trace_store;
    if (!t)
        return;
    ctx->trace = NULL;
    install(ctx, t, 0);
    pthread_mutex_lock(&t->lock);
    t->on = 0;
    clear(ctx, t);
    pthread_mutex_unlock(&t->lock);
    pthread_mutex_destroy(&t->lock);
    free(t);
    ctx->trace_store = NULL;
    ctx->check_hooks = NULL;
}
