/* The "kernel" library and the "multicast" Lua type: reduce kernels over
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
 * the window).
 * Every collective moves the data as its plan says (kplan.h; kernel.plan
 * shows it): chunks are balanced, so n need not divide by the team.
 *   kernel.allreduce(w [, {algo="auto", op, offset, n, out}])
 *       -> result tensor, algorithm run.  algo: "oneshot" (each rank loads
 *       every slice and reduces), "twoshot" (rank r reduces chunk r by peer
 *       loads and stores it to every peer: the whole window holds the
 *       result, out gets a copy), "ring" (reduce-scatter and all-gather
 *       around the ring), "ll" (one-shot with the ready flags in the
 *       data, no barrier: core/kll.h; regions up to 64 KiB),
 *       "multicast" (w:multicast(): NVLS, or its
 *       emulation, which moves the data as two-shot does), "comm" (the
 *       communicator's all-reduce on the window's memory: NCCL on cuda, MPI
 *       on host), "auto" (by size and team from src/core/kreduce_tune.h).
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
 *   m = w:multicast()       collective; m.mode = "nvls" | "emulated"; m:why()
 *   m:ld_reduce(out [, op | {op=, offset=0}])   out = the op over every slice
 *   m:st(src [, offset=0])                       src into every slice
 *   m.window   m:free()
 *
 * Dtypes f32 f16 bf16 i32 u32; ops sum prod min max (nvls: kreduce.h).  Every
 * argument is checked here, naming the argument and the bound, before any
 * backend call. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "bind/comm.h"
#include "bind/graph.h"
#include "core/kll.h"
#include "core/kreduce.h"
#include "core/kreduce_tune.h"
#include "bind/symmem.h"
#include "bind/tensor.h"

#define MCAST_MT "multicast"

static const gcsh_kernel_ops *kern_of(lua_State *L)
{
    return gcsh_ctx_of(L)->be->kern;
}

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
    return o->desc.alloc_bytes - kern_of(L)->sync_bytes;
}

static size_t window_bytes(const gcsh_symobj *o)
{
    return o->n * gcsh_dtype_size(o->dtype);
}

static size_t ll_offset(lua_State *L, const gcsh_symobj *o)
{
    return sync_offset(L, o) - gcsh_ll_area_bytes(window_bytes(o), gcsh_ll_slots(o->comm->size));
}

/* ---- argument checks ----------------------------------------------------------- */

static void check_dtype_op(lua_State *L, const char *fname, gcsh_dtype dt, gcsh_redop op,
                           unsigned ops, const char *what)
{
    if (!gcsh_kern_ops_of(dt))
        luaL_error(L, "%s: dtype %s is not supported by the reduce kernels (valid: "
                      GCSH_KERN_DTYPE_NAMES ")",
                   fname, gcsh_dtype_name(dt));
    if (!(ops & GCSH_KERN_OP_BIT(op)))
        luaL_error(L, "%s: op '%s' is not supported for %s by %s (valid: %s)", fname,
                   gcsh_redop_name(op), gcsh_dtype_name(dt), what,
                   ops == GCSH_KERN_REDUCING_OPS ? GCSH_KERN_OP_NAMES
                   : ops == GCSH_KERN_OP_BIT(GCSH_OP_SUM) ? "sum"
                                                          : "sum min max");
}

/* A tensor where the backend's kernels run (device memory on cuda). */
static gcsh_tensor *check_placed(lua_State *L, int idx, const char *fname, const char *what)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_tensor *t = gcsh_arg_tensor(L, idx);
    if (t->st->loc != ctx->loc)
        luaL_error(L, "%s: %s lives in %s, but %s kernels run on %s", fname, what, t->st->where,
                   ctx->be->name, ctx->loc == GCSH_LOC_HOST ? "host memory" : "the rank's GPU");
    return t;
}

static void check_same_dtype(lua_State *L, const char *fname, const char *what,
                             const gcsh_tensor *t, gcsh_dtype dt, const char *of)
{
    if (t->dtype != dt)
        luaL_error(L, "%s: %s is %s but %s is %s (dtypes must match)", fname, what,
                   gcsh_dtype_name(t->dtype), of, gcsh_dtype_name(dt));
}

static size_t check_count(lua_State *L, const char *fname, const char *what, lua_Integer v,
                          lua_Integer lo, lua_Integer hi)
{
    if (v < lo || v > hi)
        luaL_error(L, "%s: %s must be %I..%I, got %I", fname, what, lo, hi, v);
    return (size_t)v;
}

/* Options tables: keys outside `valid` are errors that list them. */
static void check_keys(lua_State *L, int idx, const char *fname, const char *valid)
{
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        const char *key = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        size_t len = key ? strlen(key) : 0;
        int ok = 0;
        for (const char *p = valid; key && *p;) {
            size_t w = strcspn(p, " ");
            ok |= w == len && strncmp(p, key, len) == 0;
            p += w + strspn(p + w, " ");
        }
        if (!ok)
            luaL_error(L, "%s: unknown option '%s' (valid: %s)", fname,
                       luaL_tolstring(L, -1, NULL), valid);
    }
}

static lua_Integer opt_integer(lua_State *L, int idx, const char *key, const char *fname,
                               lua_Integer def)
{
    lua_getfield(L, idx, key);
    lua_Integer v = def;
    if (!lua_isnil(L, -1)) {
        int isint = 0;
        v = lua_tointegerx(L, -1, &isint);
        if (!isint)
            luaL_error(L, "%s: %s must be an integer, got %s", fname, key,
                       luaL_tolstring(L, -1, NULL));
    }
    lua_pop(L, 1);
    return v;
}

static gcsh_redop opt_op(lua_State *L, int idx, gcsh_redop def)
{
    lua_getfield(L, idx, "op");
    gcsh_redop op = gcsh_arg_redop(L, lua_gettop(L), def);
    lua_pop(L, 1);
    return op;
}

/* ---- windows ------------------------------------------------------------------ */

typedef struct wargs {
    const char *fname;
    gcsh_symobj *o;
    gcsh_redop op;
    size_t offset, n;
    gcsh_tensor *out;
    int out_idx; /* stack index of out, 0 when none */
    const char *algo;
} wargs;

static gcsh_symobj *check_kernel_window(lua_State *L, int idx, const char *fname)
{
    gcsh_symobj *o = gcsh_sym_check_open(L, idx, GCSH_WINDOW_MT);
    if (o->desc.team_size > GCSH_KERN_MAX_TEAM)
        luaL_error(L, "%s: the window's team has %d members; the kernels synchronise at most %d",
                   fname, o->desc.team_size, GCSH_KERN_MAX_TEAM);
    return o;
}

/* out must not be the window's own memory: a slice is read by peers while
 * out is written (omit out for the result in the window). */
static void check_out_apart(lua_State *L, const wargs *a)
{
    for (int i = 0; i < a->o->desc.team_size; i++)
        if (a->o->slices[i] == a->out->st)
            luaL_error(L, "%s: out is memory of the window itself (omit out to keep the result "
                          "in the window)",
                       a->fname);
}

/* Reads {offset, n} of the options table at idx: the region of the window. */
static void read_region(lua_State *L, int idx, wargs *a)
{
    const gcsh_symobj *o = a->o;
    a->offset = check_count(L, a->fname, "offset", opt_integer(L, idx, "offset", a->fname, 0), 0,
                            (lua_Integer)o->n - 1);
    lua_Integer room = (lua_Integer)(o->n - a->offset);
    lua_Integer n = opt_integer(L, idx, "n", a->fname, room);
    if (n < 1 || n > room)
        luaL_error(L, "%s: n must be 1..%I (offset %I of the window's %I elements), got %I",
                   a->fname, room, (lua_Integer)a->offset, (lua_Integer)o->n, n);
    a->n = (size_t)n;
}

/* Reads {op, offset, n, out, algo} at idx (may be none/nil) for window o. */
static void read_wargs(lua_State *L, int idx, wargs *a, const char *valid)
{
    const gcsh_symobj *o = a->o;
    a->op = GCSH_OP_SUM;
    a->offset = 0;
    a->n = o->n;
    a->out = NULL;
    a->out_idx = 0;
    a->algo = NULL;
    if (lua_isnoneornil(L, idx))
        return;
    if (!lua_istable(L, idx))
        luaL_error(L, "%s: options must be a table (valid keys: %s), got %s", a->fname, valid,
                   luaL_typename(L, idx));
    check_keys(L, idx, a->fname, valid);
    a->op = opt_op(L, idx, GCSH_OP_SUM);
    read_region(L, idx, a);
    if (lua_getfield(L, idx, "out") != LUA_TNIL) {
        a->out_idx = lua_gettop(L);
        a->out = check_placed(L, a->out_idx, a->fname, "out");
    } else {
        lua_pop(L, 1);
    }
    if (lua_getfield(L, idx, "algo") != LUA_TNIL)
        a->algo = luaL_checkstring(L, -1);
    lua_pop(L, 1);
}

static void check_out_size(lua_State *L, const wargs *a, size_t needs, const char *why)
{
    if (!a->out)
        return;
    check_same_dtype(L, a->fname, "out", a->out, a->o->dtype, "the window");
    if (a->out->n < needs)
        luaL_error(L, "%s: out has %I elements, needs %I (%s)", a->fname, (lua_Integer)a->out->n,
                   (lua_Integer)needs, why);
    check_out_apart(L, a);
}

/* A root given as a rank of the window's comm; returns its team index. */
static int check_root(lua_State *L, int idx, const wargs *a)
{
    int isint = 0;
    lua_Integer r = lua_tointegerx(L, idx, &isint);
    if (!isint)
        luaL_error(L, "%s: root must be an integer rank, got %s", a->fname,
                   luaL_tolstring(L, idx, NULL));
    int i = r >= 0 && r < a->o->comm->size ? gcsh_sym_team_index(a->o, (int)r) : -1;
    if (i < 0) {
        char team[256];
        luaL_error(L, "%s: root %I is not in the window's team (valid: %s)", a->fname, r,
                   gcsh_sym_team_text(a->o, team, sizeof team));
    }
    return i;
}

/* The kernel collectives are checked operations (collcheck.h): every member of
 * the window's communicator must call the same one, with the same algorithm,
 * over the same region, or nothing is launched.  Unchecked, a mismatch would
 * pair the barriers of different launches and leave the window's sync words
 * out of step, or leave one rank waiting for the bound on a GPU barrier.
 * Returns the communicator's check state for gcsh_check_leave. */
static gcsh_comm_check *enter_checked(lua_State *L, const wargs *a, const char *algo, int root,
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

/* A kernel collective: the plan of (coll, algo) over a's region, checked
 * under the name `shown`; root is a team index or -1. */
static void run_collective(lua_State *L, const wargs *a, enum gcsh_kcoll coll,
                           enum gcsh_kalgo algo, int root, const gcsh_mcast *mc, const char *shown)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_kcoll_args k = {
        .plan = {coll, algo, a->o->desc.team_size, root < 0 ? 0 : root, a->n},
        .offset = a->offset, .dt = a->o->dtype, .op = a->op,
        .out = a->out ? gcsh_tensor_data(a->out) : NULL, .sync_off = sync_offset(L, a->o),
        .epoch = &a->o->kern_epoch, .mc = mc,
    };
    int reduces = coll != GCSH_KC_ALLGATHER && coll != GCSH_KC_BROADCAST;
    gcsh_comm_check *cc = enter_checked(L, a, shown, root, reduces);
    gcsh_check_leave(L, cc, kern_of(L)->collective(ctx, a->o->impl, &a->o->desc, &k));
}

/* The algorithm a's options name for coll (def when none), or an error
 * listing the valid ones. */
static enum gcsh_kalgo check_algo(lua_State *L, const wargs *a, enum gcsh_kcoll coll,
                                  const char *def)
{
    const char *name = a->algo ? a->algo : def;
    int algo = gcsh_kalgo_parse(name);
    if (algo < 0 || !gcsh_kplan_valid(coll, (enum gcsh_kalgo)algo))
        luaL_error(L, "%s: unknown algo '%s' (valid: %s)", a->fname, name,
                   gcsh_kplan_algos(coll));
    return (enum gcsh_kalgo)algo;
}

/* Pushes what a collective returns: out, or the view of my slice's region
 * (first..first+n). */
static void push_result(lua_State *L, const wargs *a, size_t first, size_t n)
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

static const char *choose_algo(const char *backend, int team, size_t bytes)
{
    const gcsh_kern_crossover *r = crossover_row(backend, team);
    if (!r || team == 1)
        return "oneshot"; /* one rank: a local copy, whatever runs */
    if (bytes <= r->oneshot_max)
        return "oneshot";
    return bytes <= r->twoshot_max ? "twoshot" : "comm";
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
        lua_createtable(L, 0, 4);
        lua_pushstring(L, r->backend);
        lua_setfield(L, -2, "backend");
        lua_pushinteger(L, r->team_size);
        lua_setfield(L, -2, "team_size");
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

/* ---- multicast ------------------------------------------------------------------ */

typedef struct lmcast {
    gcsh_symobj *o; /* the window (kept alive by uservalue 1); NULL when freed */
    gcsh_mcast mc;
} lmcast;

/* The window's multicast decision (the backend caches it per window, so a
 * second call is cheap and still the same on every rank).  Collective the
 * first time (the ranks agree on the mode), so checked every time. */
static void open_mcast(lua_State *L, gcsh_symobj *o, gcsh_mcast *mc)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_comm_check *cc = &o->comm->chk;
    if (ctx->graph && o->mc_decided) { /* capturing: the decision every rank made */
        *mc = o->mc;
        return;
    }
    gcsh_graph_refuse_now(L, "w:multicast() (the first multicast use of a window)",
                          "it decides the mode with every rank: call it before the capture");
    gcsh_fingerprint fp;
    gcsh_fp_init(&fp, cc, "multicast");
    fp.window = o->seq;
    gcsh_check_enter(L, cc, &fp);
    gcsh_check_leave(L, cc, kern_of(L)->mc_open(ctx, o->impl, &o->desc, mc));
    o->mc = *mc;
    o->mc_decided = 1;
}

/* multimem has no 16-bit forms and needs natural alignment (kernels/mcast.cu):
 * in mode nvls, offsets, lengths and the local buffer go in 4-byte units. */
static void check_nvls_alignment(lua_State *L, const char *fname, const gcsh_symobj *o,
                                 size_t offset, size_t n, const gcsh_tensor *local)
{
    size_t es = gcsh_dtype_size(o->dtype);
    if ((offset * es) % 4 || (n * es) % 4)
        luaL_error(L, "%s: mode nvls needs 4-byte units: offset %I and n %I of %s must be even "
                      "(multimem has no 16-bit forms)",
                   fname, (lua_Integer)offset, (lua_Integer)n, gcsh_dtype_name(o->dtype));
    if (local && (uintptr_t)gcsh_tensor_data(local) % 4)
        luaL_error(L, "%s: mode nvls needs a 4-byte aligned local tensor (this view starts at "
                      "an odd %s element)",
                   fname, gcsh_dtype_name(o->dtype));
}

/* ---- kernel.allreduce ---------------------------------------------------------- */

#define WINDOW_KEYS "op offset n out"

/* Whether algo "comm" can run on a's window: its team is the whole
 * communicator, which can reduce the dtype with the op.  auto falls back to
 * two-shot where it cannot. */
static int comm_can_run(lua_State *L, const wargs *a)
{
    const gcsh_symobj *o = a->o;
    return o->desc.team_size == o->comm->size &&
           gcsh_ctx_of(L)->be->comm->can_reduce(o->dtype, a->op);
}

static void comm_allreduce(lua_State *L, const wargs *a)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_symobj *o = a->o;
    if (o->desc.team_size != o->comm->size)
        luaL_error(L, "%s: algo 'comm' needs the window's team to be its whole communicator "
                      "(team of %d, comm of %d)",
                   a->fname, o->desc.team_size, o->comm->size);
    if (!ctx->be->comm->can_reduce(o->dtype, a->op))
        luaL_error(L, "%s: the communicator cannot reduce %s with %s", a->fname,
                   gcsh_dtype_name(o->dtype), gcsh_redop_name(a->op));
    void *mine = (char *)o->desc.peer[o->desc.team_rank] + a->offset * gcsh_dtype_size(o->dtype);
    void *dst = a->out ? gcsh_tensor_data(a->out) : mine;
    gcsh_comm_check *cc = enter_checked(L, a, "comm", -1, 1);
    gcsh_check_leave(L, cc, ctx->be->comm->allreduce(ctx, o->comm_impl, mine, dst, a->n,
                                                     o->dtype, a->op));
}

/* The all-reduce algorithms, one row each: what kernel.allreduce accepts
 * (with "auto", which picks one by size: choose_algo), in the order
 * kernel.algos lists them.  run returns the name the call reports. */
typedef struct allreduce_algo {
    const char *name;
    const char *(*run)(lua_State *L, const wargs *a);
} allreduce_algo;

/* oneshot, twoshot, ring: the plan of that name */
static const char *allreduce_planned(lua_State *L, const wargs *a)
{
    enum gcsh_kalgo algo = check_algo(L, a, GCSH_KC_ALLREDUCE, "oneshot");
    run_collective(L, a, GCSH_KC_ALLREDUCE, algo, -1, NULL, a->algo);
    return a->algo;
}

/* w:multicast()'s mode: multimem (nvls), or its emulation by peer loads and
 * stores, which moves the data as two-shot does (kplan.h) */
static const char *allreduce_multicast(lua_State *L, const wargs *a)
{
    gcsh_mcast mc;
    open_mcast(L, a->o, &mc);
    if (mc.nvls) {
        check_dtype_op(L, a->fname, a->o->dtype, a->op, gcsh_kern_nvls_ops_of(a->o->dtype),
                       "multimem (mode nvls)");
        check_nvls_alignment(L, a->fname, a->o, a->offset, a->n, a->out);
    }
    run_collective(L, a, GCSH_KC_ALLREDUCE, GCSH_KA_MULTICAST, -1, mc.nvls ? &a->o->mc : NULL,
                   "multicast");
    return mc.nvls ? "multicast(nvls)" : "multicast(emulated)";
}

static const char *allreduce_comm(lua_State *L, const wargs *a)
{
    comm_allreduce(L, a);
    return "comm";
}

/* one-shot with the ready flags in the data (core/kll.h): no barrier */
static const char *allreduce_ll(lua_State *L, const wargs *a)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_symobj *o = a->o;
    size_t es = gcsh_dtype_size(o->dtype);
    if (a->n * es > GCSH_LL_MAX_BYTES)
        luaL_error(L, "%s: algo 'll' takes at most %I bytes (n must be 1..%I for %s), got n = %I "
                      "(%I bytes); oneshot and twoshot take any n",
                   a->fname, (lua_Integer)GCSH_LL_MAX_BYTES, (lua_Integer)(GCSH_LL_MAX_BYTES / es),
                   gcsh_dtype_name(o->dtype), (lua_Integer)a->n, (lua_Integer)(a->n * es));
    if (!kern_of(L)->ll_allreduce)
        luaL_error(L, "%s: algo 'll' is not available on the %s backend", a->fname,
                   ctx->be->name);
    gcsh_kll_args k = {
        .offset = a->offset, .n = a->n, .dt = o->dtype, .op = a->op,
        .out = a->out ? gcsh_tensor_data(a->out) : NULL, .ll_off = ll_offset(L, o),
        .window_bytes = window_bytes(o), .slots = gcsh_ll_slots(o->comm->size),
    };
    gcsh_comm_check *cc = enter_checked(L, a, "ll", -1, 1);
    gcsh_check_leave(L, cc, kern_of(L)->ll_allreduce(ctx, o->impl, &o->desc, &k));
    return "ll";
}

static const allreduce_algo allreduce_algos[] = {
    {"oneshot", allreduce_planned},     {"twoshot", allreduce_planned},
    {"ring", allreduce_planned},        {"ll", allreduce_ll},
    {"multicast", allreduce_multicast}, {"comm", allreduce_comm},
    {NULL, NULL},
};

#define ALLREDUCE_ALGO_NAMES "auto oneshot twoshot ring ll multicast comm"

static int kernel_allreduce(lua_State *L)
{
    wargs a = {.fname = "allreduce"};
    a.o = check_kernel_window(L, 1, a.fname);
    read_wargs(L, 2, &a, WINDOW_KEYS " algo");
    check_dtype_op(L, a.fname, a.o->dtype, a.op, gcsh_kern_ops_of(a.o->dtype), "the kernels");
    check_out_size(L, &a, a.n, "n elements");
    if (!a.algo || strcmp(a.algo, "auto") == 0) {
        a.algo = choose_algo(gcsh_ctx_of(L)->be->name, a.o->desc.team_size,
                             a.n * gcsh_dtype_size(a.o->dtype));
        if (strcmp(a.algo, "comm") == 0 && !comm_can_run(L, &a))
            a.algo = "twoshot";
    }
    for (const allreduce_algo *r = allreduce_algos; r->name; r++)
        if (strcmp(r->name, a.algo) == 0) {
            const char *ran = r->run(L, &a);
            push_result(L, &a, a.offset, a.n);
            lua_pushstring(L, ran);
            return 2;
        }
    return luaL_error(L, "%s: unknown algo '%s' (valid: " ALLREDUCE_ALGO_NAMES ")", a.fname,
                      a.algo);
}

/* kernel.algos: every name kernel.allreduce accepts. */
static void push_algos(lua_State *L)
{
    lua_newtable(L);
    lua_pushliteral(L, "auto");
    lua_rawseti(L, -2, 1);
    for (int i = 0; allreduce_algos[i].name; i++) {
        lua_pushstring(L, allreduce_algos[i].name);
        lua_rawseti(L, -2, i + 2);
    }
}

static int kernel_reduce_scatter(lua_State *L)
{
    wargs a = {.fname = "reduce_scatter"};
    a.o = check_kernel_window(L, 1, a.fname);
    read_wargs(L, 2, &a, WINDOW_KEYS " algo");
    check_dtype_op(L, a.fname, a.o->dtype, a.op, gcsh_kern_ops_of(a.o->dtype), "the kernels");
    enum gcsh_kalgo algo = check_algo(L, &a, GCSH_KC_REDUCE_SCATTER, "direct");
    gcsh_kchunk mine = gcsh_kplan_chunk(a.n, a.o->desc.team_size, a.o->desc.team_rank);
    check_out_size(L, &a, mine.count, "this rank's chunk of n");
    run_collective(L, &a, GCSH_KC_REDUCE_SCATTER, algo, -1, NULL, gcsh_kalgo_name(algo));
    push_result(L, &a, a.offset + mine.first, mine.count);
    return 1;
}

static int kernel_allgather(lua_State *L)
{
    wargs a = {.fname = "allgather"};
    a.o = check_kernel_window(L, 1, a.fname);
    read_wargs(L, 2, &a, "offset n out algo");
    check_dtype_op(L, a.fname, a.o->dtype, GCSH_OP_SUM, gcsh_kern_ops_of(a.o->dtype),
                   "the kernels");
    enum gcsh_kalgo algo = check_algo(L, &a, GCSH_KC_ALLGATHER, "direct");
    check_out_size(L, &a, a.n, "n elements");
    run_collective(L, &a, GCSH_KC_ALLGATHER, algo, -1, NULL, gcsh_kalgo_name(algo));
    push_result(L, &a, a.offset, a.n);
    return 1;
}

static int kernel_reduce_to(lua_State *L)
{
    wargs a = {.fname = "reduce_to"};
    a.o = check_kernel_window(L, 2, a.fname);
    int root = check_root(L, 1, &a);
    read_wargs(L, 3, &a, WINDOW_KEYS " algo");
    check_dtype_op(L, a.fname, a.o->dtype, a.op, gcsh_kern_ops_of(a.o->dtype), "the kernels");
    enum gcsh_kalgo algo = check_algo(L, &a, GCSH_KC_REDUCE, "direct");
    check_out_size(L, &a, a.n, "n elements");
    run_collective(L, &a, GCSH_KC_REDUCE, algo, root, NULL, gcsh_kalgo_name(algo));
    if (a.o->desc.team_rank == root)
        push_result(L, &a, a.offset, a.n);
    else
        lua_pushnil(L);
    return 1;
}

static int kernel_broadcast(lua_State *L)
{
    wargs a = {.fname = "broadcast"};
    a.o = check_kernel_window(L, 2, a.fname);
    int root = check_root(L, 1, &a);
    read_wargs(L, 3, &a, "offset n out algo");
    check_dtype_op(L, a.fname, a.o->dtype, GCSH_OP_SUM, gcsh_kern_ops_of(a.o->dtype),
                   "the kernels");
    enum gcsh_kalgo algo = check_algo(L, &a, GCSH_KC_BROADCAST, "direct");
    check_out_size(L, &a, a.n, "n elements");
    run_collective(L, &a, GCSH_KC_BROADCAST, algo, root, NULL, gcsh_kalgo_name(algo));
    push_result(L, &a, a.offset, a.n);
    return 1;
}

/* ---- kernel.plan: the plan as a Lua table ------------------------------------ */

/* {peer=, first=}: a team index and an absolute slice index, or "out" /
 * "tmp" and an index there. */
static void push_place(lua_State *L, const gcsh_kplace *pl, size_t offset)
{
    lua_createtable(L, 0, 2);
    if (pl->peer >= 0)
        lua_pushinteger(L, pl->peer);
    else
        lua_pushstring(L, pl->peer == GCSH_KPLAN_OUT ? "out" : "tmp");
    lua_setfield(L, -2, "peer");
    lua_pushinteger(L, (lua_Integer)(pl->first + (pl->peer >= 0 ? offset : 0)));
    lua_setfield(L, -2, "first");
}

static void push_places(lua_State *L, const gcsh_kplace *pl, int count, size_t offset,
                        const char *field)
{
    lua_createtable(L, count, 0);
    for (int i = 0; i < count; i++) {
        push_place(L, &pl[i], offset);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, field);
}

static void push_move(lua_State *L, int rank, const gcsh_kmove *mv, size_t offset)
{
    lua_createtable(L, 0, 5);
    lua_pushinteger(L, rank);
    lua_setfield(L, -2, "rank");
    lua_pushstring(L, mv->k > 1 ? "reduce" : "copy");
    lua_setfield(L, -2, "op");
    lua_pushinteger(L, (lua_Integer)mv->count);
    lua_setfield(L, -2, "count");
    push_places(L, mv->src, mv->k, offset, "src");
    push_places(L, mv->dst, mv->m, offset, "dst");
}

/* One step as a table (a move step where nobody has work, such as the
 * copy into out when out is false, keeps its place with no moves: every
 * member has the same steps). */
static void push_step(lua_State *L, const gcsh_kplan *p, const gcsh_kstep *st, int has_out,
                      size_t offset)
{
    if (st->kind == GCSH_KS_BARRIER) {
        lua_createtable(L, 0, 1);
        lua_pushliteral(L, "barrier");
        lua_setfield(L, -2, "kind");
        return;
    }
    lua_createtable(L, 0, 4);
    lua_pushliteral(L, "move");
    lua_setfield(L, -2, "kind");
    lua_pushstring(L, gcsh_kphase_name(st->phase));
    lua_setfield(L, -2, "phase");
    lua_pushinteger(L, st->index);
    lua_setfield(L, -2, "index");
    lua_newtable(L);
    int moves = 0;
    for (int r = 0; r < p->team; r++) {
        gcsh_kmove mv;
        if (gcsh_kplan_move(p, st, r, has_out, &mv)) {
            push_move(L, r, &mv, offset);
            lua_rawseti(L, -2, ++moves);
        }
    }
    lua_setfield(L, -2, "moves");
}

static void push_plan(lua_State *L, const gcsh_symobj *o, const gcsh_kplan *p, size_t offset,
                      int has_out)
{
    lua_createtable(L, 0, 10);
    gcsh_set_string(L, "coll", gcsh_kcoll_name(p->coll));
    gcsh_set_string(L, "algo", gcsh_kalgo_name(p->algo));
    gcsh_set_string(L, "dtype", gcsh_dtype_name(o->dtype));
    gcsh_set_integer(L, "n", (lua_Integer)p->n);
    gcsh_set_integer(L, "offset", (lua_Integer)offset);
    gcsh_set_integer(L, "team_size", p->team);
    gcsh_set_integer(L, "root", p->root);
    lua_createtable(L, p->team, 0);
    for (int r = 0; r < p->team; r++) {
        lua_pushinteger(L, o->desc.team[r]);
        lua_rawseti(L, -2, r + 1);
    }
    lua_setfield(L, -2, "team");
    lua_createtable(L, p->team, 0);
    for (int r = 0; r < p->team; r++) {
        gcsh_kchunk ch = gcsh_kplan_chunk(p->n, p->team, r);
        lua_createtable(L, 0, 2);
        gcsh_set_integer(L, "first", (lua_Integer)(offset + ch.first));
        gcsh_set_integer(L, "count", (lua_Integer)ch.count);
        lua_rawseti(L, -2, r + 1);
    }
    lua_setfield(L, -2, "chunks");
    gcsh_kstep steps[GCSH_KPLAN_MAX_STEPS];
    int ns = gcsh_kplan_steps(p, steps);
    lua_createtable(L, ns, 0);
    for (int i = 0; i < ns; i++) {
        push_step(L, p, &steps[i], has_out, offset);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "steps");
}

/* kernel.plan(w [, {coll="allreduce", algo=, n=, offset=, root=0, out=false}]):
 * what every member does at every step (kplan.h), for the window's team.
 * Local: nothing runs, nothing is checked across ranks. */
static int kernel_plan(lua_State *L)
{
    wargs a = {.fname = "plan"};
    a.o = check_kernel_window(L, 1, a.fname);
    a.n = a.o->n;
    const char *coll_name = "allreduce";
    int has_out = 0, root = 0;
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        check_keys(L, 2, a.fname, "coll algo n offset root out");
        read_region(L, 2, &a);
        if (lua_getfield(L, 2, "coll") != LUA_TNIL)
            coll_name = luaL_checkstring(L, -1);
        if (lua_getfield(L, 2, "algo") != LUA_TNIL)
            a.algo = luaL_checkstring(L, -1);
        has_out = lua_getfield(L, 2, "out") != LUA_TNIL && lua_toboolean(L, -1);
        if (lua_getfield(L, 2, "root") != LUA_TNIL)
            root = check_root(L, lua_gettop(L), &a);
        lua_pop(L, 4);
    }
    int coll = gcsh_kcoll_parse(coll_name);
    if (coll < 0)
        return luaL_error(L, "plan: unknown coll '%s' (valid: allreduce reduce_scatter "
                             "allgather broadcast reduce)",
                          coll_name);
    if (coll == GCSH_KC_ALLREDUCE && a.algo && strcmp(a.algo, "ll") == 0)
        return luaL_error(L, "plan: algo 'll' has no plan of moves and barriers: each rank "
                             "stores its region, flagged, into every member's slots, and "
                             "reduces its own slots as the flags arrive (src/core/kll.h)");
    const char *def = gcsh_kplan_algos((enum gcsh_kcoll)coll);
    char first[16];
    snprintf(first, sizeof first, "%.*s", (int)strcspn(def, " "), def);
    enum gcsh_kalgo algo = check_algo(L, &a, (enum gcsh_kcoll)coll, first);
    gcsh_kplan p = {(enum gcsh_kcoll)coll, algo, a.o->desc.team_size, root, a.n};
    push_plan(L, a.o, &p, a.offset, has_out);
    return 1;
}

/* ---- local jobs: kernel.reduce, kernel.reduce_peers, emulated multicast -------- */

/* kernel.empty(): one empty kernel on the rank's stream, through the same
 * layers as every kernel call (the flight recorder's, a capture's): the
 * launch floor a kernel collective is measured against (bench.allreduce's
 * algo "empty"). */
static int kernel_empty(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (kern_of(L)->empty(ctx) != 0)
        return gcsh_raise(L, ctx);
    return 0;
}

static void run_job(lua_State *L, const gcsh_kjob *j)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (kern_of(L)->reduce(ctx, j) != 0)
        gcsh_raise(L, ctx);
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
    gcsh_tensor *out = check_placed(L, 1, "reduce", "out");
    luaL_checktype(L, 2, LUA_TTABLE);
    gcsh_redop op = gcsh_arg_redop(L, 3, GCSH_OP_SUM);
    check_dtype_op(L, "reduce", out->dtype, op, gcsh_kern_ops_of(out->dtype), "the kernels");
    lua_Integer k = luaL_len(L, 2);
    if (k < 1 || k > GCSH_KERN_MAX_SRC)
        luaL_error(L, "reduce: takes 1..%d input tensors, got %I", GCSH_KERN_MAX_SRC, k);
    gcsh_kjob j = {.k = (int)k, .m = 1, .n = out->n, .dt = out->dtype, .op = op};
    j.dst[0] = gcsh_tensor_data(out);
    for (int i = 1; i <= k; i++) {
        lua_geti(L, 2, i);
        char what[24];
        snprintf(what, sizeof what, "input #%d", i);
        gcsh_tensor *t = check_placed(L, lua_gettop(L), "reduce", what);
        check_same_dtype(L, "reduce", what, t, out->dtype, "out");
        if (t->n < out->n)
            luaL_error(L, "reduce: input #%d has %I elements, needs %I (#out)", i,
                       (lua_Integer)t->n, (lua_Integer)out->n);
        check_input_vs_out(L, t, out, i);
        j.src[i - 1] = gcsh_tensor_data(t);
        lua_pop(L, 1);
    }
    run_job(L, &j);
    lua_settop(L, 1);
    return 1;
}

/* The job over every member's [offset, offset + n) into out. */
static void peer_reduce(lua_State *L, const gcsh_symobj *o, size_t offset, size_t n,
                        gcsh_tensor *out, gcsh_redop op)
{
    gcsh_kjob j = {.k = o->desc.team_size, .m = 1, .n = n, .dt = o->dtype, .op = op};
    size_t es = gcsh_dtype_size(o->dtype);
    for (int p = 0; p < j.k; p++)
        j.src[p] = (char *)o->desc.peer[p] + offset * es;
    j.dst[0] = gcsh_tensor_data(out);
    run_job(L, &j);
}

/* (out, w-or-m, op-or-options at idx) for reduce_peers and m:ld_reduce. */
static void read_peer_reduce(lua_State *L, wargs *a, int idx)
{
    a->op = GCSH_OP_SUM;
    a->offset = 0;
    if (lua_type(L, idx) == LUA_TSTRING) {
        a->op = gcsh_arg_redop(L, idx, GCSH_OP_SUM);
    } else if (!lua_isnoneornil(L, idx)) {
        wargs opts = *a;
        read_wargs(L, idx, &opts, "op offset n");
        a->op = opts.op;
        a->offset = opts.offset;
        lua_getfield(L, idx, "n");
        a->n = lua_isnil(L, -1) ? a->out->n : opts.n;
        lua_pop(L, 1);
        if (a->offset + a->n > a->o->n)
            luaL_error(L, "%s: offset %I + n %I runs past the window's %I elements", a->fname,
                       (lua_Integer)a->offset, (lua_Integer)a->n, (lua_Integer)a->o->n);
        check_out_size(L, a, a->n, "n elements");
        return;
    }
    a->n = a->out->n;
    check_same_dtype(L, a->fname, "out", a->out, a->o->dtype, "the window");
    if (a->n > a->o->n)
        luaL_error(L, "%s: out has %I elements, more than the window's %I", a->fname,
                   (lua_Integer)a->n, (lua_Integer)a->o->n);
    check_out_apart(L, a);
}

static int kernel_reduce_peers(lua_State *L)
{
    wargs a = {.fname = "reduce_peers"};
    a.out = check_placed(L, 1, a.fname, "out");
    a.out_idx = 1;
    a.o = check_kernel_window(L, 2, a.fname);
    read_peer_reduce(L, &a, 3);
    check_dtype_op(L, a.fname, a.o->dtype, a.op, gcsh_kern_ops_of(a.o->dtype), "the kernels");
    peer_reduce(L, a.o, a.offset, a.n, a.out, a.op);
    lua_settop(L, 1);
    return 1;
}

/* ---- the multicast type -------------------------------------------------------- */

static lmcast *check_mcast(lua_State *L, int idx)
{
    lmcast *m = luaL_checkudata(L, idx, MCAST_MT);
    if (!m->o || !m->o->impl)
        luaL_error(L, "attempt to use a freed %s", m->o ? "window" : "multicast");
    gcsh_graph_keep(L, idx, m->o, NULL); /* while capturing (graph.h) */
    return m;
}

int gcsh_window_multicast(lua_State *L)
{
    gcsh_symobj *o = check_kernel_window(L, 1, "multicast");
    lmcast *m = lua_newuserdatauv(L, sizeof *m, 1);
    memset(m, 0, sizeof *m);
    luaL_setmetatable(L, MCAST_MT);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1); /* the window lives as long as m */
    open_mcast(L, o, &m->mc);
    m->o = o;
    return 1;
}

static int mcast_ld_reduce(lua_State *L)
{
    lmcast *m = check_mcast(L, 1);
    wargs a = {.fname = "ld_reduce", .o = m->o};
    a.out = check_placed(L, 2, a.fname, "out");
    a.out_idx = 2;
    read_peer_reduce(L, &a, 3);
    unsigned ops = m->mc.nvls ? gcsh_kern_nvls_ops_of(a.o->dtype) : gcsh_kern_ops_of(a.o->dtype);
    check_dtype_op(L, a.fname, a.o->dtype, a.op, ops,
                   m->mc.nvls ? "multimem (mode nvls)" : "the kernels");
    if (!m->mc.nvls) {
        peer_reduce(L, a.o, a.offset, a.n, a.out, a.op);
    } else {
        gcsh_ctx *ctx = gcsh_ctx_of(L);
        size_t es = gcsh_dtype_size(a.o->dtype);
        check_nvls_alignment(L, a.fname, a.o, a.offset, a.n, a.out);
        if (kern_of(L)->mc_ld_reduce(ctx, &m->mc, a.offset * es, gcsh_tensor_data(a.out), a.n,
                                     a.o->dtype, a.op) != 0)
            gcsh_raise(L, ctx);
    }
    lua_settop(L, 2);
    return 1;
}

static int mcast_st(lua_State *L)
{
    lmcast *m = check_mcast(L, 1);
    gcsh_symobj *o = m->o;
    gcsh_tensor *src = check_placed(L, 2, "st", "src");
    check_same_dtype(L, "st", "src", src, o->dtype, "the window");
    check_dtype_op(L, "st", o->dtype, GCSH_OP_SUM, gcsh_kern_ops_of(o->dtype), "the kernels");
    lua_Integer off = luaL_optinteger(L, 3, 0);
    if (off < 0 || (size_t)off >= o->n || src->n > o->n - (size_t)off)
        luaL_error(L, "st: offset %I + #src %I runs past the window's %I elements", off,
                   (lua_Integer)src->n, (lua_Integer)o->n);
    for (int i = 0; i < o->desc.team_size; i++)
        if (o->slices[i] == src->st)
            luaL_error(L, "st: src is memory of the window itself");
    size_t es = gcsh_dtype_size(o->dtype);
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (m->mc.nvls) {
        check_nvls_alignment(L, "st", o, (size_t)off, src->n, src);
        if (kern_of(L)->mc_st(ctx, &m->mc, (size_t)off * es, gcsh_tensor_data(src), src->n,
                              o->dtype) != 0)
            gcsh_raise(L, ctx);
        return 0;
    }
    gcsh_kjob j = {.k = 1, .m = o->desc.team_size, .n = src->n, .dt = o->dtype, .op = GCSH_OP_SUM};
    j.src[0] = gcsh_tensor_data(src);
    for (int p = 0; p < j.m; p++)
        j.dst[p] = (char *)o->desc.peer[p] + (size_t)off * es;
    run_job(L, &j);
    return 0;
}

static int mcast_why(lua_State *L)
{
    lmcast *m = luaL_checkudata(L, 1, MCAST_MT);
    lua_pushstring(L, m->mc.why);
    return 1;
}

static int mcast_free(lua_State *L)
{
    lmcast *m = luaL_checkudata(L, 1, MCAST_MT);
    m->o = NULL; /* the multicast setup belongs to the window and goes with it */
    lua_pushnil(L);
    lua_setiuservalue(L, 1, 1);
    return 0;
}

static int mcast_tostring(lua_State *L)
{
    lmcast *m = luaL_checkudata(L, 1, MCAST_MT);
    if (!m->o || !m->o->impl)
        lua_pushliteral(L, "multicast (freed)");
    else
        lua_pushfstring(L, "multicast(%s, window #%I: %s)", m->mc.nvls ? "nvls" : "emulated",
                        (lua_Integer)m->o->seq, m->mc.why);
    return 1;
}

static int mcast_index(lua_State *L)
{
    lmcast *m = luaL_checkudata(L, 1, MCAST_MT);
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL)
        return 1;
    const char *key = lua_tostring(L, 2);
    if (key && strcmp(key, "mode") == 0) {
        check_mcast(L, 1);
        lua_pushstring(L, m->mc.nvls ? "nvls" : "emulated");
    } else if (key && strcmp(key, "window") == 0) {
        lua_getiuservalue(L, 1, 1);
    } else {
        lua_pushnil(L);
    }
    return 1;
}

static const luaL_Reg mcast_meth[] = {
    {"ld_reduce", mcast_ld_reduce},
    {"st", mcast_st},
    {"why", mcast_why},
    {"free", mcast_free},
    {NULL, NULL},
};

static const luaL_Reg mcast_metameth[] = {
    {"__index", NULL}, /* placeholder: gcsh_new_type sets it */
    {"__close", mcast_free},
    {"__tostring", mcast_tostring},
    {NULL, NULL},
};

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
    gcsh_new_type(L, MCAST_MT, mcast_meth, mcast_metameth, mcast_index);
    luaL_newlib(L, funcs);
    push_crossovers(L);
    lua_setfield(L, -2, "crossovers");
    push_algos(L);
    lua_setfield(L, -2, "algos");
    lua_pushinteger(L, (lua_Integer)GCSH_LL_MAX_BYTES);
    lua_setfield(L, -2, "ll_max_bytes");
    return 1;
}
