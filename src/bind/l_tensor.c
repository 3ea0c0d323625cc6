/* The "tensor" Lua type: a typed 1-D view into reference-counted storage.
 *
 * Layout follows lua.c / liolib.c: one metatable named "tensor", methods in
 * meth[], metamethods in metameth[], a handle created closed before the
 * memory is acquired, and one idempotent release behind :free(), __close and
 * __gc.
 *
 * Backend independence: writes (alloc, fill, arange, rand, copy, t[i] = v)
 * go through ctx->be->mem; reads use host memory directly when the storage
 * is on the host, and otherwise stage through a host buffer with mem->copy,
 * so device tensors work here unchanged.
 *
 * Every argument is checked before any memory is touched; the error names
 * the argument and the bound. */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "core/elementwise.h"
#include "bind/graph.h"
#include "bind/opts.h"
#include "bind/tensor.h"
#include "bind/users.h"
#include "wire/collcheck.h"
#include "wire/faults.h"

/* Largest element size (f64, i64): room for one element on the stack. */
#define MAX_ELEM_SIZE 8
/* Device tensors are read in chunks of this many bytes. */
#define STAGE_BYTES ((size_t)1 << 20)
/* tostring shows every element up to this length, else the ends. */
#define PRINT_ALL_MAX 16
#define PRINT_ENDS 6

/* ---- Storage --------------------------------------------------------------------- */

/* A storage and the text of its `where`, in one malloc block: free(st)
 * frees both, since st is the first member. */
typedef struct storage_block {
    gcsh_storage st;
    char where[48];
} storage_block;

static gcsh_storage *storage_block_new(gcsh_ctx *ctx, const char *owner)
{
    storage_block *b = calloc(1, sizeof *b);
    if (!b) {
        gcsh_set_error(ctx, "out of host memory: cannot allocate a %s", owner);
        return NULL;
    }
    b->st.refs = 1;
    b->st.owner = owner;
    b->st.where = b->where;
    return &b->st;
}

static void set_where(gcsh_storage *st, const char *where)
{
    storage_block *b = (storage_block *)st;
    snprintf(b->where, sizeof b->where, "%s", where);
}

void gcsh_storage_set_where(gcsh_storage *st, const char *where)
{
    set_where(st, where);
}

static void release_backend_memory(gcsh_ctx *ctx, gcsh_storage *st)
{
    ctx->be->mem->release(ctx, st->base, st->loc);
}

gcsh_storage *gcsh_storage_new(gcsh_ctx *ctx, size_t bytes, const char *owner)
{
    gcsh_storage *st = storage_block_new(ctx, owner);
    if (!st)
        return NULL;
    if (ctx->be->mem->alloc(ctx, bytes, &st->base, &st->loc) != 0) {
        free(st);
        return NULL;
    }
    st->bytes = bytes;
    st->release = release_backend_memory;
    char where[32];
    if (st->loc == GCSH_LOC_HOST)
        snprintf(where, sizeof where, "host");
    else
        snprintf(where, sizeof where, "cuda:%d", st->loc);
    set_where(st, where);
    return st;
}

gcsh_storage *gcsh_storage_wrap(gcsh_ctx *ctx, void *base, size_t bytes, int loc,
                                const char *owner, const char *where,
                                void (*release)(gcsh_ctx *ctx, gcsh_storage *st),
                                void *owner_data)
{
    gcsh_storage *st = storage_block_new(ctx, owner);
    if (!st)
        return NULL;
    st->base = base;
    st->bytes = bytes;
    st->loc = loc;
    st->release = release;
    st->owner_data = owner_data;
    set_where(st, where);
    return st;
}

void gcsh_storage_ref(gcsh_storage *st)
{
    st->refs++;
}

void gcsh_storage_release(gcsh_ctx *ctx, gcsh_storage *st)
{
    if (!st->base)
        return;
    if (st->release)
        st->release(ctx, st);
    st->base = NULL;
}

void gcsh_storage_unref(gcsh_ctx *ctx, gcsh_storage *st)
{
    if (--st->refs > 0)
        return;
    gcsh_storage_release(ctx, st);
    free(st);
}

/* ---- Handles --------------------------------------------------------------------- */

/* Pushes a handle in the closed state (no storage), so that an error while
 * acquiring the memory leaves nothing for __gc to undo. */
static gcsh_tensor *push_closed_handle(lua_State *L)
{
    gcsh_tensor *t = lua_newuserdatauv(L, sizeof *t, 0);
    memset(t, 0, sizeof *t);
    luaL_setmetatable(L, GCSH_TENSOR_MT);
    return t;
}

gcsh_tensor *gcsh_push_tensor(lua_State *L, gcsh_storage *st, size_t offset, size_t n,
                              gcsh_dtype dt)
{
    gcsh_tensor *t = push_closed_handle(L);
    gcsh_storage_ref(st);
    t->st = st;
    t->offset = offset;
    t->n = n;
    t->dtype = dt;
    t->owns_memory = 0;
    return t;
}

/* Lua's collector paces itself by the memory it allocated: a tensor's
 * handle is a few dozen bytes, its memory (host or device) is the backend's.
 * Counted as allocated (KiB, rounded up), it makes a loop that drops
 * tensors collect them as it goes: unseen, 300 dropped 4 MiB tensors all
 * stayed until the Lua heap doubled (1.2 GB at 1 rank; issue 35's soak). */
static void count_for_collector(lua_State *L, size_t bytes)
{
    size_t kib = bytes / 1024 + 1;
    lua_gc(L, LUA_GCSTEP, kib > INT_MAX ? INT_MAX : (int)kib);
}

gcsh_tensor *gcsh_new_tensor(lua_State *L, size_t n, gcsh_dtype dt)
{
    if (n > GCSH_TENSOR_MAX_N)
        luaL_error(L, "tensor length %I exceeds the maximum %I", (lua_Integer)n,
                   (lua_Integer)GCSH_TENSOR_MAX_N);
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_tensor *t = push_closed_handle(L);
    gcsh_storage *st = gcsh_storage_new(ctx, n * gcsh_dtype_size(dt), "tensor");
    if (!st)
        gcsh_raise(L, ctx);
    t->st = st;
    t->offset = 0;
    t->n = n;
    t->dtype = dt;
    t->owns_memory = 1;
    count_for_collector(L, st->bytes);
    return t;
}

/* NULL when usable; otherwise what was freed ("tensor", "window"). */
static const char *freed_owner(const gcsh_tensor *t)
{
    if (!t->st)
        return "tensor";
    return t->st->base ? NULL : t->st->owner;
}

static void check_not_freed(lua_State *L, const gcsh_tensor *t)
{
    const char *owner = freed_owner(t);
    if (owner)
        luaL_error(L, "attempt to use a freed %s", owner);
}

gcsh_tensor *gcsh_arg_tensor(lua_State *L, int idx)
{
    gcsh_tensor *t = luaL_checkudata(L, idx, GCSH_TENSOR_MT);
    check_not_freed(L, t);
    if (t->st->check_read)
        t->st->check_read(L, t->st);
    gcsh_graph_keep(L, idx, t->st, t->st->owner_data); /* while capturing (graph.h) */
    return t;
}

void gcsh_tensor_check_write(lua_State *L, const gcsh_tensor *t)
{
    if (t->st->check_write)
        t->st->check_write(L, t->st);
}

gcsh_tensor *gcsh_arg_tensor_out(lua_State *L, int idx)
{
    gcsh_tensor *t = gcsh_arg_tensor(L, idx);
    gcsh_tensor_check_write(L, t);
    return t;
}

void *gcsh_tensor_data(const gcsh_tensor *t)
{
    return (char *)t->st->base + t->offset * gcsh_dtype_size(t->dtype);
}

size_t gcsh_tensor_bytes(const gcsh_tensor *t)
{
    return t->n * gcsh_dtype_size(t->dtype);
}

static int on_host(const gcsh_tensor *t)
{
    return t->st->loc == GCSH_LOC_HOST;
}

/* Drops the handle's reference; with free_memory, the handle that allocated
 * the storage also releases the memory now (the tombstone every view sees). */
static void release_handle(lua_State *L, gcsh_tensor *t, int free_memory)
{
    gcsh_storage *st = t->st;
    if (!st)
        return;
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    t->st = NULL;
    if (free_memory && t->owns_memory)
        gcsh_storage_release(ctx, st);
    gcsh_storage_unref(ctx, st);
}

/* ---- Argument checks ------------------------------------------------------------- */

static int check_named_option(lua_State *L, int idx, int def, const char *kind,
                              int (*from_name)(const char *), const char *valid)
{
    if (lua_isnoneornil(L, idx))
        return def;
    const char *name = luaL_checkstring(L, idx);
    int v = from_name(name);
    if (v < 0)
        luaL_argerror(L, idx, lua_pushfstring(L, "unknown %s '%s' (valid: %s)", kind, name, valid));
    return v;
}

gcsh_dtype gcsh_arg_dtype(lua_State *L, int idx, gcsh_dtype def)
{
    return (gcsh_dtype)check_named_option(L, idx, def, "dtype", gcsh_dtype_from_name,
                                          gcsh_dtype_names());
}

gcsh_redop gcsh_arg_redop(lua_State *L, int idx, gcsh_redop def)
{
    return (gcsh_redop)check_named_option(L, idx, def, "op", gcsh_redop_from_name,
                                          gcsh_redop_names());
}

static void int_dtype_bounds(gcsh_dtype dt, int64_t *lo, int64_t *hi)
{
    switch (dt) {
    case GCSH_I32: *lo = INT32_MIN; *hi = INT32_MAX; break;
    case GCSH_U32: *lo = 0; *hi = UINT32_MAX; break;
    case GCSH_U8: *lo = 0; *hi = UINT8_MAX; break;
    case GCSH_I8: *lo = INT8_MIN; *hi = INT8_MAX; break;
    default: *lo = INT64_MIN; *hi = INT64_MAX; break;
    }
}

/* "value <v> <what>", with v formatted as Lua prints it (1.5, 300.0, inf). */
static const char *value_message(lua_State *L, int idx, char *buf, size_t len, const char *what)
{
    const char *text = luaL_tolstring(L, idx, NULL);
    snprintf(buf, len, "value %s %s", text, what);
    lua_pop(L, 1);
    return buf;
}

static const char *range_message(int64_t v, gcsh_dtype dt, char *buf, size_t len)
{
    int64_t lo, hi;
    int_dtype_bounds(dt, &lo, &hi);
    if (v >= lo && v <= hi)
        return NULL;
    snprintf(buf, len, "value %" PRId64 " out of range for %s (%" PRId64 "..%" PRId64 ")", v,
             gcsh_dtype_name(dt), lo, hi);
    return buf;
}

/* Reads the number at idx for dtype dt: for an integer dtype it must be
 * integral and fit int64, and comes back normalised to is_int (range_message
 * checks the dtype's own bounds).  Returns NULL, or what is wrong. */
static const char *read_number(lua_State *L, int idx, gcsh_dtype dt, gcsh_scalar *out,
                               char *buf, size_t len)
{
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) != LUA_TNUMBER) {
        snprintf(buf, len, "number expected, got %s", luaL_typename(L, idx));
        return buf;
    }
    if (lua_isinteger(L, idx)) {
        out->is_int = 1;
        out->i = lua_tointeger(L, idx);
        out->f = (double)out->i;
        return NULL;
    }
    out->is_int = 0;
    out->f = lua_tonumber(L, idx);
    out->i = 0;
    if (gcsh_dtype_is_float(dt))
        return NULL;
    double f = out->f;
    char what[128];
    if (!isfinite(f) || f != floor(f)) {
        snprintf(what, sizeof what, "is not an integer (%s holds integers)", gcsh_dtype_name(dt));
        return value_message(L, idx, buf, len, what);
    }
    /* Beyond int64 no integer dtype can hold it; inside, the dtype's own
     * range is checked by the caller (an arange step may be negative for u8). */
    if (f < -0x1p63 || f >= 0x1p63) {
        int64_t lo, hi;
        int_dtype_bounds(dt, &lo, &hi);
        snprintf(what, sizeof what, "out of range for %s (%" PRId64 "..%" PRId64 ")",
                 gcsh_dtype_name(dt), lo, hi);
        return value_message(L, idx, buf, len, what);
    }
    out->is_int = 1;
    out->i = (int64_t)f;
    return NULL;
}

/* read_number, then the dtype's range for integer dtypes. */
static const char *value_problem(lua_State *L, int idx, gcsh_dtype dt, gcsh_scalar *out,
                                 char *buf, size_t len)
{
    const char *msg = read_number(L, idx, dt, out, buf, len);
    if (msg || gcsh_dtype_is_float(dt))
        return msg;
    return range_message(out->i, dt, buf, len);
}

gcsh_scalar gcsh_arg_value(lua_State *L, int arg, gcsh_dtype dt)
{
    char buf[256];
    gcsh_scalar v;
    const char *msg = value_problem(L, arg, dt, &v, buf, sizeof buf);
    if (msg)
        luaL_argerror(L, arg, msg);
    return v;
}

/* An element index: an integer in 0..n-1. */
size_t gcsh_arg_index(lua_State *L, const gcsh_tensor *t, int idx)
{
    int isnum;
    lua_Integer i = lua_tointegerx(L, idx, &isnum);
    if (!isnum || lua_type(L, idx) != LUA_TNUMBER)
        luaL_error(L, "tensor index must be an integer, got %s", luaL_tolstring(L, idx, NULL));
    if (i < 0 || (lua_Unsigned)i >= t->n) {
        if (t->n == 0)
            luaL_error(L, "index %I out of range for tensor of length 0 (it is empty)", i);
        luaL_error(L, "index %I out of range for tensor of length %I (valid 0..%I)", i,
                   (lua_Integer)t->n, (lua_Integer)t->n - 1);
    }
    return (size_t)i;
}

static void check_backend(lua_State *L, gcsh_ctx *ctx, int rc)
{
    if (rc != 0)
        gcsh_raise(L, ctx);
}

void gcsh_host_copy(lua_State *L, void *dst, int dst_loc, const void *src, int src_loc,
                    size_t bytes)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (ctx->be->stream_ordered && !ctx->graph &&
        (dst_loc == GCSH_LOC_HOST || src_loc == GCSH_LOC_HOST))
        gcsh_check_end_sync(L);
    check_backend(L, ctx, ctx->be->mem->copy(ctx, dst, dst_loc, src, src_loc, bytes));
}

/* ---- Reading: direct on the host, staged through host memory otherwise ----------- */

static void read_element(lua_State *L, const gcsh_tensor *t, size_t i,
                         unsigned char out[MAX_ELEM_SIZE])
{
    gcsh_graph_refuse_now(L, "t[i] (a host read of a tensor)",
                          "a capture runs nothing, so the value is not there yet");
    size_t size = gcsh_dtype_size(t->dtype);
    const char *src = (const char *)gcsh_tensor_data(t) + i * size;
    if (on_host(t)) {
        gcsh_users_touch(L); /* the host's stream order (users.h) */
        memcpy(out, src, size);
        return;
    }
    gcsh_host_copy(L, out, GCSH_LOC_HOST, src, t->st->loc, size);
}

static void push_element_value(lua_State *L, const void *base, gcsh_dtype dt, size_t i)
{
    if (gcsh_dtype_is_float(dt))
        lua_pushnumber(L, gcsh_load_f(base, dt, i));
    else
        lua_pushinteger(L, gcsh_load_i(base, dt, i));
}

/* A sequential reader of a tensor's elements in host memory. */
typedef struct reader {
    lua_State *L;
    const gcsh_tensor *t;
    size_t size;
    size_t chunk;          /* elements per span */
    unsigned char *stage;  /* NULL when the tensor is on the host */
} reader;

/* May push a staging buffer, which must stay on the stack while r is used. */
static void reader_open(lua_State *L, reader *r, const gcsh_tensor *t)
{
    gcsh_graph_refuse_now(L, "a host read of a tensor (print, :totable, :sum, :equal...)",
                          "a capture runs nothing, so the values are not there yet");
    r->L = L;
    r->t = t;
    r->size = gcsh_dtype_size(t->dtype);
    if (on_host(t)) {
        gcsh_users_touch(L);
        r->stage = NULL;
        r->chunk = t->n ? t->n : 1;
    } else {
        r->stage = lua_newuserdatauv(L, STAGE_BYTES, 0);
        r->chunk = STAGE_BYTES / r->size;
    }
}

/* Host address of elements [first, first + count). */
static const void *reader_span(reader *r, size_t first, size_t count)
{
    const char *src = (const char *)gcsh_tensor_data(r->t) + first * r->size;
    if (!r->stage)
        return src;
    gcsh_host_copy(r->L, r->stage, GCSH_LOC_HOST, src, r->t->st->loc, count * r->size);
    return r->stage;
}

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* Calls fn on matching spans of a and b (same n); fn returns 0 to stop. */
typedef int (*pair_fn)(void *acc, const void *a, gcsh_dtype da, const void *b, gcsh_dtype db,
                       size_t count);

static void for_each_pair(lua_State *L, const gcsh_tensor *a, const gcsh_tensor *b, pair_fn fn,
                          void *acc)
{
    reader ra, rb;
    reader_open(L, &ra, a);
    reader_open(L, &rb, b);
    size_t chunk = min_size(ra.chunk, rb.chunk);
    for (size_t first = 0; first < a->n; first += chunk) {
        size_t count = min_size(chunk, a->n - first);
        const void *pa = reader_span(&ra, first, count);
        const void *pb = reader_span(&rb, first, count);
        if (!fn(acc, pa, a->dtype, pb, b->dtype, count))
            return;
    }
}

/* ---- Library functions: tensor.new, tensor.from ---------------------------------- */

static size_t check_length_arg(lua_State *L, int arg, lua_Integer n)
{
    if (n < 0 || (lua_Unsigned)n > GCSH_TENSOR_MAX_N)
        luaL_argerror(L, arg, lua_pushfstring(L, "length must be 0..%I, got %I",
                                              (lua_Integer)GCSH_TENSOR_MAX_N, n));
    return (size_t)n;
}

/* tensor.new(n [, dtype="f32"]): contents are unspecified until written. */
static int tensor_new(lua_State *L)
{
    size_t n = check_length_arg(L, 1, luaL_checkinteger(L, 1));
    gcsh_dtype dt = gcsh_arg_dtype(L, 2, GCSH_F32);
    gcsh_new_tensor(L, n, dt);
    return 1;
}

/* tensor.from(tbl [, dtype="f32"]): the default is f32 as for tensor.new,
 * not guessed from the values, so a script's dtype never depends on data. */
static int tensor_from(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    gcsh_args_none_after(L, 2, "a table and a dtype (no options)");
    gcsh_dtype dt = gcsh_arg_dtype(L, 2, GCSH_F32);
    size_t n = check_length_arg(L, 1, luaL_len(L, 1));
    size_t size = gcsh_dtype_size(dt);
    unsigned char *stage = lua_newuserdatauv(L, n * size, 0);
    for (size_t i = 0; i < n; i++) {
        char buf[256];
        gcsh_scalar v;
        lua_geti(L, 1, (lua_Integer)i + 1);
        const char *msg = value_problem(L, -1, dt, &v, buf, sizeof buf);
        if (msg)
            luaL_argerror(L, 1, lua_pushfstring(L, "item [%I]: %s", (lua_Integer)i + 1, msg));
        lua_pop(L, 1);
        gcsh_elem_store_scalar(stage, dt, i, v);
    }
    gcsh_tensor *t = gcsh_new_tensor(L, n, dt);
    gcsh_host_copy(L, gcsh_tensor_data(t), t->st->loc, stage, GCSH_LOC_HOST, n * size);
    return 1;
}

/* ---- Methods that write (through the backend); they return the tensor ------------ */

static int tensor_fill(lua_State *L)
{
    gcsh_tensor *t = gcsh_arg_tensor_out(L, 1);
    gcsh_scalar v = gcsh_arg_value(L, 2, t->dtype);
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    check_backend(L, ctx, ctx->be->mem->fill(ctx, gcsh_tensor_data(t), t->st->loc, t->dtype,
                                             t->n, v));
    lua_settop(L, 1);
    return 1;
}

static gcsh_scalar opt_number_arg(lua_State *L, int arg, gcsh_dtype dt, lua_Integer def)
{
    gcsh_scalar v = {.is_int = 1, .i = def, .f = (double)def};
    if (lua_isnoneornil(L, arg))
        return v;
    char buf[256];
    const char *msg = read_number(L, arg, dt, &v, buf, sizeof buf);
    if (msg)
        luaL_argerror(L, arg, msg);
    return v;
}

/* For integer dtypes the first and last values bound every element (the
 * sequence is monotone), so checking those two checks them all. */
static void check_int_arange(lua_State *L, const gcsh_tensor *t, gcsh_scalar start,
                             gcsh_scalar step)
{
    char buf[256];
    const char *msg = range_message(start.i, t->dtype, buf, sizeof buf);
    if (msg)
        luaL_argerror(L, 2, msg);
    if (t->n == 0)
        return;
    int64_t span = 0, last = 0;
    if (__builtin_mul_overflow((int64_t)(t->n - 1), step.i, &span) ||
        __builtin_add_overflow(start.i, span, &last))
        luaL_argerror(L, 3, lua_pushfstring(L, "element %I overflows 64 bits",
                                            (lua_Integer)t->n - 1));
    msg = range_message(last, t->dtype, buf, sizeof buf);
    if (msg)
        luaL_argerror(L, 3, lua_pushfstring(L, "element %I: %s", (lua_Integer)t->n - 1, msg));
}

/* t:arange([start=0 [, step=1]]): element i = start + i * step. */
static int tensor_arange(lua_State *L)
{
    gcsh_tensor *t = gcsh_arg_tensor_out(L, 1);
    gcsh_scalar start = opt_number_arg(L, 2, t->dtype, 0);
    gcsh_scalar step = opt_number_arg(L, 3, t->dtype, 1);
    if (!gcsh_dtype_is_float(t->dtype))
        check_int_arange(L, t, start, step);
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    check_backend(L, ctx, ctx->be->mem->arange(ctx, gcsh_tensor_data(t), t->st->loc, t->dtype,
                                               t->n, start, step));
    lua_settop(L, 1);
    return 1;
}

/* t:rand([seed]): see counter_rng.h for the values.  The default seed is
 * the rank, or with --seed N (gcsh.seed) N's and the rank's together. */
static int tensor_rand(lua_State *L)
{
    gcsh_tensor *t = gcsh_arg_tensor_out(L, 1);
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    lua_Integer dflt = ctx->seeded ? (lua_Integer)(((uint64_t)ctx->seed << 32) | (uint32_t)ctx->rank)
                                   : ctx->rank;
    uint64_t seed = (uint64_t)luaL_optinteger(L, 2, dflt);
    check_backend(L, ctx, ctx->be->mem->rand(ctx, gcsh_tensor_data(t), t->st->loc, t->dtype,
                                             t->n, seed));
    lua_settop(L, 1);
    return 1;
}

/* t:copy(src): same length and dtype; overlapping views are fine. */
static int tensor_copy(lua_State *L)
{
    gcsh_tensor *dst = gcsh_arg_tensor_out(L, 1);
    gcsh_tensor *src = gcsh_arg_tensor(L, 2);
    if (dst->dtype != src->dtype)
        luaL_error(L, "copy: dtype mismatch: destination %s, source %s",
                   gcsh_dtype_name(dst->dtype), gcsh_dtype_name(src->dtype));
    if (dst->n != src->n)
        luaL_error(L, "copy: length mismatch: destination %I, source %I", (lua_Integer)dst->n,
                   (lua_Integer)src->n);
    gcsh_host_copy(L, gcsh_tensor_data(dst), dst->st->loc, gcsh_tensor_data(src), src->st->loc,
                   gcsh_tensor_bytes(src));
    lua_settop(L, 1);
    return 1;
}

/* t[i] = v: the element is built on the host, then stored or copied. */
static void write_element(lua_State *L, gcsh_tensor *t, size_t i, int value_idx)
{
    char buf[256];
    gcsh_scalar v;
    const char *msg = value_problem(L, value_idx, t->dtype, &v, buf, sizeof buf);
    if (msg)
        luaL_error(L, "bad value for tensor element %I (%s)", (lua_Integer)i, msg);
    gcsh_graph_refuse_now(L, "t[i] = v (a host write of a tensor)",
                          "it would happen once, now, and not in the replays; use :fill");
    unsigned char elem[MAX_ELEM_SIZE];
    gcsh_elem_store_scalar(elem, t->dtype, 0, v);
    size_t size = gcsh_dtype_size(t->dtype);
    char *dst = (char *)gcsh_tensor_data(t) + i * size;
    if (on_host(t)) {
        gcsh_users_touch(L);
        memcpy(dst, elem, size);
        return;
    }
    gcsh_host_copy(L, dst, t->st->loc, elem, GCSH_LOC_HOST, size);
}

/* ---- Views and release ----------------------------------------------------------- */

/* t:view(offset [, n = #t - offset]): shares t's storage. */
static int tensor_view(lua_State *L)
{
    gcsh_tensor *t = gcsh_arg_tensor(L, 1);
    lua_Integer len = (lua_Integer)t->n;
    lua_Integer offset = luaL_checkinteger(L, 2);
    if (offset < 0 || offset > len)
        luaL_argerror(L, 2, lua_pushfstring(L, "offset must be 0..%I, got %I", len, offset));
    lua_Integer n = luaL_optinteger(L, 3, len - offset);
    if (n < 0)
        luaL_argerror(L, 3, lua_pushfstring(L, "n must be >= 0, got %I", n));
    if (n > len - offset) {
        lua_Integer end = 0;
        if (__builtin_add_overflow(offset, n, &end))
            luaL_argerror(L, 3, lua_pushfstring(L, "offset %I + n %I exceeds length %I", offset,
                                                n, len));
        luaL_argerror(L, 3, lua_pushfstring(L, "offset %I + n %I = %I exceeds length %I", offset,
                                            n, end, len));
    }
    gcsh_push_tensor(L, t->st, t->offset + (size_t)offset, (size_t)n, t->dtype);
    return 1;
}

/* t:as(dtype): the same bytes seen as dtype (a view sharing t's memory,
 * as numpy's view(dtype)): t's bytes must be a whole number of dtype's
 * elements, starting at a multiple of its size in the storage. */
static int tensor_as(lua_State *L)
{
    gcsh_tensor *t = gcsh_arg_tensor(L, 1);
    luaL_checkany(L, 2);
    gcsh_dtype to = gcsh_arg_dtype(L, 2, t->dtype);
    size_t from_es = gcsh_dtype_size(t->dtype), to_es = gcsh_dtype_size(to);
    size_t start = t->offset * from_es, bytes = t->n * from_es;
    if (bytes % to_es != 0)
        return luaL_error(L, "as: %I %s elements (%I bytes) are not a whole number of %s "
                             "elements (%I bytes each)",
                          (lua_Integer)t->n, gcsh_dtype_name(t->dtype), (lua_Integer)bytes,
                          gcsh_dtype_name(to), (lua_Integer)to_es);
    if (start % to_es != 0)
        return luaL_error(L, "as: the view starts at byte %I of its memory, not a multiple of "
                             "%s's %I bytes",
                          (lua_Integer)start, gcsh_dtype_name(to), (lua_Integer)to_es);
    gcsh_push_tensor(L, t->st, start / to_es, bytes / to_es, to);
    return 1;
}

/* :free() and __close: the allocating handle releases the memory now. */
static int tensor_free(lua_State *L)
{
    gcsh_tensor *t = luaL_checkudata(L, 1, GCSH_TENSOR_MT);
    /* the memory goes now, or with this last reference: not under a graph */
    if (t->st && t->st->base && (t->owns_memory || (t->st->refs == 1 && t->st->release)))
        gcsh_users_refuse(L, t->st, "t:free()");
    release_handle(L, t, 1);
    return 0;
}

/* __gc: only this handle's reference; views keep the memory alive. */
static int tensor_gc(lua_State *L)
{
    release_handle(L, luaL_checkudata(L, 1, GCSH_TENSOR_MT), 0);
    return 0;
}

/* ---- Methods that read ----------------------------------------------------------- */

static int tensor_totable(lua_State *L)
{
    gcsh_tensor *t = gcsh_arg_tensor(L, 1);
    if (t->n > INT_MAX)
        luaL_error(L, "totable: tensor of length %I is too long for a Lua table",
                   (lua_Integer)t->n);
    reader r;
    reader_open(L, &r, t);
    lua_createtable(L, (int)t->n, 0);
    for (size_t first = 0; first < t->n; first += r.chunk) {
        size_t count = min_size(r.chunk, t->n - first);
        const void *p = reader_span(&r, first, count);
        for (size_t j = 0; j < count; j++) {
            push_element_value(L, p, t->dtype, j);
            lua_rawseti(L, -2, (lua_Integer)(first + j) + 1);
        }
    }
    return 1;
}

/* Floats: a double accumulator, in element order.  Integers: int64 with
 * wrap-around (computed unsigned, so overflow is defined). */
static int tensor_sum(lua_State *L)
{
    gcsh_tensor *t = gcsh_arg_tensor(L, 1);
    int is_float = gcsh_dtype_is_float(t->dtype);
    double fsum = 0;
    uint64_t isum = 0;
    reader r;
    reader_open(L, &r, t);
    for (size_t first = 0; first < t->n; first += r.chunk) {
        size_t count = min_size(r.chunk, t->n - first);
        const void *p = reader_span(&r, first, count);
        for (size_t j = 0; j < count; j++) {
            if (is_float)
                fsum += gcsh_load_f(p, t->dtype, j);
            else
                isum += (uint64_t)gcsh_load_i(p, t->dtype, j);
        }
    }
    if (is_float)
        lua_pushnumber(L, fsum);
    else
        lua_pushinteger(L, (lua_Integer)isum);
    return 1;
}

/* Element-wise comparisons need equal lengths; dtypes may differ (values
 * are compared, exactly as int64 when both are integer dtypes). */
static void check_same_length(lua_State *L, const char *what, const gcsh_tensor *a,
                              const gcsh_tensor *b)
{
    if (a->n != b->n)
        luaL_error(L, "%s: length mismatch: %I vs %I", what, (lua_Integer)a->n,
                   (lua_Integer)b->n);
}

static int both_int(gcsh_dtype da, gcsh_dtype db)
{
    return !gcsh_dtype_is_float(da) && !gcsh_dtype_is_float(db);
}

static int equal_span(void *acc, const void *a, gcsh_dtype da, const void *b, gcsh_dtype db,
                      size_t count)
{
    int *equal = acc;
    int ints = both_int(da, db);
    for (size_t j = 0; j < count; j++) {
        int same = ints ? gcsh_load_i(a, da, j) == gcsh_load_i(b, db, j)
                        : gcsh_load_f(a, da, j) == gcsh_load_f(b, db, j);
        if (!same) {
            *equal = 0;
            return 0;
        }
    }
    return 1;
}

/* t:equal(u): every element equal by value (NaN is never equal; -0 == 0). */
static int tensor_equal(lua_State *L)
{
    gcsh_tensor *a = gcsh_arg_tensor(L, 1), *b = gcsh_arg_tensor(L, 2);
    check_same_length(L, "equal", a, b);
    int equal = 1;
    for_each_pair(L, a, b, equal_span, &equal);
    lua_pushboolean(L, equal);
    return 1;
}

typedef struct close_acc {
    double rtol, atol;
    int close;
} close_acc;

/* numpy.isclose with equal_nan=False: |a - b| <= atol + rtol * |b|, and
 * equal infinities are close. */
static int close_span(void *acc, const void *a, gcsh_dtype da, const void *b, gcsh_dtype db,
                      size_t count)
{
    close_acc *c = acc;
    for (size_t j = 0; j < count; j++) {
        double x = gcsh_load_f(a, da, j), y = gcsh_load_f(b, db, j);
        int close = x == y ||
                    (isfinite(x) && isfinite(y) && fabs(x - y) <= c->atol + c->rtol * fabs(y));
        if (!close) {
            c->close = 0;
            return 0;
        }
    }
    return 1;
}

static double check_tolerance_arg(lua_State *L, int arg, double def, const char *name)
{
    double v = luaL_optnumber(L, arg, def);
    if (!(v >= 0))
        luaL_argerror(L, arg, lua_pushfstring(L, "%s must be >= 0, got %f", name, v));
    return v;
}

/* t:allclose(u [, rtol=1e-5 [, atol=1e-8]]), numpy semantics (u is the
 * reference that rtol scales). */
static int tensor_allclose(lua_State *L)
{
    gcsh_tensor *a = gcsh_arg_tensor(L, 1), *b = gcsh_arg_tensor(L, 2);
    close_acc c = {.rtol = check_tolerance_arg(L, 3, 1e-5, "rtol"),
                   .atol = check_tolerance_arg(L, 4, 1e-8, "atol"),
                   .close = 1};
    check_same_length(L, "allclose", a, b);
    for_each_pair(L, a, b, close_span, &c);
    lua_pushboolean(L, c.close);
    return 1;
}

static int maxdiff_span(void *acc, const void *a, gcsh_dtype da, const void *b, gcsh_dtype db,
                        size_t count)
{
    double *max = acc;
    int ints = both_int(da, db);
    for (size_t j = 0; j < count; j++) {
        double d;
        if (ints) {
            int64_t x = gcsh_load_i(a, da, j), y = gcsh_load_i(b, db, j);
            d = x > y ? (double)((uint64_t)x - (uint64_t)y) : (double)((uint64_t)y - (uint64_t)x);
        } else {
            double x = gcsh_load_f(a, da, j), y = gcsh_load_f(b, db, j);
            d = x == y ? 0.0 : fabs(x - y);
        }
        if (isnan(d)) {
            *max = NAN;
            return 0;
        }
        if (d > *max)
            *max = d;
    }
    return 1;
}

/* t:maxdiff(u): max |t[i] - u[i]| as a float; 0 for empty tensors, NaN when
 * any element is NaN (a NaN should never hide behind a small maximum). */
static int tensor_maxdiff(lua_State *L)
{
    gcsh_tensor *a = gcsh_arg_tensor(L, 1), *b = gcsh_arg_tensor(L, 2);
    check_same_length(L, "maxdiff", a, b);
    double max = 0;
    for_each_pair(L, a, b, maxdiff_span, &max);
    lua_pushnumber(L, max);
    return 1;
}

/* 64-bit FNV-1a of the raw element bytes, as "0x%016x": the same string on
 * every backend for the same bits. */
static int tensor_checksum(lua_State *L)
{
    gcsh_tensor *t = gcsh_arg_tensor(L, 1);
    uint64_t h = 0xcbf29ce484222325ULL;
    reader r;
    reader_open(L, &r, t);
    for (size_t first = 0; first < t->n; first += r.chunk) {
        size_t count = min_size(r.chunk, t->n - first);
        const unsigned char *p = reader_span(&r, first, count);
        for (size_t j = 0; j < count * r.size; j++) {
            h ^= p[j];
            h *= 0x100000001b3ULL;
        }
    }
    char text[24];
    snprintf(text, sizeof text, "0x%016" PRIx64, h);
    lua_pushstring(L, text);
    return 1;
}

/* ---- Metamethods ----------------------------------------------------------------- */

static void format_element(char *out, size_t len, const void *elem, gcsh_dtype dt)
{
    if (!gcsh_dtype_is_float(dt)) {
        snprintf(out, len, "%" PRId64, gcsh_load_i(elem, dt, 0));
        return;
    }
    double v = gcsh_load_f(elem, dt, 0);
    int digits = dt == GCSH_F64 ? 10 : dt == GCSH_F32 ? 7 : 4;
    if (isnan(v))
        snprintf(out, len, "nan"); /* not glibc's "-nan": the sign bit of a NaN means nothing */
    else
        snprintf(out, len, "%.*g", digits, v);
}

static void add_element_text(lua_State *L, luaL_Buffer *b, const gcsh_tensor *t, size_t i)
{
    unsigned char elem[MAX_ELEM_SIZE];
    char text[64];
    read_element(L, t, i, elem);
    format_element(text, sizeof text, elem, t->dtype);
    luaL_addstring(b, text);
}

/* tensor(f32, 8, host) [0, 1, 2, 3, 4, 5, 6, 7]; longer tensors show the
 * first and last PRINT_ENDS elements around "...". */
static int tensor_tostring(lua_State *L)
{
    gcsh_tensor *t = luaL_checkudata(L, 1, GCSH_TENSOR_MT);
    const char *owner = freed_owner(t);
    if (owner) {
        lua_pushfstring(L, "tensor (freed %s)", owner);
        return 1;
    }
    if (t->st->check_read)
        t->st->check_read(L, t->st);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    char head[128];
    snprintf(head, sizeof head, "tensor(%s, %zu, %s) [", gcsh_dtype_name(t->dtype), t->n,
             t->st->where);
    luaL_addstring(&b, head);
    int elide = t->n > PRINT_ALL_MAX;
    for (size_t i = 0; i < t->n; i++) {
        if (elide && i == PRINT_ENDS) {
            luaL_addstring(&b, ", ...");
            i = t->n - PRINT_ENDS;
        }
        if (i > 0)
            luaL_addstring(&b, ", ");
        add_element_text(L, &b, t, i);
    }
    luaL_addchar(&b, ']');
    luaL_pushresult(&b);
    return 1;
}

static int tensor_len(lua_State *L)
{
    gcsh_tensor *t = gcsh_arg_tensor(L, 1);
    lua_pushinteger(L, (lua_Integer)t->n);
    return 1;
}

/* Read-only fields; nil for any other name, as for a Lua table. */
static int push_field(lua_State *L, const char *key)
{
    if (strcmp(key, "n") == 0 || strcmp(key, "dtype") == 0 || strcmp(key, "where") == 0 ||
        strcmp(key, "offset") == 0) {
        gcsh_tensor *t = gcsh_arg_tensor(L, 1);
        if (key[0] == 'n')
            lua_pushinteger(L, (lua_Integer)t->n);
        else if (key[0] == 'o') /* elements from the start of its memory (a view's start) */
            lua_pushinteger(L, (lua_Integer)t->offset);
        else if (key[0] == 'd')
            lua_pushstring(L, gcsh_dtype_name(t->dtype));
        else
            lua_pushstring(L, t->st->where);
        return 1;
    }
    /* what numpy, torch and comm (c.size) users type for the length */
    static const char *const length_words[] = {"size", "len", "length", "numel", NULL};
    for (const char *const *w = length_words; *w; w++)
        if (strcmp(key, *w) == 0)
            return luaL_error(L, "a tensor has no field '%s': its length is t.n (or #t)", key);
    lua_pushnil(L);
    return 1;
}

/* __index: strings are methods (upvalue 1) or fields; numbers are elements.
 * Methods are found even on a freed tensor, so t:free() stays idempotent. */
static int tensor_index(lua_State *L)
{
    luaL_checkudata(L, 1, GCSH_TENSOR_MT);
    if (lua_type(L, 2) == LUA_TSTRING) {
        lua_pushvalue(L, 2);
        if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL)
            return 1;
        return push_field(L, lua_tostring(L, 2));
    }
    gcsh_tensor *t = gcsh_arg_tensor(L, 1);
    size_t i = gcsh_arg_index(L, t, 2);
    unsigned char elem[MAX_ELEM_SIZE];
    read_element(L, t, i, elem);
    push_element_value(L, elem, t->dtype, 0);
    return 1;
}

static int tensor_newindex(lua_State *L)
{
    luaL_checkudata(L, 1, GCSH_TENSOR_MT);
    if (lua_type(L, 2) == LUA_TSTRING)
        return luaL_error(L, "cannot set field '%s' of a tensor (tensors have no writable fields)",
                          lua_tostring(L, 2));
    gcsh_tensor *t = gcsh_arg_tensor_out(L, 1);
    size_t i = gcsh_arg_index(L, t, 2);
    write_element(L, t, i, 3);
    return 0;
}

/* ---- Registration ---------------------------------------------------------------- */

static const luaL_Reg funcs[] = {
    {"new", tensor_new},
    {"from", tensor_from},
    {NULL, NULL},
};

static const luaL_Reg meth[] = {
    {"fill", tensor_fill},
    {"arange", tensor_arange},
    {"rand", tensor_rand},
    {"copy", tensor_copy},
    {"view", tensor_view},
    {"as", tensor_as},
    {"totable", tensor_totable},
    {"sum", tensor_sum},
    {"equal", tensor_equal},
    {"allclose", tensor_allclose},
    {"maxdiff", tensor_maxdiff},
    {"checksum", tensor_checksum},
    {"free", tensor_free},
    {NULL, NULL},
};

static const luaL_Reg metameth[] = {
    {"__newindex", tensor_newindex},
    {"__len", tensor_len},
    {"__tostring", tensor_tostring},
    {"__gc", tensor_gc},
    {"__close", tensor_free},
    {"__index", NULL}, /* placeholder: set below with the method table */
    {NULL, NULL},
};

static void create_metatable(lua_State *L)
{
    gcsh_new_type(L, GCSH_TENSOR_MT, meth, metameth, tensor_index);
}

int luaopen_gcsh_tensor(lua_State *L)
{
    create_metatable(L);
    luaL_newlib(L, funcs);
    lua_createtable(L, GCSH_NDTYPES, 0);
    for (int i = 0; i < GCSH_NDTYPES; i++) {
        lua_pushstring(L, gcsh_dtype_name((gcsh_dtype)i));
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "dtypes");
    return 1;
}

int luaopen_gcsh_dtypes(lua_State *L)
{
    lua_createtable(L, 0, GCSH_NDTYPES);
    for (int i = 0; i < GCSH_NDTYPES; i++) {
        gcsh_dtype dt = (gcsh_dtype)i;
        lua_createtable(L, 0, 5);
        lua_pushinteger(L, i + 1); /* the table's order, for lists of names */
        lua_setfield(L, -2, "order");
        lua_pushinteger(L, (lua_Integer)gcsh_dtype_size(dt));
        lua_setfield(L, -2, "size");
        lua_pushboolean(L, gcsh_dtype_is_float(dt));
        lua_setfield(L, -2, "float");
        lua_pushinteger(L, gcsh_dtype_bits(dt));
        lua_setfield(L, -2, "bits");
        if (gcsh_dtype_is_float(dt)) {
            lua_pushnumber(L, gcsh_dtype_rtol(dt));
            lua_setfield(L, -2, "rtol");
        }
        lua_setfield(L, -2, gcsh_dtype_name(dt));
    }
    return 1;
}
