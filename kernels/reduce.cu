// Reduce kernels over peer pointer tables: the local job (k sources into m
// destinations) and the kernel collectives (one-shot, two-shot, reduce to a
// root, reduce-scatter, all-gather, broadcast), synchronised on the window's
// sync words (kbarrier.cuh).
//
// Elements go in 16-byte vectors when every pointer of a job has the same
// address modulo 16 (window slices all do: they are granule aligned; an
// out tensor may not), with scalar heads and tails so that every length and
// every offset is exact.  Accumulation follows kern.h (f32 for f32/f16/bf16,
// wrapping 32-bit integers), in source order, so results match the host's
// C loops bit for bit.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kbarrier.cuh"

namespace gcsh_k {

// ---- element traits: storage, accumulator, vector packing ----------------------

struct F32 {
    using S = float;
    using A = float;
    static constexpr int VE = 4;
    __device__ static A load(S x) { return x; }
    __device__ static S store(A x) { return x; }
    __device__ static A combine(A a, A b, int op) { return gcsh_kern_combine_f32(a, b, op); }
    __device__ static void unpack(uint4 v, A *e)
    {
        e[0] = __uint_as_float(v.x), e[1] = __uint_as_float(v.y);
        e[2] = __uint_as_float(v.z), e[3] = __uint_as_float(v.w);
    }
    __device__ static uint4 pack(const A *e)
    {
        return make_uint4(__float_as_uint(e[0]), __float_as_uint(e[1]), __float_as_uint(e[2]),
                          __float_as_uint(e[3]));
    }
};

// f16 and bf16: exact widening, f32 arithmetic, one round to nearest even.
template <class H, class H2> struct Half {
    using S = H;
    using A = float;
    static constexpr int VE = 8;
    __device__ static A combine(A a, A b, int op) { return gcsh_kern_combine_f32(a, b, op); }
};

struct F16 : Half<__half, __half2> {
    __device__ static A load(S x) { return __half2float(x); }
    __device__ static S store(A x) { return __float2half_rn(x); }
    __device__ static void unpack(uint4 v, A *e)
    {
        const __half2 *h = reinterpret_cast<const __half2 *>(&v);
        for (int i = 0; i < 4; i++) {
            float2 f = __half22float2(h[i]);
            e[2 * i] = f.x, e[2 * i + 1] = f.y;
        }
    }
    __device__ static uint4 pack(const A *e)
    {
        uint4 v;
        __half2 *h = reinterpret_cast<__half2 *>(&v);
        for (int i = 0; i < 4; i++)
            h[i] = __floats2half2_rn(e[2 * i], e[2 * i + 1]);
        return v;
    }
};

struct BF16 : Half<__nv_bfloat16, __nv_bfloat162> {
    __device__ static A load(S x) { return __bfloat162float(x); }
    __device__ static S store(A x) { return __float2bfloat16_rn(x); }
    __device__ static void unpack(uint4 v, A *e)
    {
        const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&v);
        for (int i = 0; i < 4; i++) {
            float2 f = __bfloat1622float2(h[i]);
            e[2 * i] = f.x, e[2 * i + 1] = f.y;
        }
    }
    __device__ static uint4 pack(const A *e)
    {
        uint4 v;
        __nv_bfloat162 *h = reinterpret_cast<__nv_bfloat162 *>(&v);
        for (int i = 0; i < 4; i++)
            h[i] = __floats2bfloat162_rn(e[2 * i], e[2 * i + 1]);
        return v;
    }
};

template <bool Signed> struct Int32 {
    using S = unsigned;
    using A = unsigned;
    static constexpr int VE = 4;
    __device__ static A load(S x) { return x; }
    __device__ static S store(A x) { return x; }
    __device__ static A combine(A a, A b, int op)
    {
        return Signed ? gcsh_kern_combine_i32(a, b, op) : gcsh_kern_combine_u32(a, b, op);
    }
    __device__ static void unpack(uint4 v, A *e) { e[0] = v.x, e[1] = v.y, e[2] = v.z, e[3] = v.w; }
    __device__ static uint4 pack(const A *e) { return make_uint4(e[0], e[1], e[2], e[3]); }
};

// ---- jobs -------------------------------------------------------------------------

// A job as the kernels see it (by value: no dependent load for the table).
// Element e of source s is at src[s] + e * sizeof(S).  Vectors cover
// elements head .. head + nvec * VE; this launch does vectors
// [vbegin, vend) and, when `scalars`, the head and tail elements.
struct Job {
    char *src[GCSH_KERN_MAX_SRC];
    char *dst[GCSH_KERN_MAX_SRC];
    int k, m, op, active, scalars;
    int dst_vec; // every destination has the sources' address modulo 16
    size_t head, nvec, tail, vbegin, vend;
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
    for (size_t v = j.vbegin + tid; v < j.vend; v += stride) {
        typename T::A acc[T::VE];
        reduce_vec<T>(j, v, acc);
        store_vec<T>(j, v, acc);
    }
    if (!j.scalars)
        return;
    for (size_t i = tid; i < j.head + j.tail; i += stride) {
        size_t e = scalar_index(j, i, T::VE);
        store_scalar<T>(j, e, reduce_scalar<T>(j, e));
    }
}

template <class T> __global__ void __launch_bounds__(kThreads) job_kernel(Job j)
{
    run_job<T>(j);
}

// barrier, the job (where active), barrier
template <class T> __global__ void __launch_bounds__(kThreads) fenced_kernel(Job j, Sync s)
{
    __shared__ int abandoned;
    if (threadIdx.x == 0)
        abandoned = 0;
    barrier(s, 0, &abandoned);
    if (j.active)
        run_job<T>(j);
    barrier(s, 1, &abandoned);
}

// One-shot: every rank reads every slice.  In rounds of one vector per
// thread, held in registers across a barrier before it is stored: so the
// store may go to my own slice (in place), which peers read until they have
// passed that round's barrier.  Block b handles the same elements on every
// rank, so its barrier with the peers' block b is the one that matters.
template <class T> __global__ void __launch_bounds__(kThreads) oneshot_kernel(Job j, Sync s,
                                                                             unsigned rounds)
{
    __shared__ int abandoned;
    if (threadIdx.x == 0)
        abandoned = 0;
    barrier(s, 0, &abandoned);
    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (unsigned r = 0; r < rounds; r++) {
        size_t v = r * stride + tid;
        bool vec = v < j.nvec, scalar = r == 0 && tid < j.head + j.tail;
        typename T::A acc[T::VE], sacc = {};
        if (vec)
            reduce_vec<T>(j, v, acc);
        size_t e = scalar ? scalar_index(j, tid, T::VE) : 0;
        if (scalar)
            sacc = reduce_scalar<T>(j, e);
        barrier(s, 1 + r, &abandoned);
        if (vec)
            store_vec<T>(j, v, acc);
        if (scalar)
            store_scalar<T>(j, e, sacc);
    }
}

// ---- dispatch: one table of dtypes, every kernel instantiated per trait ----------

template <class T> struct Kernels {
    static constexpr void (*job)(Job) = job_kernel<T>;
    static constexpr void (*fenced)(Job, Sync) = fenced_kernel<T>;
    static constexpr void (*oneshot)(Job, Sync, unsigned) = oneshot_kernel<T>;
};

struct KernelSet {
    void (*job)(Job);
    void (*fenced)(Job, Sync);
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
    j.vbegin = 0;
    j.vend = sp.nvec;
    j.scalars = 1;
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
    s.first = *a->epoch + 1;
    s.end = {w->ctl, w->gen, w->bound_ns};
    return s;
}

// Element `elem` of member p's slice.
char *slice_at(const gcsh_window_desc *d, int p, size_t elem, size_t esize)
{
    return (char *)d->peer[p] + elem * esize;
}

cudaError_t launched()
{
    return cudaGetLastError();
}

// The per-collective jobs (the same data movement as host_kern.c).
struct Plan {
    Job job;
    bool oneshot;
    size_t copy_first; // elements: a copy of my region from here into out after the kernel
    bool copy_out;
};

Plan plan_for(const gcsh_kcoll_args *a, const gcsh_window_desc *d, size_t es)
{
    Plan p = {};
    Job &j = p.job;
    j.op = (int)a->op;
    int me = d->team_rank, k = d->team_size;
    size_t chunk = a->n / (size_t)k;
    char *mine = slice_at(d, me, a->offset, es);
    auto all_sources = [&](size_t first) {
        j.k = k;
        for (int q = 0; q < k; q++)
            j.src[q] = slice_at(d, q, first, es);
    };
    switch (a->coll) {
    case GCSH_KC_ONESHOT:
        all_sources(a->offset);
        j.dst[0] = a->out ? (char *)a->out : mine;
        j.m = 1;
        split_job(j, a->n, es);
        p.oneshot = true;
        break;
    case GCSH_KC_TWOSHOT: {
        all_sources(a->offset);
        j.m = k;
        for (int q = 0; q < k; q++)
            j.dst[q] = j.src[q];
        split_job(j, a->n, es); // the same split on every rank: slices share alignment
        size_t per = (j.nvec + k - 1) / k;
        j.vbegin = per * me < j.nvec ? per * me : j.nvec;
        j.vend = j.vbegin + per < j.nvec ? j.vbegin + per : j.nvec;
        j.scalars = me == 0;
        p.copy_out = a->out != nullptr;
        break;
    }
    case GCSH_KC_REDUCE_TO:
        all_sources(a->offset);
        j.dst[0] = a->out ? (char *)a->out : mine;
        j.m = 1;
        split_job(j, a->n, es);
        j.active = me == a->root;
        break;
    case GCSH_KC_REDUCE_SCATTER:
        all_sources(a->offset + (size_t)me * chunk);
        j.dst[0] = a->out ? (char *)a->out : slice_at(d, me, a->offset + (size_t)me * chunk, es);
        j.m = 1;
        split_job(j, chunk, es);
        break;
    case GCSH_KC_ALLGATHER:
        j.src[0] = slice_at(d, me, a->offset + (size_t)me * chunk, es);
        j.k = 1;
        j.m = k;
        for (int q = 0; q < k; q++)
            j.dst[q] = slice_at(d, q, a->offset + (size_t)me * chunk, es);
        split_job(j, chunk, es);
        p.copy_out = a->out != nullptr;
        break;
    case GCSH_KC_BROADCAST:
        j.src[0] = slice_at(d, a->root, a->offset, es);
        j.k = 1;
        j.dst[0] = a->out ? (char *)a->out : mine;
        j.m = 1;
        split_job(j, a->n, es);
        j.active = me != a->root || a->out != nullptr;
        break;
    case GCSH_KC_MULTICAST:
        break; // mcast.cu
    }
    return p;
}

} // namespace gcsh_k

using namespace gcsh_k;

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
    if (!ks || a->n == 0 || d->team_size < 1 || d->team_size > GCSH_KERN_MAX_TEAM ||
        d->team_rank < 0 || d->team_rank >= d->team_size || !w->ctl ||
        a->root < 0 || a->root >= d->team_size)
        return cudaErrorInvalidValue;
    Sync s = make_sync(a, d, w);
    unsigned blocks = paired_blocks(a->n * ks->esize);
    (void)cudaGetLastError();
    if (a->coll == GCSH_KC_MULTICAST) {
        cudaError_t e = mc_collective(a, d, s, stream);
        if (e == cudaSuccess)
            *a->epoch += 2;
        return e;
    }
    Plan p = plan_for(a, d, ks->esize);
    if (!job_ok(p.job))
        return cudaErrorInvalidValue;
    if (p.oneshot) {
        size_t per_round = (size_t)blocks * kThreads;
        if (p.job.head + p.job.tail > per_round) // slices share alignment: never
            return cudaErrorInvalidValue;
        unsigned rounds = (unsigned)((p.job.nvec + per_round - 1) / per_round);
        rounds = rounds < 1 ? 1 : rounds;
        ks->oneshot<<<blocks, kThreads, 0, stream>>>(p.job, s, rounds);
        *a->epoch += 1 + rounds;
    } else {
        ks->fenced<<<blocks, kThreads, 0, stream>>>(p.job, s);
        *a->epoch += 2;
    }
    cudaError_t e = launched();
    if (e == cudaSuccess && p.copy_out)
        e = cudaMemcpyAsync(a->out, slice_at(d, d->team_rank, a->offset, ks->esize),
                            a->n * ks->esize, cudaMemcpyDeviceToDevice, stream);
    return e;
}
