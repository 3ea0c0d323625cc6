/* One rank's set-up and tear-down: MPI facts, backend, Lua state. */
#ifndef GCSH_RANK_H
#define GCSH_RANK_H

#include "core/gcsh.h"

/* Fills rank/size/node facts from MPI (MPI must be initialised).  First it
 * sets MPI_ERRORS_RETURN on MPI_COMM_WORLD and MPI_COMM_SELF, which every
 * communicator gcsh makes inherits: an MPI failure becomes a Lua error, never
 * the end of the job (MPI's default handler aborts it). */
void gcsh_rank_topology(gcsh_ctx *ctx);

/* Chooses and initialises the backend: want = "host", "cuda" or NULL (auto).
 * Returns 0, or with ctx->err set (collective: every rank agrees) -2 when
 * want names no backend, -1 when the backend cannot start here. */
int gcsh_rank_backend(gcsh_ctx *ctx, const char *want);

/* Creates the rank's Lua state with the standard libraries, gcsh's libraries
 * and the globals rank, size and gcsh. */
lua_State *gcsh_rank_lua(gcsh_ctx *ctx);

void gcsh_rank_close(gcsh_ctx *ctx);

/* Where gcsh's Lua files are (the gcsh.* modules in gcsh/, lessons in
 * tutorial/, examples/): $GCSH_LUA_DIR when set, else found from the
 * binary's own place, installed (PREFIX/bin/gcsh: PREFIX/share/gcsh) or in
 * the build tree (build/gcsh: lua/).  NULL when neither holds them. */
const char *gcsh_lua_dir(void);

/* Puts gcsh's own Lua modules (gcsh.bench, gcsh.show, ...) first on L's
 * package.path; user modules come after, through LUA_PATH and LUA_CPATH as
 * in lua.  Returns 0, or -1 when gcsh_lua_dir finds nothing. */
int gcsh_lua_path(lua_State *L);

/* pcall, xpcall and coroutine.resume that let an interrupt or os.exit
 * through the user's code (protect.c); the worker installs them beside
 * the shell's functions. */
void gcsh_protect_install(lua_State *L);

#endif
