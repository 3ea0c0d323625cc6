/* A rank's worker: runs the chunks rank 0 sends, under a traceback handler,
 * and reports captured output and status.  Its watcher thread serves the
 * control channel: interrupts and periodic output flushes.  See link.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <lauxlib.h>

#include "wire/collcheck.h"
#include "wire/msg.h"
#include "bind/l_shell.h"
#include "rank/heir.h"
#include "rank/rank.h"
#include "rank/verdict.h"
#include "rank/worker.h"
#include "bind/symmem.h"
#include "bind/persist.h"
#include "trace/flight.h"
#include "trace/trace.h"
#include "core/env.h"

#define FLUSH_EVERY_MS 100

struct gcsh_worker {
    gcsh_ctx *ctx;
    int cmd_fd, ctl_fd;
    gcsh_capture cap;
    pthread_t watcher;
    /* running_seq says which chunk an interrupt may stop; the lock makes
     * "is it still running?" and "set the hook" one step, so an interrupt
     * meant for a finished chunk never lands in the next one. */
    pthread_mutex_t run_lock;
    uint32_t running_seq; /* 0 when idle */
    const char *flight_path, *trace_path; /* --flight, --trace: for heir.h */
};

/* ---- a rank that crashes says how -------------------------------------------
 *
 * A fatal signal (a segfault in a backend, an abort, a kill -SEGV) would
 * end the rank with only a closed connection for rank 0 to see.  The
 * handler writes MSG_CRASH with the signal on the control channel (nothing
 * else writes toward rank 0 there), then hands the signal to the handler it
 * replaced (Open MPI's backtrace, or the default): rank 0 then says "rank 1
 * is gone (killed by signal 11: Segmentation fault)".  Signal-handler state,
 * set once when the worker starts (src/DESIGN.md allows it). */
static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define NCRASH (sizeof crash_signals / sizeof *crash_signals)
static int crash_fd = -1;
static struct sigaction crash_old[NCRASH];

static void on_crash(int sig)
{
    gcsh_msg_header h = {.type = MSG_CRASH, .seq = (uint32_t)sig, .len = 0};
    ssize_t n = write(crash_fd, &h, sizeof h);
    (void)n;
    for (size_t i = 0; i < NCRASH; i++)
        if (crash_signals[i] == sig)
            sigaction(sig, &crash_old[i], NULL);
    raise(sig); /* delivered to the old handler once this one returns */
}

static void report_crashes(int ctl_fd)
{
    crash_fd = ctl_fd;
    struct sigaction sa = {.sa_handler = on_crash};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < NCRASH; i++)
        sigaction(crash_signals[i], &sa, &crash_old[i]);
}

/* ---- SIGTERM: mpirun ending the job -------------------------------------------
 *
 * mpirun ends the job with SIGTERM (then SIGKILL) when a rank dies.  When
 * the dead rank is rank 0, this rank may be its heir (heir.h), which must
 * write the evidence first; the SIGTERM may come before the watcher saw
 * the control channel close.  So the handler only wakes the watcher, which
 * looks: rank 0 gone, the heir's work; else the SIGTERM's default end. */
static int term_pipe[2] = {-1, -1};

static void on_term(int sig)
{
    (void)sig;
    char b = 1;
    ssize_t n = write(term_pipe[1], &b, 1);
    (void)n;
}

static void watch_sigterm(void)
{
    if (pipe(term_pipe) != 0)
        return;
    fcntl(term_pipe[0], F_SETFD, FD_CLOEXEC);
    fcntl(term_pipe[1], F_SETFD, FD_CLOEXEC);
    fcntl(term_pipe[1], F_SETFL, O_NONBLOCK);
    struct sigaction sa = {.sa_handler = on_term};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
}

/* Whether the control channel is at its end (rank 0 gone).  What rank 0
 * sent before it went is read on the way: a MSG_DIE means rank 0 ended
 * the session itself (its output's reader left: | head; a lost rank; a
 * fault), and this rank exits with its status at once, as the watcher
 * would have, without playing rank 0's heir; anything else (a probe) is
 * dropped, since the rank ends either way. */
static int rank0_closed(int ctl_fd)
{
    for (;;) {
        struct pollfd p = {.fd = ctl_fd, .events = POLLIN};
        if (poll(&p, 1, 0) <= 0)
            return 0;
        gcsh_msg m = {0};
        if (gcsh_msg_recv(ctl_fd, &m) != 0)
            return 1;
        if (m.h.type == MSG_DIE)
            _exit((int)m.h.seq);
        gcsh_msg_free(&m);
    }
}

static _Noreturn void rank0_gone(gcsh_worker *w);

/* How long a SIGTERM waits for rank 0's channel to close: mpirun may hear
 * of rank 0's crash (its fatal-signal handler runs first) and send SIGTERM
 * before rank 0 is gone. */
#define TERM_LOOK_MS 1500

static void sigterm_came(gcsh_worker *w)
{
    for (int waited = 0; waited <= TERM_LOOK_MS; waited += 50) {
        if (rank0_closed(w->ctl_fd))
            rank0_gone(w);
        struct pollfd p = {.fd = w->ctl_fd, .events = POLLIN};
        poll(&p, 1, 50);
    }
    signal(SIGTERM, SIG_DFL); /* as if no handler had been there */
    kill(getpid(), SIGTERM);
}

/* As lua.c's lstop: raise an error at the next Lua instruction (the
 * interrupt's part of the rank's hook, core/luahook.h). */
static void stop_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    gcsh_luahook_disarm(L, 1u << GCSH_LUAHOOK_STOP);
    luaL_error(L, "interrupted!");
}

static void interrupt_chunk(gcsh_worker *w, uint32_t seq)
{
    pthread_mutex_lock(&w->run_lock);
    if (w->running_seq == seq && seq != 0) {
        atomic_store(&w->ctx->interrupt, GCSH_INTERRUPT);
        gcsh_luahook_arm(w->ctx->L, GCSH_LUAHOOK_STOP, stop_hook,
                         LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT);
    }
    pthread_mutex_unlock(&w->run_lock);
}

/* MSG_WHERE: the published operation, or the Lua line (collcheck.h). */
static void answer_where(gcsh_worker *w)
{
    pthread_mutex_lock(&w->run_lock);
    int running = w->running_seq != 0;
    int armed = running && gcsh_where_sample_arm(w->ctx);
    pthread_mutex_unlock(&w->run_lock);
    char answer[sizeof(uint32_t) + 256];
    uint32_t waits = (uint32_t)gcsh_where_report(w->ctx, running, armed, answer + sizeof waits,
                                                sizeof answer - sizeof waits);
    memcpy(answer, &waits, sizeof waits);
    gcsh_capture_send(&w->cap, MSG_WHERE, answer, sizeof waits + strlen(answer + sizeof waits));
}

/* The control channel closed without a QUIT: rank 0 is gone, and with it the
 * session.  The worker may be blocked anywhere (in MPI with a dead peer), so
 * the process ends here, once the evidence rank 0 cannot write is written
 * (heir.h), and does not linger. */
static _Noreturn void rank0_gone(gcsh_worker *w)
{
    /* mpirun ends the job with SIGTERM as rank 0 died: the evidence first
     * (its SIGKILL comes later) */
    signal(SIGTERM, SIG_IGN);
    gcsh_heir_write(w->ctx, w->flight_path, w->trace_path);
    fprintf(stderr, "gcsh: rank %d: rank 0 is gone; exiting (status %d)\n", w->ctx->rank,
            GCSH_EXIT_LOST);
    _exit(GCSH_EXIT_LOST);
}

/* A copy of the rank's trace (or the final one), to rank 0; empty when not
 * tracing. */
static void send_trace(gcsh_worker *w, void *(*take)(gcsh_ctx *, size_t *))
{
    size_t len = 0;
    void *blob = take(w->ctx, &len);
    gcsh_capture_send(&w->cap, MSG_TRACE_DATA, blob, blob ? len : 0);
    free(blob);
}

/* MSG_FLIGHT_FLUSH: the rank's flight recorder, which rank 0 cannot read
 * itself (a rank on another node). */
static void send_flight(gcsh_worker *w)
{
    size_t len = 0;
    void *blob = gcsh_flight_blob(w->ctx->flight, w->ctx->rank, &len);
    gcsh_capture_send(&w->cap, MSG_FLIGHT_DATA, blob, blob ? len : 0);
    free(blob);
}

/* MSG_TRACE_ON: collective over MPI (the clock offset), then ACK. */
static void start_trace(gcsh_worker *w)
{
    uint32_t ok = gcsh_trace_start(w->ctx) == 0;
    char buf[sizeof ok + sizeof w->ctx->err];
    memcpy(buf, &ok, sizeof ok);
    size_t n = ok ? 0 : strlen(w->ctx->err) + 1;
    memcpy(buf + sizeof ok, w->ctx->err, n);
    gcsh_capture_send(&w->cap, MSG_TRACE_ACK, buf, sizeof ok + n);
}

static void *watcher_main(void *arg)
{
    gcsh_worker *w = arg;
    gcsh_msg m = {0};
    for (;;) {
        struct pollfd p[2] = {{.fd = w->ctl_fd, .events = POLLIN},
                              {.fd = term_pipe[0], .events = POLLIN}};
        int r = poll(p, term_pipe[0] >= 0 ? 2 : 1, FLUSH_EVERY_MS);
        if (r > 0 && term_pipe[0] >= 0 && (p[1].revents & POLLIN))
            sigterm_came(w);
        if (r > 0 && p[0].revents) {
            if (gcsh_msg_recv(w->ctl_fd, &m) != 0)
                rank0_gone(w);
            if (m.h.type == MSG_QUIT)
                break;
            if (m.h.type == MSG_DIE) /* rank 0 ends the session: a lost rank, a fault */
                _exit((int)m.h.seq);
            if (m.h.type == MSG_INTERRUPT)
                interrupt_chunk(w, m.h.seq);
            if (m.h.type == MSG_WHERE)
                answer_where(w);
            if (m.h.type == MSG_ASK_OP)
                gcsh_check_answer_unchecked(w->ctx);
            if (m.h.type == MSG_TRACE_FLUSH)
                send_trace(w, gcsh_trace_snapshot);
            if (m.h.type == MSG_ABORT_NOW)
                gcsh_check_abort_now(w->ctx, (const uint64_t *)(void *)m.data,
                                     m.h.len / sizeof(uint64_t), (int)m.h.seq);
            if (m.h.type == MSG_ABANDON_NOW && m.h.len >= sizeof(gcsh_abandon_msg))
                gcsh_check_abandon_now(w->ctx, (const gcsh_abandon_msg *)(void *)m.data,
                                       (int)m.h.seq);
            if (m.h.type == MSG_FLIGHT_FLUSH)
                send_flight(w);
        }
        gcsh_capture_flush(&w->cap);
    }
    gcsh_msg_free(&m);
    return NULL;
}

void gcsh_worker_evidence(gcsh_worker *w, const char *flight, const char *trace)
{
    if (!w)
        return;
    w->flight_path = flight;
    w->trace_path = trace;
}

static size_t output_cap(void)
{
    return (size_t)gcsh_env_value(GCSH_ENV_OUTPUT_CAP);
}

gcsh_worker *gcsh_worker_start(gcsh_ctx *ctx, int cmd_fd, int ctl_fd)
{
    gcsh_worker *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->ctx = ctx;
    w->cmd_fd = cmd_fd;
    w->ctl_fd = ctl_fd;
    pthread_mutex_init(&w->run_lock, NULL);
    gcsh_capture_init(&w->cap, cmd_fd, output_cap());
    ctx->cap = &w->cap;
    if (gcsh_check_open(ctx, cmd_fd, &w->cap) != 0) {
        gcsh_capture_destroy(&w->cap);
        free(w);
        return NULL;
    }
    gcsh_shell_install(ctx->L, &w->cap);
    gcsh_protect_install(ctx->L);
    if (ctx->rank != 0) { /* rank 0's own end is the session's */
        report_crashes(ctl_fd);
        watch_sigterm();
    }
    /* Only rank 0's terminal thread handles SIGINT; the watcher must not. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pthread_create(&w->watcher, NULL, watcher_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return w;
}

/* The gcsh type of the object whose method call failed at level 1, or
 * NULL: OP_SELF puts the object in the slot after the method's, which is
 * nil, so it is the first gcsh userdata that follows a nil there. */
static const char *receiver_type(lua_State *L)
{
    lua_Debug ar;
    const char *type = NULL;
    if (!lua_getstack(L, 1, &ar))
        return NULL;
    int prev_nil = 0;
    for (int i = 1; !type && lua_getlocal(L, &ar, i); i++) {
        if (prev_nil && lua_type(L, -1) == LUA_TUSERDATA && lua_getmetatable(L, -1)) {
            if (lua_getfield(L, -1, "__methods") == LUA_TTABLE &&
                lua_getfield(L, -2, "__name") == LUA_TSTRING)
                type = lua_tostring(L, -1); /* the metatable keeps it alive */
            else
                lua_pushnil(L);
            lua_pop(L, 3);
        }
        prev_nil = lua_isnil(L, -1);
        lua_pop(L, 1);
    }
    return type;
}

/* Whether the function at stack level `level` is the user's own Lua code:
 * a Lua function or another chunk's main (dofile) outside gcsh's Lua folder,
 * not the command's chunk itself (its name is the handler's upvalue 1). */
static int users_frame(lua_State *L, lua_Debug *ar)
{
    if (!lua_getinfo(L, "S", ar) || ar->what[0] == 'C')
        return 0;
    const char *chunk = lua_tostring(L, lua_upvalueindex(1));
    if (ar->what[0] == 'm' && chunk && strcmp(ar->source, chunk) == 0)
        return 0;
    const char *dir = gcsh_lua_dir();
    size_t dl = dir ? strlen(dir) : 0;
    return !(dir && ar->source[0] == '@' && strncmp(ar->source + 1, dir, dl) == 0 &&
             ar->source[1 + dl] == '/');
}

/* An error at the prompt is its message alone (CHUNK_SHORT_ERRORS) unless it
 * passed through the user's own functions, where the traceback says how it
 * got there; a traceback into gcsh's C or Lua tells a user nothing. */
static int wants_traceback(lua_State *L)
{
    if (!lua_toboolean(L, lua_upvalueindex(2)))
        return 1;
    lua_Debug ar;
    for (int level = 1; lua_getstack(L, level, &ar); level++)
        if (users_frame(L, &ar))
            return 1;
    return 0;
}

/* Whether a traceback line is a frame of gcsh's own Lua: a gcsh.* module
 * (under the Lua folder's gcsh/, its path maybe cut to "...") or the
 * lesson runner's housekeeping chunk. */
static int own_frame(const char *line, size_t len, const char *dir)
{
    if (len < 2 || line[0] != '\t')
        return 0;
    const char *src = line + 1;
    size_t srclen = strcspn(src, ":\n");
    if (srclen >= 8 && strncmp(src, "(lesson)", 8) == 0)
        return 1;
    char own[4096];
    snprintf(own, sizeof own, "%s/gcsh/", dir);
    if (strncmp(src, own, strlen(own)) == 0)
        return 1;
    if (strncmp(src, "...", 3) != 0)
        return 0;
    for (const char *p = src; p + 6 <= src + srclen; p++) /* cut: its end is enough */
        if (strncmp(p, "/gcsh/", 6) == 0)
            return 1;
    return 0;
}

/* The traceback on L's top without the frames of gcsh's own Lua: the
 * learner's lines, not the library's insides (the message itself already
 * names the learner's line where gcsh's Lua raises with a level).  A
 * "[C]: in function 'error'" goes with the frame that called it; when no
 * frame of Lua code is left, the traceback goes entirely. */
static void drop_own_frames(lua_State *L)
{
    const char *dir = gcsh_lua_dir();
    const char *tb = lua_tostring(L, -1);
    const char *head = tb ? strstr(tb, "\nstack traceback:") : NULL;
    if (!dir || !head)
        return;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addlstring(&b, tb, (size_t)(head - tb));
    size_t mark = luaL_bufflen(&b);
    luaL_addstring(&b, "\nstack traceback:");
    int dropped = 0, lua_left = 0;
    const char *p = head + strlen("\nstack traceback:");
    while (*p == '\n') {
        const char *line = p + 1;
        size_t len = strcspn(line, "\n");
        const char *next = line + len;
        size_t nlen = strcspn(*next ? next + 1 : next, "\n");
        int raise = strncmp(line, "\t[C]: in function 'error'", 25) == 0 && *next &&
                    own_frame(next + 1, nlen, dir);
        if (raise || own_frame(line, len, dir)) {
            dropped = 1;
        } else {
            lua_left |= strncmp(line, "\t[C]:", 5) != 0 && strncmp(line, "\t(...tail", 9) != 0;
            luaL_addchar(&b, '\n');
            luaL_addlstring(&b, line, len);
        }
        p = next;
    }
    if (!dropped) {
        luaL_pushresult(&b);
        lua_pop(L, 1); /* as it was */
        return;
    }
    if (!lua_left) {
        luaL_buffsub(&b, luaL_bufflen(&b) - mark);
    }
    luaL_pushresult(&b);
    lua_remove(L, -2);
}

/* lua.c's msghandler: the message plus a traceback without gcsh's own Lua
 * frames (upvalues: the chunk's name as Lua writes its source, and whether
 * errors are short: then the message alone unless the user's code ran). */
static int msghandler(lua_State *L)
{
    if (lua_touserdata(L, 1) == gcsh_exit_token())
        return 1; /* os.exit: no message, no traceback */
    gcsh_verdict_note_error(L); /* here, before the stack unwinds: who raised it */
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
            return 1;
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    /* .check off: the ranks waiting in the operation this error stopped
     * hear it now (collcheck.h) */
    gcsh_check_abandon(L, msg);
    /* a mistyped method of gcsh's own types: c:alreduce() */
    const char *method = strstr(msg, "attempt to call a nil value (method '");
    char name[64], hint[160];
    if (method && sscanf(method, "attempt to call a nil value (method '%63[^']", name) == 1) {
        const char *type = receiver_type(L); /* only gcsh's own types get a hint */
        if (type && gcsh_suggest_method(L, type, name, hint, sizeof hint) == 0)
            msg = lua_pushfstring(L, "%s; did you mean %s (a method of %s)?", msg, hint, type);
    }
    if (wants_traceback(L)) {
        luaL_traceback(L, L, msg, 1);
        drop_own_frames(L);
    } else {
        lua_pushstring(L, msg);
    }
    return 1;
}

static int push_script_args(lua_State *L)
{
    if (lua_getglobal(L, "arg") != LUA_TTABLE) {
        lua_pop(L, 1);
        return 0;
    }
    int n = (int)luaL_len(L, -1);
    luaL_checkstack(L, n + 3, "too many script arguments");
    for (int i = 1; i <= n; i++)
        lua_rawgeti(L, -i, i);
    lua_remove(L, -n - 1);
    return n;
}

/* An error message, a line on the rank's error stream (rank 0 ends a
 * partial line of the other stream before it: fold.c). */
static void capture_error(gcsh_ctx *ctx, const char *s)
{
    gcsh_capture_write(ctx->cap, GCSH_STDERR, s, strlen(s));
    gcsh_capture_write(ctx->cap, GCSH_STDERR, "\n", 1);
}

/* Whether the value at idx is a table without a text of its own (no
 * __tostring or __name): auto-print shows what is in it. */
static int plain_table(lua_State *L, int idx)
{
    if (lua_type(L, idx) != LUA_TTABLE)
        return 0;
    int own = 0;
    if (luaL_getmetafield(L, idx, "__tostring") != LUA_TNIL) {
        own = 1;
        lua_pop(L, 1);
    }
    if (luaL_getmetafield(L, idx, "__name") != LUA_TNIL) {
        own = 1;
        lua_pop(L, 1);
    }
    return !own;
}

/* Tables among the results become their text (gcsh.pretty.format, which
 * the prelude registers as AUTOPRINT_KEY), as trepl prints them. */
#define AUTOPRINT_KEY "gcsh.autoprint"
static void format_tables(lua_State *L, int first, int n)
{
    if (lua_getfield(L, LUA_REGISTRYINDEX, AUTOPRINT_KEY) != LUA_TFUNCTION) {
        lua_pop(L, 1);
        return; /* no prelude: tables print as lua.c prints them */
    }
    for (int i = first; i < first + n; i++) {
        if (!plain_table(L, i))
            continue;
        lua_pushvalue(L, -1);
        lua_pushvalue(L, i);
        if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_type(L, -1) == LUA_TSTRING)
            lua_replace(L, i);
        else
            lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

/* Prints a chunk's results through the global print, as lua.c does.  A
 * failure there (a __tostring that raises, a read of device memory that an
 * interrupt or a peer's failure stopped) is the line's failure, in lua.c's
 * words, on the stack: the line did not do what it showed. */
static int print_results(lua_State *L, int first)
{
    int n = lua_gettop(L) - first + 1;
    if (n <= 0)
        return LUA_OK;
    luaL_checkstack(L, LUA_MINSTACK, "too many results to print");
    format_tables(L, first, n);
    lua_getglobal(L, "print");
    lua_insert(L, first);
    if (lua_pcall(L, n, 0, 0) == LUA_OK)
        return LUA_OK;
    lua_pushfstring(L, "error calling 'print' (%s)", lua_tostring(L, -1));
    return LUA_ERRRUN;
}

/* The last KEPT_CHUNKS sources of chunks with no file behind them (typed
 * at the prompt, -e: names "=..."), in registry["gcsh.chunks"] as a ring
 * {n = chunks kept so far, size = KEPT_CHUNKS, [1 + i % size] = source}:
 * repro.sweep's out= finds there the text of a function defined at the
 * prompt (lua/gcsh/repro_script.lua). */
#define KEPT_CHUNKS 512
static void keep_source(lua_State *L, const char *name, const char *src, size_t len)
{
    if (name[0] != '=')
        return;
    if (lua_getfield(L, LUA_REGISTRYINDEX, "gcsh.chunks") != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_createtable(L, KEPT_CHUNKS, 2);
        lua_pushinteger(L, KEPT_CHUNKS);
        lua_setfield(L, -2, "size");
        lua_pushvalue(L, -1);
        lua_setfield(L, LUA_REGISTRYINDEX, "gcsh.chunks");
    }
    lua_getfield(L, -1, "n");
    lua_Integer n = lua_tointeger(L, -1) + 1;
    lua_pop(L, 1);
    lua_pushlstring(L, src, len);
    lua_rawseti(L, -2, (n - 1) % KEPT_CHUNKS + 1);
    lua_pushinteger(L, n);
    lua_setfield(L, -2, "n");
    lua_pop(L, 1);
}

static uint32_t run_chunk(gcsh_worker *w, uint32_t flags, const char *name, const char *src,
                          size_t len)
{
    lua_State *L = w->ctx->L;
    int base = lua_gettop(L);
    /* a line's stdin is the prompt's: prelude.lua refuses to read it */
    lua_pushboolean(L, (flags & CHUNK_PRINT_RESULTS) != 0);
    lua_setfield(L, LUA_REGISTRYINDEX, "gcsh.typed_line");
    lua_pushstring(L, name); /* luaL_loadbuffer's chunkname is the source as is */
    lua_pushboolean(L, (flags & CHUNK_SHORT_ERRORS) != 0);
    lua_pushcclosure(L, msghandler, 2);
    gcsh_verdict_begin(L);
    w->ctx->check_failed[0] = '\0';
    int st = luaL_loadbuffer(L, src, len, name);
    if (st == LUA_OK)
        keep_source(L, name, src, len);
    if (st == LUA_OK) {
        int nargs = (flags & CHUNK_SCRIPT) ? push_script_args(L) : 0;
        st = lua_pcall(L, nargs, LUA_MULTRET, base + 1);
    }
    if (st == LUA_OK && (flags & CHUNK_PRINT_RESULTS))
        st = print_results(L, base + 2);
    if (st == LUA_OK) { /* what the command left on the stream is its own (collcheck.h) */
        lua_settop(L, base + 1);
        lua_pushcfunction(L, gcsh_check_end_sync);
        st = lua_pcall(L, 0, 0, 0); /* no traceback: no Lua code ran there */
    }
    if (st != LUA_OK && w->ctx->exit_code >= 0) {
        lua_settop(L, base); /* os.exit: no message (serve_chunk reports it) */
        return CHUNK_ERROR;
    }
    uint32_t kind = 0;
    if (st != LUA_OK) {
        const char *msg = lua_tostring(L, -1);
        if (!msg)
            msg = "(error object is not a string)";
        if (flags & CHUNK_FIRST_FAILURE) /* rank 0 shows the first in full */
            gcsh_capture_send(w->ctx->cap, MSG_FAILURE, msg, strlen(msg));
        else
            capture_error(w->ctx, msg);
        /* what happened decides, never the message's text (verdict.h) */
        int v = gcsh_verdict_of_error(L);
        kind = v == GCSH_EXIT_SKIP ? CHUNK_CANNOT_TEST : v == GCSH_EXIT_USAGE ? CHUNK_USAGE : 0;
        if (msg && gcsh_check_error_is(w->ctx, msg))
            kind |= CHUNK_CHECK_FAILED; /* the error is the check's, not one of its own */
    }
    lua_settop(L, base);
    return st == LUA_OK ? CHUNK_OK : CHUNK_ERROR | kind;
}

/* MSG_TAPE between chunks: the next chunk's gcsh.wtime returns these (a
 * replay of a recorded line, gcsh.h). */
static void play_tape(gcsh_tape *tp, const char *data, size_t len)
{
    size_t n = len / sizeof(double);
    if (n > tp->cap) {
        double *p = realloc(tp->v, n * sizeof *p);
        if (!p)
            return;
        tp->v = p;
        tp->cap = n;
    }
    memcpy(tp->v, data, n * sizeof(double));
    tp->n = n;
    tp->next = 0;
    tp->mode = GCSH_TAPE_PLAY;
}

static uint32_t serve_chunk(gcsh_worker *w, const gcsh_msg *m)
{
    uint32_t hdr[2];
    if (m->h.len < sizeof hdr)
        return CHUNK_ERROR;
    memcpy(hdr, m->data, sizeof hdr);
    uint32_t flags = hdr[0], namelen = hdr[1];
    if (sizeof hdr + namelen > m->h.len)
        return CHUNK_ERROR;
    char name[256];
    size_t nl = namelen < sizeof name - 1 ? namelen : sizeof name - 1;
    memcpy(name, m->data + sizeof hdr, nl);
    name[nl] = '\0';
    const char *src = m->data + sizeof hdr + namelen;
    size_t len = m->h.len - sizeof hdr - namelen;

    gcsh_capture_begin(&w->cap, m->h.seq, (flags & CHUNK_PROGRESS) != 0);
    gcsh_check_chunk_begin(w->ctx, name, (flags & CHUNK_CHECK) != 0, m->h.seq);
    gcsh_trace_chunk_begin(w->ctx, src, len); /* the flight recorder's, and the trace's */
    pthread_mutex_lock(&w->run_lock);
    atomic_store(&w->ctx->interrupt, 0);
    w->ctx->exit_code = -1;
    w->ctx->output_varies = 0;
    w->running_seq = m->h.seq;
    pthread_mutex_unlock(&w->run_lock);

    gcsh_tape *tape = &w->ctx->tape;
    if (flags & CHUNK_TAPE) { /* recorded: keep what gcsh.wtime returns */
        tape->mode = GCSH_TAPE_RECORD;
        tape->n = tape->next = 0;
    }
    uint32_t status = run_chunk(w, flags, name, src, len);
    if (tape->mode == GCSH_TAPE_RECORD) /* before DONE: the coordinator keeps it with the line */
        gcsh_capture_send(&w->cap, MSG_TAPE, tape->v, tape->n * sizeof *tape->v);
    tape->mode = GCSH_TAPE_OFF;
    tape->n = tape->next = 0;
    /* windows and signals collected without :free() during the command */
    gcsh_symmem_note_garbage(w->ctx->L);

    pthread_mutex_lock(&w->run_lock);
    w->running_seq = 0;
    gcsh_luahook_disarm(w->ctx->L, GCSH_LUAHOOK_ALL);
    if (atomic_exchange(&w->ctx->interrupt, 0) && CHUNK_STATUS(status) == CHUNK_ERROR)
        status = CHUNK_INTERRUPTED;
    if (w->ctx->exit_code >= 0) /* os.exit, even if a pcall caught it: the session ends */
        status = CHUNK_EXIT_WORD(w->ctx->exit_code);
    pthread_mutex_unlock(&w->run_lock);
    gcsh_persist_command_end(w->ctx->L, CHUNK_STATUS(status) == CHUNK_INTERRUPTED);
    gcsh_check_chunk_end(w->ctx);
    gcsh_trace_chunk_end(w->ctx, status != CHUNK_OK);
    return status | (w->ctx->output_varies ? CHUNK_VARIES : 0);
}

int gcsh_worker_loop(gcsh_worker *w)
{
    gcsh_msg m = {0};
    int code = 1; /* rank 0 vanished without saying goodbye */
    int spin = gcsh_spin_us();
    while (gcsh_wait_readable(w->cmd_fd, spin, -1) == 1 && gcsh_msg_recv(w->cmd_fd, &m) == 0) {
        if (m.h.type == MSG_QUIT) {
            code = m.h.seq; /* QUIT carries the exit code in seq */
            break;
        }
        if (m.h.type == MSG_ABORT_COMMS) {
            gcsh_check_abort_ids(w->ctx, (const uint64_t *)(void *)m.data,
                                 m.h.len / sizeof(uint64_t), m.h.seq == 1);
            continue;
        }
        if (m.h.type == MSG_TRACE_ON) {
            start_trace(w);
            continue;
        }
        if (m.h.type == MSG_TRACE_OFF) {
            send_trace(w, gcsh_trace_stop);
            continue;
        }
        if (m.h.type == MSG_TAPE) {
            play_tape(&w->ctx->tape, m.data, m.h.len);
            continue;
        }
        if (m.h.type != MSG_CHUNK)
            continue; /* e.g. the verdict of a check that an interrupt gave up */
        uint32_t status = serve_chunk(w, &m);
        if (gcsh_capture_done(&w->cap, status) != 0)
            break;
    }
    gcsh_msg_free(&m);
    return code;
}

void gcsh_worker_stop(gcsh_worker *w)
{
    if (!w)
        return;
    /* The watcher leaves when rank 0 closes the control channel or sends QUIT. */
    pthread_join(w->watcher, NULL);
    gcsh_check_close(w->ctx);
    free(w->ctx->tape.v);
    w->ctx->tape = (gcsh_tape){0};
    w->ctx->cap = NULL;
    gcsh_capture_destroy(&w->cap);
    pthread_mutex_destroy(&w->run_lock);
    free(w);
}
