/* The network path's protocol (netpath.h): a rank's one-sided server and
 * its connections to others', for every backend.
 *
 * A window's last stage registers the rank's slice at its server and
 * exchanges every member's (address, port, token, slice id) over the
 * communicator (gcsh_netpath_share).  An origin then sends a request on a
 * connection to the target's server (one per target, kept): put (data into
 * the slice), get (data back), set, add and fetch-add of a 64-bit signal
 * word.  Each request is answered once applied, and an origin sends the
 * next only after the answer, so a put followed by its signal's add lands
 * in that order: whoever sees the signal sees the data.  The origin's wait
 * polls its interrupt flag; an interrupted request drops its connection
 * (the next one opens a fresh one).
 *
 * The server thread applies requests one at a time through the backend's
 * gcsh_netpath_server (in pieces of GCSH_NETPATH_CHUNK); it reads a
 * request's header whole before touching memory, a header without the
 * token closes the connection, and so does a connection silent for 30 s in
 * the middle of a request. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "core/mpi_try.h"
#include "core/netpath.h"

#define TOKEN_LEN 16
#define MAX_CONNS 256

/* On the wire: enum gcsh_net_op + 1 (0 is no request). */
enum net_op { NET_PUT = GCSH_NET_PUT + 1, NET_GET, NET_SET, NET_ADD, NET_FETCH_ADD };

typedef struct net_req {
    unsigned char token[TOKEN_LEN];
    uint32_t op, pad;
    uint64_t id, offset, bytes, value;
} net_req;

/* A reply's status: applied, or why not. */
enum { NET_OK = 0, NET_OUT_OF_BOUNDS = -1, NET_FAILED = -2 };

typedef struct net_rep {
    int32_t status; /* NET_OK, NET_OUT_OF_BOUNDS (or an unknown slice), NET_FAILED */
    uint32_t pad;
    uint64_t value; /* fetch-add: the word before */
} net_rep;

typedef struct slice {
    uint64_t id;
    unsigned char *base;
    size_t bytes;
} slice;

/* An origin's connection to one target server. */
typedef struct conn {
    uint32_t addr;
    uint16_t port;
    int fd;
} conn;

struct gcsh_netpath {
    /* the server */
    int lfd, wake[2];
    pthread_t thread;
    int running;
    gcsh_net_addr self;
    gcsh_netpath_server srv; /* how requests are applied */
    unsigned char *buf;      /* GCSH_NETPATH_CHUNK: the server's staging */
    pthread_mutex_t lock;    /* slices */
    slice *slices;
    size_t nslices, cap;
    uint64_t next_id;
    /* the origin's connections (the worker thread's only) */
    conn *conns;
    size_t nconns, capconns;
};

static int send_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t k = send(fd, p, len, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        len -= (size_t)k;
    }
    return 0;
}

/* ---- the server ---------------------------------------------------------------- */

/* The slice id names, or NULL (under net->lock). */
static const slice *find_slice(const gcsh_netpath *net, uint64_t id)
{
    for (size_t i = 0; i < net->nslices; i++)
        if (net->slices[i].id == id)
            return &net->slices[i];
    return NULL;
}

/* Reads and drops len bytes (a put that is refused). */
static int drain(int fd, uint64_t len)
{
    char buf[4096];
    while (len) {
        size_t k = len < sizeof buf ? (size_t)len : sizeof buf;
        if (gcsh_read_all(fd, buf, k) != 0)
            return -1;
        len -= k;
    }
    return 0;
}

/* A put of q.bytes to s, piece by piece: NET_OK or NET_FAILED (the rest
 * is read and dropped); -1 when the connection is to be closed. */
static int serve_put(gcsh_netpath *net, int fd, const slice *s, const net_req *q)
{
    int status = NET_OK;
    for (uint64_t done = 0; done < q->bytes;) {
        size_t k = q->bytes - done < GCSH_NETPATH_CHUNK ? (size_t)(q->bytes - done)
                                                         : GCSH_NETPATH_CHUNK;
        if (gcsh_read_all(fd, net->buf, k) != 0)
            return -1;
        if (status == NET_OK && net->srv.write(net->srv.arg, s->base, q->offset + done, net->buf,
                                               k) != 0)
            status = NET_FAILED;
        done += k;
    }
    return status;
}

/* A get of q.bytes from s: the answer, then the data piece by piece.  A
 * piece that cannot be read after the answer went closes the connection
 * (the origin says the target failed). */
static int serve_get(gcsh_netpath *net, int fd, const slice *s, const net_req *q)
{
    size_t first = q->bytes < GCSH_NETPATH_CHUNK ? (size_t)q->bytes : GCSH_NETPATH_CHUNK;
    net_rep r = {0};
    if (first && net->srv.read(net->srv.arg, s->base, q->offset, net->buf, first) != 0)
        r.status = NET_FAILED;
    if (send_all(fd, &r, sizeof r) != 0)
        return -1;
    if (r.status != NET_OK)
        return 0;
    for (uint64_t done = 0; done < q->bytes;) {
        size_t k = q->bytes - done < GCSH_NETPATH_CHUNK ? (size_t)(q->bytes - done)
                                                         : GCSH_NETPATH_CHUNK;
        if (done && net->srv.read(net->srv.arg, s->base, q->offset + done, net->buf, k) != 0)
            return -1;
        if (send_all(fd, net->buf, k) != 0)
            return -1;
        done += k;
    }
    return 0;
}

/* One request on fd, under net->lock: 0, or -1 when the connection is to
 * be closed. */
static int serve_request(gcsh_netpath *net, int fd, const net_req *q)
{
    const slice *s = find_slice(net, q->id);
    int word = q->op == NET_SET || q->op == NET_ADD || q->op == NET_FETCH_ADD;
    uint64_t len = word ? 8 : q->bytes;
    int ok = s && q->offset <= s->bytes && len <= s->bytes - q->offset &&
             (!word || q->offset % 8 == 0) && q->op >= NET_PUT && q->op <= NET_FETCH_ADD;
    net_rep r = {.status = NET_OUT_OF_BOUNDS};
    if (ok && q->op == NET_GET)
        return serve_get(net, fd, s, q);
    if (!ok) {
        if (q->op == NET_PUT && drain(fd, q->bytes) != 0)
            return -1;
    } else if (q->op == NET_PUT) {
        int st = serve_put(net, fd, s, q);
        if (st < 0)
            return -1;
        r.status = st;
    } else {
        r.status = net->srv.word(net->srv.arg, s->base, (enum gcsh_net_op)(q->op - 1), q->offset,
                                 q->value, &r.value) == 0 ? NET_OK : NET_FAILED;
    }
    return send_all(fd, &r, sizeof r);
}

/* One request on fd: 0, or -1 when the connection is to be closed. */
static int serve_one(gcsh_netpath *net, int fd)
{
    net_req q;
    if (gcsh_read_all(fd, &q, sizeof q) != 0 || memcmp(q.token, net->self.token, TOKEN_LEN) != 0)
        return -1;
    pthread_mutex_lock(&net->lock);
    int rc = serve_request(net, fd, &q);
    pthread_mutex_unlock(&net->lock);
    return rc;
}

static void *serve(void *arg)
{
    gcsh_netpath *net = arg;
    if (net->srv.thread_start)
        net->srv.thread_start(net->srv.arg);
    struct pollfd p[MAX_CONNS + 2];
    int n = 2;
    p[0] = (struct pollfd){.fd = net->wake[0], .events = POLLIN};
    p[1] = (struct pollfd){.fd = net->lfd, .events = POLLIN};
    for (;;) {
        if (poll(p, (nfds_t)n, -1) < 0 && errno != EINTR)
            break;
        if (p[0].revents)
            break;
        if ((p[1].revents & POLLIN) && n < MAX_CONNS + 2) {
            int fd = accept4(net->lfd, NULL, NULL, SOCK_CLOEXEC);
            if (fd >= 0) {
                int one = 1;
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                /* a client that stops part-way through a request cannot hold the
                 * server: a read that waits this long drops its connection */
                struct timeval idle = {.tv_sec = 30};
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &idle, sizeof idle);
                p[n++] = (struct pollfd){.fd = fd, .events = POLLIN};
            }
        }
        for (int i = 2; i < n; i++) {
            if (!p[i].revents)
                continue;
            if ((p[i].revents & POLLIN) && serve_one(net, p[i].fd) == 0)
                continue;
            close(p[i].fd);
            p[i--] = p[--n];
        }
    }
    for (int i = 2; i < n; i++)
        close(p[i].fd);
    return NULL;
}

/* The IPv4 address this host's name resolves to (network order), or 0. */
static uint32_t own_address(void)
{
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    return gcsh_resolve_ipv4(host);
}

static int start(gcsh_ctx *ctx, gcsh_netpath *net)
{
    net->lfd = net->wake[0] = net->wake[1] = -1;
    pthread_mutex_init(&net->lock, NULL);
    net->next_id = 1;
    uint32_t addr = own_address();
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = addr};
    socklen_t len = sizeof a;
    if (!addr)
        return gcsh_set_error(ctx, "network path: this host's name does not resolve to an IPv4 "
                                   "address the other nodes could reach");
    if (getrandom(net->self.token, TOKEN_LEN, 0) != TOKEN_LEN)
        return gcsh_set_error(ctx, "network path: no random bytes for the server's token");
    net->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (net->lfd < 0 || bind(net->lfd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(net->lfd, 64) != 0 || getsockname(net->lfd, (struct sockaddr *)&a, &len) != 0 ||
        pipe2(net->wake, O_CLOEXEC) != 0)
        return gcsh_set_error(ctx, "network path: cannot listen on %s: %s",
                              inet_ntoa(a.sin_addr), strerror(errno));
    net->self.addr = addr;
    net->self.port = ntohs(a.sin_port);
    if (pthread_create(&net->thread, NULL, serve, net) != 0)
        return gcsh_set_error(ctx, "network path: cannot start the server thread");
    net->running = 1;
    return 0;
}

/* *net, started on first use with srv; NULL with ctx->err. */
static gcsh_netpath *netpath_get(gcsh_ctx *ctx, gcsh_netpath **slot,
                                 const gcsh_netpath_server *srv)
{
    if (*slot)
        return *slot;
    gcsh_netpath *net = calloc(1, sizeof *net);
    if (!net) {
        gcsh_set_error(ctx, "network path: out of host memory");
        return NULL;
    }
    net->srv = *srv;
    net->buf = malloc(GCSH_NETPATH_CHUNK);
    if (!net->buf)
        gcsh_set_error(ctx, "network path: out of host memory");
    if (!net->buf || start(ctx, net) != 0) {
        gcsh_netpath_stop(&net);
        return NULL;
    }
    *slot = net;
    return net;
}

void gcsh_netpath_stop(gcsh_netpath **slot)
{
    gcsh_netpath *net = *slot;
    if (!net)
        return;
    if (net->running) {
        char b = 0;
        if (write(net->wake[1], &b, 1) != 1)
            pthread_cancel(net->thread);
        pthread_join(net->thread, NULL);
    }
    for (int i = 0; i < 2; i++)
        if (net->wake[i] >= 0)
            close(net->wake[i]);
    if (net->lfd >= 0)
        close(net->lfd);
    for (size_t i = 0; i < net->nconns; i++)
        close(net->conns[i].fd);
    pthread_mutex_destroy(&net->lock);
    free(net->conns);
    free(net->slices);
    free(net->buf);
    free(net);
    *slot = NULL;
}

/* Serves [base, base + bytes): *out says where (0 or -1). */
static int netpath_register(gcsh_ctx *ctx, gcsh_netpath *net, void *base, size_t bytes,
                            gcsh_net_addr *out)
{
    pthread_mutex_lock(&net->lock);
    if (net->nslices == net->cap) {
        size_t cap = net->cap ? 2 * net->cap : 8;
        slice *s = realloc(net->slices, cap * sizeof *s);
        if (!s) {
            pthread_mutex_unlock(&net->lock);
            return gcsh_set_error(ctx, "network path: out of host memory");
        }
        net->slices = s;
        net->cap = cap;
    }
    *out = net->self;
    out->id = net->next_id++;
    net->slices[net->nslices++] = (slice){out->id, base, bytes};
    pthread_mutex_unlock(&net->lock);
    return 0;
}

void gcsh_netpath_unregister(gcsh_netpath *net, uint64_t id)
{
    if (!net || !id)
        return;
    pthread_mutex_lock(&net->lock);
    for (size_t i = 0; i < net->nslices; i++)
        if (net->slices[i].id == id) {
            net->slices[i] = net->slices[--net->nslices];
            break;
        }
    pthread_mutex_unlock(&net->lock);
}

int gcsh_netpath_share(gcsh_ctx *ctx, gcsh_netpath **slot, const gcsh_netpath_server *srv,
                       MPI_Comm comm, int failed, void *base, size_t bytes, int team,
                       gcsh_net_addr **remote, uint64_t *id, char *report, size_t len)
{
    int size = 0;
    MPI_Comm_size(comm, &size);
    gcsh_net_addr mine = {0};
    gcsh_netpath *net = failed ? NULL : netpath_get(ctx, slot, srv);
    int rc = !net || netpath_register(ctx, net, base, bytes, &mine) != 0 ? -1 : 0;
    *id = rc == 0 ? mine.id : 0;
    *remote = calloc((size_t)size, sizeof **remote);
    /* every rank takes part, whatever failed before (collective) */
    gcsh_net_addr scratch[1];
    int mpi = MPI_Allgather(&mine, sizeof mine, MPI_BYTE, *remote ? (void *)*remote : scratch,
                            *remote ? (int)sizeof mine : 0, MPI_BYTE, comm);
    if (rc != 0)
        return -1;
    if (!*remote)
        return gcsh_set_error(ctx, "network path: out of host memory");
    if (mpi != MPI_SUCCESS)
        return gcsh_mpi_failed(ctx, "network path: ", "MPI_Allgather", mpi, __FILE__, __LINE__);
    size_t at = strlen(report);
    struct in_addr a = {.s_addr = mine.addr};
    snprintf(report + at, len - at, "%snetwork path (%s): my slice served at %s:%d to the %d "
                                    "ranks off the node", at ? "\n" : "", srv->name, inet_ntoa(a),
             mine.port, size - team);
    return 0;
}

/* ---- the origin ---------------------------------------------------------------- */

static void drop_conn(gcsh_netpath *net, size_t i)
{
    close(net->conns[i].fd);
    net->conns[i] = net->conns[--net->nconns];
}

/* The connection to the server at t (made on first use), its index, or -1. */
static long conn_to(gcsh_ctx *ctx, gcsh_netpath *net, const gcsh_net_addr *t, int rank)
{
    for (size_t i = 0; i < net->nconns; i++)
        if (net->conns[i].addr == t->addr && net->conns[i].port == t->port)
            return (long)i;
    if (net->nconns == net->capconns) {
        size_t cap = net->capconns ? 2 * net->capconns : 8;
        conn *c = realloc(net->conns, cap * sizeof *c);
        if (!c)
            return gcsh_set_error(ctx, "network path: out of host memory");
        net->conns = c;
        net->capconns = cap;
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = t->addr,
                            .sin_port = htons(t->port)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return gcsh_set_error(ctx, "network path: cannot reach rank %d's server at %s:%d: %s",
                              rank, inet_ntoa(a.sin_addr), t->port, strerror(e));
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    net->conns[net->nconns] = (conn){t->addr, t->port, fd};
    return (long)net->nconns++;
}

/* Waits until fd is readable, polling the interrupt flag: 0, or -1. */
static int wait_answer(gcsh_ctx *ctx, int fd)
{
    for (;;) {
        if (atomic_load(&ctx->interrupt))
            return gcsh_set_error(ctx, "network path: interrupted while waiting for the answer");
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, 100);
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return gcsh_set_error(ctx, "network path: poll: %s", strerror(errno));
    }
}

int gcsh_netpath_request(gcsh_ctx *ctx, gcsh_netpath *net, const gcsh_net_addr *t, int rank,
                         enum gcsh_net_op op, uint64_t offset, void *data, size_t bytes,
                         uint64_t value, uint64_t *old)
{
    if (!net || !t->id)
        return gcsh_set_error(ctx, "network path: rank %d's slice is not served (the window's "
                                   "network path was not set up)", rank);
    long i = conn_to(ctx, net, t, rank);
    if (i < 0)
        return -1;
    int fd = net->conns[i].fd;
    /* on the wire, enum gcsh_net_op + 1 (net_op) */
    net_req q = {.op = (uint32_t)op + 1, .id = t->id, .offset = offset, .bytes = bytes,
                 .value = value};
    memcpy(q.token, t->token, TOKEN_LEN);
    net_rep r;
    int rc = send_all(fd, &q, sizeof q);
    if (rc == 0 && op == GCSH_NET_PUT)
        rc = send_all(fd, data, bytes);
    if (rc != 0) {
        drop_conn(net, (size_t)i);
        return gcsh_set_error(ctx, "network path: rank %d's server closed the connection (is it "
                                   "gone?)", rank);
    }
    if (wait_answer(ctx, fd) != 0) {
        drop_conn(net, (size_t)i); /* its answer may still come: never read it as another's */
        return -1;
    }
    rc = gcsh_read_all(fd, &r, sizeof r);
    if (rc == 0 && r.status == 0 && op == GCSH_NET_GET)
        rc = gcsh_read_all(fd, data, bytes);
    if (rc != 0) {
        drop_conn(net, (size_t)i);
        return gcsh_set_error(ctx, "network path: rank %d's server closed the connection (is it "
                                   "gone?)", rank);
    }
    if (r.status == NET_FAILED)
        return gcsh_set_error(ctx, "network path: rank %d could not apply the request (offset "
                                   "%llu, %zu bytes; its error output says why)", rank,
                              (unsigned long long)offset, bytes);
    if (r.status != NET_OK)
        return gcsh_set_error(ctx, "network path: rank %d refused the request (offset %llu, %zu "
                                   "bytes: outside its slice)", rank, (unsigned long long)offset,
                              bytes);
    if (old)
        *old = r.value;
    return 0;
}

int gcsh_netpath_post(gcsh_ctx *ctx, const gcsh_xfer_plan *p, gcsh_netpath_op_fn *net)
{
    for (size_t i = 0; i < p->nseg; i++) {
        const gcsh_xfer_seg *s = &p->seg[i];
        size_t far = (size_t)(uintptr_t)(p->get ? s->src : s->dst);
        void *near = p->get ? s->dst : (void *)(uintptr_t)s->src;
        if (s->bytes && net(ctx, p->net, p->net_desc, p->peer,
                            p->get ? GCSH_NET_GET : GCSH_NET_PUT, far, near, s->bytes, 0,
                            NULL) != 0)
            return -1;
    }
    /* signal_net, not signal: slot 0's byte offset is 0, a NULL pointer */
    if (!p->signal_net)
        return 0;
    return net(ctx, p->signal_net, p->signal_net_desc, p->peer, GCSH_NET_ADD,
               (size_t)(uintptr_t)p->signal, NULL, 0, p->signal_value, NULL);
}
