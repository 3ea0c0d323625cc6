/* Lessons in the shell: .lessons, .lesson N, .next, .again, .prev, .part N
 * (rank 0's session).
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
 *     -- The task, and the call that      that checks an answer (it runs now,
 *     -- checks it: check(mine).          unechoed, as one command)
 *     function check(f) ... end
 *
 *     --- solution                        the lesson's solution, shown and run
 *     function mine(w) ... end            by the next .next
 *     check(mine)
 *
 * `.lesson N` (a number, or a part of the file name; a name several lessons
 * match lists them) prints the title and introduction and runs the
 * introduction's code; each `.next` prints the next block's prose once (no
 * rank prefix), then runs its code on every rank the way typing it would:
 * each complete statement is a command of its own, echoed with the prompt
 * and followed by its own folded output (lines indented deeper than a
 * statement's first line belong to it; `do ... end` makes several one
 * command).  A command that fails stops the part.  A lesson's variables
 * are globals.  After an exercise's block the learner writes an answer at
 * the prompt; the next `.next` shows the lesson's own.
 *
 * What a lesson's code makes (windows, signals, steppers, multicast
 * objects, transfers left in globals) is noted around every part by
 * gcsh.lesson's track_begin/track_end on every rank, and freed by its
 * free_made before the lesson is opened again (or another one is), and
 * before `.part N` (N: 0 the introduction, 1.. the parts) runs the
 * introduction and the parts before N quietly (their output kept, and
 * shown only where a command fails), then shows part N.  `.again` is
 * `.part` of the part shown last, `.prev` of the one before it.  The end of
 * a lesson names the next one, or says it is the last. */
#ifndef GCSH_LESSON_H
#define GCSH_LESSON_H

#include "shell/session.h"

void gcsh_dot_lessons(gcsh_session *s, const char *arg);
void gcsh_dot_lesson(gcsh_session *s, const char *arg);
void gcsh_dot_next(gcsh_session *s, const char *arg);
void gcsh_dot_again(gcsh_session *s, const char *arg);
void gcsh_dot_prev(gcsh_session *s, const char *arg);
void gcsh_dot_part(gcsh_session *s, const char *arg);

#endif
