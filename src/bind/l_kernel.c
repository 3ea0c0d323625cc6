/* The "kernel" library: reduce kernels over
 * tensors and over symmetric windows (the peer pointer table), on both
 * backends with identical results (kreduce.h).
 *
 *   kernel.reduce(out, {t1, t2, ...} [, op="sum"])
 *       out[i] = t1[i] op t2[i] op ...  for i < #out; local, no synchronisation;
 *       inputs may be peer views (w:peer(r)).  out may be one of the inputs.
 *   kernel.reduce_peers(out, w [, op | {op=, offset=0, n=#out}])
 *       out[i] = the op over every team member's w element offset + i: peer
 *       loads, no synchronisation (call c:barrier() first, as in a lesson).
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
 *       data, no barrier: core/kll.h; regions up to 64 KiB),
 *       "multicast" (w:multicast(): NVLS, or its
 *       emulation, which moves the data as two-shot does), "comm" (the
 *       communicator's all-reduce on the window's memory: NCCL on cuda, MPI
 *       on host), "nccl_dev" (one-shot written with NCCL's device API:
 *       cuda, windows of kind nccl; kernels/nccl_dev.cu), "auto" (by size
 *       and team from src/core/kreduce_tune.h: ll, one-shot, two-shot or
 *       comm).
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
#include "bind/kernel.h"
#include "bind/users.h"
#include "bind/opts.h"
#include "core/kll.h"
#include "core/kreduce_tune.h"
#include "wire/faults.h"

/* ---- what the kernels keep in every slice: the LL area, then the sync words ---- */

size_t gcsh_kern_reserved_bytes(gcsh_ctx *ctx, size_t window_bytes, int comm_size)
{
    if (!ctx->be->kern)
        return 0;
    return gcsh_ll_area_bytes(window_bytes, gcsh_ll_slots(comm_size)) + ctx->be->kern->sync_bytes;
}

void gcsh_kern_reserve_sync(gcsh_ctx *ctx, gcsh_sym_proposal *p, gcsh_sym_size *size,
                            int comm_size)
{
    if (p->problem[0] || !ctx->be->kern || size->gran == 0)
        return;
    size_t want = size->bytes + gcsh_kern_reserved_bytes(ctx, size->bytes, comm_size);
    size->alloc = (want + size->gran - 1) / size->gran * size->gran;
}

static size_t sync_offset(lua_State *L, const gcsh_symobj *o)
{
    return o->desc.alloc_bytes - gcsh_kern_backend(L)->sync_bytes;
}

size_t gcsh_kern_window_bytes(const gcsh_symobj *o)
{
    return o->n * gcsh_dtype_size(o->dtype);
}

/* The bytes of a slice's scratch area: the LL area past its header (kplan.h). */
static size_t scratch_bytes_of(const gcsh_symobj *o)
{
    return gcsh_ll_area_bytes(gcsh_kern_window_bytes(o), gcsh_ll_slots(o->comm->size)) -
           GCSH_LL_HEADER_BYTES;
}

size_t gcsh_kern_ll_offset(lua_State *L, const gcsh_symobj *o)
{
    return sync_offset(L, o) -
           gcsh_ll_area_bytes(gcsh_kern_window_bytes(o), gcsh_ll_slots(o->comm->size));
}

void gcsh_kern_info_fields(lua_State *L, const gcsh_symobj *o)
{
    if (!gcsh_ctx_of(L)->be->kern)
        return;
    gcsh_set_integer(L, "ll_offset", (lua_Integer)gcsh_kern_ll_offset(L, o));
    gcsh_set_integer(L, "scratch_bytes", (lua_Integer)scratch_bytes_of(o));
    gcsh_set_integer(L, "sync_offset", (lua_Integer)sync_offset(L, o));
}

/* The kernel collectives are checked operations (collcheck.h): every member of
 * the window's communicator must call the same one, with the same algorithm,
 * over the same region, or nothing is launched.  Unchecked, a mismatch would
 * pair the barriers of different launches and leave the window's sync words
 * out of step, or leave one rank waiting for the bound on a GPU barrier.
 * Returns the communicator's check state for gcsh_check_leave. */
static gcsh_comm_check *enter_checked(lua_State *L, const gcsh_kargs *a, const char *algo, int root,
                                      int reduces)
{
    gcsh_comm_check *cc = &a->o->comm->chk;
    char op[24];
    snprintf(op, sizeof op, "kernel.%s", a->fname);
    gcsh_fingerprint fp;
    gcsh_fp_init(&fp, cc, op);
    snprintf(fp.extra, sizeof fp.extra, "%s", algo ? algo : "");
    fp.count = (int64_t)a->n;
    fp.offset = (int64_t)a->offset;
    fp.window = a->o->seq;
    fp.dtype = (int32_t)a->o->dtype;
    fp.redop = reduces ? (int32_t)a->op : -1;
    fp.root = root >= 0 ? a->o->desc.team[root] : -1;
    gcsh_check_enter(L, cc, &fp);
    return cc;
}

/* Where a slice's scratch area starts: the LL area past its header (kplan.h). */
static size_t scratch_offset(lua_State *L, const gcsh_symobj *o)
{
    return gcsh_kern_ll_offset(L, o) + GCSH_LL_HEADER_BYTES;
}

/* Whether a's region fits the window's scratch area: an out-of-place
 * two-shot or ring gathers the result there. */
static int fits_scratch(const gcsh_kargs *a)
{
    return a->n * gcsh_dtype_size(a->o->dtype) <= scratch_bytes_of(a->o);
}

/* out= with a plan that stores into slices (kplan.h): the result goes
 * through the scratch areas, which must hold the region and be free (a
 * persistent all-reduce keeps the LL area); every member must pass out,
 * which the check compares (`shown` gets " out="). */
static void check_scratch(lua_State *L, const gcsh_kargs *a, const char *algo)
{
    size_t es = gcsh_dtype_size(a->o->dtype);
    if (!fits_scratch(a))
        luaL_error(L, "%s: algo '%s' with out= gathers the result in the window's scratch area "
                      "(its LL area), which holds %I bytes (n up to %I), got n = %I (%I bytes): "
                      "oneshot and comm reduce straight into out; or omit out (the result in "
                      "the window)",
                   a->fname, algo, (lua_Integer)scratch_bytes_of(a->o),
                   (lua_Integer)(scratch_bytes_of(a->o) / es), (lua_Integer)a->n,
                   (lua_Integer)(a->n * es));
    char what[96];
    snprintf(what, sizeof what, "kernel.%s{algo='%s', out=} (it uses the window's LL area as "
                                "scratch)", a->fname, algo);
    gcsh_users_refuse_shared(L, a->o, what);
}

/* A kernel collective: the plan of (coll, algo) over a's region, checked
 * under the name `shown`; root is a team index or -1. */
static void run_collective(lua_State *L, const gcsh_kargs *a, enum gcsh_kcoll coll,
                           enum gcsh_kalgo algo, int root, const gcsh_mcast *mc, const char *shown)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_kcoll_args k = {
        .plan = {coll, algo, a->o->desc.team_size, root < 0 ? 0 : root, a->n, 0},
        .offset = a->offset, .dt = a->o->dtype, .op = a->op,
        .out = a->out ? gcsh_tensor_data(a->out) : NULL, .sync_off = sync_offset(L, a->o),
        .scratch_off = scratch_offset(L, a->o), .epoch = &a->o->kern_epoch, .mc = mc,
    };
    char checked[64];
    snprintf(checked, sizeof checked, "%s", shown);
    if (a->out && gcsh_kplan_needs_scratch(&k.plan)) {
        check_scratch(L, a, shown);
        k.plan.scratch = 1;
        snprintf(checked, sizeof checked, "%s out=", shown);
    }
    int reduces = coll != GCSH_KC_ALLGATHER && coll != GCSH_KC_BROADCAST;
    gcsh_comm_check *cc = enter_checked(L, a, checked, root, reduces);
    gcsh_check_leave(L, cc, gcsh_kern_backend(L)->collective(ctx, a->o->impl, &a->o->desc, &k));
}

void gcsh_kern_collective(lua_State *L, const gcsh_kargs *a, enum gcsh_kcoll coll,
                          enum gcsh_kalgo algo, const char *shown)
{
    run_collective(L, a, coll, algo, -1, NULL, shown);
}

/* The algorithm a's options name for coll (def when none), or an error
 * listing the valid ones. */
static enum gcsh_kalgo check_algo(lua_State *L, const gcsh_kargs *a, enum gcsh_kcoll coll,
                                  const char *def)
{
    const char *name = a->algo ? a->algo : def;
    int algo = gcsh_kalgo_parse(name);
    char valid[128];
    if (algo < 0 || !gcsh_kplan_valid(coll, (enum gcsh_kalgo)algo))
        luaL_error(L, "%s: unknown algo '%s' (valid: %s)", a->fname, name,
                   gcsh_kcoll_algos(coll, 1, valid, sizeof valid));
    return (enum gcsh_kalgo)algo;
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

static const char *choose_algo(const char *backend, int team, size_t bytes)
{
    const gcsh_kern_crossover *r = crossover_row(backend, team);
    if (!r || team == 1)
        return "oneshot"; /* one rank: a local copy, whatever runs */
    return gcsh_kalgo_choose(r, bytes); /* kplan.c's auto column */
}

static int kernel_choose(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    lua_Integer bytes = luaL_checkinteger(L, 1);
    lua_Integer team = luaL_optinteger(L, 2, ctx->local_size);
    const char *backend = luaL_optstring(L, 3, ctx->be->name);
    luaL_argcheck(L, bytes >= 0, 1, "bytes must be >= 0");
    luaL_argcheck(L, team >= 1, 2, "team size must be >= 1");
    lua_pushstring(L, choose_algo(backend, (int)team, (size_t)bytes));
    return 1;
}

static void push_crossovers(lua_State *L)
{
    size_t rows = sizeof gcsh_kern_crossovers / sizeof gcsh_kern_crossovers[0];
    lua_createtable(L, (int)rows, 0);
    for (size_t i = 0; i < rows; i++) {
        const gcsh_kern_crossover *r = &gcsh_kern_crossovers[i];
        lua_createtable(L, 0, 5);
        lua_pushstring(L, r->backend);
        lua_setfield(L, -2, "backend");
        lua_pushinteger(L, r->team_size);
        lua_setfield(L, -2, "team_size");
        lua_pushinteger(L, (lua_Integer)row_ll_max(r));
        lua_setfield(L, -2, "ll_max");
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

/* Whether algo "comm" can run on a's window (whose team is its whole
 * communicator: gcsh_karg_comm_window): the communicator can reduce the
 * dtype with the op.  auto falls back to two-shot where it cannot. */
static int comm_can_run(lua_State *L, const gcsh_kargs *a)
{
    return gcsh_ctx_of(L)->be->comm->can_reduce(a->o->dtype, a->op);
}

static void comm_allreduce(lua_State *L, const gcsh_kargs *a)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_symobj *o = a->o;
    if (!ctx->be->comm->can_reduce(o->dtype, a->op))
        luaL_error(L, "%s: the communicator cannot reduce %s with %s", a->fname,
                   gcsh_dtype_name(o->dtype), gcsh_redop_name(a->op));
    void *mine = (char *)o->desc.peer[o->desc.team_rank] + a->offset * gcsh_dtype_size(o->dtype);
    void *dst = a->out ? gcsh_tensor_data(a->out) : mine;
    gcsh_comm_check *cc = enter_checked(L, a, "comm", -1, 1);
    gcsh_check_leave(L, cc, ctx->be->comm->allreduce(ctx, o->comm_impl, mine, dst, a->n,
                                                     o->dtype, a->op));
}

/* How kernel.allreduce runs an algorithm; returns the name the call
 * reports. */
typedef const char *(*allreduce_run)(lua_State *L, const gcsh_kargs *a);

/* oneshot, twoshot, ring: the plan of that name */
static const char *allreduce_planned(lua_State *L, const gcsh_kargs *a)
{
    enum gcsh_kalgo algo = check_algo(L, a, GCSH_KC_ALLREDUCE, "oneshot");
    run_collective(L, a, GCSH_KC_ALLREDUCE, algo, -1, NULL, a->algo);
    return a->algo;
}

/* w:multicast()'s mode: multimem (nvls), or its emulation by peer loads and
 * stores, which moves the data as two-shot does (kplan.h) */
static const char *allreduce_multicast(lua_State *L, const gcsh_kargs *a)
{
    if (a->out)
        luaL_error(L, "%s: algo 'multicast' cannot keep the window untouched with out=: its st "
                      "stores the result through the multicast address into every slice; use "
                      "twoshot (the same moves, through the window's scratch area) or oneshot, "
                      "or omit out (the result in the window)",
                   a->fname);
    gcsh_mcast mc;
    gcsh_mcast_open(L, a->o, &mc);
    gcsh_mcast_check_rules(L, a->fname, a->o, 1, a->op, a->offset, a->n, a->out);
    run_collective(L, a, GCSH_KC_ALLREDUCE, GCSH_KA_MULTICAST, -1, mc.nvls ? &a->o->mc : NULL,
                   "multicast");
    return mc.nvls ? "multicast(nvls)" : "multicast(emulated)";
}

static const char *allreduce_comm(lua_State *L, const gcsh_kargs *a)
{
    comm_allreduce(L, a);
    return "comm";
}

/* one-shot with the ready flags in the data (core/kll.h): no barrier */
static const char *allreduce_ll(lua_State *L, const gcsh_kargs *a)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_symobj *o = a->o;
    size_t es = gcsh_dtype_size(o->dtype);
    if (a->n * es > GCSH_LL_MAX_BYTES)
        luaL_error(L, "%s: algo 'll' takes at most %I bytes (n must be 1..%I for %s), got n = %I "
                      "(%I bytes); oneshot and twoshot take any n",
                   a->fname, (lua_Integer)GCSH_LL_MAX_BYTES, (lua_Integer)(GCSH_LL_MAX_BYTES / es),
                   gcsh_dtype_name(o->dtype), (lua_Integer)a->n, (lua_Integer)(a->n * es));
    if (!gcsh_kern_backend(L)->ll_allreduce)
        luaL_error(L, "%s: algo 'll' is not available on the %s backend", a->fname,
                   ctx->be->name);
    gcsh_kll_args k = {
        .offset = a->offset, .n = a->n, .dt = o->dtype, .op = a->op,
        .out = a->out ? gcsh_tensor_data(a->out) : NULL, .ll_off = gcsh_kern_ll_offset(L, o),
        .window_bytes = gcsh_kern_window_bytes(o), .slots = gcsh_ll_slots(o->comm->size),
    };
    gcsh_comm_check *cc = enter_checked(L, a, "ll", -1, 1);
    gcsh_check_leave(L, cc, gcsh_kern_backend(L)->ll_allreduce(ctx, o->impl, &o->desc, &k));
    return "ll";
}

/* A one-shot written with NCCL's device API (kernels/nccl_dev.cu): cuda,
 * windows of kind nccl.  Refused before the collective check, naming the
 * window's kind and why, the same on every rank (the backend and the kind
 * are the whole communicator's), so no rank is left in the check. */
static const char *allreduce_nccl_dev(lua_State *L, const gcsh_kargs *a)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_symobj *o = a->o;
    const gcsh_kernel_ops *kern = gcsh_kern_backend(L);
    if (!kern->dev_allreduce)
        luaL_error(L, "%s: algo 'nccl_dev' needs NCCL's device API: the cuda backend and a "
                      "window of kind 'nccl'; this is the %s backend (window of kind '%s'); "
                      "oneshot moves the data the same way",
                   a->fname, ctx->be->name, o->kind);
    char why[320] = "";
    if (kern->dev_usable(ctx, o->impl, why, sizeof why) != 0)
        luaL_error(L, "%s: algo 'nccl_dev' cannot run on this window: %s", a->fname, why);
    gcsh_kdev_args k = {
        .offset = a->offset, .n = a->n, .dt = o->dtype, .op = a->op,
        .out = a->out ? gcsh_tensor_data(a->out) : NULL,
    };
    gcsh_comm_check *cc = enter_checked(L, a, "nccl_dev", -1, 1);
    gcsh_check_leave(L, cc, kern->dev_allreduce(ctx, o->impl, &o->desc, &k));
    return "nccl_dev";
}

/* The algorithms registered by the files above this one (kernel.h). */
#define REGISTERED_MAX 4
typedef struct {
    const char *name;
    gcsh_kern_allreduce_fn *run;
    gcsh_kern_plan_fn *push_plan;
} registered_algo;
static registered_algo registered[REGISTERED_MAX];
static int nregistered;

void gcsh_kern_register_allreduce(const char *name, gcsh_kern_allreduce_fn *run,
                                  gcsh_kern_plan_fn *push_plan)
{
    for (int i = 0; i < nregistered; i++)
        if (strcmp(registered[i].name, name) == 0)
            return; /* once per process: a second Lua state registers nothing new */
    if (nregistered < REGISTERED_MAX)
        registered[nregistered++] = (registered_algo){name, run, push_plan};
}

static int registered_index(const char *name)
{
    for (int i = 0; name && i < nregistered; i++)
        if (strcmp(registered[i].name, name) == 0)
            return i;
    return -1;
}

/* The runner of an algorithm kernel.allreduce takes (the names are core's
 * one list, kplan.c): its own below, a registered one, or else its plan;
 * NULL for a name the all-reduce does not take ("auto" is chosen before). */
static allreduce_run allreduce_runner(const char *name)
{
    static const struct {
        const char *name;
        allreduce_run run;
    } own[] = {{"ll", allreduce_ll},
               {"multicast", allreduce_multicast},
               {"comm", allreduce_comm},
               {"nccl_dev", allreduce_nccl_dev}};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (strcmp(own[i].name, name) == 0)
            return own[i].run;
    int r = registered_index(name);
    if (r >= 0)
        return registered[r].run;
    int algo = gcsh_kalgo_parse(name);
    return algo >= 0 && gcsh_kplan_valid(GCSH_KC_ALLREDUCE, (enum gcsh_kalgo)algo)
               ? allreduce_planned
               : NULL;
}

static int kernel_allreduce(lua_State *L)
{
    gcsh_kargs a = {.fname = "allreduce"};
    a.o = gcsh_karg_window(L, 1, a.fname);
    gcsh_karg_read(L, 2, &a, WINDOW_KEYS " algo");
    gcsh_karg_dtype_op(L, a.fname, a.o->dtype, a.op, gcsh_kern_ops_of(a.o->dtype), "the kernels");
    gcsh_karg_out_size(L, &a, a.n, "n elements");
    int spans = a.o->desc.team_size < a.o->comm->size; /* several nodes */
    if (spans && (!a.algo || strcmp(a.algo, "auto") == 0)) {
        /* hier keeps the result in the window; out= takes the communicator's */
        a.algo = a.out && comm_can_run(L, &a) ? "comm" : "hier";
    } else if (spans && strcmp(a.algo, "hier") != 0 && strcmp(a.algo, "comm") != 0) {
        char team[256];
        luaL_error(L, "%s: algo '%s' runs over the window's team, ranks %s (node %d) of the "
                      "communicator's 0-%d, so it would reduce this node only; across nodes use "
                      "algo 'hier' (in the node, then across nodes; 'auto' picks it) or 'comm' "
                      "(the communicator's all-reduce)",
                   a.fname, a.algo, gcsh_sym_team_text(a.o, team, sizeof team),
                   gcsh_ctx_of(L)->node, a.o->comm->size - 1);
    } else if (!a.algo || strcmp(a.algo, "auto") == 0) {
        a.algo = choose_algo(gcsh_ctx_of(L)->be->name, a.o->desc.team_size,
                             a.n * gcsh_dtype_size(a.o->dtype));
        if (strcmp(a.algo, "comm") == 0 && !comm_can_run(L, &a))
            a.algo = "twoshot";
        /* out= keeps the window untouched: two-shot needs the scratch area */
        if (strcmp(a.algo, "twoshot") == 0 && a.out && !fits_scratch(&a))
            a.algo = comm_can_run(L, &a) ? "comm" : "oneshot";
    }
    allreduce_run run = allreduce_runner(a.algo);
    char valid[128];
    if (!run)
        return luaL_error(L, "%s: unknown algo '%s' (valid: %s)", a.fname, a.algo,
                          gcsh_kcoll_algos(GCSH_KC_ALLREDUCE, 0, valid, sizeof valid));
    const char *ran = run(L, &a);
    push_result(L, &a, a.offset, a.n);
    lua_pushstring(L, ran);
    return 2;
}

/* The names coll takes as a list ({"direct", "ring"}); kernel.algos is
 * the all-reduce's. */
static void push_algos(lua_State *L, enum gcsh_kcoll coll)
{
    lua_newtable(L);
    const char *name;
    for (int i = 0; (name = gcsh_kcoll_algo(coll, i, NULL)); i++) {
        lua_pushstring(L, name);
        lua_rawseti(L, -2, i + 1);
    }
}

static int kernel_reduce_scatter(lua_State *L)
{
    gcsh_kargs a = {.fname = "reduce_scatter"};
    a.o = gcsh_karg_comm_window(L, 1, a.fname, "c:reducescatter");
    gcsh_karg_read(L, 2, &a, WINDOW_KEYS " algo");
    gcsh_karg_dtype_op(L, a.fname, a.o->dtype, a.op, gcsh_kern_ops_of(a.o->dtype), "the kernels");
    enum gcsh_kalgo algo = check_algo(L, &a, GCSH_KC_REDUCE_SCATTER, "direct");
    gcsh_kchunk mine = gcsh_kplan_chunk(a.n, a.o->desc.team_size, a.o->desc.team_rank);
    gcsh_karg_out_size(L, &a, mine.count, "this rank's chunk of n");
    run_collective(L, &a, GCSH_KC_REDUCE_SCATTER, algo, -1, NULL, gcsh_kalgo_name(algo));
    push_result(L, &a, a.offset + mine.first, mine.count);
    return 1;
}

static int kernel_allgather(lua_State *L)
{
    gcsh_kargs a = {.fname = "allgather"};
    a.o = gcsh_karg_comm_window(L, 1, a.fname, "c:allgather");
    gcsh_karg_read(L, 2, &a, "offset n out algo");
    gcsh_karg_dtype_op(L, a.fname, a.o->dtype, GCSH_OP_SUM, gcsh_kern_ops_of(a.o->dtype),
                       "the kernels");
    enum gcsh_kalgo algo = check_algo(L, &a, GCSH_KC_ALLGATHER, "direct");
    gcsh_karg_out_size(L, &a, a.n, "n elements");
    run_collective(L, &a, GCSH_KC_ALLGATHER, algo, -1, NULL, gcsh_kalgo_name(algo));
    push_result(L, &a, a.offset, a.n);
    return 1;
}

static int kernel_reduce_to(lua_State *L)
{
    gcsh_kargs a = {.fname = "reduce_to"};
    a.o = gcsh_karg_comm_window(L, 2, a.fname, "c:reduce");
    int root = gcsh_karg_root(L, 1, &a);
    gcsh_karg_read(L, 3, &a, WINDOW_KEYS " algo");
    gcsh_karg_dtype_op(L, a.fname, a.o->dtype, a.op, gcsh_kern_ops_of(a.o->dtype), "the kernels");
    enum gcsh_kalgo algo = check_algo(L, &a, GCSH_KC_REDUCE, "direct");
    gcsh_karg_out_size(L, &a, a.n, "n elements");
    run_collective(L, &a, GCSH_KC_REDUCE, algo, root, NULL, gcsh_kalgo_name(algo));
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
    int root = gcsh_karg_root(L, 1, &a);
    gcsh_karg_read(L, 3, &a, "offset n out algo");
    gcsh_karg_dtype_op(L, a.fname, a.o->dtype, GCSH_OP_SUM, gcsh_kern_ops_of(a.o->dtype),
                       "the kernels");
    enum gcsh_kalgo algo = check_algo(L, &a, GCSH_KC_BROADCAST, "direct");
    gcsh_karg_out_size(L, &a, a.n, "n elements");
    run_collective(L, &a, GCSH_KC_BROADCAST, algo, root, NULL, gcsh_kalgo_name(algo));
    push_result(L, &a, a.offset, a.n);
    return 1;
}

/* ---- kernel.plan (its table: kplan_table.c) ---------------------------------- */

/* The first algorithm of coll that has a plan: kernel.plan's default. */
static const char *first_planned(enum gcsh_kcoll coll)
{
    const char *name;
    int planned = 0;
    for (int i = 0; (name = gcsh_kcoll_algo(coll, i, &planned)) && !planned; i++)
        continue;
    return name;
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
    if (coll == GCSH_KC_ALLREDUCE && a.algo && strcmp(a.algo, "nccl_dev") == 0)
        return luaL_error(L, "plan: algo 'nccl_dev' has no plan of its own: it moves the data "
                             "as oneshot does (kernel.plan(w, {algo='oneshot'})), with NCCL's "
                             "LSA barriers (kernels/nccl_dev.cu)");
    int r = coll == GCSH_KC_ALLREDUCE ? registered_index(a.algo) : -1;
    if (r >= 0) {
        registered[r].push_plan(L, &a);
        return 1;
    }
    if (coll == GCSH_KC_ALLREDUCE && a.algo && strcmp(a.algo, "ll") == 0)
        return luaL_error(L, "plan: algo 'll' has no plan of moves and barriers: each rank "
                             "stores its region, flagged, into every member's slots, and "
                             "reduces its own slots as the flags arrive (src/core/kll.h)");
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
    a.o = gcsh_karg_window(L, 2, a.fname);
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

/* name = true for coll's algorithms the steppers walk, into the table on top. */
static void set_stepped(lua_State *L, enum gcsh_kcoll coll)
{
    const char *name;
    for (int i = 0; (name = gcsh_kcoll_algo(coll, i, NULL)); i++)
        if (gcsh_kcoll_algo_stepped(coll, i)) {
            lua_pushboolean(L, 1);
            lua_setfield(L, -2, name);
        }
}

/* gcsh.kalgos, the table of algorithms for Lua (core's one table, kplan.c):
 * {takes = {allreduce = {"auto", "oneshot", ...}, reduce_scatter = {"direct",
 * "ring"}, ...}, planned = {oneshot = true, ...}, stepped = {ll = true, ...},
 * auto = {"ll", "oneshot", "twoshot", "comm"}} (planned: the names that have
 * a plan of moves, kernel.plan's; stepped: those the steppers walk; auto:
 * what algo "auto" takes, in the order it considers them). */
int luaopen_gcsh_kalgos(lua_State *L)
{
    lua_createtable(L, 0, 4);
    lua_newtable(L);
    for (int c = 0; c < GCSH_KC_NCOLL; c++)
        set_stepped(L, (enum gcsh_kcoll)c);
    lua_setfield(L, -2, "stepped");
    lua_newtable(L);
    const char *chosen;
    for (int i = 0; (chosen = gcsh_kalgo_auto(i)); i++) {
        lua_pushstring(L, chosen);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "auto");
    lua_createtable(L, 0, GCSH_KC_NCOLL);
    lua_createtable(L, 0, GCSH_KA_NALGO);
    for (int c = 0; c < GCSH_KC_NCOLL; c++) {
        push_algos(L, (enum gcsh_kcoll)c);
        lua_setfield(L, -3, gcsh_kcoll_name((enum gcsh_kcoll)c));
        const char *name;
        int planned;
        for (int i = 0; (name = gcsh_kcoll_algo((enum gcsh_kcoll)c, i, &planned)); i++)
            if (planned) {
                lua_pushboolean(L, 1);
                lua_setfield(L, -2, name);
            }
    }
    lua_setfield(L, -3, "planned");
    lua_setfield(L, -2, "takes");
    return 1;
}

int luaopen_gcsh_kernel(lua_State *L)
{
    luaL_newlib(L, funcs);
    push_crossovers(L);
    lua_setfield(L, -2, "crossovers");
    push_algos(L, GCSH_KC_ALLREDUCE);
    lua_setfield(L, -2, "algos");
    lua_pushinteger(L, (lua_Integer)GCSH_LL_MAX_BYTES);
    lua_setfield(L, -2, "ll_max_bytes");
    return 1;
}

/* ---- w:sync_state([s]): the kernels' machinery of a window, as this rank sees it ---- */

/* bytes at byte `off` of my slice, copied to host memory (the slice may be
 * device memory) */
static void read_mine(lua_State *L, const gcsh_symobj *o, size_t off, void *to, size_t bytes)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    const char *slice = o->desc.peer[o->desc.team_rank];
    if (ctx->be->mem->copy(ctx, to, GCSH_LOC_HOST, slice + off, o->desc.loc, bytes) != 0)
        gcsh_raise(L, ctx);
}

/* t[rank] = v for every member (keys: communicator ranks, as w:peer takes) */
static void set_member(lua_State *L, const gcsh_symobj *o, int p, uint64_t v)
{
    lua_pushinteger(L, (lua_Integer)v);
    lua_rawseti(L, -2, o->desc.team[p]);
}

/* seen: the barrier number each member last stored into my sync area (row
 * 0: the host's one block, a cuda launch's first) */
static void push_seen(lua_State *L, const gcsh_symobj *o)
{
    uint64_t words[GCSH_KERN_MAX_TEAM];
    int k = o->desc.team_size < GCSH_KERN_MAX_TEAM ? o->desc.team_size : GCSH_KERN_MAX_TEAM;
    read_mine(L, o, sync_offset(L, o), words, (size_t)k * sizeof words[0]);
    lua_createtable(L, 0, k);
    for (int p = 0; p < k; p++)
        set_member(L, o, p, words[p]);
}

/* The LL area (core/kll.h): the calls done here, the set and flag of the
 * next, and the newest flag each member's slot holds (line 0 of either set:
 * the last call whose data from that member arrived). */
static void push_ll(lua_State *L, const gcsh_symobj *o)
{
    size_t ll = gcsh_kern_ll_offset(L, o), wb = gcsh_kern_window_bytes(o);
    int slots = gcsh_ll_slots(o->comm->size), k = o->desc.team_size < slots ? o->desc.team_size : slots;
    gcsh_ll_header h;
    read_mine(L, o, ll, &h, sizeof h);
    gcsh_set_integer(L, "ll_calls", (lua_Integer)h.count);
    gcsh_set_integer(L, "ll_set", (lua_Integer)(h.count & 1));
    gcsh_set_integer(L, "ll_flag", (lua_Integer)gcsh_ll_flag(h.count));
    lua_createtable(L, 0, k);
    for (int p = 0; p < k; p++) {
        uint32_t newest = 0;
        for (unsigned set = 0; set < 2; set++) {
            uint64_t word;
            read_mine(L, o, ll + gcsh_ll_slot_offset(wb, slots, set, p), &word, sizeof word);
            uint32_t flag = (uint32_t)(word >> 32);
            newest = flag > newest ? flag : newest;
        }
        set_member(L, o, p, newest);
    }
    lua_setfield(L, -2, "ll_seen");
}

/* pad: my words of signals s (u64 carriers, as s:read gives them) */
static void push_pad(lua_State *L, int idx)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_symobj *s = gcsh_sym_check_readable(L, idx, GCSH_SIGNALS_MT);
    lua_createtable(L, (int)s->n, 1);
    for (size_t i = 0; i < s->n; i++) {
        uint64_t v;
        if (ctx->be->win->signal_read(ctx, s->impl, &s->desc, i, &v) != 0)
            gcsh_raise(L, ctx);
        lua_pushinteger(L, (lua_Integer)v);
        lua_rawseti(L, -2, (lua_Integer)i);
    }
}

/* w:sync_state([s]): local (show(w, "sync") gathers every rank's), and
 * possible after an abort, until the window is freed: the evidence of a
 * hang.  Fields: epoch (barriers this rank entered on w), seen[r] (the
 * barrier number rank r last stored into my sync words), ll_calls, ll_set,
 * ll_flag, ll_seen[r] (the LL area: kll.h), pad[i] (with s: my signal
 * words). */
int gcsh_kern_sync_state(lua_State *L)
{
    gcsh_symobj *o = gcsh_sym_check_readable(L, 1, GCSH_WINDOW_MT);
    if (!gcsh_ctx_of(L)->be->kern)
        return luaL_error(L, "sync_state: the %s backend has no kernels", gcsh_ctx_of(L)->be->name);
    lua_settop(L, 2);
    lua_createtable(L, 0, 8);
    gcsh_set_integer(L, "epoch", (lua_Integer)o->kern_epoch);
    push_seen(L, o);
    lua_setfield(L, -2, "seen");
    push_ll(L, o);
    if (!lua_isnil(L, 2)) {
        push_pad(L, 2);
        lua_setfield(L, -2, "pad");
    }
    return 1;
}
