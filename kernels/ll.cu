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
#include "core/kll.h"
#include "ktraits.cuh"
#include "kwait.cuh"
#include "reducekern.h"

namespace gcsh_k {

constexpr unsigned kLLThreads = 256;
constexpr unsigned kLLMaxBlocks = 32; // 64 KiB: 8192 lines, one per thread

// A call as the kernel sees it (by value).
struct LL {
    char *area[GCSH_KERN_MAX_TEAM]; // every member's LL area, mapped here
    const char *src;                // my region
    char *dst;                      // out, or my region (in place)
    size_t bytes, window_bytes;
    int k, me, slots, op;
    WaitEnd end;
};

__device__ inline void store_line(char *p, uint4 v)
{
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x),
                 "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}

__device__ inline uint4 load_line(const char *p)
{
    uint4 v;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
    return v;
}

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
template <class T> __device__ uint2 load_data(const LL &a, size_t first)
{
    using S = typename T::S;
    const char *p = a.src + first;
    int have = elements_in<T>(a, first);
    if (have == per_line<T>() && (uintptr_t)p % 8 == 0)
        return *reinterpret_cast<const uint2 *>(p);
    S e[per_line<T>()];
    for (int i = 0; i < per_line<T>(); i++)
        e[i] = i < have ? reinterpret_cast<const S *>(p)[i] : T::store(0);
    uint2 w;
    memcpy(&w, e, sizeof w);
    return w;
}

// Waits until the line at p holds this call's flag in both halves; gives up
// as every GPU wait does (kwait.cuh), after which this thread waits no more.
__device__ inline uint4 wait_line(const char *p, uint32_t flag, const WaitEnd &end, bool *gave_up)
{
    unsigned long long t0 = globaltimer();
    unsigned ns = 32, gen = end.gen;
    for (unsigned i = 1;; i++) {
        uint4 v = load_line(p);
        if ((v.y == flag && v.w == flag) || *gave_up)
            return v;
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
        uint4 v = wait_line(p, flag, a.end, gave_up);
        uint2 w = make_uint2(v.x, v.z);
        S e[per];
        memcpy(e, &w, sizeof w);
        for (int j = 0; j < per; j++)
            acc[j] = s == 0 ? T::load(e[j]) : T::combine(acc[j], T::load(e[j]), a.op);
    }
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

// The last block to finish advances the count (every block read it first).
__device__ inline void count_call(gcsh_ll_header *h, unsigned long long count)
{
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    __threadfence();
    unsigned before = atomicAdd(reinterpret_cast<unsigned *>(&h->done), 1u);
    if (before + 1 == gridDim.x) {
        h->done = 0;
        *reinterpret_cast<volatile unsigned long long *>(&h->count) = count + 1;
        __threadfence();
    }
}

template <class T> __global__ void __launch_bounds__(kLLThreads) ll_kernel(LL a)
{
    gcsh_ll_header *h = reinterpret_cast<gcsh_ll_header *>(a.area[a.me]);
    unsigned long long count = *reinterpret_cast<volatile unsigned long long *>(&h->count);
    uint32_t flag = gcsh_ll_flag(count);
    unsigned set = (unsigned)(count & 1);
    size_t lines = gcsh_ll_lines(a.bytes);
    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t mine = gcsh_ll_slot_offset(a.window_bytes, a.slots, set, a.me);
    for (size_t i = tid; i < lines; i += stride) {
        uint2 d = load_data<T>(a, i * GCSH_LL_LINE_DATA);
        uint4 v = make_uint4(d.x, flag, d.y, flag);
        for (int p = 0; p < a.k; p++)
            store_line(a.area[p] + mine + i * GCSH_LL_LINE_BYTES, v);
    }
    bool gave_up = false;
    for (size_t i = tid; i < lines; i += stride) // the lines this thread stored: in place is safe
        reduce_line<T>(a, i, flag, set, &gave_up);
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
    ll.src = (const char *)d->peer[d->team_rank] + a->offset * es;
    ll.dst = a->out ? (char *)a->out : (char *)ll.src;
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
