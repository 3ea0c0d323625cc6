/* Errors raised from the backend's words, and unrecoverable faults
 * (faults.h): an unrecoverable fault ends every rank through the
 * coordinator, told over the check's channel (check_state.h). */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>

#include "wire/check_state.h"
#include "wire/faults.h"
#include "wire/msg.h"

#define FATAL_GRACE_S 30 /* a fatal rank exits alone if rank 0 never answers */

int gcsh_raise(lua_State *L, gcsh_ctx *ctx)
{
    if (ctx->fatal)
        gcsh_fatal(L, ctx);
    return luaL_error(L, "%s", ctx->err[0] ? ctx->err : "backend error");
}

_Noreturn void gcsh_fatal(lua_State *L, gcsh_ctx *ctx)
{
    gcsh_check *k = ctx->check;
    char text[1536];
    luaL_where(L, 1);
    snprintf(text, sizeof text,
             "gcsh: rank %d: unrecoverable fault at %s%s (last operation: %s); this process "
             "cannot recover: every rank exits with status %d\n",
             ctx->rank, lua_tostring(L, -1), ctx->err, gcsh_where_last_op(k),
             GCSH_EXIT_FATAL);
    if (!k || gcsh_capture_send(k->cap, MSG_FATAL, text, strlen(text)) != 0) {
        fputs(text, stderr);
        _exit(GCSH_EXIT_FATAL);
    }
    /* rank 0 answers with DIE, which the watcher turns into _exit */
    for (int i = 0; i < FATAL_GRACE_S * 10; i++) {
        struct timespec ts = {0, 100 * 1000000L};
        nanosleep(&ts, NULL);
    }
    _exit(GCSH_EXIT_FATAL);
}
