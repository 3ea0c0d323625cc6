/* The gcsh Lua libraries, one luaopen per type (src/bind/l_<type>.c), and
 * the one call that opens them all into a rank's state (libs.c).  Here, in
 * the bindings' own layer: nothing below opens a library. */
#ifndef GCSH_BIND_LIBS_H
#define GCSH_BIND_LIBS_H

#include <lua.h>

/* Opens every gcsh library (tensor, comm, ...) into L: one luaopen per type. */
void gcsh_open_libs(lua_State *L);

/* One luaopen per Lua type, each in src/bind/l_<type>.c. */
int luaopen_gcsh_tensor(lua_State *L);
/* The dtype facts (dtype.c's one list), for the Lua modules: returns
 * {f32 = {size=4, float=true, bits=24, rtol=1e-5}, ...}, which
 * gcsh_open_libs puts in package.loaded as "gcsh.dtypes", l_tensor.c. */
int luaopen_gcsh_dtypes(lua_State *L);
int luaopen_gcsh_comm(lua_State *L);
/* Register the "window" and "signals" metatables (made by comm methods). */
int luaopen_gcsh_window(lua_State *L);
int luaopen_gcsh_signals(lua_State *L);
/* The "winstage" type (a window's registration stage by stage, step.window's
 * C half): returns {new=}, which gcsh_open_libs puts in package.loaded as
 * "gcsh.winstage" (no global), l_winstage.c. */
int luaopen_gcsh_winstage(lua_State *L);
/* The kernel library (reduce kernels), l_kernel.c. */
int luaopen_gcsh_kernel(lua_State *L);
/* The table of the kernel collectives' algorithms (kalgos.c) for Lua:
 * {takes = {allreduce = {"auto", "oneshot", ...}, ...}, planned = {oneshot =
 * true, ...}, stepped, walks, auto}, which gcsh_open_libs puts in
 * package.loaded as "gcsh.kalgos". */
int luaopen_gcsh_kalgos(lua_State *L);
/* Registers the "multicast" metatable and adds w:multicast() to the window
 * type's methods (after luaopen_gcsh_window), l_mcast.c. */
int luaopen_gcsh_multicast(lua_State *L);
/* Registers the "xfer" metatable (handles made by w:put, w:get, w:putv). */
int luaopen_gcsh_xfer(lua_State *L);
/* Returns {timer=, wtime=, sync=}, which gcsh_open_libs puts into `gcsh`. */
int luaopen_gcsh_timer(lua_State *L);

#endif
