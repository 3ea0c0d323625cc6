/* The launcher's stdout and stderr, handed to rank 0.  See launch_streams.h. */
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "shell/launch_streams.h"


#define STREAMS_WAIT_MS 5000

static socklen_t streams_address(struct sockaddr_un *a, int pid, int token)
{
    *a = (struct sockaddr_un){.sun_family = AF_UNIX};
    int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "gcsh-launcher.%d.%d", pid, token);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static int peer_pid(int fd)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 ? (int)cred.pid : -1;
}

/* Launcher: the listening socket, or -1 (then rank 0 keeps mpirun's pipes). */
int gcsh_streams_listen(int token)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a;
    socklen_t len = streams_address(&a, (int)getpid(), token);
    if (fd >= 0 && (bind(fd, (struct sockaddr *)&a, len) != 0 || listen(fd, 4) != 0)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Launcher: sends fds 1 and 2 to rank 0 (pid) when it connects. */
void gcsh_streams_send(int lfd, pid_t rank0)
{
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        long left = STREAMS_WAIT_MS - ((now.tv_sec - start.tv_sec) * 1000 +
                                       (now.tv_nsec - start.tv_nsec) / 1000000);
        struct pollfd p = {.fd = lfd, .events = POLLIN};
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            return;
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        if (peer_pid(c) == rank0) {
            int fds[2] = {1, 2};
            char cbuf[CMSG_SPACE(sizeof fds)] = {0}, byte = 'S';
            struct iovec iov = {&byte, 1};
            struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                               .msg_controllen = sizeof cbuf};
            struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
            cm->cmsg_level = SOL_SOCKET;
            cm->cmsg_type = SCM_RIGHTS;
            cm->cmsg_len = CMSG_LEN(sizeof fds);
            memcpy(CMSG_DATA(cm), fds, sizeof fds);
            sendmsg(c, &m, MSG_NOSIGNAL);
            close(c);
            return;
        }
        close(c); /* not our rank 0 */
    }
}

/* Rank 0: the launcher's stdout and stderr into fds[0], fds[1]; -1 when
 * they cannot be had. */
int gcsh_streams_take(int pid, int token, int fds[2])
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a;
    socklen_t len = streams_address(&a, pid, token);
    struct timeval tv = {STREAMS_WAIT_MS / 1000, 0};
    int got = -1;
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, len) == 0 && peer_pid(fd) == pid &&
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0) {
        char cbuf[CMSG_SPACE(2 * sizeof(int))], byte;
        struct iovec iov = {&byte, 1};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                           .msg_controllen = sizeof cbuf};
        struct cmsghdr *cm;
        if (recvmsg(fd, &m, MSG_CMSG_CLOEXEC) == 1 && (cm = CMSG_FIRSTHDR(&m)) &&
            cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len == CMSG_LEN(2 * sizeof(int))) {
            memcpy(fds, CMSG_DATA(cm), 2 * sizeof(int));
            got = 0;
        }
    }
    if (fd >= 0)
        close(fd);
    return got;
}

