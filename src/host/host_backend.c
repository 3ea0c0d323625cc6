/* The host backend's table: memory in host_mem.c, collectives in host_comm.c. */
#include <stdio.h>

#include <lauxlib.h>

#include "gcsh.h"
#include "host/host.h"

static int host_init(gcsh_ctx *ctx)
{
    snprintf(ctx->device, sizeof ctx->device, "cpu");
    return 0;
}

static void host_fini(gcsh_ctx *ctx)
{
    (void)ctx;
}

static void host_info(gcsh_ctx *ctx, void *lua_state)
{
    lua_State *L = lua_state;
    lua_newtable(L);
    lua_pushstring(L, "host");
    lua_setfield(L, -2, "backend");
    lua_pushstring(L, ctx->device);
    lua_setfield(L, -2, "device");
}

const gcsh_backend gcsh_host_backend = {
    .name = "host",
    .init = host_init,
    .fini = host_fini,
    .info = host_info,
    .mem = &gcsh_host_mem_ops,
    .comm = &gcsh_host_comm_ops,
};
