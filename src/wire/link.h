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
    /* rank 0 only: every rank's process id, for hang reports (gdb -p) */
    int *pids;
} gcsh_link;

/* Collective: connects every rank to rank 0.  Rank 0's own worker is reached
 * through socketpairs.  Returns 0, or -1 with ctx->err set (on every rank). */
int gcsh_link_open(gcsh_ctx *ctx, gcsh_link *link);
void gcsh_link_close(gcsh_link *link, int size);

/* ---- inside the set-up (link.c, link_accept.c) ------------------------------ */

#define GCSH_LINK_TOKEN_LEN 16
/* Rank 0 listens on its Unix socket and on at most this many TCP ones (one
 * per address that the ranks reach it at). */
#define GCSH_LINK_MAX_LISTEN 9

/* What a rank sends first on each of its connections (MSG_HELLO). */
typedef struct gcsh_hello {
    unsigned char token[GCSH_LINK_TOKEN_LEN];
    int32_t rank;
    int32_t channel; /* 0 = command, 1 = control */
} gcsh_hello;

/* Rank 0: accepts two connections from every other rank on the listening
 * sockets lfd[0..n) (lfd[0] is the Unix one) into link->peer_cmd and
 * peer_ctl, each presenting token; anything else is dropped without
 * stalling the others (link_accept.c).  0, or -1 with ctx->err. */
int gcsh_link_accept(gcsh_ctx *ctx, const int *lfd, int n, const unsigned char *token,
                     gcsh_link *link);

#endif
