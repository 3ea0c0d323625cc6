/* Rank 0's line loop and dot-commands, on the session (session.h).  See
 * repl.h. */
#include <ctype.h>
#include <limits.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lualib.h>
#include <readline/history.h>
#include <readline/readline.h>

#include "bind/libs.h"
#include "shell/complete.h"
#include "shell/lesson.h"
#include "wire/msg.h"
#include "rank/rank.h"
#include "shell/record.h"
#include "shell/repl.h"
#include "shell/sigint.h"
#include "shell/trace_coord.h"

#define HISTORY_MAX 1000

/* ---- set-up ---------------------------------------------------------------- */

/* Ctrl-Z while a command runs: the job stops; continued in the background
 * (bg) the command runs on, and the next prompt waits for fg (repl.c's
 * wait_foreground). */
static void command_job_control(void *arg, int mask)
{
    gcsh_session *s = arg;
    if ((mask & GCSH_SIGMASK_TSTP) && gcsh_term_suspend(s->term) != 0) {
        gcsh_coord_say(s->coord, "gcsh: Ctrl-Z stops a session started with gcsh -n N; "
                                 "under a plain mpirun the job cannot stop as one");
        return;
    }
    gcsh_term_resume(s->term);
}

static void dot_command(gcsh_session *s, char *line);

void gcsh_repl_init(gcsh_session *s, gcsh_coord *coord, gcsh_term *term, lua_State *L0)
{
    gcsh_session_init(s, coord, term, L0);
    s->run_dot = dot_command;
    static const gcsh_coord_hooks terminal = {.job_control = command_job_control};
    gcsh_coord_listen(coord, &terminal, s);
}

/* ---- dot-commands -------------------------------------------------------- */

typedef struct gcsh_dot {
    const char *name;
    const char *args;  /* for .help, "" when none */
    const char *usage; /* for the usage line (".ranks [LIST|all]"), NULL: leave out */
    const char *help;  /* for .help, "" to leave out (an alias) */
    void (*run)(gcsh_session *s, const char *arg);
} gcsh_dot;

static const gcsh_dot dot_commands[];


/* "usage: .help | .info | .ranks [LIST|all] | ..." from the table. */
static void say_usage(gcsh_session *s, const char *prefix)
{
    char buf[1024];
    size_t n = (size_t)snprintf(buf, sizeof buf, "%susage:", prefix);
    for (const gcsh_dot *d = dot_commands; d->name && n < sizeof buf; d++)
        if (d->usage)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s %s", d == dot_commands ? "" : " |",
                                  d->usage);
    gcsh_coord_say(s->coord, "%s", buf);
}

/* One line per dot-command (the table's help column), for .help and --help. */
static size_t format_dot_list(char *buf, size_t len)
{
    size_t n = 0;
    for (const gcsh_dot *d = dot_commands; d->name && n < len; d++) {
        if (!d->help[0])
            continue;
        char head[40];
        snprintf(head, sizeof head, ".%s%s%s", d->name, d->args[0] ? " " : "", d->args);
        n += (size_t)snprintf(buf + n, len - n, "%s  %-17s %s", n ? "\n" : "", head, d->help);
    }
    return n;
}

void gcsh_print_dot_commands(FILE *f)
{
    char buf[4096];
    format_dot_list(buf, sizeof buf);
    fprintf(f, "%s\n", buf);
}

static void say_formatted(gcsh_session *s, const char *module, const char *fn, int nargs);
static lua_State *formatter(gcsh_session *s);

/* .help: the commands; .help TOPIC: that part of the Lua API (gcsh.help). */
static void dot_help(gcsh_session *s, const char *arg)
{
    if (*arg) {
        lua_pushstring(formatter(s), arg);
        say_formatted(s, "gcsh.help", "text", 1);
        return;
    }
    char list[4096];
    format_dot_list(list, sizeof list);
    gcsh_coord_say(s->coord, "%s\n%s",
                   "Lines are Lua; they run on every targeted rank and each rank's output\n"
                   "comes back folded by rank range ([0-2,5] text).  `=expr` or a bare\n"
                   "expression prints its value.  Globals: rank, size, gcsh, tensor, comm,\n"
                   "kernel, step, show, help, repro.  The Lua API: .help tensor (comm,\n"
                   "window, signals, xfer, multicast, timer, kernel, step, bench, repro,\n"
                   "gcsh) or help(x).",
                   list);
}

static void dot_ranks(gcsh_session *s, const char *arg)
{
    if (*arg) {
        if (gcsh_session_set_ranks(s, arg) != 0) /* said why */
            gcsh_session_dot_refused(s);
    } else { /* no argument: say which ranks lines run on */
        char ranks[512];
        gcsh_coord_say(s->coord, "ranks %s", gcsh_session_targets(s, ranks, sizeof ranks));
    }
}

static void dot_timeout(gcsh_session *s, const char *arg)
{
    if (*arg) {
        char *end;
        double v = strtod(arg, &end);
        if (end == arg || *end || !(v >= 0 && v <= 1e6)) { /* NaN is in no range */
            gcsh_coord_say(s->coord, "gcsh: .timeout: SECONDS must be a number 0..1e6, got '%s'",
                           arg);
            gcsh_session_dot_refused(s);
            return;
        }
        s->coord->timeout = s->coord->limit = v;
    }
    gcsh_coord_say(s->coord, "timeout %g s%s", s->coord->timeout,
                   s->coord->timeout <= 0 ? " (never report)"
                   : s->coord->limit <= 0 ? " (reports only: collective checks keep waiting)"
                                          : "");
}

static void dot_time(gcsh_session *s, const char *arg)
{
    if (strcmp(arg, "on") == 0)
        s->time_on = 1;
    else if (strcmp(arg, "off") == 0)
        s->time_on = 0;
    else if (*arg) {
        gcsh_coord_say(s->coord, "gcsh: .time: expected on or off, got '%s'", arg);
        gcsh_session_dot_refused(s);
        return;
    }
    gcsh_coord_say(s->coord, "time %s", s->time_on ? "on" : "off");
}

static void dot_traceback(gcsh_session *s, const char *arg)
{
    if (strcmp(arg, "on") == 0)
        s->traceback_on = 1;
    else if (strcmp(arg, "off") == 0)
        s->traceback_on = 0;
    else if (*arg) {
        gcsh_coord_say(s->coord, "gcsh: .traceback: expected on or off, got '%s'", arg);
        gcsh_session_dot_refused(s);
        return;
    }
    gcsh_coord_say(s->coord, "traceback %s", s->traceback_on ? "on" : "off");
}

static void dot_check(gcsh_session *s, const char *arg)
{
    if (strcmp(arg, "on") == 0)
        s->check_on = 1;
    else if (strcmp(arg, "off") == 0)
        s->check_on = 0;
    else if (*arg) {
        gcsh_coord_say(s->coord, "gcsh: .check: expected on or off, got '%s'", arg);
        gcsh_session_dot_refused(s);
        return;
    }
    gcsh_coord_say(s->coord, "check %s", s->check_on ? "on" : "off");
}

static void dot_abort(gcsh_session *s, const char *arg)
{
    (void)arg;
    gcsh_coord_say(s->coord, "gcsh: .abort: no command is running (type it while one runs "
                             "to interrupt it and abort every communicator)");
}

/* ---- rank 0's formatter ------------------------------------------------------ */

/* A Lua state of rank 0's terminal thread, for text made from what the
 * ranks sent (.info) and for .help TOPIC: the standard libraries and gcsh's
 * modules, nothing of any rank.  Made on first use. */
static lua_State *formatter(gcsh_session *s)
{
    if (!s->fmt) {
        s->fmt = luaL_newstate();
        luaL_openlibs(s->fmt);
        gcsh_lua_path(s->fmt);
        /* the dtype facts gcsh's modules read (gcsh.info loads gcsh.repro),
         * and the algorithms gcsh.help lists */
        luaL_requiref(s->fmt, "gcsh.dtypes", luaopen_gcsh_dtypes, 0);
        lua_pop(s->fmt, 1);
        luaL_requiref(s->fmt, "gcsh.kalgos", luaopen_gcsh_kalgos, 0);
        lua_pop(s->fmt, 1);
    }
    return s->fmt;
}

/* Calls require(module)[fn] with the nargs values on top of L (the
 * formatter) and says the string it returns, or the error. */
static void say_formatted(gcsh_session *s, const char *module, const char *fn, int nargs)
{
    lua_State *L = formatter(s);
    int base = lua_gettop(L) - nargs;
    lua_getglobal(L, "require");
    lua_pushstring(L, module);
    if (lua_pcall(L, 1, 1, 0) == LUA_OK) {
        lua_getfield(L, -1, fn);
        lua_remove(L, -2);
        lua_insert(L, base + 1);
        if (lua_pcall(L, nargs, 1, 0) == LUA_OK)
            gcsh_coord_say(s->coord, "%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "");
        else
            gcsh_coord_say(s->coord, "gcsh: %s", lua_tostring(L, -1));
    } else {
        gcsh_coord_say(s->coord, "gcsh: %s", lua_tostring(L, -1));
    }
    lua_settop(L, base);
}

/* .info: every rank (whatever .ranks says) sends its gcsh.info() as text,
 * kept by a quiet tap instead of printed, and rank 0 prints one table of
 * them (lua/gcsh/info.lua). */
static void dot_info(gcsh_session *s, const char *arg)
{
    (void)arg;
    static const char chunk[] = "io.write(require('gcsh.info').serialize(gcsh.info()))";
    int n = s->coord->size;
    char *all = malloc((size_t)n);
    for (int r = 0; r < n; r++)
        all[r] = !s->coord->lost[r];
    gcsh_tap tap;
    gcsh_tap_init(&tap, n);
    tap.quiet = 1;
    gcsh_tap *outer = s->coord->tap; /* .record's, if any: .info is not a line */
    s->coord->tap = &tap;
    gcsh_run_result res;
    gcsh_coord_run(s->coord, all, 0, "=(.info)", chunk, sizeof chunk - 1, &res);
    s->coord->tap = outer;
    lua_State *L = formatter(s);
    lua_createtable(L, n, 0);
    for (int r = 0; r < n; r++) {
        lua_pushlstring(L, tap.out[r].s ? tap.out[r].s : "", tap.out[r].len);
        lua_rawseti(L, -2, r + 1);
    }
    gcsh_tap_destroy(&tap, n);
    free(all);
    say_formatted(s, "gcsh.info", "format", 1);
    if (s->coord->end_status >= 0)
        s->quit = 1;
}

/* .record FILE | off | (nothing: where) */
static void dot_record(gcsh_session *s, const char *arg)
{
    if (!*arg) {
        gcsh_record_say(s);
        return;
    }
    int was = s->rec != NULL;
    if (gcsh_session_record_off(s) != 0) { /* said; the session fails as a failed write does */
        s->failures++;
        s->harness_failures++;
    }
    if (strcmp(arg, "off") != 0)
        gcsh_record_start(s, arg);
    else if (!was)
        gcsh_record_say(s);
}

/* .trace FILE | off | (nothing: where) */
static void dot_trace(gcsh_session *s, const char *arg)
{
    int off = strcmp(arg, "off") == 0, rc = 0;
    if (!*arg || (off && !gcsh_tracer_on(s->coord)))
        gcsh_tracer_say(s->coord);
    else if (off)
        rc = gcsh_tracer_stop(s->coord);
    else
        rc = gcsh_tracer_start(s->coord, arg);
    if (rc != 0) { /* a file refused or not written (said): the session fails */
        s->failures++;
        s->harness_failures++;
    }
}

/* .flight FILE | (nothing: where automatic dumps go) */
static void dot_flight(gcsh_session *s, const char *arg)
{
    char why_not[PATH_MAX + 200];
    if (!*arg) {
        const char *path = gcsh_flight_path(s->coord, why_not, sizeof why_not);
        gcsh_coord_say(s->coord, "flight recorder: %s\n  %s; .flight FILE writes one now",
                       path ? path : why_not,
                       s->coord->ctx->flight ? "written at a hang report, a crash, an interrupt"
                                             : "off (GCSH_FLIGHT_CALLS=0)");
        return;
    }
    long calls = gcsh_flight_write(s->coord, arg, "at .flight");
    if (calls >= 0)
        gcsh_coord_error(s->coord, "flight recorder written to %s: %ld calls from %d rank%s", arg,
                         calls, s->coord->size, s->coord->size == 1 ? "" : "s");
    else { /* said: the session fails as a failed write does */
        s->failures++;
        s->harness_failures++;
    }
}

static void dot_quit(gcsh_session *s, const char *arg)
{
    (void)arg;
    s->quit = 1;
}

/* Every dot-command: one row each; .help and the usage line are made from
 * this table.  A row with an empty help is an alias, left out of both. */
static const gcsh_dot dot_commands[] = {
    {"help", "[TOPIC]", ".help [TOPIC]", "this text; with a topic, its Lua API (.help tensor)",
     dot_help},
    {"info", "", ".info", "one table: versions, each rank's host and device, links",
     dot_info},
    {"ranks", "LIST|all", ".ranks [LIST|all]", "run lines on these ranks only (e.g. 0,2-3)",
     dot_ranks},
    {"timeout", "SECONDS", ".timeout [SECONDS]",
     "after this long, report where running ranks are if one\n"
     "                    waits for another (a collective, a signal), and\n"
     "                    (once set) fail collective checks still waiting (0: never)",
     dot_timeout},
    {"time", "on|off", ".time [on|off]", "print each command's wall time", dot_time},
    {"check", "on|off", ".check [on|off]", "compare every collective's arguments across ranks first",
     dot_check},
    {"traceback", "on|off", ".traceback [on|off]",
     "a line's error with its stack traceback (off: the\n"
     "                    message alone unless your own functions ran)",
     dot_traceback},
    {"record", "FILE|off", ".record [FILE|off]",
     "write the following lines and their output to FILE as a\n"
     "                    script (gcsh --replay FILE compares a rerun with it)",
     dot_record},
    {"trace", "FILE|off", ".trace [FILE|off]",
     "trace every rank's lines and calls to FILE (Chrome JSON:\n"
     "                    Perfetto opens it); off writes it",
     dot_trace},
    {"flight", "FILE", ".flight [FILE]",
     "write every rank's last calls to FILE now (the flight\n"
     "                    recorder, a trace file); no FILE: where it writes on its own",
     dot_flight},
    {"abort", "", ".abort (while a command runs)",
     "typed while a command runs: interrupt it and abort\n"
     "                    every communicator (comm.world() makes a fresh one)",
     dot_abort},
    {"lessons", "", ".lessons", "list the lessons (lua/tutorial)", gcsh_dot_lessons},
    {"lesson", "N", ".lesson [N]", "open lesson N (a number or part of its name)", gcsh_dot_lesson},
    {"next", "", ".next", "the lesson's next part: its text, then its code on all ranks",
     gcsh_dot_next},
    {"again", "", ".again", "the lesson's current part again, from what it needs", gcsh_dot_again},
    {"prev", "", ".prev", "the lesson's part before the current one", gcsh_dot_prev},
    {"part", "N", ".part N", "the lesson's part N, after running what it needs quietly",
     gcsh_dot_part},
    {"quit", "", ".quit", "leave (Ctrl-D too); Ctrl-C interrupts a command", dot_quit},
    {"exit", "", NULL, "", dot_quit},
    {NULL, NULL, NULL, NULL, NULL},
};

/* The i-th dot-command's name, for completion (aliases too), or NULL. */
static const char *dot_name(int i)
{
    return dot_commands[i].name;
}

/* Runs a dot-command line (".ranks 0-1"); line is cut into words here
 * (the session's run_dot: gcsh_session_dot calls it). */
static void dot_command(gcsh_session *s, char *line)
{
    char *cmd = line + 1;
    char *arg = cmd;
    while (*arg && !isspace((unsigned char)*arg))
        arg++;
    if (*arg)
        *arg++ = '\0';
    while (isspace((unsigned char)*arg))
        arg++;
    for (char *e = arg + strlen(arg); e > arg && isspace((unsigned char)e[-1]);)
        *--e = '\0';
    for (const gcsh_dot *d = dot_commands; d->name; d++)
        if (strcmp(cmd, d->name) == 0) {
            if (!d->args[0] && *arg) { /* an argument it would ignore */
                gcsh_coord_say(s->coord, "gcsh: .%s takes no argument, got '%.60s'", cmd, arg);
                gcsh_session_dot_refused(s);
                return;
            }
            d->run(s, arg);
            return;
        }
    char prefix[96];
    gcsh_session_dot_refused(s);
    snprintf(prefix, sizeof prefix, "gcsh: unknown command '.%.40s'; ", cmd);
    say_usage(s, prefix);
}

static int is_dot_command(const char *line)
{
    return line[0] == '.' && isalpha((unsigned char)line[1]);
}

/* `exit` or `quit` alone on a line at the terminal: what a newcomer types to
 * leave (Python's and many shells' word); as Lua they would print nil. */
static int is_quit_word(const char *line)
{
    size_t a = strspn(line, " \t"), n = strcspn(line + a, " \t");
    return line[a + n + strspn(line + a + n, " \t")] == '\0' &&
           ((n == 4 && (strncmp(line + a, "exit", 4) == 0 || strncmp(line + a, "quit", 4) == 0)));
}

/* ---- reading lines ------------------------------------------------------- */

enum got { GOT_LINE, GOT_EOF, GOT_INTERRUPT, GOT_TERM };

/* readline's callbacks carry no user pointer: this is where they find the
 * session and where the line handler leaves its result. */
static struct {
    gcsh_session *s;
    char *line;
    int done, eof;
} rl;

/* ---- pasted lines -----------------------------------------------------------
 *
 * Lines pasted at the prompt arrive together.  Without bracketed paste,
 * readline reads the first line; the rest waits in the terminal's input
 * queue, unechoed.  It must not stay there while the line runs: the terminal
 * goes back to line mode, and the coordinator's .abort reader would take it
 * as typed ahead (with carriage returns for line ends, never seen as lines).
 * So the line handler drains it into s->pasted, and the next prompts take it
 * first, a line at a time, inserted as text (a tab stays a tab) after the
 * prompt and accepted: each line shows, runs in order and enters the history,
 * as if typed.  A line readline hands over with several in it (a bracketed
 * paste, a chunk recalled from the history) is on the screen already: its
 * lines after the first go to s->shown, and run one by one without being
 * shown again, so that every one runs (a failing line does not stop the
 * others, as typed lines would not). */

static int pasted_left(const gcsh_session *s)
{
    return s->pasted.len > s->pasted_at;
}

/* What is in the terminal's queue now, unread, after what was pasted. */
static void drain_terminal(gcsh_session *s)
{
    int fd = fileno(s->term->in);
    char buf[4096];
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (poll(&p, 1, 0) == 1 && (p.revents & POLLIN)) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0)
            break;
        if (!pasted_left(s))
            s->pasted.len = s->pasted_at = 0;
        gcsh_text_append(&s->pasted, buf, (size_t)n);
    }
}

/* A line that holds several: the first is the line, the others go to
 * s->shown, before anything shown earlier is read. */
static void split_shown(gcsh_session *s, char *line)
{
    size_t n = strcspn(line, "\n\r");
    if (!line[n])
        return;
    gcsh_text rest = {0};
    gcsh_text_append(&rest, line + n + 1, strlen(line + n + 1));
    if (rest.len && rest.s[rest.len - 1] != '\n' && rest.s[rest.len - 1] != '\r')
        gcsh_text_append(&rest, "\n", 1); /* Enter accepted it: its last line too */
    gcsh_text_append(&rest, s->shown.s ? s->shown.s : "", s->shown.len);
    gcsh_text_free(&s->shown);
    s->shown = rest;
    line[n] = '\0';
}

/* The next pasted line into readline's buffer after the prompt; a whole
 * one is accepted at once, a last unfinished one is left to edit. */
static void take_pasted(gcsh_session *s)
{
    const char *p = s->pasted.s + s->pasted_at;
    size_t left = s->pasted.len - s->pasted_at;
    size_t n = 0;
    while (n < left && p[n] != '\r' && p[n] != '\n')
        n++;
    char *text = strndup(p, n);
    rl_insert_text(text);
    free(text);
    rl_redisplay();
    if (n == left) {
        s->pasted_at = s->pasted.len;
        return;
    }
    n += p[n] == '\r' && n + 1 < left && p[n + 1] == '\n' ? 2 : 1;
    s->pasted_at += n;
    rl_execute_next('\n'); /* Enter */
    rl_callback_read_char();
}

static void on_line(char *line)
{
    rl.line = line;
    rl.eof = line == NULL;
    rl.done = 1;
    drain_terminal(rl.s); /* before line mode would echo it */
    if (line)
        split_shown(rl.s, line);
    rl_callback_handler_remove(); /* terminal back to normal while a command runs */
}

/* Inside a string a word is the whole string so far (dofile("tests/s.): file
 * names have dots and slashes; elsewhere Lua's operators break words. */
static char *word_breaks(void)
{
    static char quotes[] = "\"'";
    return gcsh_in_string(rl_line_buffer, rl_point) ? quotes : NULL;
}

static char **on_complete(const char *text, int start, int end)
{
    (void)end;
    rl_attempted_completion_over = 1; /* file names only inside strings */
    rl_completion_append_character = '\0'; /* readline resets it before each call */
    if (gcsh_in_string(rl_line_buffer, start)) {
        rl_filename_completion_desired = 1; /* a '/' after a folder's name */
        return rl_completion_matches(text, rl_filename_completion_function);
    }
    char **v = start == 0 && text[0] == '.' ? gcsh_complete_dot(text, dot_name)
                                             : gcsh_complete(rl.s->L0, text);
    if (!v || !v[0]) {
        free(v);
        return NULL;
    }
    /* readline wants v[0] = the common prefix of all matches, then the matches */
    size_t n = 0, common = strlen(v[0]);
    while (v[n])
        n++;
    for (size_t i = 1; i < n; i++) {
        size_t j = 0;
        while (j < common && v[i][j] == v[0][j])
            j++;
        common = j;
    }
    char **out = malloc((n + 2) * sizeof *out);
    out[0] = strndup(v[0], common);
    memcpy(out + 1, v, (n + 1) * sizeof *v);
    if (n == 1) { /* a single match: it is its own prefix */
        free(out[0]);
        out[0] = out[1];
        out[1] = NULL;
    }
    free(v);
    return out;
}

/* ---- job control at the prompt ---------------------------------------------- */

/* Until the job is in the foreground: in the background (bg) a prompt
 * cannot be read, so the job stops again until `fg`. */
static void wait_foreground(gcsh_session *s)
{
    while (!gcsh_term_resume(s->term)) {
        gcsh_coord_say(s->coord, "gcsh: the prompt needs the terminal: the job stops until fg");
        if (gcsh_term_suspend(s->term) != 0)
            break;
    }
}

/* Ctrl-Z at the prompt, or the job continued: readline lets go of the
 * terminal while the job is stopped; once it is back in the foreground the
 * prompt and the line being edited show again, as they were. */
static void prompt_job_control(gcsh_session *s, int mask)
{
    if (!(mask & GCSH_SIGMASK_TSTP) && gcsh_term_resume(s->term) &&
        gcsh_term_holds(s->term))
        return; /* continued, the terminal ours all along: nothing to redo */
    rl_cleanup_after_signal();
    if (mask & GCSH_SIGMASK_TSTP) {
        fputc('\n', rl_outstream);
        fflush(rl_outstream);
        if (gcsh_term_suspend(s->term) != 0)
            gcsh_coord_say(s->coord, "gcsh: Ctrl-Z stops a session started with gcsh -n N; "
                                     "under a plain mpirun the job cannot stop as one");
    }
    wait_foreground(s);
    rl_reset_after_signal();
    rl_forced_update_display();
}

static enum got read_edited(gcsh_session *s, const char *prompt, char **line)
{
    rl.s = s;
    rl.done = rl.eof = 0;
    rl.line = NULL;
    wait_foreground(s); /* a command run in the background (bg) has ended */
    rl_callback_handler_install(prompt, on_line);
    if (pasted_left(s))
        take_pasted(s);
    int tty = fileno(s->term->in);
    while (!rl.done) {
        struct pollfd p[2] = {{.fd = tty, .events = POLLIN},
                              {.fd = s->coord->sigfd, .events = POLLIN}};
        if (gcsh_coord_idle_poll(s->coord, p, 2, -1) < 0 && errno != EINTR)
            break;
        int mask = p[1].revents & POLLIN ? gcsh_sig_drain(s->coord->sigfd) : 0;
        if (mask & GCSH_SIGMASK_WINCH)
            rl_resize_terminal();
        if (mask & (GCSH_SIGMASK_TSTP | GCSH_SIGMASK_CONT))
            prompt_job_control(s, mask);
        if (mask & (GCSH_SIGMASK_TERM | GCSH_SIGMASK_INT)) {
            if (mask & GCSH_SIGMASK_INT) /* Ctrl-C at the prompt clears the line */
                rl_replace_line("", 0);
            rl_crlf();
            rl_callback_handler_remove();
            return mask & GCSH_SIGMASK_TERM ? GOT_TERM : GOT_INTERRUPT;
        }
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR))
            rl_callback_read_char();
    }
    *line = rl.line;
    return rl.eof ? GOT_EOF : GOT_LINE;
}

/* The next whole line in s->inbuf (or, at end of input, what is left). */
static int take_buffered_line(gcsh_session *s, char **line)
{
    gcsh_text *b = &s->inbuf;
    char *nl = b->len ? memchr(b->s, '\n', b->len) : NULL;
    if (!nl && !(s->in_eof && b->len))
        return 0;
    size_t n = nl ? (size_t)(nl - b->s) : b->len;
    *line = strndup(b->s, n);
    size_t used = nl ? n + 1 : n;
    memmove(b->s, b->s + used, b->len - used);
    b->len -= used;
    return 1;
}

/* Lines from a pipe or a file, read with read(2) beside the signal pipe, so
 * that a SIGTERM while waiting ends the session, and so does a Ctrl-C typed
 * at the terminal where it ends the session (int_ends: a piped session, as
 * any filter); a SIGINT from a program (kill, timeout -s INT: nothing runs)
 * is dropped instead of interrupting the next command. */
static enum got read_plain(gcsh_session *s, const char *prompt, char **line)
{
    if (s->term->interactive) {
        fputs(prompt, s->term->out);
        fflush(s->term->out);
    }
    int fd = fileno(s->term->in);
    while (!take_buffered_line(s, line)) {
        if (s->in_eof)
            return GOT_EOF;
        struct pollfd p[2] = {{.fd = fd, .events = POLLIN},
                              {.fd = s->coord->sigfd, .events = POLLIN}};
        if (gcsh_coord_idle_poll(s->coord, p, 2, -1) < 0 && errno != EINTR)
            return GOT_EOF;
        int mask = p[1].revents & POLLIN ? gcsh_sig_drain(s->coord->sigfd) : 0;
        if (mask & GCSH_SIGMASK_TERM)
            return GOT_TERM;
        if ((mask & GCSH_SIGMASK_KEYBOARD) && s->coord->int_ends)
            return GOT_INTERRUPT;
        if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        char buf[1 << 16];
        ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0)
            gcsh_text_append(&s->inbuf, buf, (size_t)n);
        else if (n == 0 || (errno != EINTR && errno != EAGAIN))
            s->in_eof = 1;
    }
    return GOT_LINE;
}

/* A whole line of t, taken off its front.  A line ends at a newline, or
 * at a carriage return (Enter, as it comes in while readline has the
 * terminal). */
static int take_text_line(gcsh_text *t, char **line)
{
    char *nl = t->len ? memchr(t->s, '\n', t->len) : NULL;
    char *cr = t->len ? memchr(t->s, '\r', t->len) : NULL;
    if (cr && (!nl || cr < nl))
        nl = cr;
    if (!nl)
        return 0;
    size_t n = (size_t)(nl - t->s);
    *line = strndup(t->s, n);
    memmove(t->s, nl + 1, t->len - n - 1);
    t->len -= n + 1;
    t->s[t->len] = '\0';
    return 1;
}

static enum got read_line(gcsh_session *s, int continuation, char **line)
{
    char prompt[600];
    /* on the screen already: the rest of a line of several lines, or lines
     * typed while a command ran (the terminal echoed them); pasted keys came
     * before the latter */
    if (take_text_line(&s->shown, line) ||
        (!pasted_left(s) && take_text_line(&s->coord->typeahead, line)))
        return GOT_LINE;
    gcsh_session_prompt(s, continuation, prompt, sizeof prompt);
    return s->term->editing ? read_edited(s, prompt, line) : read_plain(s, prompt, line);
}

/* ---- history --------------------------------------------------------------- */

static const char *history_file(void)
{
    static char path[1024]; /* computed once; read-only afterwards */
    const char *env = getenv("GCSH_HISTORY");
    if (env)
        return *env ? env : NULL; /* GCSH_HISTORY= turns history off */
    const char *home = getenv("HOME");
    if (!home)
        return NULL;
    snprintf(path, sizeof path, "%s/.gcsh_history", home);
    return path;
}

/* Whether the history file is empty or begins with a time line; one
 * written before those existed gets them on the next write_history. */
static int starts_with_time(const char *path)
{
    FILE *h = fopen(path, "r");
    int c = h ? fgetc(h) : EOF;
    if (h)
        fclose(h);
    return c == EOF || c == '#';
}

static void history_open(void)
{
    const char *f = history_file();
    stifle_history(HISTORY_MAX);
    /* A chunk of several lines is one entry: a "#<time>" line before each
     * entry tells where it starts, so it comes back whole next session. */
    history_comment_char = '#';
    history_write_timestamps = 1;
    if (f && (read_history(f) != 0 || !starts_with_time(f)))
        write_history(f); /* create it (so append_history can work), or add the time lines */
}

static void history_add(const char *chunk)
{
    const char *f = history_file();
    add_history(chunk);
    if (f)
        append_history(1, f);
}

static void history_close(void)
{
    const char *f = history_file();
    if (f)
        history_truncate_file(f, HISTORY_MAX);
}

/* ---- the loop --------------------------------------------------------------- */

static void append_line(char **chunk, const char *line)
{
    size_t a = *chunk ? strlen(*chunk) : 0, b = strlen(line);
    char *p = realloc(*chunk, a + b + 2);
    if (a)
        p[a++] = '\n';
    memcpy(p + a, line, b + 1);
    *chunk = p;
}

void gcsh_repl(gcsh_session *s)
{
    if (s->term->editing) {
        rl_instream = s->term->in;
        rl_outstream = s->term->tty ? s->term->tty : s->term->out;
        rl_catch_signals = 0; /* Ctrl-C arrives through the self-pipe */
        rl_catch_sigwinch = 0;
        rl_readline_name = "gcsh";
        rl_attempted_completion_function = on_complete;
        rl_completer_word_break_characters = " \t\n\"\\'`@$><=;|&{(,+-*/%^#~[]";
        rl_completion_word_break_hook = word_breaks;
        history_open();
    }
    char *chunk = NULL;
    while (!s->quit) {
        char *line = NULL;
        enum got g = read_line(s, chunk != NULL, &line);
        if (g == GOT_TERM) {
            gcsh_coord_say(s->coord, "gcsh: terminated (SIGTERM or SIGHUP): every rank stops");
            s->coord->end_status = GCSH_EXIT_TERM;
            s->quit = 1;
            break;
        }
        if (g == GOT_EOF && chunk && s->term->editing) {
            /* Ctrl-D at ">>": the unfinished chunk is dropped, as Ctrl-C drops
             * a line; the session goes on (lua5.4 does the same) */
#if RL_READLINE_VERSION >= 0x0802
            /* readline 8.2 ends the line itself, and keeps its EOF state,
             * which would end every later line with a second newline */
            RL_UNSETSTATE(RL_STATE_EOF);
            rl_eof_found = 0;
#else
            fputc('\n', rl_outstream);
            fflush(rl_outstream);
#endif
            free(chunk);
            chunk = NULL;
            continue;
        }
        if (g == GOT_EOF)
            break;
        if (g == GOT_INTERRUPT && s->coord->int_ends) { /* Ctrl-C ends a piped session */
            s->coord->end_status = GCSH_EXIT_INT;
            s->quit = 1;
            break;
        }
        if (g == GOT_INTERRUPT) {
            free(chunk);
            chunk = NULL;
            continue;
        }
        if (!chunk && s->term->editing && is_quit_word(line)) {
            free(line);
            gcsh_session_dot(s, ".quit");
            continue;
        }
        if (!chunk && is_dot_command(line)) {
            if (s->term->editing)
                history_add(line);
            gcsh_session_dot(s, line);
            free(line);
            continue;
        }
        append_line(&chunk, line);
        free(line);
        gcsh_chunk typed = {.name = "=stdin", .src = chunk, .len = strlen(chunk)};
        if (gcsh_session_feed(s, &typed, &(gcsh_feed){.typed = 1}, NULL) == GCSH_FEED_INCOMPLETE)
            continue;
        if (s->term->editing && chunk[strspn(chunk, " \t")])
            history_add(chunk);
        free(chunk);
        chunk = NULL;
    }
    if (chunk && s->coord->end_status < 0) { /* input ended inside a chunk: say why */
        int expr = chunk[0] == '=';
        lua_pushfstring(s->syntax, "%s%s", expr ? "return " : "", chunk + expr);
        size_t len;
        const char *text = lua_tolstring(s->syntax, -1, &len);
        if (luaL_loadbuffer(s->syntax, text, len, "=stdin") != LUA_OK) {
            gcsh_coord_error(s->coord, "%s", lua_tostring(s->syntax, -1));
            s->failures++;
            s->harness_failures++;
        }
        lua_settop(s->syntax, 0);
    }
    free(chunk);
    if (s->term->editing) {
        history_close();
#if RL_READLINE_VERSION < 0x0802 /* 8.2 ends the line at Ctrl-D itself */
        if (!s->quit)
            fputc('\n', rl_outstream); /* Ctrl-D leaves the cursor after the prompt */
#endif
    }
}
