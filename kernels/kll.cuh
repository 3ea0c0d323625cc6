// The "ll" protocol's device pieces (core/kll.h), shared by the one-call
// kernel (ll.cu) and the resident kernel of the persistent all-reduce
// (persist.cu): a line's stores and loads, my region's data, the wait for a
// line's flag, and a line reduced over every member's slot.
#ifndef GCSH_KERNELS_KLL_CUH
#define GCSH_KERNELS_KLL_CUH

#include "core/kll.h"
#include "ktraits.cuh"
#include "kwait.cuh"
#include "reducekern.h"

namespace gcsh_k {

constexpr unsigned kLLThreads = 256;

// A call as the kernel sees it (by value).
struct LL {
    char *area[GCSH_KERN_MAX_TEAM]; // every member's LL area, mapped here
    const int *rank_of;             // device memory: each member's rank (hang reports)
    const char *src;                // my region
    char *dst;                      // out, or my region (in place)
    size_t bytes, window_bytes;
    int k, me, slots, op;
    WaitEnd end;
};

// Elements of one line's 8 data bytes, and how many of them line i has.
template <class T> __host__ __device__ constexpr int per_line()
{
    return GCSH_LL_LINE_DATA / sizeof(typename T::S);
}

template <class T> __device__ int elements_in(const LL &a, size_t first)
{
    size_t left = (a.bytes - first) / sizeof(typename T::S);
    return left < (size_t)per_line<T>() ? (int)left : per_line<T>();
}

// The 8 bytes of my region at byte `first` (zeros past its end): one load
// when aligned and whole, else element by element (any offset is exact).
// Loads bypass L1 (__ldcg): a resident kernel reads the same region call
// after call, and L1 is not kept coherent with the writes of other kernels.
template <class T> __device__ uint2 load_data(const LL &a, size_t first)
{
    using S = typename T::S;
    const char *p = a.src + first;
    int have = elements_in<T>(a, first);
    if (have == per_line<T>() && (uintptr_t)p % 8 == 0)
        return __ldcg(reinterpret_cast<const uint2 *>(p));
    S e[per_line<T>()];
    for (int i = 0; i < per_line<T>(); i++)
        e[i] = i < have ? __ldcg(reinterpret_cast<const S *>(p) + i) : T::store(0);
    uint2 w;
    memcpy(&w, e, sizeof w);
    return w;
}

// Waits until the line at p (written by member `member`, whose rank is
// rank_of[member]) holds this call's flag in both halves; gives up as every
// GPU wait does (kwait.cuh), after which this thread waits no more.
__device__ inline uint4 wait_line(const char *p, uint32_t flag, const WaitEnd &end, bool *gave_up,
                                  const int *rank_of, int member)
{
    unsigned long long t0 = globaltimer();
    unsigned ns = 32, gen = end.gen;
    for (unsigned i = 1;; i++) {
        uint4 v = load_line(p);
        if ((v.y == flag && v.w == flag) || *gave_up)
            return v;
        // (lane 0 of each warp alone: every thread of a large call may wait
        // here, and each note is a write over PCIe)
        if (rank_of && (threadIdx.x & 31) == 0 && (i & (kStallPolls - 1)) == 0)
            note_stall(end.ctl, GCSH_STALL_LL, rank_of[member], flag, v.y == flag ? v.w : v.y);
        if (int why = give_up_reason(i, t0, end, &gen)) {
            record_give_up(end.ctl, why, GCSH_CMP_EQ, v.y == flag ? v.w : v.y, flag);
            *gave_up = true;
            return v;
        }
        backoff(i, &ns, 256);
    }
}

// Line i of every member's slot, reduced in team order, into dst.
template <class T>
__device__ void reduce_line(const LL &a, size_t i, uint32_t flag, unsigned set, bool *gave_up)
{
    using S = typename T::S;
    constexpr int per = per_line<T>();
    typename T::A acc[per];
    for (int s = 0; s < a.k; s++) {
        const char *p = a.area[a.me] + gcsh_ll_slot_offset(a.window_bytes, a.slots, set, s) +
                        i * GCSH_LL_LINE_BYTES;
        uint4 v = wait_line(p, flag, a.end, gave_up, a.rank_of, s);
        uint2 w = make_uint2(v.x, v.z);
        S e[per];
        memcpy(e, &w, sizeof w);
        for (int j = 0; j < per; j++)
            acc[j] = s == 0 ? T::load(e[j]) : T::combine(acc[j], T::load(e[j]), a.op);
    }
    if (*gave_up) /* a line that misses a member is no result: dst keeps what it had */
        return;
    size_t first = i * GCSH_LL_LINE_DATA;
    int have = elements_in<T>(a, first);
    S out[per];
    for (int j = 0; j < per; j++)
        out[j] = T::store(acc[j]);
    char *q = a.dst + first;
    if (have == per && (uintptr_t)q % 8 == 0) {
        uint2 w;
        memcpy(&w, out, sizeof w);
        *reinterpret_cast<uint2 *>(q) = w;
        return;
    }
    for (int j = 0; j < have; j++)
        reinterpret_cast<S *>(q)[j] = out[j];
}

// One call after `count` calls, by the threads tid, tid + stride, ...: my
// lines, flagged, into my slot of every member's area, then the lines this
// thread stored reduced over every slot into dst (in place is safe: each
// thread reads its own lines before it writes them).  *gave_up once a wait
// gave up (kwait.cuh).
template <class T>
__device__ void ll_call(const LL &a, unsigned long long count, size_t tid, size_t stride,
                        bool *gave_up)
{
    uint32_t flag = gcsh_ll_flag(count);
    unsigned set = (unsigned)(count & 1);
    size_t lines = gcsh_ll_lines(a.bytes);
    size_t mine = gcsh_ll_slot_offset(a.window_bytes, a.slots, set, a.me);
    for (size_t i = tid; i < lines; i += stride) {
        uint2 d = load_data<T>(a, i * GCSH_LL_LINE_DATA);
        uint4 v = make_uint4(d.x, flag, d.y, flag);
        for (int p = 0; p < a.k; p++)
            store_line(a.area[p] + mine + i * GCSH_LL_LINE_BYTES, v);
    }
    for (size_t i = tid; i < lines; i += stride)
        reduce_line<T>(a, i, flag, set, gave_up);
}

// The end of a call of ll or ll128: the last block to finish advances the
// count (every block read it first).
__device__ inline void count_call(gcsh_ll_header *h, unsigned long long count)
{
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    fence_device();
    unsigned before = atomicAdd(reinterpret_cast<unsigned *>(&h->done), 1u);
    if (before + 1 == gridDim.x) {
        h->done = 0;
        *reinterpret_cast<volatile unsigned long long *>(&h->count) = count + 1;
        fence_device();
    }
}

// A kernel of the ll family (ll.cu, ll128.cu) for one dtype, and its
// element size.  Family<T>::run is the kernel for element traits T.
struct LLKernel {
    void (*run)(LL);
    size_t esize;
};

template <template <class> class Family> LLKernel ll_kernel_of(gcsh_dtype dt)
{
    switch (dt) {
    case GCSH_F32: return {Family<F32>::run, sizeof(float)};
    case GCSH_F16: return {Family<F16>::run, sizeof(__half)};
    case GCSH_BF16: return {Family<BF16>::run, sizeof(__nv_bfloat16)};
    case GCSH_I32: return {Family<Int32<true>>::run, sizeof(unsigned)};
    case GCSH_U32: return {Family<Int32<false>>::run, sizeof(unsigned)};
    default: return {nullptr, 0};
    }
}

// The fewest blocks of `threads` one SM holds of the family's kernels (0
// when CUDA cannot say), for gcsh_k_paired_room.
template <template <class> class Family> unsigned ll_blocks_per_sm_of(unsigned threads)
{
    static const gcsh_dtype all[] = {GCSH_F32, GCSH_F16, GCSH_BF16, GCSH_I32, GCSH_U32};
    unsigned fewest = ~0u;
    for (gcsh_dtype dt : all) {
        int n = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, ll_kernel_of<Family>(dt).run,
                                                          threads, 0) != cudaSuccess)
            return 0;
        fewest = (unsigned)n < fewest ? (unsigned)n : fewest;
    }
    return fewest;
}

// A call's LL (by value) from its arguments, checked: bytes within
// capacity, the team within the slots, a wait control, every member's LL
// area aligned to `align` bytes; cudaErrorInvalidValue otherwise.
inline cudaError_t ll_args_of(const gcsh_kll_args *a, const gcsh_window_desc *d,
                              const gcsh_kwait *w, size_t es, size_t capacity, size_t align,
                              LL *ll)
{
    *ll = LL{};
    ll->bytes = a->n * es;
    if (es == 0 || ll->bytes == 0 || ll->bytes > capacity || d->team_size < 1 ||
        d->team_size > a->slots || a->slots > GCSH_KERN_MAX_TEAM || d->team_rank < 0 ||
        d->team_rank >= d->team_size || !w->ctl)
        return cudaErrorInvalidValue;
    for (int p = 0; p < d->team_size; p++) {
        ll->area[p] = (char *)d->peer[p] + a->ll_off;
        if ((uintptr_t)ll->area[p] % align != 0)
            return cudaErrorInvalidValue;
    }
    ll->rank_of = gcsh_window_team_dev(d);
    char *mine = (char *)d->peer[d->team_rank] + a->offset * es;
    ll->src = a->in ? (const char *)a->in : mine;
    ll->dst = a->out ? (char *)a->out : mine;
    ll->window_bytes = a->window_bytes;
    ll->k = d->team_size;
    ll->me = d->team_rank;
    ll->slots = a->slots;
    ll->op = (int)a->op;
    ll->end = {w->ctl, w->gen, w->bound_ns};
    return cudaSuccess;
}

// A team of one: the sum is my region, and no one reads my flags.
inline cudaError_t ll_alone(const LL &ll, cudaStream_t stream)
{
    return ll.dst == ll.src ? cudaSuccess
                            : cudaMemcpyAsync(ll.dst, ll.src, ll.bytes, cudaMemcpyDeviceToDevice,
                                              stream);
}

// `units` of work (lines) over blocks of `per_block`, at most `most`
// blocks and w->max_blocks (gcsh_kwait says why), at least one.
inline unsigned ll_blocks(size_t units, size_t per_block, size_t most, const gcsh_kwait *w)
{
    size_t blocks = (units + per_block - 1) / per_block;
    most = w->max_blocks < most ? w->max_blocks : most;
    return (unsigned)(blocks > most ? most : blocks < 1 ? 1 : blocks);
}

} // namespace gcsh_k

#endif
