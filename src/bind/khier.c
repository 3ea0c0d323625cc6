/* kernel.allreduce{algo="hier"}: the all-reduce of a window whose
 * communicator spans several nodes (its team, the ranks loads and stores
 * reach, is one node).  Three phases, as NCCL's and NVSHMEM's hierarchical
 * all-reduces do:
 *
 *   1. reduce-scatter in the node: the team's kernel collective (direct
 *      plan), so member t of every node holds chunk t of its node's sum;
 *   2. all-reduce of chunk t across nodes: the communicator's backend
 *      all-reduce (MPI on host, NCCL on cuda) over the ranks that are
 *      member t of their node (one rank per node): the only data that
 *      crosses the network, n / team elements per rank;
 *   3. all-gather in the node: the team's kernel collective, so every
 *      slice's region holds the communicator's sum.
 *
 * Every node must have the same number of the communicator's ranks, each
 * node's being its team (else refused, naming the nodes).  The ranks of
 * one chunk across nodes form a communicator made at the first hier call
 * on the window (collective like the call) and kept with it (symmem.c
 * releases it with the window).  Its row in the table of algorithms
 * (kalgos.c) names gcsh_khier_run and gcsh_khier_plan. */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "bind/graph.h"
#include "bind/kalgos.h"

/* Errors unless every node the communicator spans has as many of its ranks
 * as this rank's team, and the team is this node's ranks: the same verdict
 * on every rank (node_of is the same everywhere; a team is its node's). */
static void check_uniform(lua_State *L, const gcsh_kargs *a)
{
    const gcsh_symobj *o = a->o;
    int size = o->comm->size, team = o->desc.team_size;
    for (int r = 0; r < size; r++) {
        int node = gcsh_sym_node_of(L, o, r), count = 0;
        if (node < 0)
            luaL_error(L, "%s: algo 'hier' needs every rank's node (not known here)", a->fname);
        for (int q = 0; q < size; q++)
            count += gcsh_sym_node_of(L, o, q) == node;
        if (count != team)
            luaL_error(L, "%s: algo 'hier' needs the same number of the communicator's ranks on "
                          "every node: node %d has %d, this rank's team (node %d) %d; use algo "
                          "'comm' (the communicator's all-reduce)",
                       a->fname, node, count, gcsh_ctx_of(L)->node, team);
    }
}

/* The communicator of this rank's chunk across nodes: made once per window,
 * after the first phase's collective check (every member is then here). */
static gcsh_comm_impl *across_nodes(lua_State *L, gcsh_symobj *o)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (!o->across &&
        ctx->be->comm->split(ctx, o->comm_impl, o->desc.team_rank, o->comm->rank, &o->across) != 0)
        gcsh_raise(L, ctx);
    return o->across;
}

const char *gcsh_khier_run(lua_State *L, const gcsh_kargs *a)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_symobj *o = a->o;
    if (a->out)
        luaL_error(L, "%s: algo 'hier' leaves the result in the window (its reduce-scatter and "
                      "all-gather store into the slices): omit out, or use algo 'comm' (the "
                      "communicator's all-reduce straight into out)",
                   a->fname);
    if (!ctx->be->comm->can_reduce(o->dtype, a->op))
        luaL_error(L, "%s: algo 'hier' reduces across nodes with the communicator's all-reduce, "
                      "which cannot reduce %s with %s",
                   a->fname, gcsh_dtype_name(o->dtype), gcsh_redop_name(a->op));
    check_uniform(L, a);
    if (!o->across) /* (before anything is captured) */
        gcsh_graph_refuse_now(L, "kernel.allreduce{algo='hier'}'s first call on a window",
                              "it makes the window's communicator across nodes: run it once "
                              "before the capture");
    gcsh_kern_collective(L, a, GCSH_KC_REDUCE_SCATTER, GCSH_KA_DIRECT, -1, NULL,
                         "hier: reduce-scatter");
    gcsh_comm_impl *across = across_nodes(L, o);
    gcsh_kchunk mine = gcsh_kplan_chunk(a->n, o->desc.team_size, o->desc.team_rank);
    /* every rank of `across` is member team_rank of its node: the same chunk */
    if (mine.count > 0) {
        size_t es = gcsh_dtype_size(o->dtype);
        void *chunk = (char *)o->desc.peer[o->desc.team_rank] + (a->offset + mine.first) * es;
        if (ctx->be->comm->allreduce(ctx, across, chunk, chunk, mine.count, o->dtype, a->op) != 0)
            gcsh_raise(L, ctx);
    }
    gcsh_kern_collective(L, a, GCSH_KC_ALLGATHER, GCSH_KA_DIRECT, -1, NULL, "hier: all-gather");
    return "hier";
}

/* kernel.plan(w, {algo="hier"}): {algo="hier", phases={...}}, each phase
 * {name=, over=, network=, plan= (a team plan) or ranks=, count=}. */
void gcsh_khier_plan(lua_State *L, const gcsh_kargs *a)
{
    const gcsh_symobj *o = a->o;
    check_uniform(L, a);
    lua_createtable(L, 0, 3);
    lua_pushliteral(L, "allreduce");
    lua_setfield(L, -2, "coll");
    lua_pushliteral(L, "hier");
    lua_setfield(L, -2, "algo");
    lua_createtable(L, 3, 0);
    static const enum gcsh_kcoll colls[] = {GCSH_KC_REDUCE_SCATTER, GCSH_KC_ALLREDUCE,
                                            GCSH_KC_ALLGATHER};
    static const char *const names[] = {"reduce-scatter", "all-reduce", "all-gather"};
    for (int i = 0; i < 3; i++) {
        lua_createtable(L, 0, 5);
        lua_pushstring(L, names[i]);
        lua_setfield(L, -2, "name");
        int net = colls[i] == GCSH_KC_ALLREDUCE;
        lua_pushboolean(L, net);
        lua_setfield(L, -2, "network");
        if (net) {
            lua_pushfstring(L, "chunk %d of every node: the communicator's all-reduce (%s)",
                            o->desc.team_rank, gcsh_ctx_of(L)->be->name);
            lua_setfield(L, -2, "over");
            lua_newtable(L); /* my chunk's ranks: member team_rank of every node */
            for (int r = 0, k = 0; r < o->comm->size; r++) {
                int node = gcsh_sym_node_of(L, o, r), t = 0;
                for (int q = 0; q < r; q++)
                    t += gcsh_sym_node_of(L, o, q) == node;
                if (t == o->desc.team_rank) {
                    lua_pushinteger(L, r);
                    lua_rawseti(L, -2, ++k);
                }
            }
            lua_setfield(L, -2, "ranks");
            gcsh_kchunk c = gcsh_kplan_chunk(a->n, o->desc.team_size, o->desc.team_rank);
            gcsh_set_integer(L, "first", (lua_Integer)(a->offset + c.first));
            gcsh_set_integer(L, "count", (lua_Integer)c.count);
        } else {
            lua_pushliteral(L, "the node (the window's team: loads and stores)");
            lua_setfield(L, -2, "over");
            gcsh_kplan p = {colls[i], GCSH_KA_DIRECT, o->desc.team_size, 0, a->n, 0};
            gcsh_push_kplan(L, o, &p, a->offset, 0);
            lua_setfield(L, -2, "plan");
        }
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "phases");
}
