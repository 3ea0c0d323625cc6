/* Traces and the flight recorder: every gcsh call a rank makes, recorded.
 *
 * The calls pass through one layer: ctx->be is a copy of the backend's
 * table whose functions record a span around the backend's own
 * (trace_wrap.c).  It is in place for the whole session when the flight
 * recorder is on (the default), else only while tracing.  Each call gets
 * the rank's next call number, its arguments (bytes, dtype, op, algo, peer,
 * a signal's slot and value, a symmetric object's id), the collective it
 * belongs to (communicator id and sequence number from the collective
 * checks, collcheck.h; counted with .check off too) and the Lua file:line
 * that made it.
 *
 * The flight recorder (flight.h) keeps each rank's last N calls (N =
 * GCSH_FLIGHT_CALLS, default 2000) with their state: running, issued (a
 * GPU call enqueued), done, failed; the ring lives in memory rank 0 can
 * read, so a hang report, a crash, an interrupt or .flight FILE writes it
 * as a trace file even from a rank that is stuck or dead.
 *
 * .trace FILE | off and gcsh --trace FILE keep every span (the most recent
 * GCSH_TRACE_EVENTS of them) on three tracks: the Lua lines the rank runs,
 * the gcsh calls (a collective is one span with its check and the
 * backend's call as children) and, where the backend has marks (cuda: CUDA
 * events on the rank's stream, read when the trace is written), the GPU's
 * side of each call.  The file links the same collective on every rank
 * with flow arrows, in the order the ranks reached it, and a put or
 * signal set/add with the wait it released.  Clocks: ranks on rank 0's
 * host share its monotonic clock; the others' offset to rank 0 is measured
 * over MPI.
 *
 * Rank 0 (shell/trace_coord.c) starts and stops tracing on every rank, collects
 * each rank's events and writes the file (trace_json.c).  A hang report, an
 * .abort and the end of a session on a lost rank or a device fault write it
 * too, with the calls still running shown unfinished: where each rank
 * stopped; a rank that died is written from what it had (the last copy and
 * its flight recorder). */
#ifndef GCSH_TRACE_H
#define GCSH_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "core/check_hooks.h"
#include "core/gcsh.h"
#include "trace/trace_rec.h"

typedef struct gcsh_trace gcsh_trace;

/* The traced copy of a backend's tables (trace_wrap.h). */
typedef gcsh_backend_copy gcsh_trace_tables;
/* Fills t with plain's tables, each function that does work wrapped. */
typedef void gcsh_trace_wrapper(gcsh_trace_tables *t, const gcsh_backend *plain);

/* ---- every rank ---------------------------------------------------------- */

/* After the backend is up: the rank's recorder (ctx->trace_store); with the
 * flight recorder on (ctx->flight), ctx->be becomes the recording table for
 * the whole session.  0 or -1 (ctx->err). */
int gcsh_trace_init(gcsh_ctx *ctx, gcsh_trace_wrapper *wrap);
/* Starts tracing on this rank (collective over MPI_COMM_WORLD: the clock
 * offset to rank 0): spans are kept; ctx->be is the recording table.  0 or
 * -1 (ctx->err; the recorder must have been made by gcsh_trace_init). */
int gcsh_trace_start(gcsh_ctx *ctx);
/* Stops: spans are no longer kept (ctx->be the backend's own table again
 * unless the flight recorder is on).  Returns the final blob (malloc'd,
 * *len bytes); the rank's trace is gone. */
void *gcsh_trace_stop(gcsh_ctx *ctx, size_t *len);
/* A copy of what is recorded so far, calls still running included (any
 * thread: the watcher answers a flush with it).  NULL when not tracing. */
void *gcsh_trace_snapshot(gcsh_ctx *ctx, size_t *len);
/* At exit: releases the recorder (ctx->trace_store). */
void gcsh_trace_free(gcsh_ctx *ctx);
/* The backend's own table (ctx->be when nothing records). */
const gcsh_backend *gcsh_trace_plain(const gcsh_ctx *ctx);

/* The Lua line a chunk runs (worker.c). */
void gcsh_trace_chunk_begin(gcsh_ctx *ctx, const char *src, size_t len);
void gcsh_trace_chunk_end(gcsh_ctx *ctx, int failed);

/* The check seam (check_hooks.h; gcsh_trace_init registers it in ctx->check_hooks): the
 * collective as a span from the check to its leave (or a failed check),
 * the fingerprint exchange as a child span (when .check is on), and the
 * collective that the backend calls until the leave belong to. */
extern const gcsh_check_hooks gcsh_trace_check_hooks;

/* ---- the traced calls (trace_wrap.c, trace.c) ------------------------------ */

/* A call in progress: what trace_call_begin filled in, for trace_call_end. */
typedef struct gcsh_trace_call {
    gcsh_trace_rec rec;
    void *m0;            /* GPU mark before the call, or NULL */
    int slot;            /* its place on the rank's stack of running calls, -1: none */
    int fslot;           /* its place in the flight recorder, -1: none */
    unsigned flags;
} gcsh_trace_call;

/* Flags of a traced operation. */
#define GCSH_TRACE_GPU 1u  /* enqueues GPU work: marked before and after */
#define GCSH_TRACE_SYNC 2u /* waits for the rank's stream: the GPU calls before are done */
#define GCSH_TRACE_MEM 4u  /* a memory call (the cheapest): the flight recorder alone keeps
                              its start, not its end or its Lua file:line; a trace does */

void gcsh_trace_call_begin(gcsh_ctx *ctx, gcsh_trace_call *call, uint32_t op, unsigned flags);
void gcsh_trace_call_end(gcsh_ctx *ctx, gcsh_trace_call *call, int rc);

/* A transfer's peer, bytes and signal (d's fields) when it is prepared,
 * for the spans of its posts (keyed by the backend's handle x). */
void gcsh_trace_xfer_note(gcsh_ctx *ctx, const void *x, const gcsh_trace_rec *d);
void gcsh_trace_xfer_recall(gcsh_ctx *ctx, const void *x, gcsh_trace_rec *d);
void gcsh_trace_xfer_forget(gcsh_ctx *ctx, const void *x);

#endif
