/* Window and signal kernels behind extern "C" launchers (kernels/window.cu;
 * NCCL's device-API pieces for windows: cuda/cudakern.h).
 *
 * As in initkern.h: each launcher enqueues on `stream` and returns the
 * launch's error; a zero size launches nothing; sizes are checked here
 * before any launch. */
#ifndef GCSH_KERNELS_WINKERN_H
#define GCSH_KERNELS_WINKERN_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The host-mapped control block of the signal-wait kernels (one per rank,
 * in pinned host memory).  Waits are serialised on the rank's stream, so at
 * most one wait kernel writes here at a time: plain volatile stores do. */
typedef struct gcsh_wait_ctl {
    volatile unsigned cancel_gen; /* host bumps it; a wait launched at another gen ends */
    volatile unsigned gave_up;    /* waits that ended without their condition */
    volatile int why;             /* the last one: GCSH_WAIT_TIMED_OUT or GCSH_WAIT_CANCELLED */
    volatile int cmp;             /* its comparison (enum gcsh_cmp) */
    volatile unsigned long long seen, want; /* its word's last value and the target */
    /* The wait a kernel collective is stuck in, for hang reports: a waiter
     * writes it at every kGcshStallPolls-th poll (kwait.cuh), long after a
     * wait for a peer that is there has passed; several may, each a whole
     * record but the three words apart.  The host clears stall_who when it
     * starts waiting for the stream (cuda_sync) and reads it from the
     * watcher thread (cuda_mem.c's stall note). */
    volatile int stall_kind; /* GCSH_STALL_BARRIER, GCSH_STALL_LL or GCSH_STALL_LL128 */
    volatile unsigned long long stall_want; /* the barrier's number, or the line's flag */
    volatile unsigned long long stall_who;  /* GCSH_STALL_WHO(peer, seen); 0: none */
} gcsh_wait_ctl;

enum { GCSH_STALL_BARRIER = 1, GCSH_STALL_LL = 2, GCSH_STALL_LL128 = 3 };
/* A stall's peer (its rank in the communicator) and the value its word
 * holds, in one word: written at once, read at once. */
#define GCSH_STALL_SEEN_BITS 48
#define GCSH_STALL_SEEN_MASK ((1ULL << GCSH_STALL_SEEN_BITS) - 1)
#define GCSH_STALL_WHO(peer, seen) \
    ((((unsigned long long)(peer) + 1) << GCSH_STALL_SEEN_BITS) | ((seen) & GCSH_STALL_SEEN_MASK))

enum { GCSH_WAIT_TIMED_OUT = 1, GCSH_WAIT_CANCELLED = 2 };

/* The generation of a wait captured into a CUDA graph (gcsh.graph): its
 * launch-time generation would be stale in every later replay, so such a
 * wait takes the generation it sees at its first look at the control
 * block (kwait.cuh), and a bump after that cancels it.  The host never
 * makes cancel_gen this value (cuda_cancel_waits). */
#define GCSH_WAIT_GEN_CAPTURED 0xffffffffu

/* The most peers a peer table may have: a sanity bound for the launchers
 * (NVL72 is the largest LSA domain today). */
#define GCSH_MAX_TEAM 1024

/* *word = v (add = 0) or *word += v (add = 1), one thread, with release
 * ordering at system scope: every write this rank made before, on this
 * stream, is visible to whoever observes the new value.  word may be a
 * peer's (NVLink) address. */
cudaError_t gcsh_k_signal_store(uint64_t *word, uint64_t v, int add, cudaStream_t stream);

/* *word += v, the value before it into *old_dev (device memory), one
 * thread, acquire and release at system scope. */
cudaError_t gcsh_k_signal_fetch_add(uint64_t *word, uint64_t v, uint64_t *old_dev,
                                    cudaStream_t stream);

/* Stream-ordered wait: one thread spins (with backoff) until `*word cmp v`
 * (cmp an enum gcsh_cmp) holds, then acquires.  It ends early, recording
 * why in ctl, when bound_ns of GPU time pass or when ctl->cancel_gen is no
 * longer gen, so a wait that is never satisfied cannot hold the GPU. */
cudaError_t gcsh_k_signal_wait(const uint64_t *word, uint64_t v, int cmp, gcsh_wait_ctl *ctl,
                               unsigned gen, uint64_t bound_ns, cudaStream_t stream);

/* dst[0 .. bytes) = team member `peer`'s slice from byte `offset`, loaded by
 * a kernel through the device peer table (table[peer] is read on the GPU).
 * 16-byte vector loads when dst, offset and bytes allow, bytes otherwise. */
cudaError_t gcsh_k_peer_copy(void *dst, void *const *table, int peer, size_t offset,
                             size_t bytes, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
