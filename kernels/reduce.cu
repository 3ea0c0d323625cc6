// Reduce kernels over peer pointer tables: the local job (k sources into m
// destinations) and the kernel collectives (one-shot, two-shot, reduce to a
// root, reduce-scatter, all-gather, broadcast), synchronised on the window's
// sync words (kbarrier.cuh).
//
// Elements go in 16-byte vectors when every pointer of a job has the same
// address modulo 16 (window slices all do: they are granule aligned; an
// out tensor may not), with scalar heads and tails so that every length and
// every offset is exact.  Accumulation follows kreduce.h (f32 for f32/f16/bf16,
// wrapping 32-bit integers), in source order, so results match the host's
// C loops bit for bit.
#include "kbarrier.cuh"
#include "ktraits.cuh"
#include "core/kplan.h"

namespace gcsh_k {

// ---- jobs -------------------------------------------------------------------------

// A job as the kernels see it (by value: no dependent load for the table).
// Element e of source s is at src[s] + e * sizeof(S).  Vectors cover
// elements head .. head + nvec * VE, scalars the head and the tail.  A
// fenced launch runs it only where `active` (a member idle at a step still
// takes part in the step's barriers).
struct Job {
    char *src[GCSH_KERN_MAX_SRC];
    char *dst[GCSH_KERN_MAX_SRC];
    int k, m, op, active;
    int dst_vec; // every destination has the sources' address modulo 16
    size_t head, nvec, tail;
};

template <class T> __device__ void reduce_vec(const Job &j, size_t v, typename T::A *acc)
{
    size_t byte = j.head * sizeof(typename T::S) + v * 16;
    uint4 in[GCSH_KERN_MAX_SRC];
    // every load issued before any is used: NVLink latency hides behind the others
#pragma unroll
    for (int s = 0; s < GCSH_KERN_MAX_SRC; s++)
        if (s < j.k)
            in[s] = *reinterpret_cast<const uint4 *>(j.src[s] + byte);
    T::unpack(in[0], acc);
#pragma unroll
    for (int s = 1; s < GCSH_KERN_MAX_SRC; s++) {
        if (s >= j.k)
            break;
        typename T::A x[T::VE];
        T::unpack(in[s], x);
#pragma unroll
        for (int e = 0; e < T::VE; e++)
            acc[e] = T::combine(acc[e], x[e], j.op);
    }
}

// Destinations aligned like the sources take one 16-byte store; the others
// (an out tensor at another alignment) take the vector's elements one by one.
template <class T> __device__ void store_vec(const Job &j, size_t v, const typename T::A *acc)
{
    using S = typename T::S;
    size_t byte = j.head * sizeof(S) + v * 16;
    if (j.dst_vec) {
        uint4 out = T::pack(acc);
        for (int d = 0; d < j.m; d++)
            *reinterpret_cast<uint4 *>(j.dst[d] + byte) = out;
        return;
    }
    for (int d = 0; d < j.m; d++)
        for (int e = 0; e < T::VE; e++)
            reinterpret_cast<S *>(j.dst[d] + byte)[e] = T::store(acc[e]);
}

// Scalar number i (0 .. head + tail) -> element index.
__device__ inline size_t scalar_index(const Job &j, size_t i, int ve)
{
    return i < j.head ? i : j.head + j.nvec * (size_t)ve + (i - j.head);
}

template <class T> __device__ typename T::A reduce_scalar(const Job &j, size_t e)
{
    using S = typename T::S;
    typename T::A acc = T::load(reinterpret_cast<const S *>(j.src[0])[e]);
    for (int s = 1; s < j.k; s++)
        acc = T::combine(acc, T::load(reinterpret_cast<const S *>(j.src[s])[e]), j.op);
    return acc;
}

template <class T> __device__ void store_scalar(const Job &j, size_t e, typename T::A acc)
{
    using S = typename T::S;
    S x = T::store(acc);
    for (int d = 0; d < j.m; d++)
        reinterpret_cast<S *>(j.dst[d])[e] = x;
}

template <class T> __device__ void run_job(const Job &j)
{
    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t v = tid; v < j.nvec; v += stride) {
        typename T::A acc[T::VE];
        reduce_vec<T>(j, v, acc);
        store_vec<T>(j, v, acc);
    }
    for (size_t i = tid; i < j.head + j.tail; i += stride) {
        size_t e = scalar_index(j, i, T::VE);
        store_scalar<T>(j, e, reduce_scalar<T>(j, e));
    }
}

template <class T> __global__ void __launch_bounds__(kThreads) job_kernel(Job j)
{
    run_job<T>(j);
}

// One move step of a plan (kplan.h) with the barriers around it: `pre`
// (the plan's barrier before the move, unless the previous launch ran it)
// and `post` (the one after).  Blocks meet their peers' blocks of the same
// index; the launch boundary covers the rest: a launch starts after every
// block of the previous one passed its last barrier, by which time every
// peer's block had passed it too.
template <class T>
__global__ void __maxnreg__(kPairedMaxRegs) fenced_kernel(Job j, Sync s, int pre, int post)
{
    __shared__ int abandoned;
    if (threadIdx.x == 0)
        abandoned = 0;
    const unsigned long long first = row_first(s);
    if (pre)
        barrier(s, first, 0, &abandoned);
    if (j.active && !abandoned) /* a move after a barrier given up would write a result */
        run_job<T>(j);            /* that is none: the window keeps what it had */
    if (post)
        barrier(s, first, pre, &abandoned);
    row_passed(s, first, pre + post);
}

// One-shot: every rank reads every slice.  In rounds of one vector per
// thread, held in registers across a barrier before it is stored: so the
// store may go to my own slice (in place), which peers read until they have
// passed that round's barrier.  Block b handles the same elements on every
// rank, so its barrier with the peers' block b is the one that matters.
template <class T> __global__ void __maxnreg__(kPairedMaxRegs) oneshot_kernel(Job j, Sync s,
                                                                             unsigned rounds)
{
    __shared__ int abandoned;
    if (threadIdx.x == 0)
        abandoned = 0;
    const unsigned long long first = row_first(s);
    barrier(s, first, 0, &abandoned);
    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (unsigned r = 0; r < rounds; r++) {
        size_t v = r * stride + tid;
        bool vec = v < j.nvec && !abandoned, scalar = r == 0 && tid < j.head + j.tail && !abandoned;
        typename T::A acc[T::VE], sacc = {};
        if (vec)
            reduce_vec<T>(j, v, acc);
        size_t e = scalar ? scalar_index(j, tid, T::VE) : 0;
        if (scalar)
            sacc = reduce_scalar<T>(j, e);
        barrier(s, first, 1 + r, &abandoned);
        vec = vec && !abandoned; /* peers may still read what this round would overwrite */
        scalar = scalar && !abandoned;
        if (vec)
            store_vec<T>(j, v, acc);
        if (scalar)
            store_scalar<T>(j, e, sacc);
    }
    row_passed(s, first, 1 + rounds);
}

// ---- dispatch: one table of dtypes, every kernel instantiated per trait ----------

template <class T> struct Kernels {
    static constexpr void (*job)(Job) = job_kernel<T>;
    static constexpr void (*fenced)(Job, Sync, int, int) = fenced_kernel<T>;
    static constexpr void (*oneshot)(Job, Sync, unsigned) = oneshot_kernel<T>;
};

struct KernelSet {
    void (*job)(Job);
    void (*fenced)(Job, Sync, int, int);
    void (*oneshot)(Job, Sync, unsigned);
    size_t esize;
};

template <class T> constexpr KernelSet set_of()
{
    return {Kernels<T>::job, Kernels<T>::fenced, Kernels<T>::oneshot, sizeof(typename T::S)};
}

const KernelSet *kernels_for(gcsh_dtype dt)
{
    static const KernelSet f32 = set_of<F32>(), f16 = set_of<F16>(), bf16 = set_of<BF16>(),
                           i32 = set_of<Int32<true>>(), u32 = set_of<Int32<false>>();
    switch (dt) {
    case GCSH_F32: return &f32;
    case GCSH_F16: return &f16;
    case GCSH_BF16: return &bf16;
    case GCSH_I32: return &i32;
    case GCSH_U32: return &u32;
    default: return nullptr;
    }
}

// ---- building jobs on the host -------------------------------------------------------

// Fills the split of j over n elements from its sources alone: vectors when
// every source has the same address modulo 16 (window slices always do), so
// the split, and what each block does, is the same on every rank whatever
// local out a rank passes.  Destinations aligned otherwise get scalar stores.
void split_job(Job &j, size_t n, size_t esize)
{
    uintptr_t mod = (uintptr_t)j.src[0] % 16;
    bool same = true;
    for (int s = 0; s < j.k; s++)
        same &= (uintptr_t)j.src[s] % 16 == mod;
    j.dst_vec = 1;
    for (int d = 0; d < j.m; d++)
        j.dst_vec &= (uintptr_t)j.dst[d] % 16 == mod;
    gcsh_kern_split sp = gcsh_kern_split_range((uintptr_t)j.src[0], n, esize, same);
    j.head = sp.head;
    j.nvec = sp.nvec;
    j.tail = sp.tail;
    j.active = 1;
}

bool job_ok(const Job &j)
{
    if (j.k < 1 || j.k > GCSH_KERN_MAX_SRC || j.m < 1 || j.m > GCSH_KERN_MAX_SRC)
        return false;
    for (int s = 0; s < j.k; s++)
        if (!j.src[s])
            return false;
    for (int d = 0; d < j.m; d++)
        if (!j.dst[d])
            return false;
    return true;
}

unsigned job_blocks(size_t units)
{
    size_t b = (units + kThreads - 1) / kThreads;
    return (unsigned)(b < 1 ? 1 : b > 1024 ? 1024 : b);
}

Sync make_sync(const gcsh_kcoll_args *a, const gcsh_window_desc *d, const gcsh_kwait *w)
{
    Sync s = {};
    s.k = d->team_size;
    s.me = d->team_rank;
    for (int p = 0; p < s.k; p++)
        s.area[p] = (unsigned long long *)((char *)d->peer[p] + a->sync_off);
    s.rank_of = gcsh_window_team_dev(d);
    s.epoch = s.area[s.me] + GCSH_KERN_SYNC_WORDS(GCSH_KERN_MAX_BLOCKS);
    s.one_gpu = w->one_gpu;
    s.end = {w->ctl, w->gen, w->bound_ns};
    return s;
}

cudaError_t launched()
{
    return cudaGetLastError();
}

// ---- executing the plan ----------------------------------------------------------------

// Where a place of the plan is on this rank: a slice or a member's scratch
// area through the peer table, or the caller's out.  The local scratch
// (one-shot in place) never gets here: one_shot keeps it in registers.
char *place_at(const gcsh_kplace &pl, const gcsh_kcoll_args *a, const gcsh_window_desc *d,
               size_t es)
{
    if (pl.peer >= 0 && pl.peer < d->team_size && pl.scratch)
        return (char *)d->peer[pl.peer] + a->scratch_off + pl.first * es;
    if (pl.peer >= 0 && pl.peer < d->team_size)
        return (char *)d->peer[pl.peer] + (a->offset + pl.first) * es;
    if (pl.peer == GCSH_KPLAN_OUT && a->out)
        return (char *)a->out + pl.first * es;
    return nullptr;
}

bool job_of_move(const gcsh_kmove &mv, const gcsh_kcoll_args *a, const gcsh_window_desc *d,
                 size_t es, Job &j)
{
    j = Job{};
    j.k = mv.k;
    j.m = mv.m;
    j.op = (int)a->op;
    for (int s = 0; s < mv.k && s < GCSH_KERN_MAX_SRC; s++)
        j.src[s] = place_at(mv.src[s], a, d, es);
    for (int q = 0; q < mv.m && q < GCSH_KERN_MAX_SRC; q++)
        j.dst[q] = place_at(mv.dst[q], a, d, es);
    if (!job_ok(j))
        return false;
    split_job(j, mv.count, es);
    return true;
}

// A plan, one launch per move step: a move between two barriers is one
// fenced launch that runs both; one with no barrier next to it (the copy
// into out) is a plain job, skipped where this rank has nothing to do.
// Every rank makes the same fenced launches with the same blocks, so the
// barriers pair up; each block's epoch word counts its row's (kreduce.h),
// and *a->epoch, the binding's, all of them.
cudaError_t run_plan(const gcsh_kcoll_args *a, const gcsh_window_desc *d, const gcsh_kwait *w,
                     const KernelSet *ks, cudaStream_t stream)
{
    gcsh_kstep steps[GCSH_KPLAN_MAX_STEPS];
    int ns = gcsh_kplan_steps(&a->plan, steps), me = d->team_rank;
    unsigned blocks = paired_blocks(a->plan.n * ks->esize, w);
    int owed = 0; // a barrier of the plan not run yet
    for (int i = 0; i < ns; i++) {
        if (steps[i].kind == GCSH_KS_BARRIER) {
            if (owed) { // two barriers in a row: the first alone
                ks->fenced<<<blocks, kThreads, 0, stream>>>(Job{}, make_sync(a, d, w), 1, 0);
                *a->epoch += 1;
            }
            owed = 1;
            continue;
        }
        gcsh_kmove mv;
        int active = gcsh_kplan_move(&a->plan, &steps[i], me, a->out != nullptr, &mv);
        int post = i + 1 < ns && steps[i + 1].kind == GCSH_KS_BARRIER;
        Job j = {};
        if (active && mv.k == 0) { // a scratch area zeroed (kplan.h), then the barrier
            char *at = place_at(mv.dst[0], a, d, ks->esize);
            cudaError_t e = at ? cudaMemsetAsync(at, 0, mv.count * ks->esize, stream)
                               : cudaErrorInvalidValue;
            if (e != cudaSuccess)
                return e;
            active = 0;
        }
        if (active && !job_of_move(mv, a, d, ks->esize, j))
            return cudaErrorInvalidValue;
        j.active = active;
        if (owed || post) {
            ks->fenced<<<blocks, kThreads, 0, stream>>>(j, make_sync(a, d, w), owed, post);
            *a->epoch += owed + post;
            i += post; // that barrier ran
            owed = 0;
        } else if (active) {
            ks->job<<<job_blocks(j.nvec + j.head + j.tail), kThreads, 0, stream>>>(j);
        }
        cudaError_t e = launched();
        if (e != cudaSuccess)
            return e;
    }
    if (owed) {
        ks->fenced<<<blocks, kThreads, 0, stream>>>(Job{}, make_sync(a, d, w), 1, 0);
        *a->epoch += 1;
    }
    return launched();
}

// One-shot all-reduce: the plan's reduce (into out, or into the scratch)
// and, in place, its store of the scratch into my slice after the barrier.
// The scratch is registers: one_shot holds each round's vector across that
// round's barrier, so the store goes straight to my slice.
cudaError_t one_shot(const gcsh_kcoll_args *a, const gcsh_window_desc *d, const gcsh_kwait *w,
                     const KernelSet *ks, cudaStream_t stream)
{
    gcsh_kstep steps[GCSH_KPLAN_MAX_STEPS];
    int ns = gcsh_kplan_steps(&a->plan, steps), me = d->team_rank, has_out = a->out != nullptr;
    gcsh_kmove reduce = {}, store = {};
    for (int i = 0; i < ns; i++) {
        if (steps[i].phase == GCSH_KP_REDUCE)
            gcsh_kplan_move(&a->plan, &steps[i], me, has_out, &reduce);
        else if (steps[i].phase == GCSH_KP_STORE)
            gcsh_kplan_move(&a->plan, &steps[i], me, has_out, &store);
    }
    if (!has_out)
        reduce.dst[0] = store.dst[0];
    Job j;
    if (!job_of_move(reduce, a, d, ks->esize, j))
        return cudaErrorInvalidValue;
    unsigned blocks = paired_blocks(a->plan.n * ks->esize, w);
    size_t per_round = (size_t)blocks * kThreads;
    if (j.head + j.tail > per_round) // slices share alignment: never
        return cudaErrorInvalidValue;
    unsigned rounds = (unsigned)((j.nvec + per_round - 1) / per_round);
    rounds = rounds < 1 ? 1 : rounds;
    ks->oneshot<<<blocks, kThreads, 0, stream>>>(j, make_sync(a, d, w), rounds);
    *a->epoch += 1 + rounds;
    return launched();
}

// kernel.alltoallv: team size fenced launches, the first with the "ready"
// barrier before its copy, the last with the "done" barrier after; launch
// s copies the block of member (me + s) % k (rank pairs spread over the
// links), or nothing where that block is empty.  Every member makes the
// same launches with the same blocks (from a->largest, equal on every
// member), so the barriers pair up as a plan's do.
cudaError_t alltoallv(const gcsh_kv_args *a, const gcsh_window_desc *d, const gcsh_kwait *w,
                      const KernelSet *ks, cudaStream_t stream)
{
    gcsh_kcoll_args sync_of = {};
    sync_of.sync_off = a->sync_off;
    const Sync sync = make_sync(&sync_of, d, w);
    unsigned blocks = paired_blocks(a->largest * ks->esize, w);
    int k = d->team_size;
    for (int s = 0; s < k; s++) {
        int p = (d->team_rank + s) % k;
        Job j = {};
        if (a->count[p]) {
            j.k = j.m = 1;
            j.src[0] = (char *)d->peer[p] + (a->offset + a->src_first[p]) * ks->esize;
            j.dst[0] = (char *)a->out + a->out_first[p] * ks->esize;
            if (!job_ok(j))
                return cudaErrorInvalidValue;
            split_job(j, a->count[p], ks->esize);
        }
        j.active = a->count[p] != 0;
        int pre = s == 0, post = s == k - 1;
        ks->fenced<<<blocks, kThreads, 0, stream>>>(j, sync, pre, post);
        *a->epoch += pre + post;
        cudaError_t e = launched();
        if (e != cudaSuccess)
            return e;
    }
    return cudaSuccess;
}

} // namespace gcsh_k

using namespace gcsh_k;

__global__ void empty_kernel() {}

// The fewest blocks of the fenced and one-shot kernels, any dtype, that
// one SM holds: they keep ~100 registers a thread, so one 512-thread block
// fills an H100 SM's registers, and 4 ranks sharing its 132 SMs cannot all
// run 64 blocks at once.
static unsigned reduce_blocks_per_sm()
{
    static const gcsh_dtype all[] = {GCSH_F32, GCSH_F16, GCSH_BF16, GCSH_I32, GCSH_U32};
    unsigned fewest = ~0u;
    for (gcsh_dtype dt : all) {
        const KernelSet *ks = kernels_for(dt);
        int f = 0, o = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&f, ks->fenced, kThreads, 0) !=
                cudaSuccess ||
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&o, ks->oneshot, kThreads, 0) !=
                cudaSuccess)
            return 0;
        unsigned least = (unsigned)(f < o ? f : o);
        fewest = least < fewest ? least : fewest;
    }
    return fewest;
}

extern "C" unsigned gcsh_k_paired_room(int dev)
{
    int sms = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
        return 0;
    unsigned per_sm = reduce_blocks_per_sm(), ll = ll_blocks_per_sm(), mc = mc_blocks_per_sm();
    unsigned ll128 = ll128_blocks_per_sm();
    per_sm = ll < per_sm ? ll : per_sm;
    per_sm = ll128 < per_sm ? ll128 : per_sm;
    per_sm = mc < per_sm ? mc : per_sm;
    return per_sm * (unsigned)sms;
}

extern "C" cudaError_t gcsh_k_empty(cudaStream_t stream)
{
    (void)cudaGetLastError(); // report this launch only
    empty_kernel<<<1, 1, 0, stream>>>();
    return cudaGetLastError();
}

extern "C" cudaError_t gcsh_k_reduce(const gcsh_kjob *kj, cudaStream_t stream)
{
    const KernelSet *ks = kernels_for(kj->dt);
    if (!ks || kj->n == 0)
        return ks ? cudaSuccess : cudaErrorInvalidValue;
    Job j = {};
    j.k = kj->k;
    j.m = kj->m;
    j.op = (int)kj->op;
    for (int s = 0; s < j.k && s < GCSH_KERN_MAX_SRC; s++)
        j.src[s] = (char *)kj->src[s];
    for (int d = 0; d < j.m && d < GCSH_KERN_MAX_SRC; d++)
        j.dst[d] = (char *)kj->dst[d];
    if (!job_ok(j))
        return cudaErrorInvalidValue;
    split_job(j, kj->n, ks->esize);
    (void)cudaGetLastError(); // report this launch only (see window.cu)
    ks->job<<<job_blocks(j.nvec + j.head + j.tail), kThreads, 0, stream>>>(j);
    return launched();
}

extern "C" cudaError_t gcsh_k_collective(const gcsh_kcoll_args *a, const gcsh_window_desc *d,
                                         const gcsh_kwait *w, cudaStream_t stream)
{
    const KernelSet *ks = kernels_for(a->dt);
    const gcsh_kplan &p = a->plan;
    if (!ks || p.n == 0 || d->team_size < 1 || d->team_size > GCSH_KERN_MAX_TEAM ||
        p.team != d->team_size || d->team_rank < 0 || d->team_rank >= d->team_size || !w->ctl ||
        p.root < 0 || p.root >= d->team_size || !gcsh_kplan_valid(p.coll, p.algo))
        return cudaErrorInvalidValue;
    (void)cudaGetLastError();
    if (p.algo == GCSH_KA_MULTICAST && a->mc && a->mc->nvls) {
        cudaError_t e = mc_collective(a, d, w, stream);
        if (e == cudaSuccess)
            *a->epoch += 2;
        return e;
    }
    if (p.coll == GCSH_KC_ALLREDUCE && p.algo == GCSH_KA_ONESHOT)
        return one_shot(a, d, w, ks, stream);
    return run_plan(a, d, w, ks, stream);
}

extern "C" cudaError_t gcsh_k_alltoallv(const gcsh_kv_args *a, const gcsh_window_desc *d,
                                        const gcsh_kwait *w, cudaStream_t stream)
{
    const KernelSet *ks = kernels_for(a->dt);
    if (!ks || !a->out || d->team_size < 1 || d->team_size > GCSH_KERN_MAX_TEAM ||
        d->team_rank < 0 || d->team_rank >= d->team_size || !w->ctl)
        return cudaErrorInvalidValue;
    (void)cudaGetLastError();
    return alltoallv(a, d, w, ks, stream);
}
