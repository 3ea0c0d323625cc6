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
#include "wire/link.h"

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

typedef struct gcsh_coord {
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
    /* Called before the process ends the session at once (a lost rank, an
     * unrecoverable fault): gives the terminal back. */
    void (*on_exit)(void *arg);
    void *exit_arg;
    /* Ctrl-Z or SIGCONT while a command runs (GCSH_SIGMASK_TSTP, _CONT):
     * the session stops the job and takes the terminal back (repl.c). */
    void (*job_control)(void *arg, int mask);
    void *job_arg;
    /* Called as the session ends at once (a lost rank, a device fault,
     * os.exit while other ranks ran), once the tap holds what the command
     * gave: the recorder keeps the line that was running and how it ended,
     * a replay compares that ending.  Returns the status to end with. */
    int (*on_end)(void *arg, int status, const char *why);
    void *end_arg;
    gcsh_tap *tap;     /* set around a command whose output is kept, else NULL */
    struct gcsh_tracer *tracer; /* .trace / --trace on (trace_coord.h), else NULL */
    /* The flight recorder's file (trace_coord.h): --flight FILE, or NULL
     * for the default; the dump being written. */
    const char *flight_path;
    struct gcsh_flight_out *flight_out;
    /* The pid of gcsh -n's launcher, told the status when the session ends
     * at once (launch.h); 0 when there is none. */
    int launcher;
    /* -1 while the session goes on; else the status it must end with, as
     * soon as the command is over: os.exit on some rank, or SIGTERM. */
    int end_status;
} gcsh_coord;

typedef struct gcsh_run_result {
    int ran;           /* ranks the chunk was sent to */
    int aborted;       /* .abort tore the communicators down */
    int failed;        /* ranks that ended with an error (interrupts included) */
    int interrupted;
    int harness;       /* ranks whose error says the chunk cannot run here (a
                          missing module, an unknown API: CHUNK_HARNESS) */
    int lost;          /* ranks whose connection closed meanwhile */
    int exit_code;     /* os.exit on some rank: the session's status (the first
                          non-zero one by rank, else 0); -1 when none */
    double seconds;
} gcsh_run_result;

void gcsh_coord_init(gcsh_coord *c, gcsh_ctx *ctx, gcsh_link *link, int sigfd, FILE *out,
                     FILE *err, gcsh_tag_mode tag);
void gcsh_coord_destroy(gcsh_coord *c);

/* Runs src on every rank r with targets[r] != 0 and waits for all of them. */
void gcsh_coord_run(gcsh_coord *c, const char *targets, uint32_t flags, const char *name,
                    const char *src, size_t len, gcsh_run_result *res);

/* A tap for every rank (empty), and its release. */
void gcsh_tap_init(gcsh_tap *t, int size);
void gcsh_tap_destroy(gcsh_tap *t, int size);

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

/* Tells every rank to leave with exit code `code`. */
void gcsh_coord_quit(gcsh_coord *c, int code);

/* Prints a line of the shell's own (no rank prefix) and flushes: a
 * diagnostic, which starts with "gcsh: ", on stderr (coord->err), an answer
 * to a command ("ranks 0-1", a lesson's text) on stdout (coord->out). */
void gcsh_coord_say(gcsh_coord *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same on stderr whatever it starts with (a Lua syntax error). */
void gcsh_coord_error(gcsh_coord *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
