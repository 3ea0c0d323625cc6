/* The network path of a GPU backend's windows: one-sided operations on the
 * window slice of a rank on another node, where NVLink loads and stores do
 * not reach (src/DESIGN.md, Nodes).  The protocol is the host's
 * (core/netpath.c: TCP, a server thread per rank, each request answered
 * once applied); what differs is who applies it and where the bytes are:
 * the target's server applies it to device memory as the device runtime
 * says (gpu_rt.h: net_server; cuda: a proxy, cuda_net.c).
 *
 * The origin (here): an operation runs now, on the host (a graph cannot
 * capture it; core/graph.c refuses it): it first waits for the rank's
 * stream (interruptibly), so it comes after everything issued before it,
 * copies a put's source out of device memory in pieces of
 * GCSH_NETPATH_CHUNK, sends each and waits for its answer (a get: the
 * reverse), and returns once the target applied it.  So w:fence() and
 * c:quiet() find nothing of it outstanding, and what the rank issues next
 * starts after it. */
#include <stdlib.h>

#include "gpu/gpu_net.h"

void gpu_net_stop(gcsh_gpu_net *n)
{
    gcsh_netpath_stop(&n->server);
    free(n->stage);
    n->stage = NULL;
}

/* Whether c's ranks are on several nodes (ctx->node_of, by world rank):
 * the same answer on every rank of c, so they agree on the exchange. */
static int spans_nodes(gcsh_ctx *ctx, const gcsh_comm_impl *c)
{
    MPI_Group world, mine;
    int size = 0, spans = 0;
    if (!ctx->node_of)
        return 0;
    MPI_Comm comm = gcsh_gpu()->comm_mpi(c);
    MPI_Comm_size(comm, &size);
    int *ranks = malloc(2 * (size_t)size * sizeof *ranks);
    if (!ranks)
        return 1; /* unknown: serve, which works either way */
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Comm_group(comm, &mine);
    for (int r = 0; r < size; r++)
        ranks[r] = r;
    MPI_Group_translate_ranks(mine, size, ranks, world, ranks + size);
    for (int r = 1; r < size && !spans; r++)
        spans = ranks[size + r] != MPI_UNDEFINED &&
                ctx->node_of[ranks[size + r]] != ctx->node_of[ranks[size]];
    MPI_Group_free(&mine);
    MPI_Group_free(&world);
    free(ranks);
    return spans;
}

int gpu_net_share(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_window_impl *w, gcsh_window_desc *d,
                  int failed, char *report, size_t len)
{
    const gcsh_gpu_rt *rt = gcsh_gpu();
    gcsh_netpath_server srv = {0};
    if (!spans_nodes(ctx, w->c))
        return failed ? -1 : 0;
    int rc = failed ? -1 : rt->net_server(ctx, st, &srv);
    void *mine = rc == 0 && d->team_size > 0 ? d->peer[d->team_rank] : NULL;
    if (rc == 0 && !mine)
        rc = gcsh_set_error(ctx, "network path: the window has no slice of mine to serve");
    MPI_Comm comm = rt->comm_mpi(w->c);
    return gcsh_netpath_share(ctx, &rt->net(st)->server, &srv, comm, rc != 0, mine,
                              d->alloc_bytes, d->team_size, &w->remote, &w->net_id, report, len);
}

void gpu_net_forget(gcsh_gpu_dev *st, gcsh_window_impl *w)
{
    /* waits for a request on it in progress; id 0: not served (one node) */
    if (w->net_id)
        gcsh_netpath_unregister(gcsh_gpu()->net(st)->server, w->net_id);
    w->net_id = 0;
    free(w->remote);
    w->remote = NULL;
}

/* A put or get, piece by piece through the staging buffer, the device side
 * by the backend's copy (which waits for the rank's stream: a get's bytes
 * are in place when it returns). */
static int move_bytes(gcsh_ctx *ctx, gcsh_gpu_dev *st, const gcsh_net_addr *t, int rank, int get,
                      size_t offset, void *data, int loc, size_t bytes)
{
    const gcsh_gpu_rt *rt = gcsh_gpu();
    gcsh_gpu_net *n = rt->net(st);
    if (!n->stage && !(n->stage = malloc(GCSH_NETPATH_CHUNK)))
        return gcsh_set_error(ctx, "network path: out of host memory");
    for (size_t done = 0; done < bytes;) {
        size_t k = bytes - done < GCSH_NETPATH_CHUNK ? bytes - done : GCSH_NETPATH_CHUNK;
        char *near = (char *)data + done;
        if (!get && rt->mem->copy(ctx, n->stage, GCSH_LOC_HOST, near, loc, k) != 0)
            return -1;
        if (gcsh_netpath_request(ctx, n->server, t, rank, get ? GCSH_NET_GET : GCSH_NET_PUT,
                                 offset + done, n->stage, k, 0, NULL) != 0)
            return -1;
        if (get && rt->mem->copy(ctx, near, loc, n->stage, GCSH_LOC_HOST, k) != 0)
            return -1;
        done += k;
    }
    return 0;
}

/* gcsh_window_ops.net: one operation on a rank off the node. */
int gpu_win_net(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d, int rank,
                enum gcsh_net_op op, size_t offset, void *data, size_t bytes, uint64_t value,
                uint64_t *old)
{
    const gcsh_gpu_rt *rt = gcsh_gpu();
    gcsh_gpu_dev *st = rt->enter(ctx);
    if (!st)
        return -1;
    int me, size;
    rt->comm_place(w->c, &me, &size);
    if (!w->remote || rank < 0 || rank >= size)
        return gcsh_set_error(ctx, "window: rank %d is not reached over the network", rank);
    const gcsh_net_addr *t = &w->remote[rank];
    /* after everything issued before it (kernels, copies, signals on the stream) */
    if (rt->wait(ctx, st) != 0)
        return -1;
    if (op == GCSH_NET_PUT || op == GCSH_NET_GET)
        return move_bytes(ctx, st, t, rank, op == GCSH_NET_GET, offset, data, d->loc, bytes);
    return gcsh_netpath_request(ctx, rt->net(st)->server, t, rank, op, offset, NULL, 0, value,
                                old);
}
