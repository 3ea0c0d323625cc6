/* One-sided transfers (l_xfer.c) as the window binding and the free path
 * see them. */
#ifndef GCSH_XFER_H
#define GCSH_XFER_H

#include <lua.h>

#include "bind/symmem.h"

/* Window methods (l_window.c lists them): w:put, w:get, w:putv. */
int gcsh_window_put(lua_State *L);
int gcsh_window_get(lua_State *L);
int gcsh_window_putv(lua_State *L);

#endif
