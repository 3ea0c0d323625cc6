/* MPI requests that a rank stopped waiting for, and the memory they may
 * still touch.
 *
 * MPI cannot cancel a collective.  Once a rank gives up waiting for one (an
 * interrupt; an MPI error that left the ranks out of step), the request stays
 * alive inside MPI, and any later MPI call, on any communicator, may progress
 * it: read and write its buffers.  Freeing those buffers meanwhile lets MPI
 * write into freed memory (seen on the host backend: the shared-memory
 * transport's "Read -1, expected 536870912, errno = 14", then SIGSEGV; a
 * corrupted heap inside MPI_Finalize).  So the backends hand such a request
 * here with the address ranges it may touch, and memory in those ranges is
 * freed only once MPI says the request completed (it does when the peers
 * abandoned the same collective and progress resumes, as after a frozen rank
 * is continued).  What a request still pending at exit touches is never
 * freed: MPI_Finalize may still progress it.  The communicator of such a
 * request is retired by its backend: never freed and never used again, so
 * its context id is not reused while the request lives.
 *
 * Local to a rank and not thread-safe: the worker thread, which makes every
 * MPI call, is the only user. */
#ifndef GCSH_ORPHANS_H
#define GCSH_ORPHANS_H

#include <stddef.h>

#include <mpi.h>

#include "core/gcsh.h"

/* An address range a request may read or write. */
typedef struct gcsh_range {
    const void *p;
    size_t bytes;
} gcsh_range;

#define GCSH_ORPHAN_RANGES 2

/* The rank's list (ctx->orphans), made on first use; NULL when out of
 * memory (then nothing is freed through it: the safe side). */
gcsh_orphans *gcsh_orphans_of(gcsh_ctx *ctx);

/* Every function below takes a NULL list: nothing was ever abandoned.
 *
 * Adopts req (MPI_REQUEST_NULL: MPI cannot say when it ends, as after an
 * error inside a nonblocking collective: kept until exit) with up to
 * GCSH_ORPHAN_RANGES ranges (NULL p: unused), memory of its own to free()
 * once it completes (owned, or NULL) and a derived datatype to free then
 * (or MPI_DATATYPE_NULL).  Returns 0; -1 when out of memory, and then
 * nothing is ever freed through this list again (the safe side). */
int gcsh_orphans_adopt(gcsh_orphans *o, MPI_Request req, const gcsh_range *ranges, int n,
                       void *owned, MPI_Datatype type);

/* Tests the adopted requests (MPI_Test, local); those that completed are
 * dropped, with their own memory and whatever freeing waited for them. */
void gcsh_orphans_reap(gcsh_orphans *o);

/* Whether a pending request may touch [p, p + bytes). */
int gcsh_orphans_touch(gcsh_orphans *o, const void *p, size_t bytes);

/* Frees p (release(p)) now, or once no pending request touches
 * [p, p + bytes). */
void gcsh_orphans_free(gcsh_orphans *o, void *p, size_t bytes, void (*release)(void *));

/* Requests still pending. */
size_t gcsh_orphans_pending(const gcsh_orphans *o);

/* The backends' control exchange (backend.h: agree): every rank's `bytes`
 * of mine, in rank order, into all (size * bytes), over comm, through a
 * buffer of its own (callers pass stack or Lua memory, which an abandoned
 * exchange must not outlive).  Polls *interrupt between tests, calling
 * pause(polls) when given.  Returns 0; GCSH_EXCHANGE_INTERRUPTED when the
 * interrupt flag stopped the wait; GCSH_EXCHANGE_FAILED with the MPI error
 * code in *mpi_rc (-1: out of memory).  Either way an unfinished request
 * and its buffer go to o: the caller retires comm. */
enum { GCSH_EXCHANGE_FAILED = -1, GCSH_EXCHANGE_INTERRUPTED = -2 };
int gcsh_orphans_allgather(gcsh_orphans *o, MPI_Comm comm, int size, const void *mine, void *all,
                           size_t bytes, const _Atomic int *interrupt, void (*pause)(unsigned),
                           int *mpi_rc);

/* At the end of the rank (before MPI_Finalize): reaps once more, then frees
 * the bookkeeping only; memory that pending requests touch stays. */
void gcsh_orphans_close(gcsh_orphans *o);

#endif
