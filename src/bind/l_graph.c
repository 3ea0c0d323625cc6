/* The "graph" Lua type: gcsh.graph(fn) captures what fn issues on this rank,
 * g:replay([n]) launches it n times, g:free() (also __gc and __close,
 * idempotently) releases it.
 *
 * Capture (core/graph.h): fn runs once with the rank's backend table
 * replaced by the capture layer's, so nothing runs (as in CUDA stream
 * capture, on both backends): capturable calls are recorded (cuda: the
 * stream captures them), anything that must reach the host now is refused
 * by name, and the capture is abandoned, leaving the shell as it was.  The
 * collective checks run during the capture as for direct calls, so ranks
 * that captured different collectives get the usual error, naming them.
 *
 * Replay: one checked operation per communicator the graph's collectives
 * use ("graph.replay", with n and the graph's collective count: ranks that
 * replay differently are told so before anything runs), and the sequence
 * numbers of those communicators advance by every collective replayed, so
 * later checks and traces count them.  The launch runs inside the last
 * check, so an interrupt or a failure there aborts that communicator as a
 * direct collective would.  Sends and recvs a graph holds run unchecked
 * from C: before they run, rank 0's checker is told which (their captured
 * fingerprints and counts, collcheck.h), so a peer's checked call meets
 * the replayed one of its count.  A graph is local to its rank: free needs
 * no other rank. */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "bind/graph.h"
#include "bind/opts.h"
#include "bind/users.h"
#include "core/gcsh.h"
#include "core/graph.h"
#include "trace/trace.h"
#include "wire/collcheck.h"

#define USES_KEY "gcsh.graph.capture"  /* registry: the uses of the capture running */
#define COUNT_KEY "gcsh.graph.count"   /* registry: graphs made on this rank */

typedef struct lgraph {
    gcsh_graph_impl *impl;     /* NULL when closed */
    const gcsh_graph_rec *rec; /* the backend's, valid while impl is */
    lua_Integer id;            /* #1, #2 ... on this rank */
    uint64_t replays;
    char where[80];            /* where gcsh.graph was called */
} lgraph;

/* ---- what a graph uses ------------------------------------------------------ */

static void keep_key(lua_State *L, int uses, const void *resource)
{
    if (resource) {
        lua_pushlightuserdata(L, (void *)resource);
        lua_pushboolean(L, 1);
        lua_rawset(L, uses);
    }
}

void gcsh_graph_keep(lua_State *L, int idx, const void *resource, const void *also)
{
    if (!gcsh_ctx_of(L)->graph)
        return;
    idx = lua_absindex(L, idx);
    if (lua_getfield(L, LUA_REGISTRYINDEX, USES_KEY) != LUA_TTABLE) {
        lua_pop(L, 1);
        return;
    }
    int uses = lua_gettop(L);
    lua_pushvalue(L, idx);
    lua_pushboolean(L, 1);
    lua_rawset(L, uses);
    keep_key(L, uses, resource);
    keep_key(L, uses, also);
    lua_pop(L, 1);
}

static const char *graph_name(lua_State *L, const lgraph *g)
{
    return lua_pushfstring(L, "graph #%I (captured at %s)", g->id, g->where);
}

/* A live graph is a user of every resource it captured (users.h): their
 * free is refused while it lives; it never needs one to itself. */
static int graph_refuses(lua_State *L, int idx, const char *what, int exclusive)
{
    const lgraph *g = lua_touserdata(L, idx);
    if (exclusive || !g->impl)
        return 0;
    lua_pushfstring(L, "%s: %s uses it (a replay would touch freed memory); g:free() the graph "
                       "first", what, graph_name(L, g));
    lua_remove(L, -2); /* the name */
    return 1;
}

static const gcsh_user_kind graph_user = {graph_refuses};

/* Adds (or, when !add, removes) the graph at idx as a user of every
 * resource in its uses table (its uservalue). */
static void use_resources(lua_State *L, int idx, int add)
{
    idx = lua_absindex(L, idx);
    if (lua_getiuservalue(L, idx, 1) != LUA_TTABLE) {
        lua_pop(L, 1);
        return;
    }
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TLIGHTUSERDATA)
            continue;
        if (add)
            gcsh_users_add(L, lua_touserdata(L, -1), idx, &graph_user);
        else
            gcsh_users_remove(L, lua_touserdata(L, -1), idx);
    }
    lua_pop(L, 1);
}

void gcsh_graph_refuse_now(lua_State *L, const char *what, const char *why)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (!ctx->graph)
        return;
    gcsh_graph_refuse(ctx, what, why);
    gcsh_raise(L, ctx);
}

/* ---- handles ----------------------------------------------------------------- */

static lgraph *check_graph(lua_State *L, int idx)
{
    return luaL_checkudata(L, idx, GCSH_GRAPH_MT);
}

static lgraph *check_open(lua_State *L, int idx)
{
    lgraph *g = check_graph(L, idx);
    if (!g->impl)
        luaL_error(L, "attempt to use a freed graph");
    return g;
}

/* Local: frees the backend's graph and drops what it kept. */
static void release(lua_State *L, lgraph *g, int idx)
{
    if (!g->impl)
        return;
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    ctx->be->graph->release(ctx, g->impl);
    g->impl = NULL;
    g->rec = NULL;
    use_resources(L, idx, 0);
    lua_pushnil(L);
    lua_setiuservalue(L, idx, 1);
}

static int graph_free(lua_State *L)
{
    release(L, check_graph(L, 1), 1);
    return 0;
}

/* ---- capture ------------------------------------------------------------------ */

/* fn failed or was refused: abandon, then raise its error (a refusal says
 * so already; anything else is said to have ended the capture). */
static int abandon_and_raise(lua_State *L, gcsh_ctx *ctx)
{
    gcsh_graph_capture_abandon(ctx);
    const char *msg = lua_tostring(L, -1);
    if (lua_type(L, -1) == LUA_TSTRING && !strstr(msg, "gcsh.graph:"))
        lua_pushfstring(L, "gcsh.graph: the capture is abandoned: %s", msg);
    return lua_error(L);
}

/* gcsh.graph(fn): see the top. */
static int graph_capture(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    luaL_checktype(L, 1, LUA_TFUNCTION);
    gcsh_args_none_after(L, 1, "one function (no options)");
    lua_settop(L, 1);
    gcsh_graph_refuse_now(L, "gcsh.graph() inside a capture", "capture one graph at a time");
    lgraph *g = lua_newuserdatauv(L, sizeof *g, 1);
    memset(g, 0, sizeof *g);
    luaL_setmetatable(L, GCSH_GRAPH_MT);
    gcsh_lua_where(L, g->where, sizeof g->where);
    lua_newtable(L); /* 3: what the graph keeps */
    lua_pushvalue(L, 3);
    lua_setfield(L, LUA_REGISTRYINDEX, USES_KEY);
    const gcsh_backend *below = gcsh_trace_plain(ctx); /* spans only for what runs */
    if (gcsh_graph_capture_begin(ctx, below) != 0) {
        lua_pushnil(L);
        lua_setfield(L, LUA_REGISTRYINDEX, USES_KEY);
        return gcsh_raise(L, ctx);
    }
    lua_pushvalue(L, 1);
    int rc = lua_pcall(L, 0, 0, 0);
    lua_pushnil(L);
    lua_setfield(L, LUA_REGISTRYINDEX, USES_KEY);
    if (rc != LUA_OK)
        return abandon_and_raise(L, ctx);
    if (gcsh_graph_capture_end(ctx, &g->impl, &g->rec) != 0)
        return gcsh_raise(L, ctx);
    g->id = gcsh_registry_count(L, COUNT_KEY);
    lua_pushvalue(L, 3);
    lua_setiuservalue(L, 2, 1);
    use_resources(L, 2, 1);
    lua_settop(L, 2);
    return 1;
}

/* ---- replay ---------------------------------------------------------------------- */

static void enter_replay(lua_State *L, const lgraph *g, const gcsh_graph_comm *c, uint64_t n)
{
    gcsh_comm_check *cc = c->check;
    gcsh_fingerprint fp;
    gcsh_fp_init(&fp, cc, "graph.replay");
    fp.count = (int64_t)n;
    snprintf(fp.extra, sizeof fp.extra, "(%llu collective%s each)",
             (unsigned long long)c->collectives, c->collectives == 1 ? "" : "s");
    gcsh_check_enter(L, cc, &fp);
    (void)g;
}

/* After its check took one sequence number: the rest of what n replays of
 * the communicator's collectives count. */
static void count_replayed(const gcsh_graph_comm *c, uint64_t n)
{
    gcsh_comm_check *cc = c->check;
    cc->seq += c->collectives * n - 1;
}

static int graph_replay(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    lgraph *g = check_open(L, 1);
    lua_Integer n = luaL_optinteger(L, 2, 1);
    luaL_argcheck(L, n >= 1 && n <= 1000000000, 2, "n must be 1..1e9");
    gcsh_graph_refuse_now(L, "g:replay() inside a capture", "replay it before or after");
    const gcsh_graph_rec *rec = g->rec;
    /* a resident it rings that stopped: refused here, before any check (the
     * intent: with .check off, ranks that did not refuse are told) */
    if (rec->ncomm)
        gcsh_check_intent(L, rec->comm[0].check, 0);
    if (gcsh_graph_rec_ready(ctx, rec, ctx->be) != 0)
        return gcsh_raise(L, ctx);
    size_t last = rec->ncomm;
    for (size_t i = 0; i + 1 < last; i++) { /* every communicator but the last: checked */
        enter_replay(L, g, &rec->comm[i], (uint64_t)n);
        count_replayed(&rec->comm[i], (uint64_t)n);
        gcsh_check_leave(L, rec->comm[i].check, 0);
    }
    if (last)
        enter_replay(L, g, &rec->comm[last - 1], (uint64_t)n);
    if (rec->np2p) /* told before they run: they run unchecked, from C */
        gcsh_check_replay_issues(ctx, rec, (uint64_t)n);
    int rc = ctx->be->graph->launch(ctx, g->impl, (uint64_t)n);
    if (rc == 0)
        g->replays += (uint64_t)n;
    if (!last)
        return rc == 0 ? 0 : gcsh_raise(L, ctx);
    count_replayed(&rec->comm[last - 1], (uint64_t)n);
    gcsh_check_leave(L, rec->comm[last - 1].check, rc);
    return 0;
}

/* ---- fields and text -------------------------------------------------------------- */

static int graph_tostring(lua_State *L)
{
    lgraph *g = check_graph(L, 1);
    if (!g->impl) {
        lua_pushfstring(L, "graph #%I (freed)", g->id);
        return 1;
    }
    char calls[256];
    gcsh_graph_rec_describe(g->rec, calls, sizeof calls);
    lua_pushfstring(L, "graph #%I (%s; replayed %I time%s)", g->id, calls,
                    (lua_Integer)g->replays, g->replays == 1 ? "" : "s");
    return 1;
}

/* __index: the fields calls, collectives, bytes, replays, id; then methods. */
static int graph_index(lua_State *L)
{
    lgraph *g = check_graph(L, 1);
    const char *key = lua_tostring(L, 2);
    if (key && g->impl) {
        uint64_t coll = 0;
        for (size_t i = 0; i < g->rec->ncomm; i++)
            coll += g->rec->comm[i].collectives;
        const struct { const char *name; uint64_t v; } field[] = {
            {"calls", g->rec->n}, {"collectives", coll}, {"bytes", g->rec->bytes},
            {"replays", g->replays}, {"id", (uint64_t)g->id}};
        for (size_t i = 0; i < sizeof field / sizeof field[0]; i++)
            if (strcmp(key, field[i].name) == 0) {
                lua_pushinteger(L, (lua_Integer)field[i].v);
                return 1;
            }
    }
    lua_pushvalue(L, 2);
    lua_rawget(L, lua_upvalueindex(1));
    return 1;
}

static const luaL_Reg meth[] = {
    {"replay", graph_replay},
    {"free", graph_free},
    {NULL, NULL},
};

static const luaL_Reg metameth[] = {
    {"__gc", graph_free},
    {"__close", graph_free},
    {"__tostring", graph_tostring},
    {NULL, NULL},
};

int luaopen_gcsh_graph(lua_State *L)
{
    gcsh_new_type(L, GCSH_GRAPH_MT, meth, metameth, graph_index);
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, graph_capture);
    lua_setfield(L, -2, "graph");
    return 1;
}
