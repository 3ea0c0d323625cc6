// The "ll" all-reduce (core/kll.h): one kernel per call and no barrier.
// Each thread stores its lines of my region, with the call's flag in every
// 16-byte line, into my slot of every member's LL area (one volatile vector
// store per member), then waits for the same lines of every member's slot
// in my area, reduces them in team order and stores the result.  A line
// read with both flags equal to the call's carries that call's data: the
// flag travels with the data, so there is nothing to fence and no round
// trip to wait for before the data moves (NCCL's LL protocol).
//
// The call count lives in my LL header, read by every block at the start;
// the last block to finish advances it.  So nothing on the host changes
// between calls, and a captured launch (a CUDA graph) replays correctly.
#include "kll.cuh"
#include "reducekern.h"

namespace gcsh_k {

constexpr unsigned kLLMaxBlocks = 32; // 64 KiB: 8192 lines, one per thread

template <class T> __global__ void __launch_bounds__(kLLThreads) ll_kernel(LL a)
{
    gcsh_ll_header *h = reinterpret_cast<gcsh_ll_header *>(a.area[a.me]);
    unsigned long long count = *reinterpret_cast<volatile unsigned long long *>(&h->count);
    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    bool gave_up = false;
    ll_call<T>(a, count, tid, (size_t)gridDim.x * blockDim.x, &gave_up);
    count_call(h, count);
}

template <class T> struct LLFamily {
    static constexpr void (*run)(LL) = ll_kernel<T>;
};

unsigned ll_blocks_per_sm()
{
    return ll_blocks_per_sm_of<LLFamily>(kLLThreads);
}

} // namespace gcsh_k

using namespace gcsh_k;

extern "C" cudaError_t gcsh_k_ll_allreduce(const gcsh_kll_args *a, const gcsh_window_desc *d,
                                           const gcsh_kwait *w, cudaStream_t stream)
{
    LLKernel kernel = ll_kernel_of<LLFamily>(a->dt);
    LL ll;
    cudaError_t e = ll_args_of(a, d, w, kernel.esize, gcsh_ll_capacity(a->window_bytes), 1, &ll);
    if (e != cudaSuccess)
        return e;
    if (ll.k == 1)
        return ll_alone(ll, stream);
    unsigned blocks = ll_blocks(gcsh_ll_lines(ll.bytes), kLLThreads, kLLMaxBlocks, w);
    (void)cudaGetLastError(); // report this launch only
    kernel.run<<<blocks, kLLThreads, 0, stream>>>(ll);
    return cudaGetLastError();
}
