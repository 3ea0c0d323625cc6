/* Passing file descriptors (VMM export handles) between the ranks of one
 * node over private Unix sockets with SCM_RIGHTS.
 *
 * Each member binds an abstract socket named after the user id, a nonce the
 * team agreed on (unguessable: from getrandom) and its team index; a peer
 * connects, checks that the listener runs as the same user (SO_PEERCRED),
 * and sends its fd; the listener checks the sender's uid the same way
 * before it accepts anything.  Abstract sockets leave nothing in the file
 * system, even after a crash.
 *
 * Order (the caller synchronises the members between steps 1 and 2):
 *   1. fdx_listen         every member
 *   2. fdx_send_all       every member (never blocks on a peer: the
 *                         connection waits in the listener's backlog)
 *   3. fdx_recv_all       every member */
#ifndef GCSH_CUDA_FDPASS_H
#define GCSH_CUDA_FDPASS_H

#include <stdint.h>

#include "core/gcsh.h"

typedef struct fdx {
    uint64_t nonce;
    int me, n;       /* my team index, team size */
    int listen_fd;   /* -1 when closed */
} fdx;

int fdx_listen(gcsh_ctx *ctx, fdx *x, uint64_t nonce, int me, int n);
/* Sends fd to every other member. */
int fdx_send_all(gcsh_ctx *ctx, const fdx *x, int fd);
/* fds[i] = member i's fd for every i != me (fds[me] untouched); waits at
 * most timeout_s, polling ctx->interrupt.  On failure the fds received so
 * far are closed and set to -1. */
int fdx_recv_all(gcsh_ctx *ctx, const fdx *x, int *fds, double timeout_s);
void fdx_close(fdx *x);

#endif
