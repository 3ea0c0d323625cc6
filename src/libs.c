/* Opens every gcsh Lua library into a rank's Lua state. */
#include <lauxlib.h>
#include <lualib.h>

#include "gcsh.h"

/* Copies every field of the table that open() returns into the global gcsh
 * table (which exists before gcsh_open_libs runs). */
static void merge_into_gcsh(lua_State *L, lua_CFunction open)
{
    lua_getglobal(L, "gcsh");
    lua_pushcfunction(L, open);
    lua_call(L, 0, 1);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_settable(L, -5);
    }
    lua_pop(L, 2);
}

void gcsh_open_libs(lua_State *L)
{
    luaL_requiref(L, "tensor", luaopen_gcsh_tensor, 1);
    lua_pop(L, 1);
    luaL_requiref(L, "comm", luaopen_gcsh_comm, 1);
    lua_pop(L, 1);
    merge_into_gcsh(L, luaopen_gcsh_timer);
}
