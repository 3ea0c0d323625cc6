/* Kind "vmm": native CUDA virtual memory, as PyTorch's CUDA symmetric memory
 * does it.  Each member cuMemCreate's its slice with a POSIX-fd handle type,
 * exports the fd, and passes it to the other members of its node over a
 * private Unix socket (cuda_fdpass.c); each member imports every peer's
 * handle and maps all slices into one reservation, slice i at base + i *
 * bytes, read/write for its own GPU.  The team is the communicator's ranks
 * on this node (ctx->node, which GCSH_RANKS_PER_NODE can narrow).
 *
 * Nothing here is collective in NCCL's sense: undoing is local (unmap,
 * release), so any failure is agreed on and every rank undoes its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cuda/cuda_fdpass.h"
#include "cuda/cuda_window.h"

#define FDX_TIMEOUT_S 30.0

typedef struct vmm_id {
    int node;
    int pad;
    uint64_t nonce;
} vmm_id;

/* A nonce for the socket names; getrandom should not fail, and if it does
 * the names only need to differ between concurrent windows (SO_PEERCRED,
 * not the name, is what keeps other users out). */
static uint64_t make_nonce(void)
{
    uint64_t x = 0;
    if (getrandom(&x, sizeof x, 0) == (ssize_t)sizeof x)
        return x;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ((uint64_t)getpid() << 40) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20);
}

/* The node team: comm ranks with my node index, in comm-rank order; the
 * nonce is the first member's. */
static int find_team(gcsh_ctx *ctx, gcsh_window_impl *w, gcsh_window_desc *d, uint64_t *nonce)
{
    gcsh_comm_impl *c = w->c;
    vmm_id mine = {ctx->node, 0, make_nonce()};
    vmm_id *all = calloc((size_t)c->size, sizeof *all);
    if (!all)
        return gcsh_set_error(ctx, "vmm window: out of host memory");
    int rc = gcsh_cuda_comm_ops.agree(ctx, c, &mine, all, sizeof mine);
    d->team_size = 0;
    for (int r = 0; rc == 0 && r < c->size; r++) {
        if (all[r].node != ctx->node)
            continue;
        if (d->team_size == 0)
            *nonce = all[r].nonce;
        if (r == c->rank)
            d->team_rank = d->team_size;
        d->team[d->team_size++] = r;
    }
    free(all);
    w->n = d->team_size;
    return rc;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Step 1 (local): my slice, its exported fd, and my listening socket. */
static int vmm_alloc(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w, int me, int *fd)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = st->dev;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    w->handle = calloc((size_t)w->n, sizeof *w->handle);
    w->mapped = calloc((size_t)w->n, sizeof *w->mapped);
    if (!w->handle || !w->mapped)
        return gcsh_set_error(ctx, "vmm window: out of host memory");
    CU_TRY(ctx, st, MemCreate(&w->handle[me], w->bytes, &prop, 0));
    CU_TRY(ctx, st, MemExportToShareableHandle(fd, w->handle[me],
                                               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    return 0;
fail:
    return -1;
}

/* Imports every peer's fd (closing it: the imported handle holds the
 * memory) and maps all slices into one reservation. */
static int vmm_map(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w, int me, int *fds,
                   size_t gran)
{
    size_t total = (size_t)w->n * w->bytes;
    for (int i = 0; i < w->n; i++) {
        if (i == me)
            continue;
        CU_TRY(ctx, st, MemImportFromShareableHandle(&w->handle[i], (void *)(intptr_t)fds[i],
                                                     CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
        close_fd(&fds[i]);
    }
    CU_TRY(ctx, st, MemAddressReserve(&w->base, total, gran, 0, 0));
    for (int i = 0; i < w->n; i++) {
        CU_TRY(ctx, st, MemMap(w->base + (size_t)i * w->bytes, w->bytes, 0, w->handle[i], 0));
        w->mapped[i] = 1;
    }
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location.id = st->dev;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU_TRY(ctx, st, MemSetAccess(w->base, total, &acc, 1));
    return 0;
fail:
    return -1;
}

/* The host and device peer tables, and a zeroed slice (signals start at 0). */
static int vmm_tables(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w, gcsh_window_desc *d)
{
    size_t tbytes = (size_t)w->n * sizeof(void *);
    for (int i = 0; i < w->n; i++)
        d->peer[i] = (void *)(uintptr_t)(w->base + (size_t)i * w->bytes);
    CUDA_TRY(ctx, cudaMalloc(&d->peer_table_dev, tbytes));
    CUDA_TRY(ctx, cudaMemcpyAsync(d->peer_table_dev, d->peer, tbytes, cudaMemcpyHostToDevice,
                                  st->stream));
    CUDA_TRY(ctx, cudaMemsetAsync(d->peer[d->team_rank], 0, w->bytes, st->stream));
    return cuda_wait(ctx, st, NULL);
fail:
    return -1;
}

/* Local undo of whatever was set up; safe at any stage. */
static void vmm_undo(cuda_state *st, gcsh_window_impl *w, gcsh_window_desc *d)
{
    for (int i = 0; w->mapped && i < w->n; i++)
        if (w->mapped[i])
            st->drv.MemUnmap(w->base + (size_t)i * w->bytes, w->bytes);
    for (int i = 0; w->handle && i < w->n; i++)
        if (w->handle[i])
            st->drv.MemRelease(w->handle[i]);
    if (w->base)
        st->drv.MemAddressFree(w->base, (size_t)w->n * w->bytes);
    if (d && d->peer_table_dev)
        cudaFree(d->peer_table_dev);
    if (d)
        d->peer_table_dev = NULL;
    free(w->handle);
    free(w->mapped);
    w->handle = NULL;
    w->mapped = NULL;
    w->base = 0;
}

int win_vmm_create(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w, gcsh_window_desc *d)
{
    uint64_t nonce = 0;
    int fd = -1, ok, *fds = NULL;
    fdx x = {.listen_fd = -1};
    if (find_team(ctx, w, d, &nonce) != 0)
        return -1;
    int me = d->team_rank;
    ok = cuda_driver_load(ctx, st) == 0 && vmm_alloc(ctx, st, w, me, &fd) == 0 &&
         fdx_listen(ctx, &x, nonce, me, w->n) == 0;
    fds = calloc((size_t)w->n, sizeof *fds);
    if (ok && !fds)
        ok = gcsh_set_error(ctx, "vmm window: out of host memory") == 0;
    for (int i = 0; fds && i < w->n; i++)
        fds[i] = -1;
    /* every listener is bound before anyone connects */
    if (win_agree_ok(ctx, w->c, ok, "vmm window: allocation") != 0)
        goto fail;
    ok = fdx_send_all(ctx, &x, fd) == 0 && fdx_recv_all(ctx, &x, fds, FDX_TIMEOUT_S) == 0 &&
         vmm_map(ctx, st, w, me, fds, d->granularity) == 0 && vmm_tables(ctx, st, w, d) == 0;
    if (win_agree_ok(ctx, w->c, ok, "vmm window: handle exchange and mapping") != 0)
        goto fail;
    snprintf(d->handle, sizeof d->handle,
             "cuMemCreate POSIX fd, %d members mapped at %p, fds over @gcsh-vmm-%u-%016llx-*",
             w->n, (void *)(uintptr_t)w->base, (unsigned)getuid(), (unsigned long long)nonce);
    fdx_close(&x);
    close_fd(&fd);
    free(fds);
    return 0;
fail:
    fdx_close(&x);
    close_fd(&fd);
    for (int i = 0; fds && i < w->n; i++)
        if (i != me)
            close_fd(&fds[i]);
    free(fds);
    if (st->drv.loaded)
        vmm_undo(st, w, d);
    return -1;
}

/* Local: my mappings and handles go; a peer's physical slice lives on
 * until its last mapping (here or on its node mates) is released. */
int win_vmm_destroy(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w)
{
    (void)ctx;
    vmm_undo(st, w, NULL);
    return 0;
}
