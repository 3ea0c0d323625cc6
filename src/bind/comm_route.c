/* Routed collectives (comm.h): c:allreduce, c:reducescatter, c:allgather
 * and c:broadcast run on the kernel collectives, through a staging window
 * of the communicator, where the communicator's library is the slow way.
 *
 * Why: ranks that share a GPU (--share-gpu) are different NCCL hosts, so
 * NCCL moves their data over sockets (42.7 us for 8 bytes at 4 ranks on an
 * H100, 295 us for 64 KiB) while the kernels beside it take 6-9 us.
 *
 * Which calls (route_of, the same on every rank: it reads only what every
 * member shares):
 *   - the path asked: the call's {algo=} ("kernel", "comm"/"nccl", "auto"),
 *     else GCSH_COMM_ROUTE (auto, kernel, comm), auto by default;
 *   - auto takes the kernels when the job shares GPUs (ctx->share; the
 *     host backend's --share-gpu too, so CI runs this path), kernel
 *     whenever they can run; both fall back to the communicator's library,
 *     saying why (c:choose, the trace's label), for what the kernels
 *     cannot do: a communicator over several nodes, a dtype or op they
 *     lack, a message past the staging bound, a staging window that would
 *     have to grow during a capture or under a live graph.
 *   - the algorithm: the all-reduce's auto table (kernel.choose: ll,
 *     one-shot, two-shot; where it says "comm", two-shot when GPUs are
 *     shared or the kernels were asked for, the library otherwise); the
 *     others "direct".
 *
 * How (run_kernel, stream-ordered on cuda, so the order of calls holds):
 *   ll       no copy: each rank's input is read where it is (kll args' in)
 *            and the result stored straight into out;
 *   oneshot  input copied into my slice of the staging window, result into out;
 *   twoshot  input copied in, reduced in the window, copied out;
 *   reducescatter / allgather / broadcast: the input (allgather: into my
 *            chunk) copied in, the direct plan's result into out.
 * The staging window is untyped bytes (made as u32): each call views it as
 * its dtype for the call (a private window, never seen by Lua, so no view
 * of it has a dtype to keep).  Collectives that only move data take any
 * dtype as 32-bit words when their bytes allow.
 *
 * The staging window is made at the first routed call that needs it and
 * grown (power of two, 64 KiB at least, STAGE_MAX_BYTES at most) when a
 * call needs more: made and freed as c:window() and w:free() do
 * (collective and checked; every rank decides the same), before the call's
 * own check; those checks are named after the call ("allreduce/oneshot (its
 * staging window)"), so a rank whose call took another route or size is
 * told which calls met.  It is freed with the communicator (c:free, l_comm.c asks
 * held() and release()), or at the end of the session with every window. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "bind/comm.h"
#include "bind/comm_route.h"
#include "bind/graph.h"
#include "bind/kernel.h"
#include "bind/opts.h"
#include "bind/users.h"
#include "core/kll.h"
#include "wire/faults.h"

#define STAGE_KEY "gcsh.comm.staging" /* registry: {[lcomm *] = the window's handle} */
#define POLICY_KEY "gcsh.comm.policy" /* registry: the route_policy userdata */
#define STAGE_MIN_BYTES GCSH_LL_MAX_BYTES /* ll's LL area needs the window this large */
#define STAGE_MAX_BYTES ((size_t)256 << 20)
#define ROUTE_ENV "GCSH_COMM_ROUTE"

/* GCSH_COMM_ROUTE, read once when the library opens (core/env.c refused
 * any other value at start). */
typedef struct route_policy {
    enum gcsh_route_want want;
    char word[8]; /* the value as set ("comm" or "nccl" for the library), for reasons */
} route_policy;

static const route_policy *policy_of(lua_State *L)
{
    lua_getfield(L, LUA_REGISTRYINDEX, POLICY_KEY);
    const route_policy *p = lua_touserdata(L, -1);
    lua_pop(L, 1);
    return p;
}

/* The communicator's own library, as algo= names it. */
static const char *library(const gcsh_ctx *ctx)
{
    return strcmp(ctx->be->name, "cuda") == 0 ? "nccl" : "comm";
}

static int shared_gpus(const gcsh_ctx *ctx)
{
    return ctx->share.mode != GCSH_SHARE_OFF;
}

/* ---- the staging window -------------------------------------------------------- */

/* Pushes the staging window's handle of lc (nil when none); returns its object. */
static gcsh_symobj *push_staging(lua_State *L, const lcomm *lc)
{
    lua_getfield(L, LUA_REGISTRYINDEX, STAGE_KEY);
    lua_rawgetp(L, -1, lc);
    lua_remove(L, -2);
    gcsh_symobj **h = lua_touserdata(L, -1);
    return h && *h && (*h)->impl ? *h : NULL;
}

static gcsh_symobj *staging_of(lua_State *L, const lcomm *lc)
{
    gcsh_symobj *o = push_staging(L, lc);
    lua_pop(L, 1);
    return o;
}

static size_t staging_bytes(const gcsh_symobj *o)
{
    return o ? o->desc.bytes : 0;
}

static void forget_staging(lua_State *L, const lcomm *lc)
{
    lua_getfield(L, LUA_REGISTRYINDEX, STAGE_KEY);
    lua_pushnil(L);
    lua_rawsetp(L, -2, lc);
    lua_pop(L, 1);
}

/* Collective: frees lc's staging window (as w:free() does); for_call: the
 * routed call that grows it (its check is named after that call), or NULL
 * (the communicator's free). */
static void free_staging_for(lua_State *L, lcomm *lc, const char *for_call)
{
    gcsh_symobj *o = push_staging(L, lc);
    if (o) {
        snprintf(o->for_call, sizeof o->for_call, "%s", for_call ? for_call : "");
        gcsh_sym_free(L, o);
    }
    lua_pop(L, 1);
    forget_staging(L, lc);
}

static void free_staging(lua_State *L, lcomm *lc)
{
    free_staging_for(L, lc, NULL);
}

/* Collective: a staging window of `bytes` (a multiple of 4) on the
 * communicator at comm_idx, made as c:window(bytes / 4, "u32") is, for the
 * routed call for_call (its label: the window's checks are named so). */
static gcsh_symobj *make_staging(lua_State *L, int comm_idx, lcomm *lc, size_t bytes,
                                 const char *for_call)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_sym_proposal p;
    gcsh_sym_size size;
    gcsh_sym_proposal_init(&p, "window");
    p.n = (int64_t)(bytes / 4);
    snprintf(p.dtype, sizeof p.dtype, "%s", gcsh_dtype_name(GCSH_U32));
    snprintf(p.for_call, sizeof p.for_call, "%s", for_call);
    lua_pushnil(L); /* no options: the backend's first kind that works on lc */
    gcsh_sym_read_kind(L, lua_gettop(L), &p, "staging window", 1, lc->impl);
    lua_pop(L, 1);
    gcsh_sym_check_size(ctx, &p, "staging window", 1, 4, GCSH_TENSOR_MAX_N, &size);
    gcsh_kern_reserve_sync(ctx, &p, &size, lc->size);
    gcsh_symobj *o = gcsh_sym_register(L, comm_idx, GCSH_WINDOW_MT, &p, GCSH_U32, &size);
    lua_getfield(L, LUA_REGISTRYINDEX, STAGE_KEY);
    lua_pushvalue(L, -2);
    lua_rawsetp(L, -2, lc);
    lua_pop(L, 2);
    return o;
}

/* The size a call needing `need` bytes stages in: a power of two. */
static size_t stage_size(size_t need)
{
    size_t bytes = STAGE_MIN_BYTES;
    while (bytes < need)
        bytes *= 2;
    return bytes;
}

/* ---- the route ------------------------------------------------------------------ */

/* What a kernel route runs: the window viewed as dt, n elements of it. */
typedef struct route_plan {
    gcsh_dtype dt;  /* the view's dtype (a moving collective's u32 words) */
    size_t count;   /* the call's count in dt elements */
    size_t need;    /* staging bytes the call needs */
    size_t grow_to; /* the staging window's size when it must grow */
} route_plan;

static void say(gcsh_comm_route *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(gcsh_comm_route *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof r->why, fmt, ap);
    va_end(ap);
}

/* Whether the backend runs c as a copy: a communicator of one rank, whose
 * result is its input (backend.h, one_rank_copies). */
static int one_rank_copy(const gcsh_ctx *ctx, const gcsh_comm_call *c)
{
    return ctx->be->one_rank_copies && c->comm->size == 1;
}

/* The communicator's library, labelled name/library (unlabelled: quiet);
 * "copy" where the backend calls no library (one_rank_copy). */
static void to_library(const gcsh_ctx *ctx, const gcsh_comm_call *c, gcsh_comm_route *r,
                       int quiet)
{
    r->kernel = 0;
    snprintf(r->algo, sizeof r->algo, "%s", one_rank_copy(ctx, c) ? "copy" : library(ctx));
    if (!quiet)
        snprintf(r->label, sizeof r->label, "%s/%s", c->name, r->algo);
}

/* Whether every member of lc is on this rank's node. */
static int one_node(const gcsh_ctx *ctx, const lcomm *lc)
{
    if (!lc->chk.members || !ctx->node_of)
        return 0;
    for (int i = 0; i < lc->size; i++)
        if (ctx->node_of[lc->chk.members[i]] != ctx->node)
            return 0;
    return 1;
}

static int reduces(const gcsh_comm_call *c)
{
    return c->coll == GCSH_KC_ALLREDUCE || c->coll == GCSH_KC_REDUCE_SCATTER;
}

/* The dtype the kernels see: the call's, or, for a collective that only
 * moves data, 32-bit words.  Returns 0, or why the kernels cannot. */
static const char *kernel_view(const gcsh_comm_call *c, route_plan *p, char *why, size_t len)
{
    size_t es = gcsh_dtype_size(c->dt);
    unsigned ops = gcsh_kern_ops_of(c->dt);
    p->dt = c->dt;
    p->count = c->count;
    if (reduces(c)) {
        if (!ops)
            snprintf(why, len, "the kernels reduce " GCSH_KERN_DTYPE_NAMES ", not %s",
                     gcsh_dtype_name(c->dt));
        else if (!(ops & GCSH_KERN_OP_BIT(c->op)))
            snprintf(why, len, "the kernels have no op '%s' for %s", gcsh_redop_name(c->op),
                     gcsh_dtype_name(c->dt));
        return ops && (ops & GCSH_KERN_OP_BIT(c->op)) ? NULL : why;
    }
    if (ops)
        return NULL;
    if (c->count * es % 4 != 0) {
        snprintf(why, len, "%s: %zu bytes a rank, not whole 32-bit words the kernels move",
                 gcsh_dtype_name(c->dt), c->count * es);
        return why;
    }
    p->dt = GCSH_U32;
    p->count = c->count * es / 4;
    return NULL;
}

/* The all-reduce's algorithm by kernel.choose's table; where it says
 * "comm", two-shot when GPUs are shared (the library is slow at every
 * size) or the call asked for the kernels, else NULL: the library (which
 * wins there, GCSH_COMM_ROUTE=kernel's case). */
static const char *allreduce_algo(lua_State *L, const gcsh_comm_call *c, const route_plan *p)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    size_t bytes = p->count * gcsh_dtype_size(p->dt);
    const char *algo = gcsh_kern_choose(ctx->be->name, c->comm->size, bytes);
    if (strcmp(algo, "comm") != 0)
        return algo;
    return shared_gpus(ctx) || c->want == GCSH_ROUTE_KERNEL ? "twoshot" : NULL;
}

/* The staging bytes a call needs (ll reads its input where it is, but its
 * LL area sizes by the window). */
static size_t staging_need(const gcsh_comm_call *c, const route_plan *p, const char *algo)
{
    size_t es = gcsh_dtype_size(p->dt), size = (size_t)c->comm->size;
    switch (c->coll) {
    case GCSH_KC_REDUCE_SCATTER:
    case GCSH_KC_ALLGATHER: return p->count * size * es;
    default: return strcmp(algo, "ll") == 0 ? STAGE_MIN_BYTES : p->count * es; /* ll128: its
                                                                 area holds the window's bytes */
    }
}

/* Why the staging window cannot serve a call needing `need` bytes, or NULL. */
static const char *cannot_stage(lua_State *L, const gcsh_comm_call *c, size_t need)
{
    gcsh_symobj *o = staging_of(L, c->comm);
    if (staging_bytes(o) >= need)
        return NULL;
    if (need > STAGE_MAX_BYTES)
        return "past the staging window's bound (256 MiB a rank)";
    if (gcsh_ctx_of(L)->graph)
        return "the staging window cannot grow during a capture (run the call once first)";
    if (o && gcsh_users_refusing(L, o))
        return "a live graph uses the staging window, which would have to grow";
    return NULL;
}

/* Where the call runs (local; equal on every member), and what it needs. */
static void route_of(lua_State *L, const gcsh_comm_call *c, gcsh_comm_route *r, route_plan *p)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    const route_policy *pol = policy_of(L);
    memset(r, 0, sizeof *r);
    memset(p, 0, sizeof *p);
    enum gcsh_route_want want = c->want != GCSH_ROUTE_AUTO ? c->want
                                : pol                      ? pol->want
                                                           : GCSH_ROUTE_AUTO;
    if (want != GCSH_ROUTE_KERNEL && one_rank_copy(ctx, c)) {
        /* labelled as the library's route would be (quiet when nothing asked) */
        to_library(ctx, c, r, want == GCSH_ROUTE_AUTO && !shared_gpus(ctx));
        say(r, "one rank: the result is the input, copied on the stream where it goes "
               "elsewhere (no NCCL call)");
        return;
    }
    if (want == GCSH_ROUTE_COMM) {
        to_library(ctx, c, r, 0);
        if (c->want == GCSH_ROUTE_COMM)
            say(r, "asked for (algo='%s')", r->algo);
        else
            say(r, ROUTE_ENV "=%s", pol->word);
        return;
    }
    if (want == GCSH_ROUTE_AUTO && !shared_gpus(ctx)) {
        to_library(ctx, c, r, c->want == GCSH_ROUTE_AUTO);
        say(r, "no GPU is shared: the communicator's library (algo='kernel' or " ROUTE_ENV
               "=kernel for the kernels)");
        return;
    }
    char why[sizeof r->why];
    const char *no = NULL, *algo = NULL;
    if (!ctx->be->kern || !ctx->be->win || !ctx->be->kern->ll_allreduce)
        no = "the backend has no kernel collectives";
    else if (c->comm->size > GCSH_KERN_MAX_TEAM)
        no = "the kernels synchronise at most 16 ranks";
    else if (!one_node(ctx, c->comm))
        no = "the communicator spans nodes: the kernels reach one node";
    else
        no = kernel_view(c, p, why, sizeof why);
    if (!no) {
        algo = c->coll == GCSH_KC_ALLREDUCE ? allreduce_algo(L, c, p) : "direct";
        if (!algo)
            no = "past two-shot's crossover, where the library wins (kreduce_tune.h)";
    }
    if (!no) {
        p->need = staging_need(c, p, algo);
        p->grow_to = stage_size(p->need);
        no = cannot_stage(L, c, p->need);
    }
    if (no) {
        to_library(ctx, c, r, 0);
        say(r, "%s", no);
        return;
    }
    r->kernel = 1;
    snprintf(r->algo, sizeof r->algo, "%s", algo);
    snprintf(r->label, sizeof r->label, "%s/%s", c->name, algo);
    say(r, "%s", c->want == GCSH_ROUTE_KERNEL ? "asked for (algo='kernel')"
                 : want == GCSH_ROUTE_KERNEL  ? ROUTE_ENV "=kernel"
                 : strcmp(ctx->be->name, "cuda") == 0
                     ? "ranks share GPUs (--share-gpu): NCCL would go by sockets"
                     : "--share-gpu: the host takes the route shared GPUs take");
}

/* ---- the router's operations (comm.h) --------------------------------------------- */

/* The chunks of the kernels' plans are by team index, the calls' blocks by
 * communicator rank: a window over a whole communicator of one node has
 * its team in the communicator's order, which this checks once. */
static void check_team_order(lua_State *L, const gcsh_symobj *o)
{
    for (int i = 0; i < o->desc.team_size; i++)
        if (o->desc.team[i] != i)
            luaL_error(L, "staging window: team member %d is rank %d of the communicator: the "
                          "routed collectives need the communicator's order",
                       i, o->desc.team[i]);
}

static void prepare(lua_State *L, const gcsh_comm_call *c, gcsh_comm_route *r)
{
    route_plan p;
    route_of(L, c, r, &p);
    if (!r->kernel)
        return;
    gcsh_symobj *o = staging_of(L, c->comm);
    if (staging_bytes(o) < p.need) {
        if (o)
            free_staging_for(L, c->comm, r->label);
        o = make_staging(L, c->comm_idx, c->comm, p.grow_to, r->label);
        check_team_order(L, o);
    }
    push_staging(L, c->comm);
    gcsh_graph_keep(L, -1, staging_of(L, c->comm), NULL); /* while capturing (graph.h) */
    lua_pop(L, 1);
}

static void *data_of(const gcsh_tensor *t)
{
    return gcsh_tensor_data(t);
}

/* bytes from src to dst, both at the rank's place (stream-ordered on cuda). */
static int copy(gcsh_ctx *ctx, void *dst, const void *src, size_t bytes)
{
    return bytes ? ctx->be->mem->copy(ctx, dst, ctx->loc, src, ctx->loc, bytes) : 0;
}

static int run_allreduce(lua_State *L, gcsh_kargs *a, const gcsh_comm_call *c,
                         const gcsh_comm_route *r)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    char *mine = a->o->desc.peer[a->o->desc.team_rank];
    size_t bytes = a->n * gcsh_dtype_size(a->o->dtype);
    if (strcmp(r->algo, "ll") == 0)
        return gcsh_kern_run_ll(L, a, data_of(c->in), GCSH_LL_PROTO_LL);
    if (strcmp(r->algo, "ll128") == 0)
        return gcsh_kern_run_ll(L, a, data_of(c->in), GCSH_LL_PROTO_LL128);
    if (copy(ctx, mine, data_of(c->in), bytes) != 0)
        return -1;
    if (strcmp(r->algo, "oneshot") == 0)
        return gcsh_kern_run(L, a, GCSH_KC_ALLREDUCE, GCSH_KA_ONESHOT, -1);
    a->out = NULL; /* two-shot stores into the slices: reduced in the window, then copied */
    if (gcsh_kern_run(L, a, GCSH_KC_ALLREDUCE, GCSH_KA_TWOSHOT, -1) != 0)
        return -1;
    return copy(ctx, data_of(c->out), mine, bytes);
}

/* The call on the staging window viewed as its dtype (set for the call,
 * put back after: the window is this file's alone). */
static int run_kernel(lua_State *L, const gcsh_comm_call *c, const gcsh_comm_route *r)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    route_plan p;
    char why[8];
    kernel_view(c, &p, why, sizeof why);
    if (p.count == 0)
        return 0;
    gcsh_symobj *o = staging_of(L, c->comm);
    gcsh_dtype dt0 = o->dtype;
    size_t n0 = o->n, es = gcsh_dtype_size(p.dt);
    o->dtype = p.dt;
    o->n = o->desc.bytes / es;
    char *mine = o->desc.peer[o->desc.team_rank];
    gcsh_kargs a = {.fname = c->name, .o = o, .op = c->op, .n = p.count,
                    .out = (gcsh_tensor *)c->out};
    int rc = -1, size = c->comm->size, rank = c->comm->rank;
    switch (c->coll) {
    case GCSH_KC_ALLREDUCE:
        rc = run_allreduce(L, &a, c, r);
        break;
    case GCSH_KC_REDUCE_SCATTER:
        a.n = p.count * (size_t)size;
        if (copy(ctx, mine, data_of(c->in), a.n * es) == 0)
            rc = gcsh_kern_run(L, &a, GCSH_KC_REDUCE_SCATTER, GCSH_KA_DIRECT, -1);
        break;
    case GCSH_KC_ALLGATHER:
        a.n = p.count * (size_t)size;
        if (copy(ctx, mine + p.count * es * (size_t)rank, data_of(c->in), p.count * es) == 0)
            rc = gcsh_kern_run(L, &a, GCSH_KC_ALLGATHER, GCSH_KA_DIRECT, -1);
        break;
    case GCSH_KC_BROADCAST:
        /* the root's result is its own input: it only offers it */
        a.out = rank == c->root ? NULL : (gcsh_tensor *)c->in;
        if (rank != c->root || copy(ctx, mine, data_of(c->in), p.count * es) == 0)
            rc = gcsh_kern_run(L, &a, GCSH_KC_BROADCAST, GCSH_KA_DIRECT, c->root);
        break;
    default:
        rc = gcsh_set_error(ctx, "%s: no kernel route", c->name);
    }
    o->dtype = dt0;
    o->n = n0;
    return rc;
}

static int held(lua_State *L, const lcomm *lc)
{
    return staging_of(L, lc) ? 1 : 0;
}

static const gcsh_comm_router router = {
    .prepare = prepare, .run = run_kernel, .held = held, .release = free_staging,
};

/* ---- c:choose(coll, n [, dtype [, op]] [, {algo=}]) -------------------------------- */

static const char *const routed_names[] = {"allreduce", "reducescatter", "allgather",
                                           "broadcast", NULL};
static const int routed_colls[] = {GCSH_KC_ALLREDUCE, GCSH_KC_REDUCE_SCATTER, GCSH_KC_ALLGATHER,
                                   GCSH_KC_BROADCAST};

/* c:choose(coll, n [, dtype="f32" [, op="sum"]] [, {algo=}]): what
 * c:<coll>(t, ...) with #t = n would run, as the call decides it (local):
 * the algorithm (a kernel algorithm, or the library: "nccl", "comm"), why,
 * and the staging window's bytes now (0: none). */
static int comm_choose(lua_State *L)
{
    lcomm *lc = gcsh_arg_comm(L, 1);
    int which = luaL_checkoption(L, 2, NULL, routed_names);
    lua_Integer n = luaL_checkinteger(L, 3);
    luaL_argcheck(L, n >= 0, 3, "n must be >= 0");
    gcsh_comm_call c = {.name = routed_names[which], .coll = routed_colls[which], .comm = lc,
                        .comm_idx = 1, .count = (size_t)n, .dt = GCSH_F32, .op = GCSH_OP_SUM};
    int top = lua_gettop(L);
    if (top >= 4 && lua_istable(L, top)) {
        c.want = gcsh_comm_route_option(L, top, "choose");
        lua_settop(L, top - 1);
    }
    if (!lua_isnoneornil(L, 4)) {
        int dt = gcsh_dtype_from_name(luaL_checkstring(L, 4));
        if (dt < 0)
            luaL_argerror(L, 4, lua_pushfstring(L, "unknown dtype '%s' (valid: %s)",
                                                lua_tostring(L, 4), gcsh_dtype_names()));
        c.dt = (gcsh_dtype)dt;
    }
    c.op = gcsh_arg_redop(L, 5, GCSH_OP_SUM);
    if (c.coll == GCSH_KC_REDUCE_SCATTER) {
        if ((size_t)n % (size_t)lc->size != 0)
            luaL_argerror(L, 3, lua_pushfstring(L, "n = %I is not a multiple of %d ranks", n,
                                                lc->size));
        c.count = (size_t)n / (size_t)lc->size;
    }
    gcsh_comm_route r;
    route_plan p;
    route_of(L, &c, &r, &p);
    lua_pushstring(L, r.algo);
    lua_pushstring(L, r.why);
    lua_pushinteger(L, (lua_Integer)staging_bytes(staging_of(L, lc)));
    return 3;
}

static const luaL_Reg comm_meth[] = {
    {"choose", comm_choose},
    {NULL, NULL},
};

/* ---- .info -------------------------------------------------------------------------- */

/* What carries some of the library's calls instead, after "; " ("; up to
 * 4 KiB a rank through shared memory"), or "". */
static void other_paths(gcsh_ctx *ctx, char *buf, size_t len)
{
    char other[64] = "";
    if (ctx->be->comm_paths)
        ctx->be->comm_paths(ctx, other, sizeof other);
    snprintf(buf, len, "%s%s", other[0] ? "; " : "", other);
}

/* "kernels (ranks share a GPU)", "NCCL (no GPU shared)": where the routed
 * collectives run unless a call asks (.info's "collectives:"). */
void gcsh_comm_route_info(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    const route_policy *pol = policy_of(L);
    const char *lib = strcmp(ctx->be->name, "cuda") == 0 ? "NCCL" : "MPI";
    char text[200];
    if (pol && pol->want == GCSH_ROUTE_COMM)
        snprintf(text, sizeof text, "%s (" ROUTE_ENV "=%s)", lib, pol->word);
    else if (pol && pol->want == GCSH_ROUTE_KERNEL)
        snprintf(text, sizeof text, "kernels (" ROUTE_ENV "=kernel)");
    else if (shared_gpus(ctx))
        snprintf(text, sizeof text, "kernels (--share-gpu)");
    else
        snprintf(text, sizeof text, "%s (no GPU shared)", lib);
    if (!pol || pol->want != GCSH_ROUTE_KERNEL) /* the library's calls, where it is used */
        other_paths(ctx, text + strlen(text), sizeof text - strlen(text));
    /* what every route but the kernels asked for becomes (route_of) */
    if (ctx->be->one_rank_copies && !(pol && pol->want == GCSH_ROUTE_KERNEL))
        snprintf(text + strlen(text), sizeof text - strlen(text), "; a stream copy at one rank");
    gcsh_set_string(L, "comm_route", text);
}

void gcsh_comm_route_open(lua_State *L)
{
    route_policy *pol = lua_newuserdatauv(L, sizeof *pol, 0);
    memset(pol, 0, sizeof *pol);
    const char *env = getenv(ROUTE_ENV);
    pol->want = GCSH_ROUTE_AUTO;
    if (env && strcmp(env, "kernel") == 0)
        pol->want = GCSH_ROUTE_KERNEL;
    else if (env && (strcmp(env, "comm") == 0 || strcmp(env, "nccl") == 0))
        pol->want = GCSH_ROUTE_COMM;
    snprintf(pol->word, sizeof pol->word, "%s", pol->want == GCSH_ROUTE_COMM ? env : "");
    lua_setfield(L, LUA_REGISTRYINDEX, POLICY_KEY);
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, STAGE_KEY);
    gcsh_comm_set_router(L, &router);
    gcsh_add_methods(L, GCSH_COMM_MT, comm_meth);
}
