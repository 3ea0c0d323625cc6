/* Launchers of the reduce kernels (kernels/reduce.cu, ll.cu, persist.cu),
 * callable from C (NCCL's device API and NVLS's: cuda/cudakern.h).
 *
 * As in initkern.h: each launcher enqueues on `stream` and returns the
 * launch's error; sizes and team bounds are checked here before any launch
 * (the binding checked them against the user's tensors and windows). */
#ifndef GCSH_KERNELS_REDUCEKERN_H
#define GCSH_KERNELS_REDUCEKERN_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "core/backend.h"
#include "core/kpersist.h"
#include "winkern.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How the kernel collectives wait on their sync words: like
 * gcsh_k_signal_wait, bounded by bound_ns and ended early when
 * ctl->cancel_gen is no longer gen; a wait that gives up records it in ctl.
 * max_blocks: the most blocks a launch whose blocks wait for other ranks'
 * blocks may have.  Such a wait ends only if every rank's blocks are
 * resident on their GPUs at once; ranks sharing a GPU split its room
 * (gcsh_k_paired_room), or a barrier waits for blocks that cannot start
 * until it ends. */
typedef struct gcsh_kwait {
    gcsh_wait_ctl *ctl;
    unsigned gen;
    uint64_t bound_ns;
    unsigned max_blocks;
    int one_gpu; /* every rank of the machine runs on this GPU: a load/store
                    team meets at device scope (kbarrier.cuh) */
} gcsh_kwait;

/* How many blocks of the kernels that pair with other ranks (the fenced,
 * one-shot, multicast and ll kernels) GPU dev holds at once: its SMs times
 * the fewest blocks of any of them that one SM holds.  0 when CUDA cannot
 * say. */
unsigned gcsh_k_paired_room(int dev);

/* One job (backend.h): k sources reduced into m destinations, 16-byte
 * vectors where every pointer has the same alignment modulo 16. */
cudaError_t gcsh_k_reduce(const gcsh_kjob *j, cudaStream_t stream);

/* One empty kernel (one block of one thread): the launch floor that
 * kernel.empty() and bench.allreduce's algo "empty" time. */
cudaError_t gcsh_k_empty(cudaStream_t stream);

/* One kernel collective over the window described by d (its peer table and
 * sync area), as backend.h's gcsh_kcoll_args says; advances *a->epoch.  A
 * copy into a->out, where the result stays in the window too, follows on
 * the stream. */
cudaError_t gcsh_k_collective(const gcsh_kcoll_args *a, const gcsh_window_desc *d,
                              const gcsh_kwait *wait, cudaStream_t stream);

/* kernel.alltoallv (backend.h's gcsh_kv_args): a fenced launch per team
 * member, the window's barriers before the first copy and after the last;
 * advances *a->epoch by 2. */
cudaError_t gcsh_k_alltoallv(const gcsh_kv_args *a, const gcsh_window_desc *d,
                             const gcsh_kwait *wait, cudaStream_t stream);

/* The "ll" all-reduce (kernels/ll.cu, core/kll.h): one launch, no barrier;
 * its waits end as the collectives' do (wait). */
cudaError_t gcsh_k_ll_allreduce(const gcsh_kll_args *a, const gcsh_window_desc *d,
                                const gcsh_kwait *wait, cudaStream_t stream);
/* The same in 128-byte lines (kernels/ll128.cu, core/kll.h: "ll128"). */
cudaError_t gcsh_k_ll128_allreduce(const gcsh_kll_args *a, const gcsh_window_desc *d,
                                   const gcsh_kwait *wait, cudaStream_t stream);

/* The resident kernel of the persistent all-reduce (kernels/persist.cu,
 * core/kpersist.h): `blocks` blocks (a cooperative launch, so all of them
 * are resident at once) on `stream`, which must be a stream of its own: it
 * runs until bell->stop (or a wait for a peer gives up, as the collectives'
 * waits do: wait.gen is refreshed at every batch of calls).  bell is the
 * doorbell's device address (mapped host memory); sync
 * GCSH_PERSIST_SYNC_BYTES of device memory of its own, zeroed but for the
 * alive bits of its graph slots' go words (core/kpersist.h).  The calls
 * reduce a->dt with their entry's op. */
cudaError_t gcsh_k_persist_launch(const gcsh_persist_args *a, gcsh_dtype dt,
                                  const gcsh_window_desc *d, gcsh_persist_bell *bell,
                                  void *sync, const gcsh_kwait *wait, cudaStream_t stream);

/* A sequence of a graph's rings of the resident whose sync area is `sync`:
 * one thread numbers it (the count at GCSH_PERSIST_SEQS_OFFSET, one more)
 * and sets the pending bits and that number in the go words of the graph
 * slots in `slots` (bit s: slot s; not 0), the highest marked last and
 * written after a fence (core/kpersist.h), on `stream`. */
cudaError_t gcsh_k_persist_go(void *sync, unsigned long long slots, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
