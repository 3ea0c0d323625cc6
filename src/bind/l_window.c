/* The "window" Lua type: symmetric memory, one slice per rank, with every
 * team member's slice mapped here (the peer pointer table).
 *
 *   w = c:window(n [, dtype="f32" [, {kind=}]])   collective, checked (symmem.h)
 *   w:tensor()        my slice as a tensor view
 *   w:peer(r)         rank r's slice as a tensor view (r a rank of c in w.team)
 *   w.kind w.n w.dtype w.rank w.size w.team w.comm w.seq
 *   w:info()          kind, n, dtype, bytes, alloc_bytes, granularity, address,
 *                     peers, team, seq, where, handle, and the kernels' areas:
 *                     ll_offset, scratch_bytes, sync_offset (bytes in a slice)
 *   w:sync_state([s]) the kernels' sync words, LL flags, my words of s (l_kernel.c)
 *   w:multicast()     collective: a multicast object (l_mcast.c adds it)
 *   w:free()          collective: barrier, then deregistration; every view of
 *                     the window then fails ("attempt to use a freed window")
 *   w:put w:get w:putv  one-sided transfer handles (l_xfer.c); w:fence() too
 *   t:wait(i, v [, cmp="eq"])   (added to the tensor type here) a tensor over
 *                     a window's memory: the CPU waits until element i cmp v
 *                     (eq ne ge gt le lt, or == ~= >= > <= <), acquire:
 *                     integer dtypes compare exactly (v an integer the
 *                     dtype holds), floats as doubles.  Any other tensor is
 *                     refused (no other rank can write it).
 *
 * Layout follows liolib.c: metatable "window", meth[] and metameth[], a handle
 * created closed, one idempotent release behind :free() and __close; __gc only
 * lets go of the handle (symmem.h says what happens to the memory). */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "bind/comm.h"
#include "bind/kernel.h"
#include "bind/opts.h"
#include "bind/symmem.h"
#include "bind/tensor.h"
#include "bind/xfer.h"


/* ---- creation: arguments become a proposal, never an early error ---------- */

static gcsh_dtype read_dtype(lua_State *L, int arg, gcsh_sym_proposal *p, const char *fname,
                             int argno)
{
    gcsh_dtype dt = GCSH_F32;
    if (lua_isnoneornil(L, arg)) {
        /* default */
    } else if (lua_type(L, arg) != LUA_TSTRING) {
        gcsh_sym_problem(p, "bad argument #%d to '%s' (string expected, got %s)", argno, fname,
                         luaL_typename(L, arg));
    } else {
        int v = gcsh_dtype_from_name(lua_tostring(L, arg));
        if (v < 0)
            gcsh_sym_problem(p, "bad argument #%d to '%s' (unknown dtype '%s' (valid: %s))",
                             argno, fname, lua_tostring(L, arg), gcsh_dtype_names());
        else
            dt = (gcsh_dtype)v;
    }
    snprintf(p->dtype, sizeof p->dtype, "%s", gcsh_dtype_name(dt));
    return dt;
}

gcsh_dtype gcsh_window_args(lua_State *L, int first, const char *fname, int argno,
                            gcsh_sym_proposal *p, gcsh_sym_size *size)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_sym_proposal_init(p, "window");
    gcsh_sym_read_n(L, first, p, fname, argno);
    gcsh_dtype dt = read_dtype(L, first + 1, p, fname, argno + 1);
    lcomm *lc = gcsh_arg_comm(L, first - 1);
    gcsh_sym_read_kind(L, first + 2, p, fname, argno + 2, lc->impl);
    gcsh_sym_check_size(ctx, p, fname, argno, gcsh_dtype_size(dt), GCSH_TENSOR_MAX_N, size);
    gcsh_kern_reserve_sync(ctx, p, size, lc->size);
    return dt;
}

/* c:window(n [, dtype [, opts]]): the same stages as step.window's
 * (symmem.h), back to back. */
static int comm_window(lua_State *L)
{
    gcsh_arg_comm(L, 1);
    gcsh_sym_require_windows(L, "window");
    gcsh_sym_proposal p;
    gcsh_sym_size size;
    gcsh_dtype dt = gcsh_window_args(L, 2, "window", 1, &p, &size);
    gcsh_sym_register(L, 1, GCSH_WINDOW_MT, &p, dt, &size);
    return 1;
}

/* ---- methods ------------------------------------------------------------- */

/* What reads a window works after an abort too, until w:free(). */
static gcsh_symobj *readable_window(lua_State *L, int idx)
{
    return gcsh_sym_check_readable(L, idx, GCSH_WINDOW_MT);
}

static int window_tensor(lua_State *L)
{
    gcsh_symobj *o = readable_window(L, 1);
    gcsh_push_tensor(L, o->slices[o->desc.team_rank], 0, o->n, o->dtype);
    return 1;
}

static int window_peer(lua_State *L)
{
    gcsh_symobj *o = readable_window(L, 1);
    int i = gcsh_sym_check_peer(L, o, 2);
    gcsh_push_tensor(L, o->slices[i], 0, o->n, o->dtype);
    return 1;
}

/* ---- t:wait(i, v [, cmp="eq"]): a tensor method for tensors in a window ---------- */

static const char *const wait_cmp_names[] = {"ge", "gt", "eq", "ne", "le", "lt", NULL};
static const char *const wait_cmp_ops[] = {">=", ">", "==", "~=", "<=", "<", NULL};
static const enum gcsh_cmp wait_cmp_values[] = {GCSH_CMP_GE, GCSH_CMP_GT, GCSH_CMP_EQ,
                                                GCSH_CMP_NE, GCSH_CMP_LE, GCSH_CMP_LT};

/* NVSHMEM's names (nvshmem_wait_until's NVSHMEM_CMP_EQ ...), or s:wait's. */
static enum gcsh_cmp check_wait_cmp(lua_State *L, int idx)
{
    if (lua_isnoneornil(L, idx))
        return GCSH_CMP_EQ;
    const char *name = lua_type(L, idx) == LUA_TSTRING ? lua_tostring(L, idx) : NULL;
    for (int i = 0; name && wait_cmp_names[i]; i++)
        if (strcmp(name, wait_cmp_names[i]) == 0 || strcmp(name, wait_cmp_ops[i]) == 0)
            return wait_cmp_values[i];
    return luaL_error(L, "wait: unknown cmp '%s' (valid: eq ne ge gt le lt, or == ~= >= > <= <)",
                      luaL_tolstring(L, idx, NULL));
}

/* The window (or signals: their words are a window's too) whose memory t
 * views, and the team member whose slice it is; a tensor anywhere else is
 * refused: nobody else can write it. */
static gcsh_symobj *window_of(lua_State *L, const gcsh_tensor *t, int *member)
{
    gcsh_storage *st = t->st;
    gcsh_symobj *o = strcmp(st->owner, "window") == 0 ? st->owner_data : NULL;
    for (int i = 0; o && i < o->nslices; i++)
        if (o->slices[i] == st) {
            *member = i;
            if (!o->impl)
                luaL_error(L, "attempt to use a freed %s", o->type);
            gcsh_check_usable(L, &o->comm->chk);
            return o;
        }
    luaL_error(L, "wait: the tensor is not in a window (%s memory: no other rank can write "
                  "it); wait on w:tensor(), w:peer(r) or a view of one",
               st->where);
    return NULL;
}

/* t:wait(i, v [, cmp]): the CPU waits until element i of t compares true
 * against v (backend.h's elem_wait: integer dtypes exactly, floats as
 * doubles), acquire; interruptible, and named in hang reports. */
static int tensor_wait(lua_State *L)
{
    gcsh_tensor *t = gcsh_arg_tensor(L, 1);
    int member = 0;
    gcsh_symobj *o = window_of(L, t, &member);
    size_t i = gcsh_arg_index(L, t, 2);
    gcsh_scalar v = gcsh_arg_value(L, 3, t->dtype);
    enum gcsh_cmp cmp = check_wait_cmp(L, 4);
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    size_t esize = gcsh_dtype_size(t->dtype);
    size_t at = (size_t)((char *)gcsh_tensor_data(t) - (char *)t->st->base) + i * esize;
    char value[48], what[48];
    lua_pushvalue(L, 3);
    snprintf(value, sizeof value, "%s", luaL_tolstring(L, -1, NULL));
    lua_pop(L, 2);
    snprintf(what, sizeof what, "element %zu", at / esize);
    /* for hang reports; the note adds the element's value now */
    gcsh_where_begin(ctx, "t:wait ([%d]'s %s %s %s)", o->desc.team[member], what,
                     wait_cmp_ops[cmp], value);
    int rc = ctx->be->win->elem_wait(ctx, o->impl, &o->desc, member, at, t->dtype, v, cmp, what);
    gcsh_where_end(ctx);
    if (rc != 0)
        return gcsh_raise(L, ctx);
    lua_settop(L, 1);
    return 1;
}

static int window_info(lua_State *L)
{
    gcsh_symobj *o = readable_window(L, 1);
    gcsh_args_none_after(L, 1, "no arguments");
    lua_newtable(L);
    gcsh_sym_info_fields(L, o);
    lua_pushstring(L, gcsh_dtype_name(o->dtype));
    lua_setfield(L, -2, "dtype");
    gcsh_kern_info_fields(L, o);
    return 1;
}

static int window_free(lua_State *L)
{
    gcsh_sym_free(L, *(gcsh_symobj **)luaL_checkudata(L, 1, GCSH_WINDOW_MT));
    return 0;
}

static int window_gc(lua_State *L)
{
    gcsh_symobj **h = luaL_checkudata(L, 1, GCSH_WINDOW_MT);
    gcsh_sym_handle_gone(L, *h);
    *h = NULL;
    return 0;
}

static int window_tostring(lua_State *L)
{
    gcsh_symobj *o = *(gcsh_symobj **)luaL_checkudata(L, 1, GCSH_WINDOW_MT);
    if (!o || !o->impl) {
        lua_pushliteral(L, "window (freed)");
        return 1;
    }
    char team[256], nodes[48];
    lua_pushfstring(L, "window(#%I, %I %s, %s, rank %d of %d, team %s%s)", (lua_Integer)o->seq,
                    (lua_Integer)o->n, gcsh_dtype_name(o->dtype), o->kind, o->comm->rank,
                    o->comm->size, gcsh_sym_team_text(o, team, sizeof team),
                    gcsh_sym_nodes_text(L, o, nodes, sizeof nodes));
    return 1;
}

static int window_field(lua_State *L, gcsh_symobj *o, const char *key)
{
    if (strcmp(key, "dtype") != 0)
        return 0;
    lua_pushstring(L, gcsh_dtype_name(o->dtype));
    return 1;
}

static int window_index(lua_State *L)
{
    return gcsh_sym_index(L, GCSH_WINDOW_MT, window_field);
}

static const luaL_Reg meth[] = {
    {"tensor", window_tensor},
    {"peer", window_peer},
    {"info", window_info},
    {"free", window_free},
    {"put", gcsh_window_put},   /* l_xfer.c */
    {"get", gcsh_window_get},   /* l_xfer.c */
    {"putv", gcsh_window_putv}, /* l_xfer.c */
    {"sync_state", gcsh_kern_sync_state}, /* l_kernel.c */
    {NULL, NULL},
};

static const luaL_Reg metameth[] = {
    {"__index", NULL}, /* placeholder: gcsh_new_type sets it */
    {"__gc", window_gc},
    {"__close", window_free},
    {"__tostring", window_tostring},
    {NULL, NULL},
};

int luaopen_gcsh_window(lua_State *L)
{
    gcsh_symmem_open(L);
    gcsh_new_type(L, GCSH_WINDOW_MT, meth, metameth, window_index);
    gcsh_add_methods(L, GCSH_COMM_MT, (const luaL_Reg[]){{"window", comm_window}, {NULL, NULL}});
    gcsh_add_methods(L, GCSH_TENSOR_MT, (const luaL_Reg[]){{"wait", tensor_wait}, {NULL, NULL}});
    return 0;
}
