/* Lua-side plumbing of the shell itself (print capture, gcsh.sleep). */
#ifndef GCSH_L_SHELL_H
#define GCSH_L_SHELL_H

#include <lua.h>

#include "wire/out.h"

/* Routes print, io.write, io.stdout (program output), io.stderr and warn()
 * (errors) of L into cap, and adds gcsh.sleep and the shell's functions. */
void gcsh_shell_install(lua_State *L, gcsh_capture *cap);

/* gcsh.seed(n) on L's rank (--seed n): math.randomseed(n, rank), and
 * t:rand()'s default seed from n and the rank. */
void gcsh_shell_seed(lua_State *L, long long n);

/* The error object os.exit raises to end the chunk: the worker's error
 * handler passes it through without a traceback. */
const void *gcsh_exit_token(void);

#endif
