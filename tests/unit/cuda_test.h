/* What the GPU-only C tests (test_cuda_*.c) share: they run under mpirun,
 * one GPU per rank, on the cuda backend's tables; they skip where that cannot
 * be had, and rank 0 prints the CHECK counts summed over the ranks.  Include
 * it in a test's GCSH_HAVE_CUDA part; main calls cuda_test_start first and
 * returns cuda_test_end(). */
#ifndef GCSH_CUDA_TEST_H
#define GCSH_CUDA_TEST_H

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda.h"
#include "rank/rank.h"
#include "unit.h"
#include "bind/winbuild.h"

/* Not every test uses every table or helper. */
#define CUDA_TEST_UNUSED __attribute__((unused))

static gcsh_ctx ctx;
/* The cuda backend's tables, set by cuda_test_start. */
static const gcsh_mem_ops *M;
static const gcsh_comm_ops *C;
static const gcsh_window_ops *W CUDA_TEST_UNUSED;
static const gcsh_xfer_ops *X CUDA_TEST_UNUSED;

/* MPI, then the cuda backend on every rank.  Returns 0 where the test cannot
 * run (a rank without a GPU, or fewer than min_ranks ranks): rank 0 has then
 * printed the skip line, MPI is finalized, and main returns 0. */
static int cuda_test_start(int *argc, char ***argv, const char *name, int min_ranks)
{
    /* GCSH_SHARE_GPU=1: ranks share GPUs, as gcsh --share-gpu (gpu-check's
     * shared runs); before MPI and CUDA start */
    gcsh_share_mode share = GCSH_SHARE_OFF;
    const char *v = getenv("GCSH_SHARE_GPU");
    if (v && *v && gcsh_share_parse(v, &share) != 0)
        share = GCSH_SHARE_OFF;
    gcsh_share_prepare(&ctx.share, share, "cuda");
    int provided;
    MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
    gcsh_rank_topology(&ctx);
    gcsh_share_start(&ctx.share);
    int any = gcsh_cuda_available(), all = 0;
    MPI_Allreduce(&any, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all || ctx.size < min_ranks) {
        if (ctx.rank == 0 && !all)
            printf("%s: skipped (no GPU)\n0 passed, 0 failed, 1 skipped\n", name);
        else if (ctx.rank == 0)
            printf("%s: skipped (needs %d ranks)\n0 passed, 0 failed, 1 skipped\n", name,
                   min_ranks);
        gcsh_share_stop(&ctx.share);
        MPI_Finalize();
        return 0;
    }
    if (gcsh_rank_backend(&ctx, "cuda") != 0) {
        printf("[%d] cuda backend: %s\n", ctx.rank, ctx.err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    M = ctx.be->mem;
    C = ctx.be->comm;
    W = ctx.be->win;
    X = ctx.be->xfer;
    return 1;
}

/* Closes the backend and MPI; rank 0 prints the counts of every rank, the
 * closing line tests/run.sh adds up.  Returns main's exit status. */
static int cuda_test_end(void)
{
    gcsh_rank_close(&ctx);
    gcsh_share_stop(&ctx.share);
    int f = unit_failed, p = unit_passed;
    MPI_Allreduce(MPI_IN_PLACE, &f, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &p, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    if (ctx.rank == 0)
        printf("%d passed, %d failed\n", p, f);
    return f ? 1 : 0;
}

/* ---- windows -------------------------------------------------------------- */

typedef struct win {
    gcsh_window_impl *w;
    gcsh_window_desc d;
} win;

/* A window of `bytes` per rank, its slice rounded up to the kind's
 * granularity: every stage back to back, as c:window() runs them. */
CUDA_TEST_UNUSED static int win_create(gcsh_comm_impl *c, const char *kind, size_t bytes,
                                       win *out)
{
    size_t gran = 0;
    memset(out, 0, sizeof *out);
    if (W->granularity(&ctx, kind, &gran) != 0)
        return -1;
    out->d.bytes = bytes;
    out->d.granularity = gran;
    out->d.alloc_bytes = (bytes + gran - 1) / gran * gran;
    return gcsh_window_create(&ctx, c, kind, &out->d, &out->w);
}

CUDA_TEST_UNUSED static void win_free(gcsh_comm_impl *c, win *x)
{
    CHECK(C->barrier(&ctx, c) == 0, "barrier before free: %s", ctx.err);
    CHECK(W->destroy(&ctx, x->w, &x->d) == 0, "destroy: %s", ctx.err);
}

/* Runs test for each window kind, then, unless bench is NULL, bench for each
 * (figures come after every check has run). */
/* Whether NCCL must offer symmetric memory to c: several ranks, each on a
 * GPU of its own with peer access to another (tests/gpu/lib/common.lua
 * says the same for the Lua tests). */
static int nccl_expected(gcsh_comm_impl *c)
{
    const cuda_state *st = ctx.be_state;
    const char *win = getenv("NCCL_WIN_ENABLE"), *cumem = getenv("NCCL_CUMEM_ENABLE");
    int count = 0, peer = 0;
    cudaGetDeviceCount(&count);
    for (int d = 0; d < count && !peer; d++)
        if (d != st->dev && cudaDeviceCanAccessPeer(&peer, st->dev, d) != cudaSuccess)
            peer = 0;
    return C->size(c) > 1 && strcmp(st->shared, "no") == 0 && peer &&
           !(win && strcmp(win, "0") == 0) && !(cumem && strcmp(cumem, "0") == 0);
}

CUDA_TEST_UNUSED static void for_each_kind(gcsh_comm_impl *c,
                                           void (*test)(const char *, gcsh_comm_impl *),
                                           void (*bench)(const char *, gcsh_comm_impl *))
{
    static const char *const kinds[] = {"nccl", "vmm"};
    int usable[2];
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
        /* a kind the backend refuses for c (nccl where NCCL offers no
         * symmetric memory: one rank, ranks sharing a GPU) must say why and
         * name the kind that works; its tests are left out */
        char why[256] = "";
        usable[i] = W->kind_usable(&ctx, c, kinds[i], why, sizeof why) == 0;
        CHECK(usable[i] || strstr(why, "kind='vmm' works"), "[%d] %s refused: '%s'", ctx.rank,
              kinds[i], why);
        CHECK(usable[i] || strcmp(kinds[i], "nccl") != 0 || !nccl_expected(c),
              "[%d] nccl refused where NCCL must offer symmetric memory: '%s'", ctx.rank, why);
        if (!usable[i] && ctx.rank == 0)
            printf("%s: refused here (%s): its tests are left out\n", kinds[i], why);
        if (usable[i])
            test(kinds[i], c);
    }
    for (size_t i = 0; bench && i < sizeof kinds / sizeof *kinds; i++)
        if (usable[i])
            bench(kinds[i], c);
}

/* ---- figures -------------------------------------------------------------- */

/* `bytes` of this process's own memory on another GPU (peer_dev), with peer
 * access on: the far side of the cudaMemcpyPeerAsync baselines, which need
 * memory this process allocated on that device (a window's peer pointer is
 * a mapping, not a cudaMalloc of it).  NULL (reported) when it cannot be
 * had. */
CUDA_TEST_UNUSED static void *peer_device_alloc(int peer_dev, size_t bytes)
{
    cuda_state *st = ctx.be_state;
    void *p = NULL;
    cudaError_t e = cudaDeviceEnablePeerAccess(peer_dev, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled)
        e = cudaSuccess;
    if (e == cudaSuccess && (e = cudaSetDevice(peer_dev)) == cudaSuccess) {
        e = cudaMalloc(&p, bytes);
        if (e == cudaSuccess)
            e = cudaMemset(p, 1, bytes);
    }
    cudaSetDevice(st->dev);
    CHECK(e == cudaSuccess, "baseline buffer on device %d: %s", peer_dev, cudaGetErrorString(e));
    return e == cudaSuccess ? p : NULL;
}

/* Frees what peer_device_alloc returned (NULL included). */
CUDA_TEST_UNUSED static void peer_device_free(int peer_dev, void *p)
{
    cuda_state *st = ctx.be_state;
    if (!p)
        return;
    cudaSetDevice(peer_dev);
    cudaFree(p);
    cudaSetDevice(st->dev);
}

#endif
