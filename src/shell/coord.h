/* Rank 0's coordinator: sends a chunk to the targeted ranks, prints their
 * output as it streams in (folded by rank range), reports ranks that run past
 * the timeout, forwards Ctrl-C as interrupts, and returns when all are done. */
#ifndef GCSH_COORD_H
#define GCSH_COORD_H

#include <stdint.h>
#include <stdio.h>

#include "shell/collcheck_coord.h"
#include "wire/out.h"
#include "shell/progress.h"
#include "shell/tally.h"
#include "wire/collcheck.h"
#include "wire/link.h"
#include "wire/msg.h"

/* What a command's ranks said, kept for the recorder and the replayer
 * (record.h): each rank's whole output, its status and whether its output
 * varies between runs (it read a clock or an address).  quiet: collected
 * only, not printed. */
typedef struct gcsh_tap {
    gcsh_text *out;    /* [size] */
    uint32_t *status;  /* [size]: CHUNK_OK, CHUNK_ERROR, ... (ranks that ran) */
    char *ran;         /* [size]: the command was sent to this rank */
    gcsh_text *tape;   /* [size]: what gcsh.wtime returned there, as doubles
                          (a chunk run with CHUNK_TAPE) */
    int varies;        /* some rank's output depends on timing or the machine */
    int quiet;
} gcsh_tap;

#define GCSH_COORD_LISTENERS 4
/* Abandoned operations one command keeps track of (beyond: passed on, not
 * settled at the end) */
#define GCSH_COORD_ABANDONS 8

typedef struct gcsh_coord gcsh_coord;

/* What a listener hears from the coordinator (any hook may be NULL; they
 * are called in the order the listeners came).  The session (session.c),
 * the terminal's owner (repl.c, main.c) and tracing with the flight
 * recorder (trace_coord.c) each register one table: the coordinator calls
 * down through them and never names their files. */
typedef struct gcsh_coord_hooks {
    /* A hang report was said: copies of what the ranks keep are asked for. */
    void (*hang)(void *arg, gcsh_coord *c);
    /* A message the coordinator does not read itself (MSG_TRACE_DATA,
     * MSG_FLIGHT_DATA) from rank r while a command runs. */
    void (*message)(void *arg, gcsh_coord *c, int r, const gcsh_msg *m);
    /* The command was interrupted (abort_all: by .abort), as said. */
    void (*interrupted)(void *arg, gcsh_coord *c, int abort_all);
    /* .abort's communicators are gone on every rank. */
    void (*aborted)(void *arg, gcsh_coord *c);
    /* The session ends at once (why; crash: a lost rank, a device fault),
     * before that is said: where every rank stopped is written. */
    void (*dying)(void *arg, gcsh_coord *c, const char *why, int crash);
    /* Then, once the tap holds what the command gave: the status to end
     * with, from the one given (the recorder keeps the line that was
     * running, a replay compares that ending). */
    int (*ending)(void *arg, int status, const char *why);
    /* Last, before the process ends: the terminal goes back. */
    void (*exit)(void *arg);
    /* Ctrl-Z or SIGCONT while a command runs (GCSH_SIGMASK_TSTP, _CONT):
     * the job stops, and takes the terminal back. */
    void (*job_control)(void *arg, int mask);
    /* gcsh_coord_destroy. */
    void (*destroy)(void *arg, gcsh_coord *c);
} gcsh_coord_hooks;

struct gcsh_coord {
    gcsh_ctx *ctx;
    gcsh_link *link;
    int size;
    uint32_t seq;      /* chunks sent so far */
    double timeout;    /* seconds between hang reports; 0 = never */
    /* Seconds a collective check waits for a member that is alive but has
     * not come before it fails, naming where that member is; 0: it keeps
     * waiting (reported every .timeout) until the member comes or Ctrl-C.
     * Set only by the user: --timeout, .timeout, gcsh.timeout(). */
    double limit;
    int sigfd;         /* self-pipe of SIGINT */
    FILE *out;         /* where program output and the shell's answers go */
    FILE *err;         /* where errors and the shell's diagnostics go */
    gcsh_fold fold;
    gcsh_progress progress; /* the progress line while a command runs */
    int first_failure;      /* --first-failure: the first failing rank's error in full,
                               the others' first line */
    char *lost;        /* per rank: its connection closed */
    char (*lost_why)[64]; /* per rank: how, as far as rank 0 knows ("killed by
                          signal 11: Segmentation fault") */
    gcsh_checker checker; /* fingerprints ranks wait on (collcheck_coord.h) */
    /* Rank 0's terminal while a command runs, for `.abort` (-1: none, as in
     * a piped session, whose next lines belong to later commands). */
    int abort_fd;
    /* Lines read from abort_fd that were not `.abort`: typed ahead for the
     * prompt, which takes them first (repl.c). */
    gcsh_text typeahead;
    /* Ids of communicators some rank aborted during the command: every rank
     * aborts them before the next one (collcheck.h). */
    uint64_t *aborted;
    size_t naborted, cap_aborted;
    /* Each touched communicator's count of collectives, as its members
     * reported at the command's end (MSG_COUNTS; tally.h). */
    gcsh_tally counts;
    /* Operations ranks abandoned during the command with .check off, and
     * which ranks said they did not join each (collcheck.h: Abandons). */
    struct gcsh_coord_abandon {
        gcsh_abandon_msg m;
        int from;         /* the first rank that abandoned it */
        char *declared;   /* per rank: it said it did not join */
        int32_t *members; /* the comm's world ranks, or NULL */
    } abandons[GCSH_COORD_ABANDONS];
    int nabandons;
    gcsh_tap *tap;     /* set around a command whose output is kept, else NULL */
    /* Who listens (gcsh_coord_listen): the session, the terminal's owner,
     * tracing and the flight recorder. */
    struct gcsh_coord_listener {
        const struct gcsh_coord_hooks *hooks;
        void *arg;
    } listeners[GCSH_COORD_LISTENERS];
    int nlisteners;
    /* The pid of gcsh -n's launcher, told the status when the session ends
     * at once (launch.h); 0 when there is none. */
    int launcher;
    /* -1 while the session goes on; else the status it must end with, as
     * soon as the command is over: os.exit on some rank, or SIGTERM. */
    int end_status;
    /* --deadline S, gcsh.deadline(S): when the whole job ends (on
     * gcsh_now_seconds' clock; 0: never), whatever runs then, with a hang
     * report, the flight recorder written and deadline_status (--deadline-
     * status, 1 by default: a hang is a failure). */
    double started;    /* when the session started: deadlines count from it */
    double deadline, deadline_s;
    int deadline_status;
    /* The session's verdict so far (0: nothing failed; the session sets it
     * after each command): a deadline's status never hides a failure that
     * came before it (the worst of the two ends the job). */
    int verdict_so_far;
    /* A Ctrl-C typed at the terminal (GCSH_SIGMASK_KEYBOARD) ends the
     * session (status 130) once the command it interrupts is over: a piped
     * session, which is a filter, not a prompt.  A SIGINT from a program
     * (timeout -s INT) interrupts the command and the session reads on. */
    int int_ends;
};

typedef struct gcsh_run_result {
    int ran;           /* ranks the chunk was sent to */
    int aborted;       /* .abort tore the communicators down */
    int failed;        /* ranks that ended with an error (interrupts included) */
    int interrupted;
    int lost;          /* ranks whose connection closed meanwhile */
    int verdict;       /* the worst of the ranks' outcomes as exit statuses
                          (gcsh_status_worst: 0, 1, 125, os.exit's); -1: none ran */
    int exit_code;     /* os.exit on some rank: the session's status (the
                          verdict, over every rank); -1 when none */
    double seconds;
} gcsh_run_result;

void gcsh_coord_init(gcsh_coord *c, gcsh_ctx *ctx, gcsh_link *link, int sigfd, FILE *out,
                     FILE *err, gcsh_tag_mode tag);
/* The job ends `seconds` after the session started (0: no deadline). */
void gcsh_coord_set_deadline(gcsh_coord *c, double seconds);
void gcsh_coord_destroy(gcsh_coord *c);

/* Runs src on every rank r with targets[r] != 0 and waits for all of them. */
void gcsh_coord_run(gcsh_coord *c, const char *targets, uint32_t flags, const char *name,
                    const char *src, size_t len, gcsh_run_result *res);

/* A tap for every rank (empty), and its release. */
void gcsh_tap_init(gcsh_tap *t, int size);
void gcsh_tap_destroy(gcsh_tap *t, int size);
/* "1,3": the ranks of the tap that ran and ended with status want (a
 * CHUNK_* status); returns how many. */
int gcsh_tap_ranks(const gcsh_tap *t, int size, uint32_t want, char *buf, size_t len);

/* poll(2) on p[0..n) for rank 0's waits between commands (the prompt):
 * every other rank's command channel is watched too, so a rank that dies
 * while nobody runs anything is reported at once ("rank N is gone", the
 * session ends with GCSH_EXIT_LOST; never returns then).  The ranks come
 * first: when mpirun, having seen a rank die, sends rank 0 a SIGTERM, the
 * report is the lost rank, not a stop.  Returns what poll returns for p. */
struct pollfd;
int gcsh_coord_idle_poll(gcsh_coord *c, struct pollfd *p, int n, int timeout_ms);
/* Between commands: rank r's gcsh.wtime returns these n values in turn in
 * the next command (a replay of a recorded line, record.h). */
void gcsh_coord_play_tape(gcsh_coord *c, int r, const double *v, size_t n);

/* Adds a listener (at most GCSH_COORD_LISTENERS). */
void gcsh_coord_listen(gcsh_coord *c, const gcsh_coord_hooks *hooks, void *arg);
/* The arg hooks were registered with, or NULL. */
void *gcsh_coord_listener(const gcsh_coord *c, const gcsh_coord_hooks *hooks);

/* Tells every live rank `type` (no payload) on its command channel, or
 * its control channel (control), or only the ranks with only[r]; sent[r]
 * (or NULL) says where it went.  Returns how many it reached. */
int gcsh_coord_tell(gcsh_coord *c, uint32_t type, int control, const char *only, char *sent);
/* Between commands, or as the session ends: reads each live rank's
 * command channel until its message of type want (others are dropped:
 * none come then), for at most wait seconds.  answered[r] is set for who
 * did (or whose channel closed); take gets each answer. */
void gcsh_coord_collect(gcsh_coord *c, uint32_t want, double wait, char *answered,
                        void (*take)(void *arg, int r, const gcsh_msg *m), void *arg);

/* Tells every rank to leave with exit code `code`. */
void gcsh_coord_quit(gcsh_coord *c, int code);

/* Prints a line of the shell's own (no rank prefix) and flushes: a
 * diagnostic, which starts with "gcsh: ", on stderr (coord->err), an answer
 * to a command ("ranks 0-1", a lesson's text) on stdout (coord->out). */
void gcsh_coord_say(gcsh_coord *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same on stderr whatever it starts with (a Lua syntax error). */
void gcsh_coord_error(gcsh_coord *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A diagnostic of a report (a hang report's lines): as gcsh_coord_say, each
 * line broken at spaces to fit GCSH_REPORT_WIDTH columns, a continuation
 * indented deeper than the report's own "gcsh:   " lines. */
#define GCSH_REPORT_WIDTH 80
#define GCSH_REPORT_INDENT "gcsh:     "
void gcsh_coord_report(gcsh_coord *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "gcsh: <head>:" and on the next line "gcsh:   <path>", the path broken
 * after a '/' where it does not fit (continued on GCSH_REPORT_INDENT lines,
 * nothing left out): a file a report names, whatever its length. */
void gcsh_coord_report_path(gcsh_coord *c, const char *head, const char *path);

#endif
