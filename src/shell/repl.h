/* Rank 0's line loop, the top of the shell: reads lines from the terminal
 * or a pipe, with dot-commands, history and completion, and feeds them to
 * the session (session.h). */
#ifndef GCSH_REPL_H
#define GCSH_REPL_H

#include <stdio.h>

#include "shell/session.h"

/* The session (gcsh_session_init), with the dot-commands of this file and
 * the terminal's job control while a command runs. */
void gcsh_repl_init(gcsh_session *s, gcsh_coord *coord, gcsh_term *term, lua_State *L0);

/* Reads and runs lines until end of input or .quit. */
void gcsh_repl(gcsh_session *s);

/* The dot-commands and what they do, one per line (for gcsh --help). */
void gcsh_print_dot_commands(FILE *f);

#endif
