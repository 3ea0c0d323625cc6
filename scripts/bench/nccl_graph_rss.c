/* Host memory per executable graph that holds an NCCL all-reduce, without
 * gcsh: each rank captures ncclAllReduce on its stream, instantiates,
 * launches twice, synchronizes and destroys the executable graph and the
 * graph, ROUNDS times after WARMUP; VmRSS before and after.  Beside
 * graph_node_rss.c (a memset alone: no growth) it tells whether what
 * LeakSanitizer found in gcsh's soak (200 bytes a graph from cuGraphLaunch)
 * comes with NCCL's graphs.
 * Usage: mpirun -np N nccl_graph_rss ROUNDS WARMUP
 * Build: mpicc -O2 -I$CUDA/include nccl_graph_rss.c -L$CUDA/lib64 -lnccl -lcudart */
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rss.h"

#define CHECK(ok, what)                                                                     \
    do {                                                                                    \
        if (!(ok)) {                                                                        \
            fprintf(stderr, "nccl_graph_rss: %s failed\n", what);                          \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                   \
        }                                                                                   \
    } while (0)

static void one_graph(ncclComm_t comm, cudaStream_t s, float *buf)
{
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess, "capture");
    CHECK(ncclAllReduce(buf, buf, 64, ncclFloat, ncclMax, comm, s) == ncclSuccess, "ncclAllReduce");
    CHECK(cudaStreamEndCapture(s, &graph) == cudaSuccess, "end capture");
    CHECK(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess, "instantiate");
    CHECK(cudaGraphLaunch(exec, s) == cudaSuccess, "launch");
    CHECK(cudaGraphLaunch(exec, s) == cudaSuccess, "launch");
    CHECK(cudaStreamSynchronize(s) == cudaSuccess, "synchronize");
    CHECK(cudaGraphExecDestroy(exec) == cudaSuccess, "exec destroy");
    CHECK(cudaGraphDestroy(graph) == cudaSuccess, "graph destroy");
}

int main(int argc, char **argv)
{
    int rank, size, devices;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rounds = argc > 1 ? atoi(argv[1]) : 1000, warmup = argc > 2 ? atoi(argv[2]) : 200;
    CHECK(cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0, "cudaGetDeviceCount");
    CHECK(cudaSetDevice(rank % devices) == cudaSuccess, "cudaSetDevice");
    ncclUniqueId id;
    if (rank == 0)
        CHECK(ncclGetUniqueId(&id) == ncclSuccess, "ncclGetUniqueId");
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    ncclComm_t comm;
    CHECK(ncclCommInitRank(&comm, size, id, rank) == ncclSuccess, "ncclCommInitRank");
    cudaStream_t s;
    float *buf;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess, "stream");
    CHECK(cudaMalloc((void **)&buf, 64 * sizeof *buf) == cudaSuccess, "cudaMalloc");
    for (int i = 0; i < warmup; i++)
        one_graph(comm, s, buf);
    MPI_Barrier(MPI_COMM_WORLD);
    long before = rss_kib();
    for (int i = 0; i < rounds; i++)
        one_graph(comm, s, buf);
    MPI_Barrier(MPI_COMM_WORLD);
    long after = rss_kib();
    printf("nccl_graph_rss: rank %d: %d graphs after %d: RSS %+ld KiB (%.0f bytes a graph)\n",
           rank, rounds, warmup, after - before, (after - before) * 1024.0 / rounds);
    ncclCommDestroy(comm);
    MPI_Finalize();
    return 0;
}
