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

typedef struct gcsh_trace gcsh_trace;

enum gcsh_trace_track { GCSH_TRACK_LUA = 1, GCSH_TRACK_CALLS = 2, GCSH_TRACK_GPU = 3 };

/* A call's state in the flight recorder: on the CPU still (running), its
 * GPU work enqueued and not yet known done (issued: cuda), done, failed. */
enum gcsh_call_state { GCSH_CALL_NONE, GCSH_CALL_RUNNING, GCSH_CALL_ISSUED, GCSH_CALL_DONE,
                       GCSH_CALL_FAILED };

/* One span as shipped to rank 0: times in ns on the rank's monotonic clock
 * (t1 = -1: still running when written). */
typedef struct gcsh_trace_rec {
    int64_t t0, t1;
    int64_t g0, g1;      /* the GPU's side, -1 when none (g1 = -1, g0 set: still running) */
    uint64_t comm, seq;  /* the collective it belongs to (the check: check_hooks.h), seq 0: none */
    uint64_t bytes;
    uint64_t id;         /* the rank's call number (1, 2, ...; the flight recorder's too) */
    uint64_t obj;        /* the window or signals it works on (equal on every rank), 0: none */
    uint64_t value;      /* a signal's value: set, added, waited for */
    int64_t slot;        /* a signal's slot, -1: none */
    uint32_t op;         /* gcsh_trace_op_name(op) */
    uint32_t text;       /* 1 + offset of a string in the rank's pool (a Lua line), or 0 */
    uint32_t label;      /* 1 + offset of the collective's name ("allreduce"), or 0 */
    uint32_t where;      /* 1 + offset of the Lua file:line that made the call, or 0 */
    int32_t peer;        /* a rank of the communicator, -1: none */
    int32_t comm_rank, comm_size;
    int16_t dtype, redop;
    int16_t coll, algo;  /* a kernel collective: enum gcsh_kcoll, gcsh_kalgo (-1: none) */
    int16_t cmp;         /* a signal wait's comparison (enum gcsh_cmp), -1: none */
    uint8_t track;
    uint8_t failed;
    uint8_t net;         /* it went over the network path (another node's rank) */
    uint8_t state;       /* enum gcsh_call_state (the flight recorder's), 0: a trace span */
} gcsh_trace_rec;

/* A record with nothing known yet. */
#define GCSH_TRACE_REC_BLANK                                                                       \
    {.t1 = -1, .g0 = -1, .g1 = -1, .peer = -1, .dtype = -1, .redop = -1, .coll = -1, .algo = -1, \
     .comm_rank = -1, .slot = -1, .cmp = -1}

/* What a rank ships (MSG_TRACE_DATA): this header, nrec records, npool
 * bytes of strings. */
typedef struct gcsh_trace_blob {
    int32_t rank, final;
    char host[64];
    char device[128];
    int64_t now;         /* the rank's clock when it was written */
    int64_t offset;      /* add to the rank's times to get rank 0's clock */
    int64_t rtt;         /* the round trip the offset was measured with (ns), -1 unmeasured */
    uint64_t nrec, npool, dropped;
    uint64_t flight;     /* recorded by the flight recorder: its size (calls kept); 0: a trace */
} gcsh_trace_blob;

/* ---- every rank ---------------------------------------------------------- */

/* After the backend is up: the rank's recorder (ctx->trace_store); with the
 * flight recorder on (ctx->flight), ctx->be becomes the recording table for
 * the whole session.  0 or -1 (ctx->err). */
int gcsh_trace_init(gcsh_ctx *ctx);
/* Starts tracing on this rank (collective over MPI_COMM_WORLD: the clock
 * offset to rank 0): spans are kept; ctx->be is the recording table.  0 or
 * -1 (ctx->err). */
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

/* Rank 0's clock minus this rank's, and the round trip it was measured
 * with (-1: not measured: the same host's clock, offset 0).  Collective
 * over MPI_COMM_WORLD; only ranks on other hosts than rank 0's ping. */
void gcsh_trace_clock(gcsh_ctx *ctx, const char *host, int64_t *offset, int64_t *rtt);
int64_t gcsh_trace_now(void);

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

/* The traced copy of a backend's tables (trace_wrap.c): every function that
 * does work is the backend's own wrapped in a span; the others are shared. */
typedef gcsh_backend_copy gcsh_trace_tables;

void gcsh_trace_wrap(gcsh_trace_tables *t, const gcsh_backend *plain);

/* Operation names and categories, the same in every process. */
const char *gcsh_trace_op_name(uint32_t op);
const char *gcsh_trace_op_cat(uint32_t op);
uint32_t gcsh_trace_op_count(void);
/* The operations that are not backend calls: a Lua line, a collective
 * (parent of its check and calls), its check. */
uint32_t gcsh_trace_op_lua(void);
uint32_t gcsh_trace_op_coll(void);
uint32_t gcsh_trace_op_check(void);
/* Signal operations, for the flows from what releases a wait to the wait:
 * 0 none, 1 a set or add (or a put with a signal), 2 a wait. */
int gcsh_trace_op_signal(uint32_t op);

#endif
