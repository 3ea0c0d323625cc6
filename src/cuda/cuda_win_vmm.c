/* Kind "vmm": native CUDA virtual memory, as PyTorch's CUDA symmetric memory
 * does it.  Each member cuMemCreate's its slice with a POSIX-fd handle type,
 * exports the fd, and passes it to the other members of its node over a
 * private Unix socket (cuda_fdpass.c); each member imports every peer's
 * handle and maps all slices into one reservation, slice i at base + i *
 * bytes, read/write for its own GPU.  The team is the communicator's ranks
 * on this node (ctx->node, which GCSH_RANKS_PER_NODE can narrow).
 *
 * Stages (backend.h; winbuild.h agrees on each before the next):
 *   allocate  the team (node and socket nonce of every rank), cuMemCreate
 *   export    cuMemExportToShareableHandle: a POSIX fd; my listening socket
 *             (every listener is bound before anyone connects: the next
 *             stage runs only once every rank finished this one)
 *   exchange  the fds over the sockets, SCM_RIGHTS
 *   map       cuMemImportFromShareableHandle of every peer's fd,
 *             cuMemAddressReserve for all slices, cuMemMap of each
 *   access    cuMemSetAccess: read/write for my GPU
 *   table     the peer pointer table (host and device), my slice zeroed
 *
 * Nothing here is collective in NCCL's sense: undoing is local (unmap,
 * release, close), so any failure is agreed on and every rank undoes its
 * own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cuda/cuda_fdpass.h"
#include "cuda/cuda_window.h"

static const char *const stage_names[] = {"allocate", "export", "exchange",
                                          "map",      "access", "table"};
static const gcsh_window_plan win_vmm_plan = {6, stage_names};

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
static int find_team(gcsh_ctx *ctx, gcsh_window_impl *w, gcsh_window_desc *d)
{
    gcsh_comm_impl *c = w->c;
    vmm_id mine = {ctx->node, 0, make_nonce()};
    vmm_id *all = calloc((size_t)c->size, sizeof *all);
    if (!all)
        return gcsh_set_error(ctx, "vmm window: out of host memory");
    /* inside a stage every rank comes: the exchange need not be interruptible */
    int rc = gcsh_cuda_comm_ops.agree_blocking(ctx, c, &mine, all, sizeof mine);
    d->team_size = 0;
    for (int r = 0; rc == 0 && r < c->size; r++) {
        if (all[r].node != ctx->node)
            continue;
        if (d->team_size == 0)
            w->own->nonce = all[r].nonce;
        if (r == c->rank)
            d->team_rank = d->team_size;
        d->team[d->team_size++] = r;
    }
    free(all);
    w->own->n = d->team_size;
    return rc;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* What every slice of a vmm window is: pinned device memory of this rank's
 * GPU, exportable as a POSIX fd (the granularity is asked for the same). */
static void vmm_prop(CUmemAllocationProp *prop, int dev)
{
    memset(prop, 0, sizeof *prop);
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = dev;
    prop->requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
}

int win_vmm_granularity(gcsh_ctx *ctx, cuda_state *st, size_t *gran)
{
    CUmemAllocationProp prop;
    vmm_prop(&prop, st->dev);
    if (cuda_driver_load(ctx, st) != 0)
        return -1;
    CU_TRY(ctx, st, MemGetAllocationGranularity(gran, &prop,
                                                CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    return 0;
fail:
    return -1;
}

/* Stage allocate: the team, then my slice (local). */
static int stage_allocate(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w, gcsh_window_desc *d,
                          char *report, size_t len)
{
    if (find_team(ctx, w, d) != 0 || cuda_driver_load(ctx, st) != 0)
        return -1;
    CUmemAllocationProp prop;
    vmm_prop(&prop, st->dev);
    w->own->handle = calloc((size_t)w->own->n, sizeof *w->own->handle);
    w->own->mapped = calloc((size_t)w->own->n, sizeof *w->own->mapped);
    if (!w->own->handle || !w->own->mapped)
        return gcsh_set_error(ctx, "vmm window: out of host memory");
    CU_TRY(ctx, st, MemCreate(&w->own->handle[d->team_rank], w->bytes, &prop, 0));
    char team[128], size[32], gran[32];
    gcsh_format_ranks(d->team, d->team_size, team, sizeof team);
    gcsh_format_bytes(w->bytes, size, sizeof size);
    gcsh_format_bytes(d->granularity, gran, sizeof gran);
    snprintf(report, len,
             "team: the comm's ranks on node %d: %s\n"
             "cuMemCreate: %s per rank, POSIX-fd exportable (granularity %s,\n"
             "  cuMemGetAllocationGranularity, recommended)\n"
             "my handle: 0x%llx on cuda:%d",
             ctx->node, team, size, gran, (unsigned long long)w->own->handle[d->team_rank],
             st->dev);
    return 0;
fail:
    return -1;
}

/* Stage export: my handle as an fd, and the socket peers will send theirs to. */
static int stage_export(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w,
                        const gcsh_window_desc *d, char *report, size_t len)
{
    CU_TRY(ctx, st, MemExportToShareableHandle(&w->own->fd, w->own->handle[d->team_rank],
                                               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    if (fdx_listen(ctx, &w->own->x, w->own->nonce, d->team_rank, w->own->n) != 0)
        return -1;
    snprintf(report, len,
             "cuMemExportToShareableHandle: my POSIX fd %d\n"
             "listening: @gcsh-vmm-%u-%016llx-%d",
             w->own->fd, (unsigned)getuid(), (unsigned long long)w->own->nonce, d->team_rank);
    return 0;
fail:
    return -1;
}

/* Stage exchange: my fd to every peer, theirs to me; then the exported fd
 * and the listener go (the peers hold their own copies of the fd). */
static int stage_exchange(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                          char *report, size_t len)
{
    int me = d->team_rank;
    w->own->fds = calloc((size_t)w->own->n, sizeof *w->own->fds);
    if (!w->own->fds)
        return gcsh_set_error(ctx, "vmm window: out of host memory");
    for (int i = 0; i < w->own->n; i++)
        w->own->fds[i] = -1;
    if (fdx_send_all(ctx, &w->own->x, w->own->fd) != 0 ||
        fdx_recv_all(ctx, &w->own->x, w->own->fds, FDX_TIMEOUT_S) != 0)
        return -1;
    size_t used = (size_t)snprintf(report, len,
                                   "SCM_RIGHTS: sent fd %d to %d peers\n"
                                   "received fds:",
                                   w->own->fd, w->own->n - 1);
    for (int i = 0; i < w->own->n && used < len; i++)
        if (i != me)
            used += (size_t)snprintf(report + used, len - used, " %d (member %d)",
                                     w->own->fds[i], i);
    if (w->own->n == 1 && used < len)
        snprintf(report + used, len - used, " none (no peer on this node)");
    fdx_close(&w->own->x);
    close_fd(&w->own->fd);
    return 0;
}

/* Stage map: imports every peer's fd (closing it: the imported handle
 * holds the memory) and maps all slices into one reservation. */
static int stage_map(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w, const gcsh_window_desc *d,
                     char *report, size_t len)
{
    size_t total = (size_t)w->own->n * w->bytes;
    for (int i = 0; i < w->own->n; i++) {
        if (i == d->team_rank)
            continue;
        CU_TRY(ctx, st, MemImportFromShareableHandle(&w->own->handle[i],
                                                     (void *)(intptr_t)w->own->fds[i],
                                                     CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
        close_fd(&w->own->fds[i]);
    }
    CU_TRY(ctx, st, MemAddressReserve(&w->own->base, total, d->granularity, 0, 0));
    for (int i = 0; i < w->own->n; i++) {
        CU_TRY(ctx, st,
               MemMap(w->own->base + (size_t)i * w->bytes, w->bytes, 0, w->own->handle[i], 0));
        w->own->mapped[i] = 1;
    }
    char all[32], size[32];
    snprintf(report, len,
             "cuMemImportFromShareableHandle x %d (their fds then closed)\n"
             "cuMemAddressReserve: %s for %d slices; cuMemMap of each:\n"
             "  member i at base + i x %s\n"
             "my base: 0x%llx",
             w->own->n - 1, gcsh_format_bytes(total, all, sizeof all), w->own->n,
             gcsh_format_bytes(w->bytes, size, sizeof size), (unsigned long long)w->own->base);
    return 0;
fail:
    return -1;
}

/* Stage access: mapped memory is unreachable until access is granted. */
static int stage_access(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w, char *report,
                        size_t len)
{
    size_t total = (size_t)w->own->n * w->bytes;
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location.id = st->dev;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU_TRY(ctx, st, MemSetAccess(w->own->base, total, &acc, 1));
    char all[32];
    snprintf(report, len,
             "cuMemSetAccess: read/write on all %d slices (%s)\n"
             "for my GPU: cuda:%d",
             w->own->n, gcsh_format_bytes(total, all, sizeof all), st->dev);
    return 0;
fail:
    return -1;
}

/* Stage table: the host and device peer tables, and a zeroed slice
 * (signals start at 0). */
static int vmm_tables(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w, gcsh_window_desc *d)
{
    size_t tbytes = (size_t)w->own->n * sizeof(void *);
    size_t rbytes = (size_t)d->team_size * sizeof(int);
    for (int i = 0; i < w->own->n; i++)
        d->peer[i] = (void *)(uintptr_t)(w->own->base + (size_t)i * w->bytes);
    if (cuda_wait(ctx, st, NULL) != 0) /* the copy from pageable d->peer waits uninterruptibly */
        return -1;
    CUDA_TRY(ctx, cudaMallocAsync(&d->peer_table_dev, tbytes + rbytes, st->stream));
    CUDA_TRY(ctx, cudaMemcpyAsync(d->peer_table_dev, d->peer, tbytes, cudaMemcpyHostToDevice,
                                  st->stream));
    CUDA_TRY(ctx, cudaMemcpyAsync((char *)d->peer_table_dev + tbytes, d->team, rbytes,
                                  cudaMemcpyHostToDevice, st->stream));
    CUDA_TRY(ctx, cudaMemsetAsync(d->peer[d->team_rank], 0, w->bytes, st->stream));
    return cuda_wait(ctx, st, NULL);
fail:
    return -1;
}

static int stage_table(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w, gcsh_window_desc *d,
                       char *report, size_t len)
{
    if (vmm_tables(ctx, st, w, d) != 0)
        return -1;
    snprintf(d->handle, sizeof d->handle,
             "cuMemCreate POSIX fd, %d members mapped at %p, fds over @gcsh-vmm-%u-%016llx-*",
             w->own->n, (void *)(uintptr_t)w->own->base, (unsigned)getuid(),
             (unsigned long long)w->own->nonce);
    char layout[160];
    gcsh_window_layout_text(d, layout, sizeof layout);
    snprintf(report, len,
             "the peer pointer table: %s\n"
             "my slice zeroed; the table's device copy: %p",
             layout, d->peer_table_dev);
    return 0;
}

static int win_vmm_stage(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w, gcsh_window_desc *d, int i,
                  char *report, size_t len)
{
    switch (i) {
    case 0:
        return stage_allocate(ctx, st, w, d, report, len);
    case 1:
        return stage_export(ctx, st, w, d, report, len);
    case 2:
        return stage_exchange(ctx, w, d, report, len);
    case 3:
        return stage_map(ctx, st, w, d, report, len);
    case 4:
        return stage_access(ctx, st, w, report, len);
    default:
        return stage_table(ctx, st, w, d, report, len);
    }
}

/* Local undo of whatever was set up (fds and sockets included); safe at any
 * stage.  The device peer table is the caller's (cuda_window.c). */
static void win_vmm_undo(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w)
{
    (void)ctx;
    fdx_close(&w->own->x);
    close_fd(&w->own->fd);
    for (int i = 0; w->own->fds && i < w->own->n; i++)
        close_fd(&w->own->fds[i]);
    free(w->own->fds);
    w->own->fds = NULL;
    if (!st->drv.loaded) /* nothing of the driver's was made */
        return;
    for (int i = 0; w->own->mapped && i < w->own->n; i++)
        if (w->own->mapped[i])
            st->drv.MemUnmap(w->own->base + (size_t)i * w->bytes, w->bytes);
    for (int i = 0; w->own->handle && i < w->own->n; i++)
        if (w->own->handle[i])
            st->drv.MemRelease(w->own->handle[i]);
    if (w->own->base)
        st->drv.MemAddressFree(w->own->base, (size_t)w->own->n * w->bytes);
    free(w->own->handle);
    free(w->own->mapped);
    w->own->handle = NULL;
    w->own->mapped = NULL;
    w->own->base = 0;
}

/* Local: my mappings and handles go; a peer's physical slice lives on
 * until its last mapping (here or on its node mates) is released. */
static int win_vmm_destroy(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w)
{
    win_vmm_undo(ctx, st, w);
    return 0;
}

/* CUDA VMM and POSIX-fd handles work for ranks on one GPU, on several, and
 * at one rank: everywhere. */
static int win_vmm_usable(cuda_state *st, const gcsh_comm_impl *c, char *why, size_t len)
{
    (void)st, (void)c, (void)why, (void)len;
    return 0;
}

const gpu_win_kind win_vmm_kind = {
    .name = "vmm",
    .plan = &win_vmm_plan,
    .usable = win_vmm_usable,
    .granularity = win_vmm_granularity,
    .stage = win_vmm_stage,
    .undo = win_vmm_undo,
    .destroy = win_vmm_destroy,
    .device_api = 0,
};
