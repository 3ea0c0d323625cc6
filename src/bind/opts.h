/* Options tables: the one check of their keys, for every table of options
 * the Lua surface takes (src/DESIGN.md, Truth rules: an unknown key is an
 * error naming the valid ones, never silently dropped).  Lua modules use it
 * as gcsh.check_options(opts, fname, valid [, level]).
 *
 * valid lists the known keys separated by spaces ("op offset n"). */
#ifndef GCSH_BIND_OPTS_H
#define GCSH_BIND_OPTS_H

#include <stddef.h>

#include <lua.h>

/* The first key of the table at idx that valid does not name, as text into
 * buf (buf is returned), or NULL when every key is known.  Integer keys
 * 1..npos are positional fields and known.  "First" is in sorted order, so
 * every rank names the same key (a table's traversal order follows each
 * process's string hashes). */
const char *gcsh_opts_unknown(lua_State *L, int idx, int npos, const char *valid, char *buf,
                              size_t len);

/* Options at idx: 0 when none or nil, 1 when a table whose keys valid
 * names; otherwise raises "<fname>: unknown option 'k' (valid: <valid>)"
 * or "<fname>: options must be a table (valid keys: ...), got <type>". */
int gcsh_opts_check(lua_State *L, int idx, const char *fname, const char *valid);

/* The same, as argument #arg's error ("bad argument #3 to 'put' (unknown
 * option 'k' (valid: ...))"). */
int gcsh_opts_check_arg(lua_State *L, int idx, int arg, const char *valid);

/* Arguments past `last` (stack indices; trailing nils are no arguments):
 * raises "bad argument #i to 'fname' (takes <takes>, got a <type> here)",
 * so an options table a function has no use for is never dropped unread. */
void gcsh_args_none_after(lua_State *L, int last, const char *takes);

/* Whether word is one of list's space-separated words. */
int gcsh_opts_listed(const char *list, const char *word);

/* gcsh.check_options(opts, fname, valid [, level=2]): the check for Lua
 * modules; the error's position is level's, as error(msg, level) in the
 * function that called it. */
int gcsh_opts_lua_check(lua_State *L);

#endif
