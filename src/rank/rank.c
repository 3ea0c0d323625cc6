/* One rank's set-up: topology from MPI, the backend, the Lua state. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lualib.h>
#include <mpi.h>

#include "core/kreduce_tune.h"
#include "core/mpi_try.h"
#include "core/orphans.h"
#include "rank/rank.h"
#include "bind/comm.h"
#include "bind/libs.h"
#include "rank/verdict.h"
#include "bind/kernel.h"
#include "bind/persist.h"
#include "bind/symmem.h"
#include "trace/trace.h"
#include "core/env.h"
#include "host/host.h"
#ifdef GCSH_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

/* GCSH_RANKS_PER_NODE=k treats each k consecutive ranks as one node, so that
 * multi-node layouts can be tried on one machine. */
static int ranks_per_node_override(void)
{
    return (int)gcsh_env_value(GCSH_ENV_RANKS_PER_NODE);
}

static int node_from_mpi(gcsh_ctx *ctx);

void gcsh_rank_topology(gcsh_ctx *ctx)
{
    /* Errors of nonblocking collectives reach WORLD's handler whatever their
     * communicator's is (Open MPI 4.1: a count mismatch with .check off
     * ended rank 0 with "MPI Error in NBC subrequest", exit 15). */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &ctx->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ctx->size);
    /* every rank's node (the lowest world rank on it, then its index) */
    ctx->node_of = malloc((size_t)ctx->size * sizeof *ctx->node_of);
    int *index = calloc((size_t)ctx->size, sizeof *index);
    int k = ranks_per_node_override(), first = k ? ctx->rank / k * k : node_from_mpi(ctx);
    if (k) {
        ctx->local_rank = ctx->rank % k;
        ctx->local_size = ctx->size - first < k ? ctx->size - first : k;
    }
    if (!ctx->node_of || !index || MPI_Allgather(&first, 1, MPI_INT, ctx->node_of, 1, MPI_INT,
                                       MPI_COMM_WORLD) != MPI_SUCCESS) {
        fprintf(stderr, "gcsh: rank %d: cannot learn the ranks' nodes\n", ctx->rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* nodes are numbered in the order of their lowest world rank, whatever
     * the mapping (--map-by node puts rank 1 on node 1, rank 2 on node 0) */
    ctx->nnodes = 0;
    for (int r = 0; r < ctx->size; r++)
        if (ctx->node_of[r] == r)
            index[r] = ctx->nnodes++;
    for (int r = 0; r < ctx->size; r++)
        ctx->node_of[r] = index[ctx->node_of[r]];
    free(index);
    ctx->node = ctx->node_of[ctx->rank];
}

/* The ranks that share memory with this one (MPI_COMM_TYPE_SHARED: a host,
 * or a simulated node under scripts/simnode): local rank and size; returns
 * the lowest world rank among them. */
static int node_from_mpi(gcsh_ctx *ctx)
{
    MPI_Comm node;
    int first = ctx->rank;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, ctx->rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &ctx->local_rank);
    MPI_Comm_size(node, &ctx->local_size);
    MPI_Bcast(&first, 1, MPI_INT, 0, node); /* local rank 0 has the lowest (key: rank) */
    MPI_Comm_free(&node);
    return first;
}

int gcsh_rank_backend(gcsh_ctx *ctx, const char *want)
{
    const gcsh_backend *be = &gcsh_host_backend;
    if (want && strcmp(want, "host") != 0) {
#ifdef GCSH_HAVE_CUDA
        if (strcmp(want, "cuda") == 0)
            be = &gcsh_cuda_backend;
        else
#endif
        {
            gcsh_set_error(ctx, "--backend: unknown backend '%s' (valid: host%s)", want,
#ifdef GCSH_HAVE_CUDA
                           ", cuda"
#else
                           "; this build has no cuda backend"
#endif
            );
            /* cuda in a build without it cannot run here; another name is a usage error */
            return strcmp(want, "cuda") == 0 ? -1 : -2;
        }
    }
#ifdef GCSH_HAVE_CUDA
    else if (!want) {
        /* every rank takes the same backend: cuda only where each rank has
         * a GPU (the backend's start is collective over the machine) */
        int here = gcsh_cuda_available(), everywhere = 0;
        GCSH_MPI_TRY(ctx, "backend choice: ", MPI_Allreduce,
                       (&here, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
        if (everywhere)
            be = &gcsh_cuda_backend;
    }
#endif
    if (!gcsh_kern_tuned(be->name))
        return gcsh_set_error(ctx, "the %s backend has no row in src/core/kreduce_tune.h, "
                                   "by which kernel.allreduce{algo=\"auto\"} chooses: add its "
                                   "measured crossovers", be->name);
    ctx->be = be;
    int ok = be->init(ctx) == 0, all_ok = 0;
    GCSH_MPI_TRY_GOTO(ctx, "backend start: ", fail, MPI_Allreduce,
                        (&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (all_ok)
        return 0;
    if (ok)
        gcsh_set_error(ctx, "backend %s failed on another rank", be->name);
fail:
    if (ok)
        be->fini(ctx);
    ctx->be = NULL;
    return -1;
}

/* gcsh.node_of(r): the node of world rank r. */
static int node_of(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    lua_Integer r = luaL_checkinteger(L, 1);
    luaL_argcheck(L, r >= 0 && r < ctx->size, 1,
                  lua_pushfstring(L, "rank must be 0..%d, got %I", ctx->size - 1, r));
    lua_pushinteger(L, ctx->node_of[r]);
    return 1;
}

static void set_gcsh_table(lua_State *L, gcsh_ctx *ctx)
{
    lua_newtable(L);
    lua_pushstring(L, GCSH_VERSION);
    lua_setfield(L, -2, "version");
    lua_pushstring(L, ctx->be ? ctx->be->name : "none");
    lua_setfield(L, -2, "backend");
    lua_pushinteger(L, ctx->local_rank);
    lua_setfield(L, -2, "local_rank");
    lua_pushinteger(L, ctx->node);
    lua_setfield(L, -2, "node");
    lua_pushinteger(L, ctx->nnodes);
    lua_setfield(L, -2, "nodes");
    lua_pushcfunction(L, node_of);
    lua_setfield(L, -2, "node_of");
    lua_pushstring(L, ctx->device);
    lua_setfield(L, -2, "device");
    if (ctx->be && ctx->be->globals)
        ctx->be->globals(ctx, L);
    lua_setglobal(L, "gcsh");
}

/* Whether dir holds gcsh's Lua files (gcsh/prelude.lua). */
static int has_prelude(const char *dir)
{
    char path[PATH_MAX + 64];
    if ((size_t)snprintf(path, sizeof path, "%s/gcsh/prelude.lua", dir) >= sizeof path)
        return 0;
    return access(path, R_OK) == 0;
}

/* Looks for the folder beside the binary: installed (PREFIX/bin/gcsh:
 * PREFIX/share/gcsh), then the build tree (build/gcsh: lua/). */
static int find_lua_dir(char *out, size_t len)
{
    static const char *const relative[] = {"../share/gcsh", "../lua"};
    return gcsh_beside_binary(relative, sizeof relative / sizeof *relative, has_prelude, out, len);
}

const char *gcsh_lua_dir(void)
{
    /* Found once, the first time (the rank's set-up, before its threads
     * start, or --help): where the binary is does not change. */
    static char found[PATH_MAX];
    static int state; /* 0: not looked yet, 1: found, -1: not there */
    const char *env = getenv("GCSH_LUA_DIR");
    if (env && *env)
        return env;
    if (state == 0)
        state = find_lua_dir(found, sizeof found) == 0 ? 1 : -1;
    return state > 0 ? found : NULL;
}

int gcsh_lua_path(lua_State *L)
{
    const char *dir = gcsh_lua_dir();
    if (!dir)
        return -1;
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "path");
    lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;%s", dir, dir, lua_tostring(L, -1));
    lua_setfield(L, -3, "path");
    lua_pop(L, 2);
    return 0;
}

/* gcsh's own modules first on package.path, and gcsh.lua_dir (rank.h). */
static int set_module_path(lua_State *L, gcsh_ctx *ctx)
{
    if (gcsh_lua_path(L) != 0) {
        if (ctx->rank == 0)
            fprintf(stderr, "gcsh: cannot find gcsh's Lua files (gcsh/prelude.lua) in "
                            "../share/gcsh or ../lua beside the binary; set GCSH_LUA_DIR\n");
        return -1;
    }
    lua_getglobal(L, "gcsh");
    lua_pushstring(L, gcsh_lua_dir());
    lua_setfield(L, -2, "lua_dir");
    lua_pop(L, 1);
    return 0;
}

/* Runs gcsh/prelude.lua (the Lua parts every rank has, such as the
 * global show).  A missing or broken prelude is reported, not fatal: the C
 * libraries still work. */
static void run_prelude(lua_State *L, gcsh_ctx *ctx)
{
    lua_getglobal(L, "require");
    lua_pushliteral(L, "gcsh.prelude");
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
        fprintf(stderr, "gcsh: rank %d: prelude: %s\n", ctx->rank, lua_tostring(L, -1));
        lua_pop(L, 1);
    }
}

lua_State *gcsh_rank_lua(gcsh_ctx *ctx)
{
    lua_State *L = luaL_newstate();
    if (!L)
        return NULL;
    *(gcsh_ctx **)lua_getextraspace(L) = ctx;
    ctx->L = L;
    luaL_openlibs(L);
    lua_pushinteger(L, ctx->rank);
    lua_setglobal(L, "rank");
    lua_pushinteger(L, ctx->size);
    lua_setglobal(L, "size");
    set_gcsh_table(L, ctx);
    int found = set_module_path(L, ctx) == 0;
    gcsh_open_libs(L);
    if (found)
        run_prelude(L, ctx);
    gcsh_verdict_install(L); /* the user's loads from here on */
    return L;
}

void gcsh_rank_close(gcsh_ctx *ctx)
{
    if (ctx->L) {
        /* Windows and signals still registered are freed here, collectively
         * and in creation order on every rank (symmem.h), while MPI and the
         * backend are still up: __gc never frees them. */
        if (ctx->be) {
            gcsh_persist_stop_all(ctx->L); /* residents go before their windows */
            gcsh_symmem_close(ctx->L);
            gcsh_comm_close(ctx->L); /* the windows go before their communicators */
        }
        lua_close(ctx->L);
        ctx->L = NULL;
    }
    gcsh_trace_free(ctx); /* the backend's own table again, before fini */
    if (ctx->be) {
        ctx->be->fini(ctx);
        ctx->be = NULL;
    }
    gcsh_orphans_close(ctx->orphans); /* what MPI may still write stays */
    ctx->orphans = NULL;
    free(ctx->node_of);
    ctx->node_of = NULL;
}
