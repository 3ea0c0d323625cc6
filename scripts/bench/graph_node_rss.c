/* The CUDA driver's host memory per executable graph, without gcsh, by what
 * the graph holds: capture one thing on a stream, instantiate, launch twice,
 * synchronize, destroy the executable graph and the graph; ROUNDS times
 * after WARMUP, VmRSS before and after.  Which of the things NCCL puts in a
 * captured all-reduce keeps the 200 bytes a graph that nccl_graph_rss.c
 * measures (and LeakSanitizer found in cuGraphLaunch in gcsh's soak)?
 * NCCL 2.28 launches its kernel with cuLaunchKernelEx and, on sm90, the
 * launch attributes cluster dimension and memory sync domain (enqueue.cc),
 * and hands the graph a user object whose destructor frees the plan
 * (strongstream.cc: cudaGraphRetainUserObject, no destructor sync).  Each
 * MODE captures one of those alone:
 *   memset      cudaMemsetAsync
 *   kernel      an empty kernel, cuLaunchKernelEx without attributes
 *   cluster     the same with a cluster dimension of 1
 *   syncdomain  the same with the memory sync domain "remote"
 *   userobject  the kernel, and a user object retained by the graph (as
 *               NCCL's: no destructor sync, the only flag CUDA 13 takes)
 *   hostfn      cudaLaunchHostFunc
 * Usage: graph_node_rss MODE ROUNDS WARMUP
 * Build: gcc -O2 -I$CUDA/include graph_node_rss.c -L$CUDA/lib64 -lcudart
 * (the driver's functions come through the runtime: without a GPU the
 * first CUDA call fails, named, and the status is 1) */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rss.h"

#define CHECK(call)                                                                         \
    do {                                                                                    \
        cudaError_t e_ = (call);                                                            \
        if (e_ != cudaSuccess) {                                                            \
            fprintf(stderr, "graph_node_rss: %s: %s\n", #call, cudaGetErrorString(e_));     \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)
#define CUCHECK(call)                                                                       \
    do {                                                                                    \
        CUresult e_ = (call);                                                               \
        if (e_ != CUDA_SUCCESS) {                                                           \
            fprintf(stderr, "graph_node_rss: %s: CUresult %d\n", #call, (int)e_);            \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

/* The driver's functions this needs, through the runtime (no link to
 * libcuda, which a machine without a driver lacks). */
typedef CUresult (*load_module_fn)(CUmodule *, const void *);
typedef CUresult (*module_function_fn)(CUfunction *, CUmodule, const char *);
typedef CUresult (*launch_ex_fn)(const CUlaunchConfig *, CUfunction, void **, void **);
static load_module_fn load_module;
static module_function_fn module_function;
static launch_ex_fn launch_ex;

static void *driver(const char *name)
{
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult found;
    CHECK(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || !fn) {
        fprintf(stderr, "graph_node_rss: the driver has no %s\n", name);
        exit(1);
    }
    return fn;
}

/* An empty kernel in PTX, compiled by the driver for whatever GPU is here. */
static const char empty_ptx[] = ".version 7.0\n.target sm_70\n.address_size 64\n"
                                ".visible .entry empty() { ret; }\n";

enum mode { MEMSET, KERNEL, CLUSTER, SYNCDOMAIN, USEROBJECT, HOSTFN };
static const char *const mode_names[] = {"memset",     "kernel",     "cluster",
                                         "syncdomain", "userobject", "hostfn"};

static void nothing(void *arg) { (void)arg; }

static void launch_empty(CUfunction fn, cudaStream_t s, enum mode mode)
{
    CUlaunchAttribute attr = {0};
    CUlaunchConfig config = {0};
    config.gridDimX = config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = 32;
    config.blockDimY = config.blockDimZ = 1;
    config.hStream = (CUstream)s;
    if (mode == CLUSTER) {
        attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attr.value.clusterDim.x = attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
    } else if (mode == SYNCDOMAIN) {
        attr.id = CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN;
        attr.value.memSyncDomain = CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE;
    }
    config.attrs = &attr;
    config.numAttrs = (mode == CLUSTER || mode == SYNCDOMAIN) ? 1 : 0;
    CUCHECK(launch_ex(&config, fn, NULL, NULL));
}

static void capture_node(CUfunction fn, cudaStream_t s, void *buf, enum mode mode)
{
    if (mode == MEMSET)
        CHECK(cudaMemsetAsync(buf, 0, 256, s));
    else if (mode == HOSTFN)
        CHECK(cudaLaunchHostFunc(s, nothing, NULL));
    else
        launch_empty(fn, s, mode);
}

static void one_graph(CUfunction fn, cudaStream_t s, void *buf, enum mode mode)
{
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    capture_node(fn, s, buf, mode);
    CHECK(cudaStreamEndCapture(s, &graph));
    if (mode == USEROBJECT) {
        cudaUserObject_t object;
        CHECK(cudaUserObjectCreate(&object, buf, nothing, 1, cudaUserObjectNoDestructorSync));
        CHECK(cudaGraphRetainUserObject(graph, object, 1, cudaGraphUserObjectMove));
    }
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
}

static enum mode mode_named(const char *name)
{
    for (size_t i = 0; i < sizeof mode_names / sizeof *mode_names; i++)
        if (strcmp(name, mode_names[i]) == 0)
            return (enum mode)i;
    fprintf(stderr, "graph_node_rss: MODE is one of memset kernel cluster syncdomain "
                    "userobject hostfn, not '%s'\n", name);
    exit(2);
}

int main(int argc, char **argv)
{
    enum mode mode = mode_named(argc > 1 ? argv[1] : "memset");
    int rounds = argc > 2 ? atoi(argv[2]) : 1000, warmup = argc > 3 ? atoi(argv[3]) : 200;
    cudaStream_t s;
    void *buf;
    CUmodule module;
    CUfunction fn;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaMalloc(&buf, 256));
    load_module = (load_module_fn)driver("cuModuleLoadData");
    module_function = (module_function_fn)driver("cuModuleGetFunction");
    launch_ex = (launch_ex_fn)driver("cuLaunchKernelEx");
    CUCHECK(load_module(&module, empty_ptx));
    CUCHECK(module_function(&fn, module, "empty"));
    for (int i = 0; i < warmup; i++)
        one_graph(fn, s, buf, mode);
    long before = rss_kib();
    for (int i = 0; i < rounds; i++)
        one_graph(fn, s, buf, mode);
    long after = rss_kib();
    printf("graph_node_rss: %s: %d graphs after %d: RSS %+ld KiB (%.0f bytes a graph)\n",
           mode_names[mode], rounds, warmup, after - before,
           (after - before) * 1024.0 / rounds);
    return 0;
}
