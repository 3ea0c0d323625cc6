/* What the recorders keep of a call: a span (trace.h) or a flight
 * recorder's slot (flight.h), and the blob a rank ships them in.  Types
 * only, shared by the recorders and the writer (trace_json.h). */
#ifndef GCSH_TRACE_REC_H
#define GCSH_TRACE_REC_H

#include <stdint.h>

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
    int64_t offset;      /* the region's first element (a kernel's; a transfer's in the
                            window: a put's destination, a get's source), -1: none */
    uint64_t seen;       /* a signal wait's word when it returned (seen_set) */
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
    uint8_t seen_set;    /* seen was read: the wait ran on this thread, not a stream */
    uint8_t xfer;        /* a transfer's offset: 1 a put's destination, 2 a get's source */
} gcsh_trace_rec;

/* A record with nothing known yet. */
#define GCSH_TRACE_REC_BLANK                                                                       \
    {.t1 = -1, .g0 = -1, .g1 = -1, .peer = -1, .dtype = -1, .redop = -1, .coll = -1, .algo = -1, \
     .comm_rank = -1, .slot = -1, .offset = -1, .cmp = -1}

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

#endif
