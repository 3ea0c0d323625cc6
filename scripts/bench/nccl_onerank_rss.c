/* Host memory per ncclAllReduce on a communicator of one rank, without gcsh
 * or MPI.  An AddressSanitizer heap profile of gcsh's soak at 2 GPUs (where
 * a split by rank % 2 makes communicators of one rank) held one 160-byte
 * block from calloc inside ncclAllReduce for every round and call site,
 * alive after the communicator was destroyed; this tells whether NCCL
 * keeps it per call or per communicator, blocking or not.
 *   calls     one communicator, ROUNDS in-place all-reduces
 *   comms     ROUNDS communicators, each made, used once and destroyed
 * BLOCKING (0 or 1) is the communicators' config.blocking (gcsh: 0).
 * Usage: nccl_onerank_rss MODE BLOCKING ROUNDS WARMUP
 * Build: gcc -O2 -I$CUDA/include nccl_onerank_rss.c -L$CUDA/lib64 -lnccl -lcudart */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rss.h"

#define CHECK(ok, what)                                                                     \
    do {                                                                                    \
        if (!(ok)) {                                                                        \
            fprintf(stderr, "nccl_onerank_rss: %s failed\n", what);                        \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

/* Waits out a non-blocking communicator's ncclInProgress. */
static void settle(ncclComm_t comm, ncclResult_t r, const char *what)
{
    while (r == ncclInProgress)
        CHECK(ncclCommGetAsyncError(comm, &r) == ncclSuccess || r == ncclInProgress, what);
    CHECK(r == ncclSuccess, what);
}

static ncclComm_t make_comm(int blocking)
{
    ncclUniqueId id;
    ncclComm_t comm = NULL;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = blocking;
    CHECK(ncclGetUniqueId(&id) == ncclSuccess, "ncclGetUniqueId");
    settle(comm, ncclCommInitRankConfig(&comm, 1, id, 0, &config), "ncclCommInitRankConfig");
    return comm;
}

static void all_reduce(ncclComm_t comm, cudaStream_t s, float *buf)
{
    settle(comm, ncclAllReduce(buf, buf, 64, ncclFloat, ncclSum, comm, s), "ncclAllReduce");
    CHECK(cudaStreamSynchronize(s) == cudaSuccess, "synchronize");
}

static void destroy_comm(ncclComm_t comm)
{
    settle(comm, ncclCommFinalize(comm), "ncclCommFinalize");
    CHECK(ncclCommDestroy(comm) == ncclSuccess, "ncclCommDestroy");
}

int main(int argc, char **argv)
{
    int comms = argc > 1 && strcmp(argv[1], "comms") == 0;
    int blocking = argc > 2 ? atoi(argv[2]) : 0;
    int rounds = argc > 3 ? atoi(argv[3]) : 1000, warmup = argc > 4 ? atoi(argv[4]) : 100;
    cudaStream_t s;
    float *buf;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess, "stream");
    CHECK(cudaMalloc((void **)&buf, 64 * sizeof *buf) == cudaSuccess, "cudaMalloc");
    ncclComm_t comm = make_comm(blocking);
    long before = 0;
    for (int i = 0; i < warmup + rounds; i++) {
        if (i == warmup)
            before = rss_kib();
        if (comms) {
            ncclComm_t one = make_comm(blocking);
            all_reduce(one, s, buf);
            destroy_comm(one);
        } else {
            all_reduce(comm, s, buf);
        }
    }
    long after = rss_kib();
    printf("nccl_onerank_rss: %s, blocking %d: %d rounds after %d: RSS %+ld KiB (%.0f bytes a "
           "round)\n", comms ? "comms" : "calls", blocking, rounds, warmup, after - before,
           (after - before) * 1024.0 / rounds);
    destroy_comm(comm);
    return 0;
}
