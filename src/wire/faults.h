/* Errors from the backend's words, and faults no rank recovers from
 * (faults.c).  Here, in wire/, because an unrecoverable fault ends every
 * rank through rank 0's coordinator. */
#ifndef GCSH_WIRE_FAULTS_H
#define GCSH_WIRE_FAULTS_H

#include <lua.h>

#include "core/gcsh.h"

/* Raises ctx->err as a Lua error (never returns); after an unrecoverable
 * fault (ctx->fatal) it ends every rank instead (gcsh_fatal). */
int gcsh_raise(lua_State *L, gcsh_ctx *ctx);

/* Never returns: reports ctx->err as unrecoverable to rank 0 (MSG_FATAL),
 * which ends every process with GCSH_EXIT_FATAL. */
_Noreturn void gcsh_fatal(lua_State *L, gcsh_ctx *ctx);

#endif
