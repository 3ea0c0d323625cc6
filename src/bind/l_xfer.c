/* The "xfer" Lua type: one-sided transfers between this rank and a peer's
 * slice of a window, prepared once and posted many times.
 *
 *   x = w:put(peer, src [, dst_offset=0 [, opts]])   src -> peer's slice at dst_offset
 *   x = w:get(peer, dst [, src_offset=0 [, opts]])   peer's slice at src_offset -> dst
 *   x = w:putv(peer, {{src, dst_offset [, peer=r] [, window=w]}, ...} [, opts])
 *                       every src into the peer's slice: one operation (one kernel
 *                       with engine "sm"); peer= and window= in a descriptor must
 *                       name the same peer and window as the call
 *   opts: engine = "ce" (copy engine; put/get default) | "sm" (a kernel; putv default);
 *         signal = {s, slot [, value=1]} (put and putv): after the data has
 *         landed, add value to the peer's word slot of signals s (release),
 *         so the peer's s:wait(slot, ...) sees the data
 *   x:post()            enqueue on the rank's stream; returns x
 *   x:test()            "pending" | "done" | "error" (and why)
 *   x:wait()            the rank's stream waits for the last post (CPU returns)
 *   x:wait{cpu=true [, timeout=S]}   the CPU waits; "transfer stalled" after S
 *   x:cancel()          release a handle not in flight (idempotent; :free()
 *                       and __close too)
 *   x.op x.peer x.engine x.bytes x.segments x.posts
 *   w:fence()           what this rank issued before lands before what it
 *                       issues after (to every peer; stream-ordered on cuda)
 *   c:quiet()           returns once everything this rank issued completed
 *                       at its target (the CPU waits)
 *
 * Offsets and counts are in elements of the window's dtype; src and dst
 * tensors have that dtype and live where this rank's transfers run
 * (gcsh.device).  Everything is checked when the handle is made, before any
 * copy: the peer is in the window's team, every range is inside the window,
 * the dtypes match, no two destinations of a putv overlap, no source
 * overlaps a destination, descriptor lists are not empty.  A post checks
 * again only what can change: the handle is not cancelled and its window,
 * signals and tensors are not freed.
 *
 * Status: "error" means the last post failed, the GPU reported a fault, or
 * the handle can no longer be posted (cancelled, or its window, signals or a
 * tensor was freed); the second result says which.  test() and wait() on a
 * handle never posted raise.  On the host backend a post completes before it
 * returns (host_xfer.c), so "pending" is seen on cuda only.
 *
 * Freeing a window or signals while a transfer that uses it is in flight on
 * any rank is refused on every rank: a posted transfer is attached to its
 * window and signals (symmem.h), whose free asks the backend about it. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "wire/out.h"
#include "bind/graph.h"
#include "bind/opts.h"
#include "bind/users.h"
#include "bind/xfer.h"
#include "wire/faults.h"

#define XFER_MT "xfer"
/* A sanity bound on putv descriptors: far above any real scatter list. */
#define MAX_SEGMENTS ((size_t)1 << 22)
/* User values of a handle: the window and the signals it uses (kept alive). */
enum { UV_WINDOW = 1, UV_SIGNALS = 2, UV_COUNT = 2 };

typedef enum xfer_op { OP_PUT, OP_GET, OP_PUTV } xfer_op;
static const char *const op_names[] = {"put", "get", "putv"};

typedef struct lxfer lxfer;
struct lxfer {
    gcsh_xfer_impl *impl;   /* NULL when closed: never prepared, or cancelled */
    xfer_op op;
    gcsh_xfer_engine engine;
    gcsh_symobj *win;       /* alive while UV_WINDOW holds its handle */
    gcsh_symobj *sig;       /* or NULL; UV_SIGNALS */
    int peer;               /* a rank of the window's communicator */
    size_t nseg, bytes;
    gcsh_storage **local;   /* [nseg]: each segment's tensor storage, one reference each */
    uint64_t posts;
    int net;                /* the peer is reached over the network, not loads and stores */
    int cancelled;
    int failed;             /* the last post failed: why says how */
    char why[256];
    size_t signal_slot;     /* with sig: the slot and the value each post adds */
    uint64_t signal_value;
};

/* What the argument readers collect before the handle exists. */
typedef struct seg_meta {
    gcsh_storage *st;   /* the local tensor's storage */
    size_t off, n;      /* the window range, in elements */
} seg_meta;

typedef struct plan_args {
    const char *fname;
    gcsh_symobj *win;
    int team_index, peer;
    gcsh_xfer_engine engine;
    gcsh_symobj *sig;
    int sig_arg;            /* stack index of the signals userdata, or 0 */
    uint64_t *signal;
    uint64_t signal_value;
    size_t signal_slot;
    size_t nseg;
    gcsh_xfer_seg *seg;     /* scratch userdata on the stack */
    seg_meta *meta;
} plan_args;

static const gcsh_xfer_ops *xfer_ops(lua_State *L)
{
    return gcsh_ctx_of(L)->be->xfer;
}

/* ---- Argument readers ------------------------------------------------------------ */

/* A value's type as luaL_typeerror names it: "tensor", "window", ... */
static const char *type_name(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    if (luaL_getmetafield(L, idx, "__name") == LUA_TSTRING)
        return lua_tostring(L, -1); /* stays on the stack until the error */
    return luaL_typename(L, idx);
}

static size_t check_offset(lua_State *L, int arg, const char *name)
{
    if (lua_isnoneornil(L, arg))
        return 0;
    int isint = 0;
    lua_Integer v = lua_tointegerx(L, arg, &isint);
    if (lua_type(L, arg) != LUA_TNUMBER || !isint || v < 0)
        luaL_argerror(L, arg, lua_pushfstring(L, "%s must be an integer >= 0, got %s", name,
                                              luaL_tolstring(L, arg, NULL)));
    return (size_t)v;
}

/* A tensor that this rank's transfers can read or write: the window's dtype,
 * in the memory where the rank's copies run. */
static gcsh_tensor *check_local_tensor(lua_State *L, int idx, const plan_args *a, int arg,
                                       const char *what)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_tensor *t = luaL_testudata(L, idx, GCSH_TENSOR_MT);
    if (!t)
        luaL_argerror(L, arg, lua_pushfstring(L, "%s: tensor expected, got %s", what,
                                              type_name(L, idx)));
    t = gcsh_arg_tensor(L, idx); /* freed -> "attempt to use a freed ..." */
    if (t->dtype != a->win->dtype)
        luaL_argerror(L, arg, lua_pushfstring(L, "%s is %s but the window is %s (dtypes must match)",
                                              what, gcsh_dtype_name(t->dtype),
                                              gcsh_dtype_name(a->win->dtype)));
    if (t->st->loc != ctx->loc)
        luaL_argerror(L, arg, lua_pushfstring(L, "%s lives in %s, but this rank's transfers run on %s",
                                              what, t->st->where, ctx->device));
    return t;
}

static void check_range(lua_State *L, const plan_args *a, int arg, const char *what, size_t off,
                        size_t n)
{
    if (off > a->win->n || n > a->win->n - off)
        luaL_argerror(L, arg,
                      lua_pushfstring(L, "%s %I + %I elements runs past the window's %I elements",
                                      what, (lua_Integer)off, (lua_Integer)n,
                                      (lua_Integer)a->win->n));
}

static void read_engine(lua_State *L, int opts, int arg, plan_args *a)
{
    const char *engines = xfer_ops(L)->engines;
    lua_getfield(L, opts, "engine");
    if (!lua_isnil(L, -1)) {
        const char *e = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        if (!e)
            luaL_argerror(L, arg, lua_pushfstring(L, "engine must be a string, got %s",
                                                  type_name(L, -1)));
        if (!gcsh_opts_listed(engines, e))
            luaL_argerror(L, arg, lua_pushfstring(L, "unknown engine '%s' (valid: %s)", e, engines));
        a->engine = strcmp(e, "sm") == 0 ? GCSH_XFER_SM : GCSH_XFER_CE;
    }
    lua_pop(L, 1);
}

/* The signal's slot, field 2 of the signal table. */
static size_t read_signal_slot(lua_State *L, int sig, int arg, lua_Integer max)
{
    lua_rawgeti(L, sig, 2);
    if (lua_isnil(L, -1))
        luaL_argerror(L, arg, "signal needs {s, slot [, value]}: no slot");
    int isint = 0;
    lua_Integer v = lua_tointegerx(L, -1, &isint);
    if (lua_type(L, -1) != LUA_TNUMBER || !isint || v < 0 || v > max)
        luaL_argerror(L, arg, lua_pushfstring(L, "signal slot must be an integer 0..%I, got %s", max,
                                              luaL_tolstring(L, -1, NULL)));
    lua_pop(L, 1);
    return (size_t)v;
}

/* The value added to the word: field 3 or value= (not both), 1 by default;
 * a u64 word as s:add takes it (symmem.h). */
static uint64_t read_signal_value(lua_State *L, int sig, int arg)
{
    int top = lua_gettop(L);
    lua_rawgeti(L, sig, 3);
    lua_getfield(L, sig, "value");
    if (!lua_isnil(L, -1) && !lua_isnil(L, -2))
        luaL_argerror(L, arg, "signal value given twice ({s, slot, v} or {s, slot, value = v})");
    if (lua_isnil(L, -1))
        lua_pop(L, 1);
    uint64_t v = 1;
    if (!lua_isnil(L, -1) && !gcsh_sym_word_value(L, -1, &v))
        luaL_argerror(L, arg, lua_pushfstring(L, "signal value must be " GCSH_SYM_WORD_RANGE
                                                 ", got %s",
                                              luaL_tolstring(L, -1, NULL)));
    lua_settop(L, top);
    return v;
}

/* signal = {s, slot [, value=1]} or {s, slot, value = v}: s on the window's
 * communicator, the peer in its team; resolves the peer's word. */
static void read_signal(lua_State *L, int opts, int arg, plan_args *a)
{
    lua_getfield(L, opts, "signal");
    int sig = lua_gettop(L);
    if (lua_isnil(L, sig)) {
        lua_pop(L, 1);
        return;
    }
    if (!lua_istable(L, sig))
        luaL_argerror(L, arg, lua_pushfstring(L, "signal must be a table {s, slot [, value]}, got %s",
                                              type_name(L, sig)));
    char key[64];
    if (gcsh_opts_unknown(L, sig, 3, "value", key, sizeof key))
        luaL_argerror(L, arg, lua_pushfstring(L, "signal: unknown key '%s' (valid: {s, slot [, "
                                                 "value]} or {s, slot, value = v})",
                                              key));
    lua_rawgeti(L, sig, 1);
    gcsh_symobj **h = luaL_testudata(L, -1, GCSH_SIGNALS_MT);
    if (!h)
        luaL_argerror(L, arg, lua_pushfstring(L, "signal[1] must be signals, got %s",
                                              type_name(L, -1)));
    gcsh_symobj *s = gcsh_sym_check_open(L, -1, GCSH_SIGNALS_MT);
    if (s->comm != a->win->comm)
        luaL_argerror(L, arg, "the signals are on another communicator than the window");
    int member = gcsh_sym_team_index(s, a->peer);
    if (member < 0 && !gcsh_sym_net_reaches(L, s, a->peer))
        luaL_argerror(L, arg, gcsh_sym_push_unreachable(L, s, a->peer));
    size_t slot = read_signal_slot(L, sig, arg, (lua_Integer)s->n - 1);
    a->signal_value = read_signal_value(L, sig, arg);
    a->sig = s;
    a->signal_slot = slot;
    /* over the network: the word's byte offset in the peer's slice */
    a->signal = member >= 0 ? (uint64_t *)s->desc.peer[member] + slot
                            : (uint64_t *)(uintptr_t)(slot * sizeof(uint64_t));
    lua_remove(L, sig); /* the signals userdata stays, for the handle's user value */
    a->sig_arg = lua_gettop(L);
}

/* Options at opts (argument #arg to the user): nil or a table.  The engine
 * defaults to `engine`: the copy engine for put and get, a kernel for putv
 * (one launch moves every segment; one copy per segment costs ~0.6 us each). */
static void read_opts(lua_State *L, int opts, int arg, plan_args *a, int with_signal,
                      gcsh_xfer_engine engine)
{
    a->engine = engine;
    if (!gcsh_opts_check_arg(L, opts, arg, with_signal ? "engine signal" : "engine"))
        return;
    read_engine(L, opts, arg, a);
    if (with_signal)
        read_signal(L, opts, arg, a);
}

/* ---- Overlap checks: destinations pairwise disjoint, no source on a destination ---- */

typedef struct span {
    uintptr_t lo, hi; /* [lo, hi) */
    size_t index;     /* 0-based segment */
} span;

static int span_order(const void *pa, const void *pb)
{
    const span *a = pa, *b = pb;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

static span make_span(const void *p, size_t bytes, size_t index)
{
    span s = {(uintptr_t)p, (uintptr_t)p + bytes, index};
    return s;
}

/* The first destination (sorted, disjoint) that overlaps [lo, hi), or NULL. */
static const span *find_overlap(const span *dst, size_t n, uintptr_t lo, uintptr_t hi)
{
    size_t a = 0, b = n; /* the first whose hi > lo: his are sorted too */
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (dst[mid].hi <= lo)
            a = mid + 1;
        else
            b = mid;
    }
    return a < n && dst[a].lo < hi ? &dst[a] : NULL;
}

static void describe_segment(lua_State *L, const plan_args *a, size_t i)
{
    if (a->nseg == 1)
        lua_pushfstring(L, "the range at %I (%I elements)", (lua_Integer)a->meta[i].off,
                        (lua_Integer)a->meta[i].n);
    else
        lua_pushfstring(L, "descriptor %I (offset %I, %I elements)", (lua_Integer)i + 1,
                        (lua_Integer)a->meta[i].off, (lua_Integer)a->meta[i].n);
}

/* "elements 4..11": where [p, p + bytes) lies in the peer's slice, which
 * holds both sides of an overlap (the window's side is in it, and the
 * local side overlaps that) */
static const char *slice_elements(lua_State *L, const plan_args *a, const void *p, size_t bytes)
{
    size_t es = gcsh_dtype_size(a->win->dtype);
    size_t first = (size_t)((const char *)p - (const char *)a->win->desc.peer[a->team_index]) / es;
    return lua_pushfstring(L, "elements %I..%I", (lua_Integer)first,
                           (lua_Integer)(first + bytes / es - 1));
}

/* Segment i's source overlaps segment j's destination: both named by where
 * they are in the peer's slice (a segment's offset names only its window
 * side, which for a put is its destination). */
static void overlap_error(lua_State *L, const plan_args *a, int arg, size_t i, size_t j)
{
    const char *src = slice_elements(L, a, a->seg[i].src, a->seg[i].bytes);
    const char *dst = slice_elements(L, a, a->seg[j].dst, a->seg[j].bytes);
    if (a->nseg == 1)
        luaL_argerror(L, arg, lua_pushfstring(L, "the source (%s of rank %d's slice) overlaps the "
                                                 "destination (%s)",
                                              src, a->peer, dst));
    luaL_argerror(L, arg, lua_pushfstring(L, "the source of descriptor %I (%s of rank %d's slice) "
                                             "overlaps the destination of descriptor %I (%s)",
                                          (lua_Integer)i + 1, src, a->peer, (lua_Integer)j + 1,
                                          dst));
}

static void check_overlaps(lua_State *L, const plan_args *a, int arg)
{
    span *dst = lua_newuserdatauv(L, a->nseg * sizeof *dst, 0);
    size_t n = 0;
    for (size_t i = 0; i < a->nseg; i++)
        if (a->seg[i].bytes)
            dst[n++] = make_span(a->seg[i].dst, a->seg[i].bytes, i);
    qsort(dst, n, sizeof *dst, span_order);
    for (size_t k = 1; k < n; k++)
        if (dst[k].lo < dst[k - 1].hi) {
            size_t i = dst[k].index > dst[k - 1].index ? dst[k].index : dst[k - 1].index;
            size_t j = dst[k].index > dst[k - 1].index ? dst[k - 1].index : dst[k].index;
            describe_segment(L, a, i);
            describe_segment(L, a, j);
            luaL_argerror(L, arg, lua_pushfstring(L, "destinations overlap: %s and %s",
                                                  lua_tostring(L, -2), lua_tostring(L, -1)));
        }
    /* over the network the far side is another process's memory */
    for (size_t i = 0; a->team_index >= 0 && i < a->nseg; i++) {
        const gcsh_xfer_seg *s = &a->seg[i];
        const span *hit = s->bytes ? find_overlap(dst, n, (uintptr_t)s->src,
                                                  (uintptr_t)s->src + s->bytes)
                                   : NULL;
        if (!hit)
            continue;
        overlap_error(L, a, arg, i, hit->index);
    }
    lua_pop(L, 1);
}

/* ---- Building a handle ----------------------------------------------------------- */

static void alloc_segments(lua_State *L, plan_args *a, size_t nseg)
{
    a->nseg = nseg;
    a->seg = lua_newuserdatauv(L, nseg * sizeof *a->seg, 0);
    a->meta = lua_newuserdatauv(L, nseg * sizeof *a->meta, 0);
}

/* The window range's address here, or over the network (a peer off the
 * team) its byte offset in the peer's slice. */
static void *window_address(const plan_args *a, size_t off)
{
    size_t bytes = off * gcsh_dtype_size(a->win->dtype);
    if (a->team_index < 0)
        return (void *)(uintptr_t)bytes;
    return (char *)a->win->desc.peer[a->team_index] + bytes;
}

/* Records segment i: the local tensor t and the window range [off, off + #t). */
static void set_segment(plan_args *a, size_t i, const gcsh_tensor *t, size_t off, int to_window)
{
    void *local = gcsh_tensor_data(t), *remote = window_address(a, off);
    a->seg[i].dst = to_window ? remote : local;
    a->seg[i].src = to_window ? local : remote;
    a->seg[i].bytes = gcsh_tensor_bytes(t);
    a->meta[i].st = t->st;
    a->meta[i].off = off;
    a->meta[i].n = t->n;
}

static void release_handle(lua_State *L, lxfer *x)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (x->impl) {
        gcsh_sym_detach_xfer(x->win, x->impl);
        if (x->sig)
            gcsh_sym_detach_xfer(x->sig, x->impl);
        xfer_ops(L)->release(ctx, x->impl);
    }
    x->impl = NULL;
    for (size_t i = 0; x->local && i < x->nseg; i++)
        if (x->local[i])
            gcsh_storage_unref(ctx, x->local[i]);
    free(x->local);
    x->local = NULL;
}

/* Makes the handle from checked arguments (window userdata at stack index
 * 1); pushes it.  From here on nothing raises before prepare. */
static lxfer *make_handle(lua_State *L, xfer_op op, plan_args *a)
{
    lxfer *x = lua_newuserdatauv(L, sizeof *x, UV_COUNT);
    memset(x, 0, sizeof *x);
    luaL_setmetatable(L, XFER_MT);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, UV_WINDOW);
    if (a->sig_arg) {
        lua_pushvalue(L, a->sig_arg);
        lua_setiuservalue(L, -2, UV_SIGNALS);
    }
    x->op = op;
    x->engine = a->engine;
    x->win = a->win;
    x->sig = a->sig;
    x->signal_slot = a->signal_slot;
    x->signal_value = a->signal_value;
    x->peer = a->peer;
    x->nseg = a->nseg;
    x->local = calloc(a->nseg, sizeof *x->local);
    if (!x->local)
        luaL_error(L, "%s: out of host memory", a->fname);
    for (size_t i = 0; i < a->nseg; i++) {
        x->local[i] = a->meta[i].st;
        gcsh_storage_ref(x->local[i]);
        x->bytes += a->seg[i].bytes;
    }
    int net = a->team_index < 0;
    gcsh_xfer_plan plan = {a->engine, a->nseg, a->seg, a->signal, a->signal_value, a->peer,
                           a->sig ? a->sig->desc.trace_id : 0, a->sig ? (int64_t)a->signal_slot : -1,
                           net ? a->win->impl : NULL, net ? &a->win->desc : NULL, op == OP_GET,
                           net && a->sig ? a->sig->impl : NULL, net && a->sig ? &a->sig->desc : NULL,
                           1 + a->meta[0].off};
    x->net = net;
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (xfer_ops(L)->prepare(ctx, &plan, &x->impl) != 0) {
        x->impl = NULL;
        release_handle(L, x);
        gcsh_raise(L, ctx);
    }
    return x;
}

static void begin_plan(lua_State *L, plan_args *a, const char *fname)
{
    memset(a, 0, sizeof *a);
    a->fname = fname;
    if (!xfer_ops(L))
        luaL_error(L, "%s: the %s backend has no one-sided transfers", fname,
                   gcsh_ctx_of(L)->be->name);
    a->win = gcsh_sym_check_open(L, 1, GCSH_WINDOW_MT);
    a->team_index = gcsh_sym_check_peer_net(L, a->win, 2);
    a->peer = a->team_index >= 0 ? a->win->desc.team[a->team_index] : (int)lua_tointeger(L, 2);
}

/* w:put(peer, src [, dst_offset [, opts]]) and w:get(peer, dst [, src_offset [, opts]]) */
static int put_or_get(lua_State *L, xfer_op op)
{
    const char *fname = op_names[op];
    int to_window = op == OP_PUT;
    plan_args a;
    begin_plan(L, &a, fname);
    lua_settop(L, 5);
    gcsh_tensor *t = check_local_tensor(L, 3, &a, 3, to_window ? "src" : "dst");
    if (!to_window) /* a get writes dst */
        gcsh_tensor_check_write(L, t);
    size_t off = check_offset(L, 4, to_window ? "dst_offset" : "src_offset");
    check_range(L, &a, 4, to_window ? "dst_offset" : "src_offset", off, t->n);
    read_opts(L, 5, 5, &a, to_window, GCSH_XFER_CE);
    alloc_segments(L, &a, 1);
    set_segment(&a, 0, t, off, to_window);
    check_overlaps(L, &a, 3);
    make_handle(L, op, &a);
    return 1;
}

int gcsh_window_put(lua_State *L)
{
    return put_or_get(L, OP_PUT);
}

int gcsh_window_get(lua_State *L)
{
    return put_or_get(L, OP_GET);
}

/* Descriptor i ({src, dst_offset [, peer=] [, window=]}) at stack top. */
static void read_descriptor(lua_State *L, plan_args *a, size_t i)
{
    int d = lua_gettop(L);
    lua_Integer k = (lua_Integer)i + 1;
    if (!lua_istable(L, d))
        luaL_argerror(L, 3, lua_pushfstring(L, "descriptor %I must be {src, dst_offset}, got %s", k,
                                            type_name(L, d)));
    char key[64];
    if (gcsh_opts_unknown(L, d, 2, "peer window", key, sizeof key))
        luaL_argerror(L, 3, lua_pushfstring(L, "descriptor %I: unknown key '%s' (valid: {src, "
                                               "dst_offset [, peer=] [, window=]})",
                                            k, key));
    lua_rawgeti(L, d, 1);
    lua_rawgeti(L, d, 2);
    lua_getfield(L, d, "peer");
    lua_getfield(L, d, "window");
    lua_pushfstring(L, "descriptor %I's src", k);
    gcsh_tensor *t = check_local_tensor(L, d + 1, a, 3, lua_tostring(L, -1));
    lua_pop(L, 1);
    if (lua_isnil(L, d + 2))
        luaL_argerror(L, 3, lua_pushfstring(L, "descriptor %I has no dst_offset ({src, dst_offset})", k));
    lua_pushfstring(L, "descriptor %I's dst_offset", k);
    const char *what = lua_tostring(L, -1);
    size_t off = check_offset(L, d + 2, what);
    check_range(L, a, 3, what, off, t->n);
    if (!lua_isnil(L, d + 3) && (!lua_isinteger(L, d + 3) || lua_tointeger(L, d + 3) != a->peer))
        luaL_argerror(L, 3, lua_pushfstring(L, "descriptor %I targets peer %s but this putv goes to "
                                               "rank %d (one putv per peer)",
                                            k, luaL_tolstring(L, d + 3, NULL), a->peer));
    if (!lua_isnil(L, d + 4) && !lua_rawequal(L, d + 4, 1))
        luaL_argerror(L, 3, lua_pushfstring(L, "descriptor %I names another window (one putv per "
                                               "window)", k));
    set_segment(a, i, t, off, 1);
    lua_settop(L, d - 1);
}

/* w:putv(peer, {{src, dst_offset}, ...} [, opts]) */
int gcsh_window_putv(lua_State *L)
{
    plan_args a;
    begin_plan(L, &a, "putv");
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_settop(L, 4);
    size_t n = (size_t)lua_rawlen(L, 3);
    if (n == 0)
        luaL_argerror(L, 3, "empty descriptor list (putv needs {{src, dst_offset}, ...})");
    if (n > MAX_SEGMENTS)
        luaL_argerror(L, 3, lua_pushfstring(L, "%I descriptors, more than the %I a putv takes",
                                            (lua_Integer)n, (lua_Integer)MAX_SEGMENTS));
    read_opts(L, 4, 4, &a, 1, GCSH_XFER_SM);
    alloc_segments(L, &a, n);
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, 3, (lua_Integer)i + 1);
        read_descriptor(L, &a, i);
    }
    check_overlaps(L, &a, 3);
    make_handle(L, OP_PUTV, &a);
    return 1;
}

/* ---- Methods --------------------------------------------------------------------- */

static lxfer *check_xfer(lua_State *L)
{
    return luaL_checkudata(L, 1, XFER_MT);
}

/* Why x cannot be posted now, or NULL. */
static const char *unusable(lua_State *L, const lxfer *x)
{
    if (x->cancelled || !x->impl)
        return "the transfer was cancelled";
    if (!x->win->impl)
        return "its window was freed";
    if (x->sig && !x->sig->impl)
        return "its signals were freed";
    for (size_t i = 0; i < x->nseg; i++)
        if (!x->local[i]->base)
            return x->nseg == 1 ? lua_pushfstring(L, "its %s was freed", x->op == OP_GET ? "dst" : "src")
                                : lua_pushfstring(L, "descriptor %I's src was freed", (lua_Integer)i + 1);
    return NULL;
}

static int xfer_post(lua_State *L)
{
    lxfer *x = check_xfer(L);
    const char *why = unusable(L, x);
    if (why)
        return luaL_error(L, "post: %s", why);
    gcsh_graph_keep(L, 1, x, NULL); /* while capturing (graph.h) */
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    /* the window and signals learn of it, so their free waits for it */
    if (x->posts == 0 && (gcsh_sym_attach_xfer(x->win, x->impl) != 0 ||
                          (x->sig && gcsh_sym_attach_xfer(x->sig, x->impl) != 0)))
        return luaL_error(L, "post: out of host memory");
    if (xfer_ops(L)->post(ctx, x->impl) != 0) {
        x->failed = 1;
        snprintf(x->why, sizeof x->why, "%.255s", ctx->err); /* long errors are cut */
        return gcsh_raise(L, ctx);
    }
    x->failed = 0;
    x->posts++;
    lua_settop(L, 1);
    return 1;
}

/* The last post's state: pushes the status string and, for "error", why;
 * returns how many values were pushed. */
static int push_status(lua_State *L, lxfer *x, const char *fname)
{
    const char *why = unusable(L, x);
    if (!why && x->posts == 0 && !x->failed)
        return luaL_error(L, "%s: the transfer was never posted (x:post() first)", fname);
    if (!why && x->failed)
        why = x->why;
    enum gcsh_xfer_status status = GCSH_XFER_ERROR;
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (!why) {
        if (xfer_ops(L)->test(ctx, x->impl, &status) != 0)
            return gcsh_raise(L, ctx);
        if (status == GCSH_XFER_ERROR)
            why = lua_pushstring(L, ctx->err);
    }
    if (why) {
        lua_pushliteral(L, "error");
        lua_pushstring(L, why);
        return 2;
    }
    lua_pushstring(L, status == GCSH_XFER_DONE ? "done" : "pending");
    return 1;
}

static int xfer_test(lua_State *L)
{
    lxfer *x = check_xfer(L);
    int n = push_status(L, x, "test");
    return n;
}

typedef struct wait_opts {
    int cpu;
    double timeout;
} wait_opts;

static wait_opts read_wait_opts(lua_State *L)
{
    wait_opts w = {0, INFINITY};
    if (!gcsh_opts_check_arg(L, 2, 2, "cpu timeout"))
        return w;
    lua_getfield(L, 2, "cpu");
    w.cpu = lua_toboolean(L, -1);
    lua_getfield(L, 2, "timeout");
    if (!lua_isnil(L, -1)) {
        if (lua_type(L, -1) != LUA_TNUMBER || !(lua_tonumber(L, -1) >= 0))
            luaL_error(L, "wait: timeout must be a number of seconds >= 0, got %s",
                       luaL_tolstring(L, -1, NULL));
        if (!w.cpu)
            luaL_error(L, "wait: timeout needs cpu=true (a stream-ordered wait cannot time out)");
        w.timeout = lua_tonumber(L, -1);
    }
    lua_pop(L, 2);
    return w;
}

static int xfer_wait(lua_State *L)
{
    lxfer *x = check_xfer(L);
    wait_opts w = read_wait_opts(L);
    int top = lua_gettop(L);
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    const char *why = ctx->graph && !w.cpu ? unusable(L, x) : NULL;
    if (why) /* capturing a stream wait: no host query of the last post */
        return luaL_error(L, "wait: %s", why);
    if (!(ctx->graph && !w.cpu) && push_status(L, x, "wait") == 2)
        return luaL_error(L, "wait: %s", lua_tostring(L, -1));
    lua_settop(L, top);
    const gcsh_xfer_ops *ops = xfer_ops(L);
    if (!w.cpu) {
        if (ops->wait_stream(ctx, x->impl) != 0)
            return gcsh_raise(L, ctx);
    } else {
        gcsh_where_begin(ctx, "transfer wait (%s of %lld bytes with rank %d)", op_names[x->op],
                         (long long)x->bytes, x->peer); /* for hang reports */
        int rc = ops->wait_cpu(ctx, x->impl, w.timeout);
        gcsh_where_end(ctx);
        if (rc < 0)
            return gcsh_raise(L, ctx);
        if (rc == 1)
            return luaL_error(L, "wait: transfer stalled: %s of %I bytes with rank %d not done after "
                                 "%f s",
                              op_names[x->op], (lua_Integer)x->bytes, x->peer, w.timeout);
    }
    lua_settop(L, 1);
    return 1;
}

/* 1 when the last post is pending, 0 when not, -1 when the backend could
 * not tell (ctx->err says why).  Never raises: the free check calls it
 * before a collective exchange that every rank must reach. */
static int query_in_flight(lua_State *L, lxfer *x)
{
    if (!x->impl || x->posts == 0)
        return 0;
    enum gcsh_xfer_status status = GCSH_XFER_DONE;
    if (xfer_ops(L)->test(gcsh_ctx_of(L), x->impl, &status) != 0)
        return -1;
    return status == GCSH_XFER_PENDING;
}

static int in_flight(lua_State *L, lxfer *x)
{
    int busy = query_in_flight(L, x);
    if (busy < 0)
        gcsh_raise(L, gcsh_ctx_of(L));
    return busy;
}

static int xfer_cancel(lua_State *L)
{
    lxfer *x = check_xfer(L);
    if (x->cancelled)
        return 0;
    gcsh_users_refuse(L, x, "x:cancel()");
    if (in_flight(L, x))
        return luaL_error(L, "cancel: the transfer is in flight (wait for it first: "
                             "x:wait{cpu=true})");
    release_handle(L, x);
    x->cancelled = 1;
    /* let go of the window and signals: a cancelled handle keeps nothing alive */
    lua_pushnil(L);
    lua_setiuservalue(L, 1, UV_WINDOW);
    lua_pushnil(L);
    lua_setiuservalue(L, 1, UV_SIGNALS);
    return 0;
}

/* __gc: the backend's release is safe with a post in flight (cuda frees in
 * stream order), so a collected handle never blocks. */
static int xfer_gc(lua_State *L)
{
    lxfer *x = check_xfer(L);
    release_handle(L, x);
    x->cancelled = 1;
    return 0;
}

/* "engine ce" (loads and stores in the node) or "network tcp" (another node) */
static const char *path_of(lua_State *L, const lxfer *x)
{
    if (x->net)
        return lua_pushfstring(L, "network %s", gcsh_ctx_of(L)->be->win->net_path);
    return lua_pushfstring(L, "engine %s", x->engine == GCSH_XFER_SM ? "sm" : "ce");
}

static int xfer_tostring(lua_State *L)
{
    lxfer *x = check_xfer(L);
    if (x->cancelled) {
        lua_pushliteral(L, "xfer (cancelled)");
        return 1;
    }
    const char *path = path_of(L, x);
    if (x->sig) /* the signal each post adds: which set, slot and value */
        lua_pushfstring(L, ", signal #%I slot %I + %s", (lua_Integer)x->sig->seq,
                        (lua_Integer)x->signal_slot, gcsh_sym_word_text(L, x->signal_value));
    else
        lua_pushliteral(L, "");
    const char *signal = lua_tostring(L, -1);
    lua_pushfstring(L, "xfer(%s %I bytes %s rank %d, %I segment%s, %s%s, posts %I)",
                    op_names[x->op], (lua_Integer)x->bytes, x->op == OP_GET ? "from" : "to",
                    x->peer, (lua_Integer)x->nseg, x->nseg == 1 ? "" : "s", path, signal,
                    (lua_Integer)x->posts);
    return 1;
}

static int xfer_index(lua_State *L)
{
    lxfer *x = check_xfer(L);
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL || lua_type(L, 2) != LUA_TSTRING)
        return 1;
    const char *key = lua_tostring(L, 2);
    if (strcmp(key, "op") == 0)
        lua_pushstring(L, op_names[x->op]);
    else if (strcmp(key, "peer") == 0)
        lua_pushinteger(L, x->peer);
    else if (strcmp(key, "engine") == 0)
        lua_pushstring(L, x->engine == GCSH_XFER_SM ? "sm" : "ce");
    else if (strcmp(key, "bytes") == 0)
        lua_pushinteger(L, (lua_Integer)x->bytes);
    else if (strcmp(key, "path") == 0)
        lua_pushstring(L, x->net ? gcsh_ctx_of(L)->be->win->net_path : "lsa");
    else if (strcmp(key, "segments") == 0)
        lua_pushinteger(L, (lua_Integer)x->nseg);
    else if (strcmp(key, "posts") == 0)
        lua_pushinteger(L, (lua_Integer)x->posts);
    else
        lua_pushnil(L);
    return 1;
}

/* ---- Ordering: w:fence(), c:quiet() ----------------------------------------------- */

/* w:fence(): this rank's one-sided operations issued before it land before
 * those issued after it (backend.h's fence; README "Ordering").  Local. */
static int window_fence(lua_State *L)
{
    gcsh_sym_check_open(L, 1, GCSH_WINDOW_MT);
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (xfer_ops(L)->fence(ctx) != 0)
        return gcsh_raise(L, ctx);
    return 0;
}

/* c:quiet(): returns once every one-sided operation this rank issued has
 * completed at its target.  Local; a wait on cuda (a GPU signal wait
 * queued before it may hold the stream), so hang reports name it. */
static int comm_quiet(lua_State *L)
{
    gcsh_arg_comm(L, 1);
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_where_begin(ctx, "quiet (this rank's puts, gets and signals to complete)");
    int rc = xfer_ops(L)->quiet(ctx);
    gcsh_where_end(ctx);
    if (rc != 0)
        return gcsh_raise(L, ctx);
    return 0;
}

static const luaL_Reg meth[] = {
    {"post", xfer_post},
    {"test", xfer_test},
    {"wait", xfer_wait},
    {"cancel", xfer_cancel},
    {"free", xfer_cancel},
    {NULL, NULL},
};

static const luaL_Reg metameth[] = {
    {"__gc", xfer_gc},
    {"__close", xfer_cancel},
    {"__tostring", xfer_tostring},
    {NULL, NULL},
};

int luaopen_gcsh_xfer(lua_State *L)
{
    gcsh_new_type(L, XFER_MT, meth, metameth, xfer_index);
    gcsh_add_methods(L, GCSH_WINDOW_MT, (const luaL_Reg[]){{"fence", window_fence}, {NULL, NULL}});
    gcsh_add_methods(L, GCSH_COMM_MT, (const luaL_Reg[]){{"quiet", comm_quiet}, {NULL, NULL}});
    return 0;
}
