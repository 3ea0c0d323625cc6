/* The "kernel" library: reduce kernels over
 * tensors and over symmetric windows (the peer pointer table), on both
 * backends with identical results (kreduce.h).
 *
 *   kernel.reduce(out, {t1, t2, ...} [, op="sum"])
 *       out[i] = t1[i] op t2[i] op ...  for i < #out; local, no synchronisation;
 *       inputs may be peer views (w:peer(r)).  out may be one of the inputs.
 *   kernel.reduce_peers(out, w [, op | {op=, offset=0, n=#out}])
 *       out[i] = the op over every team member's w element offset + i: peer
 *       loads, no synchronisation (call c:barrier() first, as in a lesson);
 *       it only reads the window, so it works on an aborted communicator's
 *       window too (read-only evidence, as w:peer(r)).
 *
 * Collectives over a window's region [offset, offset + n) (every member of
 * w.team calls them with the same options; out may differ): signal ready on
 * the window's own sync words, wait for every peer, move the data, signal
 * done and wait, all stream-ordered on cuda (kernels spin on the words, with
 * the bound and cancel word of s:wait).  Options: op="sum", offset=0,
 * n=w.n-offset, out=nil (a local tensor of w.dtype; nil: the result stays in
 * the window).  kernel.allreduce's out= is out of place for every
 * algorithm: the window is not written.  Two-shot and ring then go
 * through the window's scratch area (kplan.h: the region must fit it,
 * every member must pass out, no persistent all-reduce may hold it);
 * multicast refuses out= (its st writes every slice); auto picks
 * oneshot or comm where two-shot's region does not fit the scratch.
 * Every collective moves the data as its plan says (kplan.h; kernel.plan
 * shows it): chunks are balanced, so n need not divide by the team.
 *   kernel.allreduce(w [, {algo="auto", op, offset, n, out}])
 *       -> result tensor, algorithm run.  algo: "oneshot" (each rank loads
 *       every slice and reduces), "twoshot" (rank r reduces chunk r by peer
 *       loads and stores it to every peer: the whole window holds the
 *       result; with out=, every scratch area), "ring" (reduce-scatter and all-gather
 *       around the ring), "ll" (one-shot with the ready flags in the
 *       data, no barrier: core/kll.h; regions up to 64 KiB), "ll128" (the
 *       same in 128-byte lines of 120 data bytes; up to 256 KiB),
 *       "multicast" (w:multicast(): NVLS, or its
 *       emulation, which moves the data as two-shot does), "comm" (the
 *       communicator's all-reduce on the window's memory: NCCL on cuda, MPI
 *       on host), "nccl_dev" (one-shot written with NCCL's device API:
 *       cuda, windows of kind nccl; kernels/cuda/nccl_dev.cu), "auto" (by size
 *       and team from src/core/kreduce_tune.h: ll, ll128, one-shot,
 *       two-shot or comm).
 *   kernel.reduce_scatter(w [, {algo="direct"|"ring", op, offset, n, out}])
 *       rank r gets chunk r reduced: out, or chunk r of its slice.
 *   kernel.allgather(w [, {algo="direct"|"ring", offset, n, out}])
 *       rank r's chunk r goes to every slice (peer stores); out gets a copy.
 *   kernel.reduce_to(root, w [, {op, offset, n, out}])  root (a rank of w.comm)
 *       gets the reduction: out, or its own slice.  Returns it on root, nil
 *       elsewhere.
 *   kernel.broadcast(root, w [, {algo="direct"|"tree"|"ring", offset, n, out}])
 *       every rank's region (or out) = root's, by peer loads.
 *   kernel.plan(w [, {coll, algo, n, offset, root, out=false}]) -> the plan
 *   kernel.algos  -> every name kernel.allreduce accepts
 *   kernel.ll_max_bytes  -> the largest region algo "ll" takes (bytes)
 *   kernel.ll128_max_bytes -> the largest region algo "ll128" takes (bytes)
 *   kernel.choose(bytes [, team_size [, backend]]) -> the algorithm "auto" runs
 *   kernel.crossovers  -> the table auto reads (a copy)
 *
 * The multicast type (w:multicast()) is l_mcast.c; kernel.plan's table is
 * built by kplan_table.c.
 *
 * Dtypes f32 f16 bf16 i32 u32; ops sum prod min max (nvls: kreduce.h).  Every
 * argument is checked (kargs.c), naming the argument and the bound, before
 * any backend call. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "bind/comm.h"
#include "bind/kalgos.h"
#include "bind/libs.h"
#include "bind/users.h"
#include "bind/opts.h"
#include "core/kll.h"
#include "core/kreduce_tune.h"
#include "wire/faults.h"

/* The algorithm a's options name for coll (def when none), or an error
 * listing the valid ones. */
static enum gcsh_kalgo check_algo(lua_State *L, const gcsh_kargs *a, enum gcsh_kcoll coll,
                                  const char *def)
{
    const char *name = a->algo ? a->algo : def;
    const gcsh_kalgo_row *row = gcsh_kalgo_find(coll, name);
    char valid[128];
    if (!row || row->plan < 0)
        luaL_error(L, "%s: unknown algo '%s' (valid: %s)", a->fname, name,
                   gcsh_kalgo_names(coll, 1, valid, sizeof valid));
    return (enum gcsh_kalgo)row->plan;
}

/* Pushes what a collective returns: out, or the view of my slice's region
 * (first..first+n). */
static void push_result(lua_State *L, const gcsh_kargs *a, size_t first, size_t n)
{
    if (a->out_idx) {
        lua_pushvalue(L, a->out_idx);
        return;
    }
    gcsh_symobj *o = a->o;
    gcsh_push_tensor(L, o->slices[o->desc.team_rank], first, n, o->dtype);
}

/* ---- auto --------------------------------------------------------------------- */

static const gcsh_kern_crossover *crossover_row(const char *backend, int team)
{
    const gcsh_kern_crossover *last = NULL;
    for (size_t i = 0; i < sizeof gcsh_kern_crossovers / sizeof gcsh_kern_crossovers[0]; i++) {
        const gcsh_kern_crossover *r = &gcsh_kern_crossovers[i];
        if (strcmp(r->backend, backend) != 0)
            continue;
        if (r->team_size >= team)
            return r;
        last = r;
    }
    return last;
}

/* A row's ll limit, never past what the LL area holds. */
static size_t row_ll_max(const gcsh_kern_crossover *r)
{
    return r->ll_max < GCSH_LL_MAX_BYTES ? r->ll_max : GCSH_LL_MAX_BYTES;
}

const char *gcsh_kern_choose(const char *backend, int team, size_t bytes)
{
    const gcsh_kern_crossover *r = crossover_row(backend, team);
    if (!r || team == 1)
        return "oneshot"; /* one rank: a local copy, whatever runs */
    return gcsh_kalgo_choose(r, bytes); /* the table's auto column (kalgos.c) */
}

static int kernel_choose(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    lua_Integer bytes = luaL_checkinteger(L, 1);
    lua_Integer team = luaL_optinteger(L, 2, ctx->local_size);
    const char *backend = luaL_optstring(L, 3, ctx->be->name);
    luaL_argcheck(L, bytes >= 0, 1, "bytes must be >= 0");
    luaL_argcheck(L, team >= 1, 2, "team size must be >= 1");
    lua_pushstring(L, gcsh_kern_choose(backend, (int)team, (size_t)bytes));
    return 1;
}

static void push_crossovers(lua_State *L)
{
    size_t rows = sizeof gcsh_kern_crossovers / sizeof gcsh_kern_crossovers[0];
    lua_createtable(L, (int)rows, 0);
    for (size_t i = 0; i < rows; i++) {
        const gcsh_kern_crossover *r = &gcsh_kern_crossovers[i];
        lua_createtable(L, 0, 6);
        lua_pushstring(L, r->backend);
        lua_setfield(L, -2, "backend");
        lua_pushinteger(L, r->team_size);
        lua_setfield(L, -2, "team_size");
        lua_pushinteger(L, (lua_Integer)row_ll_max(r));
        lua_setfield(L, -2, "ll_max");
        lua_pushinteger(L, (lua_Integer)(r->ll128_max < GCSH_LL128_MAX_BYTES
                                              ? r->ll128_max : GCSH_LL128_MAX_BYTES));
        lua_setfield(L, -2, "ll128_max");
        lua_pushinteger(L, (lua_Integer)r->oneshot_max);
        lua_setfield(L, -2, "oneshot_max");
        if (r->twoshot_max == GCSH_KERN_NO_LIMIT)
            lua_pushnumber(L, HUGE_VAL);
        else
            lua_pushinteger(L, (lua_Integer)r->twoshot_max);
        lua_setfield(L, -2, "twoshot_max");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
}

/* ---- kernel.allreduce ---------------------------------------------------------- */

#define WINDOW_KEYS "op offset n out"

/* The runner of the all-reduce's row named name (kalgos.c): its own, or its
 * plan's; NULL for a name the all-reduce does not take ("auto" is chosen
 * before). */
static gcsh_kalgo_run_fn *allreduce_runner(const char *name)
{
    const gcsh_kalgo_row *row = gcsh_kalgo_find(GCSH_KC_ALLREDUCE, name);
    if (!row)
        return NULL;
    return row->run ? row->run : row->plan >= 0 ? gcsh_kalgo_run_plan : NULL;
}

static int kernel_allreduce(lua_State *L)
{
    gcsh_kargs a = {.fname = "allreduce"};
    a.o = gcsh_karg_window(L, 1, a.fname);
    gcsh_check_intent(L, &a.o->comm->chk, 0);
    gcsh_karg_read(L, 2, &a, WINDOW_KEYS " algo");
    gcsh_karg_dtype_op(L, a.fname, a.o->dtype, a.op, gcsh_kern_ops_of(a.o->dtype), "the kernels");
    gcsh_karg_out_size(L, &a, a.n, "n elements");
    int spans = a.o->desc.team_size < a.o->comm->size; /* several nodes */
    if (spans && (!a.algo || strcmp(a.algo, "auto") == 0)) {
        /* hier keeps the result in the window; out= takes the communicator's */
        a.algo = a.out && gcsh_kalgo_comm_can_run(L, &a) ? "comm" : "hier";
    } else if (spans && strcmp(a.algo, "hier") != 0 && strcmp(a.algo, "comm") != 0) {
        char team[256];
        luaL_error(L, "%s: algo '%s' runs over the window's team, ranks %s (node %d) of the "
                      "communicator's 0-%d, so it would reduce this node only; across nodes use "
                      "algo 'hier' (in the node, then across nodes; 'auto' picks it) or 'comm' "
                      "(the communicator's all-reduce)",
                   a.fname, a.algo, gcsh_sym_team_text(a.o, team, sizeof team),
                   gcsh_ctx_of(L)->node, a.o->comm->size - 1);
    } else if (!a.algo || strcmp(a.algo, "auto") == 0) {
        a.algo = gcsh_kern_choose(gcsh_ctx_of(L)->be->name, a.o->desc.team_size,
                             a.n * gcsh_dtype_size(a.o->dtype));
        if (strcmp(a.algo, "comm") == 0 && !gcsh_kalgo_comm_can_run(L, &a))
            a.algo = "twoshot";
        /* out= keeps the window untouched: two-shot needs the scratch area */
        if (strcmp(a.algo, "twoshot") == 0 && a.out && !gcsh_kern_fits_scratch(&a))
            a.algo = gcsh_kalgo_comm_can_run(L, &a) ? "comm" : "oneshot";
    }
    gcsh_kalgo_run_fn *run = allreduce_runner(a.algo);
    char valid[128];
    if (!run)
        return luaL_error(L, "%s: unknown algo '%s' (valid: %s)", a.fname, a.algo,
                          gcsh_kalgo_names(GCSH_KC_ALLREDUCE, 0, valid, sizeof valid));
    const char *ran = run(L, &a);
    push_result(L, &a, a.offset, a.n);
    lua_pushstring(L, ran);
    return 2;
}

static int kernel_reduce_scatter(lua_State *L)
{
    gcsh_kargs a = {.fname = "reduce_scatter"};
    a.o = gcsh_karg_comm_window(L, 1, a.fname, "c:reducescatter");
    gcsh_check_intent(L, &a.o->comm->chk, 0);
    gcsh_karg_read(L, 2, &a, WINDOW_KEYS " algo");
    gcsh_karg_dtype_op(L, a.fname, a.o->dtype, a.op, gcsh_kern_ops_of(a.o->dtype), "the kernels");
    enum gcsh_kalgo algo = check_algo(L, &a, GCSH_KC_REDUCE_SCATTER, "direct");
    gcsh_kchunk mine = gcsh_kplan_chunk(a.n, a.o->desc.team_size, a.o->desc.team_rank);
    gcsh_karg_out_size(L, &a, mine.count, "this rank's chunk of n");
    gcsh_kern_collective(L, &a, GCSH_KC_REDUCE_SCATTER, algo, -1, NULL, gcsh_kalgo_name(algo));
    push_result(L, &a, a.offset + mine.first, mine.count);
    return 1;
}

static int kernel_allgather(lua_State *L)
{
    gcsh_kargs a = {.fname = "allgather"};
    a.o = gcsh_karg_comm_window(L, 1, a.fname, "c:allgather");
    gcsh_check_intent(L, &a.o->comm->chk, 0);
    gcsh_karg_read(L, 2, &a, "offset n out algo");
    gcsh_karg_dtype_op(L, a.fname, a.o->dtype, GCSH_OP_SUM, gcsh_kern_ops_of(a.o->dtype),
                       "the kernels");
    enum gcsh_kalgo algo = check_algo(L, &a, GCSH_KC_ALLGATHER, "direct");
    gcsh_karg_out_size(L, &a, a.n, "n elements");
    gcsh_kern_collective(L, &a, GCSH_KC_ALLGATHER, algo, -1, NULL, gcsh_kalgo_name(algo));
    push_result(L, &a, a.offset, a.n);
    return 1;
}

static int kernel_reduce_to(lua_State *L)
{
    gcsh_kargs a = {.fname = "reduce_to"};
    a.o = gcsh_karg_comm_window(L, 2, a.fname, "c:reduce");
    gcsh_check_intent(L, &a.o->comm->chk, 0);
    int root = gcsh_karg_root(L, 1, &a);
    gcsh_karg_read(L, 3, &a, WINDOW_KEYS " algo");
    gcsh_karg_dtype_op(L, a.fname, a.o->dtype, a.op, gcsh_kern_ops_of(a.o->dtype), "the kernels");
    enum gcsh_kalgo algo = check_algo(L, &a, GCSH_KC_REDUCE, "direct");
    gcsh_karg_out_size(L, &a, a.n, "n elements");
    gcsh_kern_collective(L, &a, GCSH_KC_REDUCE, algo, root, NULL, gcsh_kalgo_name(algo));
    if (a.o->desc.team_rank == root)
        push_result(L, &a, a.offset, a.n);
    else
        lua_pushnil(L);
    return 1;
}

static int kernel_broadcast(lua_State *L)
{
    gcsh_kargs a = {.fname = "broadcast"};
    a.o = gcsh_karg_comm_window(L, 2, a.fname, "c:broadcast");
    gcsh_check_intent(L, &a.o->comm->chk, 0);
    int root = gcsh_karg_root(L, 1, &a);
    gcsh_karg_read(L, 3, &a, "offset n out algo");
    gcsh_karg_dtype_op(L, a.fname, a.o->dtype, GCSH_OP_SUM, gcsh_kern_ops_of(a.o->dtype),
                       "the kernels");
    enum gcsh_kalgo algo = check_algo(L, &a, GCSH_KC_BROADCAST, "direct");
    gcsh_karg_out_size(L, &a, a.n, "n elements");
    gcsh_kern_collective(L, &a, GCSH_KC_BROADCAST, algo, root, NULL, gcsh_kalgo_name(algo));
    push_result(L, &a, a.offset, a.n);
    return 1;
}

/* ---- kernel.plan (its table: kplan_table.c) ---------------------------------- */

/* The first algorithm of coll that has a plan: kernel.plan's default. */
static const char *first_planned(enum gcsh_kcoll coll)
{
    const gcsh_kalgo_row *row;
    for (int i = 0; (row = gcsh_kalgo_at(coll, i)); i++)
        if (row->plan >= 0)
            return row->name;
    return NULL;
}

/* kernel.plan(w [, {coll="allreduce", algo=, n=, offset=, root=0, out=false}]):
 * what every member does at every step (kplan.h), for the window's team.
 * Local: nothing runs, nothing is checked across ranks. */
static int kernel_plan(lua_State *L)
{
    gcsh_kargs a = {.fname = "plan"};
    a.o = gcsh_karg_window(L, 1, a.fname);
    a.n = a.o->n;
    const char *coll_name = "allreduce";
    int has_out = 0, root = 0;
    if (gcsh_opts_check(L, 2, a.fname, "coll algo n offset root out")) {
        gcsh_karg_region(L, 2, &a);
        if (lua_getfield(L, 2, "coll") != LUA_TNIL)
            coll_name = luaL_checkstring(L, -1);
        if (lua_getfield(L, 2, "algo") != LUA_TNIL)
            a.algo = luaL_checkstring(L, -1);
        has_out = lua_getfield(L, 2, "out") != LUA_TNIL && lua_toboolean(L, -1);
        if (lua_getfield(L, 2, "root") != LUA_TNIL)
            root = gcsh_karg_root(L, lua_gettop(L), &a);
        lua_pop(L, 4);
    }
    int coll = gcsh_kcoll_parse(coll_name);
    char valid[128];
    if (coll < 0)
        return luaL_error(L, "plan: unknown coll '%s' (valid: %s)", coll_name,
                          gcsh_kcoll_names(valid, sizeof valid));
    const gcsh_kalgo_row *row = gcsh_kalgo_find((enum gcsh_kcoll)coll, a.algo);
    if (row && row->push_plan) {
        row->push_plan(L, &a);
        return 1;
    }
    if (row && row->no_plan)
        return luaL_error(L, "plan: %s", row->no_plan);
    enum gcsh_kalgo algo = check_algo(L, &a, (enum gcsh_kcoll)coll,
                                      first_planned((enum gcsh_kcoll)coll));
    gcsh_kplan p = {(enum gcsh_kcoll)coll, algo, a.o->desc.team_size, root, a.n, 0};
    if (has_out && coll == GCSH_KC_ALLREDUCE && algo == GCSH_KA_MULTICAST)
        return luaL_error(L, "plan: algo 'multicast' takes no out (its st stores into every "
                             "slice): twoshot moves the same data, out of place through the "
                             "scratch areas");
    p.scratch = has_out && gcsh_kplan_needs_scratch(&p);
    gcsh_push_kplan(L, a.o, &p, a.offset, has_out);
    return 1;
}

/* ---- local jobs: kernel.empty, kernel.reduce, kernel.reduce_peers --------------- */

/* kernel.empty(): one empty kernel on the rank's stream, through the same
 * layers as every kernel call (the flight recorder's, a capture's): the
 * launch floor a kernel collective is measured against (bench.allreduce's
 * algo "empty"). */
static int kernel_empty(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (gcsh_kern_backend(L)->empty(ctx) != 0)
        return gcsh_raise(L, ctx);
    return 0;
}

/* An input overlapping out is fine only element for element (the same
 * storage and offset): each element is read before it is written. */
static void check_input_vs_out(lua_State *L, const gcsh_tensor *t, const gcsh_tensor *out,
                               int i)
{
    if (t->st != out->st || t->offset == out->offset)
        return;
    size_t es = gcsh_dtype_size(out->dtype);
    size_t a0 = t->offset * es, a1 = a0 + out->n * es;
    size_t b0 = out->offset * es, b1 = b0 + out->n * es;
    if (a0 < b1 && b0 < a1)
        luaL_error(L, "reduce: input #%d overlaps out without being out itself", i);
}

static int kernel_reduce(lua_State *L)
{
    gcsh_tensor *out = gcsh_karg_placed(L, 1, "reduce", "out");
    gcsh_tensor_check_write(L, out);
    luaL_checktype(L, 2, LUA_TTABLE);
    gcsh_redop op = gcsh_arg_redop(L, 3, GCSH_OP_SUM);
    gcsh_karg_dtype_op(L, "reduce", out->dtype, op, gcsh_kern_ops_of(out->dtype), "the kernels");
    lua_Integer k = luaL_len(L, 2);
    if (k < 1 || k > GCSH_KERN_MAX_SRC)
        luaL_error(L, "reduce: takes 1..%d input tensors, got %I", GCSH_KERN_MAX_SRC, k);
    gcsh_kjob j = {.k = (int)k, .m = 1, .n = out->n, .dt = out->dtype, .op = op};
    j.dst[0] = gcsh_tensor_data(out);
    for (int i = 1; i <= k; i++) {
        lua_geti(L, 2, i);
        char what[24];
        snprintf(what, sizeof what, "input #%d", i);
        gcsh_tensor *t = gcsh_karg_placed(L, lua_gettop(L), "reduce", what);
        gcsh_karg_same_dtype(L, "reduce", what, t, out->dtype, "out");
        if (t->n < out->n)
            luaL_error(L, "reduce: input #%d has %I elements, needs %I (#out)", i,
                       (lua_Integer)t->n, (lua_Integer)out->n);
        check_input_vs_out(L, t, out, i);
        j.src[i - 1] = gcsh_tensor_data(t);
        lua_pop(L, 1);
    }
    gcsh_kjob_run(L, &j);
    lua_settop(L, 1);
    return 1;
}

static int kernel_reduce_peers(lua_State *L)
{
    gcsh_kargs a = {.fname = "reduce_peers"};
    a.out = gcsh_karg_placed(L, 1, a.fname, "out");
    gcsh_tensor_check_write(L, a.out);
    a.out_idx = 1;
    /* loads alone, out never a slice (peer_reduce checks): an aborted
     * communicator's window is read as w:peer(r) reads it */
    a.o = gcsh_karg_window_read(L, 2, a.fname);
    gcsh_karg_peer_reduce(L, &a, 3);
    gcsh_karg_dtype_op(L, a.fname, a.o->dtype, a.op, gcsh_kern_ops_of(a.o->dtype), "the kernels");
    gcsh_kjob_peers(L, a.o, a.offset, a.n, a.out, a.op);
    lua_settop(L, 1);
    return 1;
}

static const luaL_Reg funcs[] = {
    {"empty", kernel_empty},
    {"reduce", kernel_reduce},
    {"reduce_peers", kernel_reduce_peers},
    {"allreduce", kernel_allreduce},
    {"reduce_scatter", kernel_reduce_scatter},
    {"allgather", kernel_allgather},
    {"reduce_to", kernel_reduce_to},
    {"broadcast", kernel_broadcast},
    {"choose", kernel_choose},
    {"plan", kernel_plan},
    {NULL, NULL},
};

int luaopen_gcsh_kernel(lua_State *L)
{
    luaL_newlib(L, funcs);
    push_crossovers(L);
    lua_setfield(L, -2, "crossovers");
    luaopen_gcsh_kalgos(L); /* kernel.algos: the all-reduce's names, in the table's order */
    lua_getfield(L, -1, "takes");
    lua_getfield(L, -1, "allreduce");
    lua_setfield(L, -4, "algos");
    lua_pop(L, 2);
    lua_pushinteger(L, (lua_Integer)GCSH_LL_MAX_BYTES);
    lua_setfield(L, -2, "ll_max_bytes");
    lua_pushinteger(L, (lua_Integer)GCSH_LL128_MAX_BYTES);
    lua_setfield(L, -2, "ll128_max_bytes");
    return 1;
}
