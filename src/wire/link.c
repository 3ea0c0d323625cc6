/* Control-plane connections, bootstrapped over MPI.  See link.h.
 *
 * Rank 0 listens (abstract AF_UNIX socket for its node; TCP only when some
 * rank is on another host, or GCSH_CONTROL=tcp), broadcasts the addresses and
 * a random token, and accepts 2 connections per rank (link_accept.c).  A
 * connection must present the token first, so nobody else on the machine can
 * inject chunks, and nobody can stall the start-up either.  TCP listens only
 * on the addresses the ranks resolve rank 0's host name to (each rank tells
 * rank 0 its own), never on every interface. */
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

#define TOKEN_LEN GCSH_LINK_TOKEN_LEN
#define MAX_TCP_ADDRS (GCSH_LINK_MAX_LISTEN - 1)

typedef struct bootstrap {
    unsigned char token[TOKEN_LEN];
    char unix_name[64]; /* abstract name, without the leading NUL */
    char host[256];     /* rank 0's host name for TCP, "" when TCP is off */
    int port;           /* the same on each of rank 0's TCP addresses */
} bootstrap;

typedef gcsh_hello hello;

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

/* The IPv4 address this rank reaches host at (0 when it cannot resolve it). */
/* Listens on addr (network order) at b->port, or at a port the kernel picks
 * when it is 0 (then b->port gets it). */
static int listen_tcp(bootstrap *b, uint32_t addr)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = addr,
                            .sin_port = htons((uint16_t)b->port)};
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

/* One listening socket per distinct address in addrs[0..n) (what each rank
 * resolved rank 0's host name to; 0: it could not), all at one port, into
 * lfd; returns how many, or -1 (errno set). */
static int listen_tcp_all(bootstrap *b, const uint32_t *addrs, int n, int *lfd)
{
    int k = 0;
    for (int r = 0; r < n; r++) {
        int seen = addrs[r] == 0;
        for (int q = 0; q < r && !seen; q++)
            seen = addrs[q] == addrs[r];
        if (seen)
            continue;
        if (k == MAX_TCP_ADDRS) {
            errno = EADDRNOTAVAIL;
            return -1;
        }
        lfd[k] = listen_tcp(b, addrs[r]);
        if (lfd[k] < 0)
            return -1;
        k++;
    }
    return k;
}

static int connect_tcp(const bootstrap *b, uint32_t addr)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = addr,
                            .sin_port = htons((uint16_t)b->port)};
    int fd = addr ? socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0) : -1;
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        fd = -1;
    }
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

/* A test facility (GCSH_TEST_FAULTS=1): with GCSH_TEST_HOLD_CONNECT=FILE,
 * the ranks connect only once FILE exists (at most 60 s), so that a test
 * can knock on rank 0's door before they do (tests/sh/faults.sh). */
static void hold_for_test(void)
{
    const char *faults = getenv("GCSH_TEST_FAULTS"), *file = getenv("GCSH_TEST_HOLD_CONNECT");
    if (!faults || strcmp(faults, "1") != 0 || !file || !*file)
        return;
    for (int i = 0; i < 600 && access(file, F_OK) != 0; i++)
        usleep(100 * 1000);
}

/* A non-root rank opens its two channels and introduces itself; addr: where
 * it reaches rank 0 over TCP (b->host set), as it told rank 0. */
static int connect_channels(gcsh_ctx *ctx, const bootstrap *b, uint32_t addr, gcsh_link *link)
{
    int *fds[2] = {&link->cmd_fd, &link->ctl_fd};
    hold_for_test();
    for (int ch = 0; ch < 2; ch++) {
        int fd = b->host[0] ? connect_tcp(b, addr) : connect_unix(b);
        if (fd < 0 && b->host[0] && !addr)
            return gcsh_set_error(ctx, "rank %d: cannot resolve rank 0's host name '%s'",
                                  ctx->rank, b->host);
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

/* Rank 0's listening sockets into lfd: the Unix one first, then TCP on
 * addrs (NULL: no TCP); how many, or -1 with ctx->err. */
static int listen_all(gcsh_ctx *ctx, bootstrap *b, const uint32_t *addrs, int *lfd)
{
    int n = 0;
    lfd[n] = listen_unix(b);
    if (lfd[n] >= 0)
        n++;
    int k = n == 1 && addrs ? listen_tcp_all(b, addrs, ctx->size, lfd + 1) : 0;
    if (n == 0 || k < 0) {
        gcsh_set_error(ctx, "rank 0: cannot listen for control connections: %s", strerror(errno));
        for (int i = 0; i < n; i++)
            close(lfd[i]);
        return -1;
    }
    return n + k;
}

static int open_rank0(gcsh_ctx *ctx, bootstrap *b, gcsh_link *link, const uint32_t *addrs)
{
    int n = ctx->size, lfd[GCSH_LINK_MAX_LISTEN];
    link->peer_cmd = malloc((size_t)n * sizeof(int));
    link->peer_ctl = malloc((size_t)n * sizeof(int));
    for (int r = 0; link->peer_cmd && link->peer_ctl && r < n; r++)
        link->peer_cmd[r] = link->peer_ctl[r] = -1;
    int nlfd = -1;
    if (!link->peer_cmd || !link->peer_ctl)
        gcsh_set_error(ctx, "rank 0: out of memory for the control plane");
    else
        nlfd = listen_all(ctx, b, addrs, lfd);
    if (!addrs)
        b->host[0] = '\0';
    int ok = nlfd > 0 && random_bytes(b->token, TOKEN_LEN) == 0;
    if (!ok && nlfd > 0)
        gcsh_set_error(ctx, "rank 0: no random bytes for the control plane's token");
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(b, sizeof *b, MPI_BYTE, 0, MPI_COMM_WORLD);
    int rc = ok ? rank0_self_channels(ctx, link) : -1;
    if (rc == 0)
        rc = gcsh_link_accept(ctx, lfd, nlfd, b->token, link);
    for (int i = 0; i < nlfd; i++)
        close(lfd[i]);
    return rc;
}

/* With TCP: what every rank resolves rank 0's host name to, gathered on
 * rank 0 (addrs, size entries; NULL elsewhere), and this rank's in *mine. */
static uint32_t *gather_addresses(gcsh_ctx *ctx, const char *host0, uint32_t *mine)
{
    *mine = ctx->rank > 0 ? gcsh_resolve_ipv4(host0) : 0;
    uint32_t *addrs = ctx->rank == 0 ? calloc((size_t)ctx->size, sizeof *addrs) : NULL;
    uint32_t scratch;
    MPI_Gather(mine, 1, MPI_UINT32_T, addrs ? addrs : &scratch, 1, MPI_UINT32_T, 0,
               MPI_COMM_WORLD);
    return addrs;
}

int gcsh_link_open(gcsh_ctx *ctx, gcsh_link *link)
{
    bootstrap b = {0};
    *link = (gcsh_link){.cmd_fd = -1, .ctl_fd = -1};
    if (ctx->rank == 0)
        gethostname(b.host, sizeof b.host - 1);
    MPI_Bcast(b.host, sizeof b.host, MPI_CHAR, 0, MPI_COMM_WORLD);
    uint32_t mine = 0, *addrs = want_tcp(b.host) ? gather_addresses(ctx, b.host, &mine) : NULL;
    int rc;
    if (ctx->rank == 0) {
        rc = open_rank0(ctx, &b, link, addrs);
    } else {
        int ok;
        MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Bcast(&b, sizeof b, MPI_BYTE, 0, MPI_COMM_WORLD);
        rc = ok ? connect_channels(ctx, &b, mine, link)
                : gcsh_set_error(ctx, "rank 0 could not open its control sockets");
    }
    free(addrs);
    int pid = (int)getpid();
    link->pids = ctx->rank == 0 ? calloc((size_t)ctx->size, sizeof *link->pids) : NULL;
    MPI_Gather(&pid, 1, MPI_INT, link->pids ? link->pids : &pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
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
    free(link->pids);
    *link = (gcsh_link){.cmd_fd = -1, .ctl_fd = -1};
}
