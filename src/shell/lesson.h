/* Lessons in the shell: .lessons, .lesson N, .next (rank 0's session).
 *
 * A lesson is a plain Lua script, lua/tutorial/NN-name.lua, that
 * `gcsh -n 4 lua/tutorial/NN-name.lua` runs to the end.  Its comments are
 * the prose the shell shows; a line starting with "---" starts a block:
 *
 *     -- Ring all-reduce                  first line: the title
 *     -- Prose of the introduction.       comment lines: prose
 *     c = comm.world()                    the rest: code
 *
 *     --- Step it                         a block, with its title
 *     -- What this block shows.
 *     st:next()
 *
 *     --- exercise: Write it yourself     an exercise: the task, and the code
 *     -- The task, and the call that      that checks an answer (it runs now)
 *     -- checks it: check(mine).
 *     function check(f) ... end
 *
 *     --- solution                        the lesson's solution, shown and run
 *     function mine(w) ... end            by the next .next
 *     check(mine)
 *
 * `.lesson N` prints the title and introduction and runs the introduction's
 * code; each `.next` prints the next block's prose once (no rank prefix),
 * echoes its code and runs it on every rank as one command, so a lesson's
 * variables are globals.  After an exercise's block the learner writes an
 * answer at the prompt; the next `.next` shows the lesson's own. */
#ifndef GCSH_LESSON_H
#define GCSH_LESSON_H

#include "shell/repl.h"

void gcsh_dot_lessons(gcsh_session *s, const char *arg);
void gcsh_dot_lesson(gcsh_session *s, const char *arg);
void gcsh_dot_next(gcsh_session *s, const char *arg);
void gcsh_dot_again(gcsh_session *s, const char *arg);
void gcsh_dot_prev(gcsh_session *s, const char *arg);
void gcsh_dot_part(gcsh_session *s, const char *arg);

/* Frees the open lesson (gcsh_session_destroy calls it). */
void gcsh_lesson_close(gcsh_session *s);

#endif
