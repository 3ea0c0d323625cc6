/* The users of resources and the touch hooks (users.h).
 *
 * Registry layout: USERS_KEY maps a resource (light userdata) to its list,
 * a table {user = order} with weak keys (a collected user is gone from
 * every list); KINDS_KEY maps a user to its kind (weak keys too).  The
 * order makes the first registered user the one a refusal names.  The
 * touch hooks are in the rank's context, for speed (gcsh_ctx.touch). */
#include <lauxlib.h>

#include "bind/users.h"
#include "core/gcsh.h"

#define USERS_KEY "gcsh.users"        /* {resource = {user = order}} */
#define KINDS_KEY "gcsh.users.kinds"  /* {user = kind}, weak keys */
#define ORDER_KEY "gcsh.users.order"  /* orders given so far */

static void set_weak_keys(lua_State *L)
{
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
}

/* Pushes the registry table at key, made (weak in its keys when weak) when
 * absent. */
static void push_table(lua_State *L, const char *key, int weak)
{
    if (lua_getfield(L, LUA_REGISTRYINDEX, key) == LUA_TTABLE)
        return;
    lua_pop(L, 1);
    lua_newtable(L);
    if (weak)
        set_weak_keys(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, key);
}

/* Pushes resource's list (made when make), or returns 0 with nothing
 * pushed. */
static int push_list(lua_State *L, const void *resource, int make)
{
    if (!make && lua_getfield(L, LUA_REGISTRYINDEX, USERS_KEY) != LUA_TTABLE) {
        lua_pop(L, 1);
        return 0;
    }
    if (make)
        push_table(L, USERS_KEY, 0);
    lua_pushlightuserdata(L, (void *)resource);
    if (lua_rawget(L, -2) == LUA_TTABLE) {
        lua_remove(L, -2);
        return 1;
    }
    lua_pop(L, 1);
    if (!make) {
        lua_pop(L, 1);
        return 0;
    }
    lua_newtable(L);
    set_weak_keys(L);
    lua_pushlightuserdata(L, (void *)resource);
    lua_pushvalue(L, -2);
    lua_rawset(L, -4);
    lua_remove(L, -2);
    return 1;
}

void gcsh_users_add(lua_State *L, const void *resource, int idx, const gcsh_user_kind *k)
{
    if (!resource)
        return;
    idx = lua_absindex(L, idx);
    push_table(L, KINDS_KEY, 1);
    lua_pushvalue(L, idx);
    lua_pushlightuserdata(L, (void *)k);
    lua_rawset(L, -3);
    lua_pop(L, 1);
    push_list(L, resource, 1);
    lua_pushvalue(L, idx);
    if (lua_rawget(L, -2) == LUA_TNIL) {
        lua_pushvalue(L, idx);
        lua_pushinteger(L, gcsh_registry_count(L, ORDER_KEY));
        lua_rawset(L, -4);
    }
    lua_pop(L, 2);
}

void gcsh_users_remove(lua_State *L, const void *resource, int idx)
{
    if (!resource)
        return;
    idx = lua_absindex(L, idx);
    if (!push_list(L, resource, 0))
        return;
    lua_pushvalue(L, idx);
    lua_pushnil(L);
    lua_rawset(L, -3);
    lua_pushnil(L);
    int empty = !lua_next(L, -2);
    if (!empty)
        lua_pop(L, 2);
    lua_pop(L, 1);
    if (!empty)
        return;
    lua_getfield(L, LUA_REGISTRYINDEX, USERS_KEY); /* a table: push_list found one */
    lua_pushlightuserdata(L, (void *)resource);     /* no list kept for nobody */
    lua_pushnil(L);
    lua_rawset(L, -3);
    lua_pop(L, 1);
}

/* Pushes the refusal of the earliest user of resource that refuses and
 * returns 1; 0 with nothing pushed when none does. */
static int push_refusal(lua_State *L, const void *resource, const char *what, int exclusive)
{
    if (!resource || !push_list(L, resource, 0))
        return 0;
    int list = lua_gettop(L);
    push_table(L, KINDS_KEY, 1);
    int kinds = list + 1;
    lua_Integer first = 0;
    lua_pushnil(L); /* the text of the first refusal so far */
    int why = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, list)) {
        lua_Integer order = lua_tointeger(L, -1);
        lua_pop(L, 1);
        lua_pushvalue(L, -1);
        lua_rawget(L, kinds);
        const gcsh_user_kind *k = lua_touserdata(L, -1);
        lua_pop(L, 1);
        if ((!first || order < first) && k && k->refuses(L, lua_gettop(L), what, exclusive)) {
            first = order;
            lua_replace(L, why);
        }
    }
    lua_replace(L, list); /* the text (or nil) where the list was */
    lua_settop(L, list);
    if (first)
        return 1;
    lua_pop(L, 1);
    return 0;
}

/* Raises the refusal of the earliest user of resource that refuses. */
static void refuse(lua_State *L, const void *resource, const char *what, int exclusive)
{
    if (!push_refusal(L, resource, what, exclusive))
        return;
    luaL_where(L, 1); /* the text is on top: raised where the binding was called */
    lua_insert(L, -2);
    lua_concat(L, 2);
    lua_error(L);
}

int gcsh_users_refusing(lua_State *L, const void *resource)
{
    if (!push_refusal(L, resource, "free", 0))
        return 0;
    lua_pop(L, 1);
    return 1;
}

void gcsh_users_refuse(lua_State *L, const void *resource, const char *what)
{
    refuse(L, resource, what, 0);
}

void gcsh_users_refuse_shared(lua_State *L, const void *resource, const char *what)
{
    refuse(L, resource, what, 1);
}

void gcsh_users_on_touch(lua_State *L, gcsh_touch_hook hook)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    for (int i = 0; i < ctx->ntouch; i++)
        if (ctx->touch[i] == hook) /* once a hook: a library opened twice */
            return;
    if (ctx->ntouch == GCSH_TOUCH_MAX)
        luaL_error(L, "gcsh: more than %d touch hooks (GCSH_TOUCH_MAX)", GCSH_TOUCH_MAX);
    ctx->touch[ctx->ntouch++] = hook;
}

void gcsh_users_touch(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    for (int i = 0; i < ctx->ntouch; i++)
        ctx->touch[i](L);
}
