/* The capture layer behind gcsh.graph (l_graph.c): while fn runs, ctx->be
 * is a copy of the backend's table in which
 *   - the calls a graph may hold (collectives, kernels, signal set/add/wait,
 *     transfers posts and stream waits, fills and copies between the rank's
 *     own memory) are recorded, and, on a backend that captures by itself
 *     (cuda: stream capture), passed down while its stream captures;
 *   - every call that must reach the host now (a wait for the GPU, a copy
 *     to or from host memory, an allocation, a control exchange, a window's
 *     creation, a timer) is refused: -1 with ctx->err naming it, and the
 *     capture remembers the refusal, so it cannot end as a graph even where
 *     a binding ignores the status;
 *   - releases (a tensor or a transfer garbage-collected meanwhile) wait
 *     until the capture is over (a free inside a CUDA capture breaks it).
 * On the host backend nothing runs during a capture: the recording is the
 * graph, and its launch replays the calls from C (gcsh_graph_rec_run).
 *
 * Collectives: the checks (collcheck.h) run during capture as for a direct
 * call, so every rank captured the same sequence or the usual error says
 * who differs; the layer counts them per communicator (the check calls
 * gcsh_graph_note_check), and a replay advances those communicators'
 * sequence numbers by what it replays (l_graph.c). */
#ifndef GCSH_GRAPH_H
#define GCSH_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "core/backend.h"

typedef struct gcsh_graph_call gcsh_graph_call; /* one recorded call (graph.c) */

/* A communicator whose checked collectives the graph holds: its check
 * state (a gcsh_comm_check of collcheck.h, opaque here), and how many. */
typedef struct gcsh_graph_comm {
    void *check;
    gcsh_comm_impl *impl;
    uint64_t collectives;
} gcsh_graph_comm;

/* A send or recv the graph holds: replays issue it again (collcheck.h's
 * count of a pair's calls, which rank 0's checker orders them by). */
typedef struct gcsh_graph_p2p {
    void *check; /* the communicator's gcsh_comm_check */
    int send, peer;
    void *fp;    /* its fingerprint as captured (collcheck.h's, a copy) */
} gcsh_graph_p2p;

struct gcsh_graph_rec {
    gcsh_graph_call *call;
    size_t n, cap;
    gcsh_graph_comm *comm;
    size_t ncomm, cap_comm;
    gcsh_graph_p2p *p2p;
    size_t np2p, cap_p2p;
    uint64_t bytes; /* what the calls move per replay, for traces and bench */
};

typedef struct gcsh_graph_capture gcsh_graph_capture;

/* Starts a capture on this rank: ctx->be becomes the layer's table over
 * below (the table the capturable calls go to: the backend's own, not a
 * tracing copy, so nothing records a call that did not run).  -1 with
 * ctx->err when the backend has no graphs or already captures. */
int gcsh_graph_capture_begin(gcsh_ctx *ctx, const gcsh_backend *below);
/* Ends it: ctx->be is what it was, deferred releases run, and *out is the
 * backend's graph (with *rec_out the recording it keeps, for describing).
 * On failure (a refusal happened, or the backend could not instantiate) the
 * capture is abandoned and -1 returned with ctx->err. */
int gcsh_graph_capture_end(gcsh_ctx *ctx, gcsh_graph_impl **out, const gcsh_graph_rec **rec_out);
/* Ends it without a graph; never fails.  Idempotent. */
void gcsh_graph_capture_abandon(gcsh_ctx *ctx);

/* Records that `what` cannot be captured (why: a short reason) in ctx->err
 * and in the capture; returns -1.  For bindings that refuse before a call
 * reaches the backend (a checked collective must not fail after its check). */
int gcsh_graph_refuse(gcsh_ctx *ctx, const char *what, const char *why);

/* collcheck.c, after a collective's check passed while capturing: one more
 * collective on the communicator whose check state is cc. */
void gcsh_graph_note_check(gcsh_ctx *ctx, void *cc, gcsh_comm_impl *impl);

/* collcheck.c, after a send's or recv's check passed while capturing (fp:
 * its fingerprint, fp_len bytes, kept for what a replay tells). */
void gcsh_graph_note_p2p(gcsh_ctx *ctx, void *cc, int send, int peer, const void *fp,
                         size_t fp_len);

/* Runs rec's calls once, in order, through be's tables, stopping at the
 * first failure or at an interrupt (ctx->interrupt, checked between
 * calls): the host backend's replay. */
int gcsh_graph_rec_run(gcsh_ctx *ctx, const gcsh_graph_rec *rec, const gcsh_backend *be);
/* Before a replay: 0 when every resident the graph rings (p:allreduce
 * captured) still runs; -1 with ctx->err naming the first that stopped. */
int gcsh_graph_rec_ready(gcsh_ctx *ctx, const gcsh_graph_rec *rec, const gcsh_backend *be);
/* "2 calls: comm.allreduce x2" into buf (the op names and their counts, in
 * the order of their first call). */
char *gcsh_graph_rec_describe(const gcsh_graph_rec *rec, char *buf, size_t len);
void gcsh_graph_rec_free(gcsh_graph_rec *rec);

#endif
