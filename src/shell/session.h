/* Rank 0's session: what the user targets (.ranks), what has failed, and
 * the one entry every source of lines runs through (gcsh_session_feed,
 * SQLite's process_input() shape): the prompt (repl.c), a lesson's parts
 * (lesson.c), the command line's chunks (main.c) and a replay (replay.c).
 * A chunk is compiled once on rank 0 first; a syntax error is said once and
 * nothing runs.
 *
 * What rides on the session registers a gcsh_rider: the recorder
 * (record.c), a replay and a lesson.  The session calls down through those
 * tables and never names their files; they call the session. */
#ifndef GCSH_SESSION_H
#define GCSH_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "shell/coord.h"
#include "shell/term.h"

typedef struct gcsh_recorder gcsh_recorder; /* record.c */
typedef struct gcsh_replayer gcsh_replayer; /* replay.c */
typedef struct gcsh_lesson gcsh_lesson;     /* lesson.c */
typedef struct gcsh_session gcsh_session;
typedef struct gcsh_line_result gcsh_line_result;

/* A chunk the session runs: a typed line, a script with its arguments, -e,
 * a lesson's command. */
typedef struct gcsh_chunk {
    const char *name;         /* "@file.lua", "=stdin", "=(command line)" */
    const char *src;
    size_t len;
    const char *const *args;  /* a script's arguments, arg[1..nargs]; NULL: none */
    int nargs;
    uint32_t flags;           /* CHUNK_SCRIPT for a script (its arguments are `...`) */
} gcsh_chunk;

/* What a rider hears (any hook may be NULL).  Each finds its own state in
 * the session (s->rec, s->replay, s->lesson). */
typedef struct gcsh_rider {
    /* A recorded chunk ran (typed: k->flags has CHUNK_PRINT_RESULTS); res
     * is what it gave. */
    void (*ran)(gcsh_session *s, const gcsh_chunk *k, const gcsh_line_result *res);
    /* A dot-command line, before it runs. */
    void (*dot)(gcsh_session *s, const char *line);
    /* The session ends at once during s->running (coord's ending hook): the
     * status to end with. */
    int (*ending)(gcsh_session *s, int status, const char *why);
    /* The rider leaves (the session's end, .record off): 0, or -1 after
     * saying why. */
    int (*close)(gcsh_session *s);
} gcsh_rider;

struct gcsh_session {
    gcsh_coord *coord;
    gcsh_term *term;
    lua_State *syntax; /* a bare Lua state for compile checks on rank 0 */
    lua_State *L0;     /* rank 0's worker state: read for completion only */
    lua_State *fmt;    /* rank 0's formatter (.info, .help TOPIC), made on first use */
    char *targets;     /* per rank: 1 if lines run there (.ranks) */
    char *everyone;    /* per rank: 1 (what runs on every rank whatever .ranks says) */
    int time_on;       /* .time on */
    int warnings;      /* -W: warn() was on on every rank when the session
                          started (a recording notes it: record.h) */
    int check_on;      /* .check on: collectives are checked (collcheck.h) */
    int traceback_on;  /* .traceback on: errors typed at the prompt keep their traceback */
    int failures;      /* chunks that failed on some rank */
    int harness_failures; /* of those, chunks that could not be tested here: a
                          syntax error, a Lua file that does not load, a
                          missing module (CHUNK_CANNOT_TEST), a failed write */
    int worst;         /* the worst verdict of a failed chunk (gcsh_status_worst:
                          a usage error, 128, outranks 1); -1: none */
    int dot_misuse;    /* dot-commands that do not exist or refused their
                          argument (gcsh_session_dot_refused): -e '.x' exits
                          128, and a session counts each as a failure, 128 */
    int quit;          /* .quit was typed, or a chunk called os.exit */
    int exit_code;     /* os.exit(code) in a chunk: the session's status; else -1 */
    char syntax_msg[512]; /* the last line's syntax error */
    gcsh_text inbuf;   /* piped input read but not yet taken as lines */
    /* Keys that arrived with a line at the terminal (a paste), not read or
     * echoed yet: the prompt takes them first, as if typed (repl.c). */
    gcsh_text pasted;
    size_t pasted_at;  /* bytes of `pasted` taken so far */
    gcsh_text shown;   /* lines on the screen already, to run before those */
    int in_eof;        /* the pipe or file has ended */
    /* The dot-commands' runner (repl.c's table; line is cut into words). */
    void (*run_dot)(gcsh_session *s, char *line);
    /* The riders, each with its table, or NULL: .record / --record, the
     * replay in progress (--replay), the lesson .next goes through. */
    gcsh_recorder *rec;
    const gcsh_rider *rec_ops;
    gcsh_replayer *replay;
    const gcsh_rider *replay_ops;
    gcsh_lesson *lesson;
    const gcsh_rider *lesson_ops;
    /* The recorded chunk running now and what it gives, so that the
     * recorder keeps it if the session ends at once (coord's ending hook);
     * NULL between chunks. */
    const gcsh_chunk *running;
    gcsh_line_result *running_res;
};

/* What a chunk gave: its syntax error, or each rank's output and status. */
struct gcsh_line_result {
    int syntax_error;  /* the chunk did not compile: s->syntax_msg says why */
    gcsh_tap tap;      /* when it ran */
    int ran;
    int exit_code;     /* os.exit in it, or -1 */
    int verdict;       /* its ranks' worst outcome (gcsh_run_result), or -1 */
    int interrupted;   /* ranks that Ctrl-C (or .abort) stopped */
};

/* How gcsh_session_feed runs a chunk.  {0}: a chunk of the command line,
 * on the targeted ranks, printed and recorded. */
typedef struct gcsh_feed {
    /* As typed at the prompt: "=expr" and expressions print their values,
     * and a chunk that ends too soon waits for more (GCSH_FEED_INCOMPLETE). */
    int typed;
    /* Shown first as typed: "gcsh[0-3]> " before its first line,
     * "gcsh[0-3]>> " before the others (a lesson's command without the
     * newlines that make its errors name the file's lines, a replayed
     * line); NULL: nothing shown. */
    const char *echo;
    /* Per rank, 1 where it runs; NULL: the session's targets (.ranks). */
    const char *targets;
    /* Its output kept here (initialised here; the caller destroys it), not
     * printed, and no .time line; NULL: printed. */
    gcsh_tap *keep;
    /* Not recorded: a lesson's commands (the dot-command that ran them is). */
    int unrecorded;
} gcsh_feed;

#define GCSH_FEED_INCOMPLETE (-2)

void gcsh_session_init(gcsh_session *s, gcsh_coord *coord, gcsh_term *term, lua_State *L0);
/* Closes every rider, then frees the session. */
void gcsh_session_destroy(gcsh_session *s);

/* Runs chunk k as `how` says; res (or NULL) gets what it gave, released
 * with gcsh_line_result_free.  Returns the number of ranks where it failed,
 * -1 when it did not compile (said once), GCSH_FEED_INCOMPLETE when a typed
 * chunk ends too soon (nothing ran). */
int gcsh_session_feed(gcsh_session *s, const gcsh_chunk *k, const gcsh_feed *how,
                      gcsh_line_result *res);
void gcsh_line_result_free(gcsh_session *s, gcsh_line_result *res);

/* A quiet command on every rank between the session's commands (its
 * output kept in tap, not printed; not checked, not counted): a recorder's
 * and a replay's set-up. */
void gcsh_session_aside(gcsh_session *s, const char *src, gcsh_tap *tap);

/* Runs a dot-command line (".ranks 1") as typed; the riders hear it first. */
void gcsh_session_dot(gcsh_session *s, const char *line);

/* A dot-command that does not exist, or refused its argument (it said why):
 * a usage error (128) of the session, as a bad option on the command line
 * is, so a piped session or -e never runs on as if it had worked. */
void gcsh_session_dot_refused(gcsh_session *s);

/* The status the failures so far give (README "Exit statuses"): 0 none,
 * 1 some chunk failed on its own, GCSH_EXIT_SKIP when every failure was a
 * chunk that could not run here (git bisect's "cannot test"). */
int gcsh_session_status(const gcsh_session *s);

/* Ends .record / --record (record.h): 0, or -1 after saying why (nothing
 * was recorded, a write failed). */
int gcsh_session_record_off(gcsh_session *s);

/* Sets the targeted ranks from "0,2-3" or "all"; -1 (said) when bad. */
int gcsh_session_set_ranks(gcsh_session *s, const char *list);
/* The targeted ranks as "0,2-3". */
char *gcsh_session_targets(const gcsh_session *s, char *buf, size_t len);

/* The prompt for the targeted ranks: "gcsh[0-3]> " or "gcsh[0-3]>> ". */
void gcsh_session_prompt(gcsh_session *s, int continuation, char *buf, size_t len);
/* Shows text as typed after the prompt, a line at a time (an empty text:
 * the prompt alone). */
void gcsh_session_echo(gcsh_session *s, const char *text);

/* Whether the chunk, compiled as statements, ends too soon (an open
 * `do`, `function`, string...): the prompt would read another line. */
int gcsh_session_unfinished(gcsh_session *s, const char *chunk);

#endif
