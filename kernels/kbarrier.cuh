// Device pieces shared by reduce.cu and mcast.cu: the per-block barrier on
// a window's sync words (kern.h), bounded and cancellable like
// signal_wait_kernel in window.cu.
#ifndef GCSH_KERNELS_KBARRIER_CUH
#define GCSH_KERNELS_KBARRIER_CUH

#include <cuda/atomic>

#include "kern.h"
#include "reducekern.h"

namespace gcsh_k {

using sys_atomic = cuda::atomic_ref<unsigned long long, cuda::thread_scope_system>;

constexpr unsigned kThreads = 512;

// What a block needs to meet its peers: every member's sync area (mapped
// here), my index, the first barrier number of this launch, the wait bound.
struct Sync {
    unsigned long long *area[GCSH_KERN_MAX_TEAM];
    int k, me;
    unsigned long long first;
    gcsh_wait_ctl *ctl;
    unsigned gen;
    unsigned long long bound_ns;
};

__device__ inline unsigned long long globaltimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Waits until *word >= value; false when it gave up (bound or cancel), which
// is recorded in ctl for cuda_wait to report.
__device__ inline bool wait_at_least(unsigned long long *word, unsigned long long value,
                                     const Sync &s)
{
    sys_atomic a(*word);
    unsigned long long t0 = globaltimer(), x = 0;
    unsigned ns = 32;
    for (unsigned i = 0;; i++) {
        x = a.load(cuda::memory_order_acquire);
        if (x >= value)
            return true;
        int why = 0;
        if ((i & 15) == 0 && s.ctl->cancel_gen != s.gen)
            why = GCSH_WAIT_CANCELLED;
        else if (globaltimer() - t0 > s.bound_ns)
            why = GCSH_WAIT_TIMED_OUT;
        if (why) {
            s.ctl->why = why;
            s.ctl->cmp = GCSH_CMP_GE;
            s.ctl->seen = x;
            s.ctl->want = value;
            __threadfence_system();
            // several blocks may give up at once: any change of the counter
            // is what the host looks for
            s.ctl->gave_up = s.ctl->gave_up + 1;
            return false;
        }
        __nanosleep(ns);
        if (ns < 256)
            ns *= 2;
    }
}

// Barrier `index` (0-based) of this launch, between block blockIdx.x of
// every member.  Thread p signals member p (release: everything this block
// wrote before is visible to whoever sees the number) and waits for member
// p's signal (acquire); __syncthreads spreads both to the block.  After one
// wait gave up, the block stops waiting (*abandoned) but keeps signalling,
// so its peers are not held as well.
__device__ inline void barrier(const Sync &s, unsigned index, int *abandoned)
{
    unsigned long long value = s.first + index;
    size_t row = (size_t)blockIdx.x * GCSH_KERN_MAX_TEAM;
    __syncthreads();
    if ((int)threadIdx.x < s.k) {
        int p = threadIdx.x;
        sys_atomic(s.area[p][row + s.me]).store(value, cuda::memory_order_release);
        if (!*abandoned && !wait_at_least(&s.area[s.me][row + p], value, s))
            *abandoned = 1;
    }
    __syncthreads();
}

// Blocks of a kernel collective: the same on every rank (they pair through
// their sync words), so a function of the region's size only.
inline unsigned paired_blocks(size_t bytes)
{
    size_t per_block = (size_t)kThreads * 16;
    size_t b = (bytes + per_block - 1) / per_block;
    return (unsigned)(b < 1 ? 1 : b > GCSH_KERN_MAX_BLOCKS ? GCSH_KERN_MAX_BLOCKS : b);
}

Sync make_sync(const gcsh_kcoll_args *a, const gcsh_window_desc *d, const gcsh_kwait *w);

// GCSH_KC_MULTICAST (mcast.cu): the NVLS two-shot.
cudaError_t mc_collective(const gcsh_kcoll_args *a, const gcsh_window_desc *d, const Sync &s,
                          cudaStream_t stream);

} // namespace gcsh_k

#endif
