/* A failed chunk's verdict.  See verdict.h.
 *
 * loadfile and dofile are lbaselib's own, but loading through
 * luaL_loadfilex here, whose status tells a file that does not compile or
 * cannot be read (a directory) from one that is not there.  Each of
 * package.searchers is wrapped: a searcher that raises found a file it
 * could not load ("error loading module"); a last searcher, reached only
 * when every other came back empty, keeps the name no searcher found. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>

#include "core/gcsh.h"
#include "rank/verdict.h"

typedef struct load_state {
    int failed;        /* a file the chunk loads exists but cannot be read or compiled */
    int dofile_raised; /* dofile is raising its own load error now */
    int cannot_test;   /* the chunk's error is require's "not found" or dofile's own */
    int usage;         /* the chunk's error was raised by gcsh.usage_error */
    char missing[256]; /* the last module no searcher found ("": none) */
} load_state;

static const char state_key = 0;   /* registry: the load_state userdata */
static const char require_key = 0; /* registry: require, to know its frame */
static const char dofile_key = 0;  /* registry: dofile (below), likewise */
static const char usage_key = 0;   /* registry: gcsh.usage_error, likewise */

static load_state *state_of(lua_State *L)
{
    lua_rawgetp(L, LUA_REGISTRYINDEX, &state_key);
    load_state *st = lua_touserdata(L, -1);
    lua_pop(L, 1);
    return st;
}

/* A load of fname ended with status: a file that is there but does not
 * compile or cannot be read makes the chunk untestable; one that is not
 * there is the caller's business (loadfile of an optional file). */
static void note_load(lua_State *L, int status, const char *fname)
{
    load_state *st = state_of(L);
    if (st && (status == LUA_ERRSYNTAX ||
               (status == LUA_ERRFILE && fname && access(fname, F_OK) == 0)))
        st->failed = 1;
}

static int l_loadfile(lua_State *L)
{
    const char *fname = luaL_optstring(L, 1, NULL);
    const char *mode = luaL_optstring(L, 2, NULL);
    int env = !lua_isnone(L, 3) ? 3 : 0;
    int status = luaL_loadfilex(L, fname, mode);
    if (status != LUA_OK) {
        note_load(L, status, fname);
        luaL_pushfail(L);
        lua_insert(L, -2);
        return 2; /* fail, message */
    }
    if (env != 0) { /* as lbaselib: env is the chunk's first upvalue */
        lua_pushvalue(L, env);
        if (!lua_setupvalue(L, -2, 1))
            lua_pop(L, 1);
    }
    return 1;
}

static int dofile_cont(lua_State *L, int d1, lua_KContext d2)
{
    (void)d1;
    (void)d2;
    return lua_gettop(L) - 1;
}

static int l_dofile(lua_State *L)
{
    const char *fname = luaL_optstring(L, 1, NULL);
    lua_settop(L, 1);
    int status = luaL_loadfile(L, fname);
    if (status != LUA_OK) {
        note_load(L, status, fname);
        load_state *st = state_of(L);
        if (st)
            st->dofile_raised = 1; /* the message handler reads it, then clears it */
        return lua_error(L);
    }
    lua_callk(L, 0, LUA_MULTRET, 0, dofile_cont);
    return dofile_cont(L, 0, 0);
}

/* package.searchers[i], wrapped: a searcher that raises found the module's
 * file and could not load it (a syntax error, a broken C library). */
static int wrapped_searcher(lua_State *L)
{
    lua_settop(L, 1);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    if (lua_pcall(L, 1, 2, 0) != LUA_OK) {
        load_state *st = state_of(L);
        if (st)
            st->failed = 1;
        return lua_error(L);
    }
    return 2;
}

/* The last searcher: every other one came back empty. */
static int searcher_none(lua_State *L)
{
    load_state *st = state_of(L);
    const char *name = luaL_checkstring(L, 1);
    if (st)
        snprintf(st->missing, sizeof st->missing, "%s", name);
    return 0; /* no loader, nothing to add to require's message */
}

static void wrap_searchers(lua_State *L)
{
    if (lua_getglobal(L, "package") != LUA_TTABLE ||
        lua_getfield(L, -1, "searchers") != LUA_TTABLE) {
        lua_settop(L, 0);
        return;
    }
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, -1, i);
        lua_pushcclosure(L, wrapped_searcher, 1);
        lua_rawseti(L, -2, i);
    }
    lua_pushcfunction(L, searcher_none);
    lua_rawseti(L, -2, n + 1);
    lua_pop(L, 2);
}

/* gcsh.usage_error(msg [, level=1]): raises msg with its position, as
 * error(msg, level) does; uncaught, the chunk ends as a usage error
 * (status 128): gcsh's own Lua APIs say so when a script misuses them, so
 * that a bisect stops and the script gets fixed. */
static int l_usage_error(lua_State *L)
{
    const char *msg = luaL_checkstring(L, 1);
    int level = (int)luaL_optinteger(L, 2, 1);
    lua_settop(L, 1);
    if (level > 0) {
        luaL_where(L, level);
        lua_pushstring(L, msg);
        lua_concat(L, 2);
    }
    return lua_error(L);
}

void gcsh_verdict_install(lua_State *L)
{
    load_state *st = lua_newuserdatauv(L, sizeof *st, 0);
    memset(st, 0, sizeof *st);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &state_key);
    lua_pushcfunction(L, l_loadfile);
    lua_setglobal(L, "loadfile");
    lua_pushcfunction(L, l_dofile);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &dofile_key);
    lua_setglobal(L, "dofile");
    lua_getglobal(L, "require");
    lua_rawsetp(L, LUA_REGISTRYINDEX, &require_key);
    wrap_searchers(L);
    lua_pushcfunction(L, l_usage_error);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &usage_key);
    if (lua_getglobal(L, "gcsh") == LUA_TTABLE) {
        lua_insert(L, -2);
        lua_setfield(L, -2, "usage_error");
    }
    lua_settop(L, 0);
}

void gcsh_verdict_begin(lua_State *L)
{
    load_state *st = state_of(L);
    if (st) {
        st->failed = st->dofile_raised = st->cannot_test = st->usage = 0;
        st->missing[0] = '\0';
    }
}

/* Whether the function running at ar is the one kept under key. */
static int frame_is(lua_State *L, lua_Debug *ar, const char *key)
{
    lua_getinfo(L, "f", ar);
    lua_rawgetp(L, LUA_REGISTRYINDEX, key);
    int same = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    return same;
}

void gcsh_verdict_note_error(lua_State *L)
{
    load_state *st = state_of(L);
    lua_Debug ar;
    if (!st || !lua_getstack(L, 1, &ar)) /* level 1: what raised the error */
        return;
    st->usage = frame_is(L, &ar, &usage_key);
    if (st->dofile_raised && frame_is(L, &ar, &dofile_key))
        st->cannot_test = 1;
    st->dofile_raised = 0;
    if (st->missing[0] && frame_is(L, &ar, &require_key)) {
        /* require raises "not found" itself; its first argument is the name */
        const char *local = lua_getlocal(L, &ar, 1);
        if (local) {
            const char *name = lua_tostring(L, -1);
            st->cannot_test |= name && strcmp(name, st->missing) == 0;
            lua_pop(L, 1);
        }
    }
}

int gcsh_verdict_of_error(lua_State *L)
{
    load_state *st = state_of(L);
    if (st && st->usage)
        return GCSH_EXIT_USAGE;
    return st && (st->failed || st->cannot_test) ? GCSH_EXIT_SKIP : 1;
}
