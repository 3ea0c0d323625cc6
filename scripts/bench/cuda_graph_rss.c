/* The CUDA driver's host memory per executable graph, without gcsh or NCCL:
 * capture one memset on a stream, instantiate, launch twice, synchronize,
 * destroy the executable graph and the graph; ROUNDS times after WARMUP,
 * VmRSS before and after.  LeakSanitizer found 200 bytes a graph kept from
 * cuGraphLaunch in gcsh's soak (driver 580.159.04, CUDA 13.0, H100) with or
 * without a synchronize before the destroy; this measures it alone.
 * Usage: cuda_graph_rss ROUNDS WARMUP
 * Build: gcc -O2 -I$CUDA/include cuda_graph_rss.c -L$CUDA/lib64 -lcudart */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rss.h"

#define CHECK(call)                                                                         \
    do {                                                                                    \
        cudaError_t e_ = (call);                                                            \
        if (e_ != cudaSuccess) {                                                            \
            fprintf(stderr, "cuda_graph_rss: %s: %s\n", #call, cudaGetErrorString(e_));     \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

static void one_graph(cudaStream_t s, void *buf)
{
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CHECK(cudaMemsetAsync(buf, 0, 256, s));
    CHECK(cudaStreamEndCapture(s, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 1000, warmup = argc > 2 ? atoi(argv[2]) : 200;
    cudaStream_t s;
    void *buf;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaMalloc(&buf, 256));
    for (int i = 0; i < warmup; i++)
        one_graph(s, buf);
    long before = rss_kib();
    for (int i = 0; i < rounds; i++)
        one_graph(s, buf);
    long after = rss_kib();
    printf("cuda_graph_rss: %d graphs after %d: RSS %+ld KiB (%.0f bytes a graph)\n", rounds,
           warmup, after - before, (after - before) * 1024.0 / rounds);
    return 0;
}
