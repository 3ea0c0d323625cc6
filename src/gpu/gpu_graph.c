/* gcsh.graph on a GPU backend: the capture layer (core/graph.h) passes the
 * capturable calls down while the rank's stream captures, so collectives,
 * kernels, copies and event waits become the graph's nodes; nothing runs
 * until a replay launches it.  Here: what every GPU backend keeps (the
 * record of what was captured, with the graph) and its replays; the
 * capture and the launches are the device runtime's (cuda: cuda_graph.c).
 *
 * A replay launches the graph n times on the rank's stream; the
 * communicators of the graph's collectives are marked busy as a direct call
 * marks them, so an interrupted wait aborts them, and the throttle keeps a
 * long run of launches from blocking the host in a full launch queue. */
#include <stdatomic.h>
#include <stdlib.h>

#include "core/graph.h"
#include "gpu/gpu_graph.h"

struct gcsh_graph_impl {
    gcsh_gpu_graph *exec; /* the runtime's launchable graph */
    gcsh_graph_rec *rec;
};

int gpu_graph_begin(gcsh_ctx *ctx)
{
    gcsh_gpu_dev *st = gcsh_gpu()->enter(ctx);
    return st ? gcsh_gpu()->capture_begin(ctx, st) : -1;
}

int gpu_graph_end(gcsh_ctx *ctx, gcsh_graph_rec *rec, gcsh_graph_impl **out)
{
    /* no wait of the stream's made here: an invalidated capture would fail
     * it and never be ended (the runtime's capture_end makes the waits a
     * graph owes itself) */
    gcsh_gpu_dev *st = gcsh_gpu()->enter_device(ctx);
    gcsh_graph_impl *g = calloc(1, sizeof *g);
    if (!st || !g) {
        if (st)
            gcsh_set_error(ctx, "gcsh.graph: out of host memory");
        goto fail;
    }
    g->rec = rec;
    if (gcsh_gpu()->capture_end(ctx, st, &g->exec) != 0)
        goto fail;
    *out = g;
    return 0;
fail:
    free(g);
    gcsh_graph_rec_free(rec);
    return -1;
}

void gpu_graph_abandon(gcsh_ctx *ctx)
{
    gcsh_gpu_dev *st = gcsh_gpu()->enter_device(ctx);
    if (st)
        gcsh_gpu()->capture_abandon(st);
}

int gpu_graph_launch(gcsh_ctx *ctx, gcsh_graph_impl *g, uint64_t n)
{
    const gcsh_gpu_rt *rt = gcsh_gpu();
    gcsh_gpu_dev *st = rt->enter(ctx);
    if (!st)
        return -1;
    for (uint64_t i = 0; i < n; i++) {
        if (atomic_load(&ctx->interrupt))
            return gcsh_set_error(ctx, "interrupted in replay %llu of %llu",
                                  (unsigned long long)i + 1, (unsigned long long)n);
        if (rt->graph_launch(ctx, st, g->exec) != 0)
            return -1;
        for (size_t c = 0; c < g->rec->ncomm; c++)
            if (rt->enqueued(ctx, st, g->rec->comm[c].impl) != 0)
                return -1;
        if (g->rec->ncomm == 0 && rt->enqueued(ctx, st, NULL) != 0)
            return -1;
    }
    return 0;
}

/* Safe with replays in flight (the runtime frees a graph once it ends). */
void gpu_graph_release(gcsh_ctx *ctx, gcsh_graph_impl *g)
{
    gcsh_gpu()->graph_free(gcsh_gpu()->enter_device(ctx), g->exec);
    gcsh_graph_rec_free(g->rec);
    free(g);
}
