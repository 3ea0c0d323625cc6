/* The network path's protocol, shared by the backends (netpath.c): one-sided
 * operations on a window slice of a rank on another node, where loads and
 * stores reach only the node (src/DESIGN.md, Nodes).
 *
 * Every rank with a window spanning several nodes runs a server thread (a
 * TCP socket, a random token, a table of registered slices).  A backend
 * says how its server applies a request to one of its slices (the host:
 * memcpy and C11 atomics on host memory; cuda: a proxy, copies on a stream
 * of its own into device memory, staged through host memory), and calls
 * gcsh_netpath_share in a window's last stage and gcsh_netpath_request for
 * each operation.  Each request is answered once applied at the target and
 * an origin sends the next only after the answer, so operations land in
 * the order issued: a put's signal comes after its data. */
#ifndef GCSH_CORE_NETPATH_H
#define GCSH_CORE_NETPATH_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "core/gcsh.h"

/* The most bytes the server applies at once: a put or get is applied in
 * pieces of this size, in order (the backend's staging buffers). */
#define GCSH_NETPATH_CHUNK ((size_t)4 << 20)

/* What a rank tells the others of one slice. */
typedef struct gcsh_net_addr {
    uint32_t addr;           /* IPv4, network order */
    uint16_t port, pad;
    unsigned char token[16]; /* the server's: a request without it is dropped */
    uint64_t id;             /* the slice, at that server */
} gcsh_net_addr;

/* How a backend's server applies requests to its slices.  Run on the
 * server thread, one request at a time; each returns 0, or -1 after
 * saying why on stderr (the origin is told the target failed).  base is
 * the registered slice; bounds and the word's alignment are checked. */
typedef struct gcsh_netpath_server {
    const char *name;        /* for reports: "tcp" */
    /* put: bytes (<= GCSH_NETPATH_CHUNK) of src (host memory) to base + offset,
     * visible before the answer */
    int (*write)(void *arg, void *base, uint64_t offset, const void *src, size_t bytes);
    /* get: bytes (<= GCSH_NETPATH_CHUNK) at base + offset into dst (host memory) */
    int (*read)(void *arg, void *base, uint64_t offset, void *dst, size_t bytes);
    /* set, add or fetch-add (*old: the word before) of the 64-bit word at
     * base + offset, with release ordering: what was written before is
     * visible to whoever sees the new value */
    int (*word)(void *arg, void *base, enum gcsh_net_op op, uint64_t offset, uint64_t value,
                uint64_t *old);
    /* Optional: run once on the server thread before its first request */
    void (*thread_start)(void *arg);
    void *arg;
} gcsh_netpath_server;

typedef struct gcsh_netpath gcsh_netpath;

/* Collective over comm (every rank calls it, even one whose stage failed
 * before: failed != 0): serves [base, base + bytes) on *net (the server
 * started on first use, with srv) and gathers every rank's address into
 * *remote ([communicator size], malloc'ed; freed by the caller), *id the
 * slice's at my server (0: none).  Appends a line to report, saying it
 * serves the communicator's ranks off the team (team: its size).  0, or
 * -1 with ctx->err (failed: -1 and nothing more said). */
int gcsh_netpath_share(gcsh_ctx *ctx, gcsh_netpath **net, const gcsh_netpath_server *srv,
                       MPI_Comm comm, int failed, void *base, size_t bytes, int team,
                       gcsh_net_addr **remote, uint64_t *id, char *report, size_t len);
/* Stops serving slice id (waits for a request on it in progress). */
void gcsh_netpath_unregister(gcsh_netpath *net, uint64_t id);
/* Stops the server and closes every connection; *net = NULL. */
void gcsh_netpath_stop(gcsh_netpath **net);

/* One operation on the slice t names (communicator rank `rank`'s, for
 * messages), from host memory data (put: bytes from it; get: into it);
 * waits for the answer, polling ctx->interrupt.  0, or -1 with ctx->err. */
int gcsh_netpath_request(gcsh_ctx *ctx, gcsh_netpath *net, const gcsh_net_addr *t, int rank,
                         enum gcsh_net_op op, uint64_t offset, void *data, size_t bytes,
                         uint64_t value, uint64_t *old);

/* A backend's gcsh_window_ops.net. */
typedef int gcsh_netpath_op_fn(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                               int rank, enum gcsh_net_op op, size_t offset, void *data,
                               size_t bytes, uint64_t value, uint64_t *old);
/* A transfer's post to a peer off the team (p->net): each segment one put
 * or get through net (the far side is an offset: backend.h), then the
 * signal's add, each applied before the next.  0, or -1 with ctx->err. */
int gcsh_netpath_post(gcsh_ctx *ctx, const gcsh_xfer_plan *p, gcsh_netpath_op_fn *net);

#endif
