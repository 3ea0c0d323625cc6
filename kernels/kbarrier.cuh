// Device pieces shared by reduce.cu and cuda/mcast.cu: the per-block barrier on
// a window's sync words (kreduce.h), bounded and cancellable through the wait
// of kwait.cuh, as s:wait is.
#ifndef GCSH_KERNELS_KBARRIER_CUH
#define GCSH_KERNELS_KBARRIER_CUH

#include "core/kreduce.h"
#include "kwait.cuh"
#include "reducekern.h"

namespace gcsh_k {

constexpr unsigned kThreads = 512;

// Registers a thread of a kernel whose blocks wait for other ranks' blocks
// (fenced, one-shot) may use: 104, so that one such block (512 x 104 =
// 53248 of an SM's 65536) leaves room beside it for a block of the
// persistent all-reduce's resident kernel (persist.cu: 256 threads x 40).
// The co-residency bound of these kernels (gcsh_kwait.max_blocks) counts on
// a block per SM; the f16 and bf16 one-shot kernels wanted 121, which
// filled an SM alone, so a resident there would have left a block out.
constexpr int kPairedMaxRegs = 104;
constexpr int kSmRegisters = 65536;

// What a block needs to meet its peers: every member's sync area (mapped
// here), my index, my epoch words (kreduce.h), how a wait ends.
struct Sync {
    unsigned long long *area[GCSH_KERN_MAX_TEAM];
    const int *rank_of; // device memory: each member's rank in the communicator (hang reports)
    unsigned long long *epoch; // mine: GCSH_KERN_EPOCH_WORDS, one per block
    int k, me;
    int one_gpu;               // every member runs on this GPU (gcsh_kwait)
    WaitEnd end;
};

// The number of this launch's first barrier for block blockIdx.x: one past
// what its row passed so far.  Read by every thread before the block's
// first barrier; row_passed writes it after the last one, and the next
// launch (stream order, also inside a graph) reads it after this one ended.
__device__ inline unsigned long long row_first(const Sync &s)
{
    return s.epoch[blockIdx.x] + 1;
}

// The block passed n barriers from `first` (every thread is past its last
// barrier's __syncthreads, so none still reads the word).
__device__ inline void row_passed(const Sync &s, unsigned long long first, unsigned n)
{
    if (threadIdx.x == 0)
        s.epoch[blockIdx.x] = first - 1 + n;
}

// Barrier `index` (0-based) of this launch, between block blockIdx.x of
// every member.  Thread p signals member p (release: everything this block
// wrote before is visible to whoever sees the number) and waits for member
// p's signal (acquire); __syncthreads spreads both to the block.  After one
// wait gave up, the block stops waiting (*abandoned) but keeps signalling,
// so its peers are not held as well, and its kernel writes no data after
// it: a result that misses a member is no result, and the window keeps
// what it held, to be read as evidence after the abort that follows.
template <Scope S>
__device__ inline void meet(const Sync &s, unsigned long long value, size_t row, int *abandoned)
{
    int p = threadIdx.x;
    atomic_u64<S>(s.area[p][row + s.me]).store(value, kRelease);
    if (!*abandoned &&
        !wait_until<S>(&s.area[s.me][row + p], GCSH_CMP_GE, value, s.end, 256, s.rank_of, p))
        *abandoned = 1;
}

// A team of one has no one to meet: stream order already orders its
// launches, and the block's __syncthreads its threads.  A team on one GPU
// meets at device scope, about half the cost of a system-scope release and
// acquire (0.55 against 0.95 us a kernel, measured on an H100).
__device__ inline void barrier(const Sync &s, unsigned long long first, unsigned index,
                               int *abandoned)
{
    unsigned long long value = first + index;
    size_t row = (size_t)blockIdx.x * GCSH_KERN_MAX_TEAM;
    __syncthreads();
    if (s.k > 1 && (int)threadIdx.x < s.k) {
        if (s.one_gpu)
            meet<kScopeDevice>(s, value, row, abandoned);
        else
            meet<kScopeSystem>(s, value, row, abandoned);
    }
    __syncthreads();
}

// Blocks of a kernel collective: the same on every rank (they pair through
// their sync words), so a function of the region's size and of the room
// every rank has on its GPU (w->max_blocks, equal on every rank).
inline unsigned paired_blocks(size_t bytes, const gcsh_kwait *w)
{
    size_t per_block = (size_t)kThreads * 16;
    size_t most = w->max_blocks < GCSH_KERN_MAX_BLOCKS ? w->max_blocks : GCSH_KERN_MAX_BLOCKS;
    size_t b = (bytes + per_block - 1) / per_block;
    return (unsigned)(b < 1 || most < 1 ? 1 : b > most ? most : b);
}

Sync make_sync(const gcsh_kcoll_args *a, const gcsh_window_desc *d, const gcsh_kwait *w);

// GCSH_KC_MULTICAST (cuda/mcast.cu): the NVLS two-shot.
cudaError_t mc_collective(const gcsh_kcoll_args *a, const gcsh_window_desc *d,
                          const gcsh_kwait *w, cudaStream_t stream);

// How many blocks of each file's paired kernels one SM of the current
// device holds (the fewest over its kernels; 0 when CUDA cannot say), for
// gcsh_k_paired_room.
unsigned mc_blocks_per_sm();
unsigned ll_blocks_per_sm();
unsigned ll128_blocks_per_sm();

} // namespace gcsh_k

#endif
