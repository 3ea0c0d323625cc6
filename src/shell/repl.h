/* Rank 0's session: compiles what the user typed (once, on rank 0), runs it
 * on the targeted ranks through the coordinator, and reads lines from the
 * terminal or a pipe, with dot-commands, history and completion. */
#ifndef GCSH_REPL_H
#define GCSH_REPL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "shell/coord.h"
#include "shell/term.h"

typedef struct gcsh_recorder gcsh_recorder;
typedef struct gcsh_replayer gcsh_replayer; /* replay.c */
typedef struct gcsh_lesson gcsh_lesson; /* lesson.c */
typedef struct gcsh_line_result gcsh_line_result;

/* A chunk the command line runs: a script with its arguments, or -e. */
typedef struct gcsh_chunk {
    const char *name;         /* "@file.lua", "=stdin", "=(command line)" */
    const char *src;
    size_t len;
    const char *const *args;  /* a script's arguments, arg[1..nargs]; NULL: none */
    int nargs;
    uint32_t flags;           /* CHUNK_SCRIPT for a script (its arguments are `...`) */
} gcsh_chunk;

typedef struct gcsh_session {
    gcsh_coord *coord;
    gcsh_term *term;
    lua_State *syntax; /* a bare Lua state for compile checks on rank 0 */
    lua_State *L0;     /* rank 0's worker state: read for completion only */
    lua_State *fmt;    /* rank 0's formatter (.info, .help TOPIC), made on first use */
    char *targets;     /* per rank: 1 if lines run there (.ranks) */
    int time_on;       /* .time on */
    int check_on;      /* .check on: collectives are checked (collcheck.h) */
    int failures;      /* chunks that failed on some rank */
    int harness_failures; /* of those, chunks that could not run here: a syntax
                          error, a missing module, an unknown API (CHUNK_HARNESS) */
    int quit;          /* .quit was typed, or a chunk called os.exit */
    int exit_code;     /* os.exit(code) in a chunk: the session's status; else -1 */
    gcsh_recorder *rec; /* .record / --record: where lines are recorded, or NULL */
    char syntax_msg[512]; /* the last line's syntax error */
    gcsh_text inbuf;   /* piped input read but not yet taken as lines */
    /* Keys that arrived with a line at the terminal (a paste), not read or
     * echoed yet: the prompt takes them first, as if typed (repl.c). */
    gcsh_text pasted;
    size_t pasted_at;  /* bytes of `pasted` taken so far */
    gcsh_text shown;   /* lines on the screen already, to run before those */
    int in_eof;        /* the pipe or file has ended */
    gcsh_lesson *lesson; /* the lesson .next goes through, or NULL */
    /* The recorded chunk running now and what it gives, so that the
     * recorder keeps it if the session ends at once (coord's on_end);
     * NULL between chunks. */
    const gcsh_chunk *running;
    gcsh_line_result *running_res;
    gcsh_replayer *replay; /* --replay: the replay in progress, else NULL */
} gcsh_session;

/* What one typed line gave: its syntax error, or each rank's output and
 * status (record.h). */
struct gcsh_line_result {
    int syntax_error;  /* the line did not compile: s->syntax_msg says why */
    gcsh_tap tap;      /* when it ran */
    int ran;
    int exit_code;     /* os.exit in it, or -1 */
};

void gcsh_session_init(gcsh_session *s, gcsh_coord *coord, gcsh_term *term, lua_State *L0);
void gcsh_session_destroy(gcsh_session *s);

/* Compiles src on rank 0 first; a syntax error is printed once and nothing
 * runs.  Returns the number of ranks where it failed (-1: syntax error). */
int gcsh_session_exec(gcsh_session *s, const char *name, const char *src, size_t len,
                      uint32_t flags);

/* The status the failures so far give (README "Exit statuses"): 0 none,
 * 1 some chunk failed on its own, GCSH_EXIT_SKIP when every failure was a
 * chunk that could not run here (git bisect's "cannot test"). */
int gcsh_session_status(const gcsh_session *s);

/* Runs a complete typed chunk as the prompt does ("=expr", values
 * printed); res (or NULL) gets what it gave, released with
 * gcsh_line_result_free.  Returns 0, or -1 when it did not compile. */
int gcsh_session_line(gcsh_session *s, const char *chunk, gcsh_line_result *res);
void gcsh_line_result_free(gcsh_session *s, gcsh_line_result *res);

/* Runs a script or -e chunk: compiled on rank 0 first, then on the
 * targeted ranks; recorded when .record is on.  res (or NULL) gets what it
 * gave, released with gcsh_line_result_free.  Returns the ranks where it
 * failed (-1: syntax error). */
int gcsh_session_run(gcsh_session *s, const gcsh_chunk *k, gcsh_line_result *res);

/* Ends .record / --record (record.h): 0, or -1 after saying why (nothing
 * was recorded, a write failed). */
int gcsh_session_record_off(gcsh_session *s);

/* Runs a dot-command line (".ranks 1") as typed. */
void gcsh_session_dot(gcsh_session *s, const char *line);

/* Sets the targeted ranks from "0,2-3" or "all"; -1 (said) when bad. */
int gcsh_session_set_ranks(gcsh_session *s, const char *list);

/* The prompt for the targeted ranks: "gcsh[0-3]> " or "gcsh[0-3]>> ". */
void gcsh_session_prompt(gcsh_session *s, int continuation, char *buf, size_t len);

/* The targeted ranks as "0,2-3". */
char *gcsh_session_targets(const gcsh_session *s, char *buf, size_t len);

/* Reads and runs lines until end of input or .quit. */
void gcsh_repl(gcsh_session *s);

/* The dot-commands and what they do, one per line (for gcsh --help). */
void gcsh_print_dot_commands(FILE *f);

#endif
