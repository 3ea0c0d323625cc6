/* Routed collectives (comm_route.c): the router that runs c:allreduce,
 * c:reducescatter, c:allgather and c:broadcast on the kernel collectives
 * through a staging window (comm.h says how l_comm.c asks it), c:choose,
 * and the route's line in gcsh.info(). */
#ifndef GCSH_BIND_COMM_ROUTE_H
#define GCSH_BIND_COMM_ROUTE_H

#include <lua.h>

/* Registers the router and adds c:choose to comm's methods (libs.c: after
 * comm and window opened); reads GCSH_COMM_ROUTE. */
void gcsh_comm_route_open(lua_State *L);
/* gcsh.info()'s comm_route field, into the table on top: where the
 * routed collectives run by default and why. */
void gcsh_comm_route_info(lua_State *L);

#endif
