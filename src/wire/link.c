/* Control-plane connections, bootstrapped over MPI.  See link.h.
 *
 * Rank 0 listens (abstract AF_UNIX socket for its node; TCP only when some
 * rank is on another host, or GCSH_CONTROL=tcp), broadcasts the addresses and
 * a random token, and accepts 2 connections per rank.  A connection must
 * present the token first, so nobody else on the machine can inject chunks. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <mpi.h>

#include "wire/msg.h"
#include "wire/link.h"

#define TOKEN_LEN 16
#define ACCEPT_SECONDS 60

typedef struct bootstrap {
    unsigned char token[TOKEN_LEN];
    char unix_name[64]; /* abstract name, without the leading NUL */
    char host[256];     /* rank 0's host name for TCP, "" when TCP is off */
    int port;
} bootstrap;

typedef struct hello {
    unsigned char token[TOKEN_LEN];
    int32_t rank;
    int32_t channel; /* 0 = command, 1 = control */
} hello;

static int want_tcp(const char *host0)
{
    char mine[256] = {0};
    gethostname(mine, sizeof mine - 1);
    const char *force = getenv("GCSH_CONTROL");
    int local_tcp = force && strcmp(force, "tcp") == 0;
    int remote = strcmp(mine, host0) != 0, any_remote = 0;
    MPI_Allreduce(&remote, &any_remote, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any_remote || local_tcp;
}

static socklen_t unix_addr(struct sockaddr_un *a, const char *name)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    size_t n = strlen(name);
    memcpy(a->sun_path + 1, name, n); /* abstract namespace: no file to clean up */
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static void no_delay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Fills buf with len random bytes; the token guards who may send chunks, so
 * a short read is an error, not a weaker token. */
static int random_bytes(void *buf, size_t len)
{
    return getrandom(buf, len, 0) == (ssize_t)len ? 0 : -1;
}

static int listen_unix(bootstrap *b)
{
    unsigned rnd = 0;
    if (random_bytes(&rnd, sizeof rnd) != 0)
        return -1;
    snprintf(b->unix_name, sizeof b->unix_name, "gcsh-%d-%08x", (int)getpid(), rnd);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a;
    socklen_t len = unix_addr(&a, b->unix_name);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, len) != 0 || listen(fd, 128) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static int listen_tcp(bootstrap *b)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 128) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    b->port = ntohs(a.sin_port);
    return fd;
}

static int connect_tcp(const bootstrap *b)
{
    char port[16];
    snprintf(port, sizeof port, "%d", b->port);
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res;
    if (getaddrinfo(b->host, port, &hints, &res) != 0)
        return -1;
    int fd = -1;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd >= 0)
        no_delay(fd);
    return fd;
}

static int connect_unix(const bootstrap *b)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a;
    socklen_t len = unix_addr(&a, b->unix_name);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, len) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* A non-root rank opens its two channels and introduces itself. */
static int connect_channels(gcsh_ctx *ctx, const bootstrap *b, gcsh_link *link)
{
    int *fds[2] = {&link->cmd_fd, &link->ctl_fd};
    for (int ch = 0; ch < 2; ch++) {
        int fd = b->host[0] ? connect_tcp(b) : connect_unix(b);
        if (fd < 0)
            return gcsh_set_error(ctx, "rank %d: cannot connect to rank 0's control socket: %s",
                                  ctx->rank, strerror(errno));
        hello h = {.rank = ctx->rank, .channel = ch};
        memcpy(h.token, b->token, TOKEN_LEN);
        if (gcsh_msg_send(fd, MSG_HELLO, 0, &h, sizeof h, NULL, 0) != 0) {
            close(fd);
            return gcsh_set_error(ctx, "rank %d: control socket closed during hello", ctx->rank);
        }
        *fds[ch] = fd;
    }
    return 0;
}

/* Reads one hello with a deadline; returns 0 and the claimed rank/channel. */
static int read_hello(int fd, const bootstrap *b, double deadline, hello *h)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int ms = (int)((deadline - gcsh_now_seconds()) * 1000);
    if (ms <= 0 || poll(&p, 1, ms) != 1)
        return -1;
    gcsh_msg m = {0};
    int ok = gcsh_msg_recv(fd, &m) == 0 && m.h.type == MSG_HELLO && m.h.len == sizeof *h;
    if (ok)
        memcpy(h, m.data, sizeof *h);
    gcsh_msg_free(&m);
    return ok && memcmp(h->token, b->token, TOKEN_LEN) == 0 ? 0 : -1;
}

/* Rank 0 accepts 2 channels from every other rank, rejecting strangers. */
static int accept_channels(gcsh_ctx *ctx, const bootstrap *b, int lfd[2], gcsh_link *link)
{
    int expected = 2 * (ctx->size - 1), got = 0;
    double deadline = gcsh_now_seconds() + ACCEPT_SECONDS;
    while (got < expected) {
        struct pollfd p[2] = {{.fd = lfd[0], .events = POLLIN}, {.fd = lfd[1], .events = POLLIN}};
        int ms = (int)((deadline - gcsh_now_seconds()) * 1000);
        if (ms <= 0 || poll(p, 2, ms) <= 0)
            return gcsh_set_error(ctx, "rank 0: only %d of %d control connections arrived in %d s",
                                  got, expected, ACCEPT_SECONDS);
        for (int i = 0; i < 2; i++) {
            if (!(p[i].revents & POLLIN))
                continue;
            int fd = accept4(lfd[i], NULL, NULL, SOCK_CLOEXEC);
            if (fd < 0)
                continue;
            hello h;
            int *slot = NULL;
            if (read_hello(fd, b, deadline, &h) == 0 && h.rank > 0 && h.rank < ctx->size &&
                (h.channel == 0 || h.channel == 1))
                slot = h.channel == 0 ? &link->peer_cmd[h.rank] : &link->peer_ctl[h.rank];
            if (!slot || *slot >= 0) {
                close(fd); /* a stranger or a duplicate */
                continue;
            }
            if (i == 1)
                no_delay(fd);
            *slot = fd;
            got++;
        }
    }
    return 0;
}

static int rank0_self_channels(gcsh_ctx *ctx, gcsh_link *link)
{
    int cmd[2], ctl[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cmd) != 0)
        return gcsh_set_error(ctx, "socketpair: %s", strerror(errno));
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) != 0) {
        close(cmd[0]);
        close(cmd[1]);
        return gcsh_set_error(ctx, "socketpair: %s", strerror(errno));
    }
    link->peer_cmd[0] = cmd[0];
    link->cmd_fd = cmd[1];
    link->peer_ctl[0] = ctl[0];
    link->ctl_fd = ctl[1];
    return 0;
}

static int open_rank0(gcsh_ctx *ctx, bootstrap *b, gcsh_link *link, int tcp)
{
    int n = ctx->size;
    link->peer_cmd = malloc((size_t)n * sizeof(int));
    link->peer_ctl = malloc((size_t)n * sizeof(int));
    for (int r = 0; r < n; r++)
        link->peer_cmd[r] = link->peer_ctl[r] = -1;
    int lfd[2] = {listen_unix(b), tcp ? listen_tcp(b) : -1};
    if (!tcp)
        b->host[0] = '\0';
    int ok = random_bytes(b->token, TOKEN_LEN) == 0 && lfd[0] >= 0 && (!tcp || lfd[1] >= 0);
    if (!ok)
        gcsh_set_error(ctx, "rank 0: cannot listen for control connections: %s", strerror(errno));
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(b, sizeof *b, MPI_BYTE, 0, MPI_COMM_WORLD);
    int rc = ok ? rank0_self_channels(ctx, link) : -1;
    if (rc == 0)
        rc = accept_channels(ctx, b, lfd, link);
    for (int i = 0; i < 2; i++)
        if (lfd[i] >= 0)
            close(lfd[i]);
    return rc;
}

int gcsh_link_open(gcsh_ctx *ctx, gcsh_link *link)
{
    bootstrap b = {0};
    *link = (gcsh_link){.cmd_fd = -1, .ctl_fd = -1};
    if (ctx->rank == 0)
        gethostname(b.host, sizeof b.host - 1);
    MPI_Bcast(b.host, sizeof b.host, MPI_CHAR, 0, MPI_COMM_WORLD);
    int tcp = want_tcp(b.host);
    int rc;
    if (ctx->rank == 0) {
        rc = open_rank0(ctx, &b, link, tcp);
    } else {
        int ok;
        MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Bcast(&b, sizeof b, MPI_BYTE, 0, MPI_COMM_WORLD);
        rc = ok ? connect_channels(ctx, &b, link)
                : gcsh_set_error(ctx, "rank 0 could not open its control sockets");
    }
    int all = rc == 0, all_ok = 0;
    MPI_Allreduce(&all, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok && rc == 0)
        gcsh_set_error(ctx, "control plane set-up failed on another rank");
    return all_ok ? 0 : -1;
}

void gcsh_link_close(gcsh_link *link, int size)
{
    if (link->cmd_fd >= 0)
        close(link->cmd_fd);
    if (link->ctl_fd >= 0)
        close(link->ctl_fd);
    for (int r = 0; link->peer_cmd && r < size; r++) {
        if (link->peer_cmd[r] >= 0)
            close(link->peer_cmd[r]);
        if (link->peer_ctl[r] >= 0)
            close(link->peer_ctl[r]);
    }
    free(link->peer_cmd);
    free(link->peer_ctl);
    *link = (gcsh_link){.cmd_fd = -1, .ctl_fd = -1};
}
