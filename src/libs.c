/* Opens every gcsh Lua library into a rank's Lua state. */
#include <lauxlib.h>
#include <lualib.h>

#include "gcsh.h"

void gcsh_open_libs(lua_State *L)
{
    luaL_requiref(L, "tensor", luaopen_gcsh_tensor, 1);
    lua_pop(L, 1);
}
