/* The cuda backend's network path: one-sided operations on the window
 * slice of a rank on another node, where NVLink loads and stores do not
 * reach (src/DESIGN.md, Nodes).  The protocol is the host's
 * (core/netpath.c: TCP, a server thread per rank, each request answered
 * once applied); what differs is who applies it and where the bytes are.
 *
 * The target: its server thread is the proxy (as NVSHMEM's proxy thread
 * is).  It applies each request to the rank's device memory on a stream of
 * its own, staged through host memory and a device bounce buffer (window
 * memory is only copied device to device: cuda_mem.c's copy_via_bounce
 * says why), and waits for that stream before it answers: a put's bytes
 * are in device memory before the answer, and a signal's set or add is the
 * signal kernel (release at system scope), so whoever sees the signal sees
 * the data, as with a peer's put in the node.  A get copies the bytes out
 * after every request before it was applied.
 *
 * The origin: an operation runs now, on the host (a CUDA graph cannot
 * capture it; core/graph.c refuses it): it first waits for the rank's
 * stream (interruptibly), so it comes after everything issued before it,
 * copies a put's source out of device memory in pieces of
 * GCSH_NETPATH_CHUNK, sends each and waits for its answer (a get: the
 * reverse), and returns once the target applied it.  So w:fence() and
 * c:quiet() find nothing of it outstanding, and what the rank issues next
 * starts after it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_window.h"

/* The proxy's CUDA resources, made on its thread at the first request
 * (the server thread is the only one that uses them). */
struct cuda_proxy {
    int dev, rank;
    int ready;              /* 1 made, -1 could not be made */
    cudaStream_t stream;
    void *bounce;           /* GCSH_NETPATH_CHUNK device bytes */
    uint64_t *old_dev;      /* fetch-add's word before */
};

/* Says why a proxy's call failed, on the target's stderr (the origin is
 * told the target could not apply the request). */
static int proxy_failed(const cuda_proxy *p, const char *call, cudaError_t e)
{
    (void)cudaGetLastError();
    fprintf(stderr, "gcsh: rank %d: network path proxy: %s: %s\n", p->rank, call,
            cudaGetErrorString(e));
    return -1;
}

#define PROXY_TRY(p, call)                                                                         \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            return proxy_failed((p), #call, e_);                                                   \
    } while (0)

static void proxy_thread_start(void *arg)
{
    cuda_proxy *p = arg;
    cudaSetDevice(p->dev);
}

/* The stream and buffers, on first use: 0, or -1. */
static int proxy_ready(cuda_proxy *p)
{
    if (p->ready)
        return p->ready > 0 ? 0 : -1;
    p->ready = -1;
    PROXY_TRY(p, cudaStreamCreateWithFlags(&p->stream, cudaStreamNonBlocking));
    /* stream-ordered allocations: a plain cudaMalloc may wait for the GPU */
    PROXY_TRY(p, cudaMallocAsync(&p->bounce, GCSH_NETPATH_CHUNK, p->stream));
    PROXY_TRY(p, cudaMallocAsync((void **)&p->old_dev, sizeof *p->old_dev, p->stream));
    PROXY_TRY(p, cudaStreamSynchronize(p->stream));
    p->ready = 1;
    return 0;
}

static int proxy_write(void *arg, void *base, uint64_t offset, const void *src, size_t bytes)
{
    cuda_proxy *p = arg;
    if (proxy_ready(p) != 0)
        return -1;
    PROXY_TRY(p, cudaMemcpyAsync(p->bounce, src, bytes, cudaMemcpyHostToDevice, p->stream));
    PROXY_TRY(p, cudaMemcpyAsync((char *)base + offset, p->bounce, bytes,
                                 cudaMemcpyDeviceToDevice, p->stream));
    PROXY_TRY(p, cudaStreamSynchronize(p->stream)); /* in device memory before the answer */
    return 0;
}

static int proxy_read(void *arg, void *base, uint64_t offset, void *dst, size_t bytes)
{
    cuda_proxy *p = arg;
    if (proxy_ready(p) != 0)
        return -1;
    PROXY_TRY(p, cudaMemcpyAsync(p->bounce, (const char *)base + offset, bytes,
                                 cudaMemcpyDeviceToDevice, p->stream));
    PROXY_TRY(p, cudaMemcpyAsync(dst, p->bounce, bytes, cudaMemcpyDeviceToHost, p->stream));
    PROXY_TRY(p, cudaStreamSynchronize(p->stream));
    return 0;
}

/* The signal kernels of the node's own ranks, on the proxy's stream. */
static int proxy_word(void *arg, void *base, enum gcsh_net_op op, uint64_t offset, uint64_t value,
                      uint64_t *old)
{
    cuda_proxy *p = arg;
    uint64_t *word = (uint64_t *)(void *)((char *)base + offset);
    if (proxy_ready(p) != 0)
        return -1;
    if (op == GCSH_NET_FETCH_ADD) {
        PROXY_TRY(p, gcsh_k_signal_fetch_add(word, value, p->old_dev, p->stream));
        PROXY_TRY(p, cudaMemcpyAsync(old, p->old_dev, sizeof *old, cudaMemcpyDeviceToHost,
                                     p->stream));
    } else {
        PROXY_TRY(p, gcsh_k_signal_store(word, value, op == GCSH_NET_ADD, p->stream));
    }
    PROXY_TRY(p, cudaStreamSynchronize(p->stream));
    return 0;
}

/* The server of this rank's network path, with its proxy. */
static int server_of(gcsh_ctx *ctx, cuda_state *st, gcsh_netpath_server *srv)
{
    if (!st->proxy) {
        st->proxy = calloc(1, sizeof *st->proxy);
        if (!st->proxy)
            return gcsh_set_error(ctx, "network path: out of host memory");
        st->proxy->dev = st->dev;
        st->proxy->rank = ctx->rank;
    }
    *srv = (gcsh_netpath_server){.name = "tcp", .write = proxy_write, .read = proxy_read,
                                 .word = proxy_word, .thread_start = proxy_thread_start,
                                 .arg = st->proxy};
    return 0;
}

void cuda_net_stop(cuda_state *st)
{
    gcsh_netpath_stop(&st->net); /* the proxy thread ends first */
    cuda_proxy *p = st->proxy;
    if (p) {
        if (p->stream) {
            cudaStreamSynchronize(p->stream);
            if (p->bounce)
                cudaFreeAsync(p->bounce, p->stream);
            if (p->old_dev)
                cudaFreeAsync(p->old_dev, p->stream);
            cudaStreamSynchronize(p->stream);
            cudaStreamDestroy(p->stream);
        }
        free(p);
        st->proxy = NULL;
    }
    free(st->net_stage);
    st->net_stage = NULL;
}

/* Whether comm's ranks are on several nodes (ctx->node_of, by world rank):
 * the same answer on every rank of comm, so they agree on the exchange. */
static int spans_nodes(gcsh_ctx *ctx, MPI_Comm comm)
{
    MPI_Group world, mine;
    int size = 0, spans = 0;
    if (!ctx->node_of)
        return 0;
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

int cuda_net_share(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w, gcsh_window_desc *d,
                   int failed, char *report, size_t len)
{
    gcsh_netpath_server srv = {0};
    if (!spans_nodes(ctx, w->c->mpi))
        return failed ? -1 : 0;
    int rc = failed ? -1 : server_of(ctx, st, &srv);
    void *mine = rc == 0 && d->team_size > 0 ? d->peer[d->team_rank] : NULL;
    if (rc == 0 && !mine)
        rc = gcsh_set_error(ctx, "network path: the window has no slice of mine to serve");
    return gcsh_netpath_share(ctx, &st->net, &srv, w->c->mpi, rc != 0, mine, d->alloc_bytes,
                              d->team_size, &w->remote, &w->net_id, report, len);
}

void cuda_net_forget(cuda_state *st, gcsh_window_impl *w)
{
    gcsh_netpath_unregister(st->net, w->net_id); /* waits for a request on it in progress */
    w->net_id = 0;
    free(w->remote);
    w->remote = NULL;
}

/* A put or get, piece by piece through st->net_stage, the device side by
 * the backend's copy (which waits for the rank's stream: a get's bytes are
 * in place when it returns). */
static int move_bytes(gcsh_ctx *ctx, cuda_state *st, const gcsh_net_addr *t, int rank, int get,
                      size_t offset, void *data, int loc, size_t bytes)
{
    if (!st->net_stage && !(st->net_stage = malloc(GCSH_NETPATH_CHUNK)))
        return gcsh_set_error(ctx, "network path: out of host memory");
    for (size_t done = 0; done < bytes;) {
        size_t k = bytes - done < GCSH_NETPATH_CHUNK ? bytes - done : GCSH_NETPATH_CHUNK;
        char *near = (char *)data + done;
        if (!get && gcsh_cuda_mem_ops.copy(ctx, st->net_stage, GCSH_LOC_HOST, near, loc, k) != 0)
            return -1;
        if (gcsh_netpath_request(ctx, st->net, t, rank, get ? GCSH_NET_GET : GCSH_NET_PUT,
                                 offset + done, st->net_stage, k, 0, NULL) != 0)
            return -1;
        if (get && gcsh_cuda_mem_ops.copy(ctx, near, loc, st->net_stage, GCSH_LOC_HOST, k) != 0)
            return -1;
        done += k;
    }
    return 0;
}

int cuda_win_net(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d, int rank,
                 enum gcsh_net_op op, size_t offset, void *data, size_t bytes, uint64_t value,
                 uint64_t *old)
{
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    if (!w->remote || rank < 0 || rank >= w->c->size)
        return gcsh_set_error(ctx, "cuda window: rank %d is not reached over the network", rank);
    const gcsh_net_addr *t = &w->remote[rank];
    /* after everything issued before it (kernels, copies, signals on the stream) */
    if (cuda_wait(ctx, st, NULL) != 0)
        return -1;
    if (op == GCSH_NET_PUT || op == GCSH_NET_GET)
        return move_bytes(ctx, st, t, rank, op == GCSH_NET_GET, offset, data, d->loc, bytes);
    return gcsh_netpath_request(ctx, st->net, t, rank, op, offset, NULL, 0, value, old);
}
