/* pcall, xpcall and coroutine.resume that an interrupt or os.exit passes
 * through.
 *
 * An interrupt raises an error in the running Lua code (worker.c's stop
 * hook, or the collective it stopped).  lua.c's pcall catches it like any
 * error, so a loop of pcalls around collectives went on after Ctrl-C (lua.c
 * relies on a second Ctrl-C killing the interpreter).  Here, once the rank
 * is interrupted (ctx->interrupt == GCSH_INTERRUPT: it lasts until the
 * command ends) or has called os.exit, a protected call that failed raises
 * its error again instead of returning false, so the command ends; an
 * xpcall's handler still runs first.  Cleanup is not cut short: <close>
 * variables and finalizers run as the error unwinds, as in any error, and
 * a protected call made by gcsh's own Lua (a stepper undoing a stage, a
 * lesson reporting the learner's error) is Lua's own: that code cleans up
 * and passes the error on itself.  Otherwise they are Lua's own, including
 * yields across them (lbaselib.c's continuation pattern).  The worker
 * installs them (rank/worker.c). */
#include <stdatomic.h>

#include <lauxlib.h>
#include <lua.h>

#include <string.h>

#include "bind/l_shell.h"
#include "core/gcsh.h"
#include "rank/rank.h"
#include "wire/collcheck.h"

/* Whether the command is ending: the error a protected call caught must go
 * on.  A peer's interrupt (GCSH_INTERRUPT_PEER) stopped one operation
 * only: its error is the user's to catch. */
static int command_ending(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    return atomic_load(&ctx->interrupt) == GCSH_INTERRUPT || ctx->exit_code >= 0 ||
           lua_touserdata(L, -1) == gcsh_exit_token();
}

/* Whether the protected call was made by a file of gcsh's own Lua folder
 * (its gcsh/ modules, lessons, examples), not by the user's code. */
static int own_lua_caller(lua_State *L)
{
    lua_Debug ar;
    const char *dir = gcsh_lua_dir();
    if (!dir || !lua_getstack(L, 1, &ar) || !lua_getinfo(L, "S", &ar))
        return 0;
    size_t n = strlen(dir);
    return ar.source[0] == '@' && strncmp(ar.source + 1, dir, n) == 0 && ar.source[1 + n] == '/';
}

/* The error a protected call caught goes on: the command is ending and
 * the call is the user's. */
static int passes_on(lua_State *L)
{
    return command_ending(L) && !own_lua_caller(L);
}

/* lbaselib.c's finishpcall, with the interrupt passed through. */
static int finish_pcall(lua_State *L, int status, lua_KContext extra)
{
    if (status != LUA_OK && status != LUA_YIELD) {
        if (passes_on(L))
            return lua_error(L); /* the error object is on the top */
        gcsh_check_caught(gcsh_ctx_of(L)); /* the script handles it (collcheck.h) */
        lua_pushboolean(L, 0);
        lua_pushvalue(L, -2);
        return 2;
    }
    return lua_gettop(L) - (int)extra;
}

static int protect_pcall(lua_State *L)
{
    luaL_checkany(L, 1);
    lua_pushboolean(L, 1); /* the first result, if there is no error */
    lua_insert(L, 1);
    int status = lua_pcallk(L, lua_gettop(L) - 2, LUA_MULTRET, 0, 0, finish_pcall);
    return finish_pcall(L, status, 0);
}

static int protect_xpcall(lua_State *L)
{
    int n = lua_gettop(L);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushboolean(L, 1);  /* the first result */
    lua_pushvalue(L, 1);    /* the function */
    lua_rotate(L, 3, 2);    /* both under the arguments */
    int status = lua_pcallk(L, n - 2, LUA_MULTRET, 2, 2, finish_pcall);
    return finish_pcall(L, status, 2);
}

/* coroutine.resume: Lua's own (upvalue 1); a coroutine that died of the
 * interrupt passes it on to its resumer. */
static int protect_resume(lua_State *L)
{
    int n = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, LUA_MULTRET);
    if (lua_toboolean(L, 1) || !passes_on(L))
        return lua_gettop(L);
    lua_settop(L, 2); /* false, the error */
    return lua_error(L);
}

void gcsh_protect_install(lua_State *L)
{
    lua_pushcfunction(L, protect_pcall);
    lua_setglobal(L, "pcall");
    lua_pushcfunction(L, protect_xpcall);
    lua_setglobal(L, "xpcall");
    if (lua_getglobal(L, "coroutine") == LUA_TTABLE) {
        lua_getfield(L, -1, "resume");
        lua_pushcclosure(L, protect_resume, 1);
        lua_setfield(L, -2, "resume");
    }
    lua_pop(L, 1);
}
