// CUDA's mapping of the device primitives of kernels/kport.cuh (which says
// what each is): libcu++'s atomic_ref and fences, the CUDA fence
// intrinsics, PTX's %globaltimer and volatile vector accesses.
#ifndef GCSH_KERNELS_CUDA_KPORT_CUH
#define GCSH_KERNELS_CUDA_KPORT_CUH

#include <cuda/atomic>

namespace gcsh_k {

using Scope = cuda::thread_scope;
constexpr Scope kScopeDevice = cuda::thread_scope_device;
constexpr Scope kScopeSystem = cuda::thread_scope_system;

template <Scope S> using atomic_u64 = cuda::atomic_ref<unsigned long long, S>;
using sys_atomic = atomic_u64<kScopeSystem>;

constexpr cuda::std::memory_order kRelaxed = cuda::std::memory_order_relaxed;
constexpr cuda::std::memory_order kAcquire = cuda::std::memory_order_acquire;
constexpr cuda::std::memory_order kRelease = cuda::std::memory_order_release;
constexpr cuda::std::memory_order kAcqRel = cuda::std::memory_order_acq_rel;
constexpr cuda::std::memory_order kSeqCst = cuda::std::memory_order_seq_cst;

__device__ __forceinline__ void fence_device()
{
    __threadfence();
}

__device__ __forceinline__ void fence_system()
{
    __threadfence_system();
}

__device__ __forceinline__ void fence_seq_cst_system()
{
    cuda::atomic_thread_fence(cuda::memory_order_seq_cst, cuda::thread_scope_system);
}

__device__ __forceinline__ unsigned long long globaltimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ void sleep_ns(unsigned ns)
{
    __nanosleep(ns);
}

__device__ __forceinline__ void store_line(char *p, uint4 v)
{
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x),
                 "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}

__device__ __forceinline__ uint4 load_line(const char *p)
{
    uint4 v;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
    return v;
}

} // namespace gcsh_k

#endif
