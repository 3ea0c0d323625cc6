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

struct LLKernel {
    void (*run)(LL);
    size_t esize;
};

template <class T> constexpr LLKernel ll_of()
{
    return {ll_kernel<T>, sizeof(typename T::S)};
}

LLKernel ll_kernel_for(gcsh_dtype dt)
{
    switch (dt) {
    case GCSH_F32: return ll_of<F32>();
    case GCSH_F16: return ll_of<F16>();
    case GCSH_BF16: return ll_of<BF16>();
    case GCSH_I32: return ll_of<Int32<true>>();
    case GCSH_U32: return ll_of<Int32<false>>();
    default: return {nullptr, 0};
    }
}

unsigned ll_blocks_per_sm()
{
    static const gcsh_dtype all[] = {GCSH_F32, GCSH_F16, GCSH_BF16, GCSH_I32, GCSH_U32};
    unsigned fewest = ~0u;
    for (gcsh_dtype dt : all) {
        int n = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, ll_kernel_for(dt).run, kLLThreads,
                                                          0) != cudaSuccess)
            return 0;
        fewest = (unsigned)n < fewest ? (unsigned)n : fewest;
    }
    return fewest;
}

} // namespace gcsh_k

using namespace gcsh_k;

extern "C" cudaError_t gcsh_k_ll_allreduce(const gcsh_kll_args *a, const gcsh_window_desc *d,
                                           const gcsh_kwait *w, cudaStream_t stream)
{
    LLKernel kernel = ll_kernel_for(a->dt);
    size_t es = kernel.esize;
    LL ll = {};
    ll.bytes = a->n * es;
    if (!kernel.run || ll.bytes == 0 || ll.bytes > gcsh_ll_capacity(a->window_bytes) ||
        d->team_size < 1 || d->team_size > a->slots || a->slots > GCSH_KERN_MAX_TEAM ||
        d->team_rank < 0 || d->team_rank >= d->team_size || !w->ctl)
        return cudaErrorInvalidValue;
    for (int p = 0; p < d->team_size; p++)
        ll.area[p] = (char *)d->peer[p] + a->ll_off;
    ll.rank_of = gcsh_window_team_dev(d);
    char *mine = (char *)d->peer[d->team_rank] + a->offset * es;
    ll.src = a->in ? (const char *)a->in : mine;
    ll.dst = a->out ? (char *)a->out : mine;
    ll.window_bytes = a->window_bytes;
    ll.k = d->team_size;
    ll.me = d->team_rank;
    ll.slots = a->slots;
    ll.op = (int)a->op;
    ll.end = {w->ctl, w->gen, w->bound_ns};
    if (ll.k == 1) // a team of one: the sum is my region, and no one reads my flags
        return ll.dst == ll.src ? cudaSuccess
                                : cudaMemcpyAsync(ll.dst, ll.src, ll.bytes,
                                                  cudaMemcpyDeviceToDevice, stream);
    size_t lines = gcsh_ll_lines(ll.bytes);
    size_t blocks = (lines + kLLThreads - 1) / kLLThreads;
    size_t most = w->max_blocks < kLLMaxBlocks ? w->max_blocks : kLLMaxBlocks;
    blocks = blocks > most ? most : blocks < 1 ? 1 : blocks; // max_blocks: gcsh_kwait says why
    (void)cudaGetLastError(); // report this launch only
    kernel.run<<<(unsigned)blocks, kLLThreads, 0, stream>>>(ll);
    return cudaGetLastError();
}
