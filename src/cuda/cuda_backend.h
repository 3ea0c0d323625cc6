/* The cuda backend as the layers above see it, in plain C (no CUDA or
 * NCCL header): its table, and what main and the rank's set-up ask before
 * choosing it.  Included where GCSH_HAVE_CUDA is defined. */
#ifndef GCSH_CUDA_BACKEND_H
#define GCSH_CUDA_BACKEND_H

#include <stddef.h>

#include "core/backend.h"

extern const gcsh_backend gcsh_cuda_backend;
/* Whether the cuda backend can run here (a driver and a visible GPU). */
int gcsh_cuda_available(void);
/* For gcsh --version: the NCCL library's version, the CUDA runtime's and the
 * driver's (each says so when absent); len bytes each. */
void gcsh_cuda_versions(char *nccl, char *runtime, char *driver, size_t len);

#endif
