/* What the kernel library (l_kernel.c) and the multicast type (l_mcast.c)
 * share: reading and checking their arguments (each error names the call,
 * the argument and the bound, before any backend call), and the local
 * reduce job both run (kernel.reduce_peers, an emulated m:ld_reduce). */
#include <string.h>

#include <lauxlib.h>

#include "bind/kernel.h"
#include "bind/opts.h"
#include "wire/faults.h"

const gcsh_kernel_ops *gcsh_kern_backend(lua_State *L)
{
    return gcsh_ctx_of(L)->be->kern;
}

/* ---- argument checks ----------------------------------------------------------- */

void gcsh_karg_dtype_op(lua_State *L, const char *fname, gcsh_dtype dt, gcsh_redop op,
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
gcsh_tensor *gcsh_karg_placed(lua_State *L, int idx, const char *fname, const char *what)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_tensor *t = gcsh_arg_tensor(L, idx);
    if (t->st->loc != ctx->loc)
        luaL_error(L, "%s: %s lives in %s, but %s kernels run on %s", fname, what, t->st->where,
                   ctx->be->name, ctx->loc == GCSH_LOC_HOST ? "host memory" : "the rank's GPU");
    return t;
}

void gcsh_karg_same_dtype(lua_State *L, const char *fname, const char *what,
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

static gcsh_symobj *team_checked(lua_State *L, gcsh_symobj *o, const char *fname)
{
    if (o->desc.team_size > GCSH_KERN_MAX_TEAM)
        luaL_error(L, "%s: the window's team has %d members; the kernels synchronise at most %d",
                   fname, o->desc.team_size, GCSH_KERN_MAX_TEAM);
    return o;
}

gcsh_symobj *gcsh_karg_window(lua_State *L, int idx, const char *fname)
{
    return team_checked(L, gcsh_sym_check_open(L, idx, GCSH_WINDOW_MT), fname);
}

gcsh_symobj *gcsh_karg_window_read(lua_State *L, int idx, const char *fname)
{
    return team_checked(L, gcsh_sym_check_readable(L, idx, GCSH_WINDOW_MT), fname);
}

gcsh_symobj *gcsh_karg_comm_window(lua_State *L, int idx, const char *fname, const char *instead)
{
    gcsh_symobj *o = gcsh_karg_window(L, idx, fname);
    if (o->desc.team_size == o->comm->size)
        return o;
    char team[256];
    luaL_error(L, "%s: the window's team is ranks %s (node %d) of the communicator's 0-%d: a "
                  "kernel collective runs over the team, so it would cover this node only; use "
                  "%s (the whole communicator), or a window on a communicator of one node "
                  "(c:split(gcsh.node))",
               fname, gcsh_sym_team_text(o, team, sizeof team), gcsh_ctx_of(L)->node,
               o->comm->size - 1, instead);
    return NULL;
}

/* out must not be the window's own memory: a slice is read by peers while
 * out is written (omit out for the result in the window, where out is an
 * option). */
static void check_out_apart(lua_State *L, const gcsh_kargs *a)
{
    for (int i = 0; i < a->o->desc.team_size; i++)
        if (a->o->slices[i] == a->out->st)
            luaL_error(L, "%s: out is memory of the window itself (%s)", a->fname,
                       a->out_required ? "a slice is read by every peer while out is written: "
                                         "give a local tensor, tensor.new(n, dtype)"
                                       : "omit out to keep the result in the window");
}

/* Reads {offset, n} of the options table at idx: the region of the window. */
void gcsh_karg_region(lua_State *L, int idx, gcsh_kargs *a)
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
void gcsh_karg_read(lua_State *L, int idx, gcsh_kargs *a, const char *valid)
{
    const gcsh_symobj *o = a->o;
    a->op = GCSH_OP_SUM;
    a->offset = 0;
    a->n = o->n;
    a->out = NULL;
    a->out_idx = 0;
    a->algo = NULL;
    if (!gcsh_opts_check(L, idx, a->fname, valid))
        return;
    a->op = opt_op(L, idx, GCSH_OP_SUM);
    gcsh_karg_region(L, idx, a);
    if (lua_getfield(L, idx, "out") != LUA_TNIL) {
        a->out_idx = lua_gettop(L);
        a->out = gcsh_karg_placed(L, a->out_idx, a->fname, "out");
        gcsh_tensor_check_write(L, a->out);
    } else {
        lua_pop(L, 1);
    }
    if (lua_getfield(L, idx, "algo") != LUA_TNIL)
        a->algo = luaL_checkstring(L, -1);
    lua_pop(L, 1);
}

void gcsh_karg_out_size(lua_State *L, const gcsh_kargs *a, size_t needs, const char *why)
{
    if (!a->out)
        return;
    gcsh_karg_same_dtype(L, a->fname, "out", a->out, a->o->dtype, "the window");
    if (a->out->n < needs)
        luaL_error(L, "%s: out has %I elements, needs %I (%s)", a->fname, (lua_Integer)a->out->n,
                   (lua_Integer)needs, why);
    check_out_apart(L, a);
}

/* A root given as a rank of the window's comm; returns its team index. */
int gcsh_karg_root(lua_State *L, int idx, const gcsh_kargs *a)
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

/* (out, w-or-m, op-or-options at idx) for reduce_peers and m:ld_reduce. */
void gcsh_karg_peer_reduce(lua_State *L, gcsh_kargs *a, int idx)
{
    a->out_required = 1;
    a->op = GCSH_OP_SUM;
    a->offset = 0;
    if (lua_type(L, idx) == LUA_TSTRING) {
        a->op = gcsh_arg_redop(L, idx, GCSH_OP_SUM);
    } else if (!lua_isnoneornil(L, idx)) {
        gcsh_kargs opts = *a;
        gcsh_karg_read(L, idx, &opts, "op offset n");
        a->op = opts.op;
        a->offset = opts.offset;
        lua_getfield(L, idx, "n");
        a->n = lua_isnil(L, -1) ? a->out->n : opts.n;
        lua_pop(L, 1);
        if (a->offset + a->n > a->o->n)
            luaL_error(L, "%s: offset %I + n %I runs past the window's %I elements", a->fname,
                       (lua_Integer)a->offset, (lua_Integer)a->n, (lua_Integer)a->o->n);
        gcsh_karg_out_size(L, a, a->n, "n elements");
        return;
    }
    a->n = a->out->n;
    gcsh_karg_same_dtype(L, a->fname, "out", a->out, a->o->dtype, "the window");
    if (a->n > a->o->n)
        luaL_error(L, "%s: out has %I elements, more than the window's %I", a->fname,
                   (lua_Integer)a->n, (lua_Integer)a->o->n);
    check_out_apart(L, a);
}

/* ---- the local reduce job -------------------------------------------------------- */

void gcsh_kjob_run(lua_State *L, const gcsh_kjob *j)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (gcsh_kern_backend(L)->reduce(ctx, j) != 0)
        gcsh_raise(L, ctx);
}

/* The job over every member's [offset, offset + n) into out. */
void gcsh_kjob_peers(lua_State *L, const gcsh_symobj *o, size_t offset, size_t n,
                     gcsh_tensor *out, gcsh_redop op)
{
    gcsh_kjob j = {.k = o->desc.team_size, .m = 1, .n = n, .dt = o->dtype, .op = op};
    size_t es = gcsh_dtype_size(o->dtype);
    for (int p = 0; p < j.k; p++)
        j.src[p] = (char *)o->desc.peer[p] + offset * es;
    j.dst[0] = gcsh_tensor_data(out);
    gcsh_kjob_run(L, &j);
}
