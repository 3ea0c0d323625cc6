// The NVLS path of w:multicast(): multimem.ld_reduce / multimem.st over a
// multicast address from NCCL's LSA multimem (a device communicator with
// lsaMultimem = true, ncclGetLsaMultimemPointer).
//
// Compiled for sm_90; taken only under src/DESIGN.md's opt-in (cuda_kern.c:
// GCSH_MULTICAST=1, NCCL_NVLS_ENABLE not "0", the device reports multicast
// support, a window of kind nccl).  It has never run on the machines this
// project is tested on, where multicast stays off: only its refusal is
// tested there.
//
// Alignment (PTX ISA, multimem): an access must be naturally aligned to its
// whole width, and there are no 16-bit forms (ptxas refuses .f16, .bf16 and
// .b16 scalars).  So the unit is 4 bytes: an f32/i32/u32 element or a pair
// of f16/bf16 (the binding requires 4-byte aligned offsets and lengths in
// mode nvls, and says so); the 16-byte forms (.v4.f32, .v4.f16x2,
// .v4.bf16x2) run from 16-byte aligned multicast addresses and the 4-byte
// forms (.f32, .f16x2, .bf16x2, .u32, .s32, .b32) take the head and the
// tail: no byte is dropped whatever the length (the bug of a real NVLS patch
// the issue cites).  The 32-bit integer types have no vector forms: four
// scalars.
// f16 and bf16 sums accumulate in f32 (.acc::f32), as the emulation does;
// the switch adds in a fixed order of its own, so an f16/bf16/f32 sum may
// differ from the emulation in the last place (integer ops, min and max
// are exact either way).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <nccl_device.h>
#pragma GCC diagnostic pop

#include <new>

#include "cuda/cudakern.h"
#include "kbarrier.cuh"

namespace gcsh_k {
namespace {

// ---- the PTX, one function per form ------------------------------------------------

#define MM_LD_V4_F32(opname)                                                                  \
    asm volatile("multimem.ld_reduce.relaxed.sys.global." opname ".v4.f32 {%0,%1,%2,%3}, [%4];" \
                 : "=f"(f[0]), "=f"(f[1]), "=f"(f[2]), "=f"(f[3])                              \
                 : "l"(p)                                                                      \
                 : "memory")
#define MM_LD_V4_X2(opname, type)                                                             \
    asm volatile("multimem.ld_reduce.relaxed.sys.global." opname ".v4." type                   \
                 " {%0,%1,%2,%3}, [%4];"                                                       \
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)                                  \
                 : "l"(p)                                                                      \
                 : "memory")
#define MM_LD_S32(opname, type)                                                               \
    asm volatile("multimem.ld_reduce.relaxed.sys.global." opname "." type " %0, [%1];"        \
                 : "=r"(x)                                                                     \
                 : "l"(p)                                                                      \
                 : "memory")
enum { OP_ADD, OP_MIN, OP_MAX };

int mm_op(int op)
{
    return op == GCSH_OP_MIN ? OP_MIN : op == GCSH_OP_MAX ? OP_MAX : OP_ADD;
}

// 16 bytes at p (16-byte aligned multicast address), reduced over the team.
__device__ uint4 ld_reduce_v4(const void *p, gcsh_dtype dt, int op)
{
    uint4 r = {};
    switch (dt) {
    case GCSH_F32: {
        float f[4];
        MM_LD_V4_F32("add"); // the only f32 op multimem has
        r = make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]),
                       __float_as_uint(f[3]));
        break;
    }
    case GCSH_F16:
        if (op == OP_ADD)
            MM_LD_V4_X2("add.acc::f32", "f16x2");
        else if (op == OP_MIN)
            MM_LD_V4_X2("min", "f16x2");
        else
            MM_LD_V4_X2("max", "f16x2");
        break;
    case GCSH_BF16:
        if (op == OP_ADD)
            MM_LD_V4_X2("add.acc::f32", "bf16x2");
        else if (op == OP_MIN)
            MM_LD_V4_X2("min", "bf16x2");
        else
            MM_LD_V4_X2("max", "bf16x2");
        break;
    default: break; // integers: four scalars (ld_reduce_s32)
    }
    return r;
}

__device__ unsigned ld_reduce_s32(const void *p, gcsh_dtype dt, int op)
{
    unsigned x = 0;
    if (dt == GCSH_F32) {
        float f;
        asm volatile("multimem.ld_reduce.relaxed.sys.global.add.f32 %0, [%1];"
                     : "=f"(f)
                     : "l"(p)
                     : "memory");
        x = __float_as_uint(f);
    } else if (dt == GCSH_F16) { // a pair: multimem has no 16-bit forms
        if (op == OP_ADD)
            MM_LD_S32("add.acc::f32", "f16x2");
        else if (op == OP_MIN)
            MM_LD_S32("min", "f16x2");
        else
            MM_LD_S32("max", "f16x2");
    } else if (dt == GCSH_BF16) {
        if (op == OP_ADD)
            MM_LD_S32("add.acc::f32", "bf16x2");
        else if (op == OP_MIN)
            MM_LD_S32("min", "bf16x2");
        else
            MM_LD_S32("max", "bf16x2");
    } else if (dt == GCSH_I32) {
        if (op == OP_ADD)
            MM_LD_S32("add", "s32");
        else if (op == OP_MIN)
            MM_LD_S32("min", "s32");
        else
            MM_LD_S32("max", "s32");
    } else {
        if (op == OP_ADD)
            MM_LD_S32("add", "u32");
        else if (op == OP_MIN)
            MM_LD_S32("min", "u32");
        else
            MM_LD_S32("max", "u32");
    }
    return x;
}

__device__ void st_v4(void *p, uint4 v)
{
    // the bits are moved as f32 lanes whatever the dtype: a store does no arithmetic
    asm volatile("multimem.st.relaxed.sys.global.v4.f32 [%0], {%1,%2,%3,%4};" ::"l"(p),
                 "f"(__uint_as_float(v.x)), "f"(__uint_as_float(v.y)),
                 "f"(__uint_as_float(v.z)), "f"(__uint_as_float(v.w))
                 : "memory");
}

__device__ void st_s32(void *p, unsigned v)
{
    asm volatile("multimem.st.relaxed.sys.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// ---- element movement ---------------------------------------------------------------

struct McJob {
    const char *mc_src; // ld_reduce from here (multicast), or nullptr: load src
    const char *src;    // st: local source
    char *out;          // ld_reduce: local destination, or nullptr
    char *mc_dst;       // st to here (multicast), or nullptr
    size_t esize, head, nvec, tail;
    int op, out_vec;
    gcsh_dtype dt;
};

__device__ uint4 load_vec(const McJob &j, size_t byte)
{
    if (!j.mc_src)
        return *reinterpret_cast<const uint4 *>(j.src + byte);
    if (j.dt != GCSH_I32 && j.dt != GCSH_U32)
        return ld_reduce_v4(j.mc_src + byte, j.dt, j.op);
    uint4 r;
    r.x = ld_reduce_s32(j.mc_src + byte, j.dt, j.op);
    r.y = ld_reduce_s32(j.mc_src + byte + 4, j.dt, j.op);
    r.z = ld_reduce_s32(j.mc_src + byte + 8, j.dt, j.op);
    r.w = ld_reduce_s32(j.mc_src + byte + 12, j.dt, j.op);
    return r;
}

__device__ void store_vec(const McJob &j, size_t byte, uint4 v)
{
    if (j.mc_dst)
        st_v4(j.mc_dst + byte, v);
    if (!j.out)
        return;
    if (j.out_vec) {
        *reinterpret_cast<uint4 *>(j.out + byte) = v;
    } else {
        const unsigned *w = reinterpret_cast<const unsigned *>(&v);
        for (int e = 0; e < 4; e++)
            reinterpret_cast<unsigned *>(j.out + byte)[e] = w[e];
    }
}

__device__ void move_scalar(const McJob &j, size_t byte)
{
    unsigned x = j.mc_src ? ld_reduce_s32(j.mc_src + byte, j.dt, j.op)
                          : *reinterpret_cast<const unsigned *>(j.src + byte);
    if (j.mc_dst)
        st_s32(j.mc_dst + byte, x);
    if (j.out)
        *reinterpret_cast<unsigned *>(j.out + byte) = x;
}

__device__ void run_mc_job(const McJob &j)
{
    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t ve = 16 / j.esize;
    for (size_t v = tid; v < j.nvec; v += stride) {
        size_t byte = j.head * j.esize + v * 16;
        store_vec(j, byte, load_vec(j, byte));
    }
    for (size_t i = tid; i < j.head + j.tail; i += stride) {
        size_t e = i < j.head ? i : j.head + j.nvec * ve + (i - j.head);
        move_scalar(j, e * j.esize);
    }
}

__global__ void __launch_bounds__(kThreads) mc_job_kernel(McJob j)
{
    run_mc_job(j);
}

__global__ void __launch_bounds__(kThreads) mc_fenced_kernel(McJob j, Sync s)
{
    __shared__ int abandoned;
    if (threadIdx.x == 0)
        abandoned = 0;
    const unsigned long long first = row_first(s);
    barrier(s, first, 0, &abandoned);
    if (!abandoned) /* kbarrier.cuh: no data written after a barrier given up */
        run_mc_job(j);
    barrier(s, first, 1, &abandoned);
    row_passed(s, first, 2);
}

__global__ void multimem_pointer_kernel(ncclWindow_t win, ncclDevComm dc, void **out)
{
    *out = ncclGetLsaMultimemPointer(win, 0, dc);
}

// The split from the multicast address (what multimem's alignment rule is
// about); the local pointer gets 16-byte accesses only when aligned alike.
McJob make_job(const void *mc, const void *local, size_t n, gcsh_dtype dt)
{
    McJob j = {};
    j.dt = dt;
    j.esize = 4; // the unit: an element, or a pair of f16/bf16 (n counts units)
    gcsh_kern_split sp = gcsh_kern_split_range((uintptr_t)mc, n, j.esize, 1);
    j.head = sp.head;
    j.nvec = sp.nvec;
    j.tail = sp.tail;
    j.out_vec = (uintptr_t)local % 16 == (uintptr_t)mc % 16;
    return j;
}

// Element bytes of the nvls dtypes (dtype.c is C without a C++ guard).
size_t nvls_esize(gcsh_dtype dt)
{
    return dt == GCSH_F16 || dt == GCSH_BF16 ? 2 : 4;
}

bool nvls_dtype(gcsh_dtype dt)
{
    return gcsh_kern_nvls_ops_of(dt) != 0;
}

unsigned mc_blocks(size_t units)
{
    size_t b = (units + kThreads - 1) / kThreads;
    return (unsigned)(b < 1 ? 1 : b > 1024 ? 1024 : b);
}

} // namespace

// The plan's multicast all-reduce (kplan.h: member r reduces chunk r of
// every slice and stores it to every slice) with multimem: chunks are the
// plan's rule over 4-byte units (multimem has no 16-bit forms, so an f16 or
// bf16 chunk is a run of element pairs).
unsigned mc_blocks_per_sm()
{
    int n = 0;
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, mc_fenced_kernel, kThreads, 0) ==
                   cudaSuccess
               ? (unsigned)n
               : 0;
}

cudaError_t mc_collective(const gcsh_kcoll_args *a, const gcsh_window_desc *d,
                          const gcsh_kwait *w, cudaStream_t stream)
{
    size_t n = a->plan.n;
    if (!a->mc || !a->mc->base || !nvls_dtype(a->dt) ||
        !(gcsh_kern_nvls_ops_of(a->dt) & GCSH_KERN_OP_BIT(a->op)))
        return cudaErrorInvalidValue;
    size_t es = nvls_esize(a->dt);
    if ((a->offset * es) % 4 || (n * es) % 4)
        return cudaErrorMisalignedAddress; // the binding refuses these first
    int me = d->team_rank;
    gcsh_kchunk ch = gcsh_kplan_chunk(n * es / 4, d->team_size, me);
    char *mc = (char *)a->mc->base + a->offset * es + ch.first * 4;
    McJob j = make_job(mc, mc, ch.count, a->dt);
    j.mc_src = mc;
    j.mc_dst = mc;
    j.op = mm_op(a->op);
    (void)cudaGetLastError();
    mc_fenced_kernel<<<paired_blocks(n * es, w), kThreads, 0, stream>>>(j, make_sync(a, d, w));
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess && a->out)
        e = cudaMemcpyAsync(a->out, (char *)d->peer[me] + a->offset * es, n * es,
                            cudaMemcpyDeviceToDevice, stream);
    return e;
}

} // namespace gcsh_k

using namespace gcsh_k;

extern "C" ncclResult_t gcsh_nccl_multimem_open(ncclComm_t comm, ncclWindow_t win,
                                                void **dev_comm, void **mc_base,
                                                cudaStream_t stream)
{
    ncclDevComm *dc = new (std::nothrow) ncclDevComm();
    void **dev_ptr = nullptr;
    if (!dc)
        return ncclSystemError;
    ncclDevCommRequirements reqs = {};
    reqs.lsaMultimem = true; // the opt-in was checked by the caller (cuda_kern.c)
    ncclResult_t r = ncclDevCommCreate(comm, &reqs, dc);
    // a non-blocking communicator may still be filling *dc: wait for it
    // before the kernel below reads it
    while (r == ncclInProgress)
        if (ncclCommGetAsyncError(comm, &r) != ncclSuccess)
            r = ncclInternalError;
    if (r != ncclSuccess) {
        delete dc;
        return r;
    }
    *dev_comm = dc;
    if (cudaMalloc(&dev_ptr, sizeof *dev_ptr) != cudaSuccess)
        return ncclUnhandledCudaError;
    (void)cudaGetLastError();
    multimem_pointer_kernel<<<1, 1, 0, stream>>>(win, *dc, dev_ptr);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(mc_base, dev_ptr, sizeof *mc_base, cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(stream);
    cudaFree(dev_ptr);
    return e == cudaSuccess && *mc_base ? ncclSuccess : ncclUnhandledCudaError;
}

extern "C" cudaError_t gcsh_k_mc_ld_reduce(const void *mc, void *out, size_t n, gcsh_dtype dt,
                                           gcsh_redop op, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    size_t bytes = n * nvls_esize(dt);
    if (!mc || !out || !nvls_dtype(dt) || !(gcsh_kern_nvls_ops_of(dt) & GCSH_KERN_OP_BIT(op)))
        return cudaErrorInvalidValue;
    if (((uintptr_t)mc | (uintptr_t)out | bytes) % 4)
        return cudaErrorMisalignedAddress;
    McJob j = make_job(mc, out, bytes / 4, dt);
    j.mc_src = (const char *)mc;
    j.out = (char *)out;
    j.op = mm_op(op);
    (void)cudaGetLastError();
    mc_job_kernel<<<mc_blocks(j.nvec + j.head + j.tail), kThreads, 0, stream>>>(j);
    return cudaGetLastError();
}

extern "C" cudaError_t gcsh_k_mc_st(void *mc, const void *src, size_t n, gcsh_dtype dt,
                                    cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    size_t bytes = n * nvls_esize(dt);
    if (!mc || !src || !nvls_dtype(dt))
        return cudaErrorInvalidValue;
    if (((uintptr_t)mc | (uintptr_t)src | bytes) % 4)
        return cudaErrorMisalignedAddress;
    McJob j = make_job(mc, src, bytes / 4, dt);
    j.src = (const char *)src;
    j.mc_dst = (char *)mc;
    if (!j.out_vec) { // a source aligned otherwise: every element by scalar stores
        j.head = bytes / 4;
        j.nvec = 0;
        j.tail = 0;
    }
    (void)cudaGetLastError();
    mc_job_kernel<<<mc_blocks(j.nvec + j.head + j.tail), kThreads, 0, stream>>>(j);
    return cudaGetLastError();
}
