/* Tab completion of globals, table fields and methods, computed from rank
 * 0's Lua state (idle while the prompt shows, so reading it is safe).  It
 * only uses raw table reads: completing never runs Lua code. */
#ifndef GCSH_COMPLETE_H
#define GCSH_COMPLETE_H

#include <lua.h>

/* Returns a NULL-terminated, malloc'ed array of malloc'ed strings: every
 * completion of `text` (e.g. "comm.wo" -> "comm.world", "t:fi" -> "t:fill"). */
char **gcsh_complete(lua_State *L, const char *text);

/* Completions of a dot-command word (".ti" -> ".time", ".timeout"), from the
 * names name(0), name(1), ... up to NULL (repl.c's table, without the dot). */
char **gcsh_complete_dot(const char *text, const char *(*name)(int i));

/* Whether line[0..point) ends inside a quoted Lua string ('...' or "...",
 * backslash escapes kept in mind; a "--" comment outside one ends the scan):
 * the quote character, else 0.  There Tab completes file names (dofile("s.). */
int gcsh_in_string(const char *line, int point);

#endif
