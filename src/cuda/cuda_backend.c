/* The cuda backend's table: device choice, stream, info; memory operations in
 * cuda_mem.c, collectives in cuda_comm.c.
 *
 * cudart is linked statically, and nothing here needs the driver API, so the
 * binary starts on machines without a driver: cudaGetDeviceCount then fails
 * cleanly and gcsh_cuda_available() says no. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <lauxlib.h>

#include "cuda/cuda.h"
#include "initkern.h"
#include "reducekern.h"
#include "core/env.h"

/* Every kernel is loaded when CUDA starts, not at its first launch.  CUDA
 * 12+ loads lazily by default, and loading a kernel may wait until every
 * kernel of the context ended: with a resident kernel running
 * (kernel.persistent) the first fill after its start never returned (H100,
 * driver 580: the host in cuLaunchKernel, the resident idle).  gcsh's own
 * kernels are about a megabyte, and NCCL loads all of its kernels at init
 * anyway, so eager loading costs little.  It runs before main, so before
 * the first CUDA call of any library; a CUDA_MODULE_LOADING the user set
 * stays (kernel.persistent then refuses LAZY: gcsh_cuda_lazy_loading). */
__attribute__((constructor)) static void load_modules_eagerly(void)
{
    setenv("CUDA_MODULE_LOADING", "EAGER", 0);
}

int gcsh_cuda_available(void)
{
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

/* What --version and --backend cuda say when there is no driver. */
#define NO_DRIVER "no NVIDIA driver on this machine"

/* "13.0" from 13000: the CUDA version encoding. */
static void cuda_version_string(int v, char *buf, size_t len)
{
    snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
}

void gcsh_cuda_versions(char *nccl, char *runtime, char *driver, size_t len)
{
    int v = 0;
    if (ncclGetVersion(&v) == ncclSuccess)
        snprintf(nccl, len, "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
    else
        snprintf(nccl, len, "unknown (ncclGetVersion failed)");
    v = 0;
    if (cudaRuntimeGetVersion(&v) == cudaSuccess && v > 0)
        cuda_version_string(v, runtime, len);
    else
        snprintf(runtime, len, "unknown");
    v = 0;
    /* 0 when no driver is installed */
    if (cudaDriverGetVersion(&v) == cudaSuccess && v > 0)
        cuda_version_string(v, driver, len);
    else
        snprintf(driver, len, "none (%s)", NO_DRIVER);
}

/* Why the CUDA runtime cannot run here, in the words --version uses.
 * Without any driver, cudaGetDeviceCount says "CUDA driver version is
 * insufficient for CUDA runtime version", which reads as an old driver. */
static void no_gpu_reason(cudaError_t e, char *buf, size_t len)
{
    int driver = 0, runtime = 0;
    char d[16], r[16];
    if (cudaDriverGetVersion(&driver) != cudaSuccess || driver <= 0) {
        snprintf(buf, len, "%s", NO_DRIVER);
    } else if (e == cudaErrorInsufficientDriver && cudaRuntimeGetVersion(&runtime) == cudaSuccess) {
        cuda_version_string(driver, d, sizeof d);
        cuda_version_string(runtime, r, sizeof r);
        snprintf(buf, len, "the NVIDIA driver (CUDA %s) is older than the CUDA runtime gcsh was "
                           "built with (%s)", d, r);
    } else {
        snprintf(buf, len, "%s", cudaGetErrorString(e));
    }
}

static void state_free(cuda_state *st)
{
    cuda_net_stop(st);
    cuda_persist_free_bells(st);
    if (st->wctl)
        cudaFreeHost(st->wctl);
    if (st->poll_buf)
        cudaFreeHost(st->poll_buf);
    if (st->poll_dev)
        cudaFree(st->poll_dev);
    if (st->poll_stream)
        cudaStreamDestroy(st->poll_stream);
    if (st->scratch)
        cudaFree(st->scratch);
    if (st->bounce)
        cudaFree(st->bounce);
    if (st->stream)
        cudaStreamDestroy(st->stream);
    for (int i = 0; i < CUDA_THROTTLE_MARKS; i++)
        if (st->throttle[i])
            cudaEventDestroy(st->throttle[i]);
    for (int i = 0; i < st->nheld; i++)
        cudaFree(st->held[i]);
    free(st->held);
    free(st->busy);
    free(st);
}

/* The pool keeps freed memory cached instead of giving it back at every
 * synchronisation (its default release threshold is 0): tensors come and
 * go at every prompt line, and a pool that unmaps and maps memory for each
 * costs what cudaMalloc costs.  cuda_pool_trim gives it back when a window
 * or a failed allocation needs it. */
static int keep_pool_cached(gcsh_ctx *ctx, cuda_state *st)
{
    cudaMemPool_t pool;
    uint64_t keep = UINT64_MAX;
    CUDA_TRY(ctx, cudaDeviceGetDefaultMemPool(&pool, st->dev));
    CUDA_TRY(ctx, cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    return 0;
fail:
    return -1;
}

/* GCSH_GPU_WAIT_TIMEOUT (seconds, default 600): how long a stream-ordered
 * signal wait may hold the GPU before it gives up and reports. */
static uint64_t wait_bound_ns(void)
{
    return (uint64_t)(gcsh_env_value(GCSH_ENV_GPU_WAIT_TIMEOUT) * 1e9);
}

/* When NCCL connects a communicator's peers.  NCCL's default
 * (NCCL_RUNTIME_CONNECT=1) connects them lazily, inside the first call
 * that needs a connection.  Where ranks share a GPU, NCCL connects them
 * over sockets, and a collective one rank entered alone (.check off, a
 * command typed for one rank) blocked in accept() inside that call, where
 * neither Ctrl-C nor ncclCommAbort reaches it (4 ranks sharing an H100,
 * NCCL 2.28.3): there gcsh connects every communicator when it is made
 * (NCCL_RUNTIME_CONNECT=0).  With a GPU each (NVLink, P2P), a lone rank's
 * collective stays interruptible when connected lazily (2 H200s: a lone
 * all-reduce of 8 B and of 64 MiB on a fresh split and after its first
 * call, a lone send: Ctrl-C brings the session back, as eagerly), and the
 * eager connection costs host memory NCCL keeps for every communicator
 * (about 0.25 KiB a split and its twin; the soak's long form at 4 GPUs
 * failed its bound eagerly and passes lazily: issue 35), so NCCL's default
 * stays.  The user's own setting wins.  Before the first communicator:
 * NCCL reads its parameters once.  .info says which (the splits line). */
static void nccl_connect_policy(cuda_state *st)
{
    const char *user = getenv("NCCL_RUNTIME_CONNECT");
    if (user && *user) {
        snprintf(st->connect_how, sizeof st->connect_how, "%s (NCCL_RUNTIME_CONNECT=%.20s, yours)",
                 strcmp(user, "0") == 0 ? "connected when made" : "connected at first use",
                 user);
    } else if (st->job_sharers > 1) {
        setenv("NCCL_RUNTIME_CONNECT", "0", 1);
        snprintf(st->connect_how, sizeof st->connect_how, "%s",
                 "connected when made (NCCL_RUNTIME_CONNECT=0, gcsh's where ranks share a "
                 "GPU: a lone rank's collective stays interruptible)");
    } else {
        snprintf(st->connect_how, sizeof st->connect_how, "%s",
                 "connected at first use (NCCL's default: a GPU each)");
    }
}

/* GCSH_SPLIT_SHARE (0 or 1; default 1): whether a split shares its parent's
 * NCCL resources (ncclConfig_t.splitShare: proxy, connections, streams), so
 * that a split costs a bootstrap instead of a new set of connections (a
 * split with an all-reduce and a free: 0.10-0.13 s against 1.39 s at 4
 * H100s; issue 35).  Its price: NCCL gives the communicators that share
 * one abort flag, so an abort of one (an interrupted collective) aborts the
 * others, the world among them.
 * NCCL_COMM_SPLIT_SHARE_RESOURCES, NCCL's own switch, overrides the config
 * inside NCCL, so when it is set it decides here too: gcsh must know which
 * communicators share a flag. */
static int split_share_policy(gcsh_ctx *ctx, cuda_state *st)
{
    const char *nccl = getenv("NCCL_COMM_SPLIT_SHARE_RESOURCES");
    const char *mine = getenv("GCSH_SPLIT_SHARE");
    if (nccl && *nccl) {
        st->split_share = atoi(nccl) == 1; /* NCCL takes any other value as 0 */
        snprintf(st->split_share_why, sizeof st->split_share_why,
                 "NCCL_COMM_SPLIT_SHARE_RESOURCES=%.40s", nccl);
        return 0;
    }
    if (mine && *mine && strcmp(mine, "0") != 0 && strcmp(mine, "1") != 0)
        return gcsh_set_error(ctx, "cuda backend: GCSH_SPLIT_SHARE=%s: valid values are 0 and 1",
                              mine);
    st->split_share = !(mine && strcmp(mine, "0") == 0);
    snprintf(st->split_share_why, sizeof st->split_share_why, "%s",
             !st->split_share ? "GCSH_SPLIT_SHARE=0"
             : mine && *mine  ? "GCSH_SPLIT_SHARE=1"
                              : "GCSH_SPLIT_SHARE=1, the default");
    return 0;
}

/* A kernel collective's blocks wait for their peers' blocks: all of them
 * must be resident at once, on every GPU.  Ranks sharing a GPU split the
 * room it has for such blocks (an H100 holds one 512-thread block of them
 * per SM: 64 blocks from each of 4 ranks do not fit in its 132 SMs, and
 * the barriers waited for blocks that could not start).  Unknown room: 1
 * block, which always fits. */
static unsigned paired_room_each(const cuda_state *st)
{
    unsigned room = gcsh_k_paired_room(st->dev);
    unsigned each = room / (unsigned)(st->sharers > 1 ? st->sharers : 1);
    return each > 0 ? each : 1;
}

/* The rank's GPU (cuda_share.c: one per rank, or shared with --share-gpu)
 * and its stream, scratch and wait control.  The sharing facts are
 * gathered over the machine's ranks first, also by a rank that has no
 * device, so that none waits for it. */
static int cuda_init(gcsh_ctx *ctx)
{
    gcsh_gpu_use(&gcsh_cuda_rt);
    int count = 0, dev = -1;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e == cudaSuccess && count < 1)
        e = cudaErrorNoDevice;
    int chosen = e == cudaSuccess && cuda_choose_device(ctx, count, &dev) == 0;
    cuda_state *st = chosen ? calloc(1, sizeof *st) : NULL;
    cuda_share_setup(ctx, count, st ? dev : -1, st);
    if (e != cudaSuccess) {
        char why[200];
        no_gpu_reason(e, why, sizeof why);
        return gcsh_set_error(ctx, "cuda backend: no usable GPU: %s (--backend host runs on the "
                                   "CPUs)", why);
    }
    if (!chosen)
        return -1;
    if (!st)
        return gcsh_set_error(ctx, "cuda backend: out of host memory");
    nccl_connect_policy(st);
    st->dev = dev;
    if (split_share_policy(ctx, st) != 0)
        goto fail;
    struct cudaDeviceProp prop;
    CUDA_TRY(ctx, cudaSetDevice(st->dev));
    CUDA_TRY(ctx, cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking));
    st->paired_max_blocks = paired_room_each(st);
    if (keep_pool_cached(ctx, st) != 0)
        goto fail;
    CUDA_TRY(ctx, cudaMalloc(&st->scratch, 8));
    /* mapped pinned memory: the wait kernels read the cancel word from the
     * GPU while the host writes it (UVA: one address for both sides) */
    CUDA_TRY(ctx, cudaHostAlloc((void **)&st->wctl, sizeof *st->wctl, cudaHostAllocMapped));
    memset((void *)st->wctl, 0, sizeof *st->wctl);
    st->wait_bound_ns = wait_bound_ns();
    CUDA_TRY(ctx, cudaStreamCreateWithFlags(&st->poll_stream, cudaStreamNonBlocking));
    CUDA_TRY(ctx, cudaHostAlloc((void **)&st->poll_buf, 8, cudaHostAllocDefault));
    CUDA_TRY(ctx, cudaMalloc((void **)&st->poll_dev, 8));
    CUDA_TRY(ctx, cudaGetDeviceProperties(&prop, st->dev));
    /* %.100s: device names are short; the bound keeps -Wformat-truncation quiet */
    snprintf(ctx->device, sizeof ctx->device, "cuda:%d %.100s", st->dev, prop.name);
    ctx->be_state = st;
    ctx->loc = st->dev; /* the comm binding checks tensors against it */
    return 0;
fail:
    state_free(st);
    return -1;
}

static void cuda_fini(gcsh_ctx *ctx)
{
    cuda_state *st = ctx->be_state;
    if (!st)
        return;
    cudaSetDevice(st->dev);
    cudaStreamSynchronize(st->stream);
    state_free(st);
    ctx->be_state = NULL;
}

/* "13.0" from 13000, "2.28.3" from 22803: CUDA and NCCL version encodings. */
static void push_cuda_version(lua_State *L, int v)
{
    lua_pushfstring(L, "%d.%d", v / 1000, (v % 1000) / 10);
}

static void push_nccl_version(lua_State *L)
{
    int v = 0;
    if (ncclGetVersion(&v) != ncclSuccess) {
        lua_pushnil(L);
        return;
    }
    lua_pushfstring(L, "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
}

static void push_devices(lua_State *L, int count)
{
    lua_createtable(L, count, 0);
    for (int d = 0; d < count; d++) {
        struct cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, d) != cudaSuccess)
            continue;
        lua_createtable(L, 0, 5);
        lua_pushinteger(L, d);
        lua_setfield(L, -2, "index");
        lua_pushstring(L, p.name);
        lua_setfield(L, -2, "name");
        lua_pushinteger(L, (lua_Integer)p.totalGlobalMem);
        lua_setfield(L, -2, "memory");
        lua_pushfstring(L, "%d.%d", p.major, p.minor);
        lua_setfield(L, -2, "compute_capability");
        char pci[32]; /* lua_pushfstring has no %x */
        snprintf(pci, sizeof pci, "%04x:%02x:%02x.0", (unsigned)p.pciDomainID,
                 (unsigned)p.pciBusID, (unsigned)p.pciDeviceID);
        lua_pushstring(L, pci);
        lua_setfield(L, -2, "pci");
        lua_rawseti(L, -2, d + 1);
    }
}

/* peer[i+1][j+1]: whether local GPU i can map GPU j's memory (NVLink / PCIe P2P). */
static void push_peer_matrix(lua_State *L, int count)
{
    lua_createtable(L, count, 0);
    for (int i = 0; i < count; i++) {
        lua_createtable(L, count, 0);
        for (int j = 0; j < count; j++) {
            int can = i == j;
            if (i != j && cudaDeviceCanAccessPeer(&can, i, j) != cudaSuccess)
                can = 0;
            lua_pushboolean(L, can);
            lua_rawseti(L, -2, j + 1);
        }
        lua_rawseti(L, -2, i + 1);
    }
}

/* "0000:19:00.0": the form sysfs and every rank use, whatever the runtime
 * gives. */
static int pci_bus_of(int dev, char *bus, size_t len)
{
    char raw[64];
    unsigned dom, b, d, fn;
    if (cudaDeviceGetPCIBusId(raw, sizeof raw, dev) != cudaSuccess ||
        sscanf(raw, "%x:%x:%x.%x", &dom, &b, &d, &fn) != 4)
        return -1;
    snprintf(bus, len, "%04x:%02x:%02x.%x", dom, b, d, fn);
    return 0;
}

/* The link from device `from` to device `to`: "NV" when peer access comes
 * with native atomics (NVLink, NVSwitch: PCIe peer access has none), "P2P"
 * for peer access without them (PCIe), "none".  No NVML: runtime queries. */
static const char *link_kind(int from, int to)
{
    int can = 0, atomics = 0;
    if (cudaDeviceCanAccessPeer(&can, from, to) != cudaSuccess || !can)
        return "none";
    if (cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, from, to) ==
            cudaSuccess &&
        atomics)
        return "NV";
    return "P2P";
}

/* links[pci] = link_kind(mine, that device), for every device visible here:
 * rank 0 builds the matrix between ranks from every rank's table. */
static void push_links(lua_State *L, int mine, int count)
{
    lua_createtable(L, 0, count);
    for (int d = 0; d < count; d++) {
        char bus[32];
        if (d == mine || pci_bus_of(d, bus, sizeof bus) != 0)
            continue;
        lua_pushstring(L, link_kind(mine, d));
        lua_setfield(L, -2, bus);
    }
}

static const char *yes_no(int dev, CUdevice_attribute attr)
{
    int v = 0;
    if (cuda_device_attribute(dev, attr, &v) != 0)
        return "unknown (the driver cannot say)";
    return v ? "yes" : "no";
}

/* The capabilities gcsh uses: peer access, CUDA VMM and its handle types
 * (vmm windows pass POSIX fds; fabric handles would cross nodes), NVLS and
 * why it is off (the opt-in policy: no multicast query without it), NCCL's
 * symmetric windows (ncclCommWindowRegister, NCCL 2.27 on; nccl windows). */
static void push_capabilities(lua_State *L, const gcsh_ctx *ctx, cuda_state *st, int count)
{
    int p2p = 0;
    for (int d = 0; d < count && !p2p; d++) {
        int can = 0;
        p2p = d != st->dev && cudaDeviceCanAccessPeer(&can, st->dev, d) == cudaSuccess && can;
    }
    lua_pushstring(L, count < 2 ? "no (one visible GPU)" : p2p ? "yes" : "no");
    lua_setfield(L, -2, "p2p");
    lua_pushstring(L, yes_no(st->dev, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED));
    lua_setfield(L, -2, "vmm");
    lua_pushstring(L, yes_no(st->dev, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED));
    lua_setfield(L, -2, "cumem_fd");
    lua_pushstring(L, yes_no(st->dev, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED));
    lua_setfield(L, -2, "cumem_fabric");
    char why[200];
    if (cuda_nvls_policy(st, NULL, why, sizeof why))
        lua_pushstring(L, "allowed (opted in; nccl windows only)");
    else
        lua_pushfstring(L, "off: %s", why);
    lua_setfield(L, -2, "nvls");
    int v = 0;
    if (ncclGetVersion(&v) != ncclSuccess)
        lua_pushstring(L, "unknown (ncclGetVersion failed)");
    else if (v < 22700)
        lua_pushfstring(L, "no (NCCL %d.%d: 2.27 is the first with symmetric windows)",
                        v / 10000, (v / 100) % 100);
    else if (st->world_symmetric > 0)
        lua_pushstring(L, "yes (NCCL, for comm.world())");
    else if (st->world_symmetric < 0)
        lua_pushfstring(L, "no: %s", cuda_no_symmetric_reason(st, ctx->size));
    else
        lua_pushstring(L, "not asked yet (NCCL answers when comm.world() is made)");
    lua_setfield(L, -2, "nccl_symmetric");
    /* how a split is made (cuda_comm.c), for .info's "splits:" line */
    lua_pushfstring(L, "%s (%s); twin at the first collective (none at one rank); %s",
                    st->split_share ? "share the parent's NCCL resources and abort flag"
                                    : "own NCCL resources",
                    st->split_share_why, st->connect_how);
    lua_setfield(L, -2, "splits");
}

static void cuda_info(gcsh_ctx *ctx, void *lua_state)
{
    lua_State *L = lua_state;
    cuda_state *st = cuda_enter(ctx);
    int count = 0, drv = 0, rt = 0;
    cudaGetDeviceCount(&count);
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    lua_newtable(L);
    lua_pushinteger(L, st ? st->dev : -1);
    lua_setfield(L, -2, "gpu");
    push_cuda_version(L, drv);
    lua_setfield(L, -2, "driver_version");
    push_cuda_version(L, rt);
    lua_setfield(L, -2, "runtime_version");
    push_nccl_version(L);
    lua_setfield(L, -2, "nccl_version");
    push_devices(L, count);
    lua_setfield(L, -2, "devices");
    push_peer_matrix(L, count);
    lua_setfield(L, -2, "peer_access");
    if (!st)
        return;
    struct cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, st->dev) == cudaSuccess) {
        lua_pushstring(L, p.name);
        lua_setfield(L, -2, "gpu_name");
        lua_pushinteger(L, (lua_Integer)p.totalGlobalMem);
        lua_setfield(L, -2, "gpu_memory");
        lua_pushfstring(L, "%d.%d", p.major, p.minor);
        lua_setfield(L, -2, "compute_capability");
    }
    /* in use on the whole device, by every process (what a soak watches:
     * tests/lua/soak.lua) */
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaSetDevice(st->dev) == cudaSuccess &&
        cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
        lua_pushinteger(L, (lua_Integer)(total_bytes - free_bytes));
        lua_setfield(L, -2, "gpu_memory_used");
    }
    char bus[32];
    if (pci_bus_of(st->dev, bus, sizeof bus) == 0) {
        lua_pushstring(L, bus);
        lua_setfield(L, -2, "pci");
        lua_pushinteger(L, gcsh_numa_of_pci(bus));
        lua_setfield(L, -2, "numa");
    }
    push_capabilities(L, ctx, st, count);
    cuda_share_info(ctx, st, L);
    push_links(L, st->dev, count);
    lua_setfield(L, -2, "links");
}

/* gcsh.nccl: the version of the NCCL library actually loaded (not the header's). */
static void cuda_globals(gcsh_ctx *ctx, void *lua_state)
{
    (void)ctx;
    lua_State *L = lua_state;
    push_nccl_version(L);
    lua_setfield(L, -2, "nccl");
}

/* gcsh.debug.inject: "oom" makes the next device allocation fail (a real,
 * non-sticky cudaErrorMemoryAllocation); "oob_write" launches a kernel that
 * writes outside any allocation, whose sticky cudaErrorIllegalAddress shows
 * at the next wait (gcsh.sync(), a collective). */
static int cuda_inject(gcsh_ctx *ctx, const char *what)
{
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    if (strcmp(what, "oom") == 0) {
        ctx->inject_oom = 1;
        return 0;
    }
    if (strcmp(what, "oob_write") == 0) {
        CUDA_TRY(ctx, gcsh_k_fault_oob_write(st->stream));
        return 0;
    }
    return gcsh_set_error(ctx, "gcsh.debug.inject: unknown fault '%s' on the cuda backend "
                               "(valid: oom oob_write)", what);
fail:
    return -1;
}

const gcsh_backend gcsh_cuda_backend = {
    .name = "cuda",
    .stream_ordered = 1,
    .one_rank_copies = 1, /* cuda_comm.c: one_rank */
    .init = cuda_init,
    .fini = cuda_fini,
    .info = cuda_info,
    .globals = cuda_globals,
    .inject = cuda_inject,
    .mem = &gcsh_cuda_mem_ops,
    .comm = &gcsh_cuda_comm_ops,
    .win = &gcsh_cuda_window_ops,
    .kern = &gcsh_cuda_kernel_ops,
    .xfer = &gcsh_cuda_xfer_ops,
    .graph = &gcsh_cuda_graph_ops,
    .persist = &gcsh_cuda_persist_ops,
};
