/* The persistent all-reduce (l_persist.c) as the layers above see it: it
 * sits on the kernel library (the window's LL area, kargs.c's reading of
 * a window) and is a user of its window (bind/users.h), so nothing below
 * names it. */
#ifndef GCSH_BIND_PERSIST_H
#define GCSH_BIND_PERSIST_H

#include <lua.h>

/* Registers the "persistent" type and its touch hook, and adds
 * kernel.persistent to the kernel library (libs.c: after luaopen_gcsh_kernel). */
int luaopen_gcsh_persistent(lua_State *L);
/* The end of the session: every running one stops, without waiting for
 * calls in flight (commands end drained), before windows are freed. */
void gcsh_persist_stop_all(lua_State *L);
/* After each command: an interrupted one stops (without draining) the
 * residents it rang, on every rank, since the ranks' rings may differ by a
 * call (one rank interrupted inside a call, another between two) and a
 * resident would wait for the missing one forever; their windows can then
 * be freed at once. */
void gcsh_persist_command_end(lua_State *L, int interrupted);

#endif
