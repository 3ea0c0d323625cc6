/* gcsh.graph on the cuda backend: CUDA stream capture of the rank's stream.
 * The capture layer (core/graph.h) passes the capturable calls down while
 * the stream captures, so NCCL collectives, kernels, copies and event
 * waits become the graph's nodes; nothing runs until a replay launches it.
 *
 * Mode: cudaStreamCaptureModeThreadLocal.  The worker thread that captures
 * may not make an unsafe call (the layer refuses those first, by name);
 * the rank's watcher thread, which reads trace marks during a hang, is not
 * affected.  A replay is cudaGraphLaunch n times on the rank's stream; the
 * communicators of the graph's collectives are marked busy as a direct call
 * marks them, so an interrupted wait aborts them, and the throttle keeps
 * a long run of launches from blocking the host in a full launch queue. */
#include <stdlib.h>

#include "core/graph.h"
#include "cuda/cuda.h"

struct gcsh_graph_impl {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    gcsh_graph_rec *rec;
};

static int cuda_graph_begin(gcsh_ctx *ctx)
{
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    CUDA_TRY(ctx, cudaStreamBeginCapture(st->stream, cudaStreamCaptureModeThreadLocal));
    return 0;
fail:
    return -1;
}

static int cuda_graph_end(gcsh_ctx *ctx, gcsh_graph_rec *rec, gcsh_graph_impl **out)
{
    cuda_state *st = cuda_enter(ctx);
    gcsh_graph_impl *g = calloc(1, sizeof *g);
    if (!st || !g) {
        if (st)
            gcsh_set_error(ctx, "gcsh.graph: out of host memory");
        goto fail;
    }
    g->rec = rec;
    CUDA_TRY(ctx, cudaStreamEndCapture(st->stream, &g->graph));
    CUDA_TRY(ctx, cudaGraphInstantiate(&g->exec, g->graph, 0));
    *out = g;
    return 0;
fail:
    if (g && g->graph)
        cudaGraphDestroy(g->graph);
    free(g);
    gcsh_graph_rec_free(rec);
    return -1;
}

static void cuda_graph_abandon(gcsh_ctx *ctx)
{
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return;
    cudaGraph_t graph = NULL;
    cudaStreamEndCapture(st->stream, &graph); /* invalidated captures give NULL */
    if (graph)
        cudaGraphDestroy(graph);
    (void)cudaGetLastError(); /* a refused call's capture error is not sticky */
}

static int cuda_graph_launch(gcsh_ctx *ctx, gcsh_graph_impl *g, uint64_t n)
{
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    for (uint64_t i = 0; i < n; i++) {
        if (atomic_load(&ctx->interrupt))
            return gcsh_set_error(ctx, "interrupted in replay %llu of %llu",
                                  (unsigned long long)i + 1, (unsigned long long)n);
        CUDA_TRY(ctx, cudaGraphLaunch(g->exec, st->stream));
        for (size_t c = 0; c < g->rec->ncomm; c++)
            if (cuda_enqueued(ctx, st, g->rec->comm[c].impl) != 0)
                return -1;
        if (g->rec->ncomm == 0 && cuda_enqueued(ctx, st, NULL) != 0)
            return -1;
    }
    return 0;
fail:
    return -1;
}

/* cudaGraphExecDestroy on a graph still in flight frees it when it ends. */
static void cuda_graph_release(gcsh_ctx *ctx, gcsh_graph_impl *g)
{
    if (cuda_enter(ctx)) {
        cudaGraphExecDestroy(g->exec);
        cudaGraphDestroy(g->graph);
    }
    gcsh_graph_rec_free(g->rec);
    free(g);
}

const gcsh_graph_ops gcsh_cuda_graph_ops = {
    .pass_down = 1,
    .begin = cuda_graph_begin,
    .end = cuda_graph_end,
    .abandon = cuda_graph_abandon,
    .launch = cuda_graph_launch,
    .release = cuda_graph_release,
};
