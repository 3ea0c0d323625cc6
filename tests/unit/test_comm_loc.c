/* The comm binding refuses tensors that live where the backend's collectives
 * do not run (ctx->loc), before any MPI call.  Lua cannot make such a tensor
 * on the host backend, so this test relabels a host storage as cuda:0. */
#include <string.h>

#include <lauxlib.h>
#include <mpi.h>

#include "rank/rank.h"
#include "bind/tensor.h"
#include "unit.h"
#include "host/host.h"

/* Runs `chunk` (which must raise) and checks its message contains `want`. */
static void expect_error(lua_State *L, const char *chunk, const char *want)
{
    int rc = luaL_dostring(L, chunk);
    const char *msg = rc != LUA_OK ? lua_tostring(L, -1) : "(no error)";
    CHECK(rc != LUA_OK && strstr(msg, want), "%s: got '%s', want '%s'", chunk, msg, want);
    lua_settop(L, 0);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    gcsh_ctx ctx = {0};
    gcsh_rank_topology(&ctx);
    CHECK(gcsh_rank_backend(&ctx, "host") == 0, "host backend: %s", ctx.err);
    CHECK(ctx.loc == GCSH_LOC_HOST, "host backend sets ctx->loc to host, got %d", ctx.loc);
    lua_State *L = gcsh_rank_lua(&ctx);

    gcsh_tensor *dev = gcsh_new_tensor(L, 4, GCSH_F32);
    gcsh_storage *st = dev->st;
    st->loc = 0;
    st->where = "cuda:0";
    lua_setglobal(L, "dev");

    expect_error(L, "comm.world():allreduce(dev)",
                 "bad argument #1 to 'allreduce' (t lives in cuda:0, but host collectives need "
                 "host memory)");
    expect_error(L, "comm.world():allgather(tensor.new(1), dev)",
                 "bad argument #2 to 'allgather' (out lives in cuda:0");
    expect_error(L, "comm.world():send(dev, 0)", "t lives in cuda:0");

    for (int dt = 0; dt < GCSH_NDTYPES; dt++)
        for (int op = 0; op < GCSH_NOPS; op++)
            CHECK(gcsh_host_backend.comm->can_reduce(dt, op), "host reduces %s with %s",
                  gcsh_dtype_name(dt), gcsh_redop_name(op));

    st->loc = GCSH_LOC_HOST; /* its memory is host memory: let it be freed as such */
    gcsh_rank_close(&ctx);
    MPI_Finalize();
    UNIT_END();
}
