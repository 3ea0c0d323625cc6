// The one GPU-side wait of gcsh: a thread spins on a 64-bit word in
// (possibly peer) memory until a condition holds, bounded in time and
// cancellable from the host.  s:wait's kernel (window.cu) and the kernel
// collectives' barriers (kbarrier.cuh) both wait here.
#ifndef GCSH_KERNELS_KWAIT_CUH
#define GCSH_KERNELS_KWAIT_CUH

#include "core/backend.h"
#include "kport.cuh"
#include "winkern.h"

namespace gcsh_k {

// The cancel word lives in pinned host memory: each look at it is a PCIe
// read, and the GPU serialises those reads across its SMs.  A kernel
// collective has two waiters in each of up to 64 blocks; when they looked
// every 16 polls, a barrier cost about a microsecond per block, and once a
// wait ran long the reads slowed every later barrier too (bench.allreduce on
// 2 H200s: 100 us per call at 1 MiB instead of 10-15).  So a wait looks only
// after kQuietNs (a barrier between peers normally completes well within
// it: none looks at all) and then once every kCancelPolls polls, about a
// quarter of a millisecond apart: an interrupt still ends it at once as
// far as a person can tell.  The time bound is read from the GPU's own
// timer, which costs nothing, every 16 polls.
constexpr unsigned long long kQuietNs = 20000;
constexpr unsigned kCancelPolls = 1024;
// How often a wait for a peer notes itself for hang reports (winkern.h's
// stall record): about every quarter millisecond, as the cancel looks.
constexpr unsigned kStallPolls = kCancelPolls;

// The wait this thread is stuck in, for the host's hang report: peer is
// the rank in the communicator whose word (or line) it waits for.
__device__ inline void note_stall(gcsh_wait_ctl *ctl, int kind, int peer,
                                  unsigned long long want, unsigned long long seen)
{
    ctl->stall_kind = kind;
    ctl->stall_want = want;
    ctl->stall_who = GCSH_STALL_WHO(peer, seen);
}

// How a wait ended when the condition never held.
struct WaitEnd {
    gcsh_wait_ctl *ctl;
    unsigned gen;                // the cancel generation the wait was launched at
    unsigned long long bound_ns; // GPU time after which it gives up
};

// Records in ctl why a wait gave up, for the host (cuda_wait) to report.
// Several waiters may give up at once: any change of gave_up is what the
// host looks for, so a racy increment is enough.
__device__ inline void record_give_up(gcsh_wait_ctl *ctl, int why, int cmp,
                                      unsigned long long seen, unsigned long long want)
{
    ctl->why = why;
    ctl->cmp = cmp;
    ctl->seen = seen;
    ctl->want = want;
    fence_system();
    ctl->gave_up = ctl->gave_up + 1;
}

// Whether a wait that started at t0 and has polled i times must give up:
// GCSH_WAIT_CANCELLED or GCSH_WAIT_TIMED_OUT, else 0.  Looked at every 16
// polls (the pacing above).  *gen: the wait's generation; a captured one
// (GCSH_WAIT_GEN_CAPTURED) becomes the one seen at the first look.
__device__ inline int give_up_reason(unsigned i, unsigned long long t0, const WaitEnd &end,
                                     unsigned *gen)
{
    if ((i & 15) != 0)
        return 0;
    unsigned long long waited = globaltimer() - t0;
    if (waited > kQuietNs && (i & (kCancelPolls - 1)) == 0) {
        unsigned now = end.ctl->cancel_gen;
        if (*gen == GCSH_WAIT_GEN_CAPTURED)
            *gen = now;
        else if (now != *gen)
            return GCSH_WAIT_CANCELLED;
    }
    return waited > end.bound_ns ? GCSH_WAIT_TIMED_OUT : 0;
}

// The backoff between polls: a few bare polls, then sleeps of 32 ns
// doubling up to max_sleep_ns.
__device__ inline void backoff(unsigned i, unsigned *ns, unsigned max_sleep_ns)
{
    if (i < 8)
        return;
    sleep_ns(*ns);
    if (*ns < max_sleep_ns)
        *ns *= 2;
}

// Spins until `*word cmp value` holds (then acquires: what the writer
// released is visible) and returns true; false when it gave up (bound or
// cancel), recorded in end.ctl.  Scope: whom the acquire orders against;
// system (the default) for writers on other GPUs or the host, device when
// every writer runs on this GPU (cheaper: no system-wide fence).  The
// word is member `member`'s (a barrier's), whose rank rank_of[member] is
// noted for hang reports while the wait lasts; rank_of NULL notes nothing.
// (rank_of is device memory read only when a note is due: an array in the
// kernel's parameters, indexed by thread, would go to the stack.)
template <Scope S = kScopeSystem>
__device__ inline bool wait_until(unsigned long long *word, int cmp, unsigned long long value,
                                  const WaitEnd &end, unsigned max_sleep_ns,
                                  const int *rank_of = nullptr, int member = 0)
{
    atomic_u64<S> a(*word);
    unsigned long long t0 = globaltimer();
    unsigned ns = 32, gen = end.gen;
    for (unsigned i = 1;; i++) {
        unsigned long long x = a.load(kAcquire);
        if (gcsh_cmp_holds(x, (enum gcsh_cmp)cmp, value))
            return true;
        if (rank_of && (i & (kStallPolls - 1)) == 0)
            note_stall(end.ctl, GCSH_STALL_BARRIER, rank_of[member], value, x);
        if (int why = give_up_reason(i, t0, end, &gen)) {
            record_give_up(end.ctl, why, cmp, x, value);
            return false;
        }
        backoff(i, &ns, max_sleep_ns);
    }
}

} // namespace gcsh_k

#endif
