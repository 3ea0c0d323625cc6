/* gcsh entry point (bootstrap version): runs a script on every rank. */
#include <stdio.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <mpi.h>

#include "rank.h"

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    gcsh_ctx ctx = {0};
    gcsh_rank_topology(&ctx);
    int rc = 0;
    if (gcsh_rank_backend(&ctx, NULL) != 0) {
        fprintf(stderr, "gcsh: %s\n", ctx.err);
        rc = 1;
    } else {
        lua_State *L = gcsh_rank_lua(&ctx);
        if (argc > 1 && luaL_dofile(L, argv[1]) != LUA_OK) {
            fprintf(stderr, "[%d] %s\n", ctx.rank, lua_tostring(L, -1));
            rc = 1;
        }
    }
    gcsh_rank_close(&ctx);
    MPI_Finalize();
    return rc;
}
