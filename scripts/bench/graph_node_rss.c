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
 *   hostfn      cudaLaunchHostFunc
 *   userobject  the kernel, and a user object retained by the graph (as
 *               NCCL's: no destructor sync, the only flag CUDA 13 takes)
 * and, to tell when the driver keeps it, the user object's graph
 *   useronce    launched once, not twice
 *   usernever   never launched
 *   userearly   destroyed right after its instantiation (the executable
 *               graph keeps its own reference), then launched twice
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

enum node { MEMSET, KERNEL, CLUSTER, SYNCDOMAIN, HOSTFN };

typedef struct variant {
    const char *name;
    enum node node;   /* what the capture holds */
    int user_object;  /* a user object retained by the graph, as NCCL's */
    int launches;     /* of the executable graph */
    int graph_first;  /* the graph destroyed before the launches */
} variant;

static const variant variants[] = {
    {"memset", MEMSET, 0, 2, 0},     {"kernel", KERNEL, 0, 2, 0},
    {"cluster", CLUSTER, 0, 2, 0},   {"syncdomain", SYNCDOMAIN, 0, 2, 0},
    {"hostfn", HOSTFN, 0, 2, 0},     {"userobject", KERNEL, 1, 2, 0},
    {"useronce", KERNEL, 1, 1, 0},   {"usernever", KERNEL, 1, 0, 0},
    {"userearly", KERNEL, 1, 2, 1},
};

static void nothing(void *arg) { (void)arg; }

static void launch_empty(CUfunction fn, cudaStream_t s, enum node node)
{
    CUlaunchAttribute attr = {0};
    CUlaunchConfig config = {0};
    config.gridDimX = config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = 32;
    config.blockDimY = config.blockDimZ = 1;
    config.hStream = (CUstream)s;
    if (node == CLUSTER) {
        attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attr.value.clusterDim.x = attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
    } else if (node == SYNCDOMAIN) {
        attr.id = CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN;
        attr.value.memSyncDomain = CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE;
    }
    config.attrs = &attr;
    config.numAttrs = (node == CLUSTER || node == SYNCDOMAIN) ? 1 : 0;
    CUCHECK(launch_ex(&config, fn, NULL, NULL));
}

static void capture_node(CUfunction fn, cudaStream_t s, void *buf, enum node node)
{
    if (node == MEMSET)
        CHECK(cudaMemsetAsync(buf, 0, 256, s));
    else if (node == HOSTFN)
        CHECK(cudaLaunchHostFunc(s, nothing, NULL));
    else
        launch_empty(fn, s, node);
}

static void one_graph(CUfunction fn, cudaStream_t s, void *buf, const variant *v)
{
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    capture_node(fn, s, buf, v->node);
    CHECK(cudaStreamEndCapture(s, &graph));
    if (v->user_object) {
        cudaUserObject_t object;
        CHECK(cudaUserObjectCreate(&object, buf, nothing, 1, cudaUserObjectNoDestructorSync));
        CHECK(cudaGraphRetainUserObject(graph, object, 1, cudaGraphUserObjectMove));
    }
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    if (v->graph_first)
        CHECK(cudaGraphDestroy(graph));
    for (int i = 0; i < v->launches; i++)
        CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaGraphExecDestroy(exec));
    if (!v->graph_first)
        CHECK(cudaGraphDestroy(graph));
}

static const variant *variant_named(const char *name)
{
    size_t n = sizeof variants / sizeof *variants;
    for (size_t i = 0; i < n; i++)
        if (strcmp(name, variants[i].name) == 0)
            return &variants[i];
    fprintf(stderr, "graph_node_rss: MODE is one of");
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, " %s", variants[i].name);
    fprintf(stderr, ", not '%s'\n", name);
    exit(2);
}

int main(int argc, char **argv)
{
    const variant *v = variant_named(argc > 1 ? argv[1] : "memset");
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
        one_graph(fn, s, buf, v);
    long before = rss_kib();
    for (int i = 0; i < rounds; i++)
        one_graph(fn, s, buf, v);
    long after = rss_kib();
    printf("graph_node_rss: %s: %d graphs after %d: RSS %+ld KiB (%.0f bytes a graph)\n",
           v->name, rounds, warmup, after - before,
           (after - before) * 1024.0 / rounds);
    return 0;
}
