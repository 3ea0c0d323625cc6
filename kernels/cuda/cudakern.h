/* The launchers of CUDA's and NCCL's own device code, callable from C:
 * NCCL's device API (ncclDevComm is a C++ type) and NVLS's multimem
 * instructions.  kernels/ outside cuda/ holds what any GPU backend runs
 * (winkern.h, reducekern.h, initkern.h, xferkern.h); a backend of another
 * vendor adds a folder beside this one.
 *
 * As in initkern.h: each launcher enqueues on `stream` and returns the
 * launch's error; sizes are checked here before any launch. */
#ifndef GCSH_KERNELS_CUDA_CUDAKERN_H
#define GCSH_KERNELS_CUDA_CUDAKERN_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "core/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- windows of kind nccl (kernels/cuda/ncclwin.cu) ---- */

/* table[i] = ncclGetLsaPointer(win, 0, i) for i < n: fills a device peer
 * table through the NCCL device API. */
cudaError_t gcsh_k_lsa_table(ncclWindow_t win, int n, void **table, cudaStream_t stream);

/* The LSA barriers a window's device communicator asks for: one per CTA
 * of algo "nccl_dev" (kernels/cuda/nccl_dev.cu), which runs at most this many. */
#define GCSH_NCCL_DEV_BLOCKS 32

/* A device communicator for comm (collective over comm) with lsa_barriers
 * LSA barriers (0: none) and no other optional resource: lsaMultimem stays
 * false (never NVLink multicast).  *out is an opaque ncclDevComm owned by
 * the caller until gcsh_nccl_devcomm_destroy.  It may return ncclInProgress
 * (non-blocking communicators): wait for the communicator before reading
 * *out. */
ncclResult_t gcsh_nccl_devcomm_create(ncclComm_t comm, int lsa_barriers, void **out);
/* Its LSA team, once the communicator has settled. */
void gcsh_nccl_devcomm_lsa(const void *dev_comm, int *lsa_size, int *lsa_rank);
/* Frees a device communicator, this one or gcsh_nccl_multimem_open's
 * (collective over comm); NULL: nothing to do. */
ncclResult_t gcsh_nccl_devcomm_destroy(ncclComm_t comm, void *dev_comm);

/* NCCL's LSA team of comm, from the host side (ncclTeamLsa): its size and
 * my index, and for i < min(size, max) members[i] = member i's comm rank. */
void gcsh_nccl_lsa_team(ncclComm_t comm, int *size, int *rank, int *members, int max);

/* kernel.allreduce{algo="nccl_dev"} (kernels/cuda/nccl_dev.cu): one-shot with
 * NCCL's device API over window win, one launch.  dev_comm is the window's
 * ncclDevComm (with GCSH_NCCL_DEV_BLOCKS LSA barriers, winkern.h); mine is
 * my slice's address of the region, which gives every slice's alignment. */
cudaError_t gcsh_k_nccl_dev_allreduce(const void *dev_comm, ncclWindow_t win, const void *mine,
                                      const gcsh_kdev_args *a, cudaStream_t stream);

/* ---- NVLS (kernels/cuda/mcast.cu): compiled for sm_90, run only under the
 * opt-in of src/DESIGN.md (cuda_kern.c decides; never on the test machines). */

/* A device communicator with lsaMultimem = true (collective over comm), and
 * *mc_base (host) = ncclGetLsaMultimemPointer(win, 0, it).  *dev_comm is
 * freed as every device communicator is: gcsh_nccl_devcomm_destroy
 * (winkern.h). */
ncclResult_t gcsh_nccl_multimem_open(ncclComm_t comm, ncclWindow_t win, void **dev_comm,
                                     void **mc_base, cudaStream_t stream);

/* out[0..n) = multimem.ld_reduce over mc (a multicast address); src[0..n)
 * into every slice by multimem.st.  Vector forms where mc and the local
 * pointer are 16-byte aligned alike, scalar forms for the rest (multimem
 * needs natural alignment of the accessed width). */
cudaError_t gcsh_k_mc_ld_reduce(const void *mc, void *out, size_t n, gcsh_dtype dt,
                                gcsh_redop op, cudaStream_t stream);
cudaError_t gcsh_k_mc_st(void *mc, const void *src, size_t n, gcsh_dtype dt,
                         cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
