/* Abandoned MPI requests and the memory they may touch.  See orphans.h. */
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/orphans.h"

typedef struct orphan {
    MPI_Request req;   /* MPI_REQUEST_NULL: pending until exit */
    gcsh_range range[GCSH_ORPHAN_RANGES];
    void *owned;
    MPI_Datatype type;
    struct orphan *next;
} orphan;

/* A free that waits until no pending request touches the memory. */
typedef struct held {
    void *p;
    size_t bytes;
    void (*release)(void *);
    struct held *next;
} held;

struct gcsh_orphans {
    orphan *pending;
    held *held;
    size_t npending;
    /* Bookkeeping failed once (out of memory): some request is pending that
     * this list does not know, so nothing is freed through it any more. */
    int lost_track;
};

gcsh_orphans *gcsh_orphans_of(gcsh_ctx *ctx)
{
    if (!ctx->orphans)
        ctx->orphans = calloc(1, sizeof(gcsh_orphans));
    return ctx->orphans;
}

int gcsh_orphans_adopt(gcsh_orphans *o, MPI_Request req, const gcsh_range *ranges, int n,
                       void *owned, MPI_Datatype type)
{
    orphan *e = o ? calloc(1, sizeof *e) : NULL;
    if (!e) {
        if (o)
            o->lost_track = 1;
        return -1; /* owned and type are leaked: MPI may still use them */
    }
    e->req = req;
    for (int i = 0; i < n && i < GCSH_ORPHAN_RANGES; i++)
        e->range[i] = ranges[i];
    e->owned = owned;
    e->type = type;
    e->next = o->pending;
    o->pending = e;
    o->npending++;
    return 0;
}

static int overlaps(const gcsh_range *r, const char *lo, const char *hi)
{
    const char *a = r->p;
    return a && r->bytes && a < hi && lo < a + r->bytes;
}

int gcsh_orphans_touch(gcsh_orphans *o, const void *p, size_t bytes)
{
    if (!o)
        return 0;
    if (o->lost_track)
        return 1;
    const char *lo = p, *hi = lo + (bytes ? bytes : 1);
    for (const orphan *e = o->pending; e; e = e->next)
        for (int i = 0; i < GCSH_ORPHAN_RANGES; i++)
            if (overlaps(&e->range[i], lo, hi))
                return 1;
    return 0;
}

/* Whether MPI is done with e: it completed, or MPI_Test failed on it
 * (completed with an error, which MPI_Test reports and does not free). */
static int completed(orphan *e)
{
    if (e->req == MPI_REQUEST_NULL)
        return 0;
    int done = 0;
    if (MPI_Test(&e->req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        if (e->req != MPI_REQUEST_NULL)
            MPI_Request_free(&e->req);
        return 1;
    }
    return done;
}

static void drop_completed(gcsh_orphans *o)
{
    for (orphan **pp = &o->pending; *pp;) {
        orphan *e = *pp;
        if (!completed(e)) {
            pp = &e->next;
            continue;
        }
        *pp = e->next;
        free(e->owned);
        if (e->type != MPI_DATATYPE_NULL)
            MPI_Type_free(&e->type);
        free(e);
        o->npending--;
    }
}

static void release_untouched(gcsh_orphans *o)
{
    for (held **pp = &o->held; *pp;) {
        held *h = *pp;
        if (gcsh_orphans_touch(o, h->p, h->bytes)) {
            pp = &h->next;
            continue;
        }
        *pp = h->next;
        h->release(h->p);
        free(h);
    }
}

void gcsh_orphans_reap(gcsh_orphans *o)
{
    if (!o || (!o->pending && !o->held))
        return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized)
        return;
    drop_completed(o);
    release_untouched(o);
}

void gcsh_orphans_free(gcsh_orphans *o, void *p, size_t bytes, void (*release)(void *))
{
    gcsh_orphans_reap(o);
    if (!gcsh_orphans_touch(o, p, bytes)) {
        release(p);
        return;
    }
    held *h = malloc(sizeof *h);
    if (!h)
        return; /* leaked: MPI may still write it */
    *h = (held){.p = p, .bytes = bytes, .release = release, .next = o->held};
    o->held = h;
}

int gcsh_orphans_allgather(gcsh_orphans *o, MPI_Comm comm, int size, const void *mine, void *all,
                           size_t bytes, const _Atomic int *interrupt, void (*pause)(unsigned),
                           int *mpi_rc)
{
    size_t total = bytes * (size_t)size;
    char *bounce = bytes <= INT_MAX ? malloc(bytes + total + 1) : NULL;
    *mpi_rc = -1;
    if (!bounce)
        return GCSH_EXCHANGE_FAILED;
    memcpy(bounce, mine, bytes);
    MPI_Request req;
    *mpi_rc = MPI_Iallgather(bounce, (int)bytes, MPI_BYTE, bounce + bytes, (int)bytes, MPI_BYTE,
                             comm, &req);
    if (*mpi_rc != MPI_SUCCESS) {
        free(bounce);
        return GCSH_EXCHANGE_FAILED;
    }
    gcsh_orphans_reap(o);
    for (unsigned polls = 0;; polls++) {
        int done = 0;
        *mpi_rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (*mpi_rc != MPI_SUCCESS) {
            /* an error inside a collective: parts of it may still run */
            if (req != MPI_REQUEST_NULL)
                MPI_Request_free(&req);
            gcsh_orphans_adopt(o, MPI_REQUEST_NULL, NULL, 0, bounce, MPI_DATATYPE_NULL);
            return GCSH_EXCHANGE_FAILED;
        }
        if (done)
            break;
        if (atomic_load(interrupt)) {
            gcsh_orphans_adopt(o, req, NULL, 0, bounce, MPI_DATATYPE_NULL);
            return GCSH_EXCHANGE_INTERRUPTED;
        }
        if (pause)
            pause(polls);
    }
    memcpy(all, bounce + bytes, total);
    free(bounce);
    return 0;
}

size_t gcsh_orphans_pending(const gcsh_orphans *o)
{
    return o ? o->npending : 0;
}

void gcsh_orphans_close(gcsh_orphans *o)
{
    if (!o)
        return;
    gcsh_orphans_reap(o);
    /* what is still pending keeps its memory: MPI_Finalize may progress it */
    for (orphan *e = o->pending, *next; e; e = next) {
        next = e->next;
        free(e);
    }
    for (held *h = o->held, *next; h; h = next) {
        next = h->next;
        free(h);
    }
    free(o);
}
