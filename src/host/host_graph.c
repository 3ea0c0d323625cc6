/* gcsh.graph on the host backend: nothing runs during a capture (the capture
 * layer records the calls, core/graph.h), and a graph is that recording,
 * replayed from C through the host's own tables, without Lua.  A replay
 * polls the rank's interrupt between calls, and every wait inside a call
 * (an MPI collective, a signal wait) polls it too, so Ctrl-C stops a long
 * replay like any other wait. */
#include <stdatomic.h>
#include <stdlib.h>

#include "core/gcsh.h"
#include "core/graph.h"
#include "host/host.h"

struct gcsh_graph_impl {
    gcsh_graph_rec *rec;
};

static int host_graph_begin(gcsh_ctx *ctx)
{
    (void)ctx;
    return 0;
}

static int host_graph_end(gcsh_ctx *ctx, gcsh_graph_rec *rec, gcsh_graph_impl **out)
{
    gcsh_graph_impl *g = malloc(sizeof *g);
    if (!g) {
        gcsh_graph_rec_free(rec);
        return gcsh_set_error(ctx, "gcsh.graph: out of host memory");
    }
    g->rec = rec;
    *out = g;
    return 0;
}

static void host_graph_abandon(gcsh_ctx *ctx)
{
    (void)ctx;
}

/* A replay runs through the rank's ordered table (host_order.c), as the
 * calls did when typed: a recorded ring (p:allreduce) is followed by
 * calls that touch memory only once the progress thread finished it. */
static int host_graph_launch(gcsh_ctx *ctx, gcsh_graph_impl *g, uint64_t n)
{
    const gcsh_host_state *state = ctx->be_state;
    const gcsh_backend *be = gcsh_host_ordered_backend(state->ordered);
    for (uint64_t i = 0; i < n; i++) {
        if (atomic_load(&ctx->interrupt))
            return gcsh_set_error(ctx, "interrupted in replay %llu of %llu",
                                  (unsigned long long)i + 1, (unsigned long long)n);
        if (gcsh_graph_rec_run(ctx, g->rec, be) != 0)
            return -1;
    }
    return 0;
}

static void host_graph_release(gcsh_ctx *ctx, gcsh_graph_impl *g)
{
    (void)ctx;
    gcsh_graph_rec_free(g->rec);
    free(g);
}

const gcsh_graph_ops gcsh_host_graph_ops = {
    .pass_down = 0,
    .begin = host_graph_begin,
    .end = host_graph_end,
    .abandon = host_graph_abandon,
    .launch = host_graph_launch,
    .release = host_graph_release,
};
