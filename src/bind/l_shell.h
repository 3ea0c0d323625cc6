/* Lua-side plumbing of the shell itself (print capture, gcsh.sleep). */
#ifndef GCSH_SHELL_H
#define GCSH_SHELL_H

#include <lua.h>

#include "wire/out.h"

/* Routes print, io.write, io.stdout and io.stderr of L into cap, and adds
 * gcsh.sleep. */
void gcsh_shell_install(lua_State *L, gcsh_capture *cap);

#endif
