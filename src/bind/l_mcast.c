/* The "multicast" Lua type: m = w:multicast() over a window's slices, and
 * the mode every rank agreed on (kernel.allreduce's algo "multicast" opens
 * it too).
 *
 *   m = w:multicast()       collective; m.mode = "nvls" | "emulated"; m:why()
 *   m:ld_reduce(out [, op | {op=, offset=0}])   out = the op over every slice
 *   m:st(src [, offset=0])                       src into every slice
 *   m.window   m:free()
 *
 * In mode nvls the backend's multimem loads and stores run (kernels/mcast.cu);
 * emulated, the same results come from the reduce kernels' peer loads and
 * stores.  Arguments are read as the kernel library reads them (kargs.c). */
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>

#include "bind/graph.h"
#include "bind/kernel.h"
#include "wire/faults.h"

#define MCAST_MT "multicast"

typedef struct lmcast {
    gcsh_symobj *o; /* the window (kept alive by uservalue 1); NULL when freed */
    gcsh_mcast mc;
} lmcast;

/* ---- the window's mode (kernel.allreduce's algo "multicast" asks it too) --------- */

/* The window's multicast decision: collective and checked the first time
 * (the ranks agree on the mode), kept after that on both sides (o->mc here,
 * the backend's per window), so a later call asks no one: a multicast
 * all-reduce costs what the others do (the call itself is checked). */
void gcsh_mcast_open(lua_State *L, gcsh_symobj *o, gcsh_mcast *mc)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_comm_check *cc = &o->comm->chk;
    if (o->mc_decided) {
        *mc = o->mc;
        return;
    }
    gcsh_graph_refuse_now(L, "w:multicast() (the first multicast use of a window)",
                          "it decides the mode with every rank: call it before the capture");
    gcsh_fingerprint fp;
    gcsh_fp_init(&fp, cc, "multicast");
    fp.window = o->seq;
    gcsh_check_enter(L, cc, &fp);
    gcsh_check_leave(L, cc, gcsh_kern_backend(L)->mc_open(ctx, o->impl, &o->desc, mc));
    o->mc = *mc;
    o->mc_decided = 1;
}

/* multimem has no 16-bit forms and needs natural alignment (kernels/mcast.cu):
 * in mode nvls, offsets, lengths and the local buffer go in 4-byte units. */
void gcsh_mcast_check_nvls(lua_State *L, const char *fname, const gcsh_symobj *o,
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

/* ---- the multicast type -------------------------------------------------------- */

static lmcast *check_mcast(lua_State *L, int idx)
{
    lmcast *m = luaL_checkudata(L, idx, MCAST_MT);
    if (!m->o || !m->o->impl)
        luaL_error(L, "attempt to use a freed %s", m->o ? "window" : "multicast");
    gcsh_graph_keep(L, idx, m->o, NULL); /* while capturing (graph.h) */
    return m;
}

/* w:multicast(): the multicast type's constructor, on the window type. */
static int window_multicast(lua_State *L)
{
    gcsh_symobj *o = gcsh_karg_window(L, 1, "multicast");
    lmcast *m = lua_newuserdatauv(L, sizeof *m, 1);
    memset(m, 0, sizeof *m);
    luaL_setmetatable(L, MCAST_MT);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1); /* the window lives as long as m */
    gcsh_mcast_open(L, o, &m->mc);
    m->o = o;
    return 1;
}

static int mcast_ld_reduce(lua_State *L)
{
    lmcast *m = check_mcast(L, 1);
    gcsh_kargs a = {.fname = "ld_reduce", .o = m->o};
    a.out = gcsh_karg_placed(L, 2, a.fname, "out");
    a.out_idx = 2;
    gcsh_karg_peer_reduce(L, &a, 3);
    unsigned ops = m->mc.nvls ? gcsh_kern_nvls_ops_of(a.o->dtype) : gcsh_kern_ops_of(a.o->dtype);
    gcsh_karg_dtype_op(L, a.fname, a.o->dtype, a.op, ops,
                       m->mc.nvls ? "multimem (mode nvls)" : "the kernels");
    if (!m->mc.nvls) {
        gcsh_kjob_peers(L, a.o, a.offset, a.n, a.out, a.op);
    } else {
        gcsh_ctx *ctx = gcsh_ctx_of(L);
        size_t es = gcsh_dtype_size(a.o->dtype);
        gcsh_mcast_check_nvls(L, a.fname, a.o, a.offset, a.n, a.out);
        const gcsh_kernel_ops *kern = gcsh_kern_backend(L);
        if (kern->mc_ld_reduce(ctx, &m->mc, a.offset * es, gcsh_tensor_data(a.out), a.n,
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
    gcsh_tensor *src = gcsh_karg_placed(L, 2, "st", "src");
    gcsh_karg_same_dtype(L, "st", "src", src, o->dtype, "the window");
    gcsh_karg_dtype_op(L, "st", o->dtype, GCSH_OP_SUM, gcsh_kern_ops_of(o->dtype), "the kernels");
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
        gcsh_mcast_check_nvls(L, "st", o, (size_t)off, src->n, src);
        const gcsh_kernel_ops *kern = gcsh_kern_backend(L);
        if (kern->mc_st(ctx, &m->mc, (size_t)off * es, gcsh_tensor_data(src), src->n,
                        o->dtype) != 0)
            gcsh_raise(L, ctx);
        return 0;
    }
    gcsh_kjob j = {.k = 1, .m = o->desc.team_size, .n = src->n, .dt = o->dtype, .op = GCSH_OP_SUM};
    j.src[0] = gcsh_tensor_data(src);
    for (int p = 0; p < j.m; p++)
        j.dst[p] = (char *)o->desc.peer[p] + (size_t)off * es;
    gcsh_kjob_run(L, &j);
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

static const luaL_Reg meth[] = {
    {"ld_reduce", mcast_ld_reduce},
    {"st", mcast_st},
    {"why", mcast_why},
    {"free", mcast_free},
    {NULL, NULL},
};

static const luaL_Reg metameth[] = {
    {"__index", NULL}, /* placeholder: gcsh_new_type sets it */
    {"__close", mcast_free},
    {"__tostring", mcast_tostring},
    {NULL, NULL},
};

int luaopen_gcsh_multicast(lua_State *L)
{
    gcsh_new_type(L, MCAST_MT, meth, metameth, mcast_index);
    gcsh_add_methods(L, GCSH_WINDOW_MT,
                     (const luaL_Reg[]){{"multicast", window_multicast}, {NULL, NULL}});
    return 0;
}
