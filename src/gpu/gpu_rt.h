/* The device runtime: what the GPU-generic code of src/gpu/ asks of a GPU
 * backend, one table of function pointers (cuda: cuda/cuda_rt.c fills it
 * with CUDA runtime, driver and NCCL calls).  The generic code keeps the
 * bookkeeping that any GPU backend needs (windows across kinds, signals and
 * their waits, the multicast agreement) and calls the device only through
 * this table, so a second GPU backend adds its own table and kinds, not a
 * copy of the bookkeeping.
 *
 * The types below are the backend's, opaque here, as gcsh_comm_impl is in
 * core/backend.h: each GPU backend defines struct gcsh_gpu_dev (its per-rank
 * state: cuda's cuda_state), struct gcsh_gpu_win (a window's handles of
 * its kinds), struct gcsh_gpu_graph (a captured graph, launchable) and
 * struct gcsh_gpu_xfer (a transfer's engine state). */
#ifndef GCSH_GPU_RT_H
#define GCSH_GPU_RT_H

#include <stddef.h>
#include <stdint.h>

#include "core/backend.h"
#include "core/gcsh.h"
#include "core/netpath.h"

typedef struct gcsh_gpu_dev gcsh_gpu_dev;
typedef struct gcsh_gpu_win gcsh_gpu_win;
typedef struct gcsh_gpu_graph gcsh_gpu_graph;
typedef struct gcsh_gpu_xfer gcsh_gpu_xfer;
typedef struct gpu_win_kind gpu_win_kind;
typedef struct gcsh_gpu_net gcsh_gpu_net; /* gpu_net.h */

typedef struct gcsh_gpu_rt {
    /* ---- the rank's device ---- */
    /* The rank's state with its device current on the calling thread, or
     * NULL with ctx->err set (the backend's entry: cuda_enter). */
    gcsh_gpu_dev *(*enter)(gcsh_ctx *ctx);
    /* The same for what queues no work (a capture's end or abandon, a
     * graph's release): the device current, no wait the stream owes made
     * (cuda_enter_device); a capture's end makes its own (cuda_graph.c). */
    gcsh_gpu_dev *(*enter_device)(gcsh_ctx *ctx);
    /* Where its memory lives: a window's d->loc. */
    int (*location)(const gcsh_gpu_dev *st);
    /* The device's whole memory (bytes). */
    int (*mem_total)(gcsh_ctx *ctx, gcsh_gpu_dev *st, size_t *total);
    /* Gives what the tensor pool keeps cached back to the device. */
    void (*pool_trim)(gcsh_gpu_dev *st);
    /* Frees device memory in the order of the rank's stream. */
    void (*free_ordered)(gcsh_gpu_dev *st, void *p);
    /* Waits for the rank's stream, interruptibly. */
    int (*wait)(gcsh_ctx *ctx, gcsh_gpu_dev *st);
    /* Reads bytes (<= 8) of device memory at p now, off the rank's stream
     * (which a GPU wait may hold), into the first bytes of *bits. */
    int (*peek)(gcsh_ctx *ctx, gcsh_gpu_dev *st, const void *p, size_t bytes, uint64_t *bits);
    /* The backend's copies (stream-ordered, any direction). */
    const gcsh_mem_ops *mem;

    /* ---- signal words and peer loads, as kernels on the rank's stream ---- */
    int (*signal_store)(gcsh_ctx *ctx, gcsh_gpu_dev *st, uint64_t *word, uint64_t v, int add);
    /* The old value to the host (the call waits for it). */
    int (*signal_fetch_add)(gcsh_ctx *ctx, gcsh_gpu_dev *st, uint64_t *word, uint64_t v,
                            int loc, uint64_t *old);
    /* Stream-ordered wait, bounded and released by an interrupt. */
    int (*signal_wait)(gcsh_ctx *ctx, gcsh_gpu_dev *st, uint64_t *word, uint64_t v,
                       enum gcsh_cmp cmp);
    /* bytes of member peer's slice at offset, through the device peer table. */
    int (*peer_copy)(gcsh_ctx *ctx, gcsh_gpu_dev *st, void *dst, void *table_dev, int peer,
                     size_t offset, size_t bytes);

    /* ---- communicators ---- */
    const gcsh_comm_ops *comm;    /* agree, for the generic code's exchanges */
    void (*comm_place)(const gcsh_comm_impl *c, int *rank, int *size);
    int (*comm_aborted)(const gcsh_comm_impl *c);

    /* ---- windows ---- */
    /* Its kinds in order of preference (window_ops.kinds), ending in NULL. */
    const gpu_win_kind *const *kinds;
    /* A window's backend part, set to "holds nothing"; NULL when out of
     * memory.  win_free frees the part itself (what it held is undone by the
     * kind first). */
    gcsh_gpu_win *(*win_new)(void);
    void (*win_free)(gcsh_gpu_win *own);

    /* ---- multicast (gpu_mcast.c decides, every rank alike) ---- */
    /* This rank's verdict for w: 1 when NVLS may be used, else 0 with the
     * reasons in why (local: no collective, no set-up). */
    int (*mc_allowed)(gcsh_gpu_dev *st, const gcsh_window_impl *w, char *why, size_t len);
    /* Collective, once every rank allowed it: the multicast address of w
     * into out->base and what it is into out->why; 0, or -1 with ctx->err
     * (every rank then learns of it). */
    int (*mc_open)(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_window_impl *w, gcsh_mcast *out);
    /* Collective, before a window's own teardown: frees what mc_open set
     * up (none: 0). */
    int (*mc_close)(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_window_impl *w);

    /* ---- graphs (gpu_graph.c keeps the record and replays) ---- */
    /* The rank's stream starts capturing (nothing runs). */
    int (*capture_begin)(gcsh_ctx *ctx, gcsh_gpu_dev *st);
    /* The capture ends as a launchable graph, *out; or -1 with ctx->err and
     * nothing kept. */
    int (*capture_end)(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_gpu_graph **out);
    /* The capture ends with nothing kept, and no error left behind. */
    void (*capture_abandon)(gcsh_gpu_dev *st);
    /* One replay of g on the rank's stream. */
    int (*graph_launch)(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_gpu_graph *g);
    /* Frees g, also while replays are in flight; st NULL (the device is
     * gone): its host memory only. */
    void (*graph_free)(gcsh_gpu_dev *st, gcsh_gpu_graph *g);
    /* Work of communicator c (NULL: of none) went onto the rank's stream:
     * c has work in flight, and the throttle may wait (cuda_enqueued). */
    int (*enqueued)(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_comm_impl *c);

    /* ---- one-sided transfers (gpu_xfer.c keeps the segments and waits) ---- */
    /* x's engine state into x->own (x's segments, engine and signal are
     * set); on failure, what it made is in x->own for xfer_free. */
    int (*xfer_prepare)(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_xfer_impl *x);
    /* Frees it in the stream's order: a post in flight keeps what it reads. */
    void (*xfer_free)(gcsh_gpu_dev *st, gcsh_gpu_xfer *own);
    /* Enqueues x's copies and signal on the rank's stream, and its mark. */
    int (*xfer_post)(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_xfer_impl *x);
    /* The last post's status, now (GCSH_XFER_ERROR with ctx->err). */
    void (*xfer_query)(gcsh_ctx *ctx, gcsh_xfer_impl *x, enum gcsh_xfer_status *status);
    /* Work queued on the rank's stream after this runs after x's last post. */
    int (*xfer_wait_stream)(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_xfer_impl *x);
    /* A system-scope fence on the rank's stream (w:fence()). */
    int (*fence)(gcsh_ctx *ctx, gcsh_gpu_dev *st);
    /* Releases every signal wait pending on the GPU (an interrupt). */
    void (*cancel_waits)(gcsh_gpu_dev *st);

    /* ---- the network path (gpu_net.c: ranks of a window on other nodes) ---- */
    /* The MPI communicator under c (the exchange of the servers' addresses). */
    MPI_Comm (*comm_mpi)(const gcsh_comm_impl *c);
    /* The rank's network path, kept in its state (and stopped with it). */
    gcsh_gpu_net *(*net)(gcsh_gpu_dev *st);
    /* How this rank's server applies a request to its device memory (cuda:
     * a proxy thread with a stream of its own, cuda_net.c): *srv filled; 0,
     * or -1 with ctx->err. */
    int (*net_server)(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_netpath_server *srv);
} gcsh_gpu_rt;

/* The GPU backend in use names its runtime at init, before anything of
 * src/gpu/ runs (one GPU backend a process). */
void gcsh_gpu_use(const gcsh_gpu_rt *rt);
const gcsh_gpu_rt *gcsh_gpu(void);

/* Spins for the first polls of a wait, yields for the next thousands, then
 * sleeps 20 us between polls (gpu_rt.c says why). */
void gcsh_gpu_poll_pause(unsigned polls);

#endif
