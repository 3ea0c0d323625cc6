/* The Lua type "timer", and the clock functions of the gcsh table.
 *
 *   tm = gcsh.timer()   started now, on the rank's stream (a CUDA event on
 *                       cuda, the wall clock on host: mem->timer_begin)
 *   tm:stop()           waits for the work queued since, returns seconds
 *   gcsh.wtime()        MPI_Wtime: seconds, the host's clock
 *   gcsh.sync()         waits for everything queued on the rank's stream
 *
 * The backend owns a timer's token from begin until timer_end, which frees
 * it; so releasing a timer that was never stopped (:free(), __gc, __close)
 * ends it and drops the reading.  That is local, so __gc may do it.
 */
#include <stdlib.h>

#include <lauxlib.h>
#include <mpi.h>

#include "bind/graph.h"
#include "core/gcsh.h"
#include "wire/collcheck.h"
#include "wire/faults.h"

#define TIMER_MT "timer"

typedef struct ltimer {
    void *tok; /* NULL when closed: stopped or released */
} ltimer;

static int timer_start(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    ltimer *tm = lua_newuserdatauv(L, sizeof *tm, 0);
    tm->tok = NULL;
    luaL_setmetatable(L, TIMER_MT);
    if (ctx->be->mem->timer_begin(ctx, &tm->tok) != 0) {
        tm->tok = NULL;
        return gcsh_raise(L, ctx);
    }
    return 1;
}

static int timer_stop(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    ltimer *tm = luaL_checkudata(L, 1, TIMER_MT);
    if (!tm->tok)
        return luaL_error(L, "timer already stopped");
    void *tok = tm->tok;
    tm->tok = NULL;
    double seconds = 0;
    ctx->output_varies = 1; /* a duration: a replay does not compare it */
    if (ctx->be->mem->timer_end(ctx, tok, &seconds) != 0)
        return gcsh_raise(L, ctx);
    lua_pushnumber(L, seconds);
    return 1;
}

static int timer_release(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    ltimer *tm = luaL_checkudata(L, 1, TIMER_MT);
    if (tm->tok) {
        double ignored;
        ctx->be->mem->timer_end(ctx, tm->tok, &ignored);
        tm->tok = NULL;
    }
    return 0;
}

static int timer_tostring(lua_State *L)
{
    ltimer *tm = luaL_checkudata(L, 1, TIMER_MT);
    lua_pushstring(L, tm->tok ? "timer(running)" : "timer(stopped)");
    return 1;
}

/* gcsh.wtime(): the clock, or what the tape says (gcsh.h): a recorded
 * chunk keeps what it read, a replayed one reads the recording's values;
 * any other reading makes the output vary (a replay shows, not compares). */
static int wtime(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_tape *tp = &ctx->tape;
    double t = MPI_Wtime();
    if (tp->mode == GCSH_TAPE_PLAY && tp->next < tp->n) {
        t = tp->v[tp->next++];
    } else if (tp->mode == GCSH_TAPE_RECORD && (tp->n < tp->cap || tp->cap < (1u << 20))) {
        if (tp->n == tp->cap) {
            size_t cap = tp->cap ? 2 * tp->cap : 64;
            double *p = realloc(tp->v, cap * sizeof *p);
            if (!p)
                return luaL_error(L, "gcsh.wtime: out of memory for the recording's tape");
            tp->v = p;
            tp->cap = cap;
        }
        tp->v[tp->n++] = t;
    } else {
        ctx->output_varies = 1;
    }
    lua_pushnumber(L, t);
    return 1;
}

static int sync_stream(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_graph_refuse_now(L, "gcsh.sync()", "it waits on the host for work a capture does not run");
    /* on a GPU stream as the command's end waits: a hang report says for
     * what, and a peer that failed before joining a queued collective
     * stops it, naming the rank (gcsh_check_end_sync) */
    if (ctx->be->stream_ordered)
        return gcsh_check_end_sync(L);
    if (ctx->be->mem->sync(ctx) != 0)
        return gcsh_raise(L, ctx);
    return 0;
}

static const luaL_Reg meth[] = {
    {"stop", timer_stop},
    {"free", timer_release},
    {NULL, NULL},
};

static const luaL_Reg metameth[] = {
    {"__index", NULL}, /* placeholder, set to meth below */
    {"__gc", timer_release},
    {"__close", timer_release},
    {"__tostring", timer_tostring},
    {NULL, NULL},
};

static const luaL_Reg funcs[] = {
    {"timer", timer_start},
    {"wtime", wtime},
    {"sync", sync_stream},
    {NULL, NULL},
};

int luaopen_gcsh_timer(lua_State *L)
{
    gcsh_new_type(L, TIMER_MT, meth, metameth, NULL);
    luaL_newlib(L, funcs);
    return 1;
}
