/* The cuda backend's network path, the target's side: one-sided
 * operations from ranks on other nodes, where NVLink loads and stores do
 * not reach (src/DESIGN.md, Nodes), applied to this rank's device memory.
 * The protocol is core/netpath.c's (TCP, a server thread per rank, each
 * request answered once applied); the origin's side and the windows'
 * bookkeeping are gpu/gpu_net.c's; here is who applies a request and how
 * (the device runtime's net_server).
 *
 * The server thread is the proxy (as NVSHMEM's proxy thread is).  It
 * applies each request to the rank's device memory on a stream of its own,
 * staged through host memory and a device bounce buffer (window memory is
 * only copied device to device: cuda_mem.c's copy_via_bounce says why),
 * and waits for that stream before it answers: a put's bytes are in device
 * memory before the answer, and a signal's set or add is the signal kernel
 * (release at system scope), so whoever sees the signal sees the data, as
 * with a peer's put in the node.  A get copies the bytes out after every
 * request before it was applied. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda.h"

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

/* The runtime's net_server: this rank's, with its proxy. */
int cuda_net_server(gcsh_ctx *ctx, cuda_state *st, gcsh_netpath_server *srv)
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
    gpu_net_stop(&st->net); /* the proxy thread ends first */
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
}
