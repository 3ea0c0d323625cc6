/* GPUs shared by several ranks (--share-gpu, GCSH_SHARE_GPU): the ranks of
 * this machine, their NCCL host identities, and the MPS server that serves
 * them.
 *
 * Without MPS, the kernels of processes that share a GPU take turns on it
 * (time slices of milliseconds); with an MPS server they run side by side.
 * Where the machine runs more ranks than it has GPUs, its first rank (the
 * launcher's local rank 0) decides, before MPI and CUDA start: a server
 * that answers already (CUDA_MPS_PIPE_DIRECTORY, else /tmp/nvidia-mps) is
 * used, else it starts a private control daemon for the job (mps.h); the
 * other ranks follow its verdict.  --share-gpu=nomps starts none (a server
 * that runs anyway serves the ranks: the driver's answer is in .info).  A
 * daemon that cannot start is said once, and the job runs time-sliced.
 * gcsh never touches a daemon it did not start and never changes compute
 * mode or any other GPU setting. */
#ifndef GCSH_SHARE_H
#define GCSH_SHARE_H

#include <sys/types.h>

#include <mpi.h>

typedef enum {
    GCSH_SHARE_OFF = 0, /* one GPU per rank (NCCL's layout) */
    GCSH_SHARE_MPS,     /* --share-gpu: share, with an MPS server */
    GCSH_SHARE_NOMPS,   /* --share-gpu=nomps: share, time-sliced */
} gcsh_share_mode;

typedef struct gcsh_share {
    gcsh_share_mode mode;
    /* The ranks of this machine (MPI shared memory), whatever
     * GCSH_RANKS_PER_NODE says: GPUs and MPS servers belong to machines. */
    MPI_Comm node;
    int node_rank, node_size;
    int guard_fd;   /* the machine's first rank: closing it quits the daemon (mps.h) */
    /* The GPU count the NCCL host identities were made for (0: none made);
     * the cuda backend checks that CUDA shows as many. */
    int round_gpus;
    /* What serves the node's ranks, in words (.info, the banner), e.g.
     * "private MPS daemon started by gcsh", "off (--share-gpu=nomps):
     * time-sliced". */
    char mps[256];
    /* The machine's shared GPUs, "cuda:0 by ranks 0-3" (the backend fills
     * it; "" when none is shared). */
    char gpus[256];
} gcsh_share;

/* The mode that --share-gpu[=VALUE] or GCSH_SHARE_GPU=VALUE asks for:
 * "", "1", "mps" -> MPS; "nomps" -> NOMPS; "0" -> OFF.  -1 when VALUE is
 * none of those. */
int gcsh_share_parse(const char *value, gcsh_share_mode *mode);

/* Every rank, before MPI_Init (an MPI built with CUDA support may start
 * CUDA in MPI_Init, and the MPS client reads CUDA_MPS_PIPE_DIRECTORY when
 * CUDA starts; setenv is not safe beside MPI's threads): in a sharing
 * mode, where the machine runs more ranks than it has GPUs, sets this
 * rank's NCCL_HOSTID (cuda/cuda_share.c says why) and the MPS pipe
 * directory of the first rank's verdict: a server that answers, or a
 * private daemon in /tmp/gcsh-mps-UID-KEY (KEY from GCSH_SHARE_KEY, else
 * the launcher's job id).  backend is
 * --backend's value (NULL: auto): "host" needs no GPU and no daemon.
 * Never fails the job: a daemon that cannot start is said once on stderr
 * and in share->mps, and the ranks run time-sliced. */
void gcsh_share_prepare(gcsh_share *share, gcsh_share_mode mode, const char *backend);

/* Every rank, after MPI_Init (collective): the machine's ranks as MPI sees
 * them, and the first rank's words for what serves them. */
void gcsh_share_start(gcsh_share *share);

/* Every rank, at the end, after the backend let go of the GPU: the first
 * rank releases the guard (mps.h), which quits the daemon once this process (an
 * MPS client) is gone.  Never waits. */
void gcsh_share_stop(gcsh_share *share);

/* The launcher of gcsh -n, before it starts mpirun: a fresh random
 * GCSH_SHARE_KEY, which names the job's folder on every rank. */
void gcsh_share_new_key(void);

/* The launcher of gcsh -n, once mpirun has ended: waits (40 s at most) for
 * the job's folder to go (kept with GCSH_MPS_KEEP: for the guard's mark that
 * the daemon quit), so that no daemon outlives gcsh. */
void gcsh_share_wait_gone(void);

#endif
