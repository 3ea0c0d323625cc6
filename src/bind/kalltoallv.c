/* kernel.alltoallv(w, counts [, {offset=0, out=}]): an all-to-all with
 * per-peer counts over a window (PyTorch symmetric memory's
 * all_to_all_vdev, MPI_Alltoallv), on both backends.  It adds itself to
 * the kernel library (libs.c, after the kernel library opens).
 *
 * counts says how many elements this rank sends to each rank of w.comm:
 * {c0, c1, ...} (counts[j + 1] to rank j), or every rank's, a table of
 * tables (counts[i + 1][j + 1] from rank i to rank j), of which this rank
 * sends its row and which must agree with what every rank sends.  Layout:
 *   - sends: my slice from offset, the block for rank j right after the
 *     blocks for ranks 0..j-1 (at offset + the exclusive prefix sum of my
 *     counts); they must fit the window (offset + my total <= w.n);
 *   - receives: out (a local tensor of w.dtype; default a new one of
 *     exactly what this rank receives), the block from rank i right after
 *     those from ranks 0..i-1 (at the exclusive prefix sum of what ranks
 *     0..i-1 send me).
 * Receive counts are exchanged, never guessed: every rank's counts go to
 * every rank first (a checked control exchange), so each rank knows what
 * it receives, and a disagreement (a table of tables that says otherwise
 * than the sender, an out too small on some rank) is the same error on
 * every rank, naming the ranks, before any data moves.  Then the data:
 * a barrier on the window's sync words (every slice's blocks are there),
 * each rank reads the block every rank sends it from that rank's slice
 * (peer loads: kern.alltoallv in backend.h), a barrier (nobody still
 * reads a slice when it returns).  Returns out and the receive counts
 * ({r0, r1, ...}: recv[i + 1] from rank i).
 *
 * As the other kernel collectives: the window's team must be its whole
 * communicator (gcsh_karg_comm_window), the kernels' dtypes only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "bind/graph.h"
#include "bind/kernel.h"
#include "bind/opts.h"

#define FNAME "alltoallv"

/* What each rank sends into the exchange: what is wrong with its
 * arguments, its out's capacity (-1: none given), its row, whether it gave
 * every rank's counts, and those. */
typedef struct counts_msg {
    char problem[256]; /* what is wrong with this rank's arguments, or "" */
    int64_t out_cap;
    int64_t row[GCSH_KERN_MAX_TEAM];
    int64_t has_matrix;
    int64_t matrix[GCSH_KERN_MAX_TEAM][GCSH_KERN_MAX_TEAM];
} counts_msg;

/* ---- reading counts ------------------------------------------------------------- */

static int64_t read_count(lua_State *L, int tbl, lua_Integer i, const char *where)
{
    lua_geti(L, tbl, i);
    int isint = 0;
    lua_Integer c = lua_tointegerx(L, -1, &isint);
    if (lua_type(L, -1) != LUA_TNUMBER || !isint || c < 0)
        luaL_error(L, "%s: %s[%I] must be an integer >= 0 (elements), got %s", FNAME, where, i,
                   luaL_tolstring(L, -1, NULL));
    lua_pop(L, 1);
    return (int64_t)c;
}

/* A Lua array of exactly k entries at idx (`what` names it). */
static void check_length(lua_State *L, int idx, int k, const char *what)
{
    lua_Integer len = luaL_len(L, idx);
    if (len != k)
        luaL_error(L, "%s: %s has %I entries, the communicator has %d ranks (one each: "
                      "%s[j + 1] for rank j)",
                   FNAME, what, len, k, what);
}

static void read_row(lua_State *L, int tbl, int k, const char *where, int64_t *row)
{
    check_length(L, tbl, k, where);
    for (int j = 0; j < k; j++)
        row[j] = read_count(L, tbl, j + 1, where);
}

/* counts at idx: a row, or a table of k rows (the matrix; my row of it). */
static void read_counts(lua_State *L, int idx, int k, int me, counts_msg *m)
{
    if (!lua_istable(L, idx))
        luaL_error(L, "%s: counts must be a table of %d counts (one per rank), or of %d such "
                      "tables (every rank's), got %s",
                   FNAME, k, k, luaL_typename(L, idx));
    check_length(L, idx, k, "counts");
    lua_geti(L, idx, 1);
    m->has_matrix = lua_istable(L, -1);
    lua_pop(L, 1);
    if (!m->has_matrix) {
        read_row(L, idx, k, "counts", m->row);
        return;
    }
    for (int i = 0; i < k; i++) {
        char where[32];
        snprintf(where, sizeof where, "counts[%d]", i + 1);
        if (lua_geti(L, idx, i + 1) != LUA_TTABLE)
            luaL_error(L, "%s: %s must be a table (counts[1] is: every rank's counts), got %s",
                       FNAME, where, luaL_typename(L, -1));
        read_row(L, lua_gettop(L), k, where, m->matrix[i]);
        lua_pop(L, 1);
    }
    memcpy(m->row, m->matrix[me], sizeof m->row);
}

/* ---- the exchange and its verdict --------------------------------------------- */

/* Every rank's message into all (a checked control exchange on w.comm). */
static void exchange(lua_State *L, const gcsh_symobj *o, const counts_msg *mine, counts_msg *all)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_graph_refuse_now(L, "kernel.alltoallv", "it exchanges the counts on the host now");
    gcsh_comm_check *cc = &o->comm->chk;
    gcsh_fingerprint fp;
    gcsh_fp_init(&fp, cc, "kernel." FNAME);
    snprintf(fp.extra, sizeof fp.extra, "counts");
    fp.window = o->seq;
    fp.dtype = (int32_t)o->dtype;
    gcsh_check_enter(L, cc, &fp);
    gcsh_check_leave(L, cc, ctx->be->comm->agree(ctx, o->comm->impl, mine, all, sizeof *mine));
}

/* The first disagreement between a rank's table of tables and what the
 * senders send, or an out too small: the same text on every rank (it is
 * computed from the exchange alone).  NULL when none. */
static const char *disagreement(lua_State *L, const counts_msg *all, int k)
{
    int found = 0;
    const char *first = NULL;
    for (int q = 0; q < k; q++) {
        if (!all[q].has_matrix)
            continue;
        for (int i = 0; i < k; i++)
            for (int j = 0; j < k; j++) {
                int64_t says = all[q].matrix[i][j], sends = all[i].row[j];
                if (says == sends)
                    continue;
                if (!found++)
                    first = lua_pushfstring(L, "rank %d sends %I elements to rank %d, but "
                                               "rank %d's counts[%d][%d] is %I",
                                            i, (lua_Integer)sends, j, q, i + 1, j + 1,
                                            (lua_Integer)says);
            }
    }
    if (found)
        return lua_pushfstring(L, "%s: counts disagree: %s%s", FNAME, first,
                               found > 1 ? lua_pushfstring(L, " (%d entries differ)", found) : "");
    for (int r = 0; r < k; r++) {
        int64_t gets = 0;
        for (int i = 0; i < k; i++)
            gets += all[i].row[r];
        if (all[r].out_cap >= 0 && all[r].out_cap < gets)
            return lua_pushfstring(L, "%s: rank %d's out has %I elements, it receives %I (what "
                                      "every rank sends it)",
                                   FNAME, r, (lua_Integer)all[r].out_cap, (lua_Integer)gets);
    }
    return NULL;
}

/* ---- the data ----------------------------------------------------------------- */

/* This rank's reads, by team member (the team is the communicator, in the
 * order of d.team): what member p sends me, where it is in p's slice and
 * where it goes in out. */
static void plan_reads(const gcsh_symobj *o, const counts_msg *all, gcsh_kv_args *a)
{
    int k = o->desc.team_size, me = o->comm->rank;
    for (int p = 0; p < k; p++) {
        int from = o->desc.team[p];
        size_t before = 0, out_first = 0;
        for (int j = 0; j < me; j++)
            before += (size_t)all[from].row[j];
        for (int r = 0; r < from; r++)
            out_first += (size_t)all[r].row[me];
        a->count[p] = (size_t)all[from].row[me];
        a->src_first[p] = before;
        a->out_first[p] = out_first;
        a->total += a->count[p];
    }
    for (int i = 0; i < k; i++)
        for (int j = 0; j < k; j++)
            a->largest = (size_t)all[i].row[j] > a->largest ? (size_t)all[i].row[j] : a->largest;
}

static void move_data(lua_State *L, const gcsh_symobj *o, gcsh_kv_args *a)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_comm_check *cc = &o->comm->chk;
    gcsh_fingerprint fp;
    gcsh_fp_init(&fp, cc, "kernel." FNAME);
    snprintf(fp.extra, sizeof fp.extra, "data");
    fp.offset = (int64_t)a->offset;
    fp.window = o->seq;
    fp.dtype = (int32_t)o->dtype;
    gcsh_check_enter(L, cc, &fp);
    gcsh_check_leave(L, cc, gcsh_kern_backend(L)->alltoallv(ctx, o->impl, &o->desc, a));
}

static void push_received(lua_State *L, const counts_msg *all, int k, int me)
{
    lua_createtable(L, k, 0);
    for (int i = 0; i < k; i++) {
        lua_pushinteger(L, (lua_Integer)all[i].row[me]);
        lua_rawseti(L, -2, i + 1);
    }
}

/* The arguments' local checks, protected (lua_pcall: kernel_alltoallv
 * below): w at 1 (checked), counts at 2, options at 3; the kargs and the
 * message in the light userdata at 4 and 5.  Returns out (or nil). */
static int read_args(lua_State *L)
{
    gcsh_kargs *a = lua_touserdata(L, 4);
    counts_msg *mine = lua_touserdata(L, 5);
    gcsh_karg_read(L, 3, a, "offset out");
    gcsh_karg_dtype_op(L, FNAME, a->o->dtype, GCSH_OP_SUM, gcsh_kern_ops_of(a->o->dtype),
                       "the kernels");
    int k = a->o->comm->size;
    read_counts(L, 2, k, a->o->comm->rank, mine);
    size_t room = a->o->n - a->offset, sends = 0;
    for (int j = 0; j < k; j++) {
        /* each count within the room first: the sum then cannot overflow */
        if ((uint64_t)mine->row[j] > room)
            luaL_error(L, "%s: this rank sends rank %d %I elements, more than the window has "
                          "from offset %I: at most %I (w.n %I)",
                       FNAME, j, (lua_Integer)mine->row[j], (lua_Integer)a->offset,
                       (lua_Integer)room, (lua_Integer)a->o->n);
        sends += (size_t)mine->row[j];
    }
    if (sends > room)
        luaL_error(L, "%s: this rank sends %I elements from offset %I, past the window's %I "
                      "elements (w.n): at most %I",
                   FNAME, (lua_Integer)sends, (lua_Integer)a->offset, (lua_Integer)a->o->n,
                   (lua_Integer)(a->o->n - a->offset));
    mine->out_cap = -1;
    if (!a->out) {
        lua_pushnil(L);
        return 1;
    }
    gcsh_karg_out_size(L, a, 0, "");
    mine->out_cap = (int64_t)a->out->n;
    lua_pushvalue(L, a->out_idx);
    return 1;
}

/* Whether rank r's arguments had a problem (gcsh_format_ranks_where). */
static int has_problem(const void *arg, int r)
{
    return ((const counts_msg *)arg)[r].problem[0] != '\0';
}

/* Every rank's argument problems, the same text on every rank ("rank 1:
 * counts has 1 entries, ..."), or NULL. */
static const char *problems(lua_State *L, const counts_msg *all, int k)
{
    char ranks[128];
    int count = 0, first = -1, same = 1;
    gcsh_format_ranks_where(k, has_problem, all, ranks, sizeof ranks, &count);
    for (int r = 0; r < k; r++)
        if (all[r].problem[0]) {
            if (first < 0)
                first = r;
            same &= strcmp(all[r].problem, all[first].problem) == 0;
        }
    if (!count)
        return NULL;
    const char *text = all[first].problem;
    size_t skip = strlen(FNAME ": ");
    if (strncmp(text, FNAME ": ", skip) == 0)
        text += skip;
    if (count == 1)
        return lua_pushfstring(L, "%s: rank %d: %s", FNAME, first, text);
    if (same)
        return lua_pushfstring(L, "%s: ranks %s: %s", FNAME, ranks, text);
    return lua_pushfstring(L, "%s: ranks %s (rank %d: %s)", FNAME, ranks, first, text);
}

static int kernel_alltoallv(lua_State *L)
{
    lua_settop(L, 3);
    gcsh_kargs a = {.fname = FNAME};
    a.o = gcsh_karg_comm_window(L, 1, FNAME, "c:alltoall");
    int k = a.o->comm->size, me = a.o->comm->rank;
    counts_msg *mine = lua_newuserdatauv(L, sizeof *mine * (size_t)(k + 1), 0), *all = mine + 1;
    memset(mine, 0, sizeof *mine);
    /* the local checks' problem goes into the exchange: every rank hears of
     * it and raises, so no rank's next call pairs with this one */
    lua_pushcfunction(L, read_args);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 3);
    lua_pushlightuserdata(L, &a);
    lua_pushlightuserdata(L, mine);
    if (lua_pcall(L, 5, 1, 0) != LUA_OK) {
        snprintf(mine->problem, sizeof mine->problem, "%s", luaL_tolstring(L, -1, NULL));
        lua_pop(L, 2);
        lua_pushnil(L); /* no out */
    }
    int out_idx = lua_gettop(L);
    exchange(L, a.o, mine, all);
    const char *wrong = problems(L, all, k);
    if (!wrong)
        wrong = disagreement(L, all, k);
    if (wrong)
        return luaL_error(L, "%s", wrong);
    gcsh_kv_args v = {.offset = a.offset, .dt = a.o->dtype,
                      .sync_off = gcsh_kern_sync_offset(L, a.o), .epoch = &a.o->kern_epoch};
    plan_reads(a.o, all, &v);
    gcsh_tensor *out = lua_isnil(L, out_idx) ? gcsh_new_tensor(L, v.total, a.o->dtype)
                                             : gcsh_arg_tensor(L, out_idx);
    if (lua_isnil(L, out_idx))
        lua_replace(L, out_idx);
    v.out = gcsh_tensor_data(out);
    move_data(L, a.o, &v);
    lua_pushvalue(L, out_idx);
    push_received(L, all, k, me);
    return 2;
}

void gcsh_kalltoallv_open(lua_State *L)
{
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    if (lua_getfield(L, -1, "kernel") == LUA_TTABLE) {
        lua_pushcfunction(L, kernel_alltoallv);
        lua_setfield(L, -2, FNAME);
    }
    lua_pop(L, 2);
}
