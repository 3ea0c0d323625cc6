/* Recording a session and replaying it (rank 0).
 *
 * gcsh --record FILE and .record FILE write every following line of the
 * session (typed or piped, dot-commands included) to FILE as a gcsh script:
 * a header (versions, backend, ranks, devices, the environment that changes
 * behaviour, how to replay it), then one call per line with the ranks it ran
 * on, and what each rank group printed, which ranks failed, and whether the
 * output varies between runs (it read a clock, an address, the machine's
 * facts: CHUNK_VARIES).  The file is a plain script too: gcsh -n N FILE reruns
 * it through lua/gcsh/record.lua, which runs each line on its ranks as the
 * prompt would.
 *
 * gcsh --replay FILE reruns the lines through the prompt's own runner and
 * compares each with the recording: the first line whose output (or failed
 * ranks, or syntax error) differs is reported with the ranks, what was
 * expected and what came, and the replay exits 1; 0 when every line
 * matches.  Varying output is shown, not compared.
 *
 * The format (version 1), one call per line, long strings for text:
 *   line(N, "0-1", [==[source]==] [, {out = [==[folded output]==],
 *        failed = "1", varies = true, syntax = [==[message]==], exit = 3}])
 *   line.dot(N, "0-1", [==[.check off]==]) */
#ifndef GCSH_RECORD_H
#define GCSH_RECORD_H

#include "shell/repl.h"

#define GCSH_RECORD_FORMAT 1

typedef struct gcsh_recorder gcsh_recorder;

/* Creates FILE and writes its header (a quiet command asks every rank for
 * its device).  NULL after saying why (an unwritable file). */
gcsh_recorder *gcsh_record_open(gcsh_session *s, const char *path);
/* Says where the session is recorded, or that it is not. */
void gcsh_record_say(const gcsh_recorder *r, gcsh_coord *c);
/* Closes FILE (NULL: nothing). */
void gcsh_record_close(gcsh_recorder *r);

/* A typed chunk and what it gave (gcsh_session_line). */
void gcsh_record_line(gcsh_recorder *r, gcsh_session *s, const char *chunk,
                      const gcsh_line_result *res);
/* A dot-command line, before it runs.  .record itself is not recorded. */
void gcsh_record_dot(gcsh_recorder *r, gcsh_session *s, const char *line);

/* ---- replay ----------------------------------------------------------------- */

/* Reads FILE's header line (before MPI is up): the rank count and backend
 * it was recorded with.  0, or -1 with why in err. */
int gcsh_replay_header(const char *path, int *ranks, char *backend, size_t blen, char *err,
                       size_t elen);
/* Replays FILE through the session; returns the exit status (0: every line
 * matched; 1: a difference, reported; 2: FILE unreadable or malformed). */
int gcsh_replay(gcsh_session *s, const char *path);

/* Shared by both: a long-bracket or quoted Lua string of text (the level of
 * '=' chosen so that the text cannot close it). */
void gcsh_lua_string(gcsh_text *out, const char *s, size_t n);
/* Each rank's text of tap (the ranks in ran[]), folded into groups of equal
 * text, every line prefixed "[ranks] " as the terminal shows it.  Only the
 * ranks with pick[r] (NULL: all that ran). */
void gcsh_fold_groups(gcsh_text *out, int size, const gcsh_text *texts, const char *ran,
                      const char *pick);

#endif
