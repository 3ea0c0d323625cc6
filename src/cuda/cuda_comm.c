/* Collectives over NCCL.
 *
 * Two NCCL communicators per gcsh communicator.  The one made first is
 * non-blocking (ncclConfig_t.blocking = 0), waited for by polling
 * ncclCommGetAsyncError, so that creating it, splitting it and registering
 * windows on it can be interrupted.  Its blocking twin (a split of it by
 * every rank, itself polled on the parent) runs the collectives: on a
 * non-blocking communicator NCCL hands every call to a thread of its own
 * (55-250 us per call on H200s), a blocking one issues in about a
 * microsecond.  A call on the twin waits for no peer on the host: the
 * first collective, which would connect the peers lazily, runs once when
 * the twin is made, so the first one at the prompt is not slow.
 *
 * What a communicator costs (issue 35: a split with an all-reduce took
 * 1.4 s at 4 H100s, three NCCL set-ups): the world makes its twin at once
 * (made once, and benchmarks run on it); a split makes its twin at its
 * first collective of every rank (a split made to be freed, or used for a
 * few send/recv or barriers, never pays for one: those run on the
 * non-blocking communicator until then), and takes its parent's answer on
 * symmetric memory where NCCL's rule makes it the same (split_symmetric).
 * A communicator of one rank never has a twin: its collectives are copies
 * on the stream, without NCCL (one_rank).
 * With GCSH_SPLIT_SHARE=1 (the default) a split shares its parent's NCCL resources
 * (ncclConfig_t.splitShare): no new proxy, connections or streams, and the
 * twin shares the split's.  NCCL then gives the family one abort flag, so
 * an abort of one member aborts all (cuda_abort_comm), and frees the
 * shared resources with the last member: a member freed before its splits
 * is held (released, its NCCL communicators kept) and destroyed after
 * them, children first (destroy_up).
 *
 * Semantics: stream-ordered, as NCCL's.  A collective is enqueued on the
 * rank's stream and the call returns; a host read of a tensor, the end of a
 * command and gcsh.sync() wait for the stream (cuda_wait), polling, so that
 * an interrupt from rank 0 aborts the communicators with work in flight
 * (the only way NCCL offers to stop its kernels) and an asynchronous error
 * is reported by the command that caused it.  A barrier waits. */
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <mpi.h>

#include "core/orphans.h"
#include "core/elementwise.h"
#include "core/mpi_try.h"
#include "cuda/cuda.h"
#include "cuda/cudakern.h"
#include "initkern.h"

static const ncclRedOp_t nccl_op[GCSH_NOPS] = {
    [GCSH_OP_SUM] = ncclSum, [GCSH_OP_PROD] = ncclProd, [GCSH_OP_MIN] = ncclMin,
    [GCSH_OP_MAX] = ncclMax, [GCSH_OP_AVG] = ncclAvg,
};

/* Entry to an operation on c: the device made current, and c still usable. */
static cuda_state *comm_enter(gcsh_ctx *ctx, gcsh_comm_impl *c)
{
    if (c->aborted) {
        gcsh_set_error(ctx, "communicator was aborted after an error or an interrupt; "
                            "free it and create a new one");
        return NULL;
    }
    return cuda_enter(ctx);
}

/* Every communicator is made with this: non-blocking, see the top; with
 * split_share, the splits made from it share its resources. */
static ncclConfig_t nonblocking_config(const cuda_state *st)
{
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    config.splitShare = st->split_share;
    return config;
}

/* Waits for c->comm's pending call; a failure there aborted c->comm
 * (cuda_nccl_settle), and so c. */
static int settle(gcsh_ctx *ctx, gcsh_comm_impl *c, const char *what)
{
    if (cuda_nccl_settle(ctx, c->comm, what) == 0)
        return 0;
    cuda_comm_lost(c);
    return -1;
}

/* ncclCommSplit of c->comm into *twin, settled.  During a capture (a
 * split's first collective may be captured) this thread's calls go relaxed
 * meanwhile: NCCL allocates as it sets the twin up, which a thread-local
 * capture refuses, and nothing of it goes on the captured stream. */
static int split_twin(gcsh_ctx *ctx, gcsh_comm_impl *c, ncclComm_t *twin)
{
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 1;
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    if (ctx->graph)
        cudaThreadExchangeStreamCaptureMode(&mode);
    ncclResult_t r = ncclCommSplit(c->comm, 0, c->rank, twin, &config);
    int rc = 0;
    if (r != ncclSuccess && r != ncclInProgress) {
        rc = nccl_error(ctx, c->comm, __FILE__, __LINE__, "ncclCommSplit", r);
    } else if (cuda_nccl_settle(ctx, c->comm, "communicator set-up (blocking twin)") != 0) {
        if (*twin)
            ncclCommAbort(*twin);
        *twin = NULL;
        cuda_comm_lost(c);
        rc = -1;
    }
    if (ctx->graph)
        cudaThreadExchangeStreamCaptureMode(&mode);
    return rc;
}

/* The blocking twin of c->comm (see the top), connected by one collective
 * (not while the stream captures: that call would be captured; the first
 * captured collective connects it, or NCCL_RUNTIME_CONNECT=0 did when it
 * was made, cuda_backend.c). */
static int make_twin(gcsh_ctx *ctx, cuda_state *st, gcsh_comm_impl *c)
{
    ncclComm_t twin = NULL;
    if (split_twin(ctx, c, &twin) != 0)
        return -1;
    if (!twin)
        return gcsh_set_error(ctx, "communicator set-up: the blocking twin was not made");
    c->coll = twin;
    if (ctx->graph)
        return 0;
    NCCL_TRY(ctx, c->coll,
             ncclAllReduce(st->scratch, st->scratch, 1, ncclInt32, ncclSum, c->coll, st->stream));
    return cuda_wait(ctx, st, c);
fail:
    return -1;
}

/* Entry to a collective that every rank of c makes: comm_enter, and c's
 * twin, made here the first time (a split may never need one: see the
 * top).  Every member comes here for the same call, so the twin's split,
 * collective over c, meets every member. */
static cuda_state *coll_enter(gcsh_ctx *ctx, gcsh_comm_impl *c)
{
    cuda_state *st = comm_enter(ctx, c);
    if (st && !c->coll && make_twin(ctx, st, c) != 0)
        return NULL;
    return st;
}

/* The communicator of a call that not every rank makes (send, recv) or
 * that needs no speed (a barrier): the twin when there is one. */
static ncclComm_t any_of(const gcsh_comm_impl *c)
{
    return c->coll ? c->coll : c->comm;
}

/* After a call on k: on the non-blocking communicator, NCCL refuses the
 * next call until this one was issued. */
static int issued(gcsh_ctx *ctx, gcsh_comm_impl *c, ncclComm_t k, const char *what)
{
    return k == c->comm ? settle(ctx, c, what) : 0;
}

/* Whether NCCL offers symmetric memory (windows of kind "nccl", device
 * communicators) on c.  NCCL decides it per communicator (every GPU of one
 * machine, with direct peer access: not one rank, not ranks sharing a
 * GPU) and has no query for it in 2.28, so we ask as a window would: a
 * device communicator, made and destroyed at once.  Without the support
 * NCCL refuses it at once on every rank alike, before any collective step
 * and without harm to the communicator ("Communicator does not support
 * symmetric memory!", ncclInvalidUsage).  The device communicator's window
 * table stays allocated with the communicator: NCCL sets it up once. */
static int probe_symmetric(gcsh_ctx *ctx, gcsh_comm_impl *c)
{
    void *dc = NULL;
    ncclResult_t r = gcsh_nccl_devcomm_create(c->comm, 0, &dc);
    c->symmetric = r == ncclSuccess || r == ncclInProgress;
    if (r == ncclInvalidUsage) /* NCCL's answer: no symmetric memory here */
        return 0;
    if (!c->symmetric) /* anything else is a failure to make the communicator */
        return nccl_error(ctx, c->comm, __FILE__, __LINE__, "ncclDevCommCreate", r);
    if (settle(ctx, c, "communicator set-up (symmetric memory)") != 0)
        return -1;
    NCCL_TRY(ctx, c->comm, gcsh_nccl_devcomm_destroy(c->comm, dc));
    return settle(ctx, c, "communicator set-up (symmetric memory)");
fail:
    return -1;
}

/* NCCL's answer for a split, without asking when the parent's is yes: NCCL
 * 2.28 offers symmetric memory when every pair of the communicator's ranks
 * has direct peer access, on one machine, with NCCL_WIN_ENABLE and cuMem
 * on (init.cc: isAllDirectP2p && nNodes == 1; transport.cc checks the
 * pairs, and a single rank has none).  Pairs of a subset are pairs of the
 * parent, so a split of two ranks or more inherits a yes; a no may still
 * be a yes for a smaller set (a split within one machine), so that one
 * asks.  The device communicator of the probe was the costliest part of a
 * split after the communicator itself (a collective exchange of cuMem
 * handles through NCCL's proxies). */
static int split_symmetric(gcsh_ctx *ctx, gcsh_comm_impl *c, const gcsh_comm_impl *parent)
{
    if (parent->symmetric && c->size > 1) {
        c->symmetric = 1;
        return 0;
    }
    return probe_symmetric(ctx, c);
}

/* ---- families: communicators that share NCCL's resources ------------------- */

/* With split_share, c joins its parent's family (the world starts one). */
static int family_join(gcsh_ctx *ctx, const cuda_state *st, gcsh_comm_impl *c,
                       gcsh_comm_impl *parent)
{
    if (!st->split_share || (parent && !parent->family))
        return 0;
    cuda_family *f = parent ? parent->family : calloc(1, sizeof *f);
    if (!f)
        return gcsh_set_error(ctx, "communicator: out of host memory");
    c->family = f;
    c->share_parent = parent;
    if (parent)
        parent->share_kids++;
    c->fam_prev = f->tail;
    if (f->tail)
        f->tail->fam_next = c;
    else
        f->head = c;
    f->tail = c;
    return 0;
}

static void family_leave(gcsh_comm_impl *c)
{
    cuda_family *f = c->family;
    if (!f)
        return;
    if (c->share_parent)
        c->share_parent->share_kids--;
    if (c->fam_prev)
        c->fam_prev->fam_next = c->fam_next;
    else
        f->head = c->fam_next;
    if (c->fam_next)
        c->fam_next->fam_prev = c->fam_prev;
    else
        f->tail = c->fam_prev;
    if (!f->head)
        free(f);
    c->family = NULL;
}

/* Takes ownership of both communicators; on failure both are released.
 * The MPI one must hold the same ranks in the same order (checked).
 * parent: the communicator it was split from, NULL for the world. */
static int wrap(gcsh_ctx *ctx, ncclComm_t comm, MPI_Comm mpi, gcsh_comm_impl *parent,
                gcsh_comm_impl **out)
{
    int mpi_rank = -1, mpi_size = -1;
    cuda_state *st = ctx->be_state;
    if (cuda_nccl_settle(ctx, comm, "communicator set-up") != 0) {
        if (mpi != MPI_COMM_NULL) /* settle aborted comm */
            MPI_Comm_free(&mpi);
        return -1;
    }
    gcsh_comm_impl *c = calloc(1, sizeof *c);
    if (!c) {
        gcsh_set_error(ctx, "communicator: out of host memory");
        goto fail;
    }
    c->comm = comm;
    c->mpi = mpi;
    /* in the family first: an abort from here on is the family's */
    if (family_join(ctx, st, c, parent) != 0)
        goto fail;
    /* an MPI error is a Lua error */
    GCSH_MPI_TRY_GOTO(ctx, "communicator: ", fail, MPI_Comm_set_errhandler,
                        (mpi, MPI_ERRORS_RETURN));
    NCCL_TRY(ctx, comm, ncclCommUserRank(comm, &c->rank));
    NCCL_TRY(ctx, comm, ncclCommCount(comm, &c->size));
    GCSH_MPI_TRY_GOTO(ctx, "communicator: ", fail, MPI_Comm_rank, (mpi, &mpi_rank));
    GCSH_MPI_TRY_GOTO(ctx, "communicator: ", fail, MPI_Comm_size, (mpi, &mpi_size));
    if (mpi_rank != c->rank || mpi_size != c->size) {
        gcsh_set_error(ctx, "communicator: NCCL rank %d of %d but MPI rank %d of %d", c->rank,
                       c->size, mpi_rank, mpi_size);
        goto fail;
    }
    /* the world's twin now: comm.world() is made once, and its first
     * collective stays as fast as the next (a world of one rank needs
     * none: one_rank) */
    if (parent ? split_symmetric(ctx, c, parent) != 0
               : (c->size > 1 && make_twin(ctx, st, c) != 0) || probe_symmetric(ctx, c) != 0)
        goto fail;
    *out = c;
    return 0;
fail:
    if (c && c->family) {
        /* NCCL's abort of a member that shares resources sets the flag of
         * every member: the family is aborted, and says so */
        cuda_abort_comm(c);
        family_leave(c);
    } else if (!c || !c->aborted) { /* else aborted already, twin and all */
        if (c && c->coll)
            ncclCommAbort(c->coll);
        ncclCommAbort(comm);
    }
    if (mpi != MPI_COMM_NULL)
        MPI_Comm_free(&mpi);
    free(c);
    return -1;
}

/* World: rank 0 makes the unique id and broadcasts it over MPI with a status
 * word, so that a failure on rank 0 fails every rank instead of leaving the
 * others waiting in ncclCommInitRank. */
static int cuda_world(gcsh_ctx *ctx, gcsh_comm_impl **out)
{
    struct {
        int ok;
        ncclUniqueId id;
    } msg = {0};
    ncclComm_t comm = NULL;
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    if (ctx->rank == 0)
        msg.ok = ncclGetUniqueId(&msg.id) == ncclSuccess;
    GCSH_MPI_TRY(ctx, "comm.world: ", MPI_Bcast, (&msg, sizeof msg, MPI_BYTE, 0, MPI_COMM_WORLD));
    if (!msg.ok)
        return gcsh_set_error(ctx, "comm.world: ncclGetUniqueId failed on rank 0: %s",
                              ncclGetLastError(NULL));
    ncclConfig_t config = nonblocking_config(st);
    NCCL_TRY(ctx, NULL, ncclCommInitRankConfig(&comm, ctx->size, msg.id, ctx->rank, &config));
    MPI_Comm mpi = MPI_COMM_NULL;
    GCSH_MPI_TRY_GOTO(ctx, "comm.world: ", dup_failed, MPI_Comm_dup, (MPI_COMM_WORLD, &mpi));
    if (wrap(ctx, comm, mpi, NULL, out) != 0)
        return -1;
    st->world_symmetric = (*out)->symmetric ? 1 : -1;
    return 0;
dup_failed:
    ncclCommAbort(comm);
fail:
    return -1;
}

/* A negative color leaves this rank out (NCCL_SPLIT_NOCOLOR): *out = NULL.
 * MPI_Comm_split orders the new ranks as ncclCommSplit does (by key, then
 * by parent rank), so both communicators number their ranks alike; wrap
 * checks it. */
static int cuda_split(gcsh_ctx *ctx, gcsh_comm_impl *parent, int color, int key,
                      gcsh_comm_impl **out)
{
    ncclComm_t comm = NULL;
    MPI_Comm mpi = MPI_COMM_NULL;
    cuda_state *st = comm_enter(ctx, parent);
    if (!st)
        return -1;
    ncclConfig_t config = nonblocking_config(st);
    GCSH_MPI_TRY(ctx, "split: ", MPI_Comm_split,
                   (parent->mpi, color < 0 ? MPI_UNDEFINED : color, key, &mpi));
    NCCL_TRY(ctx, parent->comm,
             ncclCommSplit(parent->comm, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &comm,
                           &config));
    if (cuda_nccl_settle(ctx, parent->comm, "split") != 0) {
        cuda_comm_lost(parent);
        if (comm)
            ncclCommAbort(comm);
        goto fail;
    }
    if (!comm) {
        if (mpi != MPI_COMM_NULL)
            MPI_Comm_free(&mpi);
        *out = NULL;
        return 0;
    }
    return wrap(ctx, comm, mpi, parent, out);
fail:
    if (mpi != MPI_COMM_NULL)
        MPI_Comm_free(&mpi);
    return -1;
}

/* ncclCommDestroy waits for the communicator's pending work and, within a
 * node, for the peers that share its resources: it is only safe as the
 * collective free the bindings perform on every rank.  A communicator with an
 * asynchronous error (a peer died, a collective failed) would block it
 * forever, so that one, and one already marked aborted, goes through
 * ncclCommAbort, which never waits for peers. */
static void destroy_nccl(gcsh_ctx *ctx, gcsh_comm_impl *c)
{
    if (c->aborted && c->coll) {
        c->coll = NULL; /* aborted with its twin: nothing more to release */
    } else if (c->coll && cuda_enter(ctx)) {
        /* blocking: finalize and destroy wait for the peers, which free it too */
        if (ncclCommFinalize(c->coll) == ncclSuccess)
            ncclCommDestroy(c->coll);
        else
            ncclCommAbort(c->coll);
        c->coll = NULL;
    }
    if (!c->aborted && cuda_enter(ctx)) {
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(c->comm, &async);
        /* non-blocking: finalize (the collective part) is polled, so an
         * interrupt can still turn it into an abort */
        ncclResult_t r = async == ncclSuccess ? ncclCommFinalize(c->comm) : async;
        if (r != ncclSuccess && r != ncclInProgress)
            ncclCommAbort(c->comm);
        else if (cuda_nccl_settle(ctx, c->comm, "free") == 0) /* else: settle aborted it */
            ncclCommDestroy(c->comm);
    }
}

/* The NCCL side goes, then c; a parent held for c follows once it has no
 * split left (NCCL's shared resources go with the last of them, in the
 * order they were shared: a split's before its parent's). */
static void destroy_up(gcsh_ctx *ctx, gcsh_comm_impl *c)
{
    while (c && c->released && c->share_kids == 0) {
        gcsh_comm_impl *parent = c->share_parent;
        destroy_nccl(ctx, c);
        family_leave(c);
        free(c);
        c = parent;
    }
#ifdef __GLIBC__
    /* NCCL frees a communicator's host memory across the arenas of the
     * threads that made it (its init, proxy and job threads): give the
     * freed pages back, or a loop of splits keeps them as RSS (issue 35) */
    malloc_trim(0);
#endif
}

static void cuda_comm_release(gcsh_ctx *ctx, gcsh_comm_impl *c)
{
    if (!c)
        return;
    cuda_state *st = ctx->be_state;
    if (!c->aborted && c->busy && st && cuda_enter(ctx) && cuda_wait(ctx, st, c) != 0) {
        /* its work never ended (an interrupt aborted it meanwhile): abort */
        cuda_abort_comm(c);
    }
    if (st)
        cuda_forget_busy(st, c);
    /* Local in practice; an agree interrupted mid-way may leave a request
     * on it, which MPI_Comm_free allows (the free is deferred). */
    if (c->mpi != MPI_COMM_NULL)
        MPI_Comm_free(&c->mpi);
    c->released = 1;
    destroy_up(ctx, c); /* held while splits that share its resources live */
}

static int cuda_comm_rank(gcsh_comm_impl *c)
{
    return c->rank;
}

static int cuda_comm_size(gcsh_comm_impl *c)
{
    return c->size;
}

/* NCCL reduces every gcsh dtype with every op: sum, prod, min, max and avg
 * exist for int8, uint8, int32, uint32, int64, f16, f32, f64 and bf16 (avg:
 * premultiplied sum for floats, sum then integer division for integers). */
static int cuda_can_reduce(gcsh_dtype dt, gcsh_redop op)
{
    return (unsigned)dt < GCSH_NDTYPES && (unsigned)op < GCSH_NOPS;
}

/* The common tail: the call is on the stream (stream-ordered, see the top). */
static int finish(gcsh_ctx *ctx, cuda_state *st, gcsh_comm_impl *c)
{
    return cuda_enqueued(ctx, st, c);
}

/* A collective of a communicator of one rank (a split by rank on one GPU
 * a rank): its result is its input (a reduction of one contribution, the
 * one chunk of a gather, scatter, broadcast or scan), so it is a copy on the
 * stream, nothing in place, and no NCCL call, as NCCL's own one-rank path
 * is.  Not NCCL's: 2.28.3 keeps about 175 bytes of host memory for every
 * call on a communicator of one rank, destroyed or not
 * (scripts/bench/nccl_onerank_rss.c), so a session splitting by rank grew
 * by half a KiB a split (issue 35).  No twin is made for it either. */
static int one_rank(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *in, void *out, size_t bytes)
{
    cuda_state *st = comm_enter(ctx, c);
    if (!st)
        return -1;
    if (in != out && bytes)
        CUDA_TRY(ctx, cudaMemcpyAsync(out, in, bytes, cudaMemcpyDefault, st->stream));
    /* stream-ordered as every call, but c is not marked busy: an interrupt
     * while the copy runs has no NCCL work of c to abort (and with
     * GCSH_SPLIT_SHARE an abort of c would abort its whole family) */
    return cuda_enqueued(ctx, st, NULL);
fail:
    return -1;
}

/* A 1-element sum on the rank's stream: returns once every rank has reached
 * it (NCCL cannot finish a reduction before all contributions arrive). */
static int cuda_barrier(gcsh_ctx *ctx, gcsh_comm_impl *c)
{
    cuda_state *st = comm_enter(ctx, c);
    if (!st)
        return -1;
    if (c->size == 1) /* reached by every rank; nothing of NCCL's (one_rank) */
        return cuda_wait(ctx, st, NULL);
    ncclComm_t k = any_of(c); /* no twin for it: every comm gets a barrier at the end */
    NCCL_TRY(ctx, k, ncclAllReduce(st->scratch, st->scratch, 1, ncclInt32, ncclSum, k, st->stream));
    if (issued(ctx, c, k, "barrier") != 0)
        return -1;
    return cuda_wait(ctx, st, c); /* a barrier returns once every rank reached it */
fail:
    return -1;
}

static int cuda_allreduce(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *in, void *out,
                          size_t count, gcsh_dtype dt, gcsh_redop op)
{
    if (c->size == 1)
        return one_rank(ctx, c, in, out, count * gcsh_dtype_size(dt));
    cuda_state *st = coll_enter(ctx, c);
    if (!st)
        return -1;
    NCCL_TRY(ctx, c->coll,
             ncclAllReduce(in, out, count, cuda_nccl_type(dt), nccl_op[op], c->coll, st->stream));
    return finish(ctx, st, c);
fail:
    return -1;
}

static int cuda_broadcast(gcsh_ctx *ctx, gcsh_comm_impl *c, void *buf, size_t count,
                          gcsh_dtype dt, int root)
{
    if (c->size == 1)
        return one_rank(ctx, c, buf, buf, 0);
    cuda_state *st = coll_enter(ctx, c);
    if (!st)
        return -1;
    NCCL_TRY(ctx, c->coll,
             ncclBroadcast(buf, buf, count, cuda_nccl_type(dt), root, c->coll, st->stream));
    return finish(ctx, st, c);
fail:
    return -1;
}

/* out matters on the root only; NCCL ignores recvbuff elsewhere. */
static int cuda_reduce(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *in, void *out,
                       size_t count, gcsh_dtype dt, gcsh_redop op, int root)
{
    if (c->size == 1)
        return one_rank(ctx, c, in, out, count * gcsh_dtype_size(dt));
    cuda_state *st = coll_enter(ctx, c);
    if (!st)
        return -1;
    NCCL_TRY(ctx, c->coll,
             ncclReduce(in, out, count, cuda_nccl_type(dt), nccl_op[op], root, c->coll,
                        st->stream));
    return finish(ctx, st, c);
fail:
    return -1;
}

/* Closes the group the calls were issued in (their status r), frees tmp
 * (stream-ordered, after them; NULL: none) and ends as every collective. */
static int end_group(gcsh_ctx *ctx, gcsh_comm_impl *c, cuda_state *st, ncclResult_t r, void *tmp)
{
    ncclResult_t g = ncclGroupEnd(); /* always closes the group, even after r fails */
    NCCL_TRY(ctx, c->coll, r);
    NCCL_TRY(ctx, c->coll, g);
    if (tmp) {
        void *t = tmp;
        tmp = NULL; /* a failed free is not tried twice */
        CUDA_TRY(ctx, cudaFreeAsync(t, st->stream));
    }
    return finish(ctx, st, c);
fail:
    if (tmp)
        cudaFreeAsync(tmp, st->stream);
    return -1;
}

/* op's identity in dt (sum 0, prod 1, min the largest value, max the
 * smallest): what a rank after a scan's root contributes to its reduce. */
static gcsh_scalar identity(gcsh_dtype dt, gcsh_redop op)
{
    int largest = op == GCSH_OP_MIN;
    if (op == GCSH_OP_SUM || op == GCSH_OP_PROD)
        return (gcsh_scalar){.is_int = 1, .i = op == GCSH_OP_PROD};
    if (gcsh_dtype_is_float(dt))
        return (gcsh_scalar){.f = largest ? INFINITY : -INFINITY};
    int bits = gcsh_dtype_bits(dt); /* magnitude bits: one fewer than the size when signed */
    int64_t max = (int64_t)((UINT64_C(1) << bits) - 1);
    int is_signed = bits < 8 * (int)gcsh_dtype_size(dt);
    return (gcsh_scalar){.is_int = 1, .i = largest ? max : is_signed ? -max - 1 : 0};
}

/* One reduce per root inside an open group: root r's reduce takes the
 * inputs of ranks 0..r and op's identity from the others. */
static ncclResult_t scan_calls(gcsh_comm_impl *c, cuda_state *st, const void *in,
                               const void *neutral, void *out, size_t count, gcsh_dtype dt,
                               gcsh_redop op)
{
    for (int root = 0; root < c->size; root++) {
        ncclResult_t r = ncclReduce(c->rank <= root ? in : neutral, out, count,
                                    cuda_nccl_type(dt), nccl_op[op], root, c->coll, st->stream);
        if (r != ncclSuccess)
            return r;
    }
    return ncclSuccess;
}

/* NCCL has no scan: one group of size reduces (scan_calls).  The identity
 * sits in a temporary buffer, and so does an in-place call's input, which
 * the reduce to this rank would otherwise overwrite while the reduces to
 * later ranks still read it. */
static int cuda_scan(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *in, void *out, size_t count,
                     gcsh_dtype dt, gcsh_redop op)
{
    size_t esize = gcsh_dtype_size(dt), bytes = count * esize;
    char *tmp = NULL; /* the identity, then an in-place call's input */
    if (c->size == 1)
        return one_rank(ctx, c, in, out, bytes);
    cuda_state *st = coll_enter(ctx, c);
    if (!st)
        return -1;
    if (!bytes)
        return 0;
    CUDA_TRY(ctx, cudaMallocAsync((void **)&tmp, in == out ? 2 * bytes : bytes, st->stream));
    uint64_t bits = 0;
    gcsh_elem_store_scalar(&bits, dt, 0, identity(dt, op));
    CUDA_TRY(ctx, gcsh_k_fill(tmp, esize, count, bits, st->stream));
    if (in == out) {
        CUDA_TRY(ctx, cudaMemcpyAsync(tmp + bytes, in, bytes, cudaMemcpyDeviceToDevice,
                                      st->stream));
        in = tmp + bytes;
    }
    NCCL_TRY(ctx, c->coll, ncclGroupStart());
    return end_group(ctx, c, st, scan_calls(c, st, in, tmp, out, count, dt, op), tmp);
fail:
    if (tmp)
        cudaFreeAsync(tmp, st->stream);
    return -1;
}

static int cuda_allgather(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *in, void *out,
                          size_t count, gcsh_dtype dt)
{
    if (c->size == 1)
        return one_rank(ctx, c, in, out, count * gcsh_dtype_size(dt));
    cuda_state *st = coll_enter(ctx, c);
    if (!st)
        return -1;
    NCCL_TRY(ctx, c->coll,
             ncclAllGather(in, out, count, cuda_nccl_type(dt), c->coll, st->stream));
    return finish(ctx, st, c);
fail:
    return -1;
}

static int cuda_reducescatter(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *in, void *out,
                              size_t count, gcsh_dtype dt, gcsh_redop op)
{
    if (c->size == 1)
        return one_rank(ctx, c, in, out, count * gcsh_dtype_size(dt));
    cuda_state *st = coll_enter(ctx, c);
    if (!st)
        return -1;
    NCCL_TRY(ctx, c->coll,
             ncclReduceScatter(in, out, count, cuda_nccl_type(dt), nccl_op[op], c->coll,
                               st->stream));
    return finish(ctx, st, c);
fail:
    return -1;
}

/* Enqueues one send and one receive per peer inside an open group.  Stops at
 * the first failure; the caller still closes the group. */
static ncclResult_t alltoall_calls(gcsh_comm_impl *c, cuda_state *st, const char *in,
                                   char *out, size_t count, gcsh_dtype dt)
{
    size_t chunk = count * gcsh_dtype_size(dt);
    ncclDataType_t type = cuda_nccl_type(dt);
    for (int p = 0; p < c->size; p++) {
        ncclResult_t r = ncclSend(in + p * chunk, count, type, p, c->coll, st->stream);
        if (r == ncclSuccess)
            r = ncclRecv(out + p * chunk, count, type, p, c->coll, st->stream);
        if (r != ncclSuccess)
            return r;
    }
    return ncclSuccess;
}

/* NCCL has no alltoall: one group of size sends and size receives (the
 * self-pair is a local copy inside NCCL).  An in-place call (in == out) would
 * let a receive overwrite a chunk not yet sent, so it goes through a
 * temporary copy of the input. */
static int cuda_alltoall(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *in, void *out,
                         size_t count, gcsh_dtype dt)
{
    void *tmp = NULL;
    size_t bytes = count * gcsh_dtype_size(dt) * (size_t)c->size;
    if (c->size == 1)
        return one_rank(ctx, c, in, out, bytes);
    cuda_state *st = coll_enter(ctx, c);
    if (!st)
        return -1;
    if (in == out && bytes) {
        CUDA_TRY(ctx, cudaMallocAsync(&tmp, bytes, st->stream));
        CUDA_TRY(ctx, cudaMemcpyAsync(tmp, in, bytes, cudaMemcpyDeviceToDevice, st->stream));
        in = tmp;
    }
    NCCL_TRY(ctx, c->coll, ncclGroupStart());
    return end_group(ctx, c, st, alltoall_calls(c, st, in, out, count, dt), tmp);
fail:
    if (tmp)
        cudaFreeAsync(tmp, st->stream);
    return -1;
}

static int cuda_send(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *buf, size_t count,
                     gcsh_dtype dt, int peer)
{
    cuda_state *st = comm_enter(ctx, c);
    if (!st)
        return -1;
    ncclComm_t k = any_of(c); /* a pair's call cannot make the twin of all */
    NCCL_TRY(ctx, k, ncclSend(buf, count, cuda_nccl_type(dt), peer, k, st->stream));
    if (issued(ctx, c, k, "send") != 0)
        return -1;
    return finish(ctx, st, c);
fail:
    return -1;
}

static int cuda_recv(gcsh_ctx *ctx, gcsh_comm_impl *c, void *buf, size_t count, gcsh_dtype dt,
                     int peer)
{
    cuda_state *st = comm_enter(ctx, c);
    if (!st)
        return -1;
    ncclComm_t k = any_of(c); /* a pair's call cannot make the twin of all */
    NCCL_TRY(ctx, k, ncclRecv(buf, count, cuda_nccl_type(dt), peer, k, st->stream));
    if (issued(ctx, c, k, "recv") != 0)
        return -1;
    return finish(ctx, st, c);
fail:
    return -1;
}

/* Another rank was interrupted or .abort was typed: stop c here too. */
static void cuda_comm_abort(gcsh_ctx *ctx, gcsh_comm_impl *c)
{
    if (c->aborted || !cuda_enter(ctx))
        return;
    cuda_abort_comm(c);
}

static int cuda_comm_aborted(gcsh_comm_impl *c)
{
    return c->aborted;
}

/* The control exchange over the communicator's MPI twin: host memory only,
 * no GPU involved (the stream may be busy or wedged).  The orphan list's
 * exchange (core/orphans.h) polls so that an interrupt from rank 0 ends the
 * wait, through a buffer of its own that an abandoned MPI_Iallgather may
 * still write.  A collective that cannot be completed leaves the
 * communicator unusable, so it is aborted (NCCL side too: the ranks are no
 * longer in step). */
static int cuda_agree(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *mine, void *all,
                      size_t bytes)
{
    if (c->aborted)
        return gcsh_set_error(ctx, "communicator was aborted after an error or an interrupt; "
                                   "free it and create a new one");
    if (bytes > INT_MAX)
        return gcsh_set_error(ctx, "agree: %zu bytes is more than one exchange carries", bytes);
    int mpi_rc;
    int rc = gcsh_orphans_allgather(gcsh_orphans_of(ctx), c->mpi, c->size, mine, all, bytes,
                                    &ctx->interrupt, gcsh_gpu_poll_pause, &mpi_rc);
    if (rc == 0)
        return 0;
    if (rc == GCSH_EXCHANGE_FAILED && mpi_rc == -1)
        return gcsh_set_error(ctx, "agree: out of host memory for %zu bytes",
                              bytes * (size_t)(c->size + 1));
    cuda_abort_comm(c);
    if (rc == GCSH_EXCHANGE_INTERRUPTED)
        return gcsh_set_error(ctx, "interrupted during a control exchange (agree); "
                                   "communicator aborted, create a new one");
    return gcsh_set_error(ctx, "agree: MPI_Iallgather failed (MPI error %d); communicator "
                               "aborted, create a new one", mpi_rc);
}

/* backend.h: for ranks inside one registration together.  The MPI twin
 * stays usable after ncclCommAbort, so a rank whose NCCL side was aborted in
 * a stage still tells the others (that is how they learn of it). */
static int cuda_agree_blocking(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *mine, void *all,
                               size_t bytes)
{
    if (bytes > INT_MAX)
        return gcsh_set_error(ctx, "agree: %zu bytes is more than one exchange carries", bytes);
    GCSH_MPI_TRY(ctx, "agree: ", MPI_Allgather,
                   (mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, c->mpi));
    return 0;
}

const gcsh_comm_ops gcsh_cuda_comm_ops = {
    .world = cuda_world,
    .split = cuda_split,
    .release = cuda_comm_release,
    .rank = cuda_comm_rank,
    .size = cuda_comm_size,
    .can_reduce = cuda_can_reduce,
    .barrier = cuda_barrier,
    .allreduce = cuda_allreduce,
    .broadcast = cuda_broadcast,
    .reduce = cuda_reduce,
    .scan = cuda_scan,
    .allgather = cuda_allgather,
    .reducescatter = cuda_reducescatter,
    .alltoall = cuda_alltoall,
    .send = cuda_send,
    .recv = cuda_recv,
    .agree = cuda_agree,
    .agree_blocking = cuda_agree_blocking,
    .abort = cuda_comm_abort,
    .aborted = cuda_comm_aborted,
};
