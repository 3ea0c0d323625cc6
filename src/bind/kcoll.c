/* A kernel collective's machinery in a window (bind/kernel.h): the areas
 * the kernels keep in every slice (the LL area, whose part past its header
 * is the scratch area, then the sync words), a collective's run (checked
 * across the communicator, then the backend's kernel: gcsh_kern_collective,
 * which every algorithm's runner and khier.c use) and w:sync_state, what
 * those areas hold here. */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "bind/kernel.h"
#include "bind/users.h"
#include "core/kll.h"
#include "wire/faults.h"

/* ---- what the kernels keep in every slice: the LL area, then the sync words ---- */

size_t gcsh_kern_reserved_bytes(gcsh_ctx *ctx, size_t window_bytes, int comm_size)
{
    if (!ctx->be->kern)
        return 0;
    return gcsh_ll_area_bytes(window_bytes, gcsh_ll_slots(comm_size)) + ctx->be->kern->sync_bytes;
}

void gcsh_kern_reserve_sync(gcsh_ctx *ctx, gcsh_sym_proposal *p, gcsh_sym_size *size,
                            int comm_size)
{
    if (p->problem[0] || !ctx->be->kern || size->gran == 0)
        return;
    size_t want = size->bytes + gcsh_kern_reserved_bytes(ctx, size->bytes, comm_size);
    size->alloc = (want + size->gran - 1) / size->gran * size->gran;
}

size_t gcsh_kern_sync_offset(lua_State *L, const gcsh_symobj *o)
{
    return o->desc.alloc_bytes - gcsh_kern_backend(L)->sync_bytes;
}

size_t gcsh_kern_window_bytes(const gcsh_symobj *o)
{
    return o->n * gcsh_dtype_size(o->dtype);
}

/* The bytes of a slice's scratch area: the LL area past its header (kplan.h). */
static size_t scratch_bytes_of(const gcsh_symobj *o)
{
    return gcsh_ll_area_bytes(gcsh_kern_window_bytes(o), gcsh_ll_slots(o->comm->size)) -
           GCSH_LL_HEADER_BYTES;
}

size_t gcsh_kern_ll_offset(lua_State *L, const gcsh_symobj *o)
{
    return gcsh_kern_sync_offset(L, o) -
           gcsh_ll_area_bytes(gcsh_kern_window_bytes(o), gcsh_ll_slots(o->comm->size));
}

void gcsh_kern_info_fields(lua_State *L, const gcsh_symobj *o)
{
    if (!gcsh_ctx_of(L)->be->kern)
        return;
    gcsh_set_integer(L, "ll_offset", (lua_Integer)gcsh_kern_ll_offset(L, o));
    gcsh_set_integer(L, "scratch_bytes", (lua_Integer)scratch_bytes_of(o));
    gcsh_set_integer(L, "sync_offset", (lua_Integer)gcsh_kern_sync_offset(L, o));
}

/* The kernel collectives are checked operations (collcheck.h): every member of
 * the window's communicator must call the same one, with the same algorithm,
 * over the same region, or nothing is launched.  Unchecked, a mismatch would
 * pair the barriers of different launches and leave the window's sync words
 * out of step, or leave one rank waiting for the bound on a GPU barrier.
 * Returns the communicator's check state for gcsh_check_leave. */
gcsh_comm_check *gcsh_kern_enter_checked(lua_State *L, const gcsh_kargs *a, const char *algo,
                                         int root, int reduces)
{
    gcsh_comm_check *cc = &a->o->comm->chk;
    char op[24];
    snprintf(op, sizeof op, "kernel.%s", a->fname);
    gcsh_fingerprint fp;
    gcsh_fp_init(&fp, cc, op);
    snprintf(fp.extra, sizeof fp.extra, "%s", algo ? algo : "");
    fp.count = (int64_t)a->n;
    fp.offset = (int64_t)a->offset;
    fp.window = a->o->seq;
    fp.dtype = (int32_t)a->o->dtype;
    fp.redop = reduces ? (int32_t)a->op : -1;
    fp.root = root >= 0 ? a->o->desc.team[root] : -1;
    gcsh_check_enter(L, cc, &fp);
    return cc;
}

/* Where a slice's scratch area starts: the LL area past its header (kplan.h). */
static size_t scratch_offset(lua_State *L, const gcsh_symobj *o)
{
    return gcsh_kern_ll_offset(L, o) + GCSH_LL_HEADER_BYTES;
}

/* Whether a's region fits the window's scratch area: an out-of-place
 * two-shot or ring gathers the result there. */
int gcsh_kern_fits_scratch(const gcsh_kargs *a)
{
    return a->n * gcsh_dtype_size(a->o->dtype) <= scratch_bytes_of(a->o);
}

/* out= with a plan that stores into slices (kplan.h): the result goes
 * through the scratch areas, which must hold the region and be free (a
 * persistent all-reduce keeps the LL area); every member must pass out,
 * which the check compares (`shown` gets " out="). */
static void check_scratch(lua_State *L, const gcsh_kargs *a, const char *algo)
{
    size_t es = gcsh_dtype_size(a->o->dtype);
    if (!gcsh_kern_fits_scratch(a))
        luaL_error(L, "%s: algo '%s' with out= gathers the result in the window's scratch area "
                      "(its LL area), which holds %I bytes (n up to %I), got n = %I (%I bytes): "
                      "oneshot and comm reduce straight into out; or omit out (the result in "
                      "the window)",
                   a->fname, algo, (lua_Integer)scratch_bytes_of(a->o),
                   (lua_Integer)(scratch_bytes_of(a->o) / es), (lua_Integer)a->n,
                   (lua_Integer)(a->n * es));
    char what[96];
    snprintf(what, sizeof what, "kernel.%s{algo='%s', out=} (it uses the window's LL area as "
                                "scratch)", a->fname, algo);
    gcsh_users_refuse_shared(L, a->o, what);
}

/* The backend's arguments of a's plan (coll, algo); root: a team index or
 * -1.  out= with a plan that stores into slices goes through the scratch
 * areas (k->plan.scratch). */
static gcsh_kcoll_args kcoll_args(lua_State *L, const gcsh_kargs *a, enum gcsh_kcoll coll,
                                  enum gcsh_kalgo algo, int root, const gcsh_mcast *mc)
{
    gcsh_kcoll_args k = {
        .plan = {coll, algo, a->o->desc.team_size, root < 0 ? 0 : root, a->n, 0},
        .offset = a->offset, .dt = a->o->dtype, .op = a->op,
        .out = a->out ? gcsh_tensor_data(a->out) : NULL,
        .sync_off = gcsh_kern_sync_offset(L, a->o),
        .scratch_off = scratch_offset(L, a->o), .epoch = &a->o->kern_epoch, .mc = mc,
    };
    k.plan.scratch = a->out && gcsh_kplan_needs_scratch(&k.plan);
    return k;
}

int gcsh_kern_run(lua_State *L, const gcsh_kargs *a, enum gcsh_kcoll coll, enum gcsh_kalgo algo,
                  int root)
{
    gcsh_kcoll_args k = kcoll_args(L, a, coll, algo, root, NULL);
    return gcsh_kern_backend(L)->collective(gcsh_ctx_of(L), a->o->impl, &a->o->desc, &k);
}

void gcsh_kern_collective(lua_State *L, const gcsh_kargs *a, enum gcsh_kcoll coll,
                           enum gcsh_kalgo algo, int root, const gcsh_mcast *mc, const char *shown)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_kcoll_args k = kcoll_args(L, a, coll, algo, root, mc);
    char checked[64];
    snprintf(checked, sizeof checked, "%s", shown);
    if (k.plan.scratch) {
        check_scratch(L, a, shown);
        snprintf(checked, sizeof checked, "%s out=", shown);
    }
    int reduces = coll != GCSH_KC_ALLGATHER && coll != GCSH_KC_BROADCAST;
    gcsh_comm_check *cc = gcsh_kern_enter_checked(L, a, checked, root, reduces);
    gcsh_check_leave(L, cc, gcsh_kern_backend(L)->collective(ctx, a->o->impl, &a->o->desc, &k));
}

/* ---- w:sync_state([s]): the kernels' machinery of a window, as this rank sees it ---- */

/* bytes at byte `off` of my slice, copied to host memory (the slice may be
 * device memory) */
static void read_mine(lua_State *L, const gcsh_symobj *o, size_t off, void *to, size_t bytes)
{
    const char *slice = o->desc.peer[o->desc.team_rank];
    gcsh_host_copy(L, to, GCSH_LOC_HOST, slice + off, o->desc.loc, bytes);
}

/* t[rank] = v for every member (keys: communicator ranks, as w:peer takes) */
static void set_member(lua_State *L, const gcsh_symobj *o, int p, uint64_t v)
{
    lua_pushinteger(L, (lua_Integer)v);
    lua_rawseti(L, -2, o->desc.team[p]);
}

/* seen: the barrier number each member last stored into my sync area (row
 * 0: the host's one block, a cuda launch's first) */
static void push_seen(lua_State *L, const gcsh_symobj *o)
{
    uint64_t words[GCSH_KERN_MAX_TEAM];
    int k = o->desc.team_size < GCSH_KERN_MAX_TEAM ? o->desc.team_size : GCSH_KERN_MAX_TEAM;
    read_mine(L, o, gcsh_kern_sync_offset(L, o), words, (size_t)k * sizeof words[0]);
    lua_createtable(L, 0, k);
    for (int p = 0; p < k; p++)
        set_member(L, o, p, words[p]);
}

/* The LL area (core/kll.h): the calls done here, the set and flag of the
 * next, and the newest flag each member's slot holds (line 0 of either set,
 * ll's or ll128's: the last call whose data from that member arrived). */
static void push_ll(lua_State *L, const gcsh_symobj *o)
{
    size_t ll = gcsh_kern_ll_offset(L, o), wb = gcsh_kern_window_bytes(o);
    int slots = gcsh_ll_slots(o->comm->size), k = o->desc.team_size < slots ? o->desc.team_size : slots;
    gcsh_ll_header h;
    read_mine(L, o, ll, &h, sizeof h);
    gcsh_set_integer(L, "ll_calls", (lua_Integer)h.count);
    gcsh_set_integer(L, "ll_set", (lua_Integer)(h.count & 1));
    gcsh_set_integer(L, "ll_flag", (lua_Integer)gcsh_ll_flag(h.count));
    lua_createtable(L, 0, k);
    for (int p = 0; p < k; p++) {
        uint32_t newest = 0;
        for (unsigned set = 0; set < 2; set++) {
            uint64_t word, word128; /* ll: { data, flag }; ll128: { flag, checksum } */
            read_mine(L, o, ll + gcsh_ll_slot_offset(wb, slots, set, p), &word, sizeof word);
            read_mine(L, o, ll + gcsh_ll128_slot_offset(wb, slots, set, p) + GCSH_LL128_LINE_DATA,
                      &word128, sizeof word128);
            uint32_t flag = (uint32_t)(word >> 32), flag128 = (uint32_t)word128;
            newest = flag > newest ? flag : newest;
            newest = flag128 > newest ? flag128 : newest;
        }
        set_member(L, o, p, newest);
    }
    lua_setfield(L, -2, "ll_seen");
}

/* pad: my words of signals s (u64 carriers, as s:read gives them) */
static void push_pad(lua_State *L, int idx)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_symobj *s = gcsh_sym_check_readable(L, idx, GCSH_SIGNALS_MT);
    lua_createtable(L, (int)s->n, 1);
    for (size_t i = 0; i < s->n; i++) {
        uint64_t v;
        if (ctx->be->win->signal_read(ctx, s->impl, &s->desc, i, &v) != 0)
            gcsh_raise(L, ctx);
        lua_pushinteger(L, (lua_Integer)v);
        lua_rawseti(L, -2, (lua_Integer)i);
    }
}

/* w:sync_state([s]): local (show(w, "sync") gathers every rank's), and
 * possible after an abort, until the window is freed: the evidence of a
 * hang.  Fields: epoch (barriers this rank entered on w), seen[r] (the
 * barrier number rank r last stored into my sync words), ll_calls, ll_set,
 * ll_flag, ll_seen[r] (the LL area: kll.h), pad[i] (with s: my signal
 * words). */
int gcsh_kern_sync_state(lua_State *L)
{
    gcsh_symobj *o = gcsh_sym_check_readable(L, 1, GCSH_WINDOW_MT);
    if (!gcsh_ctx_of(L)->be->kern)
        return luaL_error(L, "sync_state: the %s backend has no kernels", gcsh_ctx_of(L)->be->name);
    lua_settop(L, 2);
    lua_createtable(L, 0, 8);
    gcsh_set_integer(L, "epoch", (lua_Integer)o->kern_epoch);
    push_seen(L, o);
    lua_setfield(L, -2, "seen");
    push_ll(L, o);
    if (!lua_isnil(L, 2)) {
        push_pad(L, 2);
        lua_setfield(L, -2, "pad");
    }
    return 1;
}
