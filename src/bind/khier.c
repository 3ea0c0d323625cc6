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
    const int *counts = gcsh_sym_push_node_counts(L, o); /* one pass: this runs every call */
    if (!counts)
        luaL_error(L, "%s: algo 'hier' needs every rank's node (not known here)", a->fname);
    for (int r = 0; r < size; r++) {
        int node = gcsh_sym_node_of(L, o, r);
        if (counts[node] != team)
            luaL_error(L, "%s: algo 'hier' needs the same number of the communicator's ranks on "
                          "every node: node %d has %d, this rank's team (node %d) %d; use algo "
                          "'comm' (the communicator's all-reduce)",
                       a->fname, node, counts[node], gcsh_ctx_of(L)->node, team);
    }
    lua_pop(L, 1);
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

/* ---- kernel.plan(w, {algo="hier"}) ------------------------------------------------ */

/* The communicator's ranks of every node, node after node (nodes in the
 * order of their lowest rank, each node's ranks in rank order: its team's
 * order), into members[nodes * team]; returns the number of nodes.  One
 * pass over the ranks.  check_uniform has passed: each node has team ranks
 * and every rank's node is known. */
static int node_members(lua_State *L, const gcsh_symobj *o, int *members)
{
    int size = o->comm->size, team = o->desc.team_size, nodes = 0;
    int nnodes = gcsh_ctx_of(L)->nnodes;
    /* per node id: its place in the order (-1: not met yet), ranks placed */
    int *place = lua_newuserdatauv(L, 2 * (size_t)nnodes * sizeof *place, 0);
    int *filled = place + nnodes;
    for (int node = 0; node < nnodes; node++)
        place[node] = -1, filled[node] = 0;
    for (int r = 0; r < size; r++) {
        int node = gcsh_sym_node_of(L, o, r);
        if (place[node] < 0)
            place[node] = nodes++;
        members[place[node] * team + filled[node]++] = r;
    }
    lua_pop(L, 1);
    return nodes;
}

/* A step of the plan: {kind="barrier", over="node"} (each node's team
 * waits for its own), or {kind="move", phase=, moves={}} left on the stack
 * with its moves table above it. */
static void push_barrier(lua_State *L)
{
    lua_createtable(L, 0, 2);
    gcsh_set_string(L, "kind", "barrier");
    gcsh_set_string(L, "over", "node");
}

static void push_move_step(lua_State *L, const char *phase)
{
    lua_createtable(L, 0, 4);
    gcsh_set_string(L, "kind", "move");
    gcsh_set_string(L, "phase", phase);
    lua_newtable(L);
}

/* The steps of a team plan (the direct reduce-scatter or all-gather) done
 * by every node's team at once, moves in the communicator's ranks, none
 * crossing the network; appended to the steps table on top from index
 * *count. */
static void push_node_steps(lua_State *L, const gcsh_kargs *a, enum gcsh_kcoll coll,
                            const char *phase, const int *members, int nodes, int *count)
{
    int team = a->o->desc.team_size;
    gcsh_kplan p = {coll, GCSH_KA_DIRECT, team, 0, a->n, 0};
    gcsh_kstep steps[GCSH_KPLAN_MAX_STEPS];
    int ns = gcsh_kplan_steps(&p, steps);
    for (int i = 0; i < ns; i++) {
        if (steps[i].kind == GCSH_KS_BARRIER) {
            push_barrier(L);
            lua_rawseti(L, -2, ++*count);
            continue;
        }
        gcsh_kmove mv;
        int any = 0;
        for (int t = 0; t < team && !any; t++)
            any = gcsh_kplan_move(&p, &steps[i], t, 0, &mv);
        if (!any) /* (the copy into out: hier takes none) */
            continue;
        push_move_step(L, phase);
        int moves = 0;
        for (int j = 0; j < nodes; j++)
            for (int t = 0; t < team; t++) {
                if (!gcsh_kplan_move(&p, &steps[i], t, 0, &mv))
                    continue;
                gcsh_push_kmove(L, t, &mv, a->offset, members + j * team);
                lua_pushboolean(L, 0);
                lua_setfield(L, -2, "network");
                lua_rawseti(L, -2, ++moves);
            }
        lua_setfield(L, -2, "moves");
        lua_rawseti(L, -2, ++*count);
    }
}

/* The all-reduce of every chunk across nodes: member t of each node
 * reduces chunk t of member t of every node into its own (the
 * communicator's all-reduce over those ranks: via "network").  On one node
 * nobody has a peer there: no moves, and a note that says so. */
static void push_network_step(lua_State *L, const gcsh_kargs *a, const int *members, int nodes,
                              int *count)
{
    int team = a->o->desc.team_size;
    if (nodes > GCSH_KERN_MAX_TEAM) /* (a move's places) */
        luaL_error(L, "plan: algo 'hier' plans at most %d nodes, the window spans %d",
                   GCSH_KERN_MAX_TEAM, nodes);
    push_move_step(L, "all-reduce across nodes");
    int moves = 0;
    for (int j = 0; j < nodes && nodes > 1; j++)
        for (int t = 0; t < team; t++) {
            gcsh_kchunk c = gcsh_kplan_chunk(a->n, team, t);
            if (c.count == 0)
                continue;
            gcsh_kmove mv = {.k = nodes, .m = 1, .count = c.count};
            int ranks[GCSH_KERN_MAX_TEAM];
            for (int i = 0; i < nodes; i++) {
                mv.src[i] = (gcsh_kplace){.peer = i, .first = c.first};
                ranks[i] = members[i * team + t];
            }
            mv.dst[0] = (gcsh_kplace){.peer = j, .first = c.first};
            gcsh_push_kmove(L, j, &mv, a->offset, ranks);
            gcsh_set_string(L, "via", "network");
            lua_pushboolean(L, 1);
            lua_setfield(L, -2, "network");
            lua_rawseti(L, -2, ++moves);
        }
    lua_setfield(L, -2, "moves");
    if (nodes == 1)
        gcsh_set_string(L, "note", "one node: no other node holds chunk t; nothing crosses the "
                                   "network");
    lua_rawseti(L, -2, ++*count);
}

/* {name=, over=, network=}: a phase, as the same text on every rank. */
static void push_phase(lua_State *L, const char *name, const char *over, int network, int i)
{
    lua_createtable(L, 0, 3);
    gcsh_set_string(L, "name", name);
    gcsh_set_string(L, "over", over);
    lua_pushboolean(L, network);
    lua_setfield(L, -2, "network");
    lua_rawseti(L, -2, i);
}

/* kernel.plan(w, {algo="hier"}): the whole communicator's plan, the same
 * table on every rank: {coll=, algo="hier", dtype=, n=, offset=, nodes=,
 * team_size=, chunks= (the node's chunks, one per member), phases= (name,
 * over, network), steps=}; steps as a team plan's, with ranks and peers
 * the communicator's, a `network` flag on every move (true: it reads
 * another node's ranks) and the barriers each node's own. */
void gcsh_khier_plan(lua_State *L, const gcsh_kargs *a)
{
    const gcsh_symobj *o = a->o;
    check_uniform(L, a);
    int team = o->desc.team_size;
    int *members = lua_newuserdatauv(L, sizeof(int) * (size_t)o->comm->size, 0);
    int nodes = node_members(L, o, members);
    lua_createtable(L, 0, 10);
    gcsh_set_string(L, "coll", "allreduce");
    gcsh_set_string(L, "algo", "hier");
    gcsh_set_string(L, "dtype", gcsh_dtype_name(o->dtype));
    gcsh_set_integer(L, "n", (lua_Integer)a->n);
    gcsh_set_integer(L, "offset", (lua_Integer)a->offset);
    gcsh_set_integer(L, "nodes", nodes);
    gcsh_set_integer(L, "team_size", team);
    lua_createtable(L, team, 0);
    for (int t = 0; t < team; t++) {
        gcsh_kchunk c = gcsh_kplan_chunk(a->n, team, t);
        lua_createtable(L, 0, 2);
        gcsh_set_integer(L, "first", (lua_Integer)(a->offset + c.first));
        gcsh_set_integer(L, "count", (lua_Integer)c.count);
        lua_rawseti(L, -2, t + 1);
    }
    lua_setfield(L, -2, "chunks");
    lua_createtable(L, 3, 0);
    push_phase(L, "reduce-scatter", "each node: member t reduces chunk t by loads and stores",
               0, 1);
    push_phase(L, "all-reduce",
               nodes > 1 ? "member t of every node: the communicator's all-reduce"
                         : "one node: nothing crosses the network",
               nodes > 1, 2);
    push_phase(L, "all-gather", "each node: member t stores chunk t by loads and stores", 0, 3);
    lua_setfield(L, -2, "phases");
    lua_newtable(L);
    int count = 0;
    push_node_steps(L, a, GCSH_KC_REDUCE_SCATTER, "reduce-scatter in the node", members, nodes,
                    &count);
    push_network_step(L, a, members, nodes, &count);
    push_node_steps(L, a, GCSH_KC_ALLGATHER, "all-gather in the node", members, nodes, &count);
    lua_setfield(L, -2, "steps");
    lua_remove(L, -2); /* members */
}
