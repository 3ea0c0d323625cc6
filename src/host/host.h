/* The host backend: CPU memory, MPI collectives, C loops as "kernels". */
#ifndef GCSH_HOST_H
#define GCSH_HOST_H

#include "backend.h"

extern const gcsh_mem_ops gcsh_host_mem_ops;
extern const gcsh_comm_ops gcsh_host_comm_ops;

/* Per-rank MPI objects of the collectives (datatypes and ops for f16/bf16);
 * defined in host_comm.c. */
typedef struct gcsh_host_comm_state gcsh_host_comm_state;

/* The host backend's per-rank state, hung off ctx->be_state by host_init. */
typedef struct gcsh_host_state {
    gcsh_host_comm_state *comm;
    int inject_oom; /* gcsh.debug.inject("oom"): the next allocation fails */
} gcsh_host_state;

/* Creates / frees state->comm (MPI must be initialised; local, not collective). */
int gcsh_host_comm_init(gcsh_ctx *ctx, gcsh_host_state *state);
void gcsh_host_comm_fini(gcsh_ctx *ctx, gcsh_host_state *state);

#endif
