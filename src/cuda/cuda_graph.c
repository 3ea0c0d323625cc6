/* gcsh.graph on the cuda backend: CUDA stream capture of the rank's stream,
 * the device runtime's graph part (gpu/gpu_rt.h; the record and the
 * replays are gpu/gpu_graph.c's).
 *
 * Mode: cudaStreamCaptureModeThreadLocal.  The worker thread that captures
 * may not make an unsafe call (the layer refuses those first, by name);
 * the rank's watcher thread, which reads trace marks during a hang, is not
 * affected.  A replay is cudaGraphLaunch on the rank's stream. */
#include <stdlib.h>

#include "cuda/cuda.h"
#include "gpu/gpu_graph.h"

struct gcsh_gpu_graph {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
};

const gcsh_graph_ops gcsh_cuda_graph_ops = {.pass_down = 1, GCSH_GPU_GRAPH_OPS};

int cuda_capture_begin(gcsh_ctx *ctx, cuda_state *st)
{
    st->capture_lost[0] = '\0';
    CUDA_TRY(ctx, cudaStreamBeginCapture(st->stream, cudaStreamCaptureModeThreadLocal));
    return 0;
fail:
    return -1;
}

/* A run of rings the capture lost (cuda_persist.c), even when the error was
 * caught in Lua: the graph would replay without those calls. */
static int lost_rings(gcsh_ctx *ctx, cuda_state *st)
{
    if (!st->capture_lost[0])
        return 0;
    gcsh_set_error(ctx, "gcsh.graph: a run of p:allreduce() calls could not be captured (%s); "
                        "the capture is abandoned", st->capture_lost);
    st->capture_lost[0] = '\0';
    return -1;
}

int cuda_capture_end(gcsh_ctx *ctx, cuda_state *st, gcsh_gpu_graph **out)
{
    gcsh_gpu_graph *g = calloc(1, sizeof *g);
    if (!g)
        return gcsh_set_error(ctx, "gcsh.graph: out of host memory");
    /* the graph waits for the calls it rang last, so what follows a
     * replay on the stream follows them */
    if (cuda_persist_capture_flush(ctx, st) != 0 || lost_rings(ctx, st) != 0) {
        cuda_capture_abandon(st); /* the capture ends here too */
        free(g);
        return -1;
    }
    cuda_persist_capture_over(st);
    CUDA_TRY(ctx, cudaStreamEndCapture(st->stream, &g->graph));
    CUDA_TRY(ctx, cudaGraphInstantiate(&g->exec, g->graph, 0));
    *out = g;
    return 0;
fail:
    if (g->graph)
        cudaGraphDestroy(g->graph);
    free(g);
    return -1;
}

void cuda_capture_abandon(cuda_state *st)
{
    cuda_persist_capture_over(st);
    cudaGraph_t graph = NULL;
    cudaStreamEndCapture(st->stream, &graph); /* invalidated captures give NULL */
    if (graph)
        cudaGraphDestroy(graph);
    (void)cudaGetLastError(); /* a refused call's capture error is not sticky */
}

int cuda_graph_launch(gcsh_ctx *ctx, cuda_state *st, gcsh_gpu_graph *g)
{
    CUDA_TRY(ctx, cudaGraphLaunch(g->exec, st->stream));
    return 0;
fail:
    return -1;
}

/* cudaGraphExecDestroy on a graph still in flight frees it when it ends. */
void cuda_graph_free(cuda_state *st, gcsh_gpu_graph *g)
{
    if (st) { /* else the device is gone, and the graph with it */
        cudaGraphExecDestroy(g->exec);
        cudaGraphDestroy(g->graph);
    }
    free(g);
}
