/* NCCL's own memory per split, without gcsh: the NCCL and MPI calls of one
 * round of the soak's split part (tests/lua/soak.lua, split_round) in a C
 * loop, with RSS sampled as the soak samples it (VmRSS after a warm-up), so
 * that growth gcsh's soak sees can be told apart from NCCL's and MPI's.
 *
 * A round, as cuda_split does it (src/cuda/cuda_comm.c): MPI_Comm_split and
 * ncclCommSplit (non-blocking, config.splitShare as GCSH_SPLIT_SHARE),
 * settled by polling; optionally the blocking twin (ncclCommSplit of the
 * split, blocking) and one all-reduce on each; then finalize and destroy
 * (twin first), MPI_Comm_free and malloc_trim, as gcsh's free does.
 *
 * SPLIT_BY (default 2) splits by rank % SPLIT_BY: at 2 GPUs, 1 makes the
 * two-rank splits that 4 GPUs make by rank % 2.  WINDOW (a build with
 * -DWITH_WINDOWS) adds, every round, on the world communicator, what a
 * window of kind "nccl" does (src/cuda/cuda_win_nccl.c): 1 ncclMemAlloc and
 * ncclCommWindowRegister, then deregister and free; 2 the same and a device
 * communicator with gcsh's 32 LSA barriers, made and destroyed in between
 * (by gcsh's own kernels/cuda/ncclwin.cu: its requirements are C++).
 *
 * Usage (one GPU a rank; the soak's environment):
 *   mpirun -np 4 nccl_split_rss ROUNDS WARMUP SHARE TWIN [SPLIT_BY [WINDOW]]
 * prints "rank R: ROUNDS rounds, S s a round; RSS +K KiB (+P KiB per 100);
 * malloc in use +M KiB".
 * Build: mpicc -O2 -I$CUDA/include nccl_split_rss.c -L$CUDA/lib64 -lnccl -lcudart
 * or, with WINDOW, with gcsh's own device-communicator glue (from the top):
 *   nvcc -std=c++17 -Isrc -Ikernels -c kernels/cuda/ncclwin.cu -o ncclwin.o &&
 *   mpicc -O2 -DWITH_WINDOWS -I$CUDA/include scripts/bench/nccl_split_rss.c ncclwin.o
 *   -L$CUDA/lib64 -lnccl -lcudart -lstdc++ */
#include <malloc.h>
#include <mpi.h>
#include <nccl.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rss.h"

#define CHECK(call, what)                                                                   \
    do {                                                                                    \
        if (!(call)) {                                                                      \
            fprintf(stderr, "nccl_split_rss: %s failed at line %d\n", what, __LINE__);       \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                   \
        }                                                                                   \
    } while (0)

/* Polls a non-blocking communicator until its last call settled. */
static void settle(ncclComm_t comm)
{
    ncclResult_t async = ncclInProgress;
    while (async == ncclInProgress)
        CHECK(ncclCommGetAsyncError(comm, &async) == ncclSuccess, "ncclCommGetAsyncError");
    CHECK(async == ncclSuccess, "a non-blocking NCCL call");
}

struct knobs {
    int share, twin, split_by, window;
    int *buf; /* one int of device memory */
    cudaStream_t stream;
};

static void allreduce_one(ncclComm_t comm, const struct knobs *k)
{
    ncclResult_t r = ncclAllReduce(k->buf, k->buf, 1, ncclInt32, ncclSum, comm, k->stream);
    if (r != ncclSuccess && r != ncclInProgress)
        fprintf(stderr, "nccl_split_rss: %s\n", ncclGetErrorString(r));
    CHECK(r == ncclSuccess || r == ncclInProgress, "ncclAllReduce");
    settle(comm);
    CHECK(cudaStreamSynchronize(k->stream) == cudaSuccess, "cudaStreamSynchronize");
}

static void destroy(ncclComm_t comm, int blocking)
{
    ncclResult_t r = ncclCommFinalize(comm);
    CHECK(r == ncclSuccess || r == ncclInProgress, "ncclCommFinalize");
    if (!blocking)
        settle(comm);
    CHECK(ncclCommDestroy(comm) == ncclSuccess, "ncclCommDestroy");
}

#ifdef WITH_WINDOWS
ncclResult_t gcsh_nccl_devcomm_create(ncclComm_t comm, int lsa_barriers, void **out);
ncclResult_t gcsh_nccl_devcomm_destroy(ncclComm_t comm, void *dc);

/* What a window of kind "nccl" asks of NCCL on the world, made and freed. */
static void window_once(ncclComm_t world, int mode)
{
    void *buf = NULL, *dc = NULL;
    ncclWindow_t win;
    CHECK(ncclMemAlloc(&buf, 1 << 21) == ncclSuccess, "ncclMemAlloc");
    ncclResult_t r = ncclCommWindowRegister(world, buf, 1 << 21, &win, NCCL_WIN_COLL_SYMMETRIC);
    CHECK(r == ncclSuccess || r == ncclInProgress, "ncclCommWindowRegister");
    settle(world);
    if (mode >= 2) {
        r = gcsh_nccl_devcomm_create(world, 32, &dc);
        CHECK(r == ncclSuccess || r == ncclInProgress, "ncclDevCommCreate");
        settle(world);
        r = gcsh_nccl_devcomm_destroy(world, dc);
        CHECK(r == ncclSuccess || r == ncclInProgress, "ncclDevCommDestroy");
        settle(world);
    }
    r = ncclCommWindowDeregister(world, win);
    CHECK(r == ncclSuccess || r == ncclInProgress, "ncclCommWindowDeregister");
    settle(world);
    CHECK(ncclMemFree(buf) == ncclSuccess, "ncclMemFree");
}
#else
static void window_once(ncclComm_t world, int mode)
{
    (void)world;
    CHECK(mode == 0, "WINDOW without -DWITH_WINDOWS");
}
#endif

/* glibc's bytes in use (what a keeper grows; RSS also counts what is held) */
static long heap_in_use_kib(void)
{
    struct mallinfo2 m = mallinfo2();
    return (long)((m.uordblks + m.hblkhd) / 1024);
}

static void round_once(ncclComm_t world, int rank, const struct knobs *k)
{
    MPI_Comm mpi;
    ncclComm_t split = NULL, twin = NULL;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    config.splitShare = k->share;
    MPI_Comm_split(MPI_COMM_WORLD, rank % k->split_by, rank, &mpi);
    ncclResult_t r = ncclCommSplit(world, rank % k->split_by, rank, &split, &config);
    CHECK(r == ncclSuccess || r == ncclInProgress, "ncclCommSplit");
    settle(world);
    settle(split);
    if (k->twin) {
        ncclConfig_t blocking = NCCL_CONFIG_INITIALIZER;
        blocking.blocking = 1;
        /* the parent is non-blocking: the twin is ready once it settled */
        ncclResult_t t = ncclCommSplit(split, 0, rank, &twin, &blocking);
        CHECK(t == ncclSuccess || t == ncclInProgress, "twin split");
        settle(split);
        allreduce_one(twin, k);
    }
    allreduce_one(split, k);
    if (twin)
        destroy(twin, 1);
    destroy(split, 0);
    MPI_Comm_free(&mpi);
    if (k->window)
        window_once(world, k->window);
    malloc_trim(0);
}

int main(int argc, char **argv)
{
    int provided, rank, size, devices;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rounds = argc > 1 ? atoi(argv[1]) : 100, warmup = argc > 2 ? atoi(argv[2]) : 100;
    struct knobs k = {argc > 3 ? atoi(argv[3]) : 1, argc > 4 ? atoi(argv[4]) : 1,
                      argc > 5 ? atoi(argv[5]) : 2, argc > 6 ? atoi(argv[6]) : 0, NULL, NULL};
    CHECK(k.split_by >= 1, "SPLIT_BY >= 1");
    CHECK(cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0, "cudaGetDeviceCount");
    CHECK(cudaSetDevice(rank % devices) == cudaSuccess, "cudaSetDevice");
    CHECK(cudaMalloc((void **)&k.buf, sizeof(int)) == cudaSuccess, "cudaMalloc");
    CHECK(cudaStreamCreateWithFlags(&k.stream, cudaStreamNonBlocking) == cudaSuccess,
          "cudaStreamCreate");

    ncclUniqueId id;
    if (rank == 0)
        CHECK(ncclGetUniqueId(&id) == ncclSuccess, "ncclGetUniqueId");
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    ncclComm_t world;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    config.splitShare = k.share;
    ncclResult_t r = ncclCommInitRankConfig(&world, size, id, rank, &config);
    CHECK(r == ncclSuccess || r == ncclInProgress, "ncclCommInitRankConfig");
    settle(world);
    allreduce_one(world, &k);

    for (int i = 0; i < warmup; i++)
        round_once(world, rank, &k);
    MPI_Barrier(MPI_COMM_WORLD);
    long before = rss_kib(), heap_before = heap_in_use_kib();
    double t0 = MPI_Wtime();
    for (int i = 0; i < rounds; i++)
        round_once(world, rank, &k);
    MPI_Barrier(MPI_COMM_WORLD);
    double seconds = MPI_Wtime() - t0;
    long after = rss_kib(), heap_after = heap_in_use_kib();
    printf("rank %d: %d rounds after %d (share %d, twin %d, split by %d, window %d), %.3f s a "
           "round; RSS %+ld KiB (%+.1f KiB per 100); malloc in use %+ld KiB\n",
           rank, rounds, warmup, k.share, k.twin, k.split_by, k.window, seconds / rounds,
           after - before, (after - before) * 100.0 / rounds, heap_after - heap_before);
    fflush(stdout);
    destroy(world, 0);
    MPI_Finalize();
    return 0;
}
