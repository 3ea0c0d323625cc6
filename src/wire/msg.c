/* Framed messages: whole-message writes and reads on stream sockets. */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "wire/msg.h"
#include "core/env.h"
#include "core/gcsh.h"

/* Writes every byte of iov[0..n), restarting after signals and partial writes.
 * MSG_NOSIGNAL: a dead peer must give -1, not kill us with SIGPIPE. */
static int write_all(int fd, struct iovec *iov, int n)
{
    while (n > 0) {
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        while (n > 0 && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

int gcsh_msg_send(int fd, uint32_t type, uint32_t seq, const void *a, size_t alen,
                  const void *b, size_t blen)
{
    gcsh_msg_header h = {.type = type, .seq = seq, .len = alen + blen};
    struct iovec iov[3] = {
        {.iov_base = &h, .iov_len = sizeof h},
        {.iov_base = (void *)a, .iov_len = alen},
        {.iov_base = (void *)b, .iov_len = blen},
    };
    return write_all(fd, iov, 3);
}

int gcsh_msg_recv(int fd, gcsh_msg *m)
{
    if (gcsh_read_all(fd, &m->h, sizeof m->h) != 0)
        return -1;
    if (m->h.len + 1 > m->cap) {
        char *p = realloc(m->data, m->h.len + 1);
        if (!p)
            return -1;
        m->data = p;
        m->cap = m->h.len + 1;
    }
    if (gcsh_read_all(fd, m->data, m->h.len) != 0)
        return -1;
    m->data[m->h.len] = '\0'; /* text payloads can be used as C strings */
    return 0;
}

void gcsh_msg_free(gcsh_msg *m)
{
    free(m->data);
    m->data = NULL;
    m->cap = 0;
}

static long elapsed_us(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000000L + (t.tv_nsec - t0->tv_nsec) / 1000;
}

int gcsh_wait_readable(int fd, int spin_us, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (spin_us > 0 && elapsed_us(&t0) < spin_us) {
        if (poll(&p, 1, 0) != 0)
            return 1;
        sched_yield();
    }
    for (;;) {
        int r = poll(&p, 1, timeout_ms);
        if (r >= 0 || errno != EINTR)
            return r > 0 ? 1 : r;
    }
}

int gcsh_spin_us(void)
{
    return (int)gcsh_env_value(GCSH_ENV_SPIN_US);
}
