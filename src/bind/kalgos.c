/* The one table of the kernel collectives' algorithms (kalgos.h), and
 * gcsh.kalgos, the same table for Lua. */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "bind/kalgos.h"
#include "core/kll.h"
#include "core/kreduce_tune.h"

#define AUTO(n, field, cap) {n, offsetof(gcsh_kern_crossover, field), cap}
#define ABOVE(n) {n, SIZE_MAX, 0}
#define NO_AUTO {0, 0, 0}
/* a plan of moves (kplan.c), run by gcsh_kalgo_run_plan on the all-reduce */
#define PLANNED(coll, name, algo, turn, auto) {coll, name, algo, NULL, NULL, NULL, turn, auto}

/* Every algorithm each collective takes, in the order errors, kernel.algos
 * and gcsh.kalgos list them.  The all-reduce's own: "auto" picks one of
 * the others by size (the auto column; across nodes l_kernel.c takes
 * "hier" or "comm" first); "ll" has the ready flags ride in the data
 * (kll.h), its stepper builds its two phases itself; "ll128" is the same
 * in 128-byte lines (not stepped: its steps are ll's); "comm" is the
 * communicator's all-reduce; "nccl_dev" a one-shot written with NCCL's
 * device API (kernels/cuda/nccl_dev.cu: cuda and windows of kind nccl only);
 * "hier" in the node, then across nodes (khier.c).  The steppers' turns
 * are the order most worth watching: a tree or a ring moves the data a
 * step at a time; "direct" is one step. */
static const gcsh_kalgo_row rows[] = {
    {GCSH_KC_ALLREDUCE, "auto", -1, NULL, NULL, NULL, 0, NO_AUTO},
    PLANNED(GCSH_KC_ALLREDUCE, "oneshot", GCSH_KA_ONESHOT, 2, AUTO(3, oneshot_max, SIZE_MAX)),
    PLANNED(GCSH_KC_ALLREDUCE, "twoshot", GCSH_KA_TWOSHOT, 3, AUTO(4, twoshot_max, SIZE_MAX)),
    PLANNED(GCSH_KC_ALLREDUCE, "ring", GCSH_KA_RING, 1, NO_AUTO),
    {GCSH_KC_ALLREDUCE, "ll", -1, gcsh_kalgo_run_ll, NULL,
     "algo 'll' has no plan of moves and barriers: each rank stores its region, flagged, into "
     "every member's slots, and reduces its own slots as the flags arrive (src/core/kll.h)",
     5, AUTO(1, ll_max, GCSH_LL_MAX_BYTES)},
    {GCSH_KC_ALLREDUCE, "ll128", -1, gcsh_kalgo_run_ll128, NULL,
     "algo 'll128' has no plan of moves and barriers: it moves the data as ll does, in "
     "128-byte lines of 120 data bytes and a flag word (src/core/kll.h)",
     0, AUTO(2, ll128_max, GCSH_LL128_MAX_BYTES)},
    {GCSH_KC_ALLREDUCE, "multicast", GCSH_KA_MULTICAST, gcsh_kalgo_run_multicast, NULL, NULL, 4,
     NO_AUTO},
    {GCSH_KC_ALLREDUCE, "comm", -1, gcsh_kalgo_run_comm, NULL, NULL, 0, ABOVE(5)},
    {GCSH_KC_ALLREDUCE, "nccl_dev", -1, gcsh_kalgo_run_nccl_dev, NULL,
     "algo 'nccl_dev' has no plan of its own: it moves the data as oneshot does "
     "(kernel.plan(w, {algo='oneshot'})), with NCCL's LSA barriers (kernels/cuda/nccl_dev.cu)",
     0, NO_AUTO},
    {GCSH_KC_ALLREDUCE, "hier", -1, gcsh_khier_run, gcsh_khier_plan, NULL, 6, NO_AUTO},
    PLANNED(GCSH_KC_REDUCE_SCATTER, "direct", GCSH_KA_DIRECT, 2, NO_AUTO),
    PLANNED(GCSH_KC_REDUCE_SCATTER, "ring", GCSH_KA_RING, 1, NO_AUTO),
    PLANNED(GCSH_KC_ALLGATHER, "direct", GCSH_KA_DIRECT, 2, NO_AUTO),
    PLANNED(GCSH_KC_ALLGATHER, "ring", GCSH_KA_RING, 1, NO_AUTO),
    PLANNED(GCSH_KC_BROADCAST, "direct", GCSH_KA_DIRECT, 3, NO_AUTO),
    PLANNED(GCSH_KC_BROADCAST, "tree", GCSH_KA_TREE, 1, NO_AUTO),
    PLANNED(GCSH_KC_BROADCAST, "ring", GCSH_KA_RING, 2, NO_AUTO),
    PLANNED(GCSH_KC_REDUCE, "direct", GCSH_KA_DIRECT, 0, NO_AUTO),
};
#define NROWS (sizeof rows / sizeof rows[0])

const gcsh_kalgo_row *gcsh_kalgo_at(enum gcsh_kcoll coll, int i)
{
    for (size_t r = 0; r < NROWS; r++)
        if (rows[r].coll == coll && i-- == 0)
            return &rows[r];
    return NULL;
}

const gcsh_kalgo_row *gcsh_kalgo_find(enum gcsh_kcoll coll, const char *name)
{
    for (size_t r = 0; name && r < NROWS; r++)
        if (rows[r].coll == coll && strcmp(rows[r].name, name) == 0)
            return &rows[r];
    return NULL;
}

const char *gcsh_kalgo_names(enum gcsh_kcoll coll, int planned_only, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    const gcsh_kalgo_row *row;
    for (int i = 0; (row = gcsh_kalgo_at(coll, i)); i++) {
        if (planned_only && row->plan < 0)
            continue;
        int w = snprintf(buf + used, size - used, "%s%s", used ? " " : "", row->name);
        if (w >= 0 && (size_t)w < size - used)
            used += (size_t)w;
        else
            buf[used] = '\0'; /* a name that does not fit is left out whole */
    }
    return buf;
}

/* The row auto considers n-th, or NULL. */
static const gcsh_kalgo_row *auto_row(int n)
{
    for (size_t r = 0; r < NROWS; r++)
        if (rows[r].chosen.order == n)
            return &rows[r];
    return NULL;
}

const char *gcsh_kalgo_auto(int i)
{
    const gcsh_kalgo_row *row = auto_row(i + 1);
    return row ? row->name : NULL;
}

const char *gcsh_kalgo_choose(const gcsh_kern_crossover *tune, size_t bytes)
{
    const gcsh_kalgo_row *row;
    for (int n = 1; (row = auto_row(n)); n++) {
        if (row->chosen.field == SIZE_MAX)
            return row->name;
        size_t bound;
        memcpy(&bound, (const char *)tune + row->chosen.field, sizeof bound);
        if (bytes <= (bound < row->chosen.cap ? bound : row->chosen.cap))
            return row->name;
    }
    return NULL; /* no ABOVE row: a table without one fails its unit test */
}

/* ---- gcsh.kalgos ---------------------------------------------------------------- */

/* name = true for every row some collective's keep(row) holds, into the table on top. */
static void set_names(lua_State *L, int (*keep)(const gcsh_kalgo_row *))
{
    for (size_t r = 0; r < NROWS; r++)
        if (keep(&rows[r])) {
            lua_pushboolean(L, 1);
            lua_setfield(L, -2, rows[r].name);
        }
}

static int is_planned(const gcsh_kalgo_row *row)
{
    return row->plan >= 0;
}

static int is_stepped(const gcsh_kalgo_row *row)
{
    return row->turn > 0;
}

/* coll's names as a list, in the table's order ({"direct", "ring"}). */
static void push_takes(lua_State *L, enum gcsh_kcoll coll)
{
    lua_newtable(L);
    const gcsh_kalgo_row *row;
    for (int i = 0; (row = gcsh_kalgo_at(coll, i)); i++) {
        lua_pushstring(L, row->name);
        lua_rawseti(L, -2, i + 1);
    }
}

/* coll's names the steppers walk, in their turns ({"ring", "direct"}). */
static void push_walks(lua_State *L, enum gcsh_kcoll coll)
{
    lua_newtable(L);
    int k = 0;
    for (int turn = 1; turn <= (int)NROWS; turn++)
        for (size_t r = 0; r < NROWS; r++)
            if (rows[r].coll == coll && rows[r].turn == turn) {
                lua_pushstring(L, rows[r].name);
                lua_rawseti(L, -2, ++k);
            }
}

/* {takes = {allreduce = {"auto", "oneshot", ...}, reduce_scatter = {"direct",
 * "ring"}, ...}, planned = {oneshot = true, ...}, stepped = {ll = true, ...},
 * walks = {allreduce = {"ring", "oneshot", ...}, ...}, auto = {"ll",
 * "ll128", "oneshot", "twoshot", "comm"}} (planned: the names that have a plan of
 * moves, kernel.plan's; stepped: those the steppers walk, walks: in their
 * turns, the first the default; auto: what algo "auto" takes, in the order
 * it considers them). */
int luaopen_gcsh_kalgos(lua_State *L)
{
    lua_createtable(L, 0, 5);
    lua_createtable(L, 0, GCSH_KC_NCOLL);
    lua_createtable(L, 0, GCSH_KC_NCOLL);
    for (int c = 0; c < GCSH_KC_NCOLL; c++) {
        push_takes(L, (enum gcsh_kcoll)c);
        lua_setfield(L, -3, gcsh_kcoll_name((enum gcsh_kcoll)c));
        push_walks(L, (enum gcsh_kcoll)c);
        lua_setfield(L, -2, gcsh_kcoll_name((enum gcsh_kcoll)c));
    }
    lua_setfield(L, -3, "walks");
    lua_setfield(L, -2, "takes");
    lua_newtable(L);
    set_names(L, is_planned);
    lua_setfield(L, -2, "planned");
    lua_newtable(L);
    set_names(L, is_stepped);
    lua_setfield(L, -2, "stepped");
    lua_newtable(L);
    const char *chosen;
    for (int i = 0; (chosen = gcsh_kalgo_auto(i)); i++) {
        lua_pushstring(L, chosen);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "auto");
    return 1;
}
