// The resident kernel of the persistent all-reduce (core/kpersist.h): it
// stays on the GPU and runs the "ll" protocol (kll.cuh) once for every call
// the host rings, instead of being launched once per call.
//
// Every block's thread 0 watches the doorbell, which lives in mapped host
// memory (each look is a PCIe read).  A call n starts in a block once the
// host rang it (rung > n) and every block finished call n - 1 (sync[1] ==
// n, in device memory), so that all of them read the LL header's count
// after the last block of call n - 1 advanced it.  The last block to finish
// a call advances the count (the window's own, which direct "ll" calls
// share), then publishes done = n + 1 for the host, with a system-scope
// fence before it: the host, and a stream wait on done, see the result.
//
// Never stuck: the waits for peers are the collectives' (kwait.cuh),
// bounded by GCSH_GPU_WAIT_TIMEOUT and cancelled by an interrupt (the
// generation is read again at every call, so an interrupt long before does
// not end it).  The idle wait for the doorbell has no bound (a resident
// waits for its next ring as long as it lives) but reads the stop word.
// When the kernel ends, for any reason, the last block out sets
// GCSH_PERSIST_ENDED in done and the reason in why.
#include "kll.cuh"
#include "reducekern.h"

namespace gcsh_k {

// sync words (device memory, zeroed by the host)
enum { kBlocksDone = 0, kCallsDone = 1, kBlocksOut = 2, kGaveUp = 3 };

struct Persist {
    LL ll;                      // the LL layout; region, op and count per call
    char *mine;                 // my slice
    size_t esize;
    gcsh_persist_bell *bell;    // mapped host memory
    unsigned long long *sync;
};

__device__ inline unsigned long long peek(const void *w)
{
    return *reinterpret_cast<const volatile unsigned long long *>(w);
}

__device__ inline void poke(void *w, unsigned long long v)
{
    *reinterpret_cast<volatile unsigned long long *>(w) = v;
}

// Thread 0: waits until call n may start (rung > n, every block past call
// n - 1).  Returns false when the host asked it to stop, or another block
// gave up (it must not start a call its peers will not finish).
__device__ bool wait_for_ring(const Persist &P, unsigned long long n)
{
    unsigned ns = 32;
    for (unsigned i = 0;; i++) {
        if (peek(&P.sync[kGaveUp]))
            return false;
        if (peek(&P.bell->rung) > n && peek(&P.sync[kCallsDone]) == n)
            return true;
        if ((i & 63) == 63 && peek(&P.bell->stop))
            return false;
        if (i > 64) {
            __nanosleep(ns);
            ns = ns < 1024 ? ns * 2 : ns;
        }
    }
}

// Thread 0 of the last block to finish call n: count it in the window
// (even when a wait gave up, as ll.cu does: kll.h) and tell every block,
// and the host unless a block gave up, that it is done.
__device__ void finish_call(const Persist &P, unsigned long long n, unsigned long long count)
{
    __threadfence();
    unsigned long long before = atomicAdd(&P.sync[kBlocksDone], 1ull);
    if (before + 1 != gridDim.x)
        return;
    P.sync[kBlocksDone] = 0;
    poke(&reinterpret_cast<gcsh_ll_header *>(P.ll.area[P.ll.me])->count, count + 1);
    __threadfence_system();
    if (!peek(&P.sync[kGaveUp]))
        poke(&P.bell->done, n + 1);
    poke(&P.sync[kCallsDone], n + 1);
}

// The last block out marks the end for the host (n: the calls completed).
__device__ void end_resident(const Persist &P, unsigned long long n)
{
    if (threadIdx.x != 0)
        return;
    __threadfence();
    if (atomicAdd(&P.sync[kBlocksOut], 1ull) + 1 != gridDim.x)
        return;
    unsigned long long why = peek(&P.sync[kGaveUp]);
    poke(&P.bell->why, why ? why : (unsigned long long)GCSH_PERSIST_STOPPED);
    __threadfence_system();
    poke(&P.bell->done, n | GCSH_PERSIST_ENDED);
}

// Thread 0: call n's ring entry (after the doorbell showed it: the fence
// keeps these loads after that one).
__device__ gcsh_persist_entry entry_of(const Persist &P, unsigned long long n)
{
    __threadfence_system();
    const volatile gcsh_persist_entry *e = &P.bell->ring[n % GCSH_PERSIST_DEPTH];
    gcsh_persist_entry out;
    out.offset = e->offset;
    out.n = e->n;
    out.dt = e->dt;
    out.op = e->op;
    out.pad = 0;
    return out;
}

// The LL view of call e, its waits ending at generation gen.
__device__ LL call_of(const Persist &P, const gcsh_persist_entry &e, unsigned gen)
{
    LL a = P.ll;
    a.src = P.mine + e.offset * P.esize;
    a.dst = P.mine + e.offset * P.esize;
    a.bytes = e.n * P.esize;
    a.op = e.op;
    a.end.gen = gen;
    return a;
}

template <class T> __global__ void __launch_bounds__(kLLThreads) persist_kernel(Persist P)
{
    __shared__ int go;
    __shared__ unsigned gen;
    __shared__ unsigned long long count;
    __shared__ gcsh_persist_entry e;
    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    unsigned long long n = 0;
    for (;; n++) {
        if (threadIdx.x == 0) {
            go = wait_for_ring(P, n);
            if (go) {
                e = entry_of(P, n); // its fence also orders the count's load below
                gen = P.ll.end.ctl->cancel_gen;
                count = peek(&reinterpret_cast<gcsh_ll_header *>(P.ll.area[P.ll.me])->count);
            }
        }
        __syncthreads();
        if (!go)
            break;
        LL a = call_of(P, e, gen);
        bool gave_up = false;
        ll_call<T>(a, count, tid, stride, &gave_up);
        if (__syncthreads_or(gave_up) && threadIdx.x == 0)
            atomicMax(&P.sync[kGaveUp], (unsigned long long)(P.ll.end.ctl->why ==
                                                                     GCSH_WAIT_TIMED_OUT
                                                                 ? GCSH_PERSIST_TIMED_OUT
                                                                 : GCSH_PERSIST_CANCELLED));
        if (threadIdx.x == 0)
            finish_call(P, n, count);
        __syncthreads();
    }
    end_resident(P, n - (peek(&P.sync[kGaveUp]) && n > 0 ? 1 : 0));
}

struct PersistKernel {
    void (*run)(Persist);
    size_t esize;
};

template <class T> constexpr PersistKernel persist_of()
{
    return {persist_kernel<T>, sizeof(typename T::S)};
}

PersistKernel persist_kernel_for(gcsh_dtype dt)
{
    switch (dt) {
    case GCSH_F32: return persist_of<F32>();
    case GCSH_F16: return persist_of<F16>();
    case GCSH_BF16: return persist_of<BF16>();
    case GCSH_I32: return persist_of<Int32<true>>();
    case GCSH_U32: return persist_of<Int32<false>>();
    default: return {nullptr, 0};
    }
}

} // namespace gcsh_k

using namespace gcsh_k;

extern "C" cudaError_t gcsh_k_persist_launch(const gcsh_persist_args *a, gcsh_dtype dt,
                                             const gcsh_window_desc *d, gcsh_persist_bell *bell,
                                             unsigned long long *sync, const gcsh_kwait *w,
                                             cudaStream_t stream)
{
    PersistKernel kernel = persist_kernel_for(dt);
    if (!kernel.run || d->team_size < 1 || d->team_size > a->slots ||
        a->slots > GCSH_KERN_MAX_TEAM || d->team_rank < 0 || d->team_rank >= d->team_size ||
        a->sms < 1 || a->sms > GCSH_PERSIST_MAX_SMS || !w->ctl || !bell || !sync)
        return cudaErrorInvalidValue;
    Persist P = {};
    for (int p = 0; p < d->team_size; p++)
        P.ll.area[p] = (char *)d->peer[p] + a->ll_off;
    P.ll.window_bytes = a->window_bytes;
    P.ll.k = d->team_size;
    P.ll.me = d->team_rank;
    P.ll.slots = a->slots;
    P.ll.end = {w->ctl, w->gen, w->bound_ns};
    P.mine = (char *)d->peer[d->team_rank];
    P.esize = kernel.esize;
    P.bell = bell;
    P.sync = sync;
    void *args[] = {&P};
    (void)cudaGetLastError(); // report this launch only
    return cudaLaunchCooperativeKernel((const void *)kernel.run, dim3((unsigned)a->sms),
                                       dim3(kLLThreads), args, 0, stream);
}
