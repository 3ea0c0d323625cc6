/* Options tables: the one check of their keys (opts.h). */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "bind/opts.h"

int gcsh_opts_listed(const char *list, const char *word)
{
    size_t len = strlen(word);
    for (const char *p = list + strspn(list, " "); *p;) {
        size_t w = strcspn(p, " ");
        if (w == len && len > 0 && strncmp(p, word, len) == 0)
            return 1;
        p += w;
        p += strspn(p, " ");
    }
    return 0;
}

static int is_known(lua_State *L, int key, int npos, const char *valid)
{
    if (lua_type(L, key) == LUA_TSTRING)
        return gcsh_opts_listed(valid, lua_tostring(L, key));
    if (lua_isinteger(L, key)) {
        lua_Integer i = lua_tointeger(L, key);
        return i >= 1 && i <= npos;
    }
    return 0;
}

const char *gcsh_opts_unknown(lua_State *L, int idx, int npos, const char *valid, char *buf,
                              size_t len)
{
    idx = lua_absindex(L, idx);
    int found = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (is_known(L, -1, npos, valid))
            continue;
        const char *name = luaL_tolstring(L, -1, NULL);
        if (!found || strcmp(name, buf) < 0)
            snprintf(buf, len, "%s", name);
        found = 1;
        lua_pop(L, 1); /* lua_next needs the key on top */
    }
    return found ? buf : NULL;
}

/* The message's text without its prefix, pushed; NULL when the options are
 * fine.  *is_table says whether there are options to read. */
static const char *problem(lua_State *L, int idx, const char *valid, int *is_table)
{
    *is_table = 0;
    if (lua_isnoneornil(L, idx))
        return NULL;
    if (!lua_istable(L, idx))
        return lua_pushfstring(L, "options must be a table (valid keys: %s), got %s", valid,
                               luaL_typename(L, idx));
    *is_table = 1;
    char key[64];
    if (!gcsh_opts_unknown(L, idx, 0, valid, key, sizeof key))
        return NULL;
    return lua_pushfstring(L, "unknown option '%s' (valid: %s)", key, valid);
}

void gcsh_args_none_after(lua_State *L, int last, const char *takes)
{
    for (int i = last + 1; i <= lua_gettop(L); i++)
        if (!lua_isnil(L, i))
            luaL_argerror(L, i, lua_pushfstring(L, "takes %s, got a %s here", takes,
                                                luaL_typename(L, i)));
}

int gcsh_opts_check(lua_State *L, int idx, const char *fname, const char *valid)
{
    int is_table;
    const char *why = problem(L, idx, valid, &is_table);
    if (why)
        luaL_error(L, "%s: %s", fname, why);
    return is_table;
}

int gcsh_opts_check_arg(lua_State *L, int idx, int arg, const char *valid)
{
    int is_table;
    const char *why = problem(L, idx, valid, &is_table);
    if (why)
        luaL_argerror(L, arg, why);
    return is_table;
}

int gcsh_opts_lua_check(lua_State *L)
{
    const char *fname = luaL_checkstring(L, 2);
    const char *valid = luaL_checkstring(L, 3);
    int level = (int)luaL_optinteger(L, 4, 2);
    int is_table;
    const char *why = problem(L, 1, valid, &is_table);
    if (!why)
        return 0;
    if (level > 0)
        luaL_where(L, level); /* level 1: the function that called this one, as error() */
    else
        lua_pushliteral(L, "");
    lua_pushfstring(L, "%s: %s", fname, why);
    lua_concat(L, 2);
    return lua_error(L);
}
