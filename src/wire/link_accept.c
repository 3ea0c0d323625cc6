/* Rank 0's door during start-up: it takes every other rank's two control
 * connections and nothing else.  See link.h.
 *
 * What arrives on rank 0's listening sockets may come from anyone on the
 * machine (an abstract Unix socket is listed in /proc/net/unix; a TCP port
 * can be scanned), so nobody may stall or block the start-up:
 *   - a Unix connection from another user is closed before anything is
 *     read (SO_PEERCRED);
 *   - every connection is read without blocking, next to the others and the
 *     listeners, so a silent one holds nothing up while real ones arrive,
 *     and it is dropped after HELLO_SECONDS;
 *   - the hello is fixed-size: a header announcing any other length is
 *     dropped at once, before anything is allocated, and so is a wrong
 *     token, a rank out of range or a channel already taken;
 *   - at most MAX_PENDING connections wait at once (the oldest goes first:
 *     real ones present themselves within microseconds). */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "wire/link.h"
#include "wire/msg.h"

#define ACCEPT_SECONDS 60 /* for all the ranks' connections together */
#define HELLO_SECONDS 10  /* for one connection to present itself */
#define MAX_PENDING 64

typedef struct pending {
    int fd;
    double deadline;
    size_t got;
    unsigned char buf[sizeof(gcsh_msg_header) + sizeof(gcsh_hello)];
} pending;

typedef struct door {
    gcsh_ctx *ctx;
    const unsigned char *token;
    gcsh_link *link;
    pending wait[MAX_PENDING];
    int nwait;
    int got; /* channels taken */
} door;

static void drop(door *d, int i)
{
    close(d->wait[i].fd);
    d->wait[i] = d->wait[--d->nwait];
}

/* Only the user who runs gcsh reaches rank 0 over its Unix socket. */
static int same_user(int fd)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == geteuid();
}

static void take_connection(door *d, int lfd, int is_unix)
{
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
        return;
    if (is_unix && !same_user(fd)) {
        close(fd);
        return;
    }
    if (!is_unix) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    if (d->nwait == MAX_PENDING) { /* the oldest waiting one goes */
        int oldest = 0;
        for (int i = 1; i < d->nwait; i++)
            if (d->wait[i].deadline < d->wait[oldest].deadline)
                oldest = i;
        drop(d, oldest);
    }
    d->wait[d->nwait++] = (pending){.fd = fd, .deadline = gcsh_now_seconds() + HELLO_SECONDS};
}

/* Whether the first n bytes received can still start a hello. */
static int plausible(const pending *p)
{
    gcsh_msg_header h;
    if (p->got < sizeof h)
        return 1;
    memcpy(&h, p->buf, sizeof h);
    return h.type == MSG_HELLO && h.len == sizeof(gcsh_hello);
}

/* The channel a complete hello claims, if it is right and still free. */
static int *claimed_slot(door *d, const pending *p)
{
    gcsh_hello h;
    memcpy(&h, p->buf + sizeof(gcsh_msg_header), sizeof h);
    unsigned char diff = 0; /* compared in full: no early exit to time */
    for (int i = 0; i < GCSH_LINK_TOKEN_LEN; i++)
        diff |= (unsigned char)(h.token[i] ^ d->token[i]);
    if (diff || h.rank <= 0 || h.rank >= d->ctx->size || (h.channel != 0 && h.channel != 1))
        return NULL;
    int *slot = h.channel == 0 ? &d->link->peer_cmd[h.rank] : &d->link->peer_ctl[h.rank];
    return *slot < 0 ? slot : NULL;
}

/* Reads what connection i has; keeps it, drops it or gives it its slot. */
static void read_pending(door *d, int i)
{
    pending *p = &d->wait[i];
    ssize_t n = read(p->fd, p->buf + p->got, sizeof p->buf - p->got);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        drop(d, i);
        return;
    }
    p->got += (size_t)n;
    if (!plausible(p)) {
        drop(d, i); /* a header of any other size is nobody we know */
        return;
    }
    if (p->got < sizeof p->buf)
        return;
    int *slot = claimed_slot(d, p);
    if (!slot) {
        drop(d, i);
        return;
    }
    int fd = p->fd;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK); /* the channels block */
    *slot = fd;
    d->got++;
    d->wait[i] = d->wait[--d->nwait];
}

static int poll_ms(const door *d, double deadline, double now)
{
    double next = deadline;
    for (int i = 0; i < d->nwait; i++)
        if (d->wait[i].deadline < next)
            next = d->wait[i].deadline;
    return next <= now ? 0 : (int)((next - now) * 1000) + 1;
}

/* One round: waits for the listeners and the waiting connections. */
static void serve(door *d, const int *lfd, int nlfd, double deadline)
{
    struct pollfd p[GCSH_LINK_MAX_LISTEN + MAX_PENDING];
    for (int i = 0; i < nlfd; i++)
        p[i] = (struct pollfd){.fd = lfd[i], .events = POLLIN};
    int nwait = d->nwait;
    for (int i = 0; i < nwait; i++)
        p[nlfd + i] = (struct pollfd){.fd = d->wait[i].fd, .events = POLLIN};
    if (poll(p, (nfds_t)(nlfd + nwait), poll_ms(d, deadline, gcsh_now_seconds())) < 0)
        return;
    /* the waiting ones first, from the last: drop() moves the last into i */
    double now = gcsh_now_seconds();
    for (int i = nwait - 1; i >= 0; i--) {
        if (p[nlfd + i].revents)
            read_pending(d, i);
        else if (now >= d->wait[i].deadline)
            drop(d, i); /* silent: nobody we know */
    }
    for (int i = 0; i < nlfd; i++)
        if (p[i].revents & POLLIN)
            take_connection(d, lfd[i], i == 0);
}

int gcsh_link_accept(gcsh_ctx *ctx, const int *lfd, int nlfd, const unsigned char *token,
                     gcsh_link *link)
{
    door *d = calloc(1, sizeof *d);
    if (!d)
        return gcsh_set_error(ctx, "rank 0: out of memory while accepting control connections");
    *d = (door){.ctx = ctx, .token = token, .link = link};
    int expected = 2 * (ctx->size - 1);
    double deadline = gcsh_now_seconds() + ACCEPT_SECONDS;
    while (d->got < expected && gcsh_now_seconds() < deadline)
        serve(d, lfd, nlfd, deadline);
    int got = d->got;
    while (d->nwait > 0)
        drop(d, d->nwait - 1);
    free(d);
    if (got < expected)
        return gcsh_set_error(ctx, "rank 0: only %d of %d control connections arrived in %d s",
                              got, expected, ACCEPT_SECONDS);
    return 0;
}
