/* Opens every gcsh Lua library into a rank's Lua state. */
#include <lauxlib.h>
#include <lualib.h>

#include "bind/comm_route.h"
#include "bind/graph.h"
#include "bind/kernel.h"
#include "bind/libs.h"
#include "bind/persist.h"
#include "core/gcsh.h"

/* Copies every field of the table that open() returns into the global gcsh
 * table.  The rank set-up makes that table first; a bare state (a C test) gets
 * an empty one. */
static void merge_into_gcsh(lua_State *L, lua_CFunction open)
{
    if (lua_getglobal(L, "gcsh") != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setglobal(L, "gcsh");
    }
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
    luaL_requiref(L, "gcsh.dtypes", luaopen_gcsh_dtypes, 0);
    lua_pop(L, 1);
    luaL_requiref(L, "comm", luaopen_gcsh_comm, 1);
    lua_pop(L, 1);
    luaL_requiref(L, "kernel", luaopen_gcsh_kernel, 1);
    lua_pop(L, 1);
    luaopen_gcsh_persistent(L); /* after kernel: adds kernel.persistent */
    gcsh_kalltoallv_open(L);    /* after kernel: adds kernel.alltoallv */
    luaL_requiref(L, "gcsh.kalgos", luaopen_gcsh_kalgos, 0);
    lua_pop(L, 1);
    luaopen_gcsh_window(L);
    gcsh_comm_route_open(L); /* after comm and window: c:allreduce's kernel route */
    luaopen_gcsh_multicast(L); /* after window: adds w:multicast() */
    luaopen_gcsh_signals(L);
    luaopen_gcsh_xfer(L);
    luaL_requiref(L, "gcsh.winstage", luaopen_gcsh_winstage, 0);
    lua_pop(L, 1);
    merge_into_gcsh(L, luaopen_gcsh_timer);
    merge_into_gcsh(L, luaopen_gcsh_graph);
}
