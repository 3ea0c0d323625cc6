/* The Lua type "comm": a communicator and its collectives.
 *
 *   comm.world()                       the world communicator (cached until freed)
 *   c:split(color [, key=c.rank])      collective; nil/false/negative color -> nil
 *   c.rank, c.size                     0-based
 *   c:barrier()
 *   c:allreduce(t [, op="sum" [, out=t]])     c:broadcast(t, root)
 *   c:reduce(t, root [, op="sum" [, out=t]])  c:allgather(t, out)
 *   c:reducescatter(t, out [, op="sum"])      c:alltoall(t, out)
 *   c:scan(t [, op="sum" [, out=t]])          rank r: the op over ranks 0..r
 *   c:send(t, peer)                           c:recv(t, peer)
 *   c:window(n [, dtype [, {kind=}]])  c:signals(n)   (l_window.c, l_signal.c)
 *   c:agree(s)                         every rank's string, in rank order
 *   c:free()                           collective, idempotent; refused while
 *                                      windows or signals are registered on c
 *
 * allreduce, broadcast, allgather and reducescatter take a last {algo=}
 * (auto, kernel, comm, nccl): the router (comm.h; comm_route.c registers
 * it) may run them on the kernel collectives, and c:choose says which.
 *
 * Collectives return their output tensor.  Every argument is checked here,
 * before the backend runs (backend.h: backends trust their arguments), by one
 * table of collective shapes (coll_specs: each row is a method) and one
 * checker.
 *
 * In place: allreduce, reduce, scan and alltoall with out == t (or out omitted);
 * allgather with t = out:view(rank * n, n); reducescatter with
 * out = t:view(rank * n, n) (NCCL's layouts).  Any other overlap is refused.
 *
 * Freeing is collective (MPI_Comm_free, ncclCommDestroy).  :free() and
 * __close (a <close> variable leaves its scope at the same point of the
 * program on every rank) do it.  __gc never does: a rank collecting a
 * communicator at its own moment would hang the others.  A communicator that
 * is collected while still open stays in the rank's list of open ones and is
 * released at the end of the session with the others, in creation order
 * (gcsh_comm_close); the next comm call on that rank prints a one-time note
 * to stderr (not from __gc itself, so a script's exit, when everything is
 * collected, stays quiet).  An aborted one waits for nobody: __gc releases
 * it at once, without a note.
 *
 * Checks (collcheck.h): every collective, split, barrier and comm.world() first
 * exchanges a fingerprint through rank 0 (.check on), and publishes where the
 * rank is while it runs.  An interrupted operation aborts its communicator on
 * every rank; an aborted comm refuses every use but :free() (its windows and
 * signals stay readable and free locally: symmem.h).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "wire/collcheck.h"
#include "bind/comm.h"
#include "bind/graph.h"
#include "bind/opts.h"
#include "core/gcsh.h"
#include "core/kplan.h"
#include "bind/tensor.h"
#include "bind/users.h"
#include "wire/out.h"

#define WORLD_KEY "gcsh.comm.world"
#define LEAKS_KEY "gcsh.comm.leaks" /* registry: {count=, noted=} */
#define OPEN_KEY "gcsh.comm.open"   /* registry: the open ones (comm_list) */
#define OPEN_MT "gcsh.comm.list"    /* its metatable */
#define ROUTER_KEY "gcsh.comm.router" /* registry: the router (light userdata) */

/* The pseudo-communicator of comm.world()'s check: every rank of the session. */
#define SESSION_COMM_ID (~0ULL)

static const gcsh_comm_ops *ops_of(gcsh_ctx *ctx)
{
    return ctx->be->comm;
}

/* ---- the open communicators, in creation order ---------------------------- */

/* A communicator not released yet: its handle's, or, once the handle was
 * collected unfreed, its own until the session ends. */
typedef struct comm_entry {
    lcomm *lc;            /* the handle; NULL once collected */
    gcsh_comm_impl *impl; /* a collected handle's communicator */
    struct comm_entry *prev, *next;
} comm_entry;

/* A full userdata in the registry, made when the type opens, before any
 * handle: at lua_close its finalizer runs after every handle's. */
typedef struct comm_list {
    comm_entry *head, *tail;
} comm_list;

static comm_list *open_list(lua_State *L)
{
    lua_getfield(L, LUA_REGISTRYINDEX, OPEN_KEY);
    comm_list *l = luaL_testudata(L, -1, OPEN_MT);
    lua_pop(L, 1);
    return l;
}

static void list_add(lua_State *L, lcomm *lc)
{
    comm_list *l = open_list(L);
    comm_entry *e = l ? calloc(1, sizeof *e) : NULL;
    lc->entry = e;
    if (!e)
        return; /* out of host memory: __gc then releases it (aborted) or leaks it */
    e->lc = lc;
    e->prev = l->tail;
    if (l->tail)
        l->tail->next = e;
    else
        l->head = e;
    l->tail = e;
}

static void list_drop(lua_State *L, comm_entry *e)
{
    comm_list *l = e ? open_list(L) : NULL;
    if (!l)
        return;
    if (e->prev)
        e->prev->next = e->next;
    else
        l->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        l->tail = e->prev;
    free(e);
}

/* At lua_close, after every handle's finalizer: what is left is memory. */
static int open_list_gc(lua_State *L)
{
    comm_list *l = luaL_checkudata(L, 1, OPEN_MT);
    for (comm_entry *e = l->head, *next; e; e = next) {
        next = e->next;
        if (e->lc)
            e->lc->entry = NULL;
        free(e);
    }
    l->head = l->tail = NULL;
    return 0;
}

static void open_list_new(lua_State *L)
{
    comm_list *l = lua_newuserdatauv(L, sizeof *l, 0);
    l->head = l->tail = NULL;
    luaL_newmetatable(L, OPEN_MT);
    lua_pushcfunction(L, open_list_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, OPEN_KEY);
}

/* ---- the router of the routed collectives (comm.h) ------------------------ */

void gcsh_comm_set_router(lua_State *L, const gcsh_comm_router *r)
{
    lua_pushlightuserdata(L, (void *)r);
    lua_setfield(L, LUA_REGISTRYINDEX, ROUTER_KEY);
}

static const gcsh_comm_router *router_of(lua_State *L)
{
    lua_getfield(L, LUA_REGISTRYINDEX, ROUTER_KEY);
    const gcsh_comm_router *r = lua_touserdata(L, -1);
    lua_pop(L, 1);
    return r;
}

/* ---- handles ------------------------------------------------------------ */

static lcomm *check_open(lua_State *L, int idx)
{
    lcomm *lc = luaL_checkudata(L, idx, GCSH_COMM_MT);
    if (!lc->impl)
        luaL_error(L, "attempt to use a freed comm");
    gcsh_check_usable(L, &lc->chk);
    gcsh_graph_keep(L, idx, lc, NULL); /* while capturing (graph.h) */
    return lc;
}

lcomm *gcsh_arg_comm(lua_State *L, int idx)
{
    return check_open(L, idx);
}

static lcomm *push_closed(lua_State *L)
{
    lcomm *lc = lua_newuserdatauv(L, sizeof *lc, 0);
    lc->impl = NULL;
    lc->rank = lc->size = 0;
    memset(&lc->chk, 0, sizeof lc->chk);
    lc->next_seq = 1;
    lc->registered = 0;
    lc->entry = NULL;
    luaL_setmetatable(L, GCSH_COMM_MT);
    return lc;
}

/* members: the world rank of each member (taken over), or NULL. */
static void adopt(lua_State *L, gcsh_ctx *ctx, lcomm *lc, gcsh_comm_impl *impl, uint64_t id,
                  int *members)
{
    lc->impl = impl;
    list_add(L, lc);
    lc->rank = ops_of(ctx)->rank(impl);
    lc->size = ops_of(ctx)->size(impl);
    gcsh_comm_check_attach(ctx, &lc->chk, impl, id, lc->rank, lc->size, members);
}

/* The collective release behind :free() and __close; idempotent.  An aborted
 * communicator's release does not wait for anyone (backend.h). */
static void release(lua_State *L, gcsh_ctx *ctx, lcomm *lc)
{
    if (lc->impl) {
        gcsh_comm_check_detach(ctx, &lc->chk);
        ops_of(ctx)->release(ctx, lc->impl);
        lc->impl = NULL;
        list_drop(L, lc->entry);
        lc->entry = NULL;
    }
}

/* Whether c was aborted (here, or by the backend itself). */
static int is_aborted(gcsh_ctx *ctx, const lcomm *lc, gcsh_comm_impl *impl)
{
    return (lc && lc->chk.aborted) ||
           (impl && ops_of(ctx)->aborted && ops_of(ctx)->aborted(impl));
}

static void push_leaks(lua_State *L)
{
    if (lua_getfield(L, LUA_REGISTRYINDEX, LEAKS_KEY) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, LUA_REGISTRYINDEX, LEAKS_KEY);
    }
}

/* __gc: local only, see the top of the file. */
static int comm_gc(lua_State *L)
{
    lcomm *lc = luaL_checkudata(L, 1, GCSH_COMM_MT);
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (!lc->impl)
        return 0;
    if (is_aborted(ctx, lc, lc->impl)) { /* waits for nobody (backend.h) */
        release(L, ctx, lc);
        return 0;
    }
    gcsh_comm_check_detach(ctx, &lc->chk);
    if (lc->entry) { /* the list keeps it until the end of the session */
        lc->entry->impl = lc->impl;
        lc->entry->lc = NULL;
        lc->entry = NULL;
    }
    lc->impl = NULL;
    push_leaks(L);
    lua_getfield(L, -1, "count");
    lua_Integer n = lua_tointeger(L, -1);
    lua_pop(L, 1);
    lua_pushinteger(L, n + 1);
    lua_setfield(L, -2, "count");
    lua_pop(L, 1);
    return 0;
}

static void note_leaks_once(lua_State *L)
{
    push_leaks(L);
    lua_getfield(L, -1, "count");
    lua_getfield(L, -2, "noted");
    if (lua_tointeger(L, -2) > 0 && !lua_toboolean(L, -1)) {
        gcsh_ctx *ctx = gcsh_ctx_of(L);
        char note[400];
        int k = snprintf(note, sizeof note,
                         "gcsh: note (rank %d): a comm was garbage-collected without :free(); "
                         "it is freed at the end of the session, because freeing is collective "
                         "and __gc never does it (use c:free() or `local c <close> = ...`)\n",
                         ctx->rank);
        if (ctx->cap) /* with the rank's other errors, folded on rank 0's stderr */
            gcsh_capture_write(ctx->cap, GCSH_STDERR, note, (size_t)k);
        else
            fputs(note, stderr);
        lua_pushboolean(L, 1);
        lua_setfield(L, -4, "noted");
    }
    lua_pop(L, 3);
}

/* Windows and signals keep their comm (comm.h): their free needs its barrier.
 * The free is collective, so it is checked (a rank that does not come is
 * named, where NCCL would wait for it), unless the communicator is aborted
 * (its release waits for nobody) or __close runs on an error, which the
 * other ranks may not share (the error is what this rank reports). */
static int comm_free(lua_State *L)
{
    lcomm *lc = luaL_checkudata(L, 1, GCSH_COMM_MT);
    if (!lc->impl)
        return 0;
    gcsh_graph_refuse_now(L, "c:free()", "free it after the capture");
    gcsh_users_refuse(L, lc, "c:free()");
    const gcsh_comm_router *router = router_of(L);
    int staged = router ? router->held(L, lc) : 0; /* the router's own go with c */
    if (lc->registered > staged)
        return luaL_error(L, "comm:free: %d window(s)/signals still registered on this comm; "
                             "free them first", lc->registered - staged);
    if (!lc->chk.aborted && lua_isnoneornil(L, 2)) {
        gcsh_fingerprint fp;
        gcsh_fp_init(&fp, &lc->chk, "comm:free");
        gcsh_check_enter(L, &lc->chk, &fp);
        gcsh_check_leave(L, &lc->chk, 0);
    }
    if (staged)
        router->release(L, lc);
    release(L, gcsh_ctx_of(L), lc);
    return 0;
}

static int comm_tostring(lua_State *L)
{
    lcomm *lc = luaL_checkudata(L, 1, GCSH_COMM_MT);
    if (!lc->impl)
        lua_pushliteral(L, "comm(freed)");
    else if (lc->chk.aborted)
        lua_pushliteral(L, "comm(aborted)");
    else
        lua_pushfstring(L, "comm(rank %d of %d, %s)", lc->rank, lc->size,
                        gcsh_ctx_of(L)->be->name);
    return 1;
}

/* __index: the fields rank and size, then the methods (upvalue 1). */
static int comm_index(lua_State *L)
{
    const char *key = lua_tostring(L, 2);
    if (key && (strcmp(key, "rank") == 0 || strcmp(key, "size") == 0)) {
        lcomm *lc = check_open(L, 1);
        lua_pushinteger(L, key[0] == 'r' ? lc->rank : lc->size);
        return 1;
    }
    lua_pushvalue(L, 2);
    lua_gettable(L, lua_upvalueindex(1));
    return 1;
}

/* ---- constructors ------------------------------------------------------- */

/* The world rank of every member of impl (NULL when the backend cannot say):
 * what the coordinator needs to name the members that did not arrive. */
static int *exchange_members(gcsh_ctx *ctx, gcsh_comm_impl *impl)
{
    int n = ops_of(ctx)->size(impl);
    int *members = malloc((size_t)n * sizeof *members);
    int32_t mine = ctx->rank, *all = malloc((size_t)n * sizeof *all);
    if (!members || !all || !ops_of(ctx)->agree ||
        ops_of(ctx)->agree(ctx, impl, &mine, all, sizeof mine) != 0) {
        free(members);
        members = NULL;
    }
    for (int i = 0; members && i < n; i++)
        members[i] = all[i];
    free(all);
    return members;
}

static int *world_members(gcsh_ctx *ctx)
{
    int *members = malloc((size_t)ctx->size * sizeof *members);
    for (int i = 0; members && i < ctx->size; i++)
        members[i] = i;
    return members;
}

/* comm.world() is collective over the session (it duplicates MPI's world):
 * checked on a pseudo-communicator of every rank, so a rank that never
 * comes is named instead of hanging the others. */
static void check_world(lua_State *L, gcsh_ctx *ctx)
{
    /* never on the board: its sequence number is always 0, so a second
     * comm.world() in one command would meet the first one's entries there */
    gcsh_comm_check session = {.id = SESSION_COMM_ID, .rank = ctx->rank, .size = ctx->size,
                               .members = world_members(ctx), .on_board = 0};
    gcsh_fingerprint fp;
    gcsh_fp_init(&fp, &session, "comm.world");
    fp.seq = 0;
    int rc = gcsh_check_collective(L, &session, &fp);
    free(session.members);
    if (rc != 0)
        luaL_error(L, "%s", ctx->err);
}

static int comm_world(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    note_leaks_once(L);
    /* a world aborted by the backend alone (cuda: with a split that shared
     * its resources) is replaced as one aborted here */
    lcomm *cached = lua_getfield(L, LUA_REGISTRYINDEX, WORLD_KEY) == LUA_TUSERDATA
                        ? lua_touserdata(L, -1) : NULL;
    if (cached && cached->impl && !is_aborted(ctx, cached, cached->impl))
        return 1;
    lua_pop(L, 1);
    gcsh_graph_refuse_now(L, "comm.world() (making a communicator)",
                          "make it before the capture");
    check_world(L, ctx);
    lcomm *lc = push_closed(L);
    gcsh_comm_impl *impl;
    gcsh_where_begin(ctx, "comm.world() (made by every rank)"); /* a wait: hang reports */
    int rc = ops_of(ctx)->world(ctx, &impl);
    gcsh_where_end(ctx);
    if (rc != 0)
        return gcsh_raise(L, ctx);
    adopt(L, ctx, lc, impl, gcsh_comm_world_id(ctx), world_members(ctx));
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, WORLD_KEY);
    return 1;
}

static int check_int_arg(lua_State *L, int idx, const char *what)
{
    lua_Integer v = luaL_checkinteger(L, idx);
    if (v < INT_MIN || v > INT_MAX)
        luaL_argerror(L, idx, lua_pushfstring(L, "%s %I does not fit in an int", what, v));
    return (int)v;
}

static int comm_split(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    lcomm *parent = check_open(L, 1);
    gcsh_check_intent(L, &parent->chk, 0);
    gcsh_args_none_after(L, 3, "a color and a key (no options)");
    gcsh_graph_refuse_now(L, "c:split()", "make communicators before the capture");
    note_leaks_once(L);
    int color = -1;
    if (lua_toboolean(L, 2))
        color = check_int_arg(L, 2, "color");
    if (color < 0)
        color = -1;
    int key = lua_isnoneornil(L, 3) ? parent->rank : check_int_arg(L, 3, "key");
    lcomm *lc = push_closed(L);
    gcsh_comm_impl *impl = NULL;
    gcsh_fingerprint fp; /* colors and keys differ by design: only the call is compared */
    gcsh_fp_init(&fp, &parent->chk, "split");
    gcsh_check_enter(L, &parent->chk, &fp);
    /* .check off: a barrier first, which a member that abandoned the split
     * can stop (collcheck.h); a split itself cannot be abandoned */
    int rc = gcsh_check_enabled(ctx) ? 0 : ops_of(ctx)->barrier(ctx, parent->impl);
    if (rc == 0)
        rc = ops_of(ctx)->split(ctx, parent->impl, color, key, &impl);
    gcsh_check_leave(L, &parent->chk, rc);
    if (!impl) {
        lua_pushnil(L);
        return 1;
    }
    adopt(L, ctx, lc, impl, gcsh_comm_split_id(&parent->chk, color),
          exchange_members(ctx, impl));
    return 1;
}

static int comm_barrier(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    lcomm *lc = check_open(L, 1);
    gcsh_graph_refuse_now(L, "c:barrier()", "it returns to the host once every rank reached it");
    gcsh_fingerprint fp;
    gcsh_fp_init(&fp, &lc->chk, "barrier");
    gcsh_check_enter(L, &lc->chk, &fp);
    gcsh_check_leave(L, &lc->chk, ops_of(ctx)->barrier(ctx, lc->impl));
    return 0;
}

/* ---- collectives: one spec each, one checker ----------------------------- */

/* How out's length and the backend's count follow from t's length n. */
typedef enum size_rule {
    SIZE_SAME,     /* count = n; out >= n */
    SIZE_GATHER,   /* count = n; out >= n * size */
    SIZE_SCATTER,  /* n divisible by size; count = n / size; out >= count */
    SIZE_ALLTOALL, /* n divisible by size; count = n / size per peer; out >= n */
} size_rule;

typedef struct coll_args {
    lcomm *comm;
    const gcsh_tensor *in, *out;
    size_t count; /* in the backend's sense, see backend.h */
    gcsh_dtype dt;
    gcsh_redop op;
    int rank_arg_value; /* root or peer */
} coll_args;

typedef int (*coll_run)(gcsh_ctx *ctx, const coll_args *a);

/* Stack indices count the comm as 1, so t is 2 (Lua reports it as #1). */
typedef struct coll_spec {
    const char *name;
    int out_arg;      /* 0: works on t alone */
    int out_optional; /* out omitted or nil: in place on t */
    int op_arg;       /* 0: not a reduction */
    int no_avg;       /* avg is not one of its ops */
    int rank_arg;     /* 0: no root or peer */
    const char *rank_role; /* "root" | "peer" */
    size_rule sizes;
    coll_run run;
    int routed;       /* enum gcsh_kcoll the router may run it on, or -1 */
} coll_spec;

static void *in_data(const coll_args *a)
{
    return gcsh_tensor_data(a->in);
}

static void *out_data(const coll_args *a)
{
    return gcsh_tensor_data(a->out);
}

static int run_allreduce(gcsh_ctx *ctx, const coll_args *a)
{
    return ops_of(ctx)->allreduce(ctx, a->comm->impl, in_data(a), out_data(a), a->count, a->dt,
                                  a->op);
}

static int run_broadcast(gcsh_ctx *ctx, const coll_args *a)
{
    return ops_of(ctx)->broadcast(ctx, a->comm->impl, in_data(a), a->count, a->dt,
                                  a->rank_arg_value);
}

static int run_reduce(gcsh_ctx *ctx, const coll_args *a)
{
    return ops_of(ctx)->reduce(ctx, a->comm->impl, in_data(a), out_data(a), a->count, a->dt,
                               a->op, a->rank_arg_value);
}

static int run_scan(gcsh_ctx *ctx, const coll_args *a)
{
    return ops_of(ctx)->scan(ctx, a->comm->impl, in_data(a), out_data(a), a->count, a->dt, a->op);
}

static int run_allgather(gcsh_ctx *ctx, const coll_args *a)
{
    return ops_of(ctx)->allgather(ctx, a->comm->impl, in_data(a), out_data(a), a->count, a->dt);
}

static int run_reducescatter(gcsh_ctx *ctx, const coll_args *a)
{
    return ops_of(ctx)->reducescatter(ctx, a->comm->impl, in_data(a), out_data(a), a->count,
                                      a->dt, a->op);
}

static int run_alltoall(gcsh_ctx *ctx, const coll_args *a)
{
    return ops_of(ctx)->alltoall(ctx, a->comm->impl, in_data(a), out_data(a), a->count, a->dt);
}

static int run_send(gcsh_ctx *ctx, const coll_args *a)
{
    return ops_of(ctx)->send(ctx, a->comm->impl, in_data(a), a->count, a->dt, a->rank_arg_value);
}

static int run_recv(gcsh_ctx *ctx, const coll_args *a)
{
    return ops_of(ctx)->recv(ctx, a->comm->impl, in_data(a), a->count, a->dt, a->rank_arg_value);
}

/* The collectives, each a method of comm (add_collectives) and a name c:loop takes. */
static const coll_spec coll_specs[] = {
    /* name        out opt op avg? rank role   sizes          run           routed */
    {"allreduce", 4, 1, 3, 0, 0, NULL, SIZE_SAME, run_allreduce, GCSH_KC_ALLREDUCE},
    {"broadcast", 0, 0, 0, 0, 3, "root", SIZE_SAME, run_broadcast, GCSH_KC_BROADCAST},
    {"reduce", 5, 1, 4, 0, 3, "root", SIZE_SAME, run_reduce, -1},
    {"scan", 4, 1, 3, 1, 0, NULL, SIZE_SAME, run_scan, -1},
    {"allgather", 3, 0, 0, 0, 0, NULL, SIZE_GATHER, run_allgather, GCSH_KC_ALLGATHER},
    {"reducescatter", 3, 0, 4, 0, 0, NULL, SIZE_SCATTER, run_reducescatter,
     GCSH_KC_REDUCE_SCATTER},
    {"alltoall", 3, 0, 0, 0, 0, NULL, SIZE_ALLTOALL, run_alltoall, -1},
    {"send", 0, 0, 0, 0, 3, "peer", SIZE_SAME, run_send, -1},
    {"recv", 0, 0, 0, 0, 3, "peer", SIZE_SAME, run_recv, -1},
};
#define NCOLLS (sizeof coll_specs / sizeof coll_specs[0])

static const char *loc_name(int loc, char *buf, size_t len)
{
    if (loc == GCSH_LOC_HOST)
        return "host memory";
    snprintf(buf, len, "memory on cuda:%d", loc);
    return buf;
}

/* The tensor must live where this backend's collectives run (ctx->loc). */
static const gcsh_tensor *check_placed_tensor(lua_State *L, int idx, const char *what)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    const gcsh_tensor *t = gcsh_arg_tensor(L, idx);
    if (t->st->loc != ctx->loc) {
        char buf[32];
        luaL_argerror(L, idx, lua_pushfstring(L, "%s lives in %s, but %s collectives need %s", what,
                                              t->st->where, ctx->be->name,
                                              loc_name(ctx->loc, buf, sizeof buf)));
    }
    return t;
}

static int check_rank_arg(lua_State *L, const coll_spec *spec, const lcomm *lc)
{
    int idx = spec->rank_arg;
    lua_Integer r = luaL_checkinteger(L, idx);
    if (r < 0 || r >= lc->size)
        luaL_argerror(L, idx, lua_pushfstring(L, "%s %I out of range (valid 0..%d)",
                                              spec->rank_role, r, lc->size - 1));
    if (strcmp(spec->rank_role, "peer") == 0 && r == lc->rank)
        luaL_argerror(L, idx, lua_pushfstring(L, "peer %I is this rank (%s to oneself is not "
                                                 "supported: it would deadlock)", r, spec->name));
    return (int)r;
}

static void no_avg(lua_State *L, const coll_spec *spec)
{
    luaL_Buffer valid;
    luaL_buffinit(L, &valid);
    for (int op = 0; op < GCSH_NOPS; op++)
        if (op != GCSH_OP_AVG) {
            luaL_addstring(&valid, op ? " " : "");
            luaL_addstring(&valid, gcsh_redop_name((gcsh_redop)op));
        }
    luaL_pushresult(&valid);
    luaL_argerror(L, spec->op_arg, lua_pushfstring(L, "op 'avg' is not defined for %s (valid: %s)",
                                                   spec->name, lua_tostring(L, -1)));
}

static void check_op(lua_State *L, const coll_spec *spec, coll_args *a)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    a->op = gcsh_arg_redop(L, spec->op_arg, GCSH_OP_SUM);
    if (spec->no_avg && a->op == GCSH_OP_AVG)
        no_avg(L, spec);
    if (!ops_of(ctx)->can_reduce(a->dt, a->op))
        luaL_argerror(L, spec->op_arg, lua_pushfstring(L, "op '%s' is not defined for %s on the "
                                                          "%s backend", gcsh_redop_name(a->op),
                                                       gcsh_dtype_name(a->dt), ctx->be->name));
}

static void out_too_small(lua_State *L, const coll_spec *spec, size_t has, size_t needs,
                          const char *why)
{
    luaL_argerror(L, spec->out_arg, lua_pushfstring(L, "out has %I elements, needs %I (%s)",
                                                    (lua_Integer)has, (lua_Integer)needs, why));
}

static void check_divisible(lua_State *L, size_t n, int size)
{
    if (n % (size_t)size != 0)
        luaL_argerror(L, 2, lua_pushfstring(L, "t has %I elements, not a multiple of %d ranks",
                                            (lua_Integer)n, size));
}

/* Fills a->count from t's length by spec->sizes, and checks out's length. */
static void check_sizes(lua_State *L, const coll_spec *spec, coll_args *a)
{
    size_t n = a->in->n, has = a->out->n, size = (size_t)a->comm->size;
    char why[96];
    switch (spec->sizes) {
    case SIZE_SAME:
        a->count = n;
        if (has < n)
            out_too_small(L, spec, has, n, "as many as t");
        break;
    case SIZE_GATHER:
        a->count = n;
        snprintf(why, sizeof why, "%zu x %zu ranks", n, size);
        if (has / size < n) /* not has < n * size: that product may overflow */
            out_too_small(L, spec, has, n * size, why);
        break;
    case SIZE_SCATTER:
        check_divisible(L, n, a->comm->size);
        a->count = n / size;
        snprintf(why, sizeof why, "%zu / %zu ranks", n, size);
        if (has < a->count)
            out_too_small(L, spec, has, a->count, why);
        break;
    case SIZE_ALLTOALL:
        check_divisible(L, n, a->comm->size);
        a->count = n / size;
        if (has < n)
            out_too_small(L, spec, has, n, "as many as t");
        break;
    }
}

/* Where t must start, relative to out, for the in-place layout (in bytes;
 * negative: out starts after t). */
static long long in_place_shift(const coll_spec *spec, const coll_args *a)
{
    long long block = (long long)(a->count * gcsh_dtype_size(a->dt)) * a->comm->rank;
    switch (spec->sizes) {
    case SIZE_GATHER: return block;
    case SIZE_SCATTER: return -block;
    default: return 0;
    }
}

static const char *in_place_hint(const coll_spec *spec)
{
    switch (spec->sizes) {
    case SIZE_GATHER: return "t = out:view(rank * #t, #t)";
    case SIZE_SCATTER: return "out = t:view(rank * #out, #out)";
    default: return "out = t";
    }
}

/* Overlapping t and out are allowed only in the in-place layout. */
static void check_overlap(lua_State *L, const coll_spec *spec, const coll_args *a)
{
    if (a->in == a->out || a->in->st != a->out->st)
        return;
    size_t esize = gcsh_dtype_size(a->dt);
    long long in_lo = (long long)(a->in->offset * esize), in_hi = in_lo + (long long)(a->in->n * esize);
    long long out_lo = (long long)(a->out->offset * esize);
    long long out_hi = out_lo + (long long)(a->out->n * esize);
    if (in_hi <= out_lo || out_hi <= in_lo || in_lo - out_lo == in_place_shift(spec, a))
        return;
    luaL_argerror(L, spec->out_arg, lua_pushfstring(L, "out overlaps t without being the "
                                                       "in-place layout (%s)", in_place_hint(spec)));
}

/* Whether this rank's call writes a->out (t itself, in place): a send only
 * reads, and so do a broadcast's root and a reduce's other ranks. */
static int writes_here(const coll_spec *spec, const coll_args *a)
{
    if (spec->run == run_send)
        return 0;
    if (spec->run == run_broadcast)
        return a->comm->rank != a->rank_arg_value;
    if (spec->run == run_reduce)
        return a->comm->rank == a->rank_arg_value;
    return 1;
}

/* An argument past the collective's last (its {algo=} table, where it takes
 * one, is off the stack by now): an error, never dropped unread. */
static void check_no_extra(lua_State *L, const coll_spec *spec)
{
    int last = 2;
    last = spec->out_arg > last ? spec->out_arg : last;
    last = spec->op_arg > last ? spec->op_arg : last;
    last = spec->rank_arg > last ? spec->rank_arg : last;
    for (int i = last + 1; i <= lua_gettop(L); i++)
        if (!lua_isnil(L, i))
            luaL_argerror(L, i, lua_pushfstring(L, "c:%s takes %d argument%s%s, got a %s here",
                                                spec->name, last - 1, last == 2 ? "" : "s",
                                                spec->routed >= 0 ? " and {algo=}"
                                                                  : " (no options table)",
                                                luaL_typename(L, i)));
}

/* Checks everything before the backend sees it; returns the stack index of
 * the tensor the collective returns. */
static int check_collective(lua_State *L, const coll_spec *spec, coll_args *a)
{
    check_no_extra(L, spec);
    a->comm = check_open(L, 1);
    gcsh_check_intent(L, &a->comm->chk,
                      spec->run == run_send || spec->run == run_recv);
    a->in = check_placed_tensor(L, 2, "t");
    a->dt = a->in->dtype;
    int result_idx = 2;
    a->out = a->in;
    if (spec->out_arg && !(spec->out_optional && lua_isnoneornil(L, spec->out_arg))) {
        a->out = check_placed_tensor(L, spec->out_arg, "out");
        result_idx = spec->out_arg;
        if (a->out->dtype != a->dt)
            luaL_argerror(L, spec->out_arg,
                          lua_pushfstring(L, "out is %s but t is %s (dtypes must match)",
                                          gcsh_dtype_name(a->out->dtype), gcsh_dtype_name(a->dt)));
    }
    a->op = GCSH_OP_SUM;
    if (spec->op_arg)
        check_op(L, spec, a);
    a->rank_arg_value = spec->rank_arg ? check_rank_arg(L, spec, a->comm) : 0;
    check_sizes(L, spec, a);
    check_overlap(L, spec, a);
    if (writes_here(spec, a)) /* a window of an aborted communicator is read-only */
        gcsh_tensor_check_write(L, a->out);
    return result_idx;
}

/* What every member must agree on (send and recv: with the peer only). */
static void fingerprint(const coll_spec *spec, const coll_args *a, const char *op,
                        gcsh_fingerprint *fp)
{
    gcsh_fp_init(fp, &a->comm->chk, op);
    fp->count = (int64_t)a->count;
    fp->dtype = (int32_t)a->dt;
    if (spec->op_arg)
        fp->redop = (int32_t)a->op;
    if (spec->rank_arg)
        fp->root = a->rank_arg_value;
    if (spec->run == run_send || spec->run == run_recv) {
        fp->kind = spec->run == run_send ? GCSH_FP_SEND : GCSH_FP_RECV;
        fp->seq = 0;
    }
}

/* ---- routed collectives (comm.h): the kernels, or the communicator's library ---- */

#define ROUTE_ALGOS "auto kernel comm nccl"

enum gcsh_route_want gcsh_comm_route_option(lua_State *L, int idx, const char *fname)
{
    gcsh_opts_check(L, idx, fname, "algo");
    enum gcsh_route_want want = GCSH_ROUTE_AUTO;
    if (lua_getfield(L, idx, "algo") != LUA_TNIL) {
        const char *algo = lua_tostring(L, -1);
        if (lua_type(L, -1) != LUA_TSTRING || !gcsh_opts_listed(ROUTE_ALGOS, algo))
            luaL_error(L, "%s: algo must be one of " ROUTE_ALGOS ", got %s", fname,
                       luaL_tolstring(L, -1, NULL));
        if (strcmp(algo, "nccl") == 0 && strcmp(gcsh_ctx_of(L)->be->name, "cuda") != 0)
            luaL_error(L, "%s: algo 'nccl' is the cuda backend's library; the %s backend's "
                          "communicator runs algo 'comm' (MPI)",
                       fname, gcsh_ctx_of(L)->be->name);
        want = algo[0] == 'k' ? GCSH_ROUTE_KERNEL : algo[0] == 'a' ? GCSH_ROUTE_AUTO
                                                                   : GCSH_ROUTE_COMM;
    }
    lua_pop(L, 1);
    return want;
}

/* The first stack index past a spec's required arguments (t, a required
 * out, a root): where its options may come. */
static int first_optional(const coll_spec *spec)
{
    int last = 2;
    if (spec->out_arg && !spec->out_optional && spec->out_arg > last)
        last = spec->out_arg;
    if (spec->rank_arg > last)
        last = spec->rank_arg;
    return last + 1;
}

/* A routed collective's last argument {algo=}, after its required ones:
 * taken off the stack (the positional arguments before it keep their
 * places; a table where a tensor must be stays the tensor's error). */
static enum gcsh_route_want take_route_option(lua_State *L, const coll_spec *spec)
{
    int top = lua_gettop(L);
    if (spec->routed < 0 || top < first_optional(spec) || lua_type(L, top) != LUA_TTABLE)
        return GCSH_ROUTE_AUTO;
    enum gcsh_route_want want = gcsh_comm_route_option(L, top, spec->name);
    lua_settop(L, top - 1);
    return want;
}

/* The route of a checked call: the router's (which may grow its staging
 * window now, collectively), or the communicator's library unlabelled. */
static const gcsh_comm_router *route(lua_State *L, const coll_spec *spec, const coll_args *a,
                                     enum gcsh_route_want want, gcsh_comm_call *call,
                                     gcsh_comm_route *r)
{
    memset(r, 0, sizeof *r);
    const gcsh_comm_router *router = spec->routed >= 0 ? router_of(L) : NULL;
    if (!router)
        return NULL;
    *call = (gcsh_comm_call){
        .name = spec->name, .coll = spec->routed, .comm = a->comm, .comm_idx = 1, .in = a->in,
        .out = a->out, .count = a->count, .dt = a->dt, .op = a->op,
        .root = a->rank_arg_value, .want = want,
    };
    router->prepare(L, call, r);
    return router;
}

static int run_routed(gcsh_ctx *ctx, lua_State *L, const coll_spec *spec, const coll_args *a,
                      const gcsh_comm_router *router, const gcsh_comm_call *call,
                      const gcsh_comm_route *r)
{
    return r->kernel ? router->run(L, call, r) : spec->run(ctx, a);
}

/* c:<name>(...): the collective coll_specs[upvalue 1] is. */
static int collective(lua_State *L)
{
    const coll_spec *spec = &coll_specs[lua_tointeger(L, lua_upvalueindex(1))];
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    enum gcsh_route_want want = take_route_option(L, spec);
    coll_args a;
    int result_idx = check_collective(L, spec, &a);
    gcsh_comm_call call;
    gcsh_comm_route r;
    const gcsh_comm_router *router = route(L, spec, &a, want, &call, &r);
    gcsh_fingerprint fp;
    fingerprint(spec, &a, r.label[0] ? r.label : spec->name, &fp);
    gcsh_check_enter(L, &a.comm->chk, &fp);
    gcsh_check_leave(L, &a.comm->chk, run_routed(ctx, L, spec, &a, router, &call, &r));
    lua_pushvalue(L, result_idx);
    return 1;
}

/* c:loop(name, iters, t, ...): the reference that bench measures the Lua
 * loop against: collective `name` run iters times from C with the arguments
 * its method takes, checked once, no Lua between calls.  Returns the seconds
 * between the backend's timer marks around the loop (events on cuda). */
static int comm_loop(lua_State *L)
{
    const char *name = luaL_checkstring(L, 2);
    lua_Integer iters = luaL_checkinteger(L, 3);
    luaL_argcheck(L, iters >= 1 && iters <= 1000000000, 2, "iters must be 1..1e9");
    const coll_spec *spec = NULL;
    luaL_Buffer valid;
    luaL_buffinit(L, &valid);
    for (size_t i = 0; i < NCOLLS; i++) {
        if (strcmp(coll_specs[i].name, name) == 0)
            spec = &coll_specs[i];
        luaL_addstring(&valid, i ? " " : "");
        luaL_addstring(&valid, coll_specs[i].name);
    }
    luaL_pushresult(&valid);
    if (!spec)
        return luaL_argerror(L, 1, lua_pushfstring(L, "unknown collective '%s' (valid: %s)", name,
                                                   lua_tostring(L, -1)));
    lua_pop(L, 1);
    gcsh_graph_refuse_now(L, "c:loop()", "it times the loop on the host");
    lua_remove(L, 2); /* the stack is now what the collective's method sees */
    lua_remove(L, 2);
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    enum gcsh_route_want want = take_route_option(L, spec);
    coll_args a;
    check_collective(L, spec, &a);
    gcsh_comm_call call;
    gcsh_comm_route r;
    const gcsh_comm_router *router = route(L, spec, &a, want, &call, &r);
    /* checked once for the whole loop: the loop is what bench measures */
    char op[sizeof r.label + 8];
    snprintf(op, sizeof op, "loop %s", r.label[0] ? r.label : spec->name);
    gcsh_fingerprint fp;
    fingerprint(spec, &a, op, &fp);
    snprintf(fp.extra, sizeof fp.extra, "iters %lld", (long long)iters);
    gcsh_check_enter(L, &a.comm->chk, &fp);
    void *tok;
    double seconds = 0;
    int p2p = fp.kind != GCSH_FP_COLLECTIVE, send = fp.kind == GCSH_FP_SEND;
    if (p2p) /* the check counted one send or recv: all of them, said before they run */
        gcsh_check_loop_issues(ctx, &a.comm->chk, &fp, (int64_t)iters - 1);
    int rc = ctx->be->mem->timer_begin(ctx, &tok);
    lua_Integer issued = 0;
    while (issued < iters && rc == 0) {
        rc = run_routed(ctx, L, spec, &a, router, &call, &r);
        issued++;
    }
    if (p2p && issued < iters) /* (stopped by a failure: the rest never ran) */
        gcsh_check_p2p_issued(ctx, &a.comm->chk, send, fp.root, issued - iters);
    if (rc == 0)
        rc = ctx->be->mem->timer_end(ctx, tok, &seconds);
    gcsh_check_leave(L, &a.comm->chk, rc);
    lua_pushnumber(L, seconds);
    return 1;
}

/* Every row of coll_specs becomes a method of comm. */
static void add_collectives(lua_State *L)
{
    luaL_getmetatable(L, GCSH_COMM_MT);
    lua_getfield(L, -1, "__methods");
    for (size_t i = 0; i < NCOLLS; i++) {
        lua_pushinteger(L, (lua_Integer)i);
        lua_pushcclosure(L, collective, 1);
        lua_setfield(L, -2, coll_specs[i].name);
    }
    lua_pop(L, 2);
}

/* ---- registration -------------------------------------------------------- */

/* c:agree carries strings up to this size (a control exchange, not data). */
#define AGREE_MAX_BYTES ((size_t)16 << 20)

/* What c:agree gathered: every rank's length, then the strings padded to
 * the longest, in rank order (malloc'ed: released on every path). */
typedef struct agreed {
    size_t size, longest;
    const uint64_t *lens;
    char *all;
} agreed;

/* The second exchange of c:agree: s padded to the longest length. */
static int exchange_strings(gcsh_ctx *ctx, lcomm *lc, const char *s, size_t len, agreed *out)
{
    char *padded = calloc(1, out->longest ? out->longest : 1);
    out->all = malloc(out->size * out->longest + 1);
    int rc = -1;
    if (!padded || !out->all)
        gcsh_set_error(ctx, "agree: out of host memory for %zu bytes",
                       out->size * out->longest);
    else {
        memcpy(padded, s, len);
        rc = out->longest ? ctx->be->comm->agree(ctx, lc->impl, padded, out->all, out->longest)
                          : 0;
    }
    free(padded);
    if (rc != 0) {
        free(out->all);
        out->all = NULL;
    }
    return rc;
}

static int push_agreed(lua_State *L)
{
    const agreed *a = lua_touserdata(L, 1);
    lua_createtable(L, (int)a->size, 0);
    for (size_t r = 0; r < a->size; r++) {
        lua_pushlstring(L, a->all + r * a->longest, (size_t)a->lens[r]);
        lua_rawseti(L, -2, (lua_Integer)r + 1);
    }
    return 1;
}

/* c:agree(s): collective and checked like any collective (a rank that does
 * not come is named, not waited for); every rank's string, in rank order
 * (index rank+1).  Runs on the backend's control exchange (host memory,
 * interruptible), so it also serves show() for device memory. */
static int comm_agree(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    lcomm *lc = gcsh_arg_comm(L, 1);
    gcsh_graph_refuse_now(L, "c:agree()", "it exchanges host memory now");
    size_t len;
    const char *s = luaL_checklstring(L, 2, &len);
    agreed a = {.size = (size_t)lc->size};
    uint64_t mine = len, *lens = lua_newuserdatauv(L, a.size * sizeof *lens, 0);
    a.lens = lens;
    gcsh_fingerprint fp; /* the strings differ by design: only the call is compared */
    gcsh_fp_init(&fp, &lc->chk, "agree");
    gcsh_check_enter(L, &lc->chk, &fp);
    int rc = ctx->be->comm->agree(ctx, lc->impl, &mine, lens, sizeof mine);
    for (size_t r = 0; rc == 0 && r < a.size; r++)
        a.longest = lens[r] > a.longest ? lens[r] : a.longest;
    /* every rank sees the same lengths, so this refusal is collective */
    int too_long = rc == 0 && a.longest > AGREE_MAX_BYTES;
    if (rc == 0 && !too_long)
        rc = exchange_strings(ctx, lc, s, len, &a);
    gcsh_check_leave(L, &lc->chk, rc);
    if (too_long)
        return luaL_error(L, "agree: a rank's string has %I bytes, more than the %I this "
                             "control exchange carries",
                          (lua_Integer)a.longest, (lua_Integer)AGREE_MAX_BYTES);
    lua_pushcfunction(L, push_agreed);
    lua_pushlightuserdata(L, &a);
    int st = lua_pcall(L, 1, 1, 0);
    free(a.all);
    return st == LUA_OK ? 1 : lua_error(L);
}

/* c:translate(r [, other]): c's rank r as a rank of other, or of the
 * session (the world's ranks) without other; nil when that rank is not a
 * member of other (MPI_Group_translate_ranks).  Local: from the world rank
 * of every member, which each communicator keeps for its checks. */
static int comm_translate(lua_State *L)
{
    lcomm *lc = check_open(L, 1);
    lua_Integer r = luaL_checkinteger(L, 2);
    if (r < 0 || r >= lc->size)
        luaL_argerror(L, 2, lua_pushfstring(L, "rank %I out of range (the comm has ranks 0..%d)",
                                            r, lc->size - 1));
    lcomm *other = lua_isnoneornil(L, 3) ? NULL : check_open(L, 3);
    if (!lc->chk.members || (other && !other->chk.members))
        return luaL_error(L, "translate: the %s backend did not say who the communicator's "
                             "members are",
                          gcsh_ctx_of(L)->be->name);
    int world = lc->chk.members[r];
    if (!other) {
        lua_pushinteger(L, world);
        return 1;
    }
    for (int i = 0; i < other->size; i++)
        if (other->chk.members[i] == world) {
            lua_pushinteger(L, i);
            return 1;
        }
    lua_pushnil(L);
    return 1;
}

static const luaL_Reg meth[] = {
    {"split", comm_split},
    {"translate", comm_translate},
    {"barrier", comm_barrier},
    {"loop", comm_loop},
    {"agree", comm_agree},
    {"free", comm_free},
    {NULL, NULL},
};

static const luaL_Reg metameth[] = {
    {"__index", NULL}, /* placeholder, set below with the methods as upvalue */
    {"__gc", comm_gc},
    {"__close", comm_free},
    {"__tostring", comm_tostring},
    {NULL, NULL},
};

static const luaL_Reg funcs[] = {
    {"world", comm_world},
    {NULL, NULL},
};

void gcsh_comm_close(lua_State *L)
{
    comm_list *l = open_list(L);
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    while (l && l->head) {
        comm_entry *e = l->head;
        lcomm *lc = e->lc;
        gcsh_comm_impl *impl = lc ? lc->impl : e->impl;
        /* every member is here, releasing its communicators in creation
         * order; one that does not come fails the barrier (an interrupt,
         * an abort), and then nobody is waited for */
        if (impl && !is_aborted(ctx, lc, impl) && ops_of(ctx)->barrier(ctx, impl) != 0)
            ops_of(ctx)->abort(ctx, impl);
        if (lc && lc->impl) {
            release(L, ctx, lc); /* unlinks e */
        } else {
            if (impl)
                ops_of(ctx)->release(ctx, impl);
            if (lc)
                lc->entry = NULL;
            list_drop(L, e);
        }
    }
}

int luaopen_gcsh_comm(lua_State *L)
{
    if (!open_list(L))
        open_list_new(L);
    gcsh_new_type(L, GCSH_COMM_MT, meth, metameth, comm_index);
    add_collectives(L);
    luaL_newlib(L, funcs);
    return 1;
}
