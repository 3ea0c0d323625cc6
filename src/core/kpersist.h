/* The doorbell of the persistent all-reduce (kernel.persistent): what the
 * rank's host side and its resident worker share.  host_persist.c (a
 * progress thread) and kernels/persist.cu (a resident kernel, the bell in
 * mapped host memory) use the same layout and the same rules:
 *
 *   - the host fills entry `rung % GCSH_PERSIST_DEPTH` (tagged with its
 *     call, below), then publishes `rung + 1` (release); it fills an entry
 *     only once `done` shows the call that used it last completed
 *     (back-pressure: an entry is never overwritten while a call may still
 *     read it);
 *   - the resident waits for call `done`'s entry (the host thread: for
 *     `rung > done`, acquire; the cuda kernel: for the entry's tags), runs
 *     it (the "ll" protocol of core/kll.h over the window's LL area, which
 *     direct "ll" calls share: the call count lives in the window, so the
 *     two interleave), then publishes the calls completed in `done`
 *     (release; the cuda kernel once for every batch of calls it found
 *     rung together);
 *   - the host asks it to end by setting `stop`; when it ends, for any
 *     reason, it sets GCSH_PERSIST_ENDED in `done` (so every wait for a
 *     count returns) with the reason in `why`.
 *
 * The calls of one resident run in ring order, one at a time: a call is
 * cheap (at most a few KiB over NVLink or shared memory), and one at a
 * time is what keeps the ll flags of two calls apart (kll.h).
 *
 * Rings from a graph (cuda).  A graph replays the same bytes every time, so
 * it cannot write a ring entry (whose tags count calls).  A captured
 * p:allreduce() takes one of GCSH_PERSIST_GRAPH_SLOTS graph slots instead,
 * its job in the bell (graph_job, written by the host at capture).  Calls
 * captured back to back form sequences (at most GCSH_PERSIST_SEQ_CALLS
 * calls each, their slots going up), and each sequence is captured as one
 * node on the go words of its slots, in the resident's device memory:
 *   - a one-thread kernel (kernels/persist.cu's go_kernel) that numbers the
 *     sequence (GCSH_PERSIST_SEQS_OFFSET counts them), writes the number
 *     and GCSH_PERSIST_GO_PENDING into the low half of each of its slots'
 *     words but the last, then a fence, then the number and PENDING |
 *     GCSH_PERSIST_GO_LAST into the last slot's.
 * Waits are captured only where they are needed: before a sequence takes a
 * slot that earlier ones still hold pending (for the oldest, then the next,
 * until a slot is free), and before whatever the graph does next and at its
 * end (for the newest): a
 * wait until a sequence's last slot has its pending bit clear or its alive
 * bit (GCSH_PERSIST_GO_ALIVE, the high half) clear, a NOR stream wait, as
 * ~(word | ~(PENDING | ALIVE)) != 0.  So the next sequence is written while
 * the resident still runs the one before, and the graph's wait after each
 * one is gone (what a sequence still costs is the resident's: its looks at
 * the doorbell and fences, docs/benchmarks.md).
 * The resident runs the sequences in their numbers' order, one at a time:
 * once it sees the next number's last slot (between ring entries: an entry
 * it sees beside a last slot was rung before the graph launched, as the
 * rank's stream writes later ones after the graph), it fences and looks
 * again (a look's loads are unordered: the first may have seen the last
 * slot and missed a ring entry written before the launch; ring entries go
 * first), then reads the go words again (the sequence's other slots,
 * written before the last, are seen then), runs the slots pending with
 * that number, lowest first (the order they were captured), in one batch,
 * and clears them, the last one last; so a sequence's last slot clear means
 * it and every sequence before it ran.  The host sets every alive bit
 * before the launch; when the resident ends, for any reason, it clears the
 * whole word, so a replay waiting, or launched after, goes on (the host
 * refuses replays of a graph whose resident ended: they would run
 * nothing).  The calls a graph ran are counted in graph_done, not in done
 * (the host never waits for them: the graph does). */
#ifndef GCSH_KPERSIST_H
#define GCSH_KPERSIST_H

#include <stddef.h>
#include <stdint.h>

#include "core/hd.h"

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

/* A ring entry: the call's four words (the region's offset, low and high
 * half, its length n and dt | op << 16), each paired with the call's tag
 * (uint32_t)(call + 1) in one 8-byte word that is stored at once.  The cuda
 * resident reads entries ahead, with no doorbell word between (each read of
 * mapped host memory is a PCIe round trip), and takes an entry only once
 * all four pairs carry its call's tag: never an old one or a half-written
 * one (the rule of the LL protocol, kll.h).  So storing the last pair is
 * what rings: the host stores it, or, when the rank's stream holds work
 * the call must follow, the stream does (cuda_persist.c). */
typedef struct gcsh_persist_entry {
    uint64_t pair[4];
} gcsh_persist_entry;

/* What an entry asks for. */
typedef struct gcsh_persist_job {
    uint64_t offset, n; /* elements of the window's dtype */
    int32_t dt, op;
} gcsh_persist_job;

/* Graph slots of a resident: the calls its graphs may ring (a slot keeps
 * its call; cuda_persist.c says when a repeat takes another). */
#define GCSH_PERSIST_GRAPH_SLOTS 64
/* The most calls of a sequence: a batch of the resident (kernels/persist.cu's
 * kAhead) holds it whole, and two sequences of repeats of one call fit the
 * slots a repeat may take (cuda_persist.c), so one is written while the
 * resident runs the other. */
#define GCSH_PERSIST_SEQ_CALLS 16
/* A go word's bits (above). */
#define GCSH_PERSIST_GO_PENDING ((uint64_t)1)
#define GCSH_PERSIST_GO_LAST ((uint64_t)2) /* the sequence's last slot */
#define GCSH_PERSIST_GO_ALIVE ((uint64_t)1 << 32)
/* The sequence's number (bits 2-31 of the low half; 1 for the first
 * sequence a resident sees, counted modulo 2^30 by the go kernels). */
#define GCSH_PERSIST_GO_SEQ_SHIFT 2
#define GCSH_PERSIST_GO_SEQ_MASK 0x3fffffffu

typedef struct gcsh_persist_bell {
    uint64_t rung;  /* calls rung: the host backend's doorbell word (the host writes it) */
    uint64_t stop;  /* non-zero: end now (the host writes it) */
    uint64_t done;  /* calls completed, | GCSH_PERSIST_ENDED (the resident writes it) */
    uint64_t why;   /* enum gcsh_persist_end (the resident writes it, before done) */
    uint64_t graph_done; /* calls rung from graphs and completed (the resident writes it) */
    uint64_t pad;        /* the ring on a 16-byte boundary: the resident reads a line a lane */
    gcsh_persist_entry ring[GCSH_PERSIST_DEPTH];
    gcsh_persist_job graph_job[GCSH_PERSIST_GRAPH_SLOTS]; /* a slot's call (the host writes it) */
} gcsh_persist_bell;
/* The bells of a rank's residents are an array: each ring on a 16-byte
 * boundary (kernels/persist.cu checks it where it reads them). */
#define GCSH_PERSIST_BELL_ALIGNED                                                                  \
    (offsetof(gcsh_persist_bell, ring) % 16 == 0 && sizeof(gcsh_persist_bell) % 16 == 0)

/* Pair i of call `call`'s entry for job j. */
GCSH_HD static inline uint64_t gcsh_persist_pair(const gcsh_persist_job *j, uint64_t call, int i)
{
    uint32_t word = i == 0   ? (uint32_t)j->offset
                    : i == 1 ? (uint32_t)(j->offset >> 32)
                    : i == 2 ? (uint32_t)j->n
                             : ((uint32_t)j->dt & 0xffffu) | (uint32_t)j->op << 16;
    return word | (uint64_t)(uint32_t)(call + 1) << 32;
}

/* Call `call`'s job from its entry's 8 words (w[2i]: word i, w[2i+1]: its
 * tag): 1, or 0 when a pair does not carry the call's tag yet. */
GCSH_HD static inline int gcsh_persist_unpack(const uint32_t w[8], uint64_t call,
                                              gcsh_persist_job *j)
{
    uint32_t tag = (uint32_t)(call + 1);
    if (w[1] != tag || w[3] != tag || w[5] != tag || w[7] != tag)
        return 0;
    j->offset = w[0] | (uint64_t)w[2] << 32;
    j->n = w[4];
    j->dt = (int32_t)(w[6] & 0xffffu);
    j->op = (int32_t)(w[6] >> 16);
    return 1;
}

#ifndef __CUDACC__
/* The host's side (core/kpersist.c): stores pairs [0, pairs) of call's
 * entry for job j (pair 3 last: it rings), each at once; reads call's job
 * from its entry: 1, or 0 when it is not all there yet. */
void gcsh_persist_fill(gcsh_persist_entry *e, uint64_t call, const gcsh_persist_job *j,
                       int pairs);
int gcsh_persist_read(const gcsh_persist_entry *e, uint64_t call, gcsh_persist_job *j);
#endif

/* Device memory of a resident's own (zeroed before it starts), for its blocks
 * to share calls and count themselves out (kernels/persist.cu), and, at its
 * end, the go words of its graph slots (GCSH_PERSIST_GO_OFFSET). */
#define GCSH_PERSIST_SYNC_BYTES 4096
#define GCSH_PERSIST_GO_OFFSET (GCSH_PERSIST_SYNC_BYTES - 8 * GCSH_PERSIST_GRAPH_SLOTS)
/* Just before the go words: the sequences the go kernels numbered so far. */
#define GCSH_PERSIST_SEQS_OFFSET (GCSH_PERSIST_GO_OFFSET - 8)

#endif
