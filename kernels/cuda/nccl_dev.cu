// kernel.allreduce{algo="nccl_dev"}: an all-reduce written with NCCL 2.28's
// device API, meant to be read.  The other algorithms reach peers through
// gcsh's own peer table and barriers (reduce.cu, kbarrier.cuh); this one
// asks NCCL for both, as a user kernel would.
//
// What it takes from the device API, and what each piece is for:
//   ncclDevComm      the window's device communicator, made with the window
//                    (cuda_win_nccl.c, stage "devcomm"): the LSA team (the
//                    ranks whose memory this GPU loads and stores directly:
//                    lsaRank, lsaSize) and GCSH_NCCL_DEV_BLOCKS LSA barriers;
//   ncclLsaBarrierSession
//                    one of those barriers, used by one CTA.  Block b of
//                    every rank uses barrier b (index = blockIdx.x, as
//                    NCCL's documentation advises), so the blocks that read
//                    the same elements meet each other;
//   ncclGetLsaPointer(win, offset, peer)
//                    where peer's slice of the window is, mapped into this
//                    GPU's address space: a plain pointer to load from.
//
// The algorithm is one-shot, the plan kernel.plan(w, {algo="oneshot"})
// shows (core/kplan.c):
//   1. barrier: every member's input is in its slice;
//   2. every rank loads the region from every slice and reduces it, in team
//      order (so every rank computes the same bits, as kreduce.h requires);
//   3. barrier: nobody reads my slice any more;
//   4. the result goes into my slice (or into out, when one is given).
// The result waits in registers across step 3 (peers may still be reading
// my slice), so the region goes in rounds of what the grid holds in
// registers, steps 2-4 once per round.
//
// NCCL's barriers wait without a bound: unlike gcsh's own (kwait.cuh), a
// rank that never arrives holds the others' GPUs until the job ends.  The
// binding's collective check runs first, so every member launches this
// kernel or none does.  multimem (NVLS) is never asked for: the sessions are
// made with multimem = false, and the device communicator without
// lsaMultimem (window.cu).
#include <cuda/atomic>
// NCCL 2.28's device headers have unused parameters in their GIN entry
// points; the warning is theirs, so it is silenced for their headers only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <nccl_device.h>
#pragma GCC diagnostic pop

#include "cuda/cudakern.h"
#include "ktraits.cuh"
#include "reducekern.h"

namespace {

using gcsh_k::BF16;
using gcsh_k::F16;
using gcsh_k::F32;
using gcsh_k::Int32;

constexpr unsigned kThreads = 512;
// Each thread holds this many 16-byte vectors per round: more loads in
// flight per barrier, fewer barriers.
constexpr unsigned kVecsPerRound = 4;

// The region as the kernel sees it.  Every slice of an NCCL window has the
// same alignment (granule-aligned bases), so one split into 16-byte vectors
// (kreduce.h: scalar head, vectors, scalar tail) holds for every member.
struct Region {
    ncclWindow_t win;
    size_t first;          // byte offset of the region's first element in every slice
    gcsh_kern_split split; // in elements
    char *out;             // the caller's out tensor, or nullptr: in place
    bool out_vec;          // out has the slices' alignment modulo 16
    int op;
    unsigned rounds;       // rounds of steps 2-4
};

// Byte offset, from the region's start, of vector v and of element e.
template <class T> __device__ size_t vec_at(const Region &r, size_t v)
{
    return r.split.head * sizeof(typename T::S) + v * 16;
}

template <class T> __device__ size_t elem_at(size_t e)
{
    return e * sizeof(typename T::S);
}

// Scalar i (0 .. head + tail) of the split -> its element index.
template <class T> __device__ size_t scalar_elem(const Region &r, size_t i)
{
    return i < r.split.head ? i : r.split.head + r.split.nvec * T::VE + (i - r.split.head);
}

// Step 2 for one vector: the same 16 bytes of every member's slice, found
// with ncclGetLsaPointer.  Every load is issued before any is used: NVLink
// latency is microseconds, and k loads in flight cost about one.
template <class T>
__device__ void reduce_vec(const Region &r, int k, size_t byte, typename T::A *acc)
{
    uint4 in[GCSH_KERN_MAX_TEAM];
#pragma unroll
    for (int p = 0; p < GCSH_KERN_MAX_TEAM; p++)
        if (p < k)
            in[p] = *static_cast<const uint4 *>(ncclGetLsaPointer(r.win, r.first + byte, p));
    T::unpack(in[0], acc);
#pragma unroll
    for (int p = 1; p < GCSH_KERN_MAX_TEAM; p++) {
        if (p >= k)
            break;
        typename T::A x[T::VE];
        T::unpack(in[p], x);
#pragma unroll
        for (int e = 0; e < T::VE; e++)
            acc[e] = T::combine(acc[e], x[e], r.op);
    }
}

template <class T> __device__ typename T::A reduce_elem(const Region &r, int k, size_t byte)
{
    using S = typename T::S;
    auto at = [&](int p) { return *static_cast<const S *>(ncclGetLsaPointer(r.win, r.first + byte, p)); };
    typename T::A acc = T::load(at(0));
    for (int p = 1; p < k; p++)
        acc = T::combine(acc, T::load(at(p)), r.op);
    return acc;
}

// Where results go: out, or my own slice (ncclGetLocalPointer), whose
// alignment is the sources'.
__device__ char *destination(const Region &r)
{
    return r.out ? r.out : static_cast<char *>(ncclGetLocalPointer(r.win, r.first));
}

template <class T>
__device__ void store_vec(const Region &r, char *dst, size_t byte, const typename T::A *acc)
{
    if (!r.out || r.out_vec) {
        *reinterpret_cast<uint4 *>(dst + byte) = T::pack(acc);
        return;
    }
    for (int e = 0; e < T::VE; e++) // out at another alignment: element by element
        reinterpret_cast<typename T::S *>(dst + byte)[e] = T::store(acc[e]);
}

template <class T> __device__ void store_elem(char *dst, size_t byte, typename T::A acc)
{
    *reinterpret_cast<typename T::S *>(dst + byte) = T::store(acc);
}

// The kernel: steps 1-4, the barrier of each step a sync of this CTA's
// session.  With out or in place, the same barriers: ranks may differ in
// whether they pass out (kernel.allreduce allows it), and every rank's
// barriers must pair up with every other's.  Memory orders, which NCCL
// leaves to the caller:
//   - step 1 is acquire and release (acq_rel).  Release: whatever this rank
//     wrote before, into its own slice or into a peer's (w:peer(r), a
//     two-shot's stores), is visible to a peer once it sees this rank
//     arrive.  Acquire: the loads of step 2 see what every peer published.
//     (NCCL's example uses relaxed here: its inputs come from the host, and
//     stream order publishes them; a gcsh window's may come from a peer's
//     kernel still finishing.)
//   - step 3 is acq_rel too: release orders my loads of a round before my
//     arrival, so a peer that passed the barrier knows I have read its
//     slice; acquire orders my stores into my slice after every peer's
//     arrival.  After the last round nothing of a peer's slice is read:
//     the next kernel on the stream starts after this one.
template <class T>
__global__ void __launch_bounds__(kThreads) allreduce_kernel(ncclDevComm comm, Region r)
{
    ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), comm, ncclTeamTagLsa(), blockIdx.x);
    const int k = comm.lsaSize;
    char *dst = destination(r);
    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t threads = (size_t)gridDim.x * blockDim.x;
    bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel); // 1. every input is ready
    for (unsigned round = 0; round < r.rounds; round++) {
        // 2. this round's vectors, and in round 0 the scalar head and tail
        typename T::A acc[kVecsPerRound][T::VE], sacc = {};
        size_t v0 = (size_t)round * threads * kVecsPerRound + tid;
#pragma unroll
        for (unsigned j = 0; j < kVecsPerRound; j++)
            if (v0 + j * threads < r.split.nvec)
                reduce_vec<T>(r, k, vec_at<T>(r, v0 + j * threads), acc[j]);
        bool scalar = round == 0 && tid < r.split.head + r.split.tail;
        size_t sbyte = scalar ? elem_at<T>(scalar_elem<T>(r, tid)) : 0;
        if (scalar)
            sacc = reduce_elem<T>(r, k, sbyte);
        // 3. every peer has read this round's part of my slice
        bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
        // 4. so it may be overwritten with the result (or out written)
#pragma unroll
        for (unsigned j = 0; j < kVecsPerRound; j++)
            if (v0 + j * threads < r.split.nvec)
                store_vec<T>(r, dst, vec_at<T>(r, v0 + j * threads), acc[j]);
        if (scalar)
            store_elem<T>(dst, sbyte, sacc);
    }
}

using Kernel = void (*)(ncclDevComm, Region);

Kernel kernel_for(gcsh_dtype dt, size_t *esize)
{
    switch (dt) {
    case GCSH_F32: *esize = 4; return allreduce_kernel<F32>;
    case GCSH_F16: *esize = 2; return allreduce_kernel<F16>;
    case GCSH_BF16: *esize = 2; return allreduce_kernel<BF16>;
    case GCSH_I32: *esize = 4; return allreduce_kernel<Int32<true>>;
    case GCSH_U32: *esize = 4; return allreduce_kernel<Int32<false>>;
    default: return nullptr;
    }
}

size_t ceil_div(size_t a, size_t b)
{
    return (a + b - 1) / b;
}

} // namespace

extern "C" cudaError_t gcsh_k_nccl_dev_allreduce(const void *dev_comm, ncclWindow_t win,
                                                 const void *mine, const gcsh_kdev_args *a,
                                                 cudaStream_t stream)
{
    const ncclDevComm *dc = static_cast<const ncclDevComm *>(dev_comm);
    size_t es = 0;
    Kernel kernel = kernel_for(a->dt, &es);
    if (!dc || !win || !mine || !kernel || a->n == 0 || dc->lsaSize < 1 ||
        dc->lsaSize > GCSH_KERN_MAX_TEAM || dc->lsaBarrier.nBarriers < (int)GCSH_NCCL_DEV_BLOCKS ||
        (uintptr_t)mine % es != 0 || (a->out && (uintptr_t)a->out % es != 0))
        return cudaErrorInvalidValue;
    Region r = {};
    r.win = win;
    r.first = a->offset * es;
    r.split = gcsh_kern_split_range((uintptr_t)mine, a->n, es, 1);
    r.out = static_cast<char *>(a->out);
    r.out_vec = a->out && (uintptr_t)a->out % 16 == (uintptr_t)mine % 16;
    r.op = (int)a->op;
    // The same blocks on every rank (they pair through their barriers): a
    // function of n alone, which the collective check made equal.
    size_t per_block = (size_t)kThreads * kVecsPerRound;
    size_t blocks = ceil_div(r.split.nvec, per_block);
    blocks = blocks < 1 ? 1 : blocks > GCSH_NCCL_DEV_BLOCKS ? GCSH_NCCL_DEV_BLOCKS : blocks;
    size_t rounds = ceil_div(r.split.nvec, blocks * per_block);
    r.rounds = (unsigned)(rounds < 1 ? 1 : rounds);
    (void)cudaGetLastError(); // report this launch only (see window.cu)
    kernel<<<(unsigned)blocks, kThreads, 0, stream>>>(*dc, r);
    return cudaGetLastError();
}
