// The "ll128" all-reduce (core/kll.h): ll's protocol (kll.cuh, ll.cu) in
// 128-byte lines of 120 data bytes and a 64-bit flag word, as NCCL's LL128
// protocol carries a whole small all-reduce.  Eight lanes of a warp hold a
// line, 16 bytes each: lanes 0-6 sixteen data bytes, lane 7 the last eight
// and the flag word.  A warp stores four lines with one 16-byte store a
// lane into my slot of every member's LL area (its ll128 part), then
// loads each member's same four lines in my area the same way until every
// line's flag lane holds this call's flag and its data's checksum, reduces
// them in team order (the same bits as one-shot and ll) and stores the
// result.  The line travels whole (a warp's aligned 128-byte store, as
// NCCL's LL128 relies on) or is read again when its checksum says it was
// torn (kll.h says why both), so, as in ll, nothing is fenced and no round
// trip is waited for before the data moves; unlike ll, 15 of every 16
// bytes moved are data.
//
// A warp's lanes keep in step (every decision to wait on, give up or stop
// is the warp's), so a line is never half waited for.  The call count is
// ll's (the LL header), advanced by the last block out (count_call).
#include "kll.cuh"
#include "reducekern.h"

namespace gcsh_k {

constexpr unsigned kLL128Threads = 256;
constexpr unsigned kLL128MaxBlocks = 64; // 256 KiB: 2185 lines, 32 a block at a time
constexpr int kLanesPerLine = GCSH_LL128_LINE_BYTES / 16;
constexpr int kLinesPerWarp = 32 / kLanesPerLine;
constexpr int kFlagLane = kLanesPerLine - 1;
constexpr unsigned kWarp = 0xffffffffu;
static_assert(GCSH_LL128_LINE_DATA == kFlagLane * 16 + 8, "lane 7 carries 8 data bytes and the flag");

// Byte `first` of the region in line `line`, lane j's part of it, and how
// many of the lane's 16 bytes are data.
__device__ inline size_t chunk_first(size_t line, int j)
{
    return line * GCSH_LL128_LINE_DATA + (size_t)j * 16;
}

__device__ inline int chunk_bytes(int j)
{
    return j == kFlagLane ? 8 : 16;
}

// Lane j's data of my region from byte first (zeros past the region's
// end): 8-byte loads when aligned and whole (a line is 120 bytes, so every
// other line's lanes are 8- and not 16-byte aligned), else element by
// element (any offset is exact).  Loads bypass L1, as ll's do.
template <class T> __device__ uint4 load_chunk(const LL &a, size_t first, int cb)
{
    using S = typename T::S;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (first >= a.bytes)
        return v;
    size_t left = a.bytes - first;
    const char *p = a.src + first;
    if (left >= (size_t)cb && (uintptr_t)p % 8 == 0) {
        uint2 lo = __ldcg(reinterpret_cast<const uint2 *>(p));
        uint2 hi = cb == 16 ? __ldcg(reinterpret_cast<const uint2 *>(p + 8)) : make_uint2(0, 0);
        return make_uint4(lo.x, lo.y, hi.x, hi.y);
    }
    constexpr int per = 16 / sizeof(S);
    int have = (int)((left < (size_t)cb ? left : (size_t)cb) / sizeof(S));
    S e[per];
    for (int i = 0; i < per; i++)
        e[i] = i < have ? __ldcg(reinterpret_cast<const S *>(p) + i) : T::store(0);
    memcpy(&v, e, sizeof v);
    return v;
}

// Lane j's part of the result, into dst from byte first: the data bytes
// of the region only.
template <class T> __device__ void store_chunk(const LL &a, size_t first, int cb, uint4 v)
{
    using S = typename T::S;
    if (first >= a.bytes)
        return;
    size_t left = a.bytes - first;
    char *q = a.dst + first;
    if (left >= (size_t)cb && (uintptr_t)q % 8 == 0) {
        *reinterpret_cast<uint2 *>(q) = make_uint2(v.x, v.y);
        if (cb == 16)
            *reinterpret_cast<uint2 *>(q + 8) = make_uint2(v.z, v.w);
        return;
    }
    constexpr int per = 16 / sizeof(S);
    int have = (int)((left < (size_t)cb ? left : (size_t)cb) / sizeof(S));
    S e[per];
    memcpy(e, &v, sizeof v);
    for (int i = 0; i < have; i++)
        reinterpret_cast<S *>(q)[i] = e[i];
}

// This lane's part of its line's checksum (core/kll.h): its data words
// (lane 7: the first two of its four), then the parts of the line's eight
// lanes added (every lane of the line gets the sum).
__device__ inline uint32_t line_checksum(uint4 v, int j)
{
    uint32_t w[4] = {v.x, v.y, v.z, v.w};
    uint32_t sum = gcsh_ll128_words(w, (unsigned)j * 4, j == kFlagLane ? 2 : 4);
    for (int d = 1; d < kLanesPerLine; d *= 2)
        sum += __shfl_xor_sync(kWarp, sum, d);
    return sum;
}

// The warp loads its four lines at p (this lane's 16 bytes; `active`:
// this lane's line is one of the call's) until every active line's flag
// lane holds `flag` and the checksum of the data loaded with it: a line
// seen torn (its flag before its data) is loaded again.  Gives up as every
// GPU wait does (kwait.cuh), the warp's lane 0 deciding for all, after
// which the warp waits no more.
__device__ inline uint4 wait_lines(const char *p, bool active, uint32_t flag, const WaitEnd &end,
                                   bool *gave_up, const int *rank_of, int member)
{
    int lane = threadIdx.x % 32, j = lane % kLanesPerLine;
    unsigned long long t0 = globaltimer();
    unsigned ns = 32, gen = end.gen;
    for (unsigned i = 1;; i++) {
        uint4 v = active ? load_line(p) : make_uint4(0, 0, 0, 0);
        uint32_t sum = line_checksum(v, j);
        bool ok = !active || j != kFlagLane || (v.z == flag && v.w == sum);
        if (__all_sync(kWarp, ok) || *gave_up)
            return v;
        // the first lane whose line is not whole says what it saw
        unsigned missing = __ballot_sync(kWarp, !ok);
        unsigned seen = __shfl_sync(kWarp, v.z, __ffs(missing) - 1);
        if (rank_of && lane == 0 && (i & (kStallPolls - 1)) == 0)
            note_stall(end.ctl, GCSH_STALL_LL128, rank_of[member], flag, seen);
        int why = lane == 0 ? give_up_reason(i, t0, end, &gen) : 0;
        why = __shfl_sync(kWarp, why, 0);
        if (why) {
            if (lane == 0)
                record_give_up(end.ctl, why, GCSH_CMP_EQ, seen, flag);
            *gave_up = true;
            return v;
        }
        backoff(i, &ns, 256);
    }
}

template <class T> __global__ void __launch_bounds__(kLL128Threads) ll128_kernel(LL a)
{
    gcsh_ll_header *h = reinterpret_cast<gcsh_ll_header *>(a.area[a.me]);
    unsigned long long count = *reinterpret_cast<volatile unsigned long long *>(&h->count);
    uint32_t flag = gcsh_ll_flag(count);
    unsigned set = (unsigned)(count & 1);
    size_t lines = gcsh_ll128_lines(a.bytes);
    int lane = threadIdx.x % 32, j = lane % kLanesPerLine, cb = chunk_bytes(j);
    size_t warp = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32;
    size_t warps = (size_t)gridDim.x * blockDim.x / 32;
    size_t mine = gcsh_ll128_slot_offset(a.window_bytes, a.slots, set, a.me);
    size_t lane_at = (size_t)(lane / kLanesPerLine) * GCSH_LL128_LINE_BYTES + (size_t)j * 16;

    // my lines, flagged, into my slot of every member's area (the whole
    // warp in every round: the checksum is summed across lanes)
    for (size_t base = warp * kLinesPerWarp; base < lines; base += warps * kLinesPerWarp) {
        size_t line = base + lane / kLanesPerLine;
        bool active = line < lines;
        uint4 v = active ? load_chunk<T>(a, chunk_first(line, j), cb) : make_uint4(0, 0, 0, 0);
        uint32_t sum = line_checksum(v, j);
        if (j == kFlagLane)
            v.z = flag, v.w = sum;
        size_t at = mine + base * GCSH_LL128_LINE_BYTES + lane_at;
        for (int p = 0; active && p < a.k; p++)
            store_line(a.area[p] + at, v);
    }

    // the same lines of every member's slot here, reduced in team order
    bool gave_up = false;
    for (size_t base = warp * kLinesPerWarp; base < lines; base += warps * kLinesPerWarp) {
        size_t line = base + lane / kLanesPerLine;
        bool active = line < lines;
        typename T::A acc[T::VE], e[T::VE];
        for (int s = 0; s < a.k; s++) {
            const char *p = a.area[a.me] +
                            gcsh_ll128_slot_offset(a.window_bytes, a.slots, set, s) +
                            base * GCSH_LL128_LINE_BYTES + lane_at;
            uint4 v = wait_lines(p, active, flag, a.end, &gave_up, a.rank_of, s);
            T::unpack(v, e);
            for (int i = 0; i < T::VE; i++)
                acc[i] = s == 0 ? e[i] : T::combine(acc[i], e[i], a.op);
        }
        // a line that misses a member is no result: dst keeps what it had
        if (active && !gave_up)
            store_chunk<T>(a, chunk_first(line, j), cb, T::pack(acc));
    }
    count_call(h, count);
}

template <class T> struct LL128Family {
    static constexpr void (*run)(LL) = ll128_kernel<T>;
};

unsigned ll128_blocks_per_sm()
{
    return ll_blocks_per_sm_of<LL128Family>(kLL128Threads);
}

} // namespace gcsh_k

using namespace gcsh_k;

extern "C" cudaError_t gcsh_k_ll128_allreduce(const gcsh_kll_args *a, const gcsh_window_desc *d,
                                              const gcsh_kwait *w, cudaStream_t stream)
{
    LLKernel kernel = ll_kernel_of<LL128Family>(a->dt);
    LL ll; // (every line of every area 128-byte aligned: a line must be one)
    cudaError_t e = ll_args_of(a, d, w, kernel.esize, gcsh_ll128_capacity(a->window_bytes),
                               GCSH_LL128_LINE_BYTES, &ll);
    if (e != cudaSuccess)
        return e;
    if (ll.k == 1)
        return ll_alone(ll, stream);
    unsigned blocks = ll_blocks(gcsh_ll128_lines(ll.bytes), kLL128Threads / 32 * kLinesPerWarp,
                                kLL128MaxBlocks, w);
    (void)cudaGetLastError(); // report this launch only
    kernel.run<<<blocks, kLL128Threads, 0, stream>>>(ll);
    return cudaGetLastError();
}
