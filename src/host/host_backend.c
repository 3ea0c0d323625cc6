/* The host backend's table: memory in host_mem.c, collectives in host_comm.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sched.h>
#include <unistd.h>

#include <lauxlib.h>

#include "core/env.h"
#include "core/gcsh.h"
#include "host/host.h"

static int host_init(gcsh_ctx *ctx)
{
    snprintf(ctx->device, sizeof ctx->device, "cpu");
    ctx->loc = GCSH_LOC_HOST;
    gcsh_host_state *state = calloc(1, sizeof *state);
    if (!state)
        return gcsh_set_error(ctx, "host backend: out of memory");
    ctx->be_state = state;
    state->ordered = gcsh_host_ordered_new(ctx->be);
    if (!state->ordered || gcsh_host_comm_init(ctx, state) != 0) {
        if (!state->ordered)
            gcsh_set_error(ctx, "host backend: out of memory");
        free(state->ordered);
        free(state);
        ctx->be_state = NULL;
        return -1;
    }
    /* the rank's table: stream-ordered against its persistent all-reduces */
    ctx->be = gcsh_host_ordered_backend(state->ordered);
    return 0;
}

static void host_fini(gcsh_ctx *ctx)
{
    gcsh_host_state *state = ctx->be_state;
    if (!state)
        return;
    while (state->resident) /* the threads go before what they use */
        gcsh_host_persist_ops.release(ctx, state->resident);
    gcsh_netpath_stop(&state->net);
    gcsh_host_comm_fini(ctx, state);
    if (ctx->be == gcsh_host_ordered_backend(state->ordered))
        ctx->be = &gcsh_host_backend;
    free(state->ordered);
    free(state);
    ctx->be_state = NULL;
}

/* gcsh.info() adds what every backend shares (l_shell.c); the host's own
 * fact is the NUMA node of the CPU the rank runs on now (ranks are not
 * pinned: --bind-to none). */
static void host_info(gcsh_ctx *ctx, void *lua_state)
{
    (void)ctx;
    lua_State *L = lua_state;
    lua_newtable(L);
    lua_pushinteger(L, gcsh_numa_of_cpu(sched_getcpu()));
    lua_setfield(L, -2, "numa");
}

/* gcsh.debug.inject: "oom" fails the next allocation; "fatal" stands in for
 * a sticky device error (no device here), so CI covers that path too. */
static int host_inject(gcsh_ctx *ctx, const char *what)
{
    if (strcmp(what, "oom") == 0) {
        ctx->inject_oom = 1;
        return 0;
    }
    if (strcmp(what, "async") == 0) {
        ctx->inject_async = 1;
        return 0;
    }
    if (strcmp(what, "fatal") == 0) {
        ctx->fatal = 1;
        return gcsh_set_error(ctx, "injected fatal fault (gcsh.debug.inject, standing in for a "
                                   "sticky device error)");
    }
    return gcsh_set_error(ctx, "gcsh.debug.inject: unknown fault '%s' on the host backend "
                               "(valid: oom async fatal)", what);
}

/* The shared-memory path of small collectives (host_small.c): how much a
 * member may post; it serves communicators whose members share a node. */
static void host_comm_paths(gcsh_ctx *ctx, char *buf, size_t len)
{
    size_t room = (size_t)gcsh_env_value(GCSH_ENV_HOST_SMALL_BYTES);
    char size[32];
    gcsh_format_bytes(room, size, sizeof size);
    if (room == 0)
        snprintf(buf, len, "%s", "");
    else if (ctx->nnodes > 1) /* (a communicator across nodes: MPI alone) */
        snprintf(buf, len, "in a node, to %s a rank by shared memory", size);
    else
        snprintf(buf, len, "up to %s a rank through shared memory", size);
}

const gcsh_backend gcsh_host_backend = {
    .name = "host",
    .init = host_init,
    .fini = host_fini,
    .info = host_info,
    .inject = host_inject,
    .comm_paths = host_comm_paths,
    .mem = &gcsh_host_mem_ops,
    .comm = &gcsh_host_comm_ops,
    .win = &gcsh_host_window_ops,
    .kern = &gcsh_host_kernel_ops,
    .xfer = &gcsh_host_xfer_ops,
    .graph = &gcsh_host_graph_ops,
    .persist = &gcsh_host_persist_ops,
};
