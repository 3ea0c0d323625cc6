/* Reading a recording for gcsh --replay: the one stage that touches the
 * file's Lua, kept apart so that no crafted file can crash or hang gcsh.
 *
 * The recording runs once, before MPI starts, in a private Lua state: the
 * base library without files, printing, compiling or metatables (no
 * dofile, loadfile, load, print, setmetatable, getmetatable: a binary chunk
 * could crash Lua, a finalizer runs out of the hooks' reach), a
 * require that knows only gcsh.record, a memory cap (64 MiB plus 32 times
 * the file's size) and a budget of Lua instructions (10 million plus 64 a
 * byte: a recording is a list of calls, so a loop is no recording).  Each
 * line(...), line.chunk(...), line.dot(...) call is checked as it comes
 * (argument types, rank lists within the header's rank count, the expected
 * table's keys and types, tables without metatables, read raw) and copied
 * into plain C: after the read, nothing of the file is Lua any more, so the
 * replay itself makes no Lua call on the recording's data.
 *
 * Verdicts, as README "Exit statuses" reads them:
 *   GCSH_EXIT_SKIP (125): cannot be replayed here: missing, unreadable, no
 *     recording, of a newer format, empty, cut short (no closing
 *     line.finish(N), or a file that stops mid-text), damaged (its closing
 *     line counts otherwise);
 *   GCSH_EXIT_USAGE (128): malformed: data no gcsh writes (a wrong type, a
 *     rank outside the header's count, more ranks than -n allows, unknown
 *     keys, a runaway body, not a regular file): the file is to be fixed
 *     whatever the commit, so a bisect stops. */
#ifndef GCSH_REPLAY_READ_H
#define GCSH_REPLAY_READ_H

#include <stddef.h>

/* The most ranks a recording can name: gcsh -n's own cap. */
#define GCSH_MAX_RANKS 4096

enum gcsh_entry_kind { GCSH_ENTRY_LINE, GCSH_ENTRY_CHUNK, GCSH_ENTRY_DOT };

/* One line(...), line.chunk(...) or line.dot(...) of the file. */
typedef struct gcsh_replay_entry {
    int kind;       /* gcsh_entry_kind */
    int at;         /* its line in the file */
    char *ranks;    /* "0-1", "all": valid for the recording's rank count */
    char *src;
    char *name;     /* chunks: "@file.lua" or "=(command line)"; else NULL */
    /* What was recorded (NULL, 0 or -1 when absent): */
    char *out;      /* folded output, "[ranks] text" lines within the rank count */
    size_t out_len; /* its bytes (output may hold NUL bytes) */
    char *failed;   /* a rank list */
    char *syntax;
    int varies;
    int exit_code;  /* os.exit's status, or -1 */
    char *exited;   /* the ranks that called os.exit (a rank list; older
                       recordings have none: not compared then) */
    int end_status; /* ended = {status=, lost=, why=}, or -1 */
    char *end_lost, *end_why;
    char **args;    /* chunks: the script's arguments */
    int nargs;
    double **tape;  /* gcsh.wtime's values per rank ([ranks] of them), or NULL */
    size_t *ntape;
} gcsh_replay_entry;

typedef struct gcsh_recording {
    char path[4096];
    int ranks;            /* the header's rank count, 1..GCSH_MAX_RANKS */
    char backend[64];
    int format;
    /* The options it was recorded with (format 3's "-- Options:" line), as
     * command-line words: "-W --timeout=5"; "" when none.  Only checked
     * for their characters here: main.c parses them as the command line's
     * (replay_options) and refuses what it cannot replay. */
    char options[512];
    int has_seed;
    long long seed;
    int rand;             /* header rand=true: t:rand() seeded too (--seed) */
    gcsh_replay_entry *e;
    int n;
    char *text;           /* the file, for its comments (the environment) */
    size_t len;
} gcsh_recording;

/* The header's format, rank count, backend and options into rec: 0, or an
 * exit status above with why in err (the file is opened, not run: this is
 * all a rank other than the first needs). */
int gcsh_replay_header(const char *path, gcsh_recording *rec, char *err, size_t elen);
/* Reads and checks the whole recording into rec: 0, or an exit status above
 * with why in err ("FILE:LINE: ..." where the file is at fault). */
int gcsh_recording_read(const char *path, gcsh_recording *rec, char *err, size_t elen);
void gcsh_recording_free(gcsh_recording *rec);

#endif
