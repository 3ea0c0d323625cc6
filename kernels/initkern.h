/* Launchers for the cuda backend's kernels (the .cu files in kernels/), callable from C.
 *
 * Each launcher enqueues on `stream` and returns the launch's error (not the
 * kernel's: that surfaces at the next synchronisation).  n == 0 launches
 * nothing.  Sizes are element counts; pointers are device memory. */
#ifndef GCSH_KERNELS_INITKERN_H
#define GCSH_KERNELS_INITKERN_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "core/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the element bits `bits` (low esize bytes; esize 1, 2, 4 or 8) n times. */
cudaError_t gcsh_k_fill(void *p, size_t esize, size_t n, uint64_t bits, cudaStream_t stream);
/* p[i] = start + i * step, computed as the host backend does (core/elementwise.h). */
cudaError_t gcsh_k_arange(void *p, gcsh_dtype dt, size_t n, gcsh_scalar start, gcsh_scalar step,
                          cudaStream_t stream);
/* p[i] = rand(seed, i) (core/counter_rng.h). */
cudaError_t gcsh_k_rand(void *p, gcsh_dtype dt, size_t n, uint64_t seed, cudaStream_t stream);

/* A test facility (gcsh.debug.inject("oob_write")): one thread stores to an
 * address no allocation covers, so the stream fails with the sticky
 * cudaErrorIllegalAddress. */
cudaError_t gcsh_k_fault_oob_write(cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
