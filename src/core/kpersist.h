/* The doorbell of the persistent all-reduce (kernel.persistent): what the
 * rank's host side and its resident worker share.  host_persist.c (a
 * progress thread) and kernels/persist.cu (a resident kernel, the bell in
 * mapped host memory) use the same layout and the same rules:
 *
 *   - the host fills entry `rung % GCSH_PERSIST_DEPTH`, then publishes
 *     `rung + 1` (release); it fills an entry only once `done` shows the
 *     call that used it last completed (back-pressure: an entry is never
 *     overwritten while a call may still read it);
 *   - the resident waits for `rung > done` (acquire), runs the call of
 *     entry `done % GCSH_PERSIST_DEPTH` (the "ll" protocol of core/kll.h
 *     over the window's LL area, which direct "ll" calls share: the call
 *     count lives in the window, so the two interleave), then publishes
 *     `done + 1` (release);
 *   - the host asks it to end by setting `stop`; when it ends, for any
 *     reason, it sets GCSH_PERSIST_ENDED in `done` (so every wait for a
 *     count returns) with the reason in `why`.
 *
 * The calls of one resident run in ring order, one at a time: a call is
 * cheap (at most a few KiB over NVLink or shared memory), and one at a
 * time is what keeps the ll flags of two calls apart (kll.h). */
#ifndef GCSH_KPERSIST_H
#define GCSH_KPERSIST_H

#include <stdint.h>

/* Entries of the ring: how many calls may be rung before the first one
 * completed. */
#define GCSH_PERSIST_DEPTH 64
/* The most blocks (sms=) a resident kernel may have. */
#define GCSH_PERSIST_MAX_SMS 32
/* The most residents a rank runs at once (each holds at least an SM, or a
 * host thread).  On cuda their doorbells are allocated together, once:
 * nothing may be allocated or freed while a resident runs (cuda_persist.c). */
#define GCSH_PERSIST_MAX_RUNNING 16
/* Set in `done` when the resident ended; the count is in the bits below.  Bit
 * 62, not 63: a stream wait for "done >= n" compares as int64_t (cuda's
 * cuStreamWaitValue64 GEQ), so an ended resident releases it too. */
#define GCSH_PERSIST_ENDED ((uint64_t)1 << 62)

/* Why a resident ended (`why`). */
enum gcsh_persist_end {
    GCSH_PERSIST_RUNNING = 0,
    GCSH_PERSIST_STOPPED = 1,   /* the host set stop */
    GCSH_PERSIST_CANCELLED = 2, /* a wait for a peer was cancelled (an interrupt) */
    GCSH_PERSIST_TIMED_OUT = 3, /* a wait for a peer ran past its bound */
    GCSH_PERSIST_FAILED = 4,    /* an error: the host side has the message */
};

typedef struct gcsh_persist_entry {
    uint64_t offset, n; /* elements of dt */
    int32_t dt, op;
    uint64_t pad;       /* 32 bytes an entry */
} gcsh_persist_entry;

typedef struct gcsh_persist_bell {
    uint64_t rung;  /* calls rung (the host writes it) */
    uint64_t stop;  /* non-zero: end now (the host writes it) */
    uint64_t done;  /* calls completed, | GCSH_PERSIST_ENDED (the resident writes it) */
    uint64_t why;   /* enum gcsh_persist_end (the resident writes it, before done) */
    gcsh_persist_entry ring[GCSH_PERSIST_DEPTH];
} gcsh_persist_bell;

#endif
