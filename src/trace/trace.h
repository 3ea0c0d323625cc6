/* Traces: .trace FILE | off and gcsh --trace FILE write a Chrome trace-event
 * JSON file (Perfetto, chrome://tracing) with one process per rank.
 *
 * Every rank records spans on three tracks: the Lua lines it runs, the gcsh
 * calls it makes (every call into the backend: collectives, kernels, window
 * create and free, transfers, signal operations, copies; args bytes, dtype,
 * op, algo, peer, sequence number) and, where the backend has marks (cuda:
 * CUDA events on the rank's stream, read when the trace is written), the
 * GPU's side of each call.  The calls pass through one layer: while tracing
 * is on, ctx->be is a copy of the backend's table whose functions record a
 * span around the backend's own (trace_wrap.c); off, ctx->be is the
 * backend's table again and tracing costs nothing.
 *
 * Collectives carry their communicator id and sequence number from the
 * collective checks (collcheck.h; counted with .check off too), so the file links
 * the same collective on every rank with flow arrows, in the order the ranks
 * reached it.  Clocks: ranks on rank 0's host share its monotonic clock; the
 * others' offset to rank 0 is measured over MPI when tracing starts.
 *
 * Rank 0 (trace_coord.c) starts and stops tracing on every rank, collects
 * each rank's events and writes the file (trace_json.c).  A hang report, an
 * .abort and the end of a session on a lost rank or a device fault write it
 * too, with the calls still running shown unfinished: where each rank stopped. */
#ifndef GCSH_TRACE_H
#define GCSH_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "wire/collcheck.h"
#include "core/gcsh.h"

typedef struct gcsh_trace gcsh_trace;

enum gcsh_trace_track { GCSH_TRACK_LUA = 1, GCSH_TRACK_CALLS = 2, GCSH_TRACK_GPU = 3 };

/* One span as shipped to rank 0: times in ns on the rank's monotonic clock
 * (t1 = -1: still running when written). */
typedef struct gcsh_trace_rec {
    int64_t t0, t1;
    int64_t g0, g1;      /* the GPU's side, -1 when none (g1 = -1, g0 set: still running) */
    uint64_t comm, seq;  /* the collective it belongs to (collcheck.h), seq 0: none */
    uint64_t bytes;
    uint32_t op;         /* gcsh_trace_op_name(op) */
    uint32_t text;       /* 1 + offset of a string in the rank's pool (a Lua line), or 0 */
    uint32_t label;      /* 1 + offset of the collective's name ("allreduce"), or 0 */
    int32_t peer;        /* -1: none */
    int32_t comm_rank, comm_size;
    int16_t dtype, redop;
    int16_t coll, algo;  /* a kernel collective: enum gcsh_kcoll, gcsh_kalgo (-1: none) */
    uint8_t track;
    uint8_t failed;
} gcsh_trace_rec;

/* A record with nothing known yet. */
#define GCSH_TRACE_REC_BLANK                                                                       \
    {.t1 = -1, .g0 = -1, .g1 = -1, .peer = -1, .dtype = -1, .redop = -1, .coll = -1, .algo = -1, \
     .comm_rank = -1}

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
} gcsh_trace_blob;

/* ---- every rank ---------------------------------------------------------- */

/* Starts tracing on this rank (collective over MPI_COMM_WORLD: the clock
 * offset to rank 0): ctx->be becomes the traced table.  0 or -1 (ctx->err). */
int gcsh_trace_start(gcsh_ctx *ctx);
/* Stops: ctx->be is the backend's own table again.  Returns the final blob
 * (malloc'd, *len bytes); the rank's trace is gone. */
void *gcsh_trace_stop(gcsh_ctx *ctx, size_t *len);
/* A copy of what is recorded so far, calls still running included (any
 * thread: the watcher answers a flush with it).  NULL when not tracing. */
void *gcsh_trace_snapshot(gcsh_ctx *ctx, size_t *len);
/* At exit: releases what tracing kept (ctx->trace_store). */
void gcsh_trace_free(gcsh_ctx *ctx);
/* The backend's own table (ctx->be when not tracing). */
const gcsh_backend *gcsh_trace_plain(const gcsh_ctx *ctx);

/* The Lua line a chunk runs (worker.c). */
void gcsh_trace_chunk_begin(gcsh_ctx *ctx, const char *src, size_t len);
void gcsh_trace_chunk_end(gcsh_ctx *ctx, int failed);

/* The check seam (collcheck.c): the fingerprint exchange as a span (when .check
 * is on), and the collective that the backend calls until check_leave
 * belong to.  begin returns a token for end. */
int gcsh_trace_check_begin(gcsh_ctx *ctx, const gcsh_comm_check *cc, const gcsh_fingerprint *fp);
void gcsh_trace_check_end(gcsh_ctx *ctx, int token, const gcsh_comm_check *cc,
                          const gcsh_fingerprint *fp, int rc);
void gcsh_trace_check_leave(gcsh_ctx *ctx);

/* ---- the traced calls (trace_wrap.c, trace.c) ------------------------------ */

/* A call in progress: what trace_call_begin filled in, for trace_call_end. */
typedef struct gcsh_trace_call {
    gcsh_trace_rec rec;
    void *m0;            /* GPU mark before the call, or NULL */
    int slot;            /* its place on the rank's stack of running calls, -1: none */
} gcsh_trace_call;

/* Flags of a traced operation. */
#define GCSH_TRACE_GPU 1u  /* enqueues GPU work: marked before and after */

void gcsh_trace_call_begin(gcsh_ctx *ctx, gcsh_trace_call *call, uint32_t op, unsigned flags);
void gcsh_trace_call_end(gcsh_ctx *ctx, gcsh_trace_call *call, int rc);

/* The traced copy of a backend's tables (trace_wrap.c): every function that
 * does work is the backend's own wrapped in a span; the others are shared. */
typedef struct gcsh_trace_tables {
    gcsh_backend be;
    gcsh_mem_ops mem;
    gcsh_comm_ops comm;
    gcsh_window_ops win;
    gcsh_kernel_ops kern;
    gcsh_xfer_ops xfer;
} gcsh_trace_tables;

void gcsh_trace_wrap(gcsh_trace_tables *t, const gcsh_backend *plain);

/* Operation names and categories, the same in every process. */
const char *gcsh_trace_op_name(uint32_t op);
const char *gcsh_trace_op_cat(uint32_t op);
uint32_t gcsh_trace_op_count(void);
/* The two operations that are not backend calls. */
uint32_t gcsh_trace_op_lua(void);
uint32_t gcsh_trace_op_check(void);

#endif
