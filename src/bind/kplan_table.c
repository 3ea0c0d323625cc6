/* kernel.plan's answer: a plan (core/kplan.h) as a Lua table, what every
 * member of the window's team does at every step. */
#include <lauxlib.h>

#include "bind/kernel.h"

/* {peer=, first=}: a team index (or, through ranks, the communicator's
 * rank of that member) and an absolute slice index, or "out" / "tmp" and
 * an index there; a member's scratch area is {peer=, first=,
 * scratch=true}, first an index of the region. */
static void push_place(lua_State *L, const gcsh_kplace *pl, size_t offset, const int *ranks)
{
    lua_createtable(L, 0, 3);
    if (pl->peer >= 0)
        lua_pushinteger(L, ranks ? ranks[pl->peer] : pl->peer);
    else
        lua_pushstring(L, pl->peer == GCSH_KPLAN_OUT ? "out" : "tmp");
    lua_setfield(L, -2, "peer");
    int in_slice = pl->peer >= 0 && !pl->scratch;
    lua_pushinteger(L, (lua_Integer)(pl->first + (in_slice ? offset : 0)));
    lua_setfield(L, -2, "first");
    if (pl->scratch) {
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, "scratch");
    }
}

static void push_places(lua_State *L, const gcsh_kplace *pl, int count, size_t offset,
                        const int *ranks, const char *field)
{
    lua_createtable(L, count, 0);
    for (int i = 0; i < count; i++) {
        push_place(L, &pl[i], offset, ranks);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, field);
}

void gcsh_push_kmove(lua_State *L, int r, const gcsh_kmove *mv, size_t offset, const int *ranks)
{
    lua_createtable(L, 0, 6);
    lua_pushinteger(L, ranks ? ranks[r] : r);
    lua_setfield(L, -2, "rank");
    lua_pushstring(L, mv->k > 1 ? "reduce" : mv->k == 1 ? "copy" : "zero");
    lua_setfield(L, -2, "op");
    lua_pushinteger(L, (lua_Integer)mv->count);
    lua_setfield(L, -2, "count");
    push_places(L, mv->src, mv->k, offset, ranks, "src");
    push_places(L, mv->dst, mv->m, offset, ranks, "dst");
}

/* One step as a table (a move step where nobody has work, such as the
 * copy into out when out is false, keeps its place with no moves: every
 * member has the same steps). */
static void push_step(lua_State *L, const gcsh_kplan *p, const gcsh_kstep *st, int has_out,
                      size_t offset)
{
    if (st->kind == GCSH_KS_BARRIER) {
        lua_createtable(L, 0, 1);
        lua_pushliteral(L, "barrier");
        lua_setfield(L, -2, "kind");
        return;
    }
    lua_createtable(L, 0, 4);
    lua_pushliteral(L, "move");
    lua_setfield(L, -2, "kind");
    lua_pushstring(L, gcsh_kphase_name(st->phase));
    lua_setfield(L, -2, "phase");
    lua_pushinteger(L, st->index);
    lua_setfield(L, -2, "index");
    lua_newtable(L);
    int moves = 0;
    for (int r = 0; r < p->team; r++) {
        gcsh_kmove mv;
        if (gcsh_kplan_move(p, st, r, has_out, &mv)) {
            gcsh_push_kmove(L, r, &mv, offset, NULL);
            lua_rawseti(L, -2, ++moves);
        }
    }
    lua_setfield(L, -2, "moves");
}

/* The plan prints as a table of moves (lua/gcsh/plan.lua's __tostring);
 * without gcsh's Lua files it stays a bare table. */
static void set_plan_metatable(lua_State *L)
{
    int top = lua_gettop(L);
    lua_getglobal(L, "require");
    lua_pushliteral(L, "gcsh.plan");
    if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_istable(L, -1) &&
        lua_getfield(L, -1, "metatable") == LUA_TTABLE)
        lua_setmetatable(L, top);
    lua_settop(L, top);
}

void gcsh_push_kplan(lua_State *L, const gcsh_symobj *o, const gcsh_kplan *p, size_t offset,
                     int has_out)
{
    lua_createtable(L, 0, 10);
    gcsh_set_string(L, "coll", gcsh_kcoll_name(p->coll));
    gcsh_set_string(L, "algo", gcsh_kalgo_name(p->algo));
    gcsh_set_string(L, "dtype", gcsh_dtype_name(o->dtype));
    gcsh_set_integer(L, "n", (lua_Integer)p->n);
    gcsh_set_integer(L, "offset", (lua_Integer)offset);
    gcsh_set_integer(L, "team_size", p->team);
    gcsh_set_integer(L, "root", p->root);
    lua_createtable(L, p->team, 0);
    for (int r = 0; r < p->team; r++) {
        lua_pushinteger(L, o->desc.team[r]);
        lua_rawseti(L, -2, r + 1);
    }
    lua_setfield(L, -2, "team");
    lua_createtable(L, p->team, 0);
    for (int r = 0; r < p->team; r++) {
        gcsh_kchunk ch = gcsh_kplan_chunk(p->n, p->team, r);
        lua_createtable(L, 0, 2);
        gcsh_set_integer(L, "first", (lua_Integer)(offset + ch.first));
        gcsh_set_integer(L, "count", (lua_Integer)ch.count);
        lua_rawseti(L, -2, r + 1);
    }
    lua_setfield(L, -2, "chunks");
    gcsh_kstep steps[GCSH_KPLAN_MAX_STEPS];
    int ns = gcsh_kplan_steps(p, steps);
    lua_createtable(L, ns, 0);
    for (int i = 0; i < ns; i++) {
        push_step(L, p, &steps[i], has_out, offset);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "steps");
    set_plan_metatable(L);
}
