/* Rank 0's session: compiles what the user typed (once, on rank 0), runs it
 * on the targeted ranks through the coordinator, and reads lines from the
 * terminal or a pipe, with dot-commands, history and completion. */
#ifndef GCSH_REPL_H
#define GCSH_REPL_H

#include <stddef.h>
#include <stdint.h>

#include "coord.h"
#include "term.h"

typedef struct gcsh_lesson gcsh_lesson; /* lesson.c */

typedef struct gcsh_session {
    gcsh_coord *coord;
    gcsh_term *term;
    lua_State *syntax; /* a bare Lua state for compile checks on rank 0 */
    lua_State *L0;     /* rank 0's worker state: read for completion only */
    char *targets;     /* per rank: 1 if lines run there (.ranks) */
    int time_on;       /* .time on */
    int check_on;      /* .check on: collectives are checked (check.h) */
    int failures;      /* chunks that failed on some rank */
    int quit;          /* .quit was typed */
    gcsh_lesson *lesson; /* the lesson .next goes through, or NULL */
} gcsh_session;

void gcsh_session_init(gcsh_session *s, gcsh_coord *coord, gcsh_term *term, lua_State *L0);
void gcsh_session_destroy(gcsh_session *s);

/* Compiles src on rank 0 first; a syntax error is printed once and nothing
 * runs.  Returns the number of ranks where it failed (-1: syntax error). */
int gcsh_session_exec(gcsh_session *s, const char *name, const char *src, size_t len,
                      uint32_t flags);

/* Reads and runs lines until end of input or .quit. */
void gcsh_repl(gcsh_session *s);

#endif
