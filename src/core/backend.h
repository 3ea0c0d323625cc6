/* The backend interface: everything the repl, the control plane and the Lua
 * bindings need from CPUs or GPUs goes through one of these tables.  Bindings
 * never call MPI collectives, CUDA or NCCL themselves.
 *
 * Conventions for every function pointer:
 *   - return 0 on success; on failure return -1 and write a one-line message
 *     into ctx->err (gcsh_set_error), which the binding raises as a Lua error;
 *   - arguments have already been validated by the binding (ranges, dtypes,
 *     sizes): a backend may assume them and must not re-check user input;
 *   - "mem" pointers are in the backend's own memory space (host memory for the
 *     host backend, device memory for cuda); gcsh_loc says which.
 */
#ifndef GCSH_BACKEND_H
#define GCSH_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/hd.h"
#include "core/kreduce.h"
#include "core/kplan.h"
#include "core/pp.h"

typedef struct gcsh_ctx gcsh_ctx;

/* Where a buffer lives: GCSH_LOC_HOST, or a CUDA device ordinal (>= 0). */
#define GCSH_LOC_HOST (-1)

/* An opaque per-backend communicator (MPI_Comm for host, ncclComm_t for cuda). */
typedef struct gcsh_comm_impl gcsh_comm_impl;

/* ---- the one list of operations ---------------------------------------------
 *
 * Every function a backend provides is one row of a list below (one list a
 * table), and everything else is made from the rows: the tables' structs
 * (GCSH_OP_FIELD), the tracer's wrappers (trace/trace_wrap.c), graph capture
 * (core/graph.c) and the host's ordering around persistent all-reduces
 * (host/host_order.c).  A new operation is a row here and a function in each
 * backend; the layers follow.  A row:
 *
 *   X(table, fn, returns, (parameters), (arguments), trace, category, flags,
 *     capture, order, (facts))
 *
 *   trace     TRACED: the tracer records each call (the flight recorder, and a
 *             span while .trace is on) under category ("collective"), with
 *             flags GPU (enqueues GPU work), SYNC (waits for the rank's
 *             stream), MEM (a memory call); QUIET: shared unwrapped (no work,
 *             or polling that would flood the record).
 *   capture   what gcsh.graph does with a call while it captures: RECORD (kept
 *             in the graph, passed down where the backend captures), REFUSE
 *             (it must reach the host now: the capture is abandoned, naming
 *             it; graph.c says what and why), DEFER (a release: done when the
 *             capture ends), SHARE (called as it is).
 *   order     ORDERED: on host, waits first for the calls rung on persistent
 *             all-reduces (it touches memory they may write); FREELY: not.
 *   facts     what a call does, for the layers to read: ELEMS(n, dt) elements
 *             moved, BYTES(b), REDOP(op), PEER(rank) its root or peer,
 *             OBJ(id) the window it works on, PLAN(p) a kernel collective's
 *             plan, LOCS(dst, src) where a copy's ends live, SIGNAL(d, peer,
 *             slot, v) and WAIT(d, slot, v, cmp) a signal word, SEEN(w, d,
 *             slot) the word a wait left (read when it returns), REGION(first)
 *             the first element of the region it works on, COUNT(n),
 *             KEPT(p) a pointer to arguments a recording must copy, XFER_NEW,
 *             XFER_POST, XFER_WAIT, XFER_GONE a transfer's life; NOTHING. */
#define GCSH_OP_FIELD(tab, fn, ret, params, ...) ret(*fn) params;

#define GCSH_MEM_OPS(X)                                                                            \
    /* Memory for tensor.new: host memory or device memory. */                                     \
    X(mem, alloc, int, (gcsh_ctx *ctx, size_t bytes, void **out, int *loc),                        \
      (ctx, bytes, out, loc),                                                                      \
      TRACED, "memory", MEM, REFUSE, FREELY, (BYTES(bytes)))                                       \
    X(mem, release, void, (gcsh_ctx *ctx, void *p, int loc),                                       \
      (ctx, p, loc),                                                                               \
      TRACED, "memory", MEM, DEFER, FREELY, (NOTHING))                                             \
    /* Copies between any two locations (host<->device, device<->device). */                       \
    X(mem, copy, int, (gcsh_ctx *ctx, void *dst, int dst_loc, const void *src, int src_loc,        \
       size_t bytes),                                                                              \
      (ctx, dst, dst_loc, src, src_loc, bytes),                                                    \
      TRACED, "memory", GPU | MEM, RECORD, ORDERED, (BYTES(bytes), LOCS(dst_loc, src_loc)))        \
    /* Element-wise initialisers, run where the memory lives. */                                   \
    X(mem, fill, int, (gcsh_ctx *ctx, void *p, int loc, gcsh_dtype dt, size_t n, gcsh_scalar v),   \
      (ctx, p, loc, dt, n, v),                                                                     \
      TRACED, "memory", GPU | MEM, RECORD, ORDERED, (ELEMS(n, dt)))                                \
    X(mem, arange, int, (gcsh_ctx *ctx, void *p, int loc, gcsh_dtype dt, size_t n,                 \
       gcsh_scalar start, gcsh_scalar step),                                                       \
      (ctx, p, loc, dt, n, start, step),                                                           \
      TRACED, "memory", GPU | MEM, RECORD, ORDERED, (ELEMS(n, dt)))                                \
    /* Counter-based: element i depends only on (seed, i), so results are the                      \
     * same on every backend and for every view offset. */                                         \
    X(mem, rand, int, (gcsh_ctx *ctx, void *p, int loc, gcsh_dtype dt, size_t n, uint64_t seed),   \
      (ctx, p, loc, dt, n, seed),                                                                  \
      TRACED, "memory", GPU | MEM, RECORD, ORDERED, (ELEMS(n, dt)))                                \
    /* Waits until every operation queued on this rank's stream is finished. */                    \
    X(mem, sync, int, (gcsh_ctx *ctx),                                                             \
      (ctx),                                                                                       \
      TRACED, "memory", GPU | SYNC | MEM, REFUSE, ORDERED, (NOTHING))                              \
    /* Timing for bench: timer_begin marks now on the rank's stream (a CUDA                        \
     * event on cuda, the wall clock on host); timer_end marks again, waits for                    \
     * that mark and gives the seconds between the two.  The token belongs to                      \
     * the backend from begin until end, which frees it. */                                        \
    X(mem, timer_begin, int, (gcsh_ctx *ctx, void **tok),                                          \
      (ctx, tok),                                                                                  \
      QUIET, "", 0, REFUSE, ORDERED, (NOTHING))                                                    \
    X(mem, timer_end, int, (gcsh_ctx *ctx, void *tok, double *seconds),                            \
      (ctx, tok, seconds),                                                                         \
      QUIET, "", 0, REFUSE, ORDERED, (NOTHING))                                                    \
    /* Optional (NULL where work runs on the calling thread, as on host):                          \
     * marks for traces (trace.h), which time the GPU's side of calls that                         \
     * return once enqueued.  mark records a point on the rank's stream and                        \
     * returns at once; mark_seconds gives the seconds from mark a to mark b                       \
     * without waiting: 0, 1 while b has not passed yet, -1 on error (never                        \
     * touches ctx->err: the rank's watcher thread reads marks during a                            \
     * hang); mark_free releases one. */                                                           \
    X(mem, mark, int, (gcsh_ctx *ctx, void **tok),                                                 \
      (ctx, tok),                                                                                  \
      QUIET, "", 0, SHARE, FREELY, (NOTHING))                                                      \
    X(mem, mark_seconds, int, (gcsh_ctx *ctx, void *a, void *b, double *seconds),                  \
      (ctx, a, b, seconds),                                                                        \
      QUIET, "", 0, SHARE, FREELY, (NOTHING))                                                      \
    X(mem, mark_free, void, (gcsh_ctx *ctx, void *tok),                                            \
      (ctx, tok),                                                                                  \
      QUIET, "", 0, SHARE, FREELY, (NOTHING))

typedef struct gcsh_mem_ops {
    GCSH_MEM_OPS(GCSH_OP_FIELD)
} gcsh_mem_ops;

#define GCSH_COMM_OPS(X)                                                                           \
    X(comm, world, int, (gcsh_ctx *ctx, gcsh_comm_impl **out),                                     \
      (ctx, out),                                                                                  \
      TRACED, "communicator", 0, REFUSE, FREELY, (NOTHING))                                        \
    X(comm, split, int, (gcsh_ctx *ctx, gcsh_comm_impl *parent, int color, int key,                \
       gcsh_comm_impl **out),                                                                      \
      (ctx, parent, color, key, out),                                                              \
      TRACED, "communicator", 0, REFUSE, FREELY, (NOTHING))                                        \
    X(comm, release, void, (gcsh_ctx *ctx, gcsh_comm_impl *c),                                     \
      (ctx, c),                                                                                    \
      TRACED, "communicator", 0, DEFER, FREELY, (NOTHING))                                         \
    X(comm, rank, int, (gcsh_comm_impl *c),                                                        \
      (c),                                                                                         \
      QUIET, "", 0, SHARE, FREELY, (NOTHING))                                                      \
    X(comm, size, int, (gcsh_comm_impl *c),                                                        \
      (c),                                                                                         \
      QUIET, "", 0, SHARE, FREELY, (NOTHING))                                                      \
    /* Whether this backend can reduce dt with op (NCCL's list, MPI's list). */                    \
    X(comm, can_reduce, int, (gcsh_dtype dt, gcsh_redop op),                                       \
      (dt, op),                                                                                    \
      QUIET, "", 0, SHARE, FREELY, (NOTHING))                                                      \
    X(comm, barrier, int, (gcsh_ctx *ctx, gcsh_comm_impl *c),                                      \
      (ctx, c),                                                                                    \
      TRACED, "collective", GPU, REFUSE, ORDERED, (NOTHING))                                       \
    X(comm, allreduce, int, (gcsh_ctx *ctx, gcsh_comm_impl *c, const void *in, void *out,          \
       size_t count, gcsh_dtype dt, gcsh_redop op),                                                \
      (ctx, c, in, out, count, dt, op),                                                            \
      TRACED, "collective", GPU, RECORD, ORDERED, (ELEMS(count, dt), REDOP(op)))                   \
    X(comm, broadcast, int, (gcsh_ctx *ctx, gcsh_comm_impl *c, void *buf, size_t count,            \
       gcsh_dtype dt, int root),                                                                   \
      (ctx, c, buf, count, dt, root),                                                              \
      TRACED, "collective", GPU, RECORD, ORDERED, (ELEMS(count, dt), PEER(root)))                  \
    X(comm, reduce, int, (gcsh_ctx *ctx, gcsh_comm_impl *c, const void *in, void *out,             \
       size_t count, gcsh_dtype dt, gcsh_redop op, int root),                                      \
      (ctx, c, in, out, count, dt, op, root),                                                      \
      TRACED, "collective", GPU, RECORD, ORDERED, (ELEMS(count, dt), REDOP(op), PEER(root)))       \
    /* Inclusive prefix reduction (MPI_Scan): out on rank r = the op over the                    \
     * inputs of ranks 0..r.  Every op but avg (the binding refuses it). */                        \
    X(comm, scan, int, (gcsh_ctx *ctx, gcsh_comm_impl *c, const void *in, void *out,               \
       size_t count, gcsh_dtype dt, gcsh_redop op),                                                \
      (ctx, c, in, out, count, dt, op),                                                            \
      TRACED, "collective", GPU, RECORD, ORDERED, (ELEMS(count, dt), REDOP(op)))                   \
    /* count = elements per rank (input size) */                                                   \
    X(comm, allgather, int, (gcsh_ctx *ctx, gcsh_comm_impl *c, const void *in, void *out,          \
       size_t count, gcsh_dtype dt),                                                               \
      (ctx, c, in, out, count, dt),                                                                \
      TRACED, "collective", GPU, RECORD, ORDERED, (ELEMS(count, dt)))                              \
    /* count = elements per rank (output size) */                                                  \
    X(comm, reducescatter, int, (gcsh_ctx *ctx, gcsh_comm_impl *c, const void *in, void *out,      \
       size_t count, gcsh_dtype dt, gcsh_redop op),                                                \
      (ctx, c, in, out, count, dt, op),                                                            \
      TRACED, "collective", GPU, RECORD, ORDERED, (ELEMS(count, dt), REDOP(op)))                   \
    /* count = elements sent to each peer */                                                       \
    X(comm, alltoall, int, (gcsh_ctx *ctx, gcsh_comm_impl *c, const void *in, void *out,           \
       size_t count, gcsh_dtype dt),                                                               \
      (ctx, c, in, out, count, dt),                                                                \
      TRACED, "collective", GPU, RECORD, ORDERED, (ELEMS(count, dt)))                              \
    X(comm, send, int, (gcsh_ctx *ctx, gcsh_comm_impl *c, const void *buf, size_t count,           \
       gcsh_dtype dt, int peer),                                                                   \
      (ctx, c, buf, count, dt, peer),                                                              \
      TRACED, "p2p", GPU, RECORD, ORDERED, (ELEMS(count, dt), PEER(peer)))                         \
    X(comm, recv, int, (gcsh_ctx *ctx, gcsh_comm_impl *c, void *buf, size_t count, gcsh_dtype dt,  \
       int peer),                                                                                  \
      (ctx, c, buf, count, dt, peer),                                                              \
      TRACED, "p2p", GPU, RECORD, ORDERED, (ELEMS(count, dt), PEER(peer)))                         \
    /* The control exchange: every rank of c contributes `bytes` of host                           \
     * memory and gets everyone's, in rank order (all = size * bytes).  Used                       \
     * to agree on arguments before registering memory (and for collective                         \
     * fingerprints), so it works on host memory on every backend, waits                           \
     * interruptibly, and never touches the GPU. */                                                \
    X(comm, agree, int, (gcsh_ctx *ctx, gcsh_comm_impl *c, const void *mine, void *all,            \
       size_t bytes),                                                                              \
      (ctx, c, mine, all, bytes),                                                                  \
      TRACED, "control", 0, REFUSE, FREELY, (BYTES(bytes)))                                        \
    /* The same exchange, not interruptible: for ranks that are already inside                     \
     * one sequence of steps together (a window's staged registration past its                     \
     * check), where every member is known to come and one rank leaving on an                      \
     * interrupt would strand the others in the next step.  It works on a                          \
     * communicator whose collectives were aborted meanwhile (cuda: the MPI                        \
     * twin; host: the broken mark only stops gcsh's own waits). */                                \
    X(comm, agree_blocking, int, (gcsh_ctx *ctx, gcsh_comm_impl *c, const void *mine, void *all,   \
       size_t bytes),                                                                              \
      (ctx, c, mine, all, bytes),                                                                  \
      TRACED, "control", 0, REFUSE, FREELY, (BYTES(bytes)))                                        \
    /* Abandons c on this rank without waiting for anyone (an interrupt or                         \
     * .abort on some rank): afterwards only release may be called, and it                         \
     * must not block (host: leak the MPI communicator; cuda: ncclCommAbort). */                   \
    X(comm, abort, void, (gcsh_ctx *ctx, gcsh_comm_impl *c),                                       \
      (ctx, c),                                                                                    \
      TRACED, "communicator", 0, SHARE, FREELY, (NOTHING))                                         \
    /* Whether the backend gave c up by itself (an interrupted wait, an                            \
     * asynchronous NCCL error). */                                                                \
    X(comm, aborted, int, (gcsh_comm_impl *c),                                                     \
      (c),                                                                                         \
      QUIET, "", 0, SHARE, FREELY, (NOTHING))

typedef struct gcsh_comm_ops {
    GCSH_COMM_OPS(GCSH_OP_FIELD)
} gcsh_comm_ops;

/* ---- symmetric memory windows and signals --------------------------------
 *
 * Every window, on every backend, resolves to a peer pointer table: one base
 * address per member of the window's team (the ranks that can load and store
 * each other's memory: the node for host and vmm, NCCL's LSA team for nccl),
 * valid in this process, plus a size.  Kernels take that table and do not care
 * how the memory was registered. */
typedef struct gcsh_window_impl gcsh_window_impl;

/* The stages of a kind's registration: what step.window steps through. */
typedef struct gcsh_window_plan {
    int n;                    /* stages */
    const char *const *name;  /* [n]: short names ("segment", "peers") */
} gcsh_window_plan;

/* desc.abort_unmaps of kind nccl, on cuda and in the host's emulation. */
#define GCSH_NCCL_ABORT_UNMAPS                                                                     \
    "kind nccl's slices are NCCL's LSA mappings, which the abort unmapped (kind vmm's stay "       \
    "readable)"

typedef struct gcsh_window_desc {
    size_t bytes;         /* requested per rank */
    size_t granularity;   /* the kind's allocation granularity */
    size_t alloc_bytes;   /* bytes rounded up to granularity: what each rank has */
    int loc;              /* where the memory lives: GCSH_LOC_HOST or a device */
    int team_size;        /* members that reach each other by load/store */
    int team_rank;        /* this rank's index in the team */
    int *team;            /* [team_size]: each member's rank in the communicator */
    void **peer;          /* [team_size]: each member's slice, mapped here */
    void *peer_table_dev; /* device copy of peer[] for kernels, then of team[] (cuda:
                           * gcsh_window_team_dev), else NULL */
    char handle[192];     /* the backend's handles, for w:info() */
    /* NULL when the slices stay mapped after an abort of the communicator
     * (the backend's own mappings: they are read-only evidence until
     * freed); else why they do not, a phrase set by the backend (cuda kind
     * nccl: NCCL's LSA mappings go with ncclCommAbort), and nothing of the
     * window may be read once the communicator is aborted. */
    const char *abort_unmaps;
    /* Set by the binding once every rank agreed on the window: an id equal
     * on every member (its communicator's and its sequence number), by
     * which traces link a signal set or add to the wait it releases. */
    uint64_t trace_id;
} gcsh_window_desc;

/* The device copy of d->team (each member's rank in the communicator) that
 * follows the peer table on cuda, for kernels to name ranks in hang
 * reports; NULL without a device peer table. */
static inline const int *gcsh_window_team_dev(const gcsh_window_desc *d)
{
    return d->peer_table_dev ? (const int *)((void *const *)d->peer_table_dev + d->team_size)
                             : NULL;
}

/* For stage reports: where the team's slices sit as this process sees them,
 * relative to member 0's ("member i at member 0's + i x 8 KiB" when evenly
 * spaced, which is the same text in every process, so it folds). */
void gcsh_window_layout_text(const gcsh_window_desc *d, char *buf, size_t len);

enum gcsh_cmp { GCSH_CMP_GE, GCSH_CMP_GT, GCSH_CMP_EQ, GCSH_CMP_NE, GCSH_CMP_LE, GCSH_CMP_LT };

/* Whether `x cmp v` holds: the one definition of a signal wait's condition,
 * for the host backend, the cuda backend's peek and the GPU wait kernels. */
static inline GCSH_HD int gcsh_cmp_holds(uint64_t x, enum gcsh_cmp cmp, uint64_t v)
{
    switch (cmp) {
    case GCSH_CMP_GE: return x >= v;
    case GCSH_CMP_GT: return x > v;
    case GCSH_CMP_EQ: return x == v;
    case GCSH_CMP_NE: return x != v;
    case GCSH_CMP_LE: return x <= v;
    case GCSH_CMP_LT: return x < v;
    }
    return 0;
}

/* Whether the element of dt whose bits start at elem compares true against
 * v: the one definition of t:wait's condition (host waits, cuda's poll).
 * Integer dtypes compare as integers, exactly (v.i; the binding checked
 * that v is an integer the dtype holds); float dtypes compare the element
 * widened to a double with v as a double (a NaN is only ~= anything). */
int gcsh_elem_holds(const void *elem, gcsh_dtype dt, enum gcsh_cmp cmp, gcsh_scalar v);

/* One-sided operations over the network path (gcsh_window_ops.net). */
enum gcsh_net_op { GCSH_NET_PUT, GCSH_NET_GET, GCSH_NET_SET, GCSH_NET_ADD, GCSH_NET_FETCH_ADD };

#define GCSH_WINDOW_OPS(X)                                                                         \
    /* Optional (NULL: every kind works everywhere): whether kind works on                         \
     * communicator c, as the library behind it reports for c (local, the                          \
     * same on every rank of c).  0, or -1 with the reason in why, which                           \
     * names the kind that works instead. */                                                       \
    X(win, kind_usable, int, (gcsh_ctx *ctx, gcsh_comm_impl *c, const char *kind, char *why,       \
       size_t len),                                                                                \
      (ctx, c, kind, why, len),                                                                    \
      QUIET, "", 0, SHARE, FREELY, (NOTHING))                                                      \
    /* The allocation granularity of kind (no allocation; equal on every rank). */                 \
    X(win, granularity, int, (gcsh_ctx *ctx, const char *kind, size_t *gran),                      \
      (ctx, kind, gran),                                                                           \
      QUIET, "", 0, SHARE, FREELY, (NOTHING))                                                      \
    /* Optional (NULL: no bound beyond the binding's element limit): the most                      \
     * bytes one rank's slice of kind may have here (no allocation, local).                        \
     * The binding refuses larger windows on every rank before create, so an                       \
     * absurd size is a clean error, never an allocation failure part-way                          \
     * through a collective. */                                                                    \
    X(win, max_bytes, int, (gcsh_ctx *ctx, const char *kind, size_t *max),                         \
      (ctx, kind, max),                                                                            \
      QUIET, "", 0, SHARE, FREELY, (NOTHING))                                                      \
    /* Staged creation (winbuild.h runs it; c:window() runs every stage back                       \
     * to back, step.window one per step).  The stages of kind, in order: */                       \
    X(win, create_plan, const gcsh_window_plan *, (const char *kind),                              \
      (kind),                                                                                      \
      QUIET, "", 0, SHARE, FREELY, (NOTHING))                                                      \
    /* Local: the window object, nothing registered yet (host memory only;                         \
     * the binding has set desc's bytes, granularity and alloc_bytes, and                          \
     * the ranks agree on them before the first stage). */                                         \
    X(win, create_begin, int, (gcsh_ctx *ctx, gcsh_comm_impl *c, const char *kind,                 \
       gcsh_window_desc *desc, gcsh_window_impl **out),                                            \
      (ctx, c, kind, desc, out),                                                                   \
      TRACED, "window", 0, REFUSE, FREELY, (BYTES(desc->alloc_bytes)))                             \
    /* Runs stage i (0, 1, ... in order) on this rank and says in report                           \
     * what it did (short lines, '\n' between them).  Not a status exchange                        \
     * of its own: the caller exchanges every rank's outcome after each stage                      \
     * (agree_blocking), so stage i may rely on every rank having finished                         \
     * stage i - 1, and a stage may call collectives the others also call in                       \
     * that stage.  After the last stage desc is filled and the window works. */                   \
    X(win, create_stage, int, (gcsh_ctx *ctx, gcsh_window_impl *w, gcsh_window_desc *desc, int i,  \
       char *report, size_t len),                                                                  \
      (ctx, w, desc, i, report, len),                                                              \
      TRACED, "window", 0, REFUSE, FREELY, (BYTES(desc->alloc_bytes)))                             \
    /* Undoes whatever the stages did (any number of them, the last perhaps                        \
     * half done on this rank), frees w and desc's arrays.  Every rank calls                       \
     * it at the same point (after an agreed failure, a checked reset, or at                       \
     * exit), so it may call collectives, except when c was aborted: then it                       \
     * is local and never waits.  With no stage run it is local. */                                \
    X(win, create_abort, void, (gcsh_ctx *ctx, gcsh_window_impl *w, gcsh_window_desc *desc),       \
      (ctx, w, desc),                                                                              \
      TRACED, "window", 0, SHARE, FREELY, (BYTES(desc->alloc_bytes)))                              \
    /* Collective: deregisters and frees (the binding has put a barrier before                     \
     * it, so no peer still reads), and frees desc's arrays. */                                    \
    X(win, destroy, int, (gcsh_ctx *ctx, gcsh_window_impl *w, gcsh_window_desc *desc),             \
      (ctx, w, desc),                                                                              \
      TRACED, "window", 0, REFUSE, FREELY, (BYTES(desc->alloc_bytes), OBJ(desc->trace_id)))        \
    /* Signals are 64-bit words in a window; slots and peers (team indices)                        \
     * are checked by the binding.  set/add store to a peer's word with                            \
     * release ordering (data written before is visible to a waiter that                           \
     * sees the value).  On cuda they are stream-ordered. */                                       \
    X(win, signal_set, int, (gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,        \
       int peer, size_t slot, uint64_t v),                                                         \
      (ctx, w, d, peer, slot, v),                                                                  \
      TRACED, "signal", GPU, RECORD, ORDERED, (SIGNAL(d, peer, slot, v)))                          \
    X(win, signal_add, int, (gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,        \
       int peer, size_t slot, uint64_t v),                                                         \
      (ctx, w, d, peer, slot, v),                                                                  \
      TRACED, "signal", GPU, RECORD, ORDERED, (SIGNAL(d, peer, slot, v)))                          \
    /* add that returns the word's value before it (*old), acquire and                             \
     * release: after everything the rank queued (cuda: the stream is                              \
     * waited for), so the value is there when it returns. */                                      \
    X(win, signal_fetch_add, int, (gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,  \
       int peer, size_t slot, uint64_t v, uint64_t *old),                                          \
      (ctx, w, d, peer, slot, v, old),                                                             \
      TRACED, "signal", GPU, REFUSE, ORDERED, (SIGNAL(d, peer, slot, v)))                          \
    /* Waits until my word `slot` compares true against v, with acquire                            \
     * ordering.  Stream-ordered on cuda: it returns at once and the stream                        \
     * waits.  The host backend waits here, polling ctx->interrupt. */                             \
    X(win, signal_wait, int, (gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,       \
       size_t slot, uint64_t v, enum gcsh_cmp cmp),                                                \
      (ctx, w, d, slot, v, cmp),                                                                   \
      TRACED, "signal", GPU, RECORD, ORDERED, (WAIT(d, slot, v, cmp), SEEN(w, d, slot)))           \
    /* Waits on the CPU, at most timeout seconds: returns 0 when satisfied,                        \
     * 1 when the time ran out, -1 on error (interrupt included). */                               \
    X(win, signal_wait_cpu, int, (gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,   \
       size_t slot, uint64_t v, enum gcsh_cmp cmp, double timeout),                                \
      (ctx, w, d, slot, v, cmp, timeout),                                                          \
      TRACED, "signal", 0, REFUSE, ORDERED, (WAIT(d, slot, v, cmp), SEEN(w, d, slot)))             \
    /* t:wait: the CPU waits until the element of dt at byte offset of team                        \
     * member `member`'s slice compares true against v (gcsh_elem_holds),                          \
     * loading it with acquire ordering (data its writer released before                           \
     * is visible after); polls ctx->interrupt, and notes the element and                          \
     * its value for hang reports (what: "element 5").  0, or -1. */                               \
    X(win, elem_wait, int, (gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,         \
       int member, size_t offset, gcsh_dtype dt, gcsh_scalar v, enum gcsh_cmp cmp,                 \
       const char *what),                                                                          \
      (ctx, w, d, member, offset, dt, v, cmp, what),                                               \
      TRACED, "signal", 0, REFUSE, ORDERED, (OBJ(d->trace_id)))                                    \
    X(win, signal_read, int, (gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,       \
       size_t slot, uint64_t *v),                                                                  \
      (ctx, w, d, slot, v),                                                                        \
      QUIET, "", 0, REFUSE, ORDERED, (NOTHING))                                                    \
    /* Optional (may be NULL): copies `bytes` from team member peer's slice,                       \
     * starting at byte `offset`, into dst (memory at d->loc), with the                            \
     * backend's own load loop going through the peer table (cuda: a kernel                        \
     * reading d->peer_table_dev, for nccl windows filled by                                       \
     * ncclGetLsaPointer).  Bounds are checked by the caller.  On cuda it is                       \
     * stream-ordered (returns at once), like a device-to-device copy.  It                         \
     * exists to exercise and time the device path next to mem->copy from                          \
     * d->peer[peer], which uses the copy engines. */                                              \
    X(win, peer_read, int, (gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,         \
       int peer, size_t offset, void *dst, size_t bytes),                                          \
      (ctx, w, d, peer, offset, dst, bytes),                                                       \
      TRACED, "window", GPU, RECORD, FREELY,                                                       \
       (BYTES(bytes), PEER(d->team[peer]), OBJ(d->trace_id)))                                      \
    /* Optional (NULL: ranks off the team are unreachable; net_path names                          \
     * it, "tcp"): one operation on the slice of a rank of the window's                            \
     * communicator on another node, at byte offset (bounds checked by the                         \
     * binding): put (bytes of data, local memory, into it), get (into data),                      \
     * set, add or fetch-add of the 64-bit word there (release; fetch-add                          \
     * gives *old).  It returns once applied at the target, so operations                          \
     * land in the order issued.  Not for the rank's own team (loads and                           \
     * stores reach them). */                                                                      \
    X(win, net, int, (gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d, int rank,     \
       enum gcsh_net_op op, size_t offset, void *data, size_t bytes, uint64_t value,               \
       uint64_t *old),                                                                             \
      (ctx, w, d, rank, op, offset, data, bytes, value, old),                                      \
      TRACED, "transfer", 0, REFUSE, ORDERED, (NET(d, rank, op, offset, bytes, value)))

typedef struct gcsh_window_ops {
    /* The valid kinds, space separated, in order of preference ("host",
     * "nccl vmm"): a window without {kind=} gets the first usable one. */
    const char *kinds;
    GCSH_WINDOW_OPS(GCSH_OP_FIELD)
    /* The network path's name ("tcp"), or NULL when it has none (net). */
    const char *net_path;
} gcsh_window_ops;

/* ---- reduce kernels and multicast (issue 5; core/kreduce.h, bind/l_kernel.c, l_mcast.c) ----
 *
 * A job: reduce k sources element-wise (in order) and store the result to
 * each of m destinations; n elements of dt.  Sources and destinations are
 * local memory or peer slices (addresses valid here, at d->loc); k = 1 is a
 * copy to m places.  No synchronisation: the caller orders it (c:barrier()).
 * Destinations may be sources only element for element (in place). */
typedef struct gcsh_kjob {
    const void *src[GCSH_KERN_MAX_SRC];
    void *dst[GCSH_KERN_MAX_SRC];
    int k, m;
    size_t n;
    gcsh_dtype dt;
    gcsh_redop op;
} gcsh_kjob;

/* The synchronised collectives over a window's region [offset, offset + n)
 * of every slice (elements), as the plan of kplan.h moves the data: its
 * barriers run on the window's sync words, so every member's input is
 * ready before anyone reads it and nobody still reads or writes a slice
 * when the collective ends; a rank that arrives late only delays the
 * others. */
typedef struct gcsh_mcast gcsh_mcast;

typedef struct gcsh_kcoll_args {
    gcsh_kplan plan;   /* collective, algorithm, team, root (team index), n */
    size_t offset;     /* elements, checked against the window by the binding */
    gcsh_dtype dt;
    gcsh_redop op;
    void *out;         /* local memory at d->loc, or NULL: the result stays in the window */
    size_t sync_off;   /* bytes: where the sync area starts in every slice */
    size_t scratch_off; /* bytes: where the scratch area starts in every slice (the
                           LL area past its header; plan.scratch: kplan.h) */
    uint64_t *epoch;   /* barriers passed on this window, equal on every rank;
                          the backend advances it by the barriers it ran */
    const gcsh_mcast *mc; /* the window's multicast when it is nvls (algo multicast:
                             multimem.ld_reduce and multimem.st), else NULL */
} gcsh_kcoll_args;

/* kernel.allreduce{algo="ll"} and {algo="ll128"} (core/kll.h): the region
 * [offset, offset + n) of every slice (or each member's in) all-reduced
 * through the LL area of every slice, in the lines of `proto`; the result
 * into out, or into my region.  n * dtype size <= GCSH_LL_MAX_BYTES, or
 * GCSH_LL128_MAX_BYTES for ll128, and within the area (the binding checked
 * it). */
enum gcsh_ll_proto { GCSH_LL_PROTO_LL = 0, GCSH_LL_PROTO_LL128 = 1 };

typedef struct gcsh_kll_args {
    size_t offset, n;    /* elements */
    gcsh_dtype dt;
    gcsh_redop op;
    const void *in;      /* local memory at d->loc holding my n elements, or NULL:
                            my region of the window (nothing else of it is read) */
    void *out;           /* local memory at d->loc, or NULL */
    size_t ll_off;       /* bytes: where the LL area starts in every slice */
    size_t window_bytes; /* a slice's user bytes and       */
    int slots;           /* the slots per set: the LL area's layout (kll.h) */
    enum gcsh_ll_proto proto; /* 16-byte lines of 8 data bytes, or 128 of 120 */
} gcsh_kll_args;

/* kernel.allreduce{algo="nccl_dev"} (kernels/cuda/nccl_dev.cu): the region
 * [offset, offset + n) of every slice all-reduced by a one-shot written with
 * NCCL's device API (the window's device communicator, its LSA barriers,
 * LSA pointers); the result into out, or into my region. */
typedef struct gcsh_kdev_args {
    size_t offset, n;    /* elements */
    gcsh_dtype dt;
    gcsh_redop op;
    void *out;           /* local memory at d->loc, or NULL */
} gcsh_kdev_args;

/* kernel.alltoallv (bind/kalltoallv.c): every member reads the block each
 * member sends it from that member's slice into out, between two barriers
 * on the sync words.  By team index p: count[p] elements from p's slice at
 * element offset + src_first[p], to out at out_first[p].  largest: the
 * largest block any member sends any member, equal on every member (what
 * the GPU sizes its launches by, so that every member's barriers pair). */
typedef struct gcsh_kv_args {
    size_t offset;       /* elements: where every slice's send blocks start */
    gcsh_dtype dt;
    void *out;           /* local memory at d->loc */
    size_t count[GCSH_KERN_MAX_TEAM];
    size_t src_first[GCSH_KERN_MAX_TEAM];
    size_t out_first[GCSH_KERN_MAX_TEAM];
    size_t total;        /* the sum of count: what this member receives */
    size_t largest;
    size_t sync_off;     /* bytes: where the sync area starts in every slice */
    uint64_t *epoch;     /* as gcsh_kcoll_args's */
} gcsh_kv_args;

/* What w:multicast() found: NVLS (a multicast address over the slices) or
 * the emulation through peer loads and stores, and why. */
struct gcsh_mcast {
    int nvls;
    char why[200];     /* why the mode is what it is, for m:why() */
    void *base;        /* nvls: multicast address of slice offset 0 */
};

#define GCSH_KERNEL_OPS(X)                                                                         \
    /* One job (above), stream-ordered on cuda. */                                                 \
    X(kern, reduce, int, (gcsh_ctx *ctx, const gcsh_kjob *j),                                      \
      (ctx, j),                                                                                    \
      TRACED, "kernel", GPU, RECORD, ORDERED, (KEPT(j), ELEMS(j->n, j->dt), REDOP(j->op)))         \
    /* One empty kernel on the rank's stream (host: nothing): the launch                           \
     * floor the kernels are measured against (kernel.empty()). */                                 \
    X(kern, empty, int, (gcsh_ctx *ctx),                                                           \
      (ctx),                                                                                       \
      TRACED, "kernel", GPU, RECORD, ORDERED, (NOTHING))                                           \
    /* Collective over the window's team: every member calls it with the                           \
     * same arguments (out and root aside: out is local). */                                       \
    X(kern, collective, int, (gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,       \
       const gcsh_kcoll_args *a),                                                                  \
      (ctx, w, d, a),                                                                              \
      TRACED, "kernel", GPU, RECORD, ORDERED,                                                      \
       (KEPT(a), ELEMS(a->plan.n, a->dt), REDOP(a->op), PLAN(a->plan), OBJ(d->trace_id),           \
        REGION(a->offset)))                                                                        \
    /* kernel.alltoallv (gcsh_kv_args above), collective like the others. */                       \
    X(kern, alltoallv, int, (gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,       \
       const gcsh_kv_args *a),                                                                     \
      (ctx, w, d, a),                                                                              \
      TRACED, "kernel", GPU, RECORD, ORDERED,                                                      \
       (KEPT(a), ELEMS(a->total, a->dt), OBJ(d->trace_id)))                                        \
    /* The "ll" all-reduce, collective like the others: no barrier, the                            \
     * flags travel with the data (core/kll.h). */                                                 \
    X(kern, ll_allreduce, int, (gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,     \
       const gcsh_kll_args *a),                                                                    \
      (ctx, w, d, a),                                                                              \
      QUIET, "", 0, RECORD, ORDERED, (KEPT(a), ELEMS(a->n, a->dt)))                                \
    /* Optional (NULL where the backend has no NCCL device API, as on host):                       \
     * the "nccl_dev" all-reduce.  dev_usable is local and never fails: 0                          \
     * when window w can take it, else -1 with why naming w's kind and the                         \
     * reason (the same on every rank of w's communicator).  dev_allreduce                         \
     * is collective like the others; its barriers are NCCL's, which have no                       \
     * bound (the binding's collective check makes every member launch it                          \
     * or none). */                                                                                \
    X(kern, dev_usable, int, (gcsh_ctx *ctx, gcsh_window_impl *w, char *why, size_t len),          \
      (ctx, w, why, len),                                                                          \
      QUIET, "", 0, SHARE, FREELY, (NOTHING))                                                      \
    X(kern, dev_allreduce, int, (gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,    \
       const gcsh_kdev_args *a),                                                                   \
      (ctx, w, d, a),                                                                              \
      TRACED, "kernel", GPU, RECORD, FREELY,                                                       \
       (KEPT(a), ELEMS(a->n, a->dt), REDOP(a->op), OBJ(d->trace_id), REGION(a->offset)))           \
    /* Collective over the window's team: decides the mode (every member the                       \
     * same) and, for nvls, sets up the multicast address.  The NVLS path is                       \
     * taken only under src/DESIGN.md's opt-in. */                                                 \
    X(kern, mc_open, int, (gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,          \
       gcsh_mcast *out),                                                                           \
      (ctx, w, d, out),                                                                            \
      TRACED, "kernel", 0, REFUSE, FREELY, (OBJ(d->trace_id)))                                     \
    /* nvls only (NULL where there is none): out[0..n) = the op over every                         \
     * slice's elements from byte offset; and a store of src to every slice. */                    \
    X(kern, mc_ld_reduce, int, (gcsh_ctx *ctx, const gcsh_mcast *m, size_t offset, void *out,      \
       size_t n, gcsh_dtype dt, gcsh_redop op),                                                    \
      (ctx, m, offset, out, n, dt, op),                                                            \
      TRACED, "kernel", GPU, RECORD, FREELY,                                                       \
       (ELEMS(n, dt), REDOP(op), REGION(offset / gcsh_dtype_size(dt))))                            \
    X(kern, mc_st, int, (gcsh_ctx *ctx, const gcsh_mcast *m, size_t offset, const void *src,       \
       size_t n, gcsh_dtype dt),                                                                   \
      (ctx, m, offset, src, n, dt),                                                                \
      TRACED, "kernel", GPU, RECORD, FREELY, (ELEMS(n, dt), REGION(offset / gcsh_dtype_size(dt))))

typedef struct gcsh_kernel_ops {
    /* Bytes at the end of every window slice kept for the sync words (the
     * binding adds them, and the LL area before them (core/kll.h), to the
     * allocation; zeroed at creation). */
    size_t sync_bytes;
    GCSH_KERNEL_OPS(GCSH_OP_FIELD)
} gcsh_kernel_ops;

/* ---- the persistent all-reduce (kernel.persistent: bind/l_persist.c) ------
 *
 * A resident worker per rank (host: a progress thread; cuda: a kernel that
 * stays on the GPU) runs the "ll" all-reduce (core/kll.h) over the window's
 * LL area each time the rank rings its doorbell (core/kpersist.h: a ring of
 * calls with back-pressure, a completion word, a stop word).  Ringing is
 * stream-ordered in meaning: the call runs after the work the rank issued
 * before it, and the rank's later work (and any host read of its memory)
 * after the call.  Every member rings the same calls (the binding checks
 * each ring), so the residents pair them as direct "ll" calls are paired. */
typedef struct gcsh_persist_impl gcsh_persist_impl;

typedef struct gcsh_persist_args {
    size_t ll_off;         /* bytes: where the LL area starts in every slice */
    size_t window_bytes;   /* a slice's user bytes and              */
    int slots;             /* the slots per set: the LL area's layout (kll.h) */
    size_t max_bytes;      /* the largest region a call may carry */
    int sms;               /* cuda: blocks of the resident kernel */
    gcsh_dtype dt;         /* the window's: every call's */
    gcsh_comm_impl *comm;  /* the window's communicator: an abort of it stops the resident */
} gcsh_persist_args;

/* One call: the region [offset, offset + n) of every slice (elements of
 * dt, n * size <= max_bytes), reduced with op into my region. */
typedef struct gcsh_persist_call {
    size_t offset, n;
    gcsh_dtype dt;
    gcsh_redop op;
} gcsh_persist_call;

/* What a resident says about itself, without waiting. */
typedef struct gcsh_persist_state {
    uint64_t rung, done; /* calls rung, calls completed */
    uint64_t graph_done; /* calls rung from graphs and completed (cuda; the host backend's
                          * replays ring as the host does: rung and done count them) */
    int running;         /* 0 once it ended (stop, abort, interrupt, error) */
    char why[1024];      /* why it ended ("" while running) */
} gcsh_persist_state;

/* The backends' shared messages (core/kpersist.c): a resident that ended
 * before completing the calls rung, and a wait for one that an interrupt
 * ended (the resident stopped, its communicator aborted).  -1. */
int gcsh_persist_error_ended(gcsh_ctx *ctx, uint64_t completed, uint64_t rung, const char *why);
int gcsh_persist_error_interrupted(gcsh_ctx *ctx);
/* GCSH_PERSIST_MAX_RUNNING run on the rank already. */
int gcsh_persist_error_full(gcsh_ctx *ctx);

#define GCSH_PERSIST_OPS(X)                                                                        \
    /* Starts the resident over window w (after the work the rank issued                           \
     * before).  Every member of the team calls it (the binding checked). */                       \
    X(persist, start, int, (gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,         \
       const gcsh_persist_args *a, gcsh_persist_impl **out),                                       \
      (ctx, w, d, a, out),                                                                         \
      QUIET, "", 0, SHARE, FREELY, (NOTHING))                                                      \
    /* Rings the doorbell for one call and returns: at once, or once the                           \
     * ring has a free entry (back-pressure: an entry is never overwritten                         \
     * before its call completed; the wait polls ctx->interrupt).  Captured                        \
     * by a graph: the host backend replays it as a ring; cuda rings from                          \
     * the graph itself (cuda_persist.c), a replay waiting for the call. */                        \
    X(persist, ring, int, (gcsh_ctx *ctx, gcsh_persist_impl *p, const gcsh_persist_call *c),       \
      (ctx, p, c),                                                                                 \
      QUIET, "", 0, RECORD, FREELY, (KEPT(c), ELEMS(c->n, c->dt)))                                 \
    /* Waits until every call rung so far completed: 0; -1 with ctx->err                           \
     * when the resident ended before, or when an interrupt came (the                              \
     * resident is then stopped and its communicator marked aborted). */                           \
    X(persist, wait, int, (gcsh_ctx *ctx, gcsh_persist_impl *p),                                   \
      (ctx, p),                                                                                    \
      QUIET, "", 0, SHARE, FREELY, (NOTHING))                                                      \
    /* Waits for every running resident of the rank (host reads of memory,                         \
     * gcsh.sync): as wait, for all of them.  NULL where the rank's stream                         \
     * already orders host reads after the calls (cuda). */                                        \
    X(persist, drain, int, (gcsh_ctx *ctx),                                                        \
      (ctx),                                                                                       \
      QUIET, "", 0, SHARE, FREELY, (NOTHING))                                                      \
    X(persist, state, void, (gcsh_persist_impl *p, gcsh_persist_state *out),                       \
      (p, out),                                                                                    \
      QUIET, "", 0, SHARE, FREELY, (NOTHING))                                                      \
    /* Ends the resident (drain: after its calls complete, else at once,                           \
     * abandoning them) and waits until it is gone; idempotent.  Returns the                       \
     * drain's status. */                                                                          \
    X(persist, stop, int, (gcsh_ctx *ctx, gcsh_persist_impl *p, int drain),                        \
      (ctx, p, drain),                                                                             \
      QUIET, "", 0, SHARE, FREELY, (NOTHING))                                                      \
    /* Stops it without draining (if running) and frees p. */                                      \
    X(persist, release, void, (gcsh_ctx *ctx, gcsh_persist_impl *p),                               \
      (ctx, p),                                                                                    \
      QUIET, "", 0, SHARE, FREELY, (NOTHING))

typedef struct gcsh_persist_ops {
    GCSH_PERSIST_OPS(GCSH_OP_FIELD)
} gcsh_persist_ops;

/* ---- one-sided transfers (l_xfer.c) ---------------------------------------
 *
 * A transfer is prepared once from a plan the binding has checked (every
 * range inside its memory, destinations disjoint, no source overlapping a
 * destination, addresses resolved through the window's peer pointer table)
 * and posted any number of times.  A post enqueues the copies and then, when
 * plan->signal is set, adds signal_value to that (peer's) signal word with
 * release ordering: whoever sees the new value sees the data. */
typedef enum gcsh_xfer_engine { GCSH_XFER_CE, GCSH_XFER_SM } gcsh_xfer_engine;

typedef struct gcsh_xfer_seg {
    void *dst;
    const void *src;
    size_t bytes;
} gcsh_xfer_seg;

typedef struct gcsh_xfer_plan {
    gcsh_xfer_engine engine;
    size_t nseg;                /* >= 1 */
    const gcsh_xfer_seg *seg;   /* host array; prepare copies what it keeps */
    uint64_t *signal;           /* a signal word (8-byte aligned), or NULL */
    uint64_t signal_value;
    /* For traces (the backend ignores them): the peer's rank in the
     * communicator, and the signal's signals (its trace_id) and slot. */
    int peer;
    uint64_t signal_obj;
    int64_t signal_slot;
    /* A peer off the window's team, reached through the network path
     * (gcsh_window_ops.net; NULL: the team, through seg's addresses): the
     * segments' far side (dst of a put, src of a get: get set) is then a
     * byte offset into the peer's slice of that window, and signal a byte
     * offset into the peer's slice of signal_net (the signals' window). */
    gcsh_window_impl *net;
    const gcsh_window_desc *net_desc;
    int get;
    gcsh_window_impl *signal_net;
    const gcsh_window_desc *signal_net_desc;
    /* For traces: 1 + the first segment's element in the window (a put's
     * destination, a get's source); 0: not said. */
    size_t trace_offset;
} gcsh_xfer_plan;

typedef struct gcsh_xfer_impl gcsh_xfer_impl;

enum gcsh_xfer_status { GCSH_XFER_PENDING, GCSH_XFER_DONE, GCSH_XFER_ERROR };

#define GCSH_XFER_OPS(X)                                                                           \
    X(xfer, prepare, int, (gcsh_ctx *ctx, const gcsh_xfer_plan *plan, gcsh_xfer_impl **out),       \
      (ctx, plan, out),                                                                            \
      TRACED, "transfer", 0, REFUSE, FREELY, (XFER_NEW(plan, out)))                                \
    /* Enqueues the transfer on the rank's stream (cuda: returns at once). */                      \
    X(xfer, post, int, (gcsh_ctx *ctx, gcsh_xfer_impl *x),                                         \
      (ctx, x),                                                                                    \
      TRACED, "transfer", GPU, RECORD, ORDERED, (XFER_POST(x)))                                    \
    /* The last post's status; GCSH_XFER_ERROR with ctx->err saying why. */                        \
    X(xfer, test, int, (gcsh_ctx *ctx, gcsh_xfer_impl *x, enum gcsh_xfer_status *status),          \
      (ctx, x, status),                                                                            \
      QUIET, "", 0, REFUSE, FREELY, (NOTHING))                                                     \
    /* Work queued on the rank's stream after this call runs after the last post. */               \
    X(xfer, wait_stream, int, (gcsh_ctx *ctx, gcsh_xfer_impl *x),                                  \
      (ctx, x),                                                                                    \
      TRACED, "transfer", GPU, RECORD, ORDERED, (XFER_WAIT(x)))                                    \
    /* Waits on the CPU: 0 when done, 1 when timeout seconds ran out, -1 on                        \
     * error (interrupt included). */                                                              \
    X(xfer, wait_cpu, int, (gcsh_ctx *ctx, gcsh_xfer_impl *x, double timeout),                     \
      (ctx, x, timeout),                                                                           \
      TRACED, "transfer", 0, REFUSE, ORDERED, (XFER_WAIT(x)))                                      \
    /* Frees x; safe while a post is in flight (the memory goes when it ends). */                  \
    X(xfer, release, void, (gcsh_ctx *ctx, gcsh_xfer_impl *x),                                     \
      (ctx, x),                                                                                    \
      TRACED, "transfer", 0, DEFER, FREELY, (XFER_GONE(x)))                                        \
    /* w:fence(): every one-sided operation this rank issued before it (a                          \
     * post, a signal set or add, to any peer, by loads and stores or the                          \
     * network path) is visible at its target before any issued after it.                         \
     * Stream-ordered on cuda (a system-scope fence after the work before                          \
     * it); on host the operations before it have completed already, and it                       \
     * is a sequentially consistent fence. */                                                      \
    X(xfer, fence, int, (gcsh_ctx *ctx),                                                           \
      (ctx),                                                                                       \
      TRACED, "transfer", GPU, RECORD, ORDERED, (NOTHING))                                         \
    /* c:quiet(): returns once every one-sided operation this rank issued                          \
     * has completed at its target: the CPU waits (cuda: a fence, then the                         \
     * rank's stream, polling ctx->interrupt), so whatever the rank does or                        \
     * sends next comes after. */                                                                  \
    X(xfer, quiet, int, (gcsh_ctx *ctx),                                                           \
      (ctx),                                                                                       \
      TRACED, "transfer", SYNC, REFUSE, ORDERED, (NOTHING))

typedef struct gcsh_xfer_ops {
    const char *engines;        /* the valid engines, space separated: "ce sm" */
    GCSH_XFER_OPS(GCSH_OP_FIELD)
} gcsh_xfer_ops;

/* ---- graphs (core/graph.h, l_graph.c) -------------------------------------
 *
 * gcsh.graph(fn) runs fn once with ctx->be set to the capture layer's table
 * (core/graph.c): the calls a graph may hold go to the recording, every other
 * call is refused by name.  A backend that captures by itself (cuda: stream
 * capture of the rank's stream) has these ops; the layer then passes the
 * capturable calls down while the stream captures.  The host backend's
 * begin and abandon do nothing, and its graph is the layer's recording,
 * replayed from C. */
typedef struct gcsh_graph_impl gcsh_graph_impl;
typedef struct gcsh_graph_rec gcsh_graph_rec; /* the recorded calls (core/graph.h) */

#define GCSH_GRAPH_OPS(X)                                                                          \
    /* Capture starts on this rank (cuda: the stream captures, nothing runs). */                   \
    X(graph, begin, int, (gcsh_ctx *ctx),                                                          \
      (ctx),                                                                                       \
      QUIET, "", 0, SHARE, FREELY, (NOTHING))                                                      \
    /* Capture ends: the graph that replays rec's calls (the backend keeps                         \
     * rec until release; the layer gave it away). */                                              \
    X(graph, end, int, (gcsh_ctx *ctx, gcsh_graph_rec *rec, gcsh_graph_impl **out),                \
      (ctx, rec, out),                                                                             \
      QUIET, "", 0, SHARE, FREELY, (NOTHING))                                                      \
    /* Capture ends without a graph (an error or a refusal in fn): nothing of                      \
     * it stays, and the rank's stream works as before.  Never fails. */                           \
    X(graph, abandon, void, (gcsh_ctx *ctx),                                                       \
      (ctx),                                                                                       \
      QUIET, "", 0, SHARE, FREELY, (NOTHING))                                                      \
    /* Replays g n times (n >= 1), stream-ordered on cuda (returns once                            \
     * enqueued; a long run of launches waits, interruptibly, for older ones),                     \
     * at once on host, polling ctx->interrupt between calls. */                                   \
    X(graph, launch, int, (gcsh_ctx *ctx, gcsh_graph_impl *g, uint64_t n),                         \
      (ctx, g, n),                                                                                 \
      TRACED, "graph", GPU, REFUSE, ORDERED, (COUNT(n)))                                           \
    /* Frees g; safe while replays are in flight. */                                               \
    X(graph, release, void, (gcsh_ctx *ctx, gcsh_graph_impl *g),                                   \
      (ctx, g),                                                                                    \
      QUIET, "", 0, DEFER, FREELY, (NOTHING))

typedef struct gcsh_graph_ops {
    /* 1: the backend captures the calls as they are issued (cuda), so the
     * layer passes them down; 0: nothing runs during a capture, and the
     * backend replays the recording (host). */
    int pass_down;
    GCSH_GRAPH_OPS(GCSH_OP_FIELD)
} gcsh_graph_ops;

typedef struct gcsh_backend {
    const char *name; /* "host" | "cuda" */
    /* 1: collectives return once queued on the rank's stream and complete
     * later (cuda); 0: they complete before returning (host). */
    int stream_ordered;
    /* 1: a collective of a communicator of one rank is a copy on the stream,
     * not a call of the communicator's library (cuda: NCCL keeps host memory
     * for every call on a one-rank communicator); c:choose names it "copy". */
    int one_rank_copies;
    /* Called once per rank after MPI is up; may refuse (no GPU) with ctx->err. */
    int (*init)(gcsh_ctx *ctx);
    void (*fini)(gcsh_ctx *ctx);
    /* Pushes backend facts for gcsh.info() onto the Lua stack as one table. */
    void (*info)(gcsh_ctx *ctx, void *lua_state);
    /* Optional (may be NULL): sets the backend's own fields of the `gcsh`
     * global table, which is on top of the Lua stack (cuda: gcsh.nccl). */
    void (*globals)(gcsh_ctx *ctx, void *lua_state);
    /* Optional (may be NULL): gcsh.debug.inject(what), a test facility that
     * makes a fault happen ("oom": the next allocation fails; "fatal" or
     * "oob_write": an unrecoverable fault).  -1 with ctx->err for an unknown
     * or unsupported what. */
    int (*inject)(gcsh_ctx *ctx, const char *what);
    /* Optional (NULL: none): what carries some of the communicators'
     * collectives instead of the library, in a few words for .info (host:
     * "up to 4 KiB a rank through shared memory"); "" where nothing does now. */
    void (*comm_paths)(gcsh_ctx *ctx, char *buf, size_t len);
    const gcsh_mem_ops *mem;
    const gcsh_comm_ops *comm;
    const gcsh_window_ops *win;
    const gcsh_kernel_ops *kern; /* reduce kernels and multicast */

    const gcsh_xfer_ops *xfer; /* NULL: no one-sided transfers */
    const gcsh_graph_ops *graph; /* gcsh.graph */
    const gcsh_persist_ops *persist; /* kernel.persistent; NULL: none */
} gcsh_backend;

/* Every operation a layer may wrap: the tables gcsh_backend_copy copies.  The
 * persistent all-reduce's rows are QUIET and FREELY (no layer wraps them);
 * its ring is RECORD: a graph may ring a resident. */
#define GCSH_BACKEND_OPS(X)                                                                        \
    GCSH_MEM_OPS(X)                                                                                \
    GCSH_COMM_OPS(X)                                                                               \
    GCSH_WINDOW_OPS(X)                                                                             \
    GCSH_KERNEL_OPS(X)                                                                             \
    GCSH_XFER_OPS(X)                                                                               \
    GCSH_GRAPH_OPS(X)                                                                              \
    GCSH_PERSIST_OPS(X)

/* A backend's tables copied, for a layer that puts functions of its own in
 * some of them (the tracer, graph capture, the host's ordering around
 * persistent all-reduces): be's pointers point at the copies; a table the
 * backend lacks stays NULL there (its copy zeroed). */
typedef struct gcsh_backend_copy {
    gcsh_backend be;
    gcsh_mem_ops mem;
    gcsh_comm_ops comm;
    gcsh_window_ops win;
    gcsh_kernel_ops kern;
    gcsh_xfer_ops xfer;
    gcsh_graph_ops graph;
    gcsh_persist_ops persist;
} gcsh_backend_copy;

void gcsh_backend_copy_of(gcsh_backend_copy *c, const gcsh_backend *b);

/* The backends' tables are theirs to declare (host/host.h,
 * cuda/cuda_backend.h): this interface names none of them. */

#endif
