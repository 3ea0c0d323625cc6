/* The "persistent" Lua type: a persistent all-reduce, one resident worker per
 * rank over a window (core/kpersist.h; host: a progress thread, cuda: a
 * kernel that stays on the GPU), rung by the host instead of launched.
 *
 *   p = kernel.persistent(w [, {algo="ll", max_bytes=, sms=1}])
 *       collective over w's team (checked): starts the resident.  max_bytes:
 *       the largest region a call carries (default and bound: what the
 *       window's LL area holds, min(window bytes, kernel.ll_max_bytes));
 *       sms: blocks of the resident kernel (cuda; the host runs one thread).
 *   p:allreduce([{op="sum", offset=0, n=, dtype=w.dtype}])
 *       collective (checked, like every kernel collective): rings the
 *       doorbell and returns the view of my region at once.  Stream-ordered
 *       in meaning: the call runs after the rank's earlier work, and any
 *       later work, host read of memory, gcsh.sync() or p:wait() waits for it.
 *       n defaults to the rest of the window from offset, which must fit in
 *       max_bytes.
 *   p:wait()   waits until every call rung so far completed
 *   p:stop()   (and <close>) waits for the calls, then ends the resident;
 *              p:free() too; __gc ends it without waiting
 *   p.calls p.done p.busy p.running p.stopped (why, or nil) p.window p.algo
 *   p.max_bytes p.sms
 *
 * It stops by itself when its communicator is aborted (an interrupt with
 * calls in flight, .abort, a failed collective on any rank), and at the end
 * of the session; its window cannot be freed while it runs.
 *
 * The ring entries' encoding (core/kpersist.h), for step.persistent, which
 * shows a call rung, looked at and done one step at a time:
 *   kernel.persistent_entry(call, {offset=, n=, dtype=, op=})
 *       -> {pair0, pair1, pair2, pair3}: each the word | tag << 32, the tag
 *       call + 1 (call counts from 0)
 *   kernel.persistent_job(call, {pair0, ..., pair3})
 *       -> {offset=, n=, dtype=, op=}, or nil when a pair does not carry
 *       call's tag yet (what the resident reads)
 *   kernel.persistent_depth  the ring's entries (GCSH_PERSIST_DEPTH) */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "bind/graph.h"
#include "bind/kernel.h"
#include "bind/opts.h"
#include "bind/persist.h"
#include "bind/users.h"
#include "core/kll.h"
#include "core/kpersist.h"
#include "wire/faults.h"
#include "wire/out.h"

#define PERSIST_MT "persistent"
/* Registry: the rank's persistent handles (weak keys), for the window's
 * free and the end of the session. */
#define PERSISTS_KEY "gcsh.persistents"
#define COUNT_KEY "gcsh.persistents.count"

typedef struct lpersist {
    gcsh_persist_impl *impl; /* NULL once freed */
    gcsh_symobj *o;          /* the window (its handle is the uservalue) */
    uint64_t id;             /* the communicator's sequence number at start: equal everywhere */
    lua_Integer number;      /* #1, #2, ... on this rank, for people */
    size_t max_bytes;
    int sms;
    char where[80];          /* where kernel.persistent was called */
    int rung_in_command;     /* p:allreduce() ran in the running command */
    int loss_reported;       /* an interrupted command stopped it: its error said so */
} lpersist;

static const gcsh_persist_ops *persist_ops(lua_State *L)
{
    return gcsh_ctx_of(L)->be->persist;
}

static const char *persist_name(lua_State *L, const lpersist *p)
{
    return lua_pushfstring(L, "persistent #%I (started at %s)", p->number, p->where);
}

/* Calls rung from graphs count as calls once they ran (cuda: the host
 * never sees them rung; a host replay rings as the host does). */
static void state_of(lua_State *L, const lpersist *p, gcsh_persist_state *s)
{
    memset(s, 0, sizeof *s);
    if (p->impl)
        persist_ops(L)->state(p->impl, s);
    else
        snprintf(s->why, sizeof s->why, "freed (p:free())");
    s->rung += s->graph_done;
    s->done += s->graph_done;
}

/* The handle at idx, its resident running; a communicator aborted
 * meanwhile stops it first. */
static lpersist *check_running(lua_State *L, int idx, const char *fname)
{
    lpersist *p = luaL_checkudata(L, idx, PERSIST_MT);
    if (!p->impl)
        luaL_error(L, "%s: attempt to use a freed persistent all-reduce", fname);
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (p->o->comm->chk.aborted)
        persist_ops(L)->stop(ctx, p->impl, 0);
    gcsh_persist_state s;
    state_of(L, p, &s);
    if (!s.running)
        luaL_error(L, "%s: %s is stopped: %s", fname, persist_name(L, p), s.why);
    return p;
}

/* ---- the rank's handles ------------------------------------------------------ */

static void remember(lua_State *L, int idx)
{
    if (lua_getfield(L, LUA_REGISTRYINDEX, PERSISTS_KEY) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_createtable(L, 0, 1);
        lua_pushliteral(L, "k");
        lua_setfield(L, -2, "__mode");
        lua_setmetatable(L, -2);
        lua_pushvalue(L, -1);
        lua_setfield(L, LUA_REGISTRYINDEX, PERSISTS_KEY);
    }
    lua_pushvalue(L, idx);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
    lua_pop(L, 1);
}

/* Calls fn on every handle with a resident (stopped or not); fn may raise. */
static void for_each_handle(lua_State *L, void (*fn)(lua_State *, lpersist *, const void *),
                            const void *arg)
{
    if (lua_getfield(L, LUA_REGISTRYINDEX, PERSISTS_KEY) != LUA_TTABLE) {
        lua_pop(L, 1);
        return;
    }
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pop(L, 1);
        lpersist *p = luaL_testudata(L, -1, PERSIST_MT);
        if (p && p->impl)
            fn(L, p, arg);
    }
    lua_pop(L, 1);
}

/* A running resident is a user of its window (users.h): the window's
 * free is refused, and so is anything that needs the window to itself
 * (another resident, a kernel's out= on its LL area). */
static int persist_refuses(lua_State *L, int idx, const char *what, int exclusive)
{
    (void)exclusive;
    const lpersist *p = lua_touserdata(L, idx);
    gcsh_persist_state s;
    state_of(L, p, &s);
    if (!p->impl || !s.running)
        return 0;
    lua_pushfstring(L, "%s: %s runs on it (its resident reads and writes the window); "
                       "p:stop() it first", what, persist_name(L, p));
    lua_remove(L, -2); /* the name */
    return 1;
}

static const gcsh_user_kind persist_user = {persist_refuses};

static void stop_now(lua_State *L, lpersist *p, const void *arg)
{
    (void)arg;
    persist_ops(L)->stop(gcsh_ctx_of(L), p->impl, 0);
}

void gcsh_persist_stop_all(lua_State *L)
{
    for_each_handle(L, stop_now, NULL);
}

/* Calls stopped in flight on this rank are calls its peers' residents may
 * wait in forever (the interrupt can land after one rank passed a call's
 * check and before another did): the communicator goes, on every rank, and
 * the residents on it with it. */
static void abort_for_lost_calls(lua_State *L, lpersist *p, uint64_t lost)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    char note[200];
    int n = snprintf(note, sizeof note,
                     "gcsh: persistent #%lld stopped with %llu call%s in flight:\n"
                     "gcsh: its communicator is aborted everywhere; comm.world() makes a fresh "
                     "one\n",
                     (long long)p->number, (unsigned long long)lost, lost == 1 ? "" : "s");
    if (ctx->cap) /* with the rank's other errors, folded on rank 0's stderr */
        gcsh_capture_write(ctx->cap, GCSH_STDERR, note, (size_t)n);
    gcsh_check_abort_comm(ctx, &p->o->comm->chk);
}

static void end_command(lua_State *L, lpersist *p, const void *arg)
{
    if (*(const int *)arg && p->rung_in_command) {
        gcsh_persist_state s;
        state_of(L, p, &s);
        persist_ops(L)->stop(gcsh_ctx_of(L), p->impl, 0);
        p->loss_reported = 1;
        if (s.running && s.done < s.rung && !p->o->comm->chk.aborted)
            abort_for_lost_calls(L, p, s.rung - s.done);
    }
    p->rung_in_command = 0;
}

void gcsh_persist_command_end(lua_State *L, int interrupted)
{
    for_each_handle(L, end_command, &interrupted);
}

/* The touch hook (users.h): host reads and writes of memory wait for the
 * rank's residents (the backend's drain; none where its stream orders
 * them). */
static void persist_drain(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    const gcsh_persist_ops *ops = ctx->be ? ctx->be->persist : NULL;
    if (ops && ops->drain && ops->drain(ctx) != 0)
        gcsh_raise(L, ctx);
}

/* ---- kernel.persistent ---------------------------------------------------------- */

static lua_Integer opt_bounded(lua_State *L, int idx, const char *key, lua_Integer def,
                               lua_Integer max, const char *why)
{
    lua_Integer v = def;
    if (lua_getfield(L, idx, key) != LUA_TNIL) {
        int ok;
        v = lua_tointegerx(L, -1, &ok);
        if (!ok || v < 1 || v > max)
            luaL_error(L, "persistent: %s must be an integer 1..%I (%s), got %s", key, max, why,
                       luaL_tolstring(L, -1, NULL));
    }
    lua_pop(L, 1);
    return v;
}

/* Reads {algo, max_bytes, sms} at idx into p. */
static void read_start_options(lua_State *L, int idx, lpersist *p)
{
    size_t cap = gcsh_ll_capacity(gcsh_kern_window_bytes(p->o));
    p->max_bytes = cap;
    p->sms = 1;
    if (!gcsh_opts_check(L, idx, "persistent", "algo max_bytes sms"))
        return;
    if (lua_getfield(L, idx, "algo") != LUA_TNIL && strcmp(luaL_checkstring(L, -1), "ll") != 0)
        luaL_error(L, "persistent: unknown algo '%s' (valid: ll)", lua_tostring(L, -1));
    lua_pop(L, 1);
    p->max_bytes = (size_t)opt_bounded(L, idx, "max_bytes", (lua_Integer)cap, (lua_Integer)cap,
                                       "what the window's LL area holds: min(window bytes, "
                                       "kernel.ll_max_bytes)");
    p->sms = (int)opt_bounded(L, idx, "sms", 1, GCSH_PERSIST_MAX_SMS,
                              "blocks of the resident kernel");
}

static gcsh_comm_check *enter_start_check(lua_State *L, const lpersist *p)
{
    gcsh_comm_check *cc = &p->o->comm->chk;
    gcsh_fingerprint fp;
    gcsh_fp_init(&fp, cc, "kernel.persistent");
    snprintf(fp.extra, sizeof fp.extra, "ll");
    fp.count = (int64_t)p->max_bytes;
    fp.offset = p->sms;
    fp.window = p->o->seq;
    fp.dtype = (int32_t)p->o->dtype;
    gcsh_check_enter(L, cc, &fp);
    return cc;
}

static int kernel_persistent(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_symobj *o = gcsh_karg_comm_window(L, 1, "persistent", "c:allreduce");
    if (!ctx->be->persist)
        return luaL_error(L, "persistent: not available on the %s backend", ctx->be->name);
    gcsh_graph_refuse_now(L, "kernel.persistent", "start it before the capture");
    /* one resident a window: two would run calls on its LL area at once */
    gcsh_users_refuse_shared(L, o, "kernel.persistent");
    lua_settop(L, 2);
    lpersist *p = lua_newuserdatauv(L, sizeof *p, 1);
    memset(p, 0, sizeof *p);
    luaL_setmetatable(L, PERSIST_MT);
    int h = lua_gettop(L);
    p->o = o;
    read_start_options(L, 2, p);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, h, 1); /* the window stays while p does */
    gcsh_lua_where(L, p->where, sizeof p->where);
    gcsh_comm_check *cc = enter_start_check(L, p);
    p->id = cc->seq;
    gcsh_persist_args a = {
        .ll_off = gcsh_kern_ll_offset(L, o), .window_bytes = gcsh_kern_window_bytes(o),
        .slots = gcsh_ll_slots(o->comm->size), .max_bytes = p->max_bytes, .sms = p->sms, .dt = o->dtype,
        .comm = o->comm_impl,
    };
    gcsh_check_leave(L, cc, ctx->be->persist->start(ctx, o->impl, &o->desc, &a, &p->impl));
    p->number = gcsh_registry_count(L, COUNT_KEY);
    remember(L, h);
    gcsh_users_add(L, o, h, &persist_user);
    lua_settop(L, h);
    return 1;
}

/* ---- p:allreduce ------------------------------------------------------------------ */

/* The call's dtype: the window's (dtype= may say so, and nothing else). */
static void check_dtype_option(lua_State *L, int idx, const gcsh_symobj *o)
{
    if (lua_isnoneornil(L, idx) || lua_getfield(L, idx, "dtype") == LUA_TNIL) {
        if (!lua_isnoneornil(L, idx))
            lua_pop(L, 1);
        return;
    }
    gcsh_dtype dt = gcsh_arg_dtype(L, lua_gettop(L), o->dtype);
    if (dt != o->dtype)
        luaL_error(L, "allreduce: dtype must be the window's (%s), got %s: a persistent "
                      "all-reduce reduces the window's elements (make a window of %s)",
                   gcsh_dtype_name(o->dtype), gcsh_dtype_name(dt), gcsh_dtype_name(dt));
    lua_pop(L, 1);
}

static gcsh_comm_check *enter_ring_check(lua_State *L, const lpersist *p, const gcsh_kargs *a)
{
    gcsh_comm_check *cc = &p->o->comm->chk;
    gcsh_fingerprint fp;
    gcsh_fp_init(&fp, cc, "persistent.allreduce");
    snprintf(fp.extra, sizeof fp.extra, "persistent@%llu", (unsigned long long)p->id);
    fp.count = (int64_t)a->n;
    fp.offset = (int64_t)a->offset;
    fp.window = p->o->seq;
    fp.dtype = (int32_t)p->o->dtype;
    fp.redop = (int32_t)a->op;
    gcsh_check_enter(L, cc, &fp);
    return cc;
}

static int persist_allreduce(lua_State *L)
{
    lpersist *p = check_running(L, 1, "allreduce");
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_kargs a = {.fname = "allreduce", .o = p->o};
    gcsh_check_intent(L, &p->o->comm->chk, 0);
    gcsh_karg_read(L, 2, &a, "op offset n dtype");
    check_dtype_option(L, 2, p->o);
    gcsh_karg_dtype_op(L, a.fname, p->o->dtype, a.op, gcsh_kern_ops_of(p->o->dtype),
                       "the kernels");
    size_t es = gcsh_dtype_size(p->o->dtype);
    if (a.n * es > p->max_bytes)
        luaL_error(L, "allreduce: n must be 1..%I for this persistent all-reduce (max_bytes %I "
                      "holds %I %s), got n = %I",
                   (lua_Integer)(p->max_bytes / es), (lua_Integer)p->max_bytes,
                   (lua_Integer)(p->max_bytes / es), gcsh_dtype_name(p->o->dtype),
                   (lua_Integer)a.n);
    /* captured: the graph keeps p (its free is refused while the graph
     * lives) and rings it at every replay (backend.h) */
    gcsh_graph_keep(L, 1, p, NULL);
    gcsh_persist_call c = {a.offset, a.n, p->o->dtype, a.op};
    gcsh_comm_check *cc = enter_ring_check(L, p, &a);
    if (!ctx->graph)
        p->rung_in_command = 1;
    gcsh_check_leave(L, cc, ctx->be->persist->ring(ctx, p->impl, &c));
    gcsh_symobj *o = p->o;
    gcsh_push_tensor(L, o->slices[o->desc.team_rank], a.offset, a.n, o->dtype);
    return 1;
}

/* ---- wait, stop, free ------------------------------------------------------------- */

static int persist_wait(lua_State *L)
{
    lpersist *p = luaL_checkudata(L, 1, PERSIST_MT);
    if (!p->impl)
        return luaL_error(L, "wait: attempt to use a freed persistent all-reduce");
    gcsh_graph_refuse_now(L, "p:wait()", "the host would wait for what the capture does not run");
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (persist_ops(L)->wait(ctx, p->impl) != 0)
        return gcsh_raise(L, ctx);
    return 0;
}

static int persist_stop(lua_State *L)
{
    lpersist *p = luaL_checkudata(L, 1, PERSIST_MT);
    if (!p->impl)
        return 0;
    gcsh_graph_refuse_now(L, "p:stop()", "stop it after the capture");
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (persist_ops(L)->stop(ctx, p->impl, 1) != 0 && !p->loss_reported)
        return gcsh_raise(L, ctx);
    return 0;
}

/* p is the handle at idx. */
static void release(lua_State *L, lpersist *p, int idx)
{
    if (p->impl) {
        persist_ops(L)->release(gcsh_ctx_of(L), p->impl);
        p->impl = NULL;
        gcsh_users_remove(L, p->o, idx);
    }
}

/* Stops and releases, whatever the stop says: a free that raised before
 * releasing left the resident's window unfreeable.  Calls lost to an abort
 * of the communicator were reported with the abort, and calls lost to an
 * interrupt with the interrupted command, so only calls lost otherwise
 * make the free an error (after the release). */
static int persist_free(lua_State *L)
{
    lpersist *p = luaL_checkudata(L, 1, PERSIST_MT);
    if (!p->impl)
        return 0;
    gcsh_graph_refuse_now(L, "p:free()", "free it after the capture");
    gcsh_users_refuse(L, p, "p:free()"); /* a live graph that rings it */
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    int lost = persist_ops(L)->stop(ctx, p->impl, 1) != 0 && !p->o->comm->chk.aborted &&
               !p->loss_reported;
    char why[sizeof ctx->err];
    snprintf(why, sizeof why, "%s", ctx->err);
    release(L, p, 1);
    if (lost) {
        snprintf(ctx->err, sizeof ctx->err, "%s", why);
        return gcsh_raise(L, ctx);
    }
    return 0;
}

static int persist_gc(lua_State *L)
{
    release(L, luaL_checkudata(L, 1, PERSIST_MT), 1);
    return 0;
}

/* ---- fields ---------------------------------------------------------------------- */

static int persist_tostring(lua_State *L)
{
    lpersist *p = luaL_checkudata(L, 1, PERSIST_MT);
    if (!p->impl) {
        lua_pushfstring(L, "persistent #%I (freed)", p->number);
        return 1;
    }
    gcsh_persist_state s;
    state_of(L, p, &s);
    char bytes[32];
    gcsh_format_bytes(p->max_bytes, bytes, sizeof bytes);
    lua_pushfstring(L, "persistent #%I (ll on window #%I, up to %s a call, %d sm%s): ",
                    p->number, (lua_Integer)p->o->seq, bytes, p->sms, p->sms == 1 ? "" : "s");
    if (s.running)
        lua_pushfstring(L, "running, %I calls, %I in flight", (lua_Integer)s.rung,
                        (lua_Integer)(s.rung - s.done));
    else
        lua_pushfstring(L, "stopped after %I calls: %s", (lua_Integer)s.done, s.why);
    lua_concat(L, 2);
    return 1;
}

static int push_field(lua_State *L, const lpersist *p, const char *key)
{
    gcsh_persist_state s;
    state_of(L, p, &s);
    if (strcmp(key, "calls") == 0)
        lua_pushinteger(L, (lua_Integer)s.rung);
    else if (strcmp(key, "done") == 0)
        lua_pushinteger(L, (lua_Integer)s.done);
    else if (strcmp(key, "busy") == 0)
        lua_pushboolean(L, s.running && s.done < s.rung);
    else if (strcmp(key, "running") == 0)
        lua_pushboolean(L, s.running);
    else if (strcmp(key, "stopped") == 0)
        s.running ? lua_pushnil(L) : (void)lua_pushstring(L, s.why);
    else if (strcmp(key, "window") == 0)
        lua_getiuservalue(L, 1, 1);
    else if (strcmp(key, "algo") == 0)
        lua_pushliteral(L, "ll");
    else if (strcmp(key, "max_bytes") == 0)
        lua_pushinteger(L, (lua_Integer)p->max_bytes);
    else if (strcmp(key, "sms") == 0)
        lua_pushinteger(L, p->sms);
    else
        return 0;
    return 1;
}

/* Methods first: p:allreduce() is the hot path (a ring costs about a
 * microsecond), and the fields ask the backend for the resident's state. */
static int persist_index(lua_State *L)
{
    lpersist *p = luaL_checkudata(L, 1, PERSIST_MT);
    lua_pushvalue(L, 2);
    if (lua_gettable(L, lua_upvalueindex(1)) != LUA_TNIL) /* a method */
        return 1;
    lua_pop(L, 1);
    const char *key = lua_tostring(L, 2);
    if (key && push_field(L, p, key))
        return 1;
    lua_pushnil(L);
    return 1;
}

/* ---- the ring entries' encoding ----------------------------------------------------- */

static uint64_t check_call(lua_State *L, const char *fname)
{
    lua_Integer call = luaL_checkinteger(L, 1);
    if (call < 0 || call >= (lua_Integer)UINT32_MAX)
        luaL_error(L, "%s: call must be 0..%I, got %I", fname, (lua_Integer)UINT32_MAX - 1, call);
    return (uint64_t)call;
}

static int kernel_persistent_entry(lua_State *L)
{
    uint64_t call = check_call(L, "persistent_entry");
    luaL_checktype(L, 2, LUA_TTABLE);
    gcsh_opts_check(L, 2, "persistent_entry", "dtype n offset op");
    gcsh_persist_job j = {0};
    lua_getfield(L, 2, "offset");
    j.offset = (uint64_t)luaL_optinteger(L, -1, 0);
    lua_getfield(L, 2, "n");
    lua_Integer n = luaL_checkinteger(L, -1);
    if (n < 1 || n > (lua_Integer)UINT32_MAX)
        luaL_error(L, "persistent_entry: n must be 1..%I, got %I", (lua_Integer)UINT32_MAX, n);
    j.n = (uint64_t)n;
    lua_getfield(L, 2, "dtype");
    j.dt = gcsh_dtype_from_name(luaL_optstring(L, -1, "f32"));
    if (j.dt < 0)
        luaL_error(L, "persistent_entry: dtype must be one of %s", gcsh_dtype_names());
    lua_getfield(L, 2, "op");
    j.op = gcsh_redop_from_name(luaL_optstring(L, -1, "sum"));
    if (j.op < 0)
        luaL_error(L, "persistent_entry: op must be one of %s", gcsh_redop_names());
    lua_settop(L, 2);
    lua_createtable(L, 4, 0);
    for (int i = 0; i < 4; i++) {
        lua_pushinteger(L, (lua_Integer)gcsh_persist_pair(&j, call, i));
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

static int kernel_persistent_job(lua_State *L)
{
    uint64_t call = check_call(L, "persistent_job");
    luaL_checktype(L, 2, LUA_TTABLE);
    uint32_t w[8];
    for (int i = 0; i < 4; i++) {
        lua_geti(L, 2, i + 1);
        uint64_t pair = (uint64_t)luaL_checkinteger(L, -1);
        lua_pop(L, 1);
        w[2 * i] = (uint32_t)pair;
        w[2 * i + 1] = (uint32_t)(pair >> 32);
    }
    gcsh_persist_job j;
    if (!gcsh_persist_unpack(w, call, &j)) {
        lua_pushnil(L);
        return 1;
    }
    lua_createtable(L, 0, 4);
    lua_pushinteger(L, (lua_Integer)j.offset);
    lua_setfield(L, -2, "offset");
    lua_pushinteger(L, (lua_Integer)j.n);
    lua_setfield(L, -2, "n");
    lua_pushstring(L, gcsh_dtype_name((gcsh_dtype)j.dt));
    lua_setfield(L, -2, "dtype");
    lua_pushstring(L, gcsh_redop_name((gcsh_redop)j.op));
    lua_setfield(L, -2, "op");
    return 1;
}

static const luaL_Reg meth[] = {
    {"allreduce", persist_allreduce},
    {"wait", persist_wait},
    {"stop", persist_stop},
    {"free", persist_free},
    {NULL, NULL},
};

static const luaL_Reg metameth[] = {
    {"__gc", persist_gc},
    {"__close", persist_stop},
    {"__tostring", persist_tostring},
    {NULL, NULL},
};

int luaopen_gcsh_persistent(lua_State *L)
{
    gcsh_new_type(L, PERSIST_MT, meth, metameth, persist_index);
    gcsh_users_on_touch(L, persist_drain);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    if (lua_getfield(L, -1, "kernel") == LUA_TTABLE) {
        lua_pushcfunction(L, kernel_persistent);
        lua_setfield(L, -2, "persistent");
        lua_pushcfunction(L, kernel_persistent_entry);
        lua_setfield(L, -2, "persistent_entry");
        lua_pushcfunction(L, kernel_persistent_job);
        lua_setfield(L, -2, "persistent_job");
        lua_pushinteger(L, GCSH_PERSIST_DEPTH);
        lua_setfield(L, -2, "persistent_depth");
    }
    lua_pop(L, 2);
    return 0;
}
