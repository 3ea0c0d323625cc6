/* The rank's check state (ctx->check), shared by the rank's side of the
 * checks, split in three: collcheck.c (checked operations, communicators,
 * aborts), where.c (whereabouts: the published operation, the line
 * sample) and faults.c (errors raised, unrecoverable faults).  Private to
 * those files; everyone else sees collcheck.h, where.h and faults.h. */
#ifndef GCSH_WIRE_CHECK_STATE_H
#define GCSH_WIRE_CHECK_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "wire/collcheck.h"
#include "wire/out.h"

/* Communicators other ranks aborted that one command remembers at most
 * before its end (beyond, they are aborted when the command ends). */
#define DOOMED_MAX 32
/* Operations other ranks abandoned that one command remembers (beyond, the
 * ranks still inside them are stopped, but a later arrival is not refused). */
#define ABANDONED_MAX 8
#define ENTERED_MAX 16

struct gcsh_check {
    int enabled;
    int fd;                 /* command channel */
    gcsh_capture *cap;      /* its lock serialises our sends with the output's */
    uint32_t serial;        /* fingerprints sent */
    uint64_t worlds;        /* world communicators made so far */
    gcsh_comm_check *comms; /* live communicators */
    uint64_t *aborted;      /* ids aborted during this chunk, reported at its end */
    size_t naborted, cap_aborted;
    char chunk[64];         /* the running chunk's short source */
    uint32_t chunk_seq;     /* the running chunk's number (the coordinator's) */
    gcsh_check_counts counts;
    char last_op[96];       /* the last operation entered, for fault reports */
    /* Checked operations publish their fingerprint and are put into words
     * only when someone asks (a hang report, a fault): a collective pays a
     * copy, not a format.  *_lazy: op / last_op are still to be made. */
    gcsh_fingerprint op_fp, last_fp;
    /* op_fp's pair counts when it is a send or recv: the sends to and
     * receives from every member of its communicator issued before it
     * (op_npairs members; collcheck.h), for rank 0's checker */
    uint64_t *op_pairs;
    int op_npairs, op_pairs_cap;
    int op_lazy, last_lazy;
    /* The command (chunk_seq) in which this rank said it runs checked
     * operations unchecked (MSG_UNCHECKED, collcheck_coord.h); 0: none. */
    uint32_t unchecked_said;
    /* Operations entered, checked or not (a fingerprint's entered), and
     * whether one entered unchecked since rank 0 last heard of this rank's
     * checks (then the next checked one says "back to checks" first). */
    uint64_t entered_count;
    int unchecked_open;

    /* Whereabouts: written by the worker thread, read by the watcher. */
    pthread_mutex_t lock;
    pthread_cond_t sampled_cond;
    int in_op;
    int op_waits; /* the operation waits for other ranks (not gcsh.sleep) */
    int op_unchecked; /* the published operation was entered with .check off */
    char op[128];
    double since;
    int sampled;
    char line[160];
    /* The published operation's communicator (a checked one), for aborts
     * that other ranks send while it runs (gcsh_check_abort_now). */
    int op_on_comm;
    uint64_t op_comm;
    /* Communicators that another rank aborted during this command, and
     * which rank: the worker aborts them before its next use of any
     * communicator; peer_from: who aborted the one whose operation
     * GCSH_INTERRUPT_PEER stopped. */
    uint64_t doomed[DOOMED_MAX];
    int doomed_from[DOOMED_MAX];
    int ndoomed;
    int peer_from;
    int peer_unchecked; /* the abandon that stopped it: a check that met it unchecked */
    /* Abandons (collcheck.h), .check off.  The intent: the operation whose
     * arguments the worker is reading (intent_on: 1 collective, 2 p2p). */
    int intent_on;
    gcsh_abandon_msg intent;
    const gcsh_comm_check *intent_cc; /* for its members; NULL once detached */
    const void *intent_call;          /* the binding's call that stated it */
    /* Operations other ranks abandoned in this command (under lock; the
     * count is read without it first: 0 on the fast path), and why the
     * one GCSH_INTERRUPT_PEER stopped was abandoned ("" for an abort). */
    gcsh_abandon_msg abandoned[ABANDONED_MAX];
    int abandoned_from[ABANDONED_MAX];
    atomic_int nabandoned;
    char peer_why[256];
    /* On a stream-ordered backend (cuda) a collective returns once queued,
     * so its kernel may still wait at the command's end for a rank that
     * abandoned it: the collectives entered in this command (entered_chunk),
     * and in_end_sync while the command's end waits for the GPU. */
    gcsh_fingerprint entered[ENTERED_MAX];
    int nentered;
    uint32_t entered_chunk;
    int in_end_sync;
    char peer_op[128]; /* the queued collective an abandon stopped, in words */
};

static inline double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- where.c, for the checks and the faults ---- */

/* A checked operation's whereabouts: the fingerprint, in words later. */
void gcsh_where_publish_fp(gcsh_check *k, const gcsh_fingerprint *fp);
void gcsh_where_publish_fp_locked(gcsh_check *k, const gcsh_fingerprint *fp);
/* The published operation in words (the caller holds k->lock). */
const char *gcsh_where_op_text(gcsh_check *k);
/* The last operation entered, in words, or "none" (k may be NULL). */
const char *gcsh_where_last_op(gcsh_check *k);
void gcsh_where_unpublish(gcsh_check *k);
/* "allreduce #5", "barrier #2 on comm 1a2b3c", "send to 1". */
void gcsh_fp_describe(const gcsh_fingerprint *fp, char *buf, size_t len);

#endif
