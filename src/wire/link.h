/* The control plane: rank 0's coordinator talks to every rank's worker over
 * stream sockets (AF_UNIX on rank 0's node, TCP to other nodes), set up and
 * authenticated through MPI at start.
 *
 * Why sockets and not MPI: while the shell waits for input every rank must
 * sleep, and blocking MPI calls busy-poll; a socket read sleeps.  Each rank
 * has two connections to rank 0: the command channel (chunks in, output and
 * DONE out; read by the worker) and the control channel (interrupts; read by
 * the rank's watcher thread while the worker runs Lua). */
#ifndef GCSH_LINK_H
#define GCSH_LINK_H

#include <stdint.h>

#include "core/gcsh.h"

/* Every rank's end of the control plane. */
typedef struct gcsh_link {
    int cmd_fd, ctl_fd;          /* this rank's channels to rank 0 */
    /* rank 0 only: rank 0's ends of every rank's channels (index = rank) */
    int *peer_cmd, *peer_ctl;
} gcsh_link;

/* Collective: connects every rank to rank 0.  Rank 0's own worker is reached
 * through socketpairs.  Returns 0, or -1 with ctx->err set (on every rank). */
int gcsh_link_open(gcsh_ctx *ctx, gcsh_link *link);
void gcsh_link_close(gcsh_link *link, int size);

#endif
