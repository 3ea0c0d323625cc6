/* The shell's own Lua plumbing on every rank: print, io.stdout, io.stderr
 * and warn() go to the rank's output capture (program output and errors
 * apart), and gcsh.sleep sleeps interruptibly. */
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <lauxlib.h>
#include <lualib.h>
#include <mpi.h>

#include "wire/collcheck.h"
#include "core/gcsh.h"
#include "core/safefile.h"
#include "wire/msg.h"
#include "wire/out.h"
#include "bind/comm_route.h"
#include "bind/l_shell.h"
#include "bind/opts.h"
#include "bind/winbuild.h"

static int shell_print(lua_State *L)
{
    int n = lua_gettop(L);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int i = 1; i <= n; i++) {
        if (i > 1)
            luaL_addchar(&b, '\t');
        luaL_tolstring(L, i, NULL);
        luaL_addvalue(&b);
    }
    luaL_addchar(&b, '\n');
    luaL_pushresult(&b);
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    gcsh_capture_write(gcsh_ctx_of(L)->cap, GCSH_STDOUT, s, len);
    return 0;
}

/* The standard files cannot be closed (as in liolib.c). */
static int no_close(lua_State *L)
{
    luaL_Stream *p = luaL_checkudata(L, 1, LUA_FILEHANDLE);
    p->closef = &no_close; /* keep the file valid */
    luaL_pushfail(L);
    lua_pushliteral(L, "cannot close standard file");
    return 2;
}

static void push_capture_file(lua_State *L, gcsh_capture *cap, int stream)
{
    luaL_Stream *p = lua_newuserdatauv(L, sizeof *p, 0);
    p->closef = &no_close;
    p->f = gcsh_capture_file(cap, stream);
    luaL_setmetatable(L, LUA_FILEHANDLE);
}

/* warn() as lauxlib's, into the capture's error stream: "@on" and "@off"
 * switch it (off at start, as in lua.c), a message in pieces (tocont) is
 * one line "Lua warning: ...". */
typedef struct warn_state {
    gcsh_capture *cap;
    int on, midway; /* warnings shown; a message is being continued */
} warn_state;

static void shell_warn(void *ud, const char *msg, int tocont)
{
    warn_state *w = ud;
    if (!w->midway && msg[0] == '@') { /* a control message */
        if (strcmp(msg, "@on") == 0)
            w->on = 1;
        else if (strcmp(msg, "@off") == 0)
            w->on = 0;
        return;
    }
    if (w->on && !w->midway)
        gcsh_capture_write(w->cap, GCSH_STDERR, "Lua warning: ", 13);
    if (w->on)
        gcsh_capture_write(w->cap, GCSH_STDERR, msg, strlen(msg));
    if (w->on && !tocont)
        gcsh_capture_write(w->cap, GCSH_STDERR, "\n", 1);
    w->midway = tocont;
}

/* The warn state lives in a userdata kept in the registry (the state's
 * own memory, freed with it). */
static void install_warn(lua_State *L, gcsh_capture *cap)
{
    warn_state *w = lua_newuserdatauv(L, sizeof *w, 0);
    *w = (warn_state){.cap = cap};
    lua_setfield(L, LUA_REGISTRYINDEX, "gcsh.warn");
    lua_setwarnf(L, shell_warn, w);
}

/* gcsh.sleep(seconds): sleeps in short slices so that an interrupt from rank
 * 0 ends it promptly (the interrupt hook only fires between Lua instructions). */
static int shell_sleep(lua_State *L)
{
    double s = luaL_checknumber(L, 1);
    luaL_argcheck(L, s >= 0 && s <= 1e6, 1, "seconds must be 0..1e6");
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    struct timespec end, now;
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += (time_t)s;
    end.tv_nsec += (long)((s - (double)(time_t)s) * 1e9);
    if (end.tv_nsec >= 1000000000L) {
        end.tv_sec++;
        end.tv_nsec -= 1000000000L;
    }
    gcsh_where_begin_alone(ctx, "gcsh.sleep(%g)", s); /* for hang reports */
    for (;;) {
        if (atomic_load(&ctx->interrupt)) {
            gcsh_where_end(ctx);
            return luaL_error(L, "interrupted!");
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        double left = (double)(end.tv_sec - now.tv_sec) + 1e-9 * (double)(end.tv_nsec - now.tv_nsec);
        if (left <= 0) {
            gcsh_where_end(ctx);
            return 0;
        }
        double slice = left < 0.02 ? left : 0.02;
        struct timespec ts = {0, (long)(slice * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* gcsh.progress(done, total [, label]): a progress report for rank 0's
 * terminal (progress.h); gcsh.progress() clears it.  Cheap enough to call
 * every step: the report is sent with the next output flush. */
static int shell_progress(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (lua_isnoneornil(L, 1)) {
        gcsh_capture_progress(ctx->cap, 0, 0, NULL);
        return 0;
    }
    lua_Integer done = luaL_checkinteger(L, 1), total = luaL_checkinteger(L, 2);
    luaL_argcheck(L, total >= 1, 2, "total must be at least 1");
    luaL_argcheck(L, done >= 0 && done <= total, 1, "done must be 0..total");
    const char *label = luaL_optstring(L, 3, "");
    luaL_argcheck(L, strlen(label) < sizeof(((gcsh_progress_msg *)0)->label), 3,
                  "label must be shorter than 48 bytes");
    gcsh_capture_progress(ctx->cap, (uint64_t)done, (uint64_t)total, label);
    return 0;
}

/* gcsh.check([on]): this rank's .check, for the rest of the command (bench
 * turns it off around timed loops; call it on every rank alike).  Returns
 * the previous setting. */
/* gcsh.is_check_error(e): whether e is this rank's last failed collective
 * check's error as it was raised (not a text that quotes it): another
 * rank's trouble, not this rank's own (collcheck.h). */
static int shell_is_check_error(lua_State *L)
{
    const char *msg = lua_type(L, 1) == LUA_TSTRING ? lua_tostring(L, 1) : NULL;
    lua_pushboolean(L, msg && gcsh_check_error_is(gcsh_ctx_of(L), msg));
    return 1;
}

static int shell_check(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    int was = gcsh_check_enabled(ctx);
    if (!lua_isnone(L, 1))
        gcsh_check_set_enabled(ctx, lua_toboolean(L, 1));
    lua_pushboolean(L, was);
    return 1;
}

/* gcsh.timeout(seconds): as .timeout at the prompt, from a script: a hang
 * report every `seconds`, and collective checks that wait longer than that
 * for a rank that is alive fail, naming where it is (without it, a script
 * keeps waiting for a slow rank).  0: neither.  Rank 0's coordinator holds
 * the setting: every rank may call it, the last call wins; it holds for
 * the rest of the session. */
static int shell_timeout(lua_State *L)
{
    double s = luaL_checknumber(L, 1);
    luaL_argcheck(L, s >= 0 && s <= 1e6, 1, "seconds must be 0..1e6");
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (ctx->cap)
        gcsh_capture_send(ctx->cap, MSG_TIMEOUT, &s, sizeof s);
    return 0;
}

/* gcsh.deadline(seconds): as --deadline from a script: the whole job ends
 * `seconds` after the session started, whatever runs then, with a hang
 * report, the flight recorder written and --deadline-status (1 by
 * default).  0: no deadline.  Rank 0's coordinator holds it; the last call
 * wins. */
static int shell_deadline(lua_State *L)
{
    double s = luaL_checknumber(L, 1);
    luaL_argcheck(L, s >= 0 && s <= 1e6, 1, "seconds must be 0..1e6");
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    if (ctx->cap)
        gcsh_capture_send(ctx->cap, MSG_DEADLINE, &s, sizeof s);
    return 0;
}

/* gcsh.seed(n): as --seed n on this rank: math.randomseed(n, rank), and
 * t:rand() without a seed draws from (n << 32) + rank, so a run is the same
 * run again and every rank draws its own numbers. */
void gcsh_shell_seed(lua_State *L, long long n)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    ctx->seeded = 1;
    ctx->seed = n;
    lua_getglobal(L, "math");
    lua_getfield(L, -1, "randomseed");
    lua_pushinteger(L, (lua_Integer)n);
    lua_pushinteger(L, ctx->rank);
    lua_call(L, 2, 0);
    lua_pop(L, 1);
}

static int shell_seed(lua_State *L)
{
    lua_Integer n = luaL_checkinteger(L, 1);
    luaL_argcheck(L, n >= 0 && n <= 0x7fffffff, 1, "seed must be 0..2147483647");
    gcsh_shell_seed(L, (long long)n);
    return 0;
}

/* true, or (as io.open answers) nil and why. */
static int file_answer(lua_State *L, int rc, const char *err)
{
    if (rc != 0) {
        luaL_pushfail(L);
        lua_pushstring(L, err);
        return 2;
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* gcsh.check_file(path): true when gcsh may write path (safefile.h: absent
 * or a regular file, not a link, in a folder that exists), else nil and
 * why. */
static int shell_check_file(lua_State *L)
{
    char err[PATH_MAX + 200];
    return file_answer(L, gcsh_file_check(luaL_checkstring(L, 1), err, sizeof err), err);
}

/* gcsh.write_file(path, text): the whole file at once, the way gcsh writes
 * every file (safefile.h): true, or nil and why (a refused target, a full
 * disk), and the target is left as it was. */
static int shell_write_file(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    size_t n;
    const char *text = luaL_checklstring(L, 2, &n);
    char err[PATH_MAX + 200];
    return file_answer(L, gcsh_file_write_all(path, text, n, err, sizeof err), err);
}

/* gcsh.varies(): this command's output depends on timing or the machine
 * (a replay records it and does not compare it, record.h). */
static int shell_varies(lua_State *L)
{
    gcsh_ctx_of(L)->output_varies = 1;
    return 0;
}

/* gcsh.check_counts(): {board=, coordinator=, failed=}: this rank's
 * collective checks so far, by the path that decided them (collcheck.h). */
static int shell_check_counts(lua_State *L)
{
    gcsh_check_counts n;
    gcsh_check_get_counts(gcsh_ctx_of(L), &n);
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, (lua_Integer)n.board);
    lua_setfield(L, -2, "board");
    lua_pushinteger(L, (lua_Integer)n.coordinator);
    lua_setfield(L, -2, "coordinator");
    lua_pushinteger(L, (lua_Integer)n.failed);
    lua_setfield(L, -2, "failed");
    return 1;
}

/* gcsh.debug.inject(what): makes a fault happen, to test what the shell does
 * about it (backend.h).  A test facility: refused unless GCSH_TEST_FAULTS=1. */
static int debug_inject(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    const char *what = luaL_checkstring(L, 1);
    const char *env = getenv("GCSH_TEST_FAULTS");
    if (!env || strcmp(env, "1") != 0)
        return luaL_error(L, "gcsh.debug.inject is a test facility: start gcsh with "
                             "GCSH_TEST_FAULTS=1 to use it");
    int slow = strncmp(what, "stage_slow:", 11) == 0;
    if (slow || strncmp(what, "stage:", 6) == 0) { /* any backend: winbuild.h */
        if (gcsh_winbuild_inject(ctx, strchr(what, ':') + 1, slow) != 0)
            return gcsh_raise(L, ctx);
        return 0;
    }
    if (!ctx->be->inject)
        return luaL_error(L, "gcsh.debug.inject: the %s backend injects no faults", ctx->be->name);
    if (ctx->be->inject(ctx, what) != 0)
        return gcsh_raise(L, ctx);
    return 0;
}

static const char exit_token = 0;

const void *gcsh_exit_token(void)
{
    return &exit_token;
}

/* Armed by os.exit (its part of the rank's hook, core/luahook.h): every Lua
 * instruction raises the token again, so a pcall in the user's code cannot
 * keep the chunk going. */
static void exit_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    lua_pushlightuserdata(L, (void *)&exit_token);
    lua_error(L);
}

/* os.exit([status]): ends the chunk here and, once the command is over on
 * every rank, the session with that status (true: 0, false: 1, as lua.c;
 * coord.c says which status when ranks disagree).  Calling the C library's
 * exit would take this rank out of the session (rank 0 would report it
 * lost); reproducers exit 125 through this. */
static int shell_exit(lua_State *L)
{
    int code = lua_isboolean(L, 1) ? !lua_toboolean(L, 1) : (int)luaL_optinteger(L, 1, 0);
    luaL_argcheck(L, code >= 0 && code <= 255, 1, "status must be 0..255");
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    ctx->exit_code = code;
    /* on the rank's state and, in a coroutine, on it too: its resumer
     * must stop as well */
    gcsh_luahook_arm(L, GCSH_LUAHOOK_EXIT, exit_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT);
    lua_pushlightuserdata(L, (void *)&exit_token);
    return lua_error(L);
}

/* gcsh.info(): this rank's facts, one flat table of strings and numbers
 * (.info folds them across ranks: lua/gcsh/info.lua).  The backend's own
 * (device details, capabilities, links) first, then what every backend
 * shares. */
/* The C heap as glibc's malloc counts it (mallinfo2): heap_in_use, the
 * bytes handed out and not yet freed; heap_held, the bytes malloc holds
 * from the system for them (its arenas and mmapped blocks).  Beside RSS
 * they tell a soak's growth apart: memory someone keeps grows in_use;
 * fragmentation grows held (and RSS) alone.  Not under AddressSanitizer,
 * whose allocator glibc does not see. */
static void push_heap(lua_State *L)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33) && \
    !defined(__SANITIZE_ADDRESS__)
    struct mallinfo2 m = mallinfo2();
    gcsh_set_integer(L, "heap_in_use", (lua_Integer)(m.uordblks + m.hblkhd));
    gcsh_set_integer(L, "heap_held", (lua_Integer)(m.arena + m.hblkhd));
#else
    (void)L;
#endif
}

static int shell_info(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    ctx->output_varies = 1; /* devices and versions: the machine's */
    ctx->be->info(ctx, L);
    gcsh_set_integer(L, "rank", ctx->rank);
    gcsh_set_integer(L, "size", ctx->size);
    gcsh_set_integer(L, "node", ctx->node);
    gcsh_set_integer(L, "local_rank", ctx->local_rank);
    gcsh_set_integer(L, "pid", (lua_Integer)getpid()); /* gdb -p */
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    gcsh_set_string(L, "host", host);
    gcsh_set_string(L, "backend", ctx->be->name);
    gcsh_set_string(L, "device", ctx->device);
    gcsh_comm_route_info(L);
    gcsh_set_string(L, "gcsh", GCSH_VERSION);
    gcsh_set_string(L, "lua", LUA_RELEASE);
    char mpi[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(mpi, &len);
    mpi[strcspn(mpi, ",\n")] = '\0'; /* the first clause names the library and version */
    gcsh_set_string(L, "mpi", mpi);
    /* the networks MPI may use, as gcsh -n's launcher chose them
     * (shell/launch_net.h, which exports GCSH_MPI_NETWORK to every rank) */
    const char *net = getenv("GCSH_MPI_NETWORK");
    gcsh_set_string(L, "mpi_network", net ? net : "Open MPI's choice (not started by gcsh -n)");
    push_heap(L);
    return 1;
}

void gcsh_shell_install(lua_State *L, gcsh_capture *cap)
{
    lua_pushcfunction(L, shell_print);
    lua_setglobal(L, "print");
    lua_getglobal(L, "os");
    lua_pushcfunction(L, shell_exit);
    lua_setfield(L, -2, "exit");
    lua_pop(L, 1);
    lua_getglobal(L, "io");
    push_capture_file(L, cap, GCSH_STDOUT);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, "_IO_output"); /* io.write's default file */
    lua_setfield(L, -2, "stdout");
    push_capture_file(L, cap, GCSH_STDERR);
    lua_setfield(L, -2, "stderr");
    lua_pop(L, 1);
    install_warn(L, cap);
    static const luaL_Reg gcsh_funcs[] = {
        {"sleep", shell_sleep},           {"info", shell_info},
        {"check", shell_check},           {"progress", shell_progress},
        {"varies", shell_varies},         {"timeout", shell_timeout},
        {"deadline", shell_deadline},     {"seed", shell_seed},
        {"check_file", shell_check_file}, {"write_file", shell_write_file},
        {"check_counts", shell_check_counts}, {"check_options", gcsh_opts_lua_check},
        {"is_check_error", shell_is_check_error},
        {NULL, NULL},
    };
    lua_getglobal(L, "gcsh");
    luaL_setfuncs(L, gcsh_funcs, 0);
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, debug_inject);
    lua_setfield(L, -2, "inject");
    lua_setfield(L, -2, "debug");
    lua_pop(L, 1);
}
