/* A failed chunk's verdict on this rank (README "Exit statuses"), decided
 * by what happened, never by an error's text:
 *
 *  - 125, cannot be tested here (git bisect's skip): the chunk's error is
 *    a failure to load a Lua file that exists but cannot be read or does
 *    not compile (a helper with a syntax error is one verdict whichever way
 *    it is loaded): raised by require or dofile, loadfile's message raised
 *    (assert(loadfile(f)), error(msg)), or a call of the nil loadfile
 *    returned, in the function that called it (loadfile(f)(), the local or
 *    global variable that kept the nil); or the chunk's error is require's
 *    own "not found" (raised by require itself after every searcher came
 *    back empty) or dofile's own failure to load its file.  A failure the
 *    script handled (a loadfile's nil tested, a pcall around require or
 *    dofile, as for an optional module) is no verdict: a later error of
 *    the script's own is 1;
 *  - 128, a usage error (bisect stops): the chunk's error was raised by
 *    gcsh.usage_error, which gcsh's own Lua APIs use for their misuse
 *    (repro.need{rank=2}, a bad repro.sweep option);
 *  - 1 otherwise: a runtime error is the chunk's own failure whatever it
 *    says.
 *
 * The rank's Lua state keeps the running chunk's last load failures; which
 * one, if any, ended it is decided where its error is raised. */
#ifndef GCSH_VERDICT_H
#define GCSH_VERDICT_H

#include <lua.h>

/* Replaces loadfile and dofile, wraps package.searchers, and adds
 * gcsh.usage_error (once, when the rank's state is made). */
void gcsh_verdict_install(lua_State *L);

/* A chunk starts: nothing has failed to load yet. */
void gcsh_verdict_begin(lua_State *L);

/* From the chunk's message handler, where the error was raised (before the
 * stack unwinds): notes who raised it. */
void gcsh_verdict_note_error(lua_State *L);

/* After the chunk failed: 1, 125 or 128, as above. */
int gcsh_verdict_of_error(lua_State *L);

#endif
