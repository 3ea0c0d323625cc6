/* The "multicast" Lua type: m = w:multicast() over a window's slices, and
 * the mode every rank agreed on (kernel.allreduce's algo "multicast" opens
 * it too).
 *
 *   m = w:multicast([{lax=true}])  collective; m.mode = "nvls" | "emulated"; m:why();
 *                           m.lax: an emulation without NVLS's rules (strict by
 *                           default: its dtype, op and 4-byte rules apply)
 *   m:ld_reduce(out [, op | {op=, offset=0}])   out = the op over every slice
 *   m:st(src [, offset=0])                       src into every slice
 *   m.window   m:free()
 *
 * In mode nvls the backend's multimem loads and stores run (kernels/cuda/mcast.cu);
 * emulated, the same results come from the reduce kernels' peer loads and
 * stores.  Arguments are read as the kernel library reads them (kargs.c). */
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>

#include "bind/graph.h"
#include "bind/kernel.h"
#include "bind/opts.h"
#include "wire/faults.h"

#define MCAST_MT "multicast"

typedef struct lmcast {
    gcsh_symobj *o; /* the window (kept alive by uservalue 1); NULL when freed */
    gcsh_mcast mc;
} lmcast;

/* ---- the window's mode (kernel.allreduce's algo "multicast" asks it too) --------- */

/* The window's multicast decision: collective and checked the first time
 * (the ranks agree on the mode, and on lax: part of the fingerprint), kept
 * after that on both sides (o->mc here, the backend's per window), so a
 * later call asks no one: a multicast all-reduce costs what the others do
 * (the call itself is checked).  lax: 1 or 0 as w:multicast{lax=} gave
 * it, -1 when not given (strict when undecided, else as decided). */
static void open_as(lua_State *L, gcsh_symobj *o, gcsh_mcast *mc, int lax)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_comm_check *cc = &o->comm->chk;
    if (o->mc_decided) {
        if (lax >= 0 && lax != o->mc_lax)
            luaL_error(L, "multicast: window #%I's multicast is %s already: the first "
                          "w:multicast() decides it (give {lax=%s} there)",
                       (lua_Integer)o->seq, o->mc_lax ? "lax" : "strict",
                       lax ? "true" : "false");
        *mc = o->mc;
        return;
    }
    gcsh_graph_refuse_now(L, "w:multicast() (the first multicast use of a window)",
                          "it decides the mode with every rank: call it before the capture");
    gcsh_fingerprint fp;
    gcsh_fp_init(&fp, cc, "multicast");
    fp.window = o->seq;
    snprintf(fp.extra, sizeof fp.extra, "%s", lax > 0 ? "lax" : "strict");
    gcsh_check_enter(L, cc, &fp);
    gcsh_check_leave(L, cc, gcsh_kern_backend(L)->mc_open(ctx, o->impl, &o->desc, mc));
    o->mc = *mc;
    o->mc_lax = lax > 0;
    o->mc_decided = 1;
}

void gcsh_mcast_open(lua_State *L, gcsh_symobj *o, gcsh_mcast *mc)
{
    open_as(L, o, mc, -1);
}

/* multimem has no 16-bit forms and needs natural alignment (kernels/cuda/mcast.cu):
 * offsets, lengths and the local buffer go in 4-byte units; its reductions
 * are add for f32, add, min and max for f16, bf16, i32 and u32 (kreduce.h). */
void gcsh_mcast_check_rules(lua_State *L, const char *fname, const gcsh_symobj *o, int reduces,
                            gcsh_redop op, size_t offset, size_t n, const gcsh_tensor *local)
{
    if (!o->mc.nvls && o->mc_lax)
        return;
    if (reduces)
        gcsh_karg_dtype_op(L, fname, o->dtype, op, gcsh_kern_nvls_ops_of(o->dtype),
                           "multimem (NVLS)");
    size_t es = gcsh_dtype_size(o->dtype);
    if ((offset * es) % 4 || (n * es) % 4)
        luaL_error(L, "%s: NVLS moves 4-byte units: offset %I and n %I of %s must be even "
                      "(multimem has no 16-bit forms)",
                   fname, (lua_Integer)offset, (lua_Integer)n, gcsh_dtype_name(o->dtype));
    if (local && (uintptr_t)gcsh_tensor_data(local) % 4)
        luaL_error(L, "%s: NVLS needs a 4-byte aligned local tensor (this view starts at "
                      "an odd %s element)",
                   fname, gcsh_dtype_name(o->dtype));
}

/* What m:why() and tostring(m) say: the mode's reason, and for an
 * emulation whether NVLS's rules apply. */
static void push_why(lua_State *L, const gcsh_symobj *o, const gcsh_mcast *mc)
{
    if (mc->nvls)
        lua_pushstring(L, mc->why);
    else if (o->mc_lax)
        lua_pushfstring(L, "%s; lax: NVLS's dtype, op and 4-byte rules are not applied "
                           "(w:multicast{lax=true})",
                        mc->why);
    else
        lua_pushfstring(L, "%s; strict: NVLS's dtype, op and 4-byte rules apply, as on the "
                           "hardware (w:multicast{lax=true}, the window's first, lifts them)",
                        mc->why);
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

/* w:multicast([{lax=}]): the multicast type's constructor, on the window type. */
static int window_multicast(lua_State *L)
{
    gcsh_symobj *o = gcsh_karg_window(L, 1, "multicast");
    int lax = -1;
    if (gcsh_opts_check(L, 2, "multicast", "lax")) {
        lua_getfield(L, 2, "lax");
        if (!lua_isnil(L, -1)) {
            if (!lua_isboolean(L, -1))
                luaL_error(L, "multicast: lax must be a boolean, got %s", luaL_typename(L, -1));
            lax = lua_toboolean(L, -1);
        }
        lua_pop(L, 1);
    }
    lua_settop(L, 1);
    lmcast *m = lua_newuserdatauv(L, sizeof *m, 1);
    memset(m, 0, sizeof *m);
    luaL_setmetatable(L, MCAST_MT);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1); /* the window lives as long as m */
    open_as(L, o, &m->mc, lax);
    m->o = o;
    return 1;
}

static int mcast_ld_reduce(lua_State *L)
{
    lmcast *m = check_mcast(L, 1);
    gcsh_sym_check_mapped(L, m->o); /* it loads every slice, after an abort too */
    gcsh_kargs a = {.fname = "ld_reduce", .o = m->o};
    a.out = gcsh_karg_placed(L, 2, a.fname, "out");
    gcsh_tensor_check_write(L, a.out);
    a.out_idx = 2;
    gcsh_karg_peer_reduce(L, &a, 3);
    gcsh_mcast_check_rules(L, a.fname, a.o, 1, a.op, a.offset, a.n, a.out);
    gcsh_karg_dtype_op(L, a.fname, a.o->dtype, a.op, gcsh_kern_ops_of(a.o->dtype), "the kernels");
    if (!m->mc.nvls) {
        gcsh_kjob_peers(L, a.o, a.offset, a.n, a.out, a.op);
    } else {
        gcsh_ctx *ctx = gcsh_ctx_of(L);
        size_t es = gcsh_dtype_size(a.o->dtype);
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
    gcsh_sym_check_writable(L, o);
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
    gcsh_mcast_check_rules(L, "st", o, 0, GCSH_OP_SUM, (size_t)off, src->n, src);
    if (m->mc.nvls) {
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
    lmcast *m = check_mcast(L, 1);
    push_why(L, m->o, &m->mc);
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
    else {
        push_why(L, m->o, &m->mc);
        lua_pushfstring(L, "multicast(%s, window #%I: %s)", m->mc.nvls ? "nvls" : "emulated",
                        (lua_Integer)m->o->seq, lua_tostring(L, -1));
    }
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
    } else if (key && strcmp(key, "lax") == 0) {
        check_mcast(L, 1);
        lua_pushboolean(L, !m->mc.nvls && m->o->mc_lax);
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
