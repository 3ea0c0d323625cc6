/* The cuda backend's windows: shared internals of cuda_window.c (ops,
 * signals, the collective status check) and the two kinds' stages,
 * cuda_win_nccl.c and cuda_win_vmm.c. */
#ifndef GCSH_CUDA_WINDOW_H
#define GCSH_CUDA_WINDOW_H

#include "cuda/cuda.h"
#include "cuda/cuda_fdpass.h"

typedef struct cuda_win_kind cuda_win_kind;

struct gcsh_window_impl {
    const cuda_win_kind *kind;
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
    /* A communicator of several nodes (cuda_net.c): every rank's slice at
     * its network server ([communicator size]), mine's id at mine (0: none). */
    gcsh_net_addr *remote;
    uint64_t net_id;
};

/* Frees what w:multicast() set up (nvls); collective, before the window's
 * own teardown (cuda_kern.c). */
int cuda_kern_window_gone(gcsh_ctx *ctx, gcsh_window_impl *w);

/* The recommended VMM granularity of this rank's GPU for a POSIX-fd
 * exportable allocation (cuda_win_vmm.c, whose allocations they are). */
int win_vmm_granularity(gcsh_ctx *ctx, cuda_state *st, size_t *gran);

/* A window kind: everything cuda_window.c and cuda_kern.c do differently
 * per kind, one row each (cuda_win_nccl.c, cuda_win_vmm.c), listed in
 * cuda_window.c's kinds[].  A new kind is a file that exports its row. */
struct cuda_win_kind {
    const char *name;                 /* {kind=...} */
    const gcsh_window_plan *plan;     /* its stages, for step.window */
    /* Whether it works on c (local, the same on every rank of c): 0, or -1
     * with the reason in why, naming the kind that works instead. */
    int (*usable)(cuda_state *st, const gcsh_comm_impl *c, char *why, size_t len);
    /* Its allocation granularity on this GPU (no allocation). */
    int (*granularity)(gcsh_ctx *ctx, cuda_state *st, size_t *gran);
    /* Stage i (backend.h: create_stage; winbuild.h exchanges every rank's
     * outcome after each); desc->team and desc->peer come allocated with
     * room for c->size entries. */
    int (*stage)(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w, gcsh_window_desc *d, int i,
                 char *report, size_t len);
    /* The undo of whatever ran (local once the communicator is aborted). */
    void (*undo)(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w);
    /* Collective destroy of a made window (the binding's barrier came first). */
    int (*destroy)(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w);
    /* NCCL's device API and LSA multimem reach its memory (algo nccl_dev,
     * the nvls multicast). */
    int device_api;
};

extern const cuda_win_kind win_nccl_kind, win_vmm_kind;

/* The network path (cuda_net.c).  In a window's last stage, collective
 * over its communicator (every rank, failed or not): when it spans several
 * nodes, my slice served to the others and their addresses gathered. */
int cuda_net_share(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w, gcsh_window_desc *d,
                   int failed, char *report, size_t len);
/* Before the slice's memory goes: no longer served. */
void cuda_net_forget(cuda_state *st, gcsh_window_impl *w);
/* gcsh_window_ops.net: one operation on a rank off the node. */
int cuda_win_net(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d, int rank,
                 enum gcsh_net_op op, size_t offset, void *data, size_t bytes, uint64_t value,
                 uint64_t *old);

#endif
