/* gcsh: a Lua shell for GPU collectives, one process per MPI rank.
 *
 * Command line as lua.c: gcsh [options] [script [args]].  Rank 0 runs the
 * terminal and the coordinator; every rank (rank 0 in a second thread) runs a
 * worker that executes the chunks rank 0 sends. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <mpi.h>

#include "board.h"
#include "coord.h"
#include "msg.h"
#include "rank.h"
#include "record.h"
#include "repl.h"
#include "sig.h"
#include "spmd.h"
#include "term.h"
#include "trace_coord.h"

typedef struct options {
    int interactive;   /* -i */
    int version;       /* -v */
    int quiet;         /* -q */
    int nranks;        /* -n N, 0 when absent */
    const char *backend;
    double timeout;
    int first_action;  /* argv index of the first -e/-l, or 0 */
    int script;        /* argv index of the script, or 0 */
    int has_exec;      /* some -e was given */
    const char *record; /* --record FILE */
    const char *replay; /* --replay FILE */
    const char *trace;  /* --trace FILE */
    int replay_ranks;   /* the recording's rank count (header) */
    char replay_backend[64];
} options;

static void usage(const char *prog, const char *problem)
{
    if (problem)
        fprintf(stderr, "%s: %s\n", prog, problem);
    fprintf(stderr,
            "usage: %s [options] [script [args]]\n"
            "  -e stat          execute string 'stat' on every rank\n"
            "  -i               enter interactive mode after the script\n"
            "  -l mod           require library 'mod' into global 'mod' (or -l g=mod)\n"
            "  -n N             start N ranks under mpirun\n"
            "  -q               no banner\n"
            "  -v               show version information\n"
            "  --backend B      host or cuda (default: cuda when a GPU is visible)\n"
            "  --timeout S      report ranks still running after S seconds (0: never)\n"
            "  --record FILE    write the session's lines and output to FILE (a script)\n"
            "  --replay FILE    rerun a recording; exit 1 at the first line that differs\n"
            "  --trace FILE     write a trace of every rank's lines and calls (Chrome JSON)\n"
            "  --               stop handling options\n"
            "  -                run stdin as a script\n",
            prog);
}

static int parse_number(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Returns 0, or -1 after printing usage. */
static int parse_options(int argc, char **argv, options *o)
{
    *o = (options){.timeout = 10};
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        double v;
        if (a[0] != '-' || strcmp(a, "-") == 0)
            break;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "-i") == 0) {
            o->interactive = 1;
        } else if (strcmp(a, "-v") == 0) {
            o->version = 1;
        } else if (strcmp(a, "-q") == 0) {
            o->quiet = 1;
        } else if (strcmp(a, "-e") == 0 || strcmp(a, "-l") == 0) {
            if (++i >= argc)
                return usage(argv[0], a[1] == 'e' ? "'-e' needs argument" : "'-l' needs argument"), -1;
            if (!o->first_action)
                o->first_action = i - 1;
            o->has_exec |= a[1] == 'e';
        } else if (strcmp(a, "-n") == 0) {
            if (++i >= argc || parse_number(argv[i], 1, 4096, &v) != 0 || v != (int)v)
                return usage(argv[0], "'-n' needs a rank count 1..4096"), -1;
            o->nranks = (int)v;
        } else if (strcmp(a, "--backend") == 0) {
            if (++i >= argc)
                return usage(argv[0], "'--backend' needs host or cuda"), -1;
            o->backend = argv[i];
        } else if (strcmp(a, "--record") == 0 || strcmp(a, "--replay") == 0 ||
                   strcmp(a, "--trace") == 0) {
            if (++i >= argc || !argv[i][0]) {
                char msg[64];
                snprintf(msg, sizeof msg, "'%s' needs a file name", a);
                return usage(argv[0], msg), -1;
            }
            *(a[2] == 't' ? &o->trace : a[4] == 'c' ? &o->record : &o->replay) = argv[i];
        } else if (strcmp(a, "--timeout") == 0) {
            if (++i >= argc || parse_number(argv[i], 0, 1e6, &v) != 0)
                return usage(argv[0], "'--timeout' needs seconds 0..1e6"), -1;
            o->timeout = v;
        } else {
            char msg[128];
            snprintf(msg, sizeof msg, "unrecognized option '%s'", a);
            return usage(argv[0], msg), -1;
        }
    }
    o->script = i < argc ? i : 0;
    if (o->replay && (o->script || o->first_action || o->interactive || o->record))
        return usage(argv[0], "'--replay' runs the recording alone (no script, -e, -l, -i or "
                              "--record with it)"), -1;
    return 0;
}

/* gcsh -n N ...: becomes `mpirun -np N <flags this machine needs> gcsh ...`. */
static int exec_mpirun(int argc, char **argv, const options *o, const char *const *extra)
{
    char self[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k <= 0)
        return perror("gcsh: /proc/self/exe"), 1;
    self[k] = '\0';
    const char *mpirun = getenv("GCSH_MPIRUN") ? getenv("GCSH_MPIRUN") : "mpirun";
    char np[16];
    snprintf(np, sizeof np, "%d", o->nranks);
    char **v = calloc((size_t)argc + 20, sizeof *v);
    int n = 0;
    v[n++] = (char *)mpirun;
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
    v[n++] = self;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-n") == 0 && (o->script == 0 || i < o->script)) {
            i++; /* drop "-n N" */
            continue;
        }
        v[n++] = argv[i];
    }
    for (; extra && *extra; extra++)
        v[n++] = (char *)*extra;
    execvp(mpirun, v);
    fprintf(stderr, "gcsh: cannot start %s: %s (is Open MPI installed?)\n", mpirun, strerror(errno));
    return 127;
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

static char *read_script(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0, r;
    char *buf = malloc(cap);
    while ((r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    if (f != stdin)
        fclose(f);
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

static int run_script(gcsh_session *s, const char *path)
{
    size_t len;
    char *src = read_script(path, &len);
    if (!src) {
        gcsh_coord_say(s->coord, "gcsh: cannot open %s: %s", path, strerror(errno));
        return 1;
    }
    char name[PATH_MAX + 2];
    snprintf(name, sizeof name, strcmp(path, "-") == 0 ? "=stdin" : "@%s", path);
    int failed = gcsh_session_exec(s, name, src, len, CHUNK_SCRIPT);
    free(src);
    return failed != 0;
}

/* -e and -l in command-line order; stops at the first failure (as lua.c). */
static int run_actions(gcsh_session *s, int argc, char **argv, const options *o)
{
    int end = o->script ? o->script : argc;
    for (int i = o->first_action; i && i < end; i++) {
        int is_e = strcmp(argv[i], "-e") == 0, is_l = strcmp(argv[i], "-l") == 0;
        if (!is_e && !is_l)
            continue;
        const char *val = argv[++i];
        char buf[1024];
        if (is_l) {
            const char *eq = strchr(val, '=');
            if (eq)
                snprintf(buf, sizeof buf, "%.*s = require(%s%s%s)", (int)(eq - val), val, "\"",
                         eq + 1, "\"");
            else
                snprintf(buf, sizeof buf, "%s = require(\"%s\")", val, val);
            val = buf;
        }
        if (gcsh_session_exec(s, "=(command line)", val, strlen(val), 0) != 0)
            return 1;
        if (s->quit) /* os.exit */
            return 0;
    }
    return 0;
}

static void banner(const gcsh_session *s, const gcsh_ctx *ctx)
{
    gcsh_coord_say(s->coord, "gcsh %s (%s) on %d rank%s, backend %s (%s); .help for help",
                   GCSH_VERSION, LUA_RELEASE, ctx->size, ctx->size == 1 ? "" : "s",
                   ctx->be->name, ctx->device);
    if (s->term->hint)
        gcsh_coord_say(s->coord, "gcsh: %s", s->term->hint);
}

/* coord's on_exit: the terminal goes back to the shell before the process
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
        return 2;
    }
    return gcsh_replay(s, o->replay); /* os.exit in it: matched or not, like any line */
}

/* Everything rank 0's terminal thread does; returns the exit code. */
static int rank0_main(gcsh_ctx *ctx, gcsh_link *link, int argc, char **argv, const options *o)
{
    gcsh_term term;
    gcsh_term_open(&term, o->interactive);
    int sigfd = gcsh_sig_install();
    gcsh_coord coord;
    gcsh_coord_init(&coord, ctx, link, sigfd, term.out);
    coord.timeout = o->timeout;
    coord.on_exit = give_back_terminal;
    coord.exit_arg = &term;
    gcsh_session s;
    gcsh_session_init(&s, &coord, &term, ctx->L);

    int code = 0;
    if (o->version)
        gcsh_coord_say(&coord, "gcsh %s (%s)", GCSH_VERSION, LUA_RELEASE);
    if (o->trace && gcsh_tracer_start(&coord, o->trace) != 0) {
        code = 1;
        goto done;
    }
    if (o->replay) {
        code = replay_main(&s, ctx, o);
        goto done;
    }
    if (o->record && !(s.rec = gcsh_record_open(&s, o->record))) {
        code = 1;
        goto done;
    }
    code = run_actions(&s, argc, argv, o);
    if (code == 0 && o->script && !s.quit)
        code = run_script(&s, argv[o->script]);
    int repl = !s.quit && (o->interactive || (!o->script && !o->has_exec && !o->version));
    if (code == 0 && repl) {
        if (term.interactive && !o->quiet)
            banner(&s, ctx);
        s.failures = 0;
        gcsh_repl(&s);
        /* a piped session fails if any of its chunks failed (as sqlite3) */
        code = !term.interactive && s.failures ? 1 : 0;
    }
    if (s.exit_code >= 0)
        code = s.exit_code;
done:
    gcsh_tracer_stop(&coord);
    for (int r = 0; r < ctx->size; r++)
        if (coord.lost[r])
            code = code ? code : 1;
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

static int run_rank(gcsh_ctx *ctx, int argc, char **argv, const options *o)
{
    gcsh_link link;
    if (gcsh_link_open(ctx, &link) != 0) {
        fprintf(stderr, "gcsh: rank %d: %s\n", ctx->rank, ctx->err);
        return 1;
    }
    gcsh_worker *w = gcsh_worker_start(ctx, link.cmd_fd, link.ctl_fd);
    int code;
    if (ctx->rank == 0) {
        pthread_t t;
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old); /* signals are the terminal's */
        pthread_create(&t, NULL, worker_thread, w);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        code = rank0_main(ctx, &link, argc, argv, o);
        pthread_join(t, NULL);
    } else {
        code = gcsh_worker_loop(w);
    }
    gcsh_worker_stop(w);
    gcsh_link_close(&link, ctx->size);
    return code;
}

/* --replay FILE: the recording's rank count and backend, from its header.
 * Started outside mpirun, gcsh starts that many ranks with that backend
 * (unless -n or --backend say otherwise).  Returns 0, or an exit status. */
static int replay_setup(options *o, const char **extra)
{
    char err[600];
    if (gcsh_replay_header(o->replay, &o->replay_ranks, o->replay_backend,
                           sizeof o->replay_backend, err, sizeof err) != 0) {
        fprintf(stderr, "gcsh: --replay: %s\n", err);
        return 2;
    }
    if (!o->backend) {
        o->backend = o->replay_backend;
        extra[0] = "--backend";
        extra[1] = o->replay_backend;
    }
    if (!o->nranks && !gcsh_under_mpirun() && o->replay_ranks > 1)
        o->nranks = o->replay_ranks;
    return 0;
}

int main(int argc, char **argv)
{
    options o;
    const char *extra[3] = {NULL, NULL, NULL};
    if (parse_options(argc, argv, &o) != 0)
        return 1;
    if (o.replay) {
        int rc = replay_setup(&o, extra);
        if (rc != 0)
            return rc;
    }
    if (o.nranks) {
        if (gcsh_under_mpirun()) {
            fprintf(stderr, "gcsh: -n cannot be used under mpirun (it starts mpirun itself)\n");
            return 1;
        }
        return exec_mpirun(argc, argv, &o, extra);
    }
    signal(SIGPIPE, SIG_IGN); /* a closed pipe is an error return, not death */

    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    gcsh_ctx ctx = {0};
    gcsh_rank_topology(&ctx);
    ctx.board = gcsh_board_open(&ctx); /* collective, before any thread starts */
    int code = 1;
    if (provided < MPI_THREAD_SERIALIZED) {
        if (ctx.rank == 0)
            fprintf(stderr, "gcsh: this MPI lacks MPI_THREAD_SERIALIZED\n");
    } else if (gcsh_rank_backend(&ctx, o.backend) != 0) {
        if (ctx.rank == 0)
            fprintf(stderr, "gcsh: %s\n", ctx.err);
    } else if (!gcsh_rank_lua(&ctx)) {
        fprintf(stderr, "gcsh: rank %d: cannot create a Lua state\n", ctx.rank);
    } else {
        set_arg_table(ctx.L, argc, argv, o.script);
        code = run_rank(&ctx, argc, argv, &o);
    }
    gcsh_rank_close(&ctx);
    gcsh_board_close(ctx.board);
    MPI_Finalize();
    return code;
}
