/* The flight recorder's rings.  See flight.h.
 *
 * trace.c writes every record into a ring here (gcsh_flight_begin/end);
 * the ring's blob takes the recorders' clock and offset (trace_clock.h),
 * so that a flight file and a trace share one time line. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "trace/flight.h"
#include "core/env.h"
#include "trace/trace_clock.h"


/* One call: its record, the strings it names, and what changes when it
 * ends.  id is the slot's sequence number (0 while rewritten). */
typedef struct flight_call {
    _Atomic uint64_t id;
    _Atomic int64_t t1;
    _Atomic uint32_t state;
    gcsh_trace_rec rec;  /* text, label and where unused: the strings below */
    char label[24];      /* its collective's name */
    char text[72];       /* the Lua file:line that made it; a Lua line: its source */
} flight_call;

typedef struct flight_ring {
    _Atomic uint64_t synced; /* calls up to this number were followed by a completed sync */
    int32_t rank;
    uint32_t cap;
    int64_t offset, rtt;     /* to rank 0's clock (trace.h) */
    char host[64];
    char device[128];
    flight_call call[];
} flight_ring;

struct gcsh_flight {
    MPI_Comm comm;        /* the ranks of rank 0's node sharing rings, or MPI_COMM_NULL */
    MPI_Win win;
    flight_ring *mine;
    flight_ring **node;   /* [world size] on rank 0's node: the rings it reads, else NULL */
    int rank, size, private_ring;
    int heir;             /* this rank writes for rank 0 if it dies (gcsh_flight_heir) */
};

static long calls_wanted(void)
{
    return (long)gcsh_env_value(GCSH_ENV_FLIGHT_CALLS);
}

/* Node shared memory for the rings of rank 0's node (rank 0 learns where
 * each is); 0, or -1 when it cannot be had (then every ring is private). */
static int share_rings(gcsh_flight *f, const gcsh_ctx *ctx, size_t bytes)
{
    MPI_Comm_split(MPI_COMM_WORLD, ctx->node == 0 ? 0 : MPI_UNDEFINED, ctx->rank, &f->comm);
    if (f->comm == MPI_COMM_NULL)
        return -1;
    void *mine = NULL;
    int ok = MPI_Win_allocate_shared((MPI_Aint)bytes, 1, MPI_INFO_NULL, f->comm, &mine,
                                     &f->win) == MPI_SUCCESS, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, f->comm);
    if (!all_ok) {
        if (ok)
            MPI_Win_free(&f->win);
        MPI_Comm_free(&f->comm);
        return -1;
    }
    f->mine = mine;
    int n;
    MPI_Comm_size(f->comm, &n);
    int *world = malloc((size_t)n * sizeof *world);
    MPI_Allgather(&ctx->rank, 1, MPI_INT, world, 1, MPI_INT, f->comm);
    /* every rank of the node learns where the rings are: rank 0 reads
     * them, and so does its heir once rank 0 is gone (world is in rank
     * order: world[1] is the lowest rank after rank 0) */
    f->node = calloc((size_t)ctx->size, sizeof *f->node);
    for (int i = 0; i < n; i++) {
        MPI_Aint size;
        int disp;
        MPI_Win_shared_query(f->win, i, &size, &disp, &f->node[world[i]]);
    }
    f->heir = n > 1 && world[1] == ctx->rank;
    free(world);
    return 0;
}

gcsh_flight *gcsh_flight_open(gcsh_ctx *ctx)
{
    long n = calls_wanted();
    MPI_Bcast(&n, 1, MPI_LONG, 0, MPI_COMM_WORLD); /* rank 0's setting, on every rank */
    if (n == 0)
        return NULL;
    gcsh_flight *f = calloc(1, sizeof *f);
    f->rank = ctx->rank;
    f->size = ctx->size;
    f->comm = MPI_COMM_NULL;
    size_t bytes = sizeof(flight_ring) + (size_t)n * sizeof(flight_call);
    if (share_rings(f, ctx, bytes) != 0) {
        f->mine = calloc(1, bytes);
        f->private_ring = 1;
        if (ctx->rank == 0) { /* its own, at least */
            f->node = calloc((size_t)ctx->size, sizeof *f->node);
            f->node[0] = f->mine;
        }
    }
    flight_ring *g = f->mine;
    memset(g, 0, bytes);
    g->rank = ctx->rank;
    g->cap = (uint32_t)n;
    gethostname(g->host, sizeof g->host - 1);
    snprintf(g->device, sizeof g->device, "%s", ctx->device);
    gcsh_trace_clock(ctx, g->host, &g->offset, &g->rtt);
    if (f->comm != MPI_COMM_NULL)
        MPI_Barrier(f->comm); /* every ring is set before rank 0 reads one */
    return f;
}

void gcsh_flight_close(gcsh_flight *f)
{
    if (!f)
        return;
    if (f->comm != MPI_COMM_NULL) {
        MPI_Win_free(&f->win);
        MPI_Comm_free(&f->comm);
    }
    if (f->private_ring)
        free(f->mine);
    free(f->node);
    free(f);
}

int gcsh_flight_heir(const gcsh_flight *f)
{
    return f && f->heir;
}

size_t gcsh_flight_size(const gcsh_flight *f)
{
    return f ? f->mine->cap : 0;
}

/* ---- recording (the worker) ------------------------------------------------ */

/* s (or "") into buf, cut to fit: cheaper than snprintf on every call. */
static void copy_text(char *buf, size_t len, const char *s)
{
    size_t n = s ? strnlen(s, len - 1) : 0;
    memcpy(buf, s ? s : "", n);
    buf[n] = '\0';
}

int gcsh_flight_begin(gcsh_flight *f, const gcsh_trace_rec *r, const char *label,
                      const char *text)
{
    flight_ring *g = f->mine;
    int slot = (int)((r->id - 1) % g->cap);
    flight_call *c = &g->call[slot];
    atomic_store_explicit(&c->id, 0, memory_order_relaxed);
    atomic_thread_fence(memory_order_release); /* a reader sees 0 before what follows */
    c->rec = *r;
    atomic_store_explicit(&c->t1, -1, memory_order_relaxed);
    atomic_store_explicit(&c->state, GCSH_CALL_RUNNING, memory_order_relaxed);
    copy_text(c->label, sizeof c->label, label);
    copy_text(c->text, sizeof c->text, text);
    atomic_store_explicit(&c->id, r->id, memory_order_release);
    return slot;
}

void gcsh_flight_end(gcsh_flight *f, int slot, uint64_t id, int64_t t1, int state)
{
    flight_call *c = &f->mine->call[slot];
    if (atomic_load_explicit(&c->id, memory_order_relaxed) != id)
        return; /* the ring went round during the call: its slot is another's */
    atomic_store_explicit(&c->t1, t1, memory_order_relaxed);
    atomic_store_explicit(&c->state, (uint32_t)state, memory_order_release);
}

void gcsh_flight_synced(gcsh_flight *f, uint64_t id)
{
    atomic_store_explicit(&f->mine->synced, id, memory_order_release);
}

/* ---- reading (rank 0, or the rank's watcher) ----------------------------------- */

int gcsh_flight_readable(const gcsh_flight *f, int r)
{
    return f && (r == f->rank || (f->node && r >= 0 && r < f->size && f->node[r]));
}

/* The ring's newest calls (up to `newest`) copied whole, in number order
 * (call id sits in slot (id - 1) % cap; a slot rewritten meanwhile is
 * skipped); *n of them.  Only what is written is copied: a dump must be
 * quick when a crash ends the job (trace_coord.c). */
static flight_call *copy_calls(const flight_ring *g, size_t newest, size_t *n)
{
    uint64_t last = 0;
    for (uint32_t i = 0; i < g->cap; i++) {
        uint64_t id = atomic_load_explicit(&g->call[i].id, memory_order_acquire);
        last = id > last ? id : last;
    }
    size_t want = newest < g->cap ? newest : g->cap;
    want = want < last ? want : (size_t)last;
    flight_call *out = malloc((want ? want : 1) * sizeof *out);
    uint64_t synced = atomic_load_explicit(&g->synced, memory_order_acquire);
    size_t k = 0;
    for (uint64_t id = last - want + 1; want && id <= last; id++) {
        const flight_call *c = &g->call[(id - 1) % g->cap];
        if (atomic_load_explicit(&c->id, memory_order_acquire) != id)
            continue; /* being rewritten */
        uint32_t state = atomic_load_explicit(&c->state, memory_order_acquire);
        int64_t t1 = atomic_load_explicit(&c->t1, memory_order_relaxed);
        memcpy(&out[k].rec, &c->rec, sizeof c->rec);
        memcpy(out[k].label, c->label, sizeof c->label);
        memcpy(out[k].text, c->text, sizeof c->text);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&c->id, memory_order_relaxed) != id)
            continue; /* rewritten while copied */
        out[k].rec.id = id;
        out[k].rec.t1 = state == GCSH_CALL_RUNNING ? -1 : t1;
        out[k].rec.state = (uint8_t)(state == GCSH_CALL_ISSUED && id <= synced ? GCSH_CALL_DONE
                                                                                : state);
        out[k].label[sizeof out[k].label - 1] = out[k].text[sizeof out[k].text - 1] = '\0';
        k++;
    }
    *n = k;
    return out;
}

/* Appends s to the pool at *plen; returns 1 + its offset (0 for ""). */
static uint32_t pool_put(char *pool, size_t *plen, const char *s)
{
    if (!s[0])
        return 0;
    size_t n = strlen(s) + 1;
    memcpy(pool + *plen, s, n);
    uint32_t at = (uint32_t)*plen + 1;
    *plen += n;
    return at;
}

void *gcsh_flight_blob(gcsh_flight *f, int r, size_t *len)
{
    return gcsh_flight_blob_last(f, r, SIZE_MAX, len);
}

void *gcsh_flight_blob_last(gcsh_flight *f, int r, size_t newest, size_t *len)
{
    if (!gcsh_flight_readable(f, r))
        return NULL;
    const flight_ring *g = r == f->rank ? f->mine : f->node[r];
    size_t n;
    flight_call *c = copy_calls(g, newest, &n);
    size_t most = n * (sizeof c->label + sizeof c->text);
    size_t bytes = sizeof(gcsh_trace_blob) + n * sizeof(gcsh_trace_rec) + most;
    char *p = malloc(bytes);
    gcsh_trace_blob *b = (gcsh_trace_blob *)(void *)p;
    gcsh_trace_rec *rec = (gcsh_trace_rec *)(void *)(p + sizeof *b);
    char *pool = (char *)(rec + n);
    size_t plen = 0;
    for (size_t i = 0; i < n; i++) {
        rec[i] = c[i].rec;
        rec[i].label = pool_put(pool, &plen, c[i].label);
        uint32_t text = pool_put(pool, &plen, c[i].text);
        rec[i].text = rec[i].track == GCSH_TRACK_LUA ? text : 0;
        rec[i].where = rec[i].track == GCSH_TRACK_LUA ? 0 : text;
    }
    *b = (gcsh_trace_blob){.rank = g->rank, .final = 0, .now = gcsh_trace_now(),
                           .offset = g->offset, .rtt = g->rtt, .nrec = n, .npool = plen,
                           .flight = g->cap};
    snprintf(b->host, sizeof b->host, "%s", g->host);
    snprintf(b->device, sizeof b->device, "%s", g->device);
    free(c);
    *len = sizeof *b + n * sizeof *rec + plen;
    return p;
}
