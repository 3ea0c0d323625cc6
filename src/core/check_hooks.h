/* What a collective's check tells a listener: the recording layer (trace.c)
 * makes each collective a span from its check to its leave, with the
 * fingerprint exchange as a child span.  The check (wire/collcheck.c) calls
 * through ctx->check_hooks, which the recording layer sets as it starts
 * (gcsh_trace_init), and never names it; the types are core's so that the
 * recording layer, below the check, needs nothing of it. */
#ifndef GCSH_CHECK_HOOKS_H
#define GCSH_CHECK_HOOKS_H

#include <stdint.h>

#include "core/gcsh.h"

/* The collective a check is about. */
typedef struct gcsh_check_note {
    uint64_t comm;      /* the communicator's id */
    uint64_t seq;       /* its collective's sequence number; 0: none (send/recv) */
    int comm_rank, comm_size;
    int peer;           /* send/recv's peer (a rank of the communicator), else -1 */
    const char *op;     /* "allreduce", "window", ... */
    int exchanged;      /* .check is on: fingerprints are exchanged */
} gcsh_check_note;

typedef struct gcsh_check_hooks {
    /* Before the check: a token for end. */
    int (*begin)(gcsh_ctx *ctx, const gcsh_check_note *n);
    /* After it: rc 0 when it passed (the collective runs until leave). */
    void (*end)(gcsh_ctx *ctx, int token, const gcsh_check_note *n, int rc);
    /* The collective is over (or failed). */
    void (*leave)(gcsh_ctx *ctx);
} gcsh_check_hooks;

#endif
