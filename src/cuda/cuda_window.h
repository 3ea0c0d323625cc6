/* The cuda backend's windows: shared internals of cuda_window.c (ops,
 * signals, the collective status check) and the two kinds' stages,
 * cuda_win_nccl.c and cuda_win_vmm.c. */
#ifndef GCSH_CUDA_WINDOW_H
#define GCSH_CUDA_WINDOW_H

#include "cuda/cuda.h"
#include "cuda/cuda_fdpass.h"

enum { WIN_NCCL, WIN_VMM };

struct gcsh_window_impl {
    int kind;
    gcsh_comm_impl *c;      /* the communicator it was created on (outlives it) */
    size_t bytes;           /* alloc_bytes: each member's slice */
    /* nccl */
    void *buf;              /* ncclMemAlloc'ed slice */
    ncclWindow_t win;
    void *devcomm;          /* ncclDevComm, opaque here (see kernels/winkern.h) */
    int lsa_size, lsa_rank; /* from the device communicator, for the peers stage */
    /* vmm */
    int n;                  /* team size */
    CUmemGenericAllocationHandle *handle; /* [n]: mine and the imported ones; 0 = none */
    int *mapped;            /* [n]: slice i is mapped at base + i * bytes */
    CUdeviceptr base;       /* one reservation of n * bytes */
    uint64_t nonce;         /* the team's, for the socket names */
    int fd;                 /* my exported handle until the exchange; -1 = none */
    fdx x;                  /* my listening socket until the exchange */
    int *fds;               /* [n]: the peers' fds until imported; -1 = none */
    /* w:multicast(), decided once per window on every rank (cuda_kern.c) */
    int mc_decided;
    gcsh_mcast mc;
    void *mm_devcomm;       /* nvls only: the lsaMultimem device communicator */
};

/* Frees what w:multicast() set up (nvls); collective, before the window's
 * own teardown (cuda_kern.c). */
int cuda_kern_window_gone(gcsh_ctx *ctx, gcsh_window_impl *w);

/* The recommended VMM granularity of this rank's GPU for a POSIX-fd
 * exportable allocation (cuda_win_vmm.c, whose allocations they are). */
int win_vmm_granularity(gcsh_ctx *ctx, cuda_state *st, size_t *gran);

/* The kinds' stages (backend.h: create_stage; winbuild.h exchanges every
 * rank's outcome after each): the plan, stage i, and the undo of whatever
 * ran (local once the communicator is aborted).  desc->team and desc->peer
 * come allocated with room for c->size entries. */
extern const gcsh_window_plan win_nccl_plan, win_vmm_plan;
int win_nccl_stage(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w, gcsh_window_desc *d, int i,
                   char *report, size_t len);
void win_nccl_undo(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w);
int win_vmm_stage(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w, gcsh_window_desc *d, int i,
                  char *report, size_t len);
void win_vmm_undo(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w);
/* Collective destroy of a made window (the binding's barrier came first). */
int win_nccl_destroy(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w);
int win_vmm_destroy(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w);

#endif
