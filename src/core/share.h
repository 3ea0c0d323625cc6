/* GPUs shared by several ranks (--share-gpu, GCSH_SHARE_GPU): the ranks of
 * this machine, and the MPS control daemon that a job may start for them.
 *
 * Without MPS, the kernels of processes that share a GPU take turns on it
 * (time slices of milliseconds); with an MPS server they run side by side.
 * gcsh uses a server that is already reachable; otherwise, when the node
 * runs more ranks than it has GPUs, its first rank starts a private control
 * daemon (pipe and log directories of the job's own, under /tmp) before
 * any rank touches CUDA, and every rank of the node points
 * CUDA_MPS_PIPE_DIRECTORY at it.  A watcher process (its own session, so
 * that neither Ctrl-C nor mpirun's kill reaches it) holds the read end of
 * a pipe whose write end only that first rank has: when the rank ends, in
 * whatever way (normal exit, error, SIGKILL), the pipe closes and the
 * watcher quits the daemon, waits for it to go and removes the
 * directories.  gcsh never touches a daemon it did not start and never
 * changes compute mode or any other GPU setting. */
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
    int mps_private; /* this job's own daemon serves the node's ranks */
    pid_t watcher;   /* the node's first rank: the process that quits it */
    int watcher_fd;  /* the node's first rank: closing it quits the daemon */
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
 * CUDA starts): in a sharing mode, where the machine runs more ranks than
 * it has GPUs and no MPS server answers, its first rank (the launcher's
 * local rank 0) brings up a private daemon in /tmp/gcsh-mps-UID-KEY (KEY
 * from the job's identity) and the others wait for its verdict there;
 * every rank then points CUDA_MPS_PIPE_DIRECTORY at it.  backend is
 * --backend's value (NULL: auto): "host" needs no GPU and no daemon.
 * Never fails the job: a daemon that cannot start is said once on stderr
 * and in share->mps, and the ranks run time-sliced. */
void gcsh_share_prepare(gcsh_share *share, gcsh_share_mode mode, const char *backend);

/* Every rank, after MPI_Init (collective): the machine's ranks as MPI sees
 * them, and the first rank's words for what serves them. */
void gcsh_share_start(gcsh_share *share);

/* Every rank, at the end, after the backend let go of the GPU: the first
 * rank releases the watcher, which quits the daemon once this process (an
 * MPS client) is gone.  Never waits. */
void gcsh_share_stop(gcsh_share *share);

/* The launcher of gcsh -n, before it starts mpirun: a fresh random
 * GCSH_SHARE_KEY, which names the job's folder on every rank. */
void gcsh_share_new_key(void);

/* The launcher of gcsh -n, once mpirun has ended: waits (10 s at most) for
 * the job's folder to go, so that no daemon outlives gcsh. */
void gcsh_share_wait_gone(void);

#endif
