/* gcsh: a Lua shell for GPU collectives, one process per MPI rank.
 *
 * Command line as lua.c: gcsh [options] [script [args]].  Rank 0 runs the
 * terminal and the coordinator; every rank (rank 0 in a second thread) runs a
 * worker that executes the chunks rank 0 sends. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <mpi.h>

#include "options.h"
#include "wire/board.h"
#include "shell/cmdline.h"
#include "shell/coord.h"
#include "shell/launch.h"
#include "shell/launch_net.h"
#include "wire/msg.h"
#include "rank/rank.h"
#include "bind/l_shell.h"
#include "core/safefile.h"
#include "core/share.h"
#include "shell/record.h"
#include "shell/repl.h"
#include "shell/sigint.h"
#include "wire/link.h"
#include "rank/worker.h"
#include "shell/term.h"
#include "trace/flight.h"
#include "trace/trace.h"
#include "trace/trace_wrap.h"
#include "shell/trace_coord.h"
#include "core/env.h"
#ifdef GCSH_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif


/* Whether a and b (b may be NULL) name one file. */
static int same_file(const char *a, const char *b)
{
    struct stat x, y;
    return b && stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev &&
           x.st_ino == y.st_ino;
}


/* A command line gcsh cannot use: one line naming the problem. */
static int usage_error(const char *problem)
{
    fprintf(stderr, "gcsh: %s (gcsh --help lists the options)\n", problem);
    return -1;
}

static int has_folder(const char *dir, const char *sub)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    return access(path, X_OK) == 0;
}

/* --help: usage, every option, the dot-commands, where lessons are. */
static void print_help(const char *prog)
{
    printf("gcsh %s: a Lua shell for GPU collectives, one process per MPI rank\n"
           "usage: %s [options] [script [args]]\n"
           "Without a script or -e, lines are read from the terminal or stdin and run\n"
           "on every rank; each rank's output comes back folded by rank range\n"
           "(program output on stdout, errors on stderr).\n\n"
           "Options:\n",
           GCSH_VERSION, prog);
    gcsh_cmdline_print(option_table, stdout);
    printf("\nExit status, as `git bisect run` reads it: the worst of every rank's,\n"
           "abort (>=128) > bad (1-124, 126, 127) > skip (125) > good (0):\n"
           "  0    every command succeeded\n"
           "  1    the script or a line failed: any runtime error, a wrong result,\n"
           "       a replay that differs, files --diff finds different, a --deadline\n"
           "       that ended the job (--deadline-status N)\n"
           "  125  cannot test here: too few ranks, no GPU, the script or a Lua file it\n"
           "       loads cannot be read or compiled, a required module is missing, a\n"
           "       file gcsh could not write; also the others' check error when a\n"
           "       rank skips (repro.skip) while they wait in a collective\n"
           "  128  a usage error (a bad option or file name, misuse of repro): a bisect\n"
           "       stops\n"
           "  also 69 a rank crashed or was lost, 70 a device fault, 130 a second\n"
           "  Ctrl-C, 141 the output's reader left (| head), 143 SIGTERM, n os.exit(n)\n");
    printf("\nAt the prompt (Lua lines; `=expr` prints a value):\n");
    gcsh_print_dot_commands(stdout);
    const char *dir = gcsh_lua_dir();
    if (dir) {
        printf("\nLua files: %s (gcsh.* modules in gcsh/)\n", dir);
        printf("Lessons:   %s/tutorial%s\n", dir,
               has_folder(dir, "tutorial") ? " (each is a script: gcsh -n 2 FILE)" : " (none here)");
        printf("Examples:  %s/examples%s\n", dir, has_folder(dir, "examples") ? "" : " (none here)");
    } else {
        printf("\nLua files: not found beside the binary; set GCSH_LUA_DIR\n");
    }
    char page[PATH_MAX + 32], full[PATH_MAX];
    if (dir)
        snprintf(page, sizeof page, "%s/../src/gcsh.1", dir);
    if (dir && access(page, R_OK) == 0 && realpath(page, full) != NULL) /* a build tree */
        printf("Manual:    man %s\n", full);
    else
        printf("Manual:    man gcsh\n");
    printf("At the prompt: `.help`, and `help(x)` for any value\n");
    printf("\nFiles read: $XDG_CONFIG_HOME/gcsh/init.lua or ~/.gcshrc (the init file,\n"
           "  interactive sessions), ~/.gcsh_history (GCSH_HISTORY), script, --replay FILE,\n"
           "  --hostfile FILE.  Written: ~/.gcsh_history, --record/.record FILE,\n"
           "  --trace/.trace FILE, --flight/.flight FILE, and flight dumps in gcsh's own\n"
           "  folder (GCSH_STATE_DIR, $XDG_RUNTIME_DIR/gcsh or ~/.cache/gcsh).\n");
}

/* Returns 0, or -1 after saying what is wrong. */
static int parse_options(int argc, char **argv, options *o)
{
    *o = (options){.timeout = 10, .tag = GCSH_TAG_ALWAYS, .deadline_status = 1, .seed = -1};
    o->actions = calloc((size_t)argc, sizeof *o->actions);
    const char *env_share = getenv("GCSH_SHARE_GPU");
    if (env_share && *env_share && gcsh_share_parse(env_share, &o->share) != 0)
        return usage_error("GCSH_SHARE_GPU must be 1, mps, nomps or 0");
    char env_error[200];
    if (gcsh_env_check(env_error, sizeof env_error) != 0) {
        fprintf(stderr, "gcsh: %s (ENVIRONMENT in the manual lists them)\n", env_error);
        return -1;
    }
    gcsh_cmdline cl;
    int rc = gcsh_cmdline_parse(option_table, argc, argv, o, &cl);
    o->launcher_only = cl.launcher_only; /* kept past the parse */
    if (rc != 0)
        return usage_error(cl.error);
    o->script = cl.operand < argc ? cl.operand : 0;
    if (o->n_mpirun_args && !o->nranks) {
        char msg[160];
        snprintf(msg, sizeof msg, "'%s' goes with -n N (gcsh passes it to mpirun)",
                 o->first_mpirun_option);
        return usage_error(msg);
    }
    if (o->replay && (o->script || o->nactions || o->interactive || o->record))
        return usage_error("'--replay' runs the recording alone (no script, -e, -l, -i or "
                           "--record with it)");
    if (o->keep_going && !o->replay)
        return usage_error("'--keep-going' goes with --replay FILE");
    if (o->diff_code && (o->script || o->nactions > 1 || o->interactive || o->record ||
                         o->replay || o->nranks || o->trace))
        return usage_error("'--diff A B' compares two files alone (no script, -e, -l, -i, -n, "
                           "--record, --replay or --trace with it)");
    if (o->trust && !same_file(o->trust, o->replay))
        return usage_error("'--trust FILE' names the recording that --replay FILE runs");
    return 0;
}

/* ---- versions ------------------------------------------------------------- */

/* gcsh, Lua, MPI, NCCL, CUDA runtime and driver, one per line. */
static void versions_text(char *buf, size_t len)
{
    char mpi[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int mlen = 0;
    MPI_Get_library_version(mpi, &mlen); /* allowed before MPI_Init */
    mpi[strcspn(mpi, ",\n")] = '\0';
    char nccl[96], runtime[96], driver[96];
#ifdef GCSH_HAVE_CUDA
    gcsh_cuda_versions(nccl, runtime, driver, sizeof nccl);
#else
    snprintf(nccl, sizeof nccl, "none (built without the cuda backend)");
    snprintf(runtime, sizeof runtime, "none (built without the cuda backend)");
    snprintf(driver, sizeof driver, "not asked (built without the cuda backend)");
#endif
    snprintf(buf, len,
             "gcsh %s (%s)\n"
             "  MPI:          %s\n"
             "  NCCL:         %s\n"
             "  CUDA runtime: %s\n"
             "  CUDA driver:  %s",
             GCSH_VERSION, LUA_RELEASE, mpi, nccl, runtime, driver);
}

/* ---- gcsh -n: mpirun under the launcher ------------------------------------- */

/* gcsh -n N ...: runs `mpirun -np N <flags this machine needs> gcsh ...
 * <extra>` as a child (launch.h). */
static int launch_ranks(int argc, char **argv, const options *o, const char *const *extra)
{
    char self[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k <= 0)
        return perror("gcsh: /proc/self/exe"), 1;
    self[k] = '\0';
    char *mpirun = getenv("GCSH_MPIRUN") ? getenv("GCSH_MPIRUN") : "mpirun";
    char np[16];
    snprintf(np, sizeof np, "%d", o->nranks);
    char **v = calloc((size_t)argc + (size_t)o->n_mpirun_args + 20, sizeof *v);
    int n = 0;
    v[n++] = mpirun;
    v[n++] = "-np";
    v[n++] = np;
    v[n++] = "--quiet";      /* no "process exited non-zero" banners: we report */
    v[n++] = "--oversubscribe";
    v[n++] = "--bind-to";    /* rank 0 has two busy threads: don't pin it to one core */
    v[n++] = "none";
    if (geteuid() == 0)
        v[n++] = "--allow-run-as-root";
    if (isatty(0)) {         /* rank 0 takes the terminal itself (term.h) */
        v[n++] = "--stdin";
        v[n++] = "none";
    }
    for (int i = 0; i < o->n_mpirun_args; i++)
        v[n++] = (char *)o->mpirun_args[i];
    /* one machine: shared memory and loopback only (launch_net.h) */
    n += gcsh_launch_network(o->mpirun_args, o->n_mpirun_args, v + n);
    v[n++] = self;
    for (int i = 1; i < argc; i++)
        if (!o->launcher_only[i]) /* -n and mpirun's options stay here */
            v[n++] = argv[i];
    for (; extra && *extra; extra++)
        v[n++] = (char *)*extra;
    if (o->share != GCSH_SHARE_OFF)
        gcsh_share_new_key(); /* the job's MPS folder: known here too */
    int code = gcsh_launch(v);
    if (o->share != GCSH_SHARE_OFF)
        gcsh_share_wait_gone();
    free(v);
    return code;
}

/* The `arg` table of lua.c: arg[0] = script, arg[1..] its arguments,
 * negative indices the interpreter and its options. */
static void set_arg_table(lua_State *L, int argc, char **argv, int script)
{
    int base = script ? script : argc;
    lua_createtable(L, argc - base, base + 1);
    for (int i = 0; i < argc; i++) {
        lua_pushstring(L, argv[i]);
        lua_rawseti(L, -2, i - base);
    }
    lua_setglobal(L, "arg");
}

/* ---- rank 0 ----------------------------------------------------------------- */

/* All of fd, read beside the signal pipe sigfd (-1: none): NULL with errno,
 * EINTR when SIGINT or SIGTERM came first (*sig: its GCSH_SIGMASK_*), else
 * the read's error (a directory opens, and reads as EISDIR). */
static char *read_all(int fd, int sigfd, size_t *len, int *sig)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = sigfd, .events = POLLIN}};
        if (sigfd >= 0 && poll(p, 2, -1) < 0)
            continue; /* EINTR */
        if (sigfd >= 0 && (p[1].revents & POLLIN) &&
            (*sig = gcsh_sig_drain(sigfd) & (GCSH_SIGMASK_INT | GCSH_SIGMASK_TERM))) {
            free(buf);
            errno = EINTR;
            return NULL;
        }
        if (sigfd >= 0 && !(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int why = errno;
            free(buf);
            errno = why;
            return NULL;
        }
        if (r == 0)
            break; /* end of file */
        n += (size_t)r;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    *len = n;
    return buf;
}

/* A script's text: the file at path, or with "-" rank 0's input (the
 * terminal, where it reads until Ctrl-D as lua does, or a pipe) beside the
 * signal pipe, so that Ctrl-C stops the reading.  NULL with errno and
 * *failed ("open", "read"). */
static char *read_script(const char *path, const gcsh_session *s, size_t *len, int *sig,
                         const char **failed)
{
    int from_input = strcmp(path, "-") == 0;
    *failed = "open";
    int fd = from_input ? fileno(s->term->in) : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t n = 0;
    char *buf = read_all(fd, from_input ? s->coord->sigfd : -1, &n, sig);
    int why = errno;
    if (!from_input)
        close(fd);
    if (!buf) {
        errno = why;
        *failed = "read";
        return NULL;
    }
    if (n >= 2 && buf[0] == '#') { /* skip a #! line, keep line numbers */
        size_t e = 0;
        while (e < n && buf[e] != '\n')
            buf[e++] = ' ';
        buf[0] = '-';
        buf[1] = '-';
    }
    *len = n;
    return buf;
}

static int run_script(gcsh_session *s, char **argv, int at)
{
    const char *path = argv[at];
    size_t len;
    const char *what;
    int sig = 0;
    char *src = read_script(path, s, &len, &sig, &what);
    if (!src && sig) /* Ctrl-C or SIGTERM while `gcsh -` read its input */
        return sig & GCSH_SIGMASK_TERM ? GCSH_EXIT_TERM : GCSH_EXIT_INT;
    if (!src) { /* git bisect's "cannot test": a commit without the script */
        gcsh_coord_say(s->coord, "gcsh: cannot %s %s: %s", what, path, strerror(errno));
        return GCSH_EXIT_SKIP;
    }
    int nargs = 0;
    while (argv[at + 1 + nargs])
        nargs++;
    char name[PATH_MAX + 2];
    snprintf(name, sizeof name, strcmp(path, "-") == 0 ? "=stdin" : "@%s", path);
    gcsh_chunk k = {.name = name, .src = src, .len = len, .flags = CHUNK_SCRIPT,
                    .args = (const char *const *)argv + at + 1, .nargs = nargs};
    int failed = gcsh_session_feed(s, &k, &(gcsh_feed){0}, NULL);
    free(src);
    return failed != 0 ? gcsh_session_status(s) : 0;
}

/* Runs the file at path as one chunk on every rank; returns the ranks where
 * it failed, or -1 when it cannot be read. */
static int run_file(gcsh_session *s, const char *path)
{
    size_t len;
    int sig = 0;
    const char *what;
    char *src = read_script(path, s, &len, &sig, &what);
    if (!src)
        return -1;
    char name[PATH_MAX + 2];
    snprintf(name, sizeof name, "@%s", path);
    gcsh_chunk k = {.name = name, .src = src, .len = len};
    int failed = gcsh_session_feed(s, &k, &(gcsh_feed){0}, NULL);
    free(src);
    return failed;
}

/* LUA_INIT_5_4, else LUA_INIT, as lua.c: "@file" runs the file, anything
 * else is a chunk; on every rank, before -e, -l and the script.  Returns 0,
 * or the status to exit with (lua exits 1 when it fails). */
static int run_lua_init(gcsh_session *s)
{
    const char *name = "LUA_INIT_" LUA_VERSION_MAJOR "_" LUA_VERSION_MINOR;
    const char *init = getenv(name);
    if (!init) {
        name = "LUA_INIT";
        init = getenv(name);
    }
    if (!init)
        return 0;
    int failed;
    if (init[0] == '@') {
        failed = run_file(s, init + 1);
        if (failed < 0)
            gcsh_coord_error(s->coord, "gcsh: %s: cannot open %s: %s", name, init + 1,
                             strerror(errno));
    } else {
        char chunk_name[32];
        snprintf(chunk_name, sizeof chunk_name, "=%s", name);
        gcsh_chunk k = {.name = chunk_name, .src = init, .len = strlen(init)};
        failed = gcsh_session_feed(s, &k, &(gcsh_feed){0}, NULL);
    }
    return failed == 0 ? 0 : failed < 0 ? 1 : gcsh_session_status(s);
}

/* The init file of an interactive session: $XDG_CONFIG_HOME/gcsh/init.lua
 * (~/.config when unset) if it exists, else ~/.gcshrc; a Lua chunk run on
 * every rank before the first prompt.  Its errors are shown, the session
 * goes on. */
static void run_init_file(gcsh_session *s)
{
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    char path[PATH_MAX];
    if (xdg && *xdg)
        snprintf(path, sizeof path, "%s/gcsh/init.lua", xdg);
    else if (home)
        snprintf(path, sizeof path, "%s/.config/gcsh/init.lua", home);
    else
        return;
    if (access(path, F_OK) != 0) {
        if (!home)
            return;
        snprintf(path, sizeof path, "%s/.gcshrc", home);
        if (access(path, F_OK) != 0)
            return;
    }
    if (run_file(s, path) < 0)
        gcsh_coord_error(s->coord, "gcsh: cannot read %s: %s", path, strerror(errno));
}

/* -e and -l in command-line order; stops at the first failure (as lua.c). */
static int run_actions(gcsh_session *s, const options *o)
{
    for (int i = 0; i < o->nactions; i++) {
        const char *val = o->actions[i].val;
        char buf[1024];
        if (o->actions[i].kind == 'l') {
            const char *eq = strchr(val, '=');
            if (eq)
                snprintf(buf, sizeof buf, "%.*s = require(%s%s%s)", (int)(eq - val), val, "\"",
                         eq + 1, "\"");
            else
                snprintf(buf, sizeof buf, "%s = require(\"%s\")", val, val);
            val = buf;
        }
        if (o->actions[i].kind == 'e' && val[0] == '.' && isalpha((unsigned char)val[1])) {
            int failures = s->failures, misuse = s->dot_misuse;
            gcsh_session_dot(s, val); /* -e '.info': a dot-command, as typed */
            if (s->dot_misuse > misuse)
                return GCSH_EXIT_USAGE;
            if (s->failures > failures)
                return gcsh_session_status(s);
            if (s->quit)
                return 0;
            continue;
        }
        gcsh_chunk k = {.name = "=(command line)", .src = val, .len = strlen(val)};
        if (gcsh_session_feed(s, &k, &(gcsh_feed){0}, NULL) != 0)
            return gcsh_session_status(s);
        if (s->quit) /* os.exit, SIGTERM: the session ends */
            return 0;
    }
    return 0;
}

static void banner(const gcsh_session *s, const gcsh_ctx *ctx)
{
    gcsh_coord_say(s->coord, "gcsh %s (%s) on %d rank%s, backend %s (%s); .help for help",
                   GCSH_VERSION, LUA_RELEASE, ctx->size, ctx->size == 1 ? "" : "s",
                   ctx->be->name, ctx->device);
    if (ctx->share.gpus[0]) /* rank 0's machine; .info has every machine */
        gcsh_coord_say(s->coord, "gcsh: GPUs shared: %s; MPS: %s", ctx->share.gpus,
                       ctx->share.mps);
    if (s->term->hint)
        gcsh_coord_say(s->coord, "gcsh: %s", s->term->hint);
}

/* coord's exit hook: the terminal goes back to the shell before the process
 * ends the session at once (a lost rank, a device fault). */
static void give_back_terminal(void *term)
{
    gcsh_term_close(term);
}

/* gcsh --replay FILE on rank 0: the exit status. */
static int replay_main(gcsh_session *s, const gcsh_ctx *ctx, const options *o)
{
    if (ctx->size != o->replay_ranks) {
        gcsh_coord_say(s->coord, "gcsh: --replay: %s was recorded at %d rank%s; this run has %d "
                                 "(gcsh --replay %s starts %d)",
                       o->replay, o->replay_ranks, o->replay_ranks == 1 ? "" : "s", ctx->size,
                       o->replay, o->replay_ranks);
        return GCSH_EXIT_SKIP;
    }
    if (o->replay_note[0]) /* they change what it prints or does: said */
        gcsh_coord_say(s->coord, "gcsh: replay: as recorded, with %s", o->replay_note);
    /* os.exit in it: matched or not, like any line */
    return gcsh_replay(s, &o->recording, o->keep_going);
}

/* Everything rank 0's terminal thread does; returns the exit code. */
static int rank0_main(gcsh_ctx *ctx, gcsh_link *link, char **argv, const options *o)
{
    int sigfd = gcsh_sig_install();
    int streams[2];
    int launcher = gcsh_launcher_hello(streams); /* signals from outside now reach us */
    gcsh_sig_at_deadline(gcsh_launcher_status, launcher); /* SIGTERM's end: 143 for the job */
    gcsh_term term;
    gcsh_term_open(&term, o->interactive, streams, launcher);
    if (term.editing) /* Ctrl-Z gives the terminal back first (term.h) */
        gcsh_sig_catch_job_control();
    gcsh_coord coord;
    gcsh_coord_init(&coord, ctx, link, sigfd, term.out, term.err, o->tag);
    coord.launcher = launcher;
    coord.progress.tty = term.err_tty; /* progress lines only on a terminal */
    coord.timeout = o->timeout;
    coord.first_failure = o->first_failure;
    coord.limit = o->timeout_set ? o->timeout : 0; /* a slow rank is no error unless asked */
    coord.deadline_status = o->deadline_status;
    gcsh_coord_set_deadline(&coord, o->deadline);
    gcsh_tracing_listen(&coord, o->flight);
    static const gcsh_coord_hooks terminal = {.exit = give_back_terminal};
    gcsh_coord_listen(&coord, &terminal, &term);
    gcsh_session s;
    gcsh_repl_init(&s, &coord, &term, ctx->L);
    s.warnings = o->warnings; /* run_rank turned them on: a recording notes it */

    int code = 0;
    if (o->version) {
        char v[1024];
        versions_text(v, sizeof v);
        gcsh_coord_say(&coord, "%s", v);
    }
    if (o->trace && (code = gcsh_tracer_start(&coord, o->trace)) != 0)
        goto done;
    if (o->replay) {
        code = replay_main(&s, ctx, o);
        goto done;
    }
    if (o->record && gcsh_record_start(&s, o->record) != 0) {
        code = GCSH_EXIT_USAGE; /* a file name it refuses */
        goto done;
    }
    if (!o->no_env)
        code = run_lua_init(&s);
    if (code == 0 && !s.quit)
        code = run_actions(&s, o);
    if (code == 0 && o->script && !s.quit)
        code = run_script(&s, argv, o->script);
    int repl = !s.quit && (o->interactive || (!o->script && !o->has_exec && !o->version));
    if (code == 0 && repl) {
        if (term.interactive && !o->quiet)
            banner(&s, ctx);
        if (term.interactive && !o->no_env)
            run_init_file(&s);
        s.failures = 0;
        coord.int_ends = !term.interactive; /* a piped session: Ctrl-C ends it (130) */
        gcsh_repl(&s);
        /* a piped session fails if any of its chunks failed (as sqlite3) */
        code = !term.interactive ? gcsh_session_status(&s) : 0;
    }
    if (s.exit_code >= 0) /* os.exit */
        code = s.exit_code;
    if (coord.end_status >= 0) /* SIGTERM, os.exit */
        code = coord.end_status;
done:
    /* a recording or a trace that could not be written: the session could
     * not do what it was asked (said already) */
    int unwritten = gcsh_session_record_off(&s) != 0;
    unwritten |= gcsh_tracer_stop(&coord) != 0;
    if (unwritten && code == 0)
        code = GCSH_EXIT_SKIP;
    for (int r = 0; r < ctx->size; r++)
        if (coord.lost[r])
            code = code ? code : 1;
    /* gcsh -n's launcher takes the status, and every rank exits 0: mpirun
     * ends a job at once then, and 2 s later otherwise (launch.h) */
    if (gcsh_launcher_end(coord.launcher, code) == 0)
        code = 0;
    gcsh_coord_quit(&coord, code);
    gcsh_session_destroy(&s);
    gcsh_coord_destroy(&coord);
    gcsh_term_close(&term);
    return code;
}

static void *worker_thread(void *w)
{
    gcsh_worker_loop(w);
    return NULL;
}

/* ---- every rank ---------------------------------------------------------- */

static int run_rank(gcsh_ctx *ctx, char **argv, const options *o)
{
    gcsh_link link;
    if (gcsh_link_open(ctx, &link) != 0) {
        fprintf(stderr, "gcsh: rank %d: %s\n", ctx->rank, ctx->err);
        return 1;
    }
    gcsh_worker *w = gcsh_worker_start(ctx, link.cmd_fd, link.ctl_fd);
    gcsh_worker_evidence(w, o->flight, o->trace);
    if (o->warnings)
        lua_warning(ctx->L, "@on", 0); /* as lua -W: the worker's warn() hears it */
    int code;
    if (ctx->rank == 0) {
        pthread_t t;
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old); /* signals are the terminal's */
        pthread_create(&t, NULL, worker_thread, w);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        code = rank0_main(ctx, &link, argv, o);
        pthread_join(t, NULL);
    } else {
        code = gcsh_worker_loop(w);
    }
    gcsh_worker_stop(w);
    gcsh_link_close(&link, ctx->size);
    return code;
}

static int first_process(void);

/* --replay FILE: the recording's rank count and backend, from its header.
 * Started outside mpirun, gcsh starts that many ranks with that backend
 * (unless -n or --backend say otherwise).  The first process (gcsh -n's
 * launcher, or rank 0) reads and checks the whole file, before MPI: a
 * recording that cannot be replayed is refused before any rank starts
 * (replay_read.h); the other ranks need the header only.  Returns 0, or an
 * exit status. */
static int replay_setup(options *o, const char **extra)
{
    char err[PATH_MAX + 1600];
    int trusted = o->trust ? 0 : gcsh_file_trusted(o->replay, err, sizeof err);
    if (trusted == -2) { /* missing: cannot test here, as a recording cut short */
        fprintf(stderr, "gcsh: --replay: %s\n", err);
        return GCSH_EXIT_SKIP;
    }
    if (trusted != 0) { /* a recording runs as Lua with the user's rights: as ssh with a key */
        fprintf(stderr, "gcsh: --replay: %s; gcsh runs only a recording that no one but you "
                        "(or root) can change (--trust %s runs it anyway)\n", err, o->replay);
        return GCSH_EXIT_USAGE;
    }
    int rc = first_process() ? gcsh_recording_read(o->replay, &o->recording, err, sizeof err)
                             : gcsh_replay_header(o->replay, &o->recording, err, sizeof err);
    /* every process takes the recording's options: -W on every rank, the
     * share mode in the launcher and the ranks, the rest on rank 0 */
    if (rc == 0)
        rc = options_from_recording(o, &o->recording, o->replay_note, sizeof o->replay_note,
                                    err, sizeof err);
    if (rc != 0) {
        if (first_process())
            fprintf(stderr, "gcsh: --replay: %s\n", err);
        return rc;
    }
    o->replay_ranks = o->recording.ranks;
    snprintf(o->replay_backend, sizeof o->replay_backend, "%s", o->recording.backend);
    if (!o->backend) {
        o->backend = o->replay_backend;
        extra[0] = "--backend";
        extra[1] = o->replay_backend;
    }
    if (!o->nranks && !gcsh_under_mpirun() && o->replay_ranks > 1)
        o->nranks = o->replay_ranks;
    return 0;
}

/* --share-gpu where the backend has no GPU: said once, and the job runs. */
static void say_nothing_to_share(const gcsh_ctx *ctx)
{
    if (ctx->share.mode != GCSH_SHARE_OFF && ctx->rank == 0 && strcmp(ctx->be->name, "host") == 0)
        fprintf(stderr, "gcsh: --share-gpu: the host backend has no GPU to share; the ranks "
                        "run on CPUs\n");
}

/* Under a plain `mpirun -np N gcsh --help`, one answer is enough: the
 * launcher's rank 0 (before MPI is up, from the launcher's environment). */
static int first_process(void)
{
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    if (!r)
        r = getenv("PMIX_RANK");
    if (!r)
        r = getenv("PMI_RANK");
    return !r || atoi(r) == 0;
}

/* Large blocks (glibc's default bound, 128 KiB) are mapped on their own and
 * go back to the system when freed, always.  glibc raises that bound to the
 * size of each mapped block freed; blocks made and freed again and again
 * (a 1-rank host window's segment: Open MPI mallocs it; the routed
 * collectives' 324 KiB staging window with every split) then come from a
 * heap whose holes stay resident, so a session's RSS stepped up by such a
 * block at random (tests/lua/soak.lua). */
static void large_blocks_mapped(void)
{
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
}

/* One rank of MPI: set up, run, finish.  Returns the exit status. */
static int rank_main(int argc, char **argv, const options *o)
{
    signal(SIGPIPE, SIG_IGN); /* a closed pipe is an error return, not death */
    large_blocks_mapped(); /* before MPI or any thread allocates */
    gcsh_ctx ctx = {0};
    gcsh_share_prepare(&ctx.share, o->share, o->backend); /* before MPI or CUDA starts */
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    gcsh_rank_topology(&ctx);
    gcsh_share_start(&ctx.share);
    ctx.board = gcsh_board_open(&ctx); /* collective, before any thread starts */
    int code = 1, be = -1;
    if (provided < MPI_THREAD_SERIALIZED) {
        if (ctx.rank == 0)
            fprintf(stderr, "gcsh: this MPI lacks MPI_THREAD_SERIALIZED\n");
    } else if ((be = gcsh_rank_backend(&ctx, o->backend)) != 0) {
        if (ctx.rank == 0)
            fprintf(stderr, "gcsh: %s\n", ctx.err);
        /* an unknown name is a usage error; no GPU here: cannot test */
        code = be == -2 ? GCSH_EXIT_USAGE : GCSH_EXIT_SKIP;
    } else {
        ctx.flight = gcsh_flight_open(&ctx); /* collective, as the board */
        if (!gcsh_rank_lua(&ctx) || gcsh_trace_init(&ctx, gcsh_trace_wrap) != 0) {
            fprintf(stderr, "gcsh: rank %d: cannot create a Lua state\n", ctx.rank);
        } else {
            say_nothing_to_share(&ctx);
            if (ctx.rank == 0) /* what writers that were killed left, said once */
                gcsh_file_leftovers(stderr);
            set_arg_table(ctx.L, argc, argv, o->script);
            if (o->seed >= 0) /* before anything runs */
                gcsh_shell_seed(ctx.L, o->seed);
            code = run_rank(&ctx, argv, o);
        }
    }
    gcsh_rank_close(&ctx);
    gcsh_flight_close(ctx.flight); /* collective, as its opening */
    gcsh_share_stop(&ctx.share);
    gcsh_board_close(ctx.board);
    MPI_Finalize();
    return code;
}

/* What the command line asks for, once it parsed: help, versions, ranks
 * under mpirun, or this rank.  Returns the exit status. */
static int run_command_line(int argc, char **argv, options *o)
{
    const char *extra[3] = {NULL, NULL, NULL};
    if (o->help) {
        if (first_process())
            print_help(argv[0]);
        return 0;
    }
    if (o->version && !o->nactions && !o->script && !o->interactive) {
        char v[1024]; /* nothing else to do: no ranks to start */
        versions_text(v, sizeof v);
        if (first_process())
            puts(v);
        return 0;
    }
    if (o->replay) {
        int rc = replay_setup(o, extra);
        if (rc != 0)
            return rc;
    }
    if (o->nranks) {
        if (gcsh_under_mpirun()) {
            fprintf(stderr, "gcsh: -n cannot be used under mpirun (it starts mpirun itself)\n");
            return GCSH_EXIT_USAGE;
        }
        gcsh_recording_free(&o->recording); /* checked; rank 0 reads its own */
        return launch_ranks(argc, argv, o, extra);
    }
    return rank_main(argc, argv, o);
}

int main(int argc, char **argv)
{
    options o;
    int code = parse_options(argc, argv, &o) == 0 ? run_command_line(argc, argv, &o)
                                                  : GCSH_EXIT_USAGE;
    options_free(&o);
    return code;
}
