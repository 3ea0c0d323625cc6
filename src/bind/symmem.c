/* Checked registration, the registry of symmetric-memory objects and
 * freeing: what windows and signals share.  See symmem.h. */
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "wire/collcheck.h"
#include "wire/out.h"
#include "bind/graph.h"
#include "bind/kernel.h"
#include "bind/opts.h"
#include "bind/symmem.h"
#include "bind/users.h"

#define REGISTRY_KEY "gcsh.symmem"
#define REGISTRY_MT "gcsh.symmem.registry"
/* One rank's part of a registration error. */
#define DESCRIPTION_LEN 256

/* The rank's objects in creation order.  A full userdata in the Lua
 * registry, made when the window library opens, before any handle. */
typedef struct registry {
    gcsh_symobj *head, *tail;
} registry;

/* ---- Proposals and the agree step ------------------------------------------------ */

void gcsh_sym_proposal_init(gcsh_sym_proposal *p, const char *type)
{
    memset(p, 0, sizeof *p);
    snprintf(p->type, sizeof p->type, "%s", type);
}

void gcsh_sym_problem(gcsh_sym_proposal *p, const char *fmt, ...)
{
    if (p->problem[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->problem, sizeof p->problem, fmt, ap);
    va_end(ap);
}

void gcsh_sym_check_size(gcsh_ctx *ctx, gcsh_sym_proposal *p, const char *fname, int argno,
                         size_t elem, size_t max_n, gcsh_sym_size *out)
{
    memset(out, 0, sizeof *out);
    if (p->problem[0])
        return;
    if (p->n < 1 || (uint64_t)p->n > max_n) {
        gcsh_sym_problem(p, "bad argument #%d to '%s' (n must be 1..%zu, got %" PRId64 ")",
                         argno, fname, max_n, p->n);
        return;
    }
    const gcsh_window_ops *win = ctx->be->win;
    out->bytes = (size_t)p->n * elem; /* max_n * 8 is far below SIZE_MAX */
    if (win->granularity(ctx, p->kind, &out->gran) != 0) {
        gcsh_sym_problem(p, "%s: %s", fname, ctx->err);
        return;
    }
    out->alloc = (out->bytes + out->gran - 1) / out->gran * out->gran;
    size_t max = SIZE_MAX;
    if (win->max_bytes && win->max_bytes(ctx, p->kind, &max) != 0) {
        gcsh_sym_problem(p, "%s: %s", fname, ctx->err);
        return;
    }
    if (out->alloc > max)
        gcsh_sym_problem(p,
                         "bad argument #%d to '%s' (%" PRId64 " elements = %zu bytes per rank "
                         "exceed the %s kind's limit here, %zu bytes per rank)",
                         argno, fname, p->n, out->alloc, p->kind, max);
}

/* Everything before checked_by must agree (where the check ran may not). */
static int same_proposal(const gcsh_sym_proposal *a, const gcsh_sym_proposal *b)
{
    return memcmp(a, b, offsetof(gcsh_sym_proposal, checked_by)) == 0;
}

/* Which path decided this rank's check: the counts of collcheck.h before and
 * after it tell. */
static uint32_t checked_path(gcsh_ctx *ctx, const gcsh_check_counts *before)
{
    gcsh_check_counts after;
    gcsh_check_get_counts(ctx, &after);
    return (after.board > before->board ? GCSH_CHECKED_BOARD : 0u) |
           (after.coordinator > before->coordinator ? GCSH_CHECKED_COORDINATOR : 0u);
}

/* One rank's call in words; with_seq and with_type when those differ. */
static void describe(const gcsh_sym_proposal *p, int with_type, int with_seq, char *buf,
                     size_t len)
{
    char prefix[48] = "";
    if (with_type || with_seq)
        snprintf(prefix, sizeof prefix, "%s%s#%" PRIu64 " ", with_type ? p->type : "",
                 with_type ? " " : "", p->seq);
    if (p->problem[0])
        snprintf(buf, len, "%s%s", prefix, p->problem);
    else if (strcmp(p->type, "signals") == 0)
        snprintf(buf, len, "%s%" PRId64 " slots %s", prefix, p->n, p->kind);
    else
        snprintf(buf, len, "%s%" PRId64 " %s %s", prefix, p->n, p->dtype, p->kind);
}

/* "window #3: ranks disagree: [0,2-3] 1024 f32 host, [1] 1025 f32 host":
 * ranks with the same description are folded, in the order of their first
 * rank.  Pushes the message. */
static void push_disagreement(lua_State *L, const gcsh_sym_proposal *all, int size)
{
    int same_seq = 1, same_type = 1;
    for (int r = 1; r < size; r++) {
        same_seq &= all[r].seq == all[0].seq;
        same_type &= strcmp(all[r].type, all[0].type) == 0;
    }
    char (*text)[DESCRIPTION_LEN] = lua_newuserdatauv(L, (size_t)size * DESCRIPTION_LEN, 0);
    int *group = lua_newuserdatauv(L, (size_t)size * sizeof *group, 0);
    char *done = lua_newuserdatauv(L, (size_t)size, 0);
    memset(done, 0, (size_t)size);
    for (int r = 0; r < size; r++)
        describe(&all[r], !same_type, !same_seq, text[r], DESCRIPTION_LEN);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    char head[64];
    if (same_seq)
        snprintf(head, sizeof head, "%s #%" PRIu64 ": ranks disagree: ",
                 same_type ? all[0].type : "window/signals", all[0].seq);
    else
        snprintf(head, sizeof head, "%s: ranks disagree (call order differs): ",
                 same_type ? all[0].type : "window/signals");
    luaL_addstring(&b, head);
    for (int r = 0, first = 1; r < size; r++) {
        if (done[r])
            continue;
        int n = 0;
        for (int q = r; q < size; q++)
            if (!done[q] && strcmp(text[q], text[r]) == 0) {
                group[n++] = q;
                done[q] = 1;
            }
        char ranks[256];
        gcsh_format_ranks(group, n, ranks, sizeof ranks);
        if (!first)
            luaL_addstring(&b, ", ");
        first = 0;
        lua_pushfstring(L, "[%s] %s", ranks, text[r]);
        luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
}

void gcsh_sym_agree(lua_State *L, lcomm *lc, gcsh_sym_proposal *p)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_graph_refuse_now(L, "creating a window or signals",
                          "make windows and signals before the capture");
    p->seq = lc->next_seq;
    gcsh_sym_proposal *all = lua_newuserdatauv(L, (size_t)lc->size * sizeof *all, 0);
    /* collcheck.h first: every member must come (or be named); the proposals
     * themselves are compared here, with their own messages */
    gcsh_fingerprint fp; /* one name for both: a window meeting signals is said below */
    gcsh_fp_init(&fp, &lc->chk, p->for_call[0] ? p->for_call : "window/signals");
    if (p->for_call[0])
        snprintf(fp.extra, sizeof fp.extra, "(its staging window)");
    gcsh_check_counts before;
    gcsh_check_get_counts(ctx, &before);
    gcsh_check_enter(L, &lc->chk, &fp);
    p->checked_by = checked_path(ctx, &before);
    gcsh_check_leave(L, &lc->chk, ctx->be->comm->agree(ctx, lc->impl, p, all, sizeof *p));
    uint64_t max_seq = 0;
    int all_same = 1;
    p->checked_by = 0;
    for (int r = 0; r < lc->size; r++) {
        max_seq = all[r].seq > max_seq ? all[r].seq : max_seq;
        all_same &= same_proposal(&all[r], &all[0]);
        p->checked_by |= all[r].checked_by;
    }
    /* Resynchronised even after a mismatch, so the next creation works. */
    lc->next_seq = max_seq + 1;
    if (all_same && !p->problem[0]) {
        lua_pop(L, 1);
        return;
    }
    if (all_same)
        lua_pushfstring(L, "%s #%I: %s", p->type, (lua_Integer)p->seq, p->problem);
    else
        push_disagreement(L, all, lc->size);
    lua_error(L);
}

/* ---- Reading creation arguments into a proposal ---------------------------------- */

/* n at arg, argument #argno of fname (a method's #1 is its first after self). */
void gcsh_sym_read_n(lua_State *L, int arg, gcsh_sym_proposal *p, const char *fname, int argno)
{
    int isint = 0;
    lua_Integer n = lua_tointegerx(L, arg, &isint);
    if (lua_type(L, arg) != LUA_TNUMBER)
        gcsh_sym_problem(p, "bad argument #%d to '%s' (number expected, got %s)", argno, fname,
                         luaL_typename(L, arg));
    else if (!isint)
        gcsh_sym_problem(p, "bad argument #%d to '%s' (n must be an integer, got %s)", argno,
                         fname, luaL_tolstring(L, arg, NULL));
    else
        p->n = n;
}

/* The first kind of the backend's list (its order of preference) that
 * works on c, into kind; with none, "" and the last reason in why. */
static void preferred_kind(gcsh_ctx *ctx, gcsh_comm_impl *c, char *kind, size_t klen, char *why,
                           size_t wlen)
{
    const gcsh_window_ops *win = ctx->be->win;
    for (const char *p = win->kinds; *p;) {
        size_t w = strcspn(p, " ");
        snprintf(kind, klen, "%.*s", (int)w, p);
        if (!win->kind_usable || win->kind_usable(ctx, c, kind, why, wlen) == 0)
            return;
        p += w;
        p += strspn(p, " ");
    }
    kind[0] = '\0';
}

/* Options {kind=} at arg: an unknown kind or option is a problem that lists
 * the valid ones, and a kind that does not work on c says why and names the
 * one that does (never a silent fallback).  Without kind=, the backend's
 * first kind that works on c. */
void gcsh_sym_read_kind(lua_State *L, int arg, gcsh_sym_proposal *p, const char *fname,
                        int argno, gcsh_comm_impl *c)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    const gcsh_window_ops *win = ctx->be->win;
    const char *asked = NULL;
    if (!lua_isnoneornil(L, arg) && !lua_istable(L, arg)) {
        gcsh_sym_problem(p, "bad argument #%d to '%s' (table expected, got %s)", argno, fname,
                         luaL_typename(L, arg));
    } else if (lua_istable(L, arg)) {
        char unknown[64];
        if (gcsh_opts_unknown(L, arg, 0, "kind", unknown, sizeof unknown))
            gcsh_sym_problem(p, "bad argument #%d to '%s' (unknown option '%s' (valid: kind))",
                             argno, fname, unknown);
        lua_getfield(L, arg, "kind");
        if (lua_type(L, -1) == LUA_TSTRING)
            asked = lua_tostring(L, -1);
        else if (!lua_isnil(L, -1))
            gcsh_sym_problem(p, "bad argument #%d to '%s' (kind must be a string, got %s)", argno,
                             fname, luaL_typename(L, -1));
    }
    char why[sizeof p->problem / 2] = "";
    if (!asked) {
        preferred_kind(ctx, c, p->kind, sizeof p->kind, why, sizeof why);
        if (!p->kind[0])
            gcsh_sym_problem(p, "%s: no kind (%s) works here: %s", fname, win->kinds, why);
        return;
    }
    snprintf(p->kind, sizeof p->kind, "%s", asked);
    if (!gcsh_opts_listed(win->kinds, asked))
        gcsh_sym_problem(p, "bad argument #%d to '%s' (unknown kind '%s' (valid: %s))", argno,
                         fname, asked, win->kinds);
    else if (win->kind_usable && win->kind_usable(ctx, c, asked, why, sizeof why) != 0)
        gcsh_sym_problem(p, "bad argument #%d to '%s' (kind '%s' does not work here: %s)", argno,
                         fname, asked, why);
}

void gcsh_sym_require_windows(lua_State *L, const char *fname)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    /* every rank runs the same backend, so this error is the same everywhere */
    if (!ctx->be->win)
        luaL_error(L, "%s: the %s backend has no symmetric memory", fname, ctx->be->name);
}

/* ---- The registry ---------------------------------------------------------------- */

static registry *get_registry(lua_State *L)
{
    lua_getfield(L, LUA_REGISTRYINDEX, REGISTRY_KEY);
    registry *reg = lua_touserdata(L, -1);
    lua_pop(L, 1);
    return reg;
}

static void unlink_object(registry *reg, gcsh_symobj *o)
{
    gcsh_symobj **pp = &reg->head, *prev = NULL;
    while (*pp && *pp != o) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (!*pp)
        return;
    *pp = o->next;
    if (reg->tail == o)
        reg->tail = prev;
}

static void drop_slices(gcsh_ctx *ctx, gcsh_symobj *o)
{
    if (!o->slices)
        return;
    for (int i = 0; i < o->nslices; i++) {
        gcsh_storage_release(ctx, o->slices[i]); /* the tombstone every view sees */
        gcsh_storage_unref(ctx, o->slices[i]);
    }
    free(o->slices);
    o->slices = NULL;
    o->nslices = 0;
}

static void free_record(gcsh_symobj *o)
{
    free(o->xfers);
    free(o);
}

/* Whether anything of o is registered: a window, or stages of one. */
static int holds_memory(const gcsh_symobj *o)
{
    return o->impl || o->build.w;
}

/* A record goes once nothing of it is registered and no handle points to
 * it.  One that never passed its check has only local memory to give back
 * (its backend object ran no stage). */
static void forget_if_done(lua_State *L, gcsh_symobj *o)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (o->handles)
        return;
    if (!o->listed)
        gcsh_winbuild_abort(ctx, &o->build, &o->desc);
    if (holds_memory(o))
        return;
    registry *reg = o->listed ? get_registry(L) : NULL;
    if (reg)
        unlink_object(reg, o);
    drop_slices(ctx, o);
    free_record(o);
}

/* The registry's hold on the communicator ends with the memory. */
static void unregister(lua_State *L, gcsh_symobj *o)
{
    o->comm->registered--;
    luaL_unref(L, LUA_REGISTRYINDEX, o->comm_ref);
    o->comm_ref = LUA_NOREF;
}

/* The local part of freeing, after the barrier: the backend's destroy, the
 * tombstones, and the comm's reference.  Returns the backend's status. */
static int destroy_now(lua_State *L, gcsh_symobj *o)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    /* tombstone the views first: destroy frees the descriptor's arrays */
    drop_slices(ctx, o);
    if (o->across) { /* after the free's barrier: nobody reduces over it */
        if (o->comm->chk.aborted)
            ctx->be->comm->abort(ctx, o->across);
        ctx->be->comm->release(ctx, o->across);
        o->across = NULL;
    }
    int rc = ctx->be->win->destroy(ctx, o->impl, &o->desc);
    o->impl = NULL;
    unregister(L, o);
    return rc;
}

/* Undoes a registration part-way through its stages (every rank at the same
 * point, or one alone on an aborted communicator: backend.h). */
static void abort_now(lua_State *L, gcsh_symobj *o)
{
    gcsh_winbuild_abort(gcsh_ctx_of(L), &o->build, &o->desc);
    unregister(L, o);
}

/* Registry __gc, at lua_close: gcsh_symmem_close has freed every object by
 * then; what is left is records whose handles are still to be finalised
 * (they unlink themselves) or, in a bare state, memory to give back. */
static int registry_gc(lua_State *L)
{
    registry *reg = luaL_checkudata(L, 1, REGISTRY_MT);
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    for (gcsh_symobj *o = reg->head, *next; o; o = next) {
        next = o->next;
        drop_slices(ctx, o);
        if (!o->handles) {
            unlink_object(reg, o);
            free_record(o);
        }
    }
    return 0;
}

int gcsh_symmem_open(lua_State *L)
{
    if (lua_getfield(L, LUA_REGISTRYINDEX, REGISTRY_KEY) == LUA_TUSERDATA) {
        lua_pop(L, 1);
        return 0;
    }
    lua_pop(L, 1);
    registry *reg = lua_newuserdatauv(L, sizeof *reg, 0);
    reg->head = reg->tail = NULL;
    luaL_newmetatable(L, REGISTRY_MT);
    lua_pushcfunction(L, registry_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, REGISTRY_KEY);
    return 0;
}

/* ---- Create, free, collect ------------------------------------------------------- */

/* Tensor storages over each member's slice, made before the check, so that
 * running out of host memory is a problem every rank hears of.  A team is
 * never larger than the communicator. */
static gcsh_storage **new_slices(gcsh_ctx *ctx, int count)
{
    gcsh_storage **s = calloc((size_t)count, sizeof *s);
    if (!s)
        return NULL;
    for (int i = 0; i < count; i++) {
        s[i] = gcsh_storage_wrap(ctx, NULL, 0, GCSH_LOC_HOST, "window", "", NULL, NULL);
        if (!s[i]) {
            while (i-- > 0)
                gcsh_storage_unref(ctx, s[i]);
            free(s);
            return NULL;
        }
    }
    return s;
}

/* Whether o's communicator was aborted: then o is the evidence of what
 * happened, readable until freed, each rank alone. */
static int comm_aborted(lua_State *L, const gcsh_symobj *o)
{
    return gcsh_check_aborted(gcsh_ctx_of(L), &o->comm->chk);
}

/* What would change o, or need its communicator, once that was aborted. */
static _Noreturn void refuse_aborted(lua_State *L, const gcsh_symobj *o)
{
    luaL_error(L, "%s #%I is read-only evidence: its communicator was aborted", o->type,
               (lua_Integer)o->seq);
    abort(); /* not reached */
}

/* A slice's check_write (tensor.h): its views only read once aborted. */
static void slice_check_write(lua_State *L, const gcsh_storage *st)
{
    const gcsh_symobj *o = st->owner_data;
    if (comm_aborted(L, o))
        refuse_aborted(L, o);
}

void gcsh_sym_check_mapped(lua_State *L, const gcsh_symobj *o)
{
    if (o->desc.abort_unmaps && comm_aborted(L, o))
        luaL_error(L, "%s #%I cannot be read: its communicator was aborted, and %s; :free() "
                      "frees it",
                   o->type, (lua_Integer)o->seq, o->desc.abort_unmaps);
}

/* A slice's check_read (tensor.h): nothing once the abort unmapped it. */
static void slice_check_read(lua_State *L, const gcsh_storage *st)
{
    gcsh_sym_check_mapped(L, st->owner_data);
}

/* Points the first team_size storages at the slices; unrefs the rest. */
static void bind_slices(gcsh_ctx *ctx, gcsh_symobj *o)
{
    for (int i = 0; i < o->nslices; i++) {
        gcsh_storage *st = o->slices[i];
        if (i >= o->desc.team_size) {
            gcsh_storage_unref(ctx, st);
            continue;
        }
        st->base = o->desc.peer[i];
        st->bytes = o->desc.bytes;
        st->loc = o->desc.loc;
        st->owner_data = o;
        st->check_write = slice_check_write;
        st->check_read = slice_check_read;
        char where[48];
        snprintf(where, sizeof where, "%s of rank %d", o->type, o->desc.team[i]);
        gcsh_storage_set_where(st, where);
    }
    o->nslices = o->desc.team_size;
}

static const char *type_literal(const char *type)
{
    return strcmp(type, "signals") == 0 ? "signals" : "window";
}

gcsh_symobj *gcsh_sym_prepare(lua_State *L, lcomm *lc, gcsh_sym_proposal *p, gcsh_dtype dt,
                              const gcsh_sym_size *size)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (p->problem[0])
        return NULL;
    gcsh_symobj *o = calloc(1, sizeof *o);
    gcsh_storage **slices = o ? new_slices(ctx, lc->size) : NULL;
    if (!slices) {
        free(o);
        gcsh_sym_problem(p, "%s: out of host memory", p->type);
        return NULL;
    }
    o->type = type_literal(p->type);
    snprintf(o->kind, sizeof o->kind, "%s", p->kind);
    o->n = (size_t)p->n;
    o->dtype = dt;
    o->comm = lc;
    o->comm_impl = lc->impl;
    o->comm_ref = LUA_NOREF;
    o->desc.bytes = size->bytes;
    o->desc.granularity = size->gran;
    o->desc.alloc_bytes = size->alloc;
    o->slices = slices;
    o->nslices = lc->size;
    if (gcsh_winbuild_begin(ctx, &o->build, lc->impl, o->kind, &o->desc) != 0) {
        gcsh_sym_problem(p, "%s: %s", p->type, ctx->err);
        drop_slices(ctx, o);
        free(o);
        return NULL;
    }
    return o;
}

void gcsh_sym_check_stage(lua_State *L, int comm_idx, gcsh_symobj *o, gcsh_sym_proposal *p)
{
    comm_idx = lua_absindex(L, comm_idx);
    lcomm *lc = lua_touserdata(L, comm_idx);
    gcsh_sym_agree(L, lc, p); /* raises unless every rank proposed p, with no problem */
    o->seq = p->seq;
    o->desc.trace_id = lc->chk.id * 0x9e3779b97f4a7c15ull + o->seq; /* equal on every rank */
    lua_pushvalue(L, comm_idx);
    o->comm_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lc->registered++;
    registry *reg = get_registry(L);
    if (reg->tail)
        reg->tail->next = o;
    else
        reg->head = o;
    reg->tail = o;
    o->listed = 1;
}

int gcsh_sym_run_stage(lua_State *L, gcsh_symobj *o, char *reports)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_where_begin(ctx, "%s #%llu stage %s", o->type, (unsigned long long)o->seq,
                     o->build.plan->name[o->build.done]);
    int rc = gcsh_winbuild_stage(ctx, &o->build, &o->desc, reports);
    gcsh_where_end(ctx);
    if (rc != 0) {
        /* undone on every rank (winbuild.h); say which registration */
        char msg[sizeof ctx->err];
        snprintf(msg, sizeof msg, "%s", ctx->err);
        gcsh_set_error(ctx, "%s #%llu: %s; nothing stays registered", o->type,
                       (unsigned long long)o->seq, msg);
        unregister(L, o);
        return -1;
    }
    if (gcsh_winbuild_complete(&o->build)) {
        o->impl = gcsh_winbuild_take(&o->build);
        bind_slices(ctx, o);
    }
    return 0;
}

int gcsh_sym_stage_failed(lua_State *L, gcsh_comm_check *cc, int aborted)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (ctx->fatal) /* a sticky CUDA error in this rank's stage: every rank exits */
        gcsh_fatal(L, ctx);
    if (aborted) /* marks cc aborted and tells rank 0, which passes it on */
        gcsh_check_leave(L, cc, -1);
    /* after an interrupt the stop part of the rank's hook would replace
     * this message by "interrupted!" when the error handler runs: this one
     * says more (core/luahook.h) */
    if (atomic_load(&ctx->interrupt))
        gcsh_luahook_disarm(L, 1u << GCSH_LUAHOOK_STOP);
    return luaL_error(L, "%s", ctx->err);
}

gcsh_symobj *gcsh_sym_register(lua_State *L, int comm_idx, const char *mt, gcsh_sym_proposal *p,
                               gcsh_dtype dt, const gcsh_sym_size *size)
{
    comm_idx = lua_absindex(L, comm_idx);
    lcomm *lc = lua_touserdata(L, comm_idx);
    gcsh_symobj **h = gcsh_sym_push_handle(L, mt);
    gcsh_symobj *o = gcsh_sym_prepare(L, lc, p, dt, size);
    if (o) {
        *h = o;
        o->handles = 1;
        snprintf(o->for_call, sizeof o->for_call, "%s", p->for_call);
    }
    gcsh_sym_check_stage(L, comm_idx, o, p);
    while (!o->impl)
        if (gcsh_sym_run_stage(L, o, NULL) != 0)
            gcsh_sym_stage_failed(L, &lc->chk, o->build.aborted);
    return o;
}

/* The check every collective release runs (unless the communicator was
 * aborted, when the exchange would fail at once): every rank is releasing
 * the same object at the same step. */
static void check_release(lua_State *L, gcsh_symobj *o, const char *what, int step)
{
    gcsh_comm_check *cc = &o->comm->chk;
    char op[24];
    snprintf(op, sizeof op, "%s:%s", o->type, what);
    gcsh_fingerprint fp;
    gcsh_fp_init(&fp, cc, op);
    fp.window = o->seq;
    fp.count = step;
    gcsh_check_enter(L, cc, &fp);
    gcsh_check_leave(L, cc, 0);
}

void gcsh_sym_abort_build(lua_State *L, gcsh_symobj *o)
{
    if (!o || !o->listed || !o->build.w)
        return;
    if (!o->comm->chk.aborted)
        check_release(L, o, "reset", o->build.done);
    abort_now(L, o);
}

/* ---- transfers over an object ------------------------------------------------- */

int gcsh_sym_attach_xfer(gcsh_symobj *o, gcsh_xfer_impl *x)
{
    for (size_t i = 0; i < o->nxfers; i++)
        if (o->xfers[i] == x)
            return 0;
    if (o->nxfers == o->cap_xfers) {
        size_t cap = o->cap_xfers ? 2 * o->cap_xfers : 4;
        gcsh_xfer_impl **p = realloc(o->xfers, cap * sizeof *p);
        if (!p)
            return -1;
        o->xfers = p;
        o->cap_xfers = cap;
    }
    o->xfers[o->nxfers++] = x;
    return 0;
}

void gcsh_sym_detach_xfer(gcsh_symobj *o, gcsh_xfer_impl *x)
{
    for (size_t i = 0; i < o->nxfers; i++)
        if (o->xfers[i] == x) {
            o->xfers[i] = o->xfers[--o->nxfers];
            return;
        }
}

/* The transfers over o still in flight on this rank. */
static int in_flight_here(gcsh_ctx *ctx, const gcsh_symobj *o)
{
    int busy = 0;
    for (size_t i = 0; i < o->nxfers; i++) {
        enum gcsh_xfer_status status = GCSH_XFER_DONE;
        /* one that cannot be asked counts as in flight: refusing is safe */
        if (ctx->be->xfer->test(ctx, o->xfers[i], &status) != 0 || status == GCSH_XFER_PENDING)
            busy++;
    }
    return busy;
}

#define WAIT_FIRST "(wait for it first: x:wait{cpu=true})"

/* Collective over o's communicator, inside the free's checked section,
 * before its barrier: 0 when no rank has a transfer in flight over o, else
 * -1 with the same message in ctx->err on every rank. */
static int refuse_in_flight(lua_State *L, gcsh_symobj *o)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    int busy = in_flight_here(ctx, o);
    int size = o->comm->size;
    int *all = malloc((size_t)size * 2 * sizeof *all), *ranks = all + size, n = 0;
    if (!all)
        return gcsh_set_error(ctx, "%s #%llu: free: out of host memory", o->type,
                              (unsigned long long)o->seq);
    int rc = ctx->be->comm->agree(ctx, o->comm_impl, &busy, all, sizeof busy);
    for (int r = 0; rc == 0 && r < size; r++)
        if (all[r])
            ranks[n++] = r;
    if (n > 0) {
        char text[256];
        gcsh_format_ranks(ranks, n, text, sizeof text);
        rc = gcsh_set_error(ctx, "%s #%llu: cannot free: a transfer using it is still in "
                                 "flight on rank(s) %s " WAIT_FIRST,
                            o->type, (unsigned long long)o->seq, text);
    }
    free(all);
    return rc;
}

void gcsh_sym_free(lua_State *L, gcsh_symobj *o)
{
    if (!o || !o->impl)
        return;
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    char what[24];
    snprintf(what, sizeof what, "%c:free()", o->type[0]); /* w:free(), s:free() */
    gcsh_graph_refuse_now(L, what, "free it after the capture");
    gcsh_users_refuse(L, o, what); /* a live graph, a running resident */
    /* Refused everywhere while a transfer uses o; then a barrier, so no rank
     * tears down memory a peer may still read.  Both are collective, so they
     * run inside the check (collcheck.h) that every rank is freeing the same
     * object, unless the communicator was aborted (the exchange fails at once). */
    gcsh_comm_check *cc = &o->comm->chk;
    if (comm_aborted(L, o)) {
        /* An abort tore the communicator down on every rank: nobody is left
         * to agree with, and nobody runs on o any more (its residents were
         * stopped with it).  Each rank frees alone; the backend's destroy is
         * local on an aborted communicator (backend.h). */
        if (in_flight_here(ctx, o))
            luaL_error(L, "%s #%I: cannot free: a transfer using it is still in flight "
                          WAIT_FIRST, o->type, (lua_Integer)o->seq);
    } else {
        char op[24];
        snprintf(op, sizeof op, "%s:free", o->type);
        gcsh_fingerprint fp;
        gcsh_fp_init(&fp, cc, o->for_call[0] ? o->for_call : op);
        if (o->for_call[0]) /* a routed call growing its staging window */
            snprintf(fp.extra, sizeof fp.extra, "(frees its staging window)");
        gcsh_check_enter(L, cc, &fp);
        int rc = refuse_in_flight(L, o);
        if (rc == 0)
            rc = ctx->be->comm->barrier(ctx, o->comm_impl);
        gcsh_check_leave(L, cc, rc);
    }
    if (destroy_now(L, o) != 0)
        gcsh_raise(L, ctx);
}

void gcsh_sym_handle_gone(lua_State *L, gcsh_symobj *o)
{
    if (!o)
        return;
    o->handles--;
    forget_if_done(L, o);
}

int gcsh_sym_team_index(const gcsh_symobj *o, int r)
{
    for (int i = 0; i < o->desc.team_size; i++)
        if (o->desc.team[i] == r)
            return i;
    return -1;
}

const char *gcsh_sym_team_text(const gcsh_symobj *o, char *buf, size_t len)
{
    return gcsh_format_ranks(o->desc.team, o->desc.team_size, buf, len);
}

int gcsh_sym_word_value(lua_State *L, int idx, uint64_t *v)
{
    if (lua_type(L, idx) != LUA_TNUMBER)
        return 0;
    int isint = 0;
    lua_Integer i = lua_tointegerx(L, idx, &isint);
    if (isint) {
        *v = (uint64_t)i;
        return 1;
    }
    lua_Number f = lua_tonumber(L, idx);
    if (!(f >= 0x1p63 && f < 0x1p64))
        return 0;
    *v = (uint64_t)f;
    return 1;
}

const char *gcsh_sym_word_text(lua_State *L, uint64_t v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRIu64, v);
    return lua_pushstring(L, buf);
}

int gcsh_sym_check_peer(lua_State *L, const gcsh_symobj *o, int arg)
{
    lua_Integer r = luaL_checkinteger(L, arg);
    int size = o->comm->size;
    if (r < 0 || r >= size)
        luaL_argerror(L, arg, lua_pushfstring(L, "peer %I out of range (the comm has ranks 0..%d)",
                                              r, size - 1));
    int i = gcsh_sym_team_index(o, (int)r);
    if (i < 0)
        luaL_argerror(L, arg, gcsh_sym_push_unreachable(L, o, (int)r));
    return i;
}

int gcsh_sym_check_peer_net(lua_State *L, const gcsh_symobj *o, int arg)
{
    lua_Integer r = luaL_checkinteger(L, arg);
    if (r >= 0 && r < o->comm->size && gcsh_sym_team_index(o, (int)r) < 0 &&
        gcsh_sym_net_reaches(L, o, (int)r))
        return -1;
    return gcsh_sym_check_peer(L, o, arg);
}

int gcsh_sym_net_reaches(lua_State *L, const gcsh_symobj *o, int r)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    int node = gcsh_sym_node_of(L, o, r);
    return ctx->be->win->net && node >= 0 && node != ctx->node;
}

int gcsh_sym_node_of(lua_State *L, const gcsh_symobj *o, int r)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    const int *members = o->comm->chk.members;
    return members && ctx->node_of ? ctx->node_of[members[r]] : -1;
}

int *gcsh_sym_push_node_counts(lua_State *L, const gcsh_symobj *o)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (!o->comm->chk.members || !ctx->node_of || ctx->nnodes < 1)
        return NULL;
    int *counts = lua_newuserdatauv(L, (size_t)ctx->nnodes * sizeof *counts, 0);
    memset(counts, 0, (size_t)ctx->nnodes * sizeof *counts);
    for (int r = 0; r < o->comm->size; r++)
        counts[gcsh_sym_node_of(L, o, r)]++;
    return counts;
}

/* Counted per call (tostring, .info): one pass, not a pass per rank. */
int gcsh_sym_nodes_spanned(lua_State *L, const gcsh_symobj *o)
{
    int *counts = gcsh_sym_push_node_counts(L, o), n = 0;
    if (!counts)
        return 1; /* every rank's node unknown: one, as far as anyone can tell */
    for (int node = 0; node < gcsh_ctx_of(L)->nnodes; node++)
        n += counts[node] > 0;
    lua_pop(L, 1);
    return n;
}

const char *gcsh_sym_nodes_text(lua_State *L, const gcsh_symobj *o, char *buf, size_t len)
{
    int nodes = gcsh_sym_nodes_spanned(L, o);
    if (nodes > 1)
        snprintf(buf, len, ", node %d of %d", gcsh_ctx_of(L)->node, nodes);
    else
        buf[0] = '\0';
    return buf;
}

const char *gcsh_sym_push_unreachable(lua_State *L, const gcsh_symobj *o, int r)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    char team[256];
    gcsh_sym_team_text(o, team, sizeof team);
    int node = gcsh_sym_node_of(L, o, r);
    if (node < 0 || node == ctx->node)
        return lua_pushfstring(L, "rank %d is not in this %s's team (reachable: %s)", r, o->type,
                               team);
    if (ctx->be->win->net)
        return lua_pushfstring(L, "rank %d is on node %d; loads and stores reach only node %d's "
                                  "ranks %s: use w:put/w:get (s:set/s:add for signals), which "
                                  "reach it over the network (%s)",
                               r, node, ctx->node, team, ctx->be->win->net_path);
    return lua_pushfstring(L, "rank %d is on node %d; loads and stores reach only node %d's "
                              "ranks %s (the %s backend has no network path for one-sided "
                              "operations: across nodes use the communicator's collectives, "
                              "c:allreduce or kernel.allreduce{algo=\"hier\"})",
                           r, node, ctx->node, team, ctx->be->name);
}

static void describe_object(const gcsh_symobj *o, char *buf, size_t len)
{
    char stages[64] = "";
    if (o->build.w) /* a stepper's, dropped part-way */
        snprintf(stages, sizeof stages, ", registered up to stage %d of %d", o->build.done,
                 o->build.plan->n);
    if (strcmp(o->type, "signals") == 0)
        snprintf(buf, len, "signals #%" PRIu64 " (%zu slots, %s%s)", o->seq, o->n, o->kind,
                 stages);
    else
        snprintf(buf, len, "window #%" PRIu64 " (%zu %s, %s%s)", o->seq, o->n,
                 gcsh_dtype_name(o->dtype), o->kind, stages);
}

static void say(gcsh_ctx *ctx, const char *line)
{
    if (ctx->cap) {
        gcsh_capture_write(ctx->cap, GCSH_STDERR, line, strlen(line));
        gcsh_capture_write(ctx->cap, GCSH_STDERR, "\n", 1);
    } else {
        fprintf(stderr, "gcsh: rank %d: %s\n", ctx->rank, line);
    }
}

static void note_garbage(gcsh_ctx *ctx, gcsh_symobj *o)
{
    char what[128], line[512];
    describe_object(o, what, sizeof what);
    if (o->build.w)
        snprintf(line, sizeof line,
                 "gcsh: %s was garbage-collected before its last stage; it stays registered and "
                 "is freed at exit (st:reset() frees a stepper's registration)",
                 what);
    else
        snprintf(line, sizeof line,
                 "gcsh: %s was garbage-collected without :free(); it stays registered and is "
                 "freed at exit (free it with :free() or a `<close>` variable)",
                 what);
    say(ctx, line);
    o->garbage_noted = 1;
}

void gcsh_symmem_note_garbage(lua_State *L)
{
    registry *reg = get_registry(L);
    if (!reg)
        return;
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    for (gcsh_symobj *o = reg->head; o; o = o->next)
        if (holds_memory(o) && !o->handles && !o->garbage_noted)
            note_garbage(ctx, o);
}

void gcsh_symmem_close(lua_State *L)
{
    registry *reg = get_registry(L);
    if (!reg)
        return;
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    for (gcsh_symobj *o = reg->head, *next; o; o = next) {
        next = o->next;
        if (!holds_memory(o))
            continue;
        int aborted = comm_aborted(L, o);
        if (!o->handles && !o->garbage_noted && !aborted)
            note_garbage(ctx, o);
        char what[128], line[1200];
        describe_object(o, what, sizeof what);
        /* On an aborted communicator each rank frees alone (gcsh_sym_free
         * says why), and quietly: the abort was reported when it happened.
         * A failed barrier leaves the memory to MPI_Finalize rather than
         * risk a destroy peers never join.  A registration stopped part-way
         * (a stepper's) is undone instead. */
        int rc = aborted ? 0 : ctx->be->comm->barrier(ctx, o->comm_impl);
        if (rc == 0 && o->impl)
            rc = destroy_now(L, o);
        else if (rc == 0)
            abort_now(L, o);
        if (rc != 0) {
            if (!aborted) {
                snprintf(line, sizeof line, "at exit, could not free %s: %s", what, ctx->err);
                say(ctx, line);
            }
            o->impl = NULL;
            gcsh_winbuild_leak(&o->build);
        }
        forget_if_done(L, o);
    }
}

/* ---- c:agree(s) ------------------------------------------------------------------ */

/* ---- Handles --------------------------------------------------------------------- */

gcsh_symobj **gcsh_sym_push_handle(lua_State *L, const char *mt)
{
    gcsh_symobj **h = lua_newuserdatauv(L, sizeof *h, 0);
    *h = NULL;
    luaL_setmetatable(L, mt);
    return h;
}

/* What a use of an object needs once its communicator may be aborted. */
enum sym_use { SYM_FIELDS, SYM_READ, SYM_OPEN };

static gcsh_symobj *check_registered(lua_State *L, int idx, const char *mt, enum sym_use use)
{
    gcsh_symobj *o = *(gcsh_symobj **)luaL_checkudata(L, idx, mt);
    if (!o || !o->impl)
        luaL_error(L, "attempt to use a freed %s", mt);
    if (use == SYM_OPEN && comm_aborted(L, o))
        refuse_aborted(L, o);
    if (use == SYM_READ)
        gcsh_sym_check_mapped(L, o);
    gcsh_graph_keep(L, idx, o, NULL); /* while capturing (graph.h) */
    return o;
}

gcsh_symobj *gcsh_sym_check_readable(lua_State *L, int idx, const char *mt)
{
    return check_registered(L, idx, mt, SYM_READ);
}

void gcsh_sym_check_writable(lua_State *L, const gcsh_symobj *o)
{
    if (comm_aborted(L, o))
        refuse_aborted(L, o);
}

gcsh_symobj *gcsh_sym_check_open(lua_State *L, int idx, const char *mt)
{
    return check_registered(L, idx, mt, SYM_OPEN);
}

static void push_team(lua_State *L, const gcsh_symobj *o)
{
    lua_createtable(L, o->desc.team_size, 0);
    for (int i = 0; i < o->desc.team_size; i++) {
        lua_pushinteger(L, o->desc.team[i]);
        lua_rawseti(L, -2, i + 1);
    }
}

/* Who is reached how: node (mine), nodes (the communicator spans), lsa
 * (the ranks loads and stores reach: the team) and network (the others,
 * on other nodes: only collectives reach them); into the table on top. */
static void push_reach(lua_State *L, const gcsh_symobj *o)
{
    gcsh_set_integer(L, "node", gcsh_ctx_of(L)->node);
    gcsh_set_integer(L, "nodes", gcsh_sym_nodes_spanned(L, o));
    push_team(L, o);
    lua_setfield(L, -2, "lsa");
    lua_newtable(L);
    for (int r = 0, i = 0; r < o->comm->size; r++)
        if (gcsh_sym_team_index(o, r) < 0) {
            lua_pushinteger(L, r);
            lua_rawseti(L, -2, ++i);
        }
    lua_setfield(L, -2, "network");
    lua_newtable(L);
    for (int r = 0; r < o->comm->size; r++) {
        lua_pushinteger(L, gcsh_sym_node_of(L, o, r));
        lua_rawseti(L, -2, r + 1);
    }
    lua_setfield(L, -2, "node_of");
}

static int push_common_field(lua_State *L, const gcsh_symobj *o, const char *key)
{
    if (strcmp(key, "kind") == 0)
        lua_pushstring(L, o->kind);
    else if (strcmp(key, "n") == 0)
        lua_pushinteger(L, (lua_Integer)o->n);
    else if (strcmp(key, "rank") == 0)
        lua_pushinteger(L, o->comm->rank);
    else if (strcmp(key, "size") == 0)
        lua_pushinteger(L, o->comm->size);
    else if (strcmp(key, "team") == 0)
        push_team(L, o);
    else if (strcmp(key, "comm") == 0)
        lua_rawgeti(L, LUA_REGISTRYINDEX, o->comm_ref);
    else if (strcmp(key, "seq") == 0)
        lua_pushinteger(L, (lua_Integer)o->seq);
    else
        return 0;
    return 1;
}

int gcsh_sym_index(lua_State *L, const char *mt,
                   int (*extra)(lua_State *L, gcsh_symobj *o, const char *key))
{
    luaL_checkudata(L, 1, mt);
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL)
        return 1; /* methods work on a freed handle too: :free() stays idempotent */
    if (lua_type(L, 2) != LUA_TSTRING)
        return 1; /* nil */
    const char *key = lua_tostring(L, 2);
    gcsh_symobj *o = check_registered(L, 1, mt, SYM_FIELDS); /* a freed one has none */
    if (push_common_field(L, o, key) || (extra && extra(L, o, key)))
        return 1;
    lua_pushnil(L);
    return 1;
}

static void set_hex(lua_State *L, const void *p, const char *field)
{
    char text[32];
    snprintf(text, sizeof text, "0x%" PRIxPTR, (uintptr_t)p);
    lua_pushstring(L, text);
    lua_setfield(L, -2, field);
}

void gcsh_sym_info_fields(lua_State *L, const gcsh_symobj *o)
{
    const gcsh_window_desc *d = &o->desc;
    lua_pushstring(L, o->kind);
    lua_setfield(L, -2, "kind");
    lua_pushinteger(L, (lua_Integer)o->n);
    lua_setfield(L, -2, "n");
    lua_pushinteger(L, (lua_Integer)d->bytes);
    lua_setfield(L, -2, "bytes");
    lua_pushinteger(L, (lua_Integer)d->alloc_bytes);
    lua_setfield(L, -2, "alloc_bytes");
    lua_pushinteger(L, (lua_Integer)d->granularity);
    lua_setfield(L, -2, "granularity");
    lua_pushinteger(L, (lua_Integer)o->seq);
    lua_setfield(L, -2, "seq");
    lua_pushinteger(L, o->comm->rank);
    lua_setfield(L, -2, "rank");
    push_team(L, o);
    lua_setfield(L, -2, "team");
    push_reach(L, o);
    gcsh_ctx_of(L)->output_varies = 1; /* addresses differ between runs */
    set_hex(L, d->peer[d->team_rank], "address");
    lua_createtable(L, d->team_size, 0);
    for (int i = 0; i < d->team_size; i++) {
        char text[32];
        snprintf(text, sizeof text, "0x%" PRIxPTR, (uintptr_t)d->peer[i]);
        lua_pushstring(L, text);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "peers");
    if (d->loc == GCSH_LOC_HOST)
        lua_pushliteral(L, "host");
    else
        lua_pushfstring(L, "cuda:%d", d->loc);
    lua_setfield(L, -2, "where");
    lua_pushstring(L, d->handle);
    lua_setfield(L, -2, "handle");
}
