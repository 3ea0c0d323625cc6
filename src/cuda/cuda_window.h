/* The cuda backend's windows: what the device runtime's window part
 * (cuda_window.c), the two kinds' stages (cuda_win_nccl.c, cuda_win_vmm.c)
 * and the kernels (cuda_kern.c) share; the rest is gpu/gpu_window.h's. */
#ifndef GCSH_CUDA_WINDOW_H
#define GCSH_CUDA_WINDOW_H

#include "cuda/cuda.h"
#include "cuda/cuda_fdpass.h"
#include "cuda/cudakern.h"
#include "gpu/gpu_window.h"

/* A window's cuda part (gpu_window.h's w->own): the handles of its kind. */
struct gcsh_gpu_win {
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
    /* w:multicast() on nvls (cuda_kern.c) */
    void *mm_devcomm;       /* the lsaMultimem device communicator */
};

/* Frees what w:multicast() set up (nvls); collective, before the window's
 * own teardown (cuda_kern.c; the runtime's mc_close). */
int cuda_kern_window_gone(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w);
/* The runtime's mc_allowed and mc_open (cuda_kern.c). */
int cuda_mc_allowed(cuda_state *st, const gcsh_window_impl *w, char *why, size_t len);
int cuda_mc_open(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w, gcsh_mcast *out);

/* The recommended VMM granularity of this rank's GPU for a POSIX-fd
 * exportable allocation (cuda_win_vmm.c, whose allocations they are). */
int win_vmm_granularity(gcsh_ctx *ctx, cuda_state *st, size_t *gran);

extern const gpu_win_kind win_nccl_kind, win_vmm_kind;

/* The device runtime's window part (gpu_rt.h says what each does), for
 * cuda_rt.c's table. */
extern const gpu_win_kind *const cuda_win_kinds[];
gcsh_gpu_win *cuda_win_new(void);
void cuda_win_free(gcsh_gpu_win *own);
int cuda_signal_store(gcsh_ctx *ctx, cuda_state *st, uint64_t *word, uint64_t v, int add);
int cuda_signal_fetch_add(gcsh_ctx *ctx, cuda_state *st, uint64_t *word, uint64_t v, int loc,
                          uint64_t *old);
int cuda_signal_wait(gcsh_ctx *ctx, cuda_state *st, uint64_t *word, uint64_t v,
                     enum gcsh_cmp cmp);
int cuda_peek(gcsh_ctx *ctx, cuda_state *st, const void *p, size_t bytes, uint64_t *bits);
int cuda_peer_copy(gcsh_ctx *ctx, cuda_state *st, void *dst, void *table_dev, int peer,
                   size_t offset, size_t bytes);

#endif
