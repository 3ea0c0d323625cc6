/* Rank 0's coordinator.  See coord.h. */
#include <ctype.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wire/board.h"
#include "wire/collcheck.h"
#include "shell/coord.h"
#include "wire/msg.h"
#include "wire/where.h"
#include "shell/launch.h"
#include "shell/sigint.h"

/* A rank's streamed text is held this long before printing, so that the same
 * line from every rank arrives in time to be folded into one (and no
 * longer: a rank's io.flush shows within about 0.2 s, 0.1 s of it the
 * worker's own flush, FLUSH_EVERY_MS). */
#define FOLD_WINDOW_S 0.1
/* A running rank that printed less than this long ago (or, before its first
 * output, since the command started) keeps printing: the others' text that
 * it has not printed yet waits for it, so that a run folds whole however
 * long it is and whichever rank is ahead (gcsh_fold_flush's waiting). */
#define KEEP_UP_S 1.0
/* Text waiting to be folded is printed at once beyond this many bytes (all
 * ranks together), so rank 0's memory stays bounded whatever ranks print. */
#define FOLD_MAX_PENDING ((size_t)8 << 20)
/* How long rank 0 waits for the answers to MSG_WHERE. */
#define PROBE_WAIT_S 0.3
#define WHERE_LEN 200
/* After a rank calls os.exit, how long the other running ranks get to finish
 * (typically the same line's os.exit) before the session ends at once. */
#define EXIT_GRACE_S 3.0
/* A rank that has not ended its command this long after an interrupt does
 * not answer (a frozen process, a C loop that never looks): a second Ctrl-C
 * then ends the job at once.  (One MPI_Test of a 512 MiB all-reduce can
 * take a second on a loaded machine: an interrupt waits for it.) */
#define INTERRUPT_ANSWER_S 5.0
/* After SIGTERM, ranks get this long to stop before the job ends at once
 * (a second SIGTERM ends it at once); within GCSH_TERM_DEADLINE_S, after
 * which rank 0 ends by itself (sigint.h). */
#define TERM_GRACE_S 4.0

enum { IDLE = 0, RUNNING, DONE };

typedef struct run_state {
    const char *targets;
    char *state;      /* per rank: IDLE, RUNNING, DONE */
    uint32_t *status; /* per rank: CHUNK_* once DONE */
    int running;
    double start, first_pending, next_report;
    double *last_out; /* per rank: when its output last came (0: none yet) */
    char (*where)[WHERE_LEN]; /* per rank: its latest answer to MSG_WHERE */
    char *waits;      /* per rank: that answer said it waits for other ranks */
    char *asked;      /* per rank: a MSG_WHERE is outstanding */
    int nasked;
    double probe_until; /* 0: no probe in flight */
    int report_due;     /* a hang report waits for the probe */
    int abort_all;      /* .abort was given */
    int *exit_status;   /* per rank: its os.exit status, for CHUNK_EXIT */
    char *check_error;  /* per rank: its error is its failed collective check */
    int failure_shown;  /* --first-failure: a rank's error was shown in full */
    int *exit_caused;   /* per rank: a collective it waited in failed only because the
                           ranks missing there called os.exit: their status; -1 */
    int *error_status;  /* per rank, for CHUNK_ERROR: 1, 125 (CHUNK_CANNOT_TEST) or
                           128 (CHUNK_USAGE): rank/verdict.h */
    double exit_deadline; /* 0: no rank called os.exit */
    double interrupted_at; /* the first interrupt of this command; 0: none */
    int unanswered_said;   /* "has not answered the interrupt" was said */
    double term_at;        /* SIGTERM came (0: no); the job ends TERM_GRACE_S on */
    int deadline_due;      /* the deadline passed: the job ends once the probe is in */
} run_state;

typedef struct coord_run {
    gcsh_coord *c;
    run_state *rs;
} coord_run;

void gcsh_coord_init(gcsh_coord *c, gcsh_ctx *ctx, gcsh_link *link, int sigfd, FILE *out,
                     FILE *err, gcsh_tag_mode tag)
{
    *c = (gcsh_coord){.ctx = ctx, .link = link, .size = ctx->size, .sigfd = sigfd, .out = out,
                      .err = err, .abort_fd = -1, .end_status = -1,
                      .started = gcsh_now_seconds(), .deadline_status = 1};
    c->lost = calloc((size_t)ctx->size, 1);
    c->lost_why = calloc((size_t)ctx->size, sizeof *c->lost_why);
    gcsh_fold_init(&c->fold, ctx->size, out, err, tag);
    gcsh_progress_init(&c->progress, err, ctx->size);
    gcsh_checker_init(&c->checker, ctx->size);
}

void gcsh_coord_set_deadline(gcsh_coord *c, double seconds)
{
    c->deadline_s = seconds;
    c->deadline = seconds > 0 ? c->started + seconds : 0;
}

void gcsh_tap_init(gcsh_tap *t, int size)
{
    *t = (gcsh_tap){0};
    t->out = calloc((size_t)size, sizeof *t->out);
    t->status = calloc((size_t)size, sizeof *t->status);
    t->ran = calloc((size_t)size, 1);
    t->tape = calloc((size_t)size, sizeof *t->tape);
}

typedef struct tap_want {
    const gcsh_tap *t;
    uint32_t status;
} tap_want;

static int tap_has(const void *arg, int r)
{
    const tap_want *w = arg;
    return w->t->ran[r] && w->t->status[r] == w->status;
}

int gcsh_tap_ranks(const gcsh_tap *t, int size, uint32_t want, char *buf, size_t len)
{
    int n;
    gcsh_format_ranks_where(size, tap_has, &(tap_want){t, want}, buf, len, &n);
    return n;
}

void gcsh_tap_destroy(gcsh_tap *t, int size)
{
    for (int r = 0; t->out && r < size; r++) {
        gcsh_text_free(&t->out[r]);
        gcsh_text_free(&t->tape[r]);
    }
    free(t->out);
    free(t->tape);
    free(t->status);
    free(t->ran);
    *t = (gcsh_tap){0};
}

/* Each listener l of c, in the order they came. */
#define EACH_LISTENER(c, l)                                                                        \
    for (const struct gcsh_coord_listener *l = (c)->listeners;                                     \
         l < (c)->listeners + (c)->nlisteners; l++)

void gcsh_coord_listen(gcsh_coord *c, const gcsh_coord_hooks *hooks, void *arg)
{
    if (c->nlisteners == GCSH_COORD_LISTENERS)
        abort(); /* a new listener needs GCSH_COORD_LISTENERS raised */
    c->listeners[c->nlisteners++] = (struct gcsh_coord_listener){.hooks = hooks, .arg = arg};
}

void *gcsh_coord_listener(const gcsh_coord *c, const gcsh_coord_hooks *hooks)
{
    EACH_LISTENER(c, l)
        if (l->hooks == hooks)
            return l->arg;
    return NULL;
}

void gcsh_coord_destroy(gcsh_coord *c)
{
    EACH_LISTENER(c, l)
        if (l->hooks->destroy)
            l->hooks->destroy(l->arg, c);
    gcsh_fold_destroy(&c->fold);
    gcsh_progress_destroy(&c->progress);
    gcsh_checker_destroy(&c->checker);
    gcsh_tally_free(&c->counts);
    gcsh_text_free(&c->typeahead);
    free(c->lost);
    free(c->lost_why);
    free(c->aborted);
}

/* Prints a line of the shell's own on f (the progress line cleared first). */
static void say_on(gcsh_coord *c, FILE *f, const char *fmt, va_list ap)
{
    char *text = NULL;
    if (vasprintf(&text, fmt, ap) < 0)
        return;
    if (!f) /* gcsh_coord_say: "gcsh: ..." (after any newlines) is a diagnostic */
        f = strncmp(text + strspn(text, "\n"), "gcsh:", 5) == 0 ? c->err : c->out;
    gcsh_fold_end_line(&c->fold);
    gcsh_progress_hide(&c->progress);
    fputs(text, f);
    fputc('\n', f);
    fflush(f);
    free(text);
}

void gcsh_coord_say(gcsh_coord *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say_on(c, NULL, fmt, ap);
    va_end(ap);
}

void gcsh_coord_error(gcsh_coord *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say_on(c, c->err, fmt, ap);
    va_end(ap);
}

void gcsh_coord_report(gcsh_coord *c, const char *fmt, ...)
{
    char *text = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    gcsh_text t = {0};
    gcsh_text_wrap(&t, text, GCSH_REPORT_INDENT, GCSH_REPORT_WIDTH);
    gcsh_coord_say(c, "%s", t.s);
    gcsh_text_free(&t);
    free(text);
}

void gcsh_coord_report_path(gcsh_coord *c, const char *head, const char *path)
{
    gcsh_text t = {0};
    gcsh_text_append(&t, "gcsh:   ", 8);
    gcsh_text_append(&t, path, strlen(path));
    gcsh_text wrapped = {0};
    gcsh_text_wrap_path(&wrapped, t.s, GCSH_REPORT_INDENT, GCSH_REPORT_WIDTH);
    gcsh_coord_report(c, "gcsh: %s:", head);
    gcsh_coord_say(c, "%s", wrapped.s);
    gcsh_text_free(&wrapped);
    gcsh_text_free(&t);
}

typedef struct state_want {
    const run_state *rs;
    int state;
    uint32_t status; /* with state DONE: the status too; 0: any */
} state_want;

static int in_state(const void *arg, int r)
{
    const state_want *w = arg;
    return w->rs->state[r] == w->state && (!w->status || w->rs->status[r] == w->status);
}

/* Formats the ranks whose state matches `want` as "0-2,5". */
static char *ranks_where(const gcsh_coord *c, const run_state *rs, int want, char *buf,
                         size_t len)
{
    return gcsh_format_ranks_where(c->size, in_state, &(state_want){rs, want, 0}, buf, len,
                                   NULL);
}

/* ---- ending the session at once -------------------------------------------- */

/* The statuses of the ranks that are done, into the tap (record.h): at the
 * end of a command, or as the session ends at once. */
static void fill_tap(gcsh_coord *c, const run_state *rs)
{
    for (int r = 0; c->tap && rs && r < c->size; r++) /* no rs: between commands */
        if (rs->state[r] == DONE) {
            c->tap->status[r] = rs->status[r];
            c->tap->ran[r] = 1;
        }
}

static void flush_output(gcsh_coord *c, const run_state *rs, int running);

/* Every other rank exits with `code` (their watchers do it, whatever their
 * workers are blocked in), then rank 0 with `status`.  No MPI_Finalize: a
 * peer is dead or a device is lost, and finalising could hang. */
static _Noreturn void end_now(gcsh_coord *c, int code, int status)
{
    gcsh_launcher_status(c->launcher, status); /* the launcher ends mpirun then (launch.c) */
    for (int r = 1; r < c->size; r++)
        if (!c->lost[r])
            gcsh_msg_send(c->link->peer_ctl[r], MSG_DIE, (uint32_t)code, NULL, 0, NULL, 0);
    EACH_LISTENER(c, l)
        if (l->hooks->exit)
            l->hooks->exit(l->arg);
    /* not fflush(NULL): rank 0's worker may hold its io.stdout's lock,
     * blocked sending output that this thread no longer reads */
    fflush(c->out);
    fflush(c->err);
    _exit(status);
}

/* The session ends at once, every rank with `code` (end_now), said on
 * stderr.  A crash (a lost rank, a device fault) writes the flight
 * recorder's file.  The ending hooks first: the recorder keeps the line
 * that was running, a replay compares how it ended. */
static _Noreturn void die_now(gcsh_coord *c, const run_state *rs, int code, const char *why,
                              int crash)
{
    flush_output(c, rs, 0);
    EACH_LISTENER(c, l) /* where every rank stopped */
        if (l->hooks->dying)
            l->hooks->dying(l->arg, c, why, crash);
    gcsh_coord_say(c, "gcsh: %s; every rank exits with status %d", why, code);
    fill_tap(c, rs);
    int status = code;
    EACH_LISTENER(c, l)
        if (l->hooks->ending)
            status = l->hooks->ending(l->arg, status, why);
    end_now(c, code, status);
}

/* Whether some rank ended this command with an error. */
static int some_rank_failed(const gcsh_coord *c, const run_state *rs)
{
    for (int r = 0; rs && r < c->size; r++)
        if (rs->state[r] == DONE && rs->status[r] != CHUNK_OK && rs->status[r] != CHUNK_EXIT)
            return 1;
    return 0;
}

/* The reader of rank 0's output left (`| head -1`, quitting `| less`): as a
 * program that SIGPIPE kills, every rank stops at once and nothing more is
 * printed or written; the status is 141 (128 + SIGPIPE), or the session's
 * failure when a rank failed first (the ending hooks say so). */
static _Noreturn void die_of_closed_output(gcsh_coord *c, const run_state *rs)
{
    int status = some_rank_failed(c, rs) ? 1 : GCSH_EXIT_PIPE;
    fill_tap(c, rs);
    EACH_LISTENER(c, l)
        if (l->hooks->ending)
            status = l->hooks->ending(l->arg, status, "its output's reader is gone (SIGPIPE)");
    end_now(c, GCSH_EXIT_PIPE, status);
}

/* How rank r ended, once its connection closed: the signal its crash
 * handler reported on the control channel (worker.c), or only that. */
static void why_lost(gcsh_coord *c, int r)
{
    gcsh_msg_header h;
    struct pollfd p = {.fd = c->link->peer_ctl[r], .events = POLLIN};
    if (poll(&p, 1, 0) == 1 && recv(p.fd, &h, sizeof h, MSG_DONTWAIT) == (ssize_t)sizeof h &&
        h.type == MSG_CRASH && h.seq > 0 && h.seq < 65)
        snprintf(c->lost_why[r], sizeof c->lost_why[r], "killed by signal %u: %s",
                 (unsigned)h.seq, strsignal((int)h.seq));
    else
        snprintf(c->lost_why[r], sizeof c->lost_why[r], "its connection to rank 0 closed");
}

static void mark_lost(gcsh_coord *c, run_state *rs, int r)
{
    c->lost[r] = 1;
    if (rs->state[r] == RUNNING)
        rs->running--;
    rs->state[r] = DONE;
    rs->status[r] = CHUNK_ERROR;
    rs->error_status[r] = GCSH_EXIT_LOST; /* its verdict, should anyone ask */
    flush_output(c, rs, 0);
    why_lost(c, r);
    gcsh_coord_say(c, "gcsh: rank %d is gone (%s)", r, c->lost_why[r]);
    die_now(c, rs, GCSH_EXIT_LOST, "the session cannot go on without it", 1);
}

/* A rank that is not running a command sent something: nothing is expected
 * then, so it is read and dropped; end of file means the rank is gone. */
static void read_idle_rank(gcsh_coord *c, int r, gcsh_msg *m)
{
    if (gcsh_msg_recv(c->link->peer_cmd[r], m) == 0)
        return;
    c->lost[r] = 1;
    why_lost(c, r);
    gcsh_coord_say(c, "gcsh: rank %d is gone (%s)", r, c->lost_why[r]);
    die_now(c, NULL, GCSH_EXIT_LOST, "the session cannot go on without it", 1);
}

/* The deadline passed between commands (at the prompt, reading a pipe):
 * nothing runs, so there is nothing to report but that. */
static void end_idle_at_deadline(gcsh_coord *c)
{
    if (c->deadline == 0 || gcsh_now_seconds() < c->deadline)
        return;
    char why[128];
    snprintf(why, sizeof why, "the deadline (%g s) is over, between commands", c->deadline_s);
    die_now(c, NULL, gcsh_status_worst(c->deadline_status, c->verdict_so_far), why, 1);
}

int gcsh_coord_idle_poll(gcsh_coord *c, struct pollfd *p, int n, int timeout_ms)
{
    end_idle_at_deadline(c);
    if (c->deadline > 0) {
        int left_ms = (int)((c->deadline - gcsh_now_seconds()) * 1000) + 1;
        if (timeout_ms < 0 || left_ms < timeout_ms)
            timeout_ms = left_ms;
    }
    struct pollfd *all = malloc((size_t)(n + c->size) * sizeof *all);
    int *who = malloc((size_t)c->size * sizeof *who), k = 0;
    if (!all || !who) {
        free(all);
        free(who);
        return poll(p, (nfds_t)n, timeout_ms);
    }
    memcpy(all, p, (size_t)n * sizeof *p);
    for (int r = 1; r < c->size; r++)
        if (!c->lost[r]) {
            who[k] = r;
            all[n + k++] = (struct pollfd){.fd = c->link->peer_cmd[r], .events = POLLIN};
        }
    int ready = poll(all, (nfds_t)(n + k), timeout_ms);
    if (ready == 0)
        end_idle_at_deadline(c);
    gcsh_msg m = {0};
    for (int i = 0; ready > 0 && i < k; i++) /* before any signal: see coord.h */
        if (all[n + i].revents & (POLLIN | POLLHUP | POLLERR))
            read_idle_rank(c, who[i], &m);
    gcsh_msg_free(&m);
    memcpy(p, all, (size_t)n * sizeof *p);
    if (ready > 0) { /* what poll would have said of p alone */
        ready = 0;
        for (int i = 0; i < n; i++)
            ready += p[i].revents != 0;
    }
    free(all);
    free(who);
    return ready;
}

/* The ranks that run and keep printing (KEEP_UP_S): their output may be
 * about to match what the others printed. */
static void keeping_up(const gcsh_coord *c, const run_state *rs, char *waiting)
{
    double now = gcsh_now_seconds();
    for (int r = 0; r < c->size; r++) {
        double last = rs->last_out[r] > 0 ? rs->last_out[r] : rs->start;
        waiting[r] = rs->state[r] == RUNNING && !c->lost[r] && now - last < KEEP_UP_S;
    }
}

/* Prints the ranks' text that is due (running: the command runs, so text may
 * wait for ranks that keep printing, gcsh_fold_flush in out.h), clearing the
 * progress line first; a reader that is gone ends the session (rs: the
 * command running, NULL between commands). */
static void flush_output(gcsh_coord *c, const run_state *rs, int running)
{
    if (gcsh_fold_pending(&c->fold))
        gcsh_progress_hide(&c->progress);
    char *waiting = running && rs ? malloc((size_t)c->size) : NULL;
    if (waiting)
        keeping_up(c, rs, waiting);
    gcsh_fold_flush(&c->fold, !running, waiting);
    free(waiting);
    if (c->fold.closed)
        die_of_closed_output(c, rs);
}

/* A rank's output on one stream: folded for the terminal (with --tag=never
 * printed as it comes, whole lines, so in the order the ranks' lines
 * arrive), and kept by a tap (both streams in the order written). */
static void take_output(gcsh_coord *c, const run_state *rs, int r, int stream, const char *s,
                        size_t n)
{
    if (rs && n)
        rs->last_out[r] = gcsh_now_seconds();
    if (c->tap)
        gcsh_text_append(&c->tap->out[r], s, n);
    if (!c->tap || !c->tap->quiet) {
        gcsh_fold_add(&c->fold, r, stream, s, n);
        if (c->fold.tag == GCSH_TAG_NEVER)
            flush_output(c, rs, 1);
    }
}

/* --first-failure: the first rank's error in full, with its traceback; the
 * others' first line, which says where and what (the job's status is the
 * same either way). */
static void take_failure(gcsh_coord *c, run_state *rs, int r, const char *s, size_t n)
{
    size_t line = n;
    const char *nl = memchr(s, '\n', n);
    if (rs->failure_shown && nl)
        line = (size_t)(nl - s);
    rs->failure_shown = 1;
    take_output(c, rs, r, GCSH_STDERR, s, line);
    take_output(c, rs, r, GCSH_STDERR, "\n", 1);
}

/* ---- what ranks are doing --------------------------------------------------- */

static int io_running(void *arg, int r)
{
    const coord_run *cr = arg;
    return cr->rs->state[r] == RUNNING;
}

/* Where a rank is that waits on no fingerprint. */
static const char *io_where(void *arg, int r)
{
    const coord_run *cr = arg;
    const run_state *rs = cr->rs;
    if (cr->c->lost[r])
        return "is gone";
    if (!rs->targets[r])
        return "not running this command (.ranks)";
    if (rs->state[r] == DONE)
        return rs->status[r] == CHUNK_OK            ? "finished the command"
               : rs->status[r] == CHUNK_INTERRUPTED ? "was interrupted"
               : rs->status[r] == CHUNK_EXIT        ? "called os.exit"
                                                    : "ended the command with an error";
    return rs->where[r][0] ? rs->where[r] : "running (no answer)";
}

static void io_verdict(void *arg, int r, uint32_t serial, int ok, const char *text)
{
    const coord_run *cr = arg;
    uint32_t head[2] = {serial, (uint32_t)ok};
    gcsh_msg_send(cr->c->link->peer_cmd[r], MSG_VERDICT, cr->c->seq, head, sizeof head, text,
                  strlen(text) + 1);
}

/* Rank r's entry on the check board for fp's check (collcheck.h), in this
 * command. */
static int io_board(void *arg, int r, const gcsh_fingerprint *fp)
{
    const coord_run *cr = arg;
    gcsh_board_entry e;
    if (!gcsh_board_read(cr->c->ctx->board, r, fp->comm, &e) || e.chunk != cr->c->seq ||
        e.seq < fp->seq)
        return CHECK_BOARD_ABSENT;
    if (e.seq > fp->seq)
        return CHECK_BOARD_AGREED; /* it passed this one */
    if (e.attempt != fp->attempt)
        return CHECK_BOARD_ABSENT;
    if (e.state == BOARD_PASSED)
        return CHECK_BOARD_AGREED;
    return e.state == BOARD_POSTED || e.state == BOARD_ESCALATED ? CHECK_BOARD_COMING
                                                                 : CHECK_BOARD_ABSENT;
}

static int error_caused_by_exit(const run_state *rs, int r);
static void take_abandon(gcsh_coord *c, const run_state *rs, int from, const char *data,
                         size_t len);

/* Rank `from`, whose check with fp failed, does not join fp's operation,
 * which other members run unchecked (collcheck_coord.h): as if it had said
 * so itself (MSG_ABANDONED), so that they stop it or never enter it. */
static void io_abandon(void *arg, int from, const gcsh_fingerprint *fp, const int *members,
                       const char *why)
{
    const coord_run *cr = arg;
    int n = members ? fp->comm_size : 0;
    gcsh_abandon_msg m = {.comm = fp->comm, .seq = fp->kind == GCSH_FP_COLLECTIVE ? fp->seq : 0,
                          .chunk = cr->c->seq, .comm_rank = fp->comm_rank,
                          .comm_size = fp->comm_size, .nmembers = n, .unchecked = 1};
    snprintf(m.why, sizeof m.why, "%s", why);
    size_t len = sizeof m + (size_t)n * sizeof(int32_t);
    char *buf = malloc(len);
    if (!buf)
        return; /* then they wait: .timeout and Ctrl-C still end it */
    memcpy(buf, &m, sizeof m);
    for (int i = 0; i < n; i++) {
        int32_t w = members[i];
        memcpy(buf + sizeof m + (size_t)i * sizeof w, &w, sizeof w);
    }
    take_abandon(cr->c, cr->rs, from, buf, len);
    free(buf);
}

/* (the exit that ended rank r's command: its own os.exit, or one it failed by) */
static int io_exited(void *arg, int r)
{
    const coord_run *cr = arg;
    const run_state *rs = cr->rs;
    if (cr->c->lost[r] || rs->state[r] != DONE)
        return -1;
    if (rs->status[r] == CHUNK_EXIT)
        return rs->exit_status[r];
    return error_caused_by_exit(rs, r) ? rs->exit_caused[r] : -1;
}

static void io_because_exit(void *arg, int r, int status)
{
    const coord_run *cr = arg;
    cr->rs->exit_caused[r] = gcsh_status_worst(cr->rs->exit_caused[r], status);
}

static gcsh_checker_io checker_io(coord_run *cr)
{
    return (gcsh_checker_io){.arg = cr, .running = io_running, .where = io_where,
                             .verdict = io_verdict, .exited = io_exited,
                             .because_exit = io_because_exit, .abandon = io_abandon,
                             .board = cr->c->ctx->board ? io_board : NULL};
}

/* Asks every running rank that waits on no fingerprint where it is. */
static void start_probe(gcsh_coord *c, run_state *rs, double now)
{
    if (rs->probe_until > 0)
        return;
    for (int r = 0; r < c->size; r++) {
        if (rs->state[r] != RUNNING || gcsh_checker_waiting(&c->checker, r))
            continue;
        rs->where[r][0] = '\0';
        rs->waits[r] = 0;
        if (gcsh_msg_send(c->link->peer_ctl[r], MSG_WHERE, c->seq, NULL, 0, NULL, 0) == 0) {
            rs->asked[r] = 1;
            rs->nasked++;
        }
    }
    rs->probe_until = now + PROBE_WAIT_S;
}

static void unask(run_state *rs, int r)
{
    if (rs->asked[r]) {
        rs->asked[r] = 0;
        rs->nasked--;
    }
}

/* The process ids of ranks[0..n), so that a debugger can attach (gdb -p). */
static void say_pids(gcsh_coord *c, const int *ranks, int n)
{
    if (n == 0 || !c->link->pids)
        return;
    gcsh_text t = {0};
    gcsh_text_append(&t, "gcsh:   pid", 11);
    for (int i = 0; i < n; i++) {
        char one[48];
        int len = snprintf(one, sizeof one, "%s [%d] %d", i ? "," : "", ranks[i],
                           c->link->pids[ranks[i]]);
        gcsh_text_append(&t, one, (size_t)len);
    }
    gcsh_coord_report(c, "%s (gdb -p PID attaches)", t.s);
    gcsh_text_free(&t);
}

/* Whether some running rank waits for others (a collective or its check, a
 * signal, a transfer): a hang report is for such waits, not for ranks that
 * each run their own Lua or C. */
static int someone_waits(const gcsh_coord *c, const run_state *rs)
{
    for (int r = 0; r < c->size; r++)
        if (rs->state[r] == RUNNING && (rs->waits[r] || gcsh_checker_waiting(&c->checker, r)))
            return 1;
    return 0;
}

/* Where the first duration of a where-text is ("for 2.0 s", "the others,
 * 2.0 s)"): the number's start and end, or 0 when it has none. */
static int duration_in(const char *s, size_t *from, size_t *to)
{
    for (const char *p = s; (p = strstr(p, " s")) != NULL; p++) {
        const char *q = p;
        while (q > s && (isdigit((unsigned char)q[-1]) || q[-1] == '.'))
            q--;
        if (q == p || q - s < 2 || !(q[-1] == ' ' && (q[-2] == 'r' || q[-2] == ',')))
            continue;
        *from = (size_t)(q - s);
        *to = (size_t)(p - s);
        return 1;
    }
    return 0;
}

/* Ranks that wait in the same place for the same thing fold in a hang
 * report even when they came to it at different times: their texts get
 * the span of their durations ("for 2.0-2.1 s"), each rank's inside it. */
static void fold_durations(char (*text)[WHERE_LEN], int n)
{
    size_t *from = calloc((size_t)n * 2 + 1, sizeof *from), *to = from ? from + n : NULL;
    int *same = calloc((size_t)n + 1, sizeof *same);
    char *seen = calloc((size_t)n + 1, 1);
    if (!from || !same || !seen)
        n = 0; /* then each rank's own time, unfolded */
    for (int i = 0; i < n; i++)
        if (!duration_in(text[i], &from[i], &to[i]))
            seen[i] = 1;
    for (int i = 0; i < n; i++) {
        if (seen[i])
            continue;
        double lo = atof(text[i] + from[i]), hi = lo;
        int k = 0;
        for (int j = i; j < n; j++)
            if (!seen[j] && from[j] == from[i] && strncmp(text[j], text[i], from[i]) == 0 &&
                strcmp(text[j] + to[j], text[i] + to[i]) == 0) {
                double d = atof(text[j] + from[j]);
                lo = d < lo ? d : lo;
                hi = d > hi ? d : hi;
                same[k++] = j;
                seen[j] = 1;
            }
        char span[48], tail[WHERE_LEN];
        if (hi - lo < 0.05)
            snprintf(span, sizeof span, "%.1f", lo);
        else
            snprintf(span, sizeof span, "%.1f-%.1f", lo, hi);
        for (int m = 0; m < k; m++) {
            int j = same[m];
            snprintf(tail, sizeof tail, "%s", text[j] + to[j]);
            snprintf(text[j] + from[j], WHERE_LEN - from[j], "%s%s", span, tail);
        }
    }
    free(from);
    free(same);
    free(seen);
}

/* The hang report: one line (ending with `then`), then where the running
 * ranks are, folded, and their process ids. */
static void say_where(gcsh_coord *c, run_state *rs, double now, const char *then)
{
    char done[1024], running[1024];
    flush_output(c, rs, 0);
    ranks_where(c, rs, DONE, done, sizeof done);
    ranks_where(c, rs, RUNNING, running, sizeof running);
    char seed[48] = ""; /* the run to make again: gcsh --seed N */
    if (c->ctx->seeded)
        snprintf(seed, sizeof seed, " (--seed %lld)", c->ctx->seed);
    gcsh_coord_report(c, "gcsh: %.1f s%s: done [%s], still running [%s]; %s", now - rs->start,
                      seed, done, running, then);
    int *ranks = malloc((size_t)c->size * sizeof *ranks), n = 0;
    char (*text)[WHERE_LEN] = malloc((size_t)c->size * sizeof *text);
    const char **v = malloc((size_t)c->size * sizeof *v);
    for (int r = 0; r < c->size; r++) {
        if (rs->state[r] != RUNNING)
            continue;
        if (gcsh_checker_waiting(&c->checker, r))
            gcsh_checker_where(&c->checker, r, now, text[n], WHERE_LEN);
        else
            snprintf(text[n], WHERE_LEN, "%s", rs->where[r][0] ? rs->where[r] : "(no answer)");
        v[n] = text[n];
        ranks[n++] = r;
    }
    fold_durations(text, n);
    gcsh_text t = {0};
    gcsh_text_append(&t, "gcsh:   ", 8);
    gcsh_fold_texts(&t, ranks, n, v, "\ngcsh:   ");
    if (n)
        gcsh_coord_report(c, "%s", t.s);
    gcsh_text_free(&t);
    say_pids(c, ranks, n);
    free(ranks);
    free(text);
    free(v);
}

static void report_progress(gcsh_coord *c, run_state *rs, double now)
{
    say_where(c, rs, now,
              c->abort_fd >= 0 ? "Ctrl-C interrupts, .abort aborts" : "Ctrl-C interrupts");
    EACH_LISTENER(c, l) /* the trace and flight files show where each rank is */
        if (l->hooks->hang)
            l->hooks->hang(l->arg, c);
}

/* The deadline passed while a command runs: the hang report, then the job
 * ends at once (die_now writes the flight recorder: every rank's last
 * calls, the stuck ones' included). */
static int command_verdict(const gcsh_coord *c, const run_state *rs);

/* ... with the worst of the deadline's status, the session's verdict so far
 * and the outcomes of the ranks that finished this command: a rank that
 * failed (or left with os.exit) before the deadline is never hidden by it
 * (--deadline-status 0 or 125 is for the hang, not for a failure). */
static _Noreturn void end_at_deadline(gcsh_coord *c, run_state *rs, double now)
{
    char why[128];
    snprintf(why, sizeof why, "the deadline (%g s) is over", c->deadline_s);
    say_where(c, rs, now, why);
    int code = gcsh_status_worst(c->deadline_status, c->verdict_so_far);
    die_now(c, rs, gcsh_status_worst(code, command_verdict(c, rs)), why, 1);
}

/* ---- interrupts and aborts ------------------------------------------------- */

static void send_interrupts(gcsh_coord *c, run_state *rs, int abort)
{
    char buf[1024], flag = INTERRUPT_ABORT;
    if (rs->interrupted_at == 0)
        rs->interrupted_at = gcsh_now_seconds();
    for (int r = 0; r < c->size; r++)
        if (rs->state[r] == RUNNING &&
            gcsh_msg_send(c->link->peer_ctl[r], MSG_INTERRUPT, c->seq, &flag, abort ? 1 : 0, NULL,
                          0) != 0)
            mark_lost(c, rs, r);
    gcsh_checker_clear(&c->checker); /* their waits end with the interrupt */
    rs->abort_all |= abort;
    flush_output(c, rs, 0);
    gcsh_coord_say(c, "\ngcsh: %s [%s]", abort ? "aborting" : "interrupting",
                   ranks_where(c, rs, RUNNING, buf, sizeof buf));
}

/* Lines typed at the terminal while a command runs (the terminal is in
 * line mode then, so they come whole): `.abort`, or lines typed ahead, which
 * are kept for the prompt. */
static void read_terminal(gcsh_coord *c, run_state *rs)
{
    char buf[4096];
    ssize_t n = read(c->abort_fd, buf, sizeof buf);
    if (n <= 0) {
        c->abort_fd = -1; /* end of input: the prompt will see it */
        return;
    }
    for (ssize_t i = 0; i < n;) {
        /* a line ends at a newline, or at a carriage return that came in
         * while readline had the terminal (repl.c) */
        char *nl = memchr(buf + i, '\n', (size_t)(n - i));
        char *cr = memchr(buf + i, '\r', (size_t)(n - i));
        if (cr && (!nl || cr < nl))
            nl = cr;
        size_t len = nl ? (size_t)(nl - (buf + i)) + 1 : (size_t)(n - i);
        const char *line = buf + i;
        size_t a = 0, b = len;
        while (a < b && isspace((unsigned char)line[a]))
            a++;
        while (b > a && isspace((unsigned char)line[b - 1]))
            b--;
        if (b - a == 6 && memcmp(line + a, ".abort", 6) == 0)
            send_interrupts(c, rs, 1);
        else
            gcsh_text_append(&c->typeahead, line, len);
        i += (ssize_t)len;
    }
}

/* Rank `from` aborted communicator id during the command: the ranks still
 * running stop an operation they are in on it, which would wait for `from`
 * forever (collcheck.h). */
static void abort_now(gcsh_coord *c, const run_state *rs, int from, uint64_t id)
{
    for (int r = 0; r < c->size; r++)
        if (r != from && rs->state[r] == RUNNING)
            gcsh_msg_send(c->link->peer_ctl[r], MSG_ABORT_NOW, (uint32_t)from, &id, sizeof id,
                          NULL, 0);
}

static int known_aborted(const gcsh_coord *c, uint64_t id)
{
    for (size_t i = 0; i < c->naborted; i++)
        if (c->aborted[i] == id)
            return 1;
    return 0;
}

/* Adds id to the communicators every rank aborts after the command; -1
 * when out of memory (then the others learn it from their own failure). */
static int add_aborted(gcsh_coord *c, uint64_t id)
{
    if (c->naborted == c->cap_aborted) {
        size_t cap = c->cap_aborted ? 2 * c->cap_aborted : 8;
        uint64_t *p = realloc(c->aborted, cap * sizeof *p);
        if (!p)
            return -1;
        c->aborted = p;
        c->cap_aborted = cap;
    }
    c->aborted[c->naborted++] = id;
    return 0;
}

static void note_aborted(gcsh_coord *c, const run_state *rs, int from, const char *data,
                         size_t len)
{
    for (size_t off = 0; off + sizeof(uint64_t) <= len; off += sizeof(uint64_t)) {
        uint64_t id;
        memcpy(&id, data + off, sizeof id);
        if (known_aborted(c, id))
            continue;
        abort_now(c, rs, from, id);
        if (add_aborted(c, id) != 0)
            return;
    }
}

/* Rank `from` will not join an operation (MSG_ABANDONED, .check off): the
 * first to say so is passed on to the ranks still running, which stop or
 * refuse that operation (collcheck.h: Abandons); every one is counted. */
static void take_abandon(gcsh_coord *c, const run_state *rs, int from, const char *data,
                         size_t len)
{
    gcsh_abandon_msg m;
    if (len < sizeof m)
        return;
    memcpy(&m, data, sizeof m);
    m.why[sizeof m.why - 1] = '\0';
    if (m.nmembers < 0 || (m.nmembers && m.nmembers != m.comm_size) ||
        len != sizeof m + (size_t)m.nmembers * sizeof(int32_t))
        return;
    struct gcsh_coord_abandon *e = NULL;
    for (int i = 0; i < c->nabandons && !e; i++) {
        const gcsh_abandon_msg *o = &c->abandons[i].m;
        if (o->comm == m.comm && o->seq == m.seq && (m.seq || o->comm_rank == m.comm_rank))
            e = &c->abandons[i];
    }
    if (!e) {
        for (int r = 0; r < c->size; r++)
            if (r != from && rs->state[r] == RUNNING)
                gcsh_msg_send(c->link->peer_ctl[r], MSG_ABANDON_NOW, (uint32_t)from, data, len,
                              NULL, 0);
        if (c->nabandons == GCSH_COORD_ABANDONS)
            return;
        e = &c->abandons[c->nabandons++];
        *e = (struct gcsh_coord_abandon){.m = m, .from = from};
        e->declared = calloc((size_t)c->size, 1);
        if (m.nmembers && (e->members = malloc((size_t)m.nmembers * sizeof(int32_t))))
            memcpy(e->members, data + sizeof m, (size_t)m.nmembers * sizeof(int32_t));
    }
    if (e->declared)
        e->declared[from] = 1;
}

/* Whether every member of e's communicator that ran this command said it
 * did not join e's operation (then nobody ran it: the communicator is in
 * step). */
static int nobody_joined(const gcsh_coord *c, const run_state *rs,
                         const struct gcsh_coord_abandon *e)
{
    if (!e->declared)
        return 0;
    if (!e->members) { /* unknown members: every one must have said so */
        int n = 0;
        for (int r = 0; r < c->size; r++)
            n += e->declared[r];
        return n == e->m.comm_size;
    }
    for (int i = 0; i < e->m.nmembers; i++) {
        int r = e->members[i];
        if (r >= 0 && r < c->size && rs->targets[r] && !e->declared[r])
            return 0;
    }
    return 1;
}

static int aborted_known(const gcsh_coord *c, uint64_t id)
{
    for (size_t i = 0; i < c->naborted; i++)
        if (c->aborted[i] == id)
            return 1;
    return 0;
}

/* After the command: a collective that some member abandoned while another
 * may have run it leaves its communicator out of step: it is aborted on
 * every rank (spread_aborts). */
static void settle_abandons(gcsh_coord *c, const run_state *rs)
{
    for (int i = 0; i < c->nabandons; i++) {
        struct gcsh_coord_abandon *e = &c->abandons[i];
        if (e->m.seq && !nobody_joined(c, rs, e) && !aborted_known(c, e->m.comm)) {
            note_aborted(c, rs, e->from, (const char *)&e->m.comm, sizeof e->m.comm);
            char name[32];
            gcsh_comm_check named = {.id = e->m.comm};
            gcsh_coord_say(c, "gcsh: %s: rank %d did not join collective #%llu, which others may "
                              "have run:\ngcsh: .check is off: it is aborted on every rank; "
                              "comm.world() makes a fresh one",
                           gcsh_comm_name(&named, name, sizeof name), e->from,
                           (unsigned long long)e->m.seq);
        }
        free(e->declared);
        free(e->members);
    }
    c->nabandons = 0;
}

/* After the command: a communicator whose members the command left at
 * different counts of collectives (tally.h) joins the aborted ones, and
 * the user is told why. */
static void settle_counts(gcsh_coord *c)
{
    for (size_t i = 0; i < c->counts.n; i++) {
        const gcsh_tally_entry *e = &c->counts.e[i];
        if (!e->differs || known_aborted(c, e->id))
            continue;
        char name[32];
        gcsh_comm_check named = {.id = e->id};
        gcsh_coord_say(c, "gcsh: %s: its ranks were left at different collectives ([%d] %llu "
                          "made, [%d] %llu):\ngcsh: it is aborted on every rank; comm.world() "
                          "makes a fresh one",
                       gcsh_comm_name(&named, name, sizeof name), e->rank,
                       (unsigned long long)e->seq, e->other_rank,
                       (unsigned long long)e->other_seq);
        if (add_aborted(c, e->id) != 0)
            break;
    }
    gcsh_tally_reset(&c->counts);
}

/* After the command: every rank (targeted or not) aborts what some rank
 * aborted, or everything after .abort, before it runs anything else. */
static void spread_aborts(gcsh_coord *c, int all)
{
    if (!all && c->naborted == 0)
        return;
    for (int r = 0; r < c->size; r++)
        if (!c->lost[r])
            gcsh_msg_send(c->link->peer_cmd[r], MSG_ABORT_COMMS, all ? 1 : 0, c->aborted,
                          all ? 0 : c->naborted * sizeof *c->aborted, NULL, 0);
    c->naborted = 0;
}

/* ---- the wait --------------------------------------------------------------- */

static void on_message(gcsh_coord *c, run_state *rs, int r, const gcsh_msg *m)
{
    if (m->h.seq != c->seq)
        return; /* late output of an earlier chunk cannot happen; ignore noise */
    double now = gcsh_now_seconds();
    switch (m->h.type) {
    case MSG_OUT:
    case MSG_ERR:
        take_output(c, rs, r, m->h.type == MSG_ERR ? GCSH_STDERR : GCSH_STDOUT, m->data, m->h.len);
        if (rs->first_pending == 0)
            rs->first_pending = now;
        break;
    case MSG_FAILURE:
        take_failure(c, rs, r, m->data, m->h.len);
        break;
    case MSG_DONE:
        if (m->h.len < sizeof(uint32_t))
            break;
        memcpy(&rs->status[r], m->data, sizeof(uint32_t));
        if (rs->status[r] & CHUNK_VARIES) {
            if (c->tap)
                c->tap->varies = 1;
            rs->status[r] &= ~CHUNK_VARIES;
        }
        rs->error_status[r] = (rs->status[r] & CHUNK_CANNOT_TEST) ? GCSH_EXIT_SKIP
                              : (rs->status[r] & CHUNK_USAGE)     ? GCSH_EXIT_USAGE
                                                                  : 1;
        rs->check_error[r] = (rs->status[r] & CHUNK_CHECK_FAILED) != 0;
        rs->status[r] &= ~(CHUNK_CANNOT_TEST | CHUNK_USAGE | CHUNK_CHECK_FAILED);
        if (CHUNK_STATUS(rs->status[r]) == CHUNK_EXIT) {
            rs->exit_status[r] = CHUNK_EXIT_STATUS(rs->status[r]);
            rs->status[r] = CHUNK_EXIT;
            if (rs->exit_deadline == 0)
                rs->exit_deadline = now + EXIT_GRACE_S;
        }
        take_output(c, rs, r, GCSH_STDOUT, m->data + sizeof(uint32_t), m->h.len - sizeof(uint32_t));
        rs->state[r] = DONE;
        rs->running--;
        unask(rs, r);
        break;
    case MSG_FP:
        if (gcsh_checker_add(&c->checker, r, m->data, m->h.len, now) != 0) {
            uint32_t serial = 0;
            if (m->h.len >= sizeof serial)
                memcpy(&serial, m->data, sizeof serial);
            io_verdict(&(coord_run){c, rs}, r, serial, 0, "malformed fingerprint");
        }
        break;
    case MSG_WHERE: {
        uint32_t waits = 0;
        if (m->h.len >= sizeof waits)
            memcpy(&waits, m->data, sizeof waits);
        rs->waits[r] = waits != 0;
        snprintf(rs->where[r], WHERE_LEN, "%.*s", (int)(m->h.len - sizeof waits),
                 m->h.len >= sizeof waits ? m->data + sizeof waits : "");
        unask(rs, r);
        break;
    }
    case MSG_ABORTED:
        note_aborted(c, rs, r, m->data, m->h.len);
        break;
    case MSG_COUNTS:
        gcsh_tally_add(&c->counts, r, m->data, m->h.len);
        break;
    case MSG_ABANDONED:
        take_abandon(c, rs, r, m->data, m->h.len);
        break;
    case MSG_UNCHECKED: { /* (a malformed one is dropped) */
        coord_run cr = {c, rs};
        gcsh_checker_io io = checker_io(&cr);
        gcsh_checker_unchecked(&c->checker, &io, r, m->data, m->h.len, now);
        break;
    }
    case MSG_TAPE:
        if (c->tap)
            gcsh_text_append(&c->tap->tape[r], m->data, m->h.len);
        break;
    case MSG_DEADLINE: /* gcsh.deadline(s) in the chunk: as --deadline s */
        if (m->h.len == sizeof(double)) {
            double v;
            memcpy(&v, m->data, sizeof v);
            gcsh_coord_set_deadline(c, v);
        }
        break;
    case MSG_TIMEOUT: /* gcsh.timeout(s) in the chunk: as .timeout s */
        if (m->h.len == sizeof(double)) {
            double v;
            memcpy(&v, m->data, sizeof v);
            c->timeout = c->limit = v;
            rs->next_report = v > 0 ? now + v : 0;
        }
        break;
    case MSG_PROGRESS:
        if (m->h.len == sizeof(gcsh_progress_msg))
            gcsh_progress_report(&c->progress, r, (const gcsh_progress_msg *)(void *)m->data);
        break;
    case MSG_TRACE_DATA:
    case MSG_FLIGHT_DATA:
        EACH_LISTENER(c, l)
            if (l->hooks->message)
                l->hooks->message(l->arg, c, r, m);
        break;
    case MSG_FATAL:
        flush_output(c, rs, 0);
        fputs(m->data, c->err);
        die_now(c, rs, GCSH_EXIT_FATAL, "a device fault cannot be recovered from", 1);
    }
}

static double earliest(double a, double b)
{
    return a == 0 ? b : b == 0 ? a : a < b ? a : b;
}

/* Members still on the check board pass or escalate without a message:
 * look again this often while a group waits for them. */
#define BOARD_POLL_S 2e-4

static int poll_timeout_ms(gcsh_coord *c, run_state *rs, double now)
{
    coord_run cr = {c, rs};
    gcsh_checker_io io = checker_io(&cr);
    double next = 0;
    if (gcsh_checker_expects_board(&c->checker, &io))
        next = now + BOARD_POLL_S;
    if (rs->first_pending > 0)
        next = rs->first_pending + FOLD_WINDOW_S;
    if (c->timeout > 0)
        next = earliest(next, rs->next_report);
    next = earliest(next, rs->probe_until);
    next = earliest(next, rs->exit_deadline);
    next = earliest(next, c->deadline);
    if (rs->interrupted_at > 0 && !rs->unanswered_said)
        next = earliest(next, rs->interrupted_at + INTERRUPT_ANSWER_S);
    if (rs->term_at > 0)
        next = earliest(next, rs->term_at + TERM_GRACE_S);
    next = earliest(next, gcsh_progress_due(&c->progress));
    next = earliest(next, gcsh_checker_deadline(&c->checker, c->limit));
    next = earliest(next, gcsh_checker_next_ask(&c->checker, &io));
    if (next == 0)
        return 3600 * 1000;
    return next <= now ? 0 : (int)((next - now) * 1000) + 1;
}

/* The progress line: the ranks' reports, or while some targeted ranks are
 * done and others still run, which ones the command waits for. */
static void show_progress(gcsh_coord *c, run_state *rs, double now)
{
    if (!c->progress.tty || c->fold.open) /* a rank's unfinished line is there */
        return;
    int done = 0, targeted = 0;
    for (int r = 0; r < c->size; r++) {
        targeted += rs->targets[r] && !c->lost[r];
        done += rs->state[r] == DONE;
    }
    char text[160] = "";
    if (done > 0 && rs->running > 0) {
        char running[100];
        snprintf(text, sizeof text, "waiting for [%s]: %d of %d ranks done",
                 ranks_where(c, rs, RUNNING, running, sizeof running), done, targeted);
    }
    gcsh_progress_waiting(&c->progress, text);
    gcsh_progress_draw(&c->progress, now);
}

/* Asks the ranks that run unchecked, and that a waiting check waits for,
 * which operation they are in (collcheck_coord.h). */
static void ask_unchecked(gcsh_coord *c, run_state *rs, const gcsh_checker_io *io, double now)
{
    int *ranks = malloc((size_t)c->size * sizeof *ranks);
    int n = ranks ? gcsh_checker_asks(&c->checker, io, now, ranks) : 0;
    for (int i = 0; i < n; i++)
        if (rs->state[ranks[i]] == RUNNING)
            gcsh_msg_send(c->link->peer_ctl[ranks[i]], MSG_ASK_OP, c->seq, NULL, 0, NULL, 0);
    free(ranks);
}

/* Output, reports, checks and probes that are due. */
static void on_time(gcsh_coord *c, run_state *rs, double now)
{
    coord_run cr = {c, rs};
    gcsh_checker_io io = checker_io(&cr);
    if (rs->first_pending > 0 && now >= rs->first_pending + FOLD_WINDOW_S) {
        flush_output(c, rs, 1);
        rs->first_pending = gcsh_fold_pending(&c->fold) ? now : 0;
    }
    if (gcsh_fold_bytes(&c->fold) > FOLD_MAX_PENDING)
        flush_output(c, rs, 0);
    gcsh_checker_resolve(&c->checker, &io, now, c->limit, 0);
    if (c->timeout > 0 && now >= rs->next_report) {
        rs->report_due = 1;
        rs->next_report = now + c->timeout;
        start_probe(c, rs, now);
    }
    if (gcsh_checker_needs_probe(&c->checker, &io, now, c->limit))
        start_probe(c, rs, now);
    ask_unchecked(c, rs, &io, now);
    if (c->deadline > 0 && now >= c->deadline && !rs->deadline_due) {
        rs->deadline_due = 1; /* where every rank is, first */
        start_probe(c, rs, now);
    }
    show_progress(c, rs, now);
    if (rs->probe_until > 0 && (rs->nasked == 0 || now >= rs->probe_until)) {
        if (rs->deadline_due)
            end_at_deadline(c, rs, now);
        /* before verdicts change who waits */
        if (rs->report_due && rs->running > 0 && someone_waits(c, rs))
            report_progress(c, rs, now);
        gcsh_checker_resolve(&c->checker, &io, now, c->limit, 1);
        rs->report_due = 0;
        rs->probe_until = 0;
        for (int r = 0; r < c->size; r++)
            unask(rs, r);
    }
}

/* The ranks still running an interrupted command do not answer: the job
 * ends now, naming them (their watchers are told to exit; mpirun ends a
 * process that cannot, such as a stopped one, when rank 0 leaves). */
static _Noreturn void end_unanswered(gcsh_coord *c, run_state *rs, int code, const char *why)
{
    char ranks[1024];
    flush_output(c, rs, 0);
    gcsh_coord_say(c, "gcsh: [%s] never answered the interrupt (%.1f s)",
                   ranks_where(c, rs, RUNNING, ranks, sizeof ranks),
                   gcsh_now_seconds() - rs->interrupted_at);
    die_now(c, rs, code, why, 0);
}

static void interrupt_running(gcsh_coord *c, run_state *rs)
{
    if (rs->running > 0)
        send_interrupts(c, rs, 0);
}

/* Signals to rank 0 while a command runs: SIGINT interrupts it (Ctrl-C, or
 * gcsh -n's launcher passing on a SIGINT from outside); SIGTERM and SIGHUP
 * interrupt it too and end the session once it is over.  While a rank does
 * not answer an interrupt, a second Ctrl-C or SIGTERM ends the job at once. */
static void on_signals(gcsh_coord *c, run_state *rs, int mask)
{
    int job_control = 0;
    EACH_LISTENER(c, l)
        job_control |= l->hooks->job_control != NULL;
    if ((mask & (GCSH_SIGMASK_TSTP | GCSH_SIGMASK_CONT)) && job_control) {
        double stopped = gcsh_now_seconds();
        flush_output(c, rs, 0);
        EACH_LISTENER(c, l)
            if (l->hooks->job_control)
                l->hooks->job_control(l->arg, mask);
        double was = gcsh_now_seconds() - stopped; /* time stopped is no hang */
        rs->next_report += was;
        if (rs->interrupted_at > 0)
            rs->interrupted_at += was;
    }
    double now = gcsh_now_seconds();
    int unanswered = rs->running > 0 && rs->interrupted_at > 0 &&
                     now - rs->interrupted_at >= INTERRUPT_ANSWER_S;
    if (mask & GCSH_SIGMASK_TERM) {
        if (rs->term_at > 0 && rs->running > 0)
            end_unanswered(c, rs, GCSH_EXIT_TERM, "a second SIGTERM ends the job");
        if (unanswered)
            end_unanswered(c, rs, GCSH_EXIT_TERM, "SIGTERM ends the job");
        if (c->end_status < 0) {
            c->end_status = GCSH_EXIT_TERM;
            flush_output(c, rs, 0);
            gcsh_coord_say(c, "gcsh: terminated (SIGTERM or SIGHUP): every rank stops after "
                              "this command");
        }
        rs->term_at = now;
        interrupt_running(c, rs);
    } else if (mask & GCSH_SIGMASK_INT) {
        if (unanswered)
            end_unanswered(c, rs, GCSH_EXIT_INT, "a second Ctrl-C ends the job");
        if (c->int_ends && (mask & GCSH_SIGMASK_KEYBOARD) && c->end_status < 0)
            c->end_status = GCSH_EXIT_INT;
        interrupt_running(c, rs);
    }
}

/* Ranks that do not answer an interrupt: said once, then ended when the
 * SIGTERM's grace is over. */
static void check_unanswered(gcsh_coord *c, run_state *rs, double now)
{
    if (rs->running == 0 || rs->interrupted_at == 0)
        return;
    if (rs->term_at > 0 && now >= rs->term_at + TERM_GRACE_S)
        end_unanswered(c, rs, GCSH_EXIT_TERM, "SIGTERM's grace is over: the job ends");
    if (!rs->unanswered_said && now >= rs->interrupted_at + INTERRUPT_ANSWER_S) {
        char ranks[1024];
        rs->unanswered_said = 1;
        flush_output(c, rs, 0);
        gcsh_coord_say(c, "gcsh: [%s] has not answered for %.1f s; %s again ends the job",
                       ranks_where(c, rs, RUNNING, ranks, sizeof ranks),
                       now - rs->interrupted_at, rs->term_at > 0 ? "SIGTERM" : "Ctrl-C");
    }
}

static void wait_for_ranks(gcsh_coord *c, run_state *rs)
{
    struct pollfd *p = malloc((size_t)(c->size + 2) * sizeof *p);
    int *who = malloc((size_t)(c->size + 2) * sizeof *who);
    gcsh_msg m = {0};
    double spin_s = gcsh_spin_us() * 1e-6;
    while (rs->running > 0) {
        int n = 0, term = -1;
        p[n++] = (struct pollfd){.fd = c->sigfd, .events = POLLIN};
        if (c->abort_fd >= 0) {
            term = n;
            p[n++] = (struct pollfd){.fd = c->abort_fd, .events = POLLIN};
        }
        int first_rank = n;
        /* every rank, running or not: one that dies while it does not run
         * this command is reported as soon as one that does */
        for (int r = 0; r < c->size; r++)
            if (!c->lost[r]) {
                who[n] = r;
                p[n++] = (struct pollfd){.fd = c->link->peer_cmd[r], .events = POLLIN};
            }
        /* spin briefly first: short chunks finish within microseconds */
        int ready = poll(p, (nfds_t)n, 0);
        while (ready == 0 && gcsh_now_seconds() - rs->start < spin_s) {
            sched_yield();
            ready = poll(p, (nfds_t)n, 0);
        }
        if (ready == 0)
            poll(p, (nfds_t)n, poll_timeout_ms(c, rs, gcsh_now_seconds()));
        /* the ranks first: a rank that died is what a SIGTERM from mpirun
         * that comes with it is about */
        for (int i = first_rank; i < n; i++) {
            if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            if (gcsh_msg_recv(p[i].fd, &m) == 0)
                on_message(c, rs, who[i], &m);
            else
                mark_lost(c, rs, who[i]);
        }
        if (term >= 0 && (p[term].revents & (POLLIN | POLLHUP)))
            read_terminal(c, rs);
        if (p[0].revents & POLLIN)
            on_signals(c, rs, gcsh_sig_drain(c->sigfd));
        on_time(c, rs, gcsh_now_seconds());
        check_unanswered(c, rs, gcsh_now_seconds());
        if (rs->exit_deadline > 0 && gcsh_now_seconds() >= rs->exit_deadline)
            break; /* some rank left with os.exit; end_by_exit says the rest */
    }
    gcsh_msg_free(&m);
    free(p);
    free(who);
}

static void send_chunk(gcsh_coord *c, run_state *rs, const char *targets, uint32_t flags,
                       const char *name, const char *src, size_t len)
{
    size_t namelen = strlen(name);
    size_t hlen = 2 * sizeof(uint32_t) + namelen;
    char *head = malloc(hlen);
    uint32_t hdr[2] = {flags, (uint32_t)namelen};
    memcpy(head, hdr, sizeof hdr);
    memcpy(head + sizeof hdr, name, namelen);
    for (int r = 0; r < c->size; r++) {
        if (!targets[r] || c->lost[r])
            continue;
        if (gcsh_msg_send(c->link->peer_cmd[r], MSG_CHUNK, c->seq, head, hlen, src, len) != 0) {
            mark_lost(c, rs, r);
            continue;
        }
        rs->state[r] = RUNNING;
        rs->running++;
    }
    free(head);
}

static void say_interrupted(gcsh_coord *c, const run_state *rs)
{
    char buf[1024];
    gcsh_coord_say(c, "gcsh: %s [%s]", rs->abort_all ? "aborted" : "interrupted",
                   gcsh_format_ranks_where(c->size, in_state,
                                           &(state_want){rs, DONE, CHUNK_INTERRUPTED}, buf,
                                           sizeof buf, NULL));
}

/* Whether rank r's error is the consequence of other ranks' os.exit: a
 * collective it waited in failed because they left by os.exit, and the
 * error the rank ended with is that check's failure (CHUNK_CHECK_FAILED:
 * not one of its own raised after catching it). */
static int error_caused_by_exit(const run_state *rs, int r)
{
    return rs->status[r] == CHUNK_ERROR && rs->error_status[r] == 1 && rs->check_error[r] &&
           rs->exit_caused[r] >= 0;
}

/* Rank r's outcome of the command, as an exit status (README "Exit
 * statuses"): 0 done, its os.exit status, its error's (1, 125 or 128:
 * rank/verdict.h), 1 an interrupt.  An error caused by other ranks'
 * os.exit (error_caused_by_exit) takes their status when it is a skip
 * (125): one rank's repro.skip while the others wait in a collective is
 * the job's skip, while a real failure of any rank still counts; other
 * exits that leave ranks waiting (os.exit(0) among them) make it 1. */
static int rank_verdict(const run_state *rs, int r)
{
    if (rs->status[r] == CHUNK_OK)
        return 0;
    if (rs->status[r] == CHUNK_EXIT)
        return rs->exit_status[r];
    if (error_caused_by_exit(rs, r) && rs->exit_caused[r] == GCSH_EXIT_SKIP)
        return GCSH_EXIT_SKIP;
    return rs->status[r] == CHUNK_ERROR ? rs->error_status[r] : 1;
}

/* The command's verdict: the worst outcome of the ranks that are done
 * (gcsh_status_worst); -1 when none is. */
static int command_verdict(const gcsh_coord *c, const run_state *rs)
{
    int v = -1;
    for (int r = 0; r < c->size; r++)
        if (rs->state[r] == DONE)
            v = gcsh_status_worst(v, rank_verdict(rs, r));
    return v;
}

/* After a command in which some rank called os.exit: the status the session
 * ends with (the caller ends it), the worst of every rank's outcome, so that
 * no rank's os.exit hides another's failure.  Said, unless every rank called
 * os.exit with one status, as a script's last line does; ranks still
 * running after the grace period are not waited for: the session ends at
 * once, and what they would have done is not known, so it is no success:
 * they count as cut short by the exit, a skip after a skip (repro.skip),
 * else 1 (as a rank left waiting by another's os.exit(0) does). */
static int end_by_exit(gcsh_coord *c, run_state *rs)
{
    int *ranks = malloc((size_t)c->size * sizeof *ranks), n = 0, same = 1;
    int code = command_verdict(c, rs);
    char (*text)[32] = malloc((size_t)c->size * sizeof *text);
    const char **v = malloc((size_t)c->size * sizeof *v);
    for (int r = 0; r < c->size; r++) {
        if (rs->state[r] != DONE || rs->status[r] == CHUNK_OK)
            continue; /* those that finished are not what ends the session */
        int st = rank_verdict(rs, r);
        same &= rs->status[r] == CHUNK_EXIT && (n == 0 || st == rank_verdict(rs, ranks[0]));
        if (rs->status[r] == CHUNK_EXIT)
            snprintf(text[n], sizeof text[n], "os.exit(%d)", st);
        else
            snprintf(text[n], sizeof text[n], "%s (%d)",
                     error_caused_by_exit(rs, r) ? "failed by that exit"
                     : st == GCSH_EXIT_SKIP      ? "cannot test"
                     : st == GCSH_EXIT_USAGE     ? "usage error"
                                                 : "failed", st);
        v[n] = text[n];
        ranks[n++] = r;
    }
    if (n > 0) {
        gcsh_text t = {0};
        gcsh_fold_texts(&t, ranks, n, v, ", ");
        char running[1024], why[1400];
        if (rs->running > 0) {
            int cut = code == GCSH_EXIT_SKIP ? GCSH_EXIT_SKIP : 1;
            code = gcsh_status_worst(code, cut);
            snprintf(why, sizeof why, "%s while [%s] still ran (cut short: %d)", t.s,
                     ranks_where(c, rs, RUNNING, running, sizeof running), cut);
            die_now(c, rs, code, why, 0);
        }
        if (n < c->size || !same)
            gcsh_coord_say(c, "gcsh: %s: the session ends; every rank exits with status %d%s",
                           t.s, code, same ? "" : ", the worst");
        gcsh_text_free(&t);
    }
    free(ranks);
    free(text);
    free(v);
    return code;
}

void gcsh_coord_run(gcsh_coord *c, const char *targets, uint32_t flags, const char *name,
                    const char *src, size_t len, gcsh_run_result *res)
{
    run_state rs = {.targets = targets};
    rs.state = calloc((size_t)c->size, 1);
    rs.last_out = calloc((size_t)c->size, sizeof *rs.last_out);
    rs.status = calloc((size_t)c->size, sizeof *rs.status);
    rs.where = calloc((size_t)c->size, sizeof *rs.where);
    rs.waits = calloc((size_t)c->size, 1);
    rs.asked = calloc((size_t)c->size, 1);
    rs.exit_status = calloc((size_t)c->size, sizeof *rs.exit_status);
    rs.error_status = calloc((size_t)c->size, sizeof *rs.error_status);
    rs.check_error = calloc((size_t)c->size, 1);
    rs.exit_caused = malloc((size_t)c->size * sizeof *rs.exit_caused);
    for (int r = 0; r < c->size; r++)
        rs.exit_caused[r] = -1;
    rs.start = gcsh_now_seconds();
    rs.next_report = rs.start + c->timeout;
    c->seq++;
    gcsh_fold_begin(&c->fold);
    gcsh_progress_begin(&c->progress, rs.start);
    if (c->progress.tty)
        flags |= CHUNK_PROGRESS;
    if (c->first_failure)
        flags |= CHUNK_FIRST_FAILURE;
    send_chunk(c, &rs, targets, flags, name, src, len);
    *res = (gcsh_run_result){.ran = rs.running};
    int exited = 0;
    wait_for_ranks(c, &rs);
    gcsh_progress_end(&c->progress);
    gcsh_checker_clear(&c->checker);
    flush_output(c, &rs, 0);
    for (int r = 0; r < c->size; r++) {
        if (rs.state[r] != DONE)
            continue;
        res->failed += rs.status[r] != CHUNK_OK && rs.status[r] != CHUNK_EXIT;
        res->interrupted += rs.status[r] == CHUNK_INTERRUPTED;

        exited += rs.status[r] == CHUNK_EXIT;
        res->lost += c->lost[r] && targets[r];
    }
    fill_tap(c, &rs);
    if (res->interrupted || rs.abort_all) {
        say_interrupted(c, &rs);
        EACH_LISTENER(c, l)
            if (l->hooks->interrupted)
                l->hooks->interrupted(l->arg, c, rs.abort_all);
    }
    if (rs.abort_all)
        gcsh_coord_say(c, "gcsh: every communicator is aborted; comm.world() makes a fresh one");
    settle_abandons(c, &rs);
    settle_counts(c);
    spread_aborts(c, rs.abort_all);
    EACH_LISTENER(c, l)
        if (rs.abort_all && l->hooks->aborted)
            l->hooks->aborted(l->arg, c);
    res->verdict = command_verdict(c, &rs);
    res->exit_code = exited ? end_by_exit(c, &rs) : -1;
    res->aborted = rs.abort_all;
    res->seconds = gcsh_now_seconds() - rs.start;
    free(rs.state);
    free(rs.last_out);
    free(rs.status);
    free(rs.where);
    free(rs.waits);
    free(rs.asked);
    free(rs.exit_status);
    free(rs.exit_caused);
    free(rs.check_error);
    free(rs.error_status);
}

void gcsh_coord_play_tape(gcsh_coord *c, int r, const double *v, size_t n)
{
    if (!c->lost[r])
        gcsh_msg_send(c->link->peer_cmd[r], MSG_TAPE, c->seq, v, n * sizeof *v, NULL, 0);
}

int gcsh_coord_tell(gcsh_coord *c, uint32_t type, int control, const char *only, char *sent)
{
    int n = 0;
    for (int r = 0; r < c->size; r++) {
        int ok = !c->lost[r] && (!only || only[r]) &&
                 gcsh_msg_send(control ? c->link->peer_ctl[r] : c->link->peer_cmd[r], type, c->seq,
                               NULL, 0, NULL, 0) == 0;
        if (sent)
            sent[r] = (char)ok;
        n += ok;
    }
    return n;
}

/* The live ranks that have not answered, each one's command channel in
 * p[k] and its rank in who[k]; returns k. */
static int unanswered(const gcsh_coord *c, const char *answered, struct pollfd *p, int *who)
{
    int k = 0;
    for (int r = 0; r < c->size; r++)
        if (!c->lost[r] && !answered[r]) {
            who[k] = r;
            p[k++] = (struct pollfd){.fd = c->link->peer_cmd[r], .events = POLLIN};
        }
    return k;
}

void gcsh_coord_collect(gcsh_coord *c, uint32_t want, double wait, char *answered,
                        void (*take)(void *arg, int r, const gcsh_msg *m), void *arg)
{
    int n = c->size;
    struct pollfd *p = malloc((size_t)n * sizeof *p);
    int *who = malloc((size_t)n * sizeof *who);
    if (!p || !who)
        abort(); /* out of host memory on rank 0 */
    gcsh_msg m = {0};
    double until = gcsh_now_seconds() + wait;
    for (int k; (k = unanswered(c, answered, p, who)) > 0;) {
        double now = gcsh_now_seconds();
        if (now >= until)
            break;
        if (poll(p, (nfds_t)k, (int)((until - now) * 1000) + 1) <= 0)
            continue;
        for (int i = 0; i < k; i++) {
            if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            int r = who[i];
            if (gcsh_msg_recv(p[i].fd, &m) != 0 || m.h.type == want)
                answered[r] = 1;
            if (m.h.type == want)
                take(arg, r, &m);
            m.h.type = 0;
        }
    }
    gcsh_msg_free(&m);
    free(p);
    free(who);
}

void gcsh_coord_quit(gcsh_coord *c, int code)
{
    for (int r = 0; r < c->size; r++) {
        if (c->lost[r])
            continue;
        gcsh_msg_send(c->link->peer_cmd[r], MSG_QUIT, (uint32_t)code, NULL, 0, NULL, 0);
        gcsh_msg_send(c->link->peer_ctl[r], MSG_QUIT, 0, NULL, 0, NULL, 0);
    }
}
