/* Recording a session and replaying it (rank 0).
 *
 * gcsh --record FILE and .record FILE write every following line of the
 * session (typed or piped, dot-commands included), and the script and -e
 * chunks the command line runs, to FILE as a gcsh script: a header
 * (versions, backend, ranks, devices, the environment that changes
 * behaviour, the seed of math.random, how to replay it), then one call per
 * line with the ranks it ran on, what each rank group printed, which ranks
 * failed, whether the output varies between runs (it read a clock, an
 * address, the machine's facts: CHUNK_VARIES), the values gcsh.wtime
 * returned on each rank, and, for a line that ended the session at once (a
 * rank lost, a device fault), how it ended; then a closing line with the
 * number of lines, so a file cut short is told from a whole one.  The file
 * is a plain script too: gcsh -n N FILE reruns it through
 * lua/gcsh/record.lua, which runs each line on its ranks as the prompt
 * would.
 *
 * The file is written through safefile.h: it grows in a temporary beside
 * FILE and takes FILE's place when the recording ends (.record off, the
 * session's end, or the line that ended the session at once).  A recording
 * with no line is refused and FILE left as it was; an existing FILE is
 * replaced only when it is itself a recording, and that is said; a failed
 * write is an error, and FILE is left as it was.
 *
 * gcsh --replay FILE reruns the lines through the prompt's own runner, with
 * math.random seeded and gcsh.wtime returning the recorded values, and
 * compares each with the recording: the first line whose output (or failed
 * ranks, or syntax error, or ending) differs is reported with the ranks,
 * what was expected and what came, and the replay exits 1 (with
 * --keep-going it runs on and lists every line that differed); 0 when every
 * line matches, a recorded ending included.  Varying output is shown, not
 * compared.  The file is read and checked before MPI starts
 * (replay_read.h): an empty recording, or one without its closing line, is
 * refused (GCSH_EXIT_SKIP), a malformed one too (GCSH_EXIT_USAGE).
 *
 * The format (version 3; versions 1 and 2 replay too): a header whose
 * first lines say the format, ranks and backend, then the options
 * (GCSH_RECORD_OPTIONS below); one call per line, long strings for text:
 *   local line = require("gcsh.record").script{ranks = 2, backend = "host", seed = S}
 *   line(N, "0-1", [==[source]==] [, {out = [==[folded output]==],
 *        failed = "1", varies = true, syntax = [==[message]==], exit = 3,
 *        wtime = {[0] = {t, ...}, ...},
 *        ended = {status = 69, lost = "1", why = [==[...]==]}}])
 *   line.chunk(N, "0-1", "@file.lua", [==[source]==] [, {args = {...}, ...}])
 *   line.dot(N, "0-1", [==[.check off]==])
 *   line.finish(N) */
#ifndef GCSH_RECORD_H
#define GCSH_RECORD_H

#include "shell/replay_read.h"
#include "shell/session.h"

#define GCSH_RECORD_FORMAT 3 /* written; 1 to 3 are read */
/* Format 3's line after its "-- gcsh recording" line begins so; the
 * command-line options the session
 * ran with that change what it prints or does follow, as gcsh's command
 * line takes them ("-- Options: -W --timeout=5", "-- Options: none"):
 * -W, --timeout (a limit was set), --deadline, --deadline-status,
 * --first-failure, --tag and --share-gpu (gcsh_record_options).  --seed
 * is the script{} header's seed= and rand=.  A replay runs with them
 * (main.c's replay_options): one the replay's command line contradicts is
 * refused by name, unless it only bounds or shows the run (--deadline,
 * --deadline-status, --tag: the command line's wins). */
#define GCSH_RECORD_OPTIONS "-- Options:"

typedef struct gcsh_recorder gcsh_recorder;

/* Starts a recording to FILE: its header (a quiet command asks every rank
 * for its device, another seeds math.random), and the recorder rides on
 * the session (s->rec) until gcsh_session_record_off or the session's end.
 * -1 after saying why (a refused or unwritable file, a file that is no
 * recording). */
int gcsh_record_start(gcsh_session *s, const char *path);
/* Says where the session is recorded, or that it is not. */
void gcsh_record_say(gcsh_session *s);

/* ---- replay ----------------------------------------------------------------- */

/* Replays a recording read by gcsh_recording_read (replay_read.h) through
 * the session; returns the exit status (0: every line matched; 1: a
 * difference, reported; GCSH_EXIT_TERM: SIGTERM stopped it).  keep_going:
 * run past differences and list them all. */
int gcsh_replay(gcsh_session *s, const gcsh_recording *rec, int keep_going);

/* Shared by both: a long-bracket or quoted Lua string of text (the level of
 * '=' chosen so that the text cannot close it). */
void gcsh_lua_string(gcsh_text *out, const char *s, size_t n);
/* Each rank's text of tap (the ranks in ran[]), folded into groups of equal
 * text, every line prefixed "[ranks] " as the terminal shows it.  Only the
 * ranks with pick[r] (NULL: all that ran). */
void gcsh_fold_groups(gcsh_text *out, int size, const gcsh_text *texts, const char *ran,
                      const char *pick);

#endif
