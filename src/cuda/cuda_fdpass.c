/* Unix-socket fd passing between the ranks of a node (see cuda_fdpass.h). */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cuda/cuda_fdpass.h"

#define FDX_MAGIC 0x67637368u /* "gcsh" */

typedef struct fdx_msg {
    uint32_t magic;
    int32_t from;   /* sender's team index */
    uint64_t nonce; /* must be the team's: a stray connection is refused */
} fdx_msg;

/* The abstract address of member i: "\0gcsh-vmm-<uid>-<nonce>-<i>". */
static socklen_t fdx_addr(const fdx *x, int i, struct sockaddr_un *a)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    int len = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "gcsh-vmm-%u-%016llx-%d",
                       (unsigned)getuid(), (unsigned long long)x->nonce, i);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len);
}

/* Whether the other end of a connected socket runs as this user. */
static int same_user(int fd)
{
    struct ucred cr;
    socklen_t len = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0)
        return 0;
    return cr.uid == getuid();
}

int fdx_listen(gcsh_ctx *ctx, fdx *x, uint64_t nonce, int me, int n)
{
    struct sockaddr_un a;
    x->nonce = nonce;
    x->me = me;
    x->n = n;
    x->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (x->listen_fd < 0)
        return gcsh_set_error(ctx, "vmm: socket: %s", strerror(errno));
    socklen_t len = fdx_addr(x, me, &a);
    if (bind(x->listen_fd, (struct sockaddr *)&a, len) != 0 ||
        listen(x->listen_fd, n > 1 ? n : 1) != 0) {
        int e = errno;
        fdx_close(x);
        return gcsh_set_error(ctx, "vmm: binding the fd-exchange socket: %s", strerror(e));
    }
    return 0;
}

static int send_fd(gcsh_ctx *ctx, const fdx *x, int to, int fd)
{
    struct sockaddr_un a;
    socklen_t len = fdx_addr(x, to, &a);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return gcsh_set_error(ctx, "vmm: socket: %s", strerror(errno));
    if (connect(s, (struct sockaddr *)&a, len) != 0) {
        int e = errno;
        close(s);
        return gcsh_set_error(ctx, "vmm: connecting to team member %d: %s", to, strerror(e));
    }
    if (!same_user(s)) {
        close(s);
        return gcsh_set_error(ctx, "vmm: team member %d's socket belongs to another user", to);
    }
    fdx_msg m = {FDX_MAGIC, x->me, x->nonce};
    struct iovec iov = {&m, sizeof m};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                        .msg_controllen = sizeof ctl.buf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    ssize_t sent = sendmsg(s, &mh, MSG_NOSIGNAL);
    int e = errno;
    close(s); /* the message and its fd stay queued for the listener */
    if (sent != (ssize_t)sizeof m)
        return gcsh_set_error(ctx, "vmm: sending the handle to team member %d: %s", to,
                              sent < 0 ? strerror(e) : "short write");
    return 0;
}

int fdx_send_all(gcsh_ctx *ctx, const fdx *x, int fd)
{
    for (int i = 0; i < x->n; i++)
        if (i != x->me && send_fd(ctx, x, i, fd) != 0)
            return -1;
    return 0;
}

/* Reads one message and its fd from an accepted connection. */
static int recv_one(gcsh_ctx *ctx, const fdx *x, int s, int *fds)
{
    fdx_msg m;
    struct iovec iov = {&m, sizeof m};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                        .msg_controllen = sizeof ctl.buf};
    ssize_t got = recvmsg(s, &mh, MSG_CMSG_CLOEXEC | MSG_WAITALL);
    struct cmsghdr *c = got == (ssize_t)sizeof m ? CMSG_FIRSTHDR(&mh) : NULL;
    int fd = -1;
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
        c->cmsg_len == CMSG_LEN(sizeof(int)))
        memcpy(&fd, CMSG_DATA(c), sizeof fd);
    if (fd < 0 || m.magic != FDX_MAGIC || m.nonce != x->nonce || m.from < 0 ||
        m.from >= x->n || m.from == x->me || fds[m.from] >= 0 || (mh.msg_flags & MSG_CTRUNC)) {
        if (fd >= 0)
            close(fd);
        return gcsh_set_error(ctx, "vmm: a malformed or duplicate handle message arrived");
    }
    fds[m.from] = fd;
    return 0;
}

/* Accepts one connection, waiting in 100 ms slices for the deadline or an
 * interrupt; returns the connected socket or -1. */
static int accept_one(gcsh_ctx *ctx, const fdx *x, double deadline)
{
    for (;;) {
        int s = accept4(x->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (s >= 0) {
            if (same_user(s))
                return s;
            close(s); /* another user's process: ignore it and keep waiting */
            continue;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return gcsh_set_error(ctx, "vmm: accept: %s", strerror(errno));
        if (atomic_load(&ctx->interrupt))
            return gcsh_set_error(ctx, "vmm: interrupted while exchanging handles");
        if (gcsh_now_seconds() > deadline)
            return gcsh_set_error(ctx, "vmm: timed out waiting for the team's handles");
        struct pollfd p = {x->listen_fd, POLLIN, 0};
        poll(&p, 1, 100);
    }
}

int fdx_recv_all(gcsh_ctx *ctx, const fdx *x, int *fds, double timeout_s)
{
    double deadline = gcsh_now_seconds() + timeout_s;
    for (int i = 0; i < x->n; i++)
        if (i != x->me)
            fds[i] = -1;
    for (int k = 0; k < x->n - 1; k++) {
        int s = accept_one(ctx, x, deadline);
        if (s < 0)
            goto fail;
        int rc = recv_one(ctx, x, s, fds);
        close(s);
        if (rc != 0)
            goto fail;
    }
    return 0;
fail:
    for (int i = 0; i < x->n; i++)
        if (i != x->me && fds[i] >= 0) {
            close(fds[i]);
            fds[i] = -1;
        }
    return -1;
}

void fdx_close(fdx *x)
{
    if (x->listen_fd >= 0)
        close(x->listen_fd);
    x->listen_fd = -1;
}
