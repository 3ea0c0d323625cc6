/* The "graph" Lua type as other bindings see it (l_graph.c).
 *
 * A graph holds raw pointers into the memory, windows, signals, transfers
 * and communicators its calls used, so:
 *   - while capturing, every handle a binding checks is kept by the graph
 *     being made (gcsh_graph_keep: the check functions of tensors, comms,
 *     windows, signals, transfers and multicasts call it), so none of them
 *     is garbage while the graph lives;
 *   - a live graph is a user (bind/users.h) of every resource it keeps,
 *     so their explicit free is refused, naming the graph;
 *   - a binding whose call must reach the host now refuses it while
 *     capturing, before any collective check (gcsh_graph_refuse_now): a
 *     checked operation that failed after its check would abort its
 *     communicator. */
#ifndef GCSH_BIND_GRAPH_H
#define GCSH_BIND_GRAPH_H

#include <lua.h>

#define GCSH_GRAPH_MT "graph"

/* While capturing: the graph being made keeps the value at idx, and the
 * resources (raw pointers; NULL: none) it stands for. */
void gcsh_graph_keep(lua_State *L, int idx, const void *resource, const void *also);
/* While capturing, raises the refusal of `what` (why: the reason) and
 * leaves the capture to be abandoned; otherwise nothing. */
void gcsh_graph_refuse_now(lua_State *L, const char *what, const char *why);

/* gcsh.graph (merged into the `gcsh` table by libs.c) and the metatable. */
int luaopen_gcsh_graph(lua_State *L);

#endif
