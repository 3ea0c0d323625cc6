/* A failed chunk's verdict.  See verdict.h.
 *
 * loadfile and dofile are lbaselib's own, but loading through
 * luaL_loadfilex here, whose status tells a file that does not compile or
 * cannot be read (a directory) from one that is not there.  Each of
 * package.searchers is wrapped: a searcher that raises found a file it
 * could not load ("error loading module"); a last searcher, reached only
 * when every other came back empty, keeps the name no searcher found.
 *
 * A load failure is noted, not decided on: the script may handle it (a
 * loadfile's nil tested, a pcall around require) and fail later on its own.
 * The verdict is taken where the command's error is raised, from what
 * raised it: the failure's own message object, or the VM's call of the
 * nil loadfile returned (Lua's debug information names the callee). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>

#include "core/gcsh.h"
#include "rank/verdict.h"

/* The command's last load failures kept (a ring): the error that ends a
 * command is one of the last few, however many a loop caught before. */
#define LOAD_FAILS 8

typedef struct load_state {
    int cannot_test;   /* the chunk's error is a load failure, or require's "not found" */
    int usage;         /* the chunk's error was raised by gcsh.usage_error */
    int fails;         /* load failures noted in this command */
    char missing[256]; /* the last module no searcher found ("": none) */
} load_state;

static const char state_key = 0;   /* registry: the load_state userdata */
static const char fails_key = 0;   /* registry: the ring of this command's failures */
static const char require_key = 0; /* registry: require, to know its frame */
static const char usage_key = 0;   /* registry: gcsh.usage_error, likewise */
static const char error_key = 0;   /* registry: lbaselib's error, likewise */
static const char assert_key = 0;  /* registry: lbaselib's assert, likewise */

static load_state *state_of(lua_State *L)
{
    lua_rawgetp(L, LUA_REGISTRYINDEX, &state_key);
    load_state *st = lua_touserdata(L, -1);
    lua_pop(L, 1);
    return st;
}

/* How many frames are below level's (the same for one activation from
 * wherever on top of it it is counted). */
static int height_of(lua_State *L, int level)
{
    lua_Debug ar;
    int n = level;
    while (lua_getstack(L, n, &ar))
        n++;
    return n - level;
}

/* Keeps the failure whose message is on top of the stack (left there) in
 * the ring, as {msg, and for a loadfile called from Lua: the caller's
 * thread, function, height and line, where a call of its nil is its
 * consequence}. */
static void note_failure(lua_State *L, int site)
{
    load_state *st = state_of(L);
    if (!st)
        return;
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &fails_key) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_createtable(L, LOAD_FAILS, 0);
        lua_pushvalue(L, -1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &fails_key);
    }
    lua_createtable(L, 0, 5);
    lua_pushvalue(L, -3);
    lua_setfield(L, -2, "msg");
    lua_Debug ar;
    if (site && lua_getstack(L, 1, &ar) && lua_getinfo(L, "Slf", &ar) &&
        ar.currentline > 0) { /* the caller is a Lua function */
        lua_setfield(L, -2, "fn");
        lua_pushthread(L);
        lua_setfield(L, -2, "thread");
        lua_pushinteger(L, height_of(L, 1));
        lua_setfield(L, -2, "height");
        lua_pushinteger(L, ar.currentline);
        lua_setfield(L, -2, "line");
    }
    lua_rawseti(L, -2, st->fails % LOAD_FAILS + 1);
    st->fails++;
    lua_pop(L, 1);
}

/* A load of fname ended with status, its message on top: a file that is
 * there but does not compile or cannot be read is a failure to note; one
 * that is not there is the caller's business (loadfile of an optional
 * file). */
static void note_load(lua_State *L, int status, const char *fname)
{
    if (status == LUA_ERRSYNTAX ||
        (status == LUA_ERRFILE && fname && access(fname, F_OK) == 0))
        note_failure(L, 1);
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

/* dofile raises its own failure to load, a missing file included: left
 * uncaught, that is a file the command cannot load. */
static int l_dofile(lua_State *L)
{
    const char *fname = luaL_optstring(L, 1, NULL);
    lua_settop(L, 1);
    int status = luaL_loadfile(L, fname);
    if (status != LUA_OK) {
        note_failure(L, 0);
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
        note_failure(L, 0);
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

/* Keeps the global name's value under key in the registry. */
static void keep_global(lua_State *L, const char *name, const void *key)
{
    lua_getglobal(L, name);
    lua_rawsetp(L, LUA_REGISTRYINDEX, key);
}

void gcsh_verdict_install(lua_State *L)
{
    load_state *st = lua_newuserdatauv(L, sizeof *st, 0);
    memset(st, 0, sizeof *st);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &state_key);
    lua_pushcfunction(L, l_loadfile);
    lua_setglobal(L, "loadfile");
    lua_pushcfunction(L, l_dofile);
    lua_setglobal(L, "dofile");
    keep_global(L, "require", &require_key);
    keep_global(L, "error", &error_key);
    keep_global(L, "assert", &assert_key);
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
        st->cannot_test = st->usage = st->fails = 0;
        st->missing[0] = '\0';
    }
    lua_pushnil(L); /* the last command's failures go with it */
    lua_rawsetp(L, LUA_REGISTRYINDEX, &fails_key);
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

/* Whether the failure on top of the stack (an entry of the ring) has the
 * value at idx as its message: the same object, not a text alike. */
static int failure_has_msg(lua_State *L, int idx)
{
    lua_getfield(L, -1, "msg");
    int same = lua_type(L, idx) == LUA_TSTRING &&
               lua_topointer(L, -1) == lua_topointer(L, idx);
    lua_pop(L, 1);
    return same;
}

/* Whether the active local variable name of the function at ar is nil
 * (the last one of that name: the one its code sees). */
static int local_is_nil(lua_State *L, lua_Debug *ar, const char *name)
{
    int found = 0, isnil = 0;
    const char *n;
    for (int i = 1; (n = lua_getlocal(L, ar, i)) != NULL; i++) {
        if (strcmp(n, name) == 0) {
            found = 1;
            isnil = lua_isnil(L, -1);
        }
        lua_pop(L, 1);
    }
    return found && isnil;
}

/* How the VM's error at ar (level 1, a Lua function) called a nil, from
 * Lua's own debug information on the instruction that raised it (the
 * handler at level 0 is named after it, as a callee would be): 2 through
 * a local or global variable that is nil, 1 a callee with no name (the
 * result of a call, loadfile(f)()), 0 no call of a nil it can tell. */
static int nil_call(lua_State *L, lua_Debug *ar)
{
    lua_Debug h;
    if (!lua_getstack(L, 0, &h) || !lua_getinfo(L, "n", &h))
        return 0;
    const char *how = h.namewhat ? h.namewhat : "";
    if (!h.name)
        return how[0] == '\0';
    if (strcmp(how, "local") == 0)
        return 2 * local_is_nil(L, ar, h.name);
    if (strcmp(how, "global") == 0) {
        int isnil = lua_getglobal(L, h.name) == LUA_TNIL;
        lua_pop(L, 1);
        return 2 * isnil;
    }
    return 0;
}

/* Whether the failure on top of the stack is a loadfile called by the
 * activation at ar (level 1) whose nil this VM error called (how: as
 * nil_call says): the variable that kept it, or at once, on the line
 * where it came back. */
static int failure_at_site(lua_State *L, lua_Debug *ar, int how)
{
    if (lua_getfield(L, -1, "line") != LUA_TNUMBER) {
        lua_pop(L, 1);
        return 0;
    }
    int same = how == 2 || lua_tointeger(L, -1) == ar->currentline;
    lua_getfield(L, -2, "height");
    same = same && lua_tointeger(L, -1) == height_of(L, 1);
    lua_getfield(L, -3, "thread");
    lua_pushthread(L);
    same = same && lua_rawequal(L, -1, -2);
    lua_getfield(L, -5, "fn");
    lua_getinfo(L, "f", ar);
    same = same && lua_rawequal(L, -1, -2);
    lua_pop(L, 6);
    return same;
}

/* Whether the error at index 1, raised by the function at ar (level 1),
 * is one of this command's load failures: its message raised as it came
 * (require, dofile, error(msg, 0)), handed to error or assert (their first
 * slot keeps it), or the VM's call of a loadfile's nil in the function
 * that called it. */
static int error_is_failure(lua_State *L, lua_Debug *ar)
{
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &fails_key) != LUA_TTABLE) {
        lua_pop(L, 1);
        return 0;
    }
    lua_getinfo(L, "Sl", ar);
    int vm = ar->currentline > 0; /* a Lua function: no C function raised it */
    int how = vm ? nil_call(L, ar) : 0;
    int handed = !vm && (frame_is(L, ar, &error_key) || frame_is(L, ar, &assert_key));
    if (handed && !lua_getlocal(L, ar, 1))
        handed = 0;
    int t = lua_gettop(L) - handed; /* the ring */
    int found = 0;
    for (int i = 1; i <= LOAD_FAILS && !found; i++) {
        if (lua_rawgeti(L, t, i) == LUA_TTABLE)
            found = failure_has_msg(L, 1) || (handed && failure_has_msg(L, t + 1)) ||
                    (how && failure_at_site(L, ar, how));
        lua_pop(L, 1);
    }
    lua_settop(L, t - 1);
    return found;
}

void gcsh_verdict_note_error(lua_State *L)
{
    load_state *st = state_of(L);
    lua_Debug ar;
    if (!st || !lua_getstack(L, 1, &ar)) /* level 1: what raised the error */
        return;
    st->usage = frame_is(L, &ar, &usage_key);
    st->cannot_test = error_is_failure(L, &ar);
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
    return st && st->cannot_test ? GCSH_EXIT_SKIP : 1;
}
