/* The cuda backend's shared pieces: per-rank state, communicator handle, and
 * the check macros every file uses.
 *
 * Threads: the Lua worker thread, not the thread that ran init, makes most
 * calls, and the CUDA current device is per thread; so every entry point
 * starts with cuda_enter(), which selects the rank's device first. */
#ifndef GCSH_CUDA_H
#define GCSH_CUDA_H

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_driver.h"
#include "core/gcsh.h"
#include "core/kpersist.h"
#include "gpu/gpu_net.h"
#include "gpu/gpu_rt.h"
#include "initkern.h"
#include "winkern.h"

/* At most CUDA_THROTTLE_MARKS x CUDA_THROTTLE_EVERY calls of a loop are in
 * flight: past that a call waits (interruptibly) for an older one, so the
 * host never blocks inside a full CUDA launch queue where no interrupt
 * reaches it. */
#define CUDA_THROTTLE_MARKS 4
#define CUDA_THROTTLE_EVERY 128

typedef struct cuda_proxy cuda_proxy; /* cuda_net.c */

/* The GPU-generic code's gcsh_gpu_dev (gpu/gpu_rt.h), defined here as each
 * backend defines its gcsh_comm_impl. */
typedef struct gcsh_gpu_dev {
    int dev;              /* CUDA ordinal of this rank's GPU */
    cudaStream_t stream;  /* every kernel, copy and collective goes here */
    void *scratch;        /* 8 bytes of device memory: the barrier's operand */
    cuda_driver drv;      /* driver entry points, loaded on first use (cuda_driver_load) */
    /* Host-mapped control block of the signal-wait kernels: bumping its
     * cancel generation releases every pending wait (cuda_wait does it on
     * an interrupt); a wait that gives up reports there. */
    gcsh_wait_ctl *wctl;
    unsigned wctl_seen;   /* wctl->gave_up already reported */
    uint64_t wait_bound_ns; /* how long a GPU wait spins before it gives up */
    /* Reading a signal word while the rank's stream is held by a GPU wait:
     * a second non-blocking stream and 8 bytes of pinned memory. */
    cudaStream_t poll_stream;
    uint64_t *poll_buf;
    uint64_t *poll_dev;   /* 8 device bytes: the poll's hop (cuda_copy says why) */
    /* Device bounce buffer for host<->device copies (cuda_copy says why);
     * allocated on first use. */
    void *bounce;
    /* Collectives are stream-ordered (cuda_comm.c): the communicators with
     * work enqueued since the stream was last waited for (an interrupted
     * wait aborts them: nothing else stops a collective whose peer never
     * comes), and how many calls went out since then, for the throttle. */
    struct gcsh_comm_impl **busy;
    int nbusy, cap_busy;
    unsigned enqueued;
    cudaEvent_t throttle[CUDA_THROTTLE_MARKS];
    int throttle_set[CUDA_THROTTLE_MARKS];
    /* --share-gpu (cuda_share.c): who shares this GPU ("no", "cuda:0 with
     * ranks 0-3") and how NCCL tells the ranks apart, for .info. */
    char shared[128];
    char nccl_hosts[128];
    int sharers;          /* the most ranks of this machine on one GPU */
    int job_sharers;      /* ...of any machine of the job (the same on every rank) */
    int one_gpu;          /* ...and that is all of them: a team that reaches
                             by load/store lives on this GPU */
    /* The most blocks a kernel whose blocks wait for other ranks may launch
     * (gcsh_kwait's max_blocks): the GPU's room for them divided among the
     * most ranks that share one GPU of this machine, the same on every rank
     * of it. */
    unsigned paired_max_blocks;
    /* NCCL's symmetric memory on the world communicator (.info): 1 yes,
     * -1 no, 0 not known until comm.world() is made. */
    int world_symmetric;
    /* Tensor memory freed while the stream was being captured into a graph
     * (cudaFreeAsync there would become a node of the graph): released at
     * the next release or allocation after the capture (cuda_mem.c). */
    void **held;
    int nheld, cap_held;
    /* A run of a persistent all-reduce's rings that the capture lost (its
     * go kernel or wait failed, a Lua pcall may have swallowed the error):
     * the capture's end refuses a graph without them (cuda_graph.c). */
    char capture_lost[256];
    /* Persistent all-reduces (cuda_persist.c): the running ones. */
    gcsh_persist_impl *resident;
    /* What the next entry owes the work of a layer above this state (a
     * ring of a persistent all-reduce since the rank's stream last waited
     * for it): cuda_enter runs the hook before anything else, and the hook
     * clears it.  A hook, so that the entry (cuda_util.c) never names the
     * features above it. */
    int (*enter_owed)(gcsh_ctx *ctx, struct gcsh_gpu_dev *st);
    /* Work may have gone onto the rank's stream since it was last seen
     * idle (cuda_enter sets it, a wait or a query that finds the stream
     * idle clears it): a ring stores its entry's last pair from the host,
     * without asking the stream, only while it is clear (cuda_persist.c). */
    int stream_dirty;
    /* Their doorbells (mapped host memory) and sync words (device memory):
     * room for GCSH_PERSIST_MAX_RUNNING, allocated at the first start and
     * freed with the state, because allocating or freeing while a resident
     * runs may wait for it to end (cuda_persist.c). */
    gcsh_persist_bell *bells, *bells_dev;
    char *bell_sync; /* GCSH_PERSIST_SYNC_BYTES a slot */
    /* Each slot's stream, and the event that orders it after the rank's
     * stream at a start, made with the doorbells: a start and a stop make
     * and destroy nothing (each made and destroyed a stream, and a start/
     * stop grew RSS by ~10 KiB a round on GPUs, issue 35). */
    cudaStream_t bell_stream[GCSH_PERSIST_MAX_RUNNING];
    cudaEvent_t bell_event[GCSH_PERSIST_MAX_RUNNING];
    unsigned bells_taken; /* bit i: slot i belongs to a resident */
    /* Whether a split shares its parent's NCCL resources (config.splitShare;
     * cuda_comm.c says what follows), and who decided it, for .info. */
    int split_share;
    char split_share_why[96];
    /* When NCCL connects a communicator's peers, and who decided, for .info
     * (cuda_backend.c's nccl_connect_policy). */
    char connect_how[200];
    /* The network path, once a window spans several nodes: its server and
     * the origin's staging (gpu/gpu_net.h), and the server's proxy (its CUDA
     * resources, cuda_net.c). */
    gcsh_gpu_net net;
    cuda_proxy *proxy;
} cuda_state;

/* Communicators that share NCCL's resources (cuda_state.split_share): the
 * members not destroyed yet, in creation order (cuda_comm.c). */
typedef struct cuda_family {
    struct gcsh_comm_impl *head, *tail;
} cuda_family;

struct gcsh_comm_impl {
    /* Non-blocking (interruptible): creation, splits, windows, device
     * communicators. */
    ncclComm_t comm;
    /* Its blocking twin (ncclCommSplit of comm, every rank, config.blocking
     * = 1), for the collectives: a blocking communicator issues in about a
     * microsecond where a non-blocking one hands every call to a thread of
     * its own (55-250 us per call on H200s).  The world's is made with it;
     * a split's at its first collective of every rank (NULL until then:
     * cuda_comm.c says why); one of one rank has none (one_rank). */
    ncclComm_t coll;
    int busy;             /* in cuda_state.busy */
    /* The same ranks in the same order over MPI: the control exchange
     * (agree) runs on host memory and must not queue behind GPU work. */
    MPI_Comm mpi;
    int rank, size;
    int aborted;          /* after an error or an interrupt: only Abort is left */
    /* NCCL offers symmetric memory on it (windows of kind "nccl"), as
     * NCCL itself answered when it was made (cuda_comm.c). */
    int symmetric;
    /* The persistent all-reduces running over its windows, and what an
     * abort of c runs first (cuda_persist.c registers it with the first:
     * it stops them, as their calls would wait for peers that stopped). */
    gcsh_persist_impl *resident;
    void (*on_abort)(gcsh_comm_impl *c);
    /* With split_share: the communicators whose NCCL resources are one
     * (a world and every split made from it or from its splits).  NCCL
     * gives them one abort flag, so an abort of one is an abort of all;
     * and a communicator is destroyed only after its splits (freed here
     * before them, it is held: released, its NCCL side kept).  NULL
     * without sharing. */
    cuda_family *family;
    gcsh_comm_impl *share_parent;   /* the communicator it was split from */
    gcsh_comm_impl *fam_next, *fam_prev;
    int share_kids;                 /* its splits not destroyed yet */
    int released;                   /* freed by the bindings; held for its splits */
};

/* ---- GPU choice and sharing (cuda_share.c) ---- */

/* This rank's GPU among count: the machine's rank r takes GPU r, or r %
 * count with --share-gpu; more ranks than GPUs without it is an error
 * naming the option. */
int cuda_choose_device(gcsh_ctx *ctx, int count, int *dev);
/* Before NCCL starts, collective over the machine's ranks (dev -1 and st
 * NULL for a rank that failed before, so that no rank waits): who shares
 * which GPU, and each round's NCCL host identity. */
void cuda_share_setup(gcsh_ctx *ctx, int count, int dev, cuda_state *st);
/* Why NCCL gives no symmetric memory to a communicator of comm_size ranks
 * that has none (NCCL does not say; these are its conditions). */
const char *cuda_no_symmetric_reason(const cuda_state *st, int comm_size);
/* .info's sharing fields: gpu_shared, nccl_hosts, mps. */
void cuda_share_info(const gcsh_ctx *ctx, const cuda_state *st, lua_State *L);

/* Records "file:line: call: what" for a failed CUDA / NCCL call; returns -1.
 * A sticky CUDA error (illegal address, launch failure, ...: the context is
 * lost) also sets ctx->fatal, which ends every rank (collcheck.h). */
int cuda_error(gcsh_ctx *ctx, const char *file, int line, const char *call, cudaError_t e);
int nccl_error(gcsh_ctx *ctx, ncclComm_t comm, const char *file, int line, const char *call,
               ncclResult_t r);

/* NCCL's convention: on failure record the error and jump to the function's
 * one cleanup label, `fail`.  Communicators are non-blocking (cuda_comm.c):
 * ncclInProgress is not a failure; cuda_wait / cuda_nccl_settle wait it out. */
#define CUDA_TRY(ctx, call)                                                  \
    do {                                                                     \
        cudaError_t e_ = (call);                                             \
        if (e_ != cudaSuccess) {                                             \
            cuda_error((ctx), __FILE__, __LINE__, #call, e_);                \
            goto fail;                                                       \
        }                                                                    \
    } while (0)

#define NCCL_TRY(ctx, comm, call)                                            \
    do {                                                                     \
        ncclResult_t r_ = (call);                                            \
        if (r_ != ncclSuccess && r_ != ncclInProgress) {                     \
            nccl_error((ctx), (comm), __FILE__, __LINE__, #call, r_);        \
            goto fail;                                                       \
        }                                                                    \
    } while (0)

/* The rank's state with its device made current on the calling thread, or
 * NULL with ctx->err set.  Work enqueued after it runs after the calls of
 * the rank's persistent all-reduces rung so far (st->enter_owed). */
cuda_state *cuda_enter(gcsh_ctx *ctx);
/* cuda_enter for an entry that puts nothing on the rank's stream that a
 * later ring must follow (the stream stays "clean": stream_dirty). */
cuda_state *cuda_enter_clean(gcsh_ctx *ctx);
/* cuda_enter without that order: for the persistent all-reduce's own
 * ring, which needs none (its resident runs the calls in order). */
cuda_state *cuda_enter_device(gcsh_ctx *ctx);

/* ---- the persistent all-reduce (cuda_persist.c) ---- */

/* CUDA loads kernels lazily here (CUDA_MODULE_LOADING set to something
 * other than EAGER by the user; cuda_backend.c sets EAGER otherwise;
 * cuda_util.c answers, below the files that ask). */
int gcsh_cuda_lazy_loading(void);

/* At the end of the state: the doorbells' memory, unless a resident that
 * would not end still holds one (the process's end takes it then). */
void cuda_persist_free_bells(cuda_state *st);
extern const gcsh_persist_ops gcsh_cuda_persist_ops;

/* The network path's target side (cuda_net.c): the runtime's net_server
 * (the proxy applies requests to device memory), and the stop of the
 * server and its proxy, before the device goes. */
int cuda_net_server(gcsh_ctx *ctx, cuda_state *st, gcsh_netpath_server *srv);
void cuda_net_stop(cuda_state *st);

/* Device memory from cudaMallocAsync (tensors, peer tables), freed in
 * stream order (cuda_mem.c); during a capture, after it.  Never cudaFree
 * while the session runs: it waits for every kernel of the GPU (a resident
 * never ends by itself, and under MPS every process's count). */
void cuda_free_ordered(cuda_state *st, void *p);

/* Waits for the rank's stream, polling so that an interrupt from rank 0
 * (ctx->interrupt) or an asynchronous NCCL error ends the wait.  On an
 * interrupt, c (may be NULL) and every communicator with work in flight
 * are aborted (a hung collective cannot be resumed); on an asynchronous
 * error, the communicator that has it. */
int cuda_wait(gcsh_ctx *ctx, cuda_state *st, gcsh_comm_impl *c);
/* Tensor memory comes from the device's default pool, which keeps what is
 * freed for the next allocation (cuda_backend.c); this gives the unused part
 * back to the device (before a window is made, or when an allocation finds
 * the GPU full). */
void cuda_pool_trim(cuda_state *st);
/* A collective on c went out on the stream: c has work in flight; every
 * CUDA_THROTTLE_EVERY calls, a mark, and a wait for the oldest mark.  c
 * may be NULL (work of no communicator: the throttle alone).  Nothing
 * while the stream captures (gcsh.graph): nothing went out. */
int cuda_enqueued(gcsh_ctx *ctx, cuda_state *st, gcsh_comm_impl *c);
/* c has work in flight (an interrupted wait for the stream aborts it),
 * with no throttle and no CUDA call: 0, or -1 with ctx->err. */
int cuda_mark_busy(gcsh_ctx *ctx, cuda_state *st, gcsh_comm_impl *c);
/* Aborts c: both of its NCCL communicators (an abort waits for nobody),
 * and with split_share every communicator of its family (one abort flag). */
void cuda_abort_comm(gcsh_comm_impl *c);
/* c->comm was aborted already (a failed settle does that): abort its twin
 * and mark c aborted (its family too, as cuda_abort_comm). */
void cuda_comm_lost(gcsh_comm_impl *c);
/* Forgets c (released): it has no work in flight any more. */
void cuda_forget_busy(cuda_state *st, gcsh_comm_impl *c);

/* Waits until a non-blocking communicator's pending call (init, split) is
 * done, polling ctx->interrupt; on error or interrupt comm is aborted. */
int cuda_nccl_settle(gcsh_ctx *ctx, ncclComm_t comm, const char *what);

/* One cuDeviceGetAttribute (a query: it changes nothing) through the
 * runtime's entry points; -1 (and *v = 0) when the driver cannot answer. */
int cuda_device_attribute(int dev, CUdevice_attribute attr, int *v);

/* Whether this rank may use NVLS, by the opt-in of src/DESIGN.md (safety
 * rules), in its order: the environment first (GCSH_MULTICAST=1,
 * NCCL_NVLS_ENABLE not 0), then the caller's own refusal (NULL: none), and
 * only when none of these refuse, the device's multicast attribute.  0 with
 * the reasons in why. */
int cuda_nvls_policy(cuda_state *st, const char *refusal, char *why, size_t len);

/* Loads st->drv once; -1 with ctx->err when the driver lacks a call. */
int cuda_driver_load(gcsh_ctx *ctx, cuda_state *st);
int cu_error(gcsh_ctx *ctx, cuda_state *st, const char *file, int line, const char *call,
             CUresult r);

/* Driver calls through st->drv: record "file:line: call: error", goto fail. */
#define CU_TRY(ctx, st, call)                                                \
    do {                                                                     \
        CUresult r_ = (st)->drv.call;                                        \
        if (r_ != CUDA_SUCCESS) {                                            \
            cu_error((ctx), (st), __FILE__, __LINE__, #call, r_);            \
            goto fail;                                                       \
        }                                                                    \
    } while (0)

/* Releases every signal wait pending on the GPU (they end without their
 * condition and report it); used on interrupts. */
void cuda_cancel_waits(cuda_state *st);
/* The generation a wait launched now carries: the current one, or while
 * the stream captures a graph, GCSH_WAIT_GEN_CAPTURED (winkern.h). */
unsigned cuda_wait_gen(const gcsh_ctx *ctx, const cuda_state *st);

/* dtype -> NCCL type (all nine gcsh dtypes map; element bytes: gcsh_dtype_size). */
ncclDataType_t cuda_nccl_type(gcsh_dtype dt);

extern const gcsh_mem_ops gcsh_cuda_mem_ops;
extern const gcsh_comm_ops gcsh_cuda_comm_ops;
extern const gcsh_window_ops gcsh_cuda_window_ops;
extern const gcsh_kernel_ops gcsh_cuda_kernel_ops; /* cuda_kern.c */
extern const gcsh_xfer_ops gcsh_cuda_xfer_ops; /* cuda_xfer.c */
extern const gcsh_graph_ops gcsh_cuda_graph_ops; /* cuda_graph.c */
extern const gcsh_gpu_rt gcsh_cuda_rt; /* cuda_rt.c: the device runtime of src/gpu/ */

/* The device runtime's graph part (cuda_graph.c; gpu_rt.h says what each
 * does). */
int cuda_capture_begin(gcsh_ctx *ctx, cuda_state *st);
int cuda_capture_end(gcsh_ctx *ctx, cuda_state *st, gcsh_gpu_graph **out);
void cuda_capture_abandon(cuda_state *st);
/* Capturing: the graph's waits still owed for rings of the rank's residents
 * (a sequence of rings shares one wait, cuda_persist.c), before the capture
 * ends; and, once it ended or was abandoned, none owed. */
int cuda_persist_capture_flush(gcsh_ctx *ctx, cuda_state *st);
void cuda_persist_capture_over(cuda_state *st);
int cuda_graph_launch(gcsh_ctx *ctx, cuda_state *st, gcsh_gpu_graph *g);
void cuda_graph_free(cuda_state *st, gcsh_gpu_graph *g);

/* The device runtime's transfer part (cuda_xfer.c). */
int cuda_xfer_prepare(gcsh_ctx *ctx, cuda_state *st, gcsh_xfer_impl *x);
void cuda_xfer_free(cuda_state *st, gcsh_gpu_xfer *own);
int cuda_xfer_post(gcsh_ctx *ctx, cuda_state *st, gcsh_xfer_impl *x);
void cuda_xfer_query(gcsh_ctx *ctx, gcsh_xfer_impl *x, enum gcsh_xfer_status *status);
int cuda_xfer_wait_stream(gcsh_ctx *ctx, cuda_state *st, gcsh_xfer_impl *x);
int cuda_fence(gcsh_ctx *ctx, cuda_state *st);

#endif
