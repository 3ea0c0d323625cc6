/* MPI calls tried one way everywhere (NCCL's checks.h shape; the cuda
 * backend's CUDA, NCCL and driver calls have the same shape and name in
 * cuda.h: CUDA_TRY, NCCL_TRY, CU_TRY; "check" is the collective check's
 * word, src/DESIGN.md).  Each runs fn args; on failure it records in
 * ctx->err "<what>MPI_Comm_split failed: <MPI's error string> (file.c:N)"
 * and returns -1 (GCSH_MPI_TRY) or jumps to a clean-up label
 * (GCSH_MPI_TRY_GOTO).  what: "" or the operation, as a prefix
 * ("host window: "). */
#ifndef GCSH_MPI_TRY_H
#define GCSH_MPI_TRY_H

#include <mpi.h>

#include "core/gcsh.h"

/* Records the failure of call (MPI's rc) in ctx->err; returns -1. */
int gcsh_mpi_failed(gcsh_ctx *ctx, const char *what, const char *call, int rc, const char *file,
                    int line);

#define GCSH_MPI_TRY(ctx, what, fn, args)                                                          \
    do {                                                                                           \
        int rc_ = fn args;                                                                         \
        if (rc_ != MPI_SUCCESS)                                                                    \
            return gcsh_mpi_failed((ctx), (what), #fn, rc_, __FILE__, __LINE__);                   \
    } while (0)

#define GCSH_MPI_TRY_GOTO(ctx, what, label, fn, args)                                              \
    do {                                                                                           \
        int rc_ = fn args;                                                                         \
        if (rc_ != MPI_SUCCESS) {                                                                  \
            gcsh_mpi_failed((ctx), (what), #fn, rc_, __FILE__, __LINE__);                          \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)

#endif
