/* The "signals" Lua type: n symmetric 64-bit words per rank, in a window of
 * the backend's default kind.
 *
 *   s = c:signals(n)            collective, checked like windows (symmem.h)
 *   s:set(peer, slot, v)        peer's word slot = v      (release)
 *   s:add(peer, slot, v)        peer's word slot += v     (release; wraps mod 2^64)
 *   s:fetch_add(peer, slot, v)  the same, returning the word before (acquire and
 *                               release; on cuda after the rank's stream)
 *   s:read(slot)                my word slot              (acquire)
 *   s:wait(slot, v [, cmp=">="])
 *   s:wait{slot=, value=, cmp=">=", cpu=false, timeout=nil}
 *                               until my word slot <cmp> v (acquire): data a
 *                               peer wrote before its set/add is then visible.
 *                               On cuda a plain wait is stream-ordered (returns
 *                               at once); cpu=true waits here, and timeout=S
 *                               (needs cpu=true) fails with an error after S s.
 *                               The host backend always waits on the CPU.
 *   s:reset()                   zeroes MY words; local, not collective: follow
 *                               it with c:barrier() before peers signal again,
 *                               so no peer's add lands before the reset.
 *   s.n s.kind s.rank s.size s.team s.comm s.seq   s:info()   s:free()
 *
 * Words are unsigned 64-bit (gcsh_sym_word_value): a Lua integer carries
 * the word's bits, so 2^63..2^64-1 are the negative integers (-1 is
 * 2^64-1), as math.ult compares them; s:read returns that integer and
 * gcsh's texts print it unsigned (("%u"):format(v) does too).  A float
 * 2^63..2^64 (exclusive) is taken too.  cmp is one of >= > == ~= <= <,
 * an unsigned comparison of the word.  peer is a rank of c in s.team; slots are
 * 0..n-1.  Every argument is checked before any word is touched. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "wire/collcheck.h"
#include "bind/comm.h"
#include "bind/graph.h"
#include "bind/opts.h"
#include "bind/symmem.h"

/* Signal words are for synchronisation, not data: s:reset() touches each. */
#define SIGNALS_MAX_N ((size_t)1 << 20)
#define WORD_BYTES 8

static const char *const cmp_names[] = {">=", ">", "==", "~=", "<=", "<", NULL};
static const enum gcsh_cmp cmp_values[] = {GCSH_CMP_GE, GCSH_CMP_GT, GCSH_CMP_EQ,
                                           GCSH_CMP_NE, GCSH_CMP_LE, GCSH_CMP_LT};
#define CMP_LIST ">= > == ~= <= <"

static gcsh_symobj *check_signals(lua_State *L, int idx)
{
    return gcsh_sym_check_open(L, idx, GCSH_SIGNALS_MT);
}

static void check_backend(lua_State *L, int rc)
{
    if (rc != 0)
        gcsh_raise(L, gcsh_ctx_of(L));
}

static int comm_signals(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    lcomm *lc = gcsh_arg_comm(L, 1);
    gcsh_sym_require_windows(L, "signals");
    gcsh_sym_proposal p;
    gcsh_sym_proposal_init(&p, "signals");
    gcsh_sym_read_n(L, 2, &p, "signals", 1);
    gcsh_sym_read_kind(L, 3, &p, "signals", 2, lc->impl);
    snprintf(p.dtype, sizeof p.dtype, "i64");
    gcsh_sym_size size;
    gcsh_sym_check_size(ctx, &p, "signals", 1, WORD_BYTES, SIGNALS_MAX_N, &size);
    gcsh_sym_register(L, 1, GCSH_SIGNALS_MT, &p, GCSH_I64, &size);
    return 1;
}

/* ---- argument checks ------------------------------------------------------ */

static size_t check_slot_value(lua_State *L, const gcsh_symobj *o, int idx, const char *name)
{
    int isint = 0;
    lua_Integer slot = lua_tointegerx(L, idx, &isint);
    if (lua_type(L, idx) != LUA_TNUMBER || !isint)
        luaL_error(L, "%s must be an integer slot 0..%I, got %s", name, (lua_Integer)o->n - 1,
                   luaL_tolstring(L, idx, NULL));
    if (slot < 0 || (lua_Unsigned)slot >= o->n)
        luaL_error(L, "%s %I out of range (valid 0..%I)", name, slot, (lua_Integer)o->n - 1);
    return (size_t)slot;
}

static uint64_t check_word_value(lua_State *L, int idx, const char *name)
{
    uint64_t v;
    if (!gcsh_sym_word_value(L, idx, &v))
        luaL_error(L, "%s must be " GCSH_SYM_WORD_RANGE ", got %s", name,
                   luaL_tolstring(L, idx, NULL));
    return v;
}

static enum gcsh_cmp check_cmp(lua_State *L, int idx)
{
    if (lua_isnoneornil(L, idx))
        return GCSH_CMP_GE;
    const char *name = lua_tostring(L, idx);
    for (int i = 0; name && cmp_names[i]; i++)
        if (strcmp(name, cmp_names[i]) == 0)
            return cmp_values[i];
    return luaL_error(L, "unknown cmp '%s' (valid: " CMP_LIST ")", luaL_tolstring(L, idx, NULL));
}

/* ---- set, add, read, reset -------------------------------------------------- */

typedef int (*store_fn)(gcsh_ctx *, gcsh_window_impl *, const gcsh_window_desc *, int, size_t,
                        uint64_t);

/* The word of a rank on another node, over the network path (gcsh_window_ops.net):
 * applied at the target before it returns.  A capture cannot hold it (the
 * host backend replays recorded calls, and this is none of them). */
static void net_word(lua_State *L, gcsh_symobj *o, enum gcsh_net_op op, const char *fname,
                     size_t slot, uint64_t v, uint64_t *old)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    char what[48];
    snprintf(what, sizeof what, "s:%s to a rank on another node", fname);
    gcsh_graph_refuse_now(L, what, "the network path runs now");
    int rank = (int)lua_tointeger(L, 2);
    check_backend(L, ctx->be->win->net(ctx, o->impl, &o->desc, rank, op,
                                       slot * sizeof(uint64_t), NULL, 0, v, old));
}

static int store(lua_State *L, store_fn fn, enum gcsh_net_op op, const char *fname)
{
    char slot_name[16], value_name[16];
    snprintf(slot_name, sizeof slot_name, "%s: slot", fname);
    snprintf(value_name, sizeof value_name, "%s: value", fname);
    gcsh_symobj *o = check_signals(L, 1);
    int peer = gcsh_sym_check_peer_net(L, o, 2);
    size_t slot = check_slot_value(L, o, 3, slot_name);
    uint64_t v = check_word_value(L, 4, value_name);
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (peer < 0)
        net_word(L, o, op, fname, slot, v, NULL);
    else
        check_backend(L, fn(ctx, o->impl, &o->desc, peer, slot, v));
    return 0;
}

static int signals_set(lua_State *L)
{
    return store(L, gcsh_ctx_of(L)->be->win->signal_set, GCSH_NET_SET, "set");
}

static int signals_add(lua_State *L)
{
    return store(L, gcsh_ctx_of(L)->be->win->signal_add, GCSH_NET_ADD, "add");
}

static int signals_fetch_add(lua_State *L)
{
    gcsh_symobj *o = check_signals(L, 1);
    int peer = gcsh_sym_check_peer_net(L, o, 2);
    size_t slot = check_slot_value(L, o, 3, "fetch_add: slot");
    uint64_t v = check_word_value(L, 4, "fetch_add: value"), old = 0;
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (peer < 0)
        net_word(L, o, GCSH_NET_FETCH_ADD, "fetch_add", slot, v, &old);
    else
        check_backend(L, ctx->be->win->signal_fetch_add(ctx, o->impl, &o->desc, peer, slot, v,
                                                        &old));
    lua_pushinteger(L, (lua_Integer)old);
    return 1;
}

static int signals_read(lua_State *L)
{
    /* reading works after an abort too, until s:free() */
    gcsh_symobj *o = gcsh_sym_check_readable(L, 1, GCSH_SIGNALS_MT);
    size_t slot = check_slot_value(L, o, 2, "read: slot");
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    uint64_t v = 0;
    check_backend(L, ctx->be->win->signal_read(ctx, o->impl, &o->desc, slot, &v));
    lua_pushinteger(L, (lua_Integer)v);
    return 1;
}

static int signals_reset(lua_State *L)
{
    gcsh_symobj *o = check_signals(L, 1);
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    for (size_t slot = 0; slot < o->n; slot++)
        check_backend(L, ctx->be->win->signal_set(ctx, o->impl, &o->desc, o->desc.team_rank,
                                                  slot, 0));
    return 0;
}

/* ---- wait ----------------------------------------------------------------- */

typedef struct wait_args {
    size_t slot;
    uint64_t value;
    enum gcsh_cmp cmp;
    int cpu;
    double timeout; /* seconds; INFINITY when none */
} wait_args;

/* s:wait{slot=, value=, cmp=, cpu=, timeout=}; fields land at 3..7. */
static void read_wait_table(lua_State *L, const gcsh_symobj *o, wait_args *a)
{
    gcsh_opts_check(L, 2, "wait", "slot value cmp cpu timeout");
    lua_settop(L, 2);
    lua_getfield(L, 2, "slot");
    lua_getfield(L, 2, "value");
    lua_getfield(L, 2, "cmp");
    lua_getfield(L, 2, "cpu");
    lua_getfield(L, 2, "timeout");
    a->slot = check_slot_value(L, o, 3, "wait: slot");
    a->value = check_word_value(L, 4, "wait: value");
    a->cmp = check_cmp(L, 5);
    a->cpu = lua_toboolean(L, 6);
    a->timeout = INFINITY;
    if (!lua_isnil(L, 7)) {
        if (lua_type(L, 7) != LUA_TNUMBER || !(lua_tonumber(L, 7) >= 0))
            luaL_error(L, "wait: timeout must be a number of seconds >= 0, got %s",
                       luaL_tolstring(L, 7, NULL));
        if (!a->cpu)
            luaL_error(L, "wait: timeout needs cpu=true (a stream-ordered wait cannot time out)");
        a->timeout = lua_tonumber(L, 7);
    }
}

static int signals_wait(lua_State *L)
{
    gcsh_symobj *o = check_signals(L, 1);
    wait_args a;
    if (lua_istable(L, 2)) {
        read_wait_table(L, o, &a);
    } else {
        a.slot = check_slot_value(L, o, 2, "wait: slot");
        a.value = check_word_value(L, 3, "wait: value");
        a.cmp = check_cmp(L, 4);
        a.cpu = 0;
        a.timeout = INFINITY;
    }
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    const gcsh_window_ops *win = ctx->be->win;
    /* for hang reports (collcheck.h); the host backend's plain wait blocks too */
    gcsh_where_begin(ctx, "signal wait (slot %zu %s %llu)", (size_t)a.slot, cmp_names[a.cmp],
                     (unsigned long long)a.value);
    if (!a.cpu) {
        int rc = win->signal_wait(ctx, o->impl, &o->desc, a.slot, a.value, a.cmp);
        gcsh_where_end(ctx);
        check_backend(L, rc);
        return 0;
    }
    int rc = win->signal_wait_cpu(ctx, o->impl, &o->desc, a.slot, a.value, a.cmp, a.timeout);
    gcsh_where_end(ctx);
    check_backend(L, rc < 0 ? rc : 0);
    if (rc == 1) {
        uint64_t now = 0;
        check_backend(L, win->signal_read(ctx, o->impl, &o->desc, a.slot, &now));
        luaL_error(L, "wait: timed out after %f s: slot %I is %s, waiting for %s %s", a.timeout,
                   (lua_Integer)a.slot, gcsh_sym_word_text(L, now), cmp_names[a.cmp],
                   gcsh_sym_word_text(L, a.value));
    }
    return 0;
}

/* ---- handle ------------------------------------------------------------------ */

static int signals_info(lua_State *L)
{
    gcsh_symobj *o = check_signals(L, 1);
    lua_newtable(L);
    gcsh_sym_info_fields(L, o);
    return 1;
}

static int signals_free(lua_State *L)
{
    gcsh_sym_free(L, *(gcsh_symobj **)luaL_checkudata(L, 1, GCSH_SIGNALS_MT));
    return 0;
}

static int signals_gc(lua_State *L)
{
    gcsh_symobj **h = luaL_checkudata(L, 1, GCSH_SIGNALS_MT);
    gcsh_sym_handle_gone(L, *h);
    *h = NULL;
    return 0;
}

static int signals_tostring(lua_State *L)
{
    gcsh_symobj *o = *(gcsh_symobj **)luaL_checkudata(L, 1, GCSH_SIGNALS_MT);
    if (!o || !o->impl) {
        lua_pushliteral(L, "signals (freed)");
        return 1;
    }
    char team[256], nodes[48];
    lua_pushfstring(L, "signals(#%I, %I slots, %s, rank %d of %d, team %s%s)", (lua_Integer)o->seq,
                    (lua_Integer)o->n, o->kind, o->comm->rank, o->comm->size,
                    gcsh_sym_team_text(o, team, sizeof team),
                    gcsh_sym_nodes_text(L, o, nodes, sizeof nodes));
    return 1;
}

static int signals_index(lua_State *L)
{
    return gcsh_sym_index(L, GCSH_SIGNALS_MT, NULL);
}

static const luaL_Reg meth[] = {
    {"set", signals_set},
    {"add", signals_add},
    {"fetch_add", signals_fetch_add},
    {"read", signals_read},
    {"reset", signals_reset},
    {"wait", signals_wait},
    {"info", signals_info},
    {"free", signals_free},
    {NULL, NULL},
};

static const luaL_Reg metameth[] = {
    {"__index", NULL}, /* placeholder: gcsh_new_type sets it */
    {"__gc", signals_gc},
    {"__close", signals_free},
    {"__tostring", signals_tostring},
    {NULL, NULL},
};

int luaopen_gcsh_signals(lua_State *L)
{
    gcsh_symmem_open(L);
    gcsh_new_type(L, GCSH_SIGNALS_MT, meth, metameth, signals_index);
    gcsh_add_methods(L, GCSH_COMM_MT, (const luaL_Reg[]){{"signals", comm_signals}, {NULL, NULL}});
    return 0;
}
