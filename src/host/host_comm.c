/* Host collectives over MPI.
 *
 * Each gcsh communicator is a private MPI communicator (a dup of WORLD, or a
 * split of one) with MPI_ERRORS_RETURN, so an MPI failure becomes a Lua error
 * instead of an abort.
 *
 * Small collectives on a communicator within one node go through shared
 * memory instead (host_small.c: no MPI call, the same interruptible waits);
 * the rest of this file is the MPI path.
 *
 * Every operation is posted non-blocking and waited for by polling, so that an
 * interrupt from the terminal (ctx->interrupt) can abandon a collective that
 * some rank never joined.  MPI cannot cancel a collective, so the abandoned
 * communicator is marked broken (retired: every later operation on it fails,
 * and it is never freed), and the request goes to the rank's orphan list
 * with the memory it may still touch, which is then not freed until MPI is
 * done with it (core/orphans.h).  An MPI error inside a collective does the
 * same: the ranks are out of step after it.
 *
 * dtypes: f16 and bf16 reductions run through user-defined MPI ops (widen to
 * f32, reduce, round back) over an opaque 2-byte type of our own, so MPI never
 * applies a built-in op to them.  Every other dtype uses MPI's own types and
 * ops.  avg is sum followed by a divide by the communicator size, as NCCL's
 * ncclAvg: the mean for floats; for integers the sum (wrapped in the dtype)
 * divided with C's integer division, i.e. truncated toward zero.
 *
 * Large counts: MPI counts are ints.  Reductions are cut into pieces of at
 * most max_count elements (elementwise ops do not care where the cuts are);
 * data movement describes a long buffer as one derived datatype whose extent is
 * the whole buffer (BigMPI's approach), so gathers still land block after
 * block.  GCSH_HOST_MPI_MAX_COUNT lowers max_count so tests reach those paths
 * with small tensors.
 */
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "core/mpi_try.h"
#include "core/gcsh.h"
#include "core/orphans.h"
#include "host/host.h"
#include "core/env.h"

struct gcsh_comm_impl {
    MPI_Comm comm;
    int rank, size;
    int broken; /* an interrupt abandoned a request here: see the top of the file */
    gcsh_host_small *small; /* the shared-memory path, or NULL (host_small.c) */
};

enum { HALF_F16, HALF_BF16, NHALF };
/* sum prod min max, in gcsh_redop order; avg reuses sum */
enum { NHALF_OPS = GCSH_OP_MAX + 1 };

struct gcsh_host_comm_state {
    MPI_Datatype half; /* 2 opaque bytes: f16 and bf16 */
    MPI_Op half_op[NHALF][NHALF_OPS];
    size_t max_count; /* elements in one MPI count */
};

/* Tag of gcsh's point-to-point messages; each communicator is private to gcsh. */
#define P2P_TAG 7411


/* ---- errors ------------------------------------------------------------- */

#define RED_ADD(x, y) ((x) + (y))
#define RED_MUL(x, y) ((x) * (y))
#define RED_MIN(x, y) ((x) < (y) ? (x) : (y))
#define RED_MAX(x, y) ((x) > (y) ? (x) : (y))

/* MPI's contract: inout[i] = in[i] op inout[i] for *len elements. */
#define HALF_REDUCE_FN(name, to_f32, from_f32, combine)                            \
    static void name(void *in, void *inout, int *len, MPI_Datatype *type)          \
    {                                                                              \
        (void)type;                                                                \
        const uint16_t *a = in;                                                    \
        uint16_t *b = inout;                                                       \
        for (int i = 0; i < *len; i++) {                                           \
            float x = to_f32(a[i]), y = to_f32(b[i]);                              \
            b[i] = from_f32(combine(x, y));                                        \
        }                                                                          \
    }

HALF_REDUCE_FN(f16_sum, gcsh_f16_to_f32, gcsh_f32_to_f16, RED_ADD)
HALF_REDUCE_FN(f16_prod, gcsh_f16_to_f32, gcsh_f32_to_f16, RED_MUL)
HALF_REDUCE_FN(f16_min, gcsh_f16_to_f32, gcsh_f32_to_f16, RED_MIN)
HALF_REDUCE_FN(f16_max, gcsh_f16_to_f32, gcsh_f32_to_f16, RED_MAX)
HALF_REDUCE_FN(bf16_sum, gcsh_bf16_to_f32, gcsh_f32_to_bf16, RED_ADD)
HALF_REDUCE_FN(bf16_prod, gcsh_bf16_to_f32, gcsh_f32_to_bf16, RED_MUL)
HALF_REDUCE_FN(bf16_min, gcsh_bf16_to_f32, gcsh_f32_to_bf16, RED_MIN)
HALF_REDUCE_FN(bf16_max, gcsh_bf16_to_f32, gcsh_f32_to_bf16, RED_MAX)

static MPI_User_function *const half_fns[NHALF][NHALF_OPS] = {
    [HALF_F16] = {f16_sum, f16_prod, f16_min, f16_max},
    [HALF_BF16] = {bf16_sum, bf16_prod, bf16_min, bf16_max},
};

/* ---- per-rank state ----------------------------------------------------- */

static size_t max_count_setting(void)
{
    return (size_t)gcsh_env_value(GCSH_ENV_HOST_MPI_MAX_COUNT);
}

static void state_free(gcsh_host_comm_state *s)
{
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
        for (int h = 0; h < NHALF; h++)
            for (int o = 0; o < NHALF_OPS; o++)
                if (s->half_op[h][o] != MPI_OP_NULL)
                    MPI_Op_free(&s->half_op[h][o]);
        if (s->half != MPI_DATATYPE_NULL)
            MPI_Type_free(&s->half);
    }
    free(s);
}

int gcsh_host_comm_init(gcsh_ctx *ctx, gcsh_host_state *hs)
{
    gcsh_host_comm_state *s = calloc(1, sizeof *s);
    if (!s)
        return gcsh_set_error(ctx, "host collectives: out of memory");
    s->half = MPI_DATATYPE_NULL;
    for (int h = 0; h < NHALF; h++)
        for (int o = 0; o < NHALF_OPS; o++)
            s->half_op[h][o] = MPI_OP_NULL;
    s->max_count = max_count_setting();
    GCSH_MPI_TRY_GOTO(ctx, "", fail, MPI_Type_contiguous, (2, MPI_BYTE, &s->half));
    GCSH_MPI_TRY_GOTO(ctx, "", fail, MPI_Type_commit, (&s->half));
    for (int h = 0; h < NHALF; h++)
        for (int o = 0; o < NHALF_OPS; o++)
            GCSH_MPI_TRY_GOTO(ctx, "", fail, MPI_Op_create,
                                (half_fns[h][o], 1, &s->half_op[h][o]));
    hs->comm = s;
    return 0;
fail:
    state_free(s);
    return -1;
}

void gcsh_host_comm_fini(gcsh_ctx *ctx, gcsh_host_state *hs)
{
    gcsh_orphans_reap(ctx->orphans);
    /* an abandoned request may still reduce with our ops: they stay */
    if (hs->comm && gcsh_orphans_pending(ctx->orphans) == 0)
        state_free(hs->comm);
    hs->comm = NULL;
}

static const gcsh_host_comm_state *state_of(gcsh_ctx *ctx)
{
    return ((const gcsh_host_state *)ctx->be_state)->comm;
}

/* ---- dtype and op mapping ----------------------------------------------- */

static MPI_Datatype mpi_type(const gcsh_host_comm_state *s, gcsh_dtype dt)
{
    switch (dt) {
    case GCSH_F64: return MPI_DOUBLE;
    case GCSH_F32: return MPI_FLOAT;
    case GCSH_F16:
    case GCSH_BF16: return s->half;
    case GCSH_I64: return MPI_INT64_T;
    case GCSH_I32: return MPI_INT32_T;
    case GCSH_U32: return MPI_UINT32_T;
    case GCSH_U8: return MPI_UINT8_T;
    case GCSH_I8: return MPI_INT8_T;
    default: return MPI_DATATYPE_NULL;
    }
}

static MPI_Op mpi_op(const gcsh_host_comm_state *s, gcsh_dtype dt, gcsh_redop op)
{
    gcsh_redop base = op == GCSH_OP_AVG ? GCSH_OP_SUM : op;
    if (dt == GCSH_F16 || dt == GCSH_BF16)
        return s->half_op[dt == GCSH_F16 ? HALF_F16 : HALF_BF16][base];
    switch (base) {
    case GCSH_OP_SUM: return MPI_SUM;
    case GCSH_OP_PROD: return MPI_PROD;
    case GCSH_OP_MIN: return MPI_MIN;
    case GCSH_OP_MAX: return MPI_MAX;
    default: return MPI_OP_NULL;
    }
}

/* MPI defines sum, prod, min and max on every C integer and floating type we
 * map to (u8 and i8 included: their products wrap like any C integer), f16
 * and bf16 have our own four ops, and avg is sum plus a divide: so the host
 * backend reduces every dtype with every op. */
static int host_can_reduce(gcsh_dtype dt, gcsh_redop op)
{
    return dt < GCSH_NDTYPES && op < GCSH_NOPS;
}

/* The second half of avg, see the top of the file. */
static void divide_by_size(void *buf, size_t count, gcsh_dtype dt, int size)
{
    if (size == 1)
        return;
    if (gcsh_dtype_is_float(dt)) {
        for (size_t i = 0; i < count; i++)
            gcsh_store_f(buf, dt, i, gcsh_load_f(buf, dt, i) / size);
    } else {
        for (size_t i = 0; i < count; i++)
            gcsh_store_i(buf, dt, i, gcsh_load_i(buf, dt, i) / size);
    }
}

/* ---- spans: a buffer of count elements as one (datatype, n) ------------- */

typedef struct span {
    MPI_Datatype type;
    int n;
    int derived; /* type was made here and must be freed */
} span;

/* Builds the BigMPI-style type for count > max_count: q blocks of max_count
 * elements, then a tail of r, resized so its extent is exactly count elements. */
static int span_make_derived(gcsh_ctx *ctx, const gcsh_host_comm_state *s, MPI_Datatype base,
                             size_t esize, size_t count, MPI_Datatype *out)
{
    size_t q = count / s->max_count, r = count % s->max_count;
    if (q > INT_MAX)
        return gcsh_set_error(ctx, "host collectives: %zu elements are too many for MPI", count);
    MPI_Datatype block = MPI_DATATYPE_NULL, blocks = MPI_DATATYPE_NULL;
    MPI_Datatype tail = MPI_DATATYPE_NULL, whole = MPI_DATATYPE_NULL;
    int rc = -1;
    GCSH_MPI_TRY_GOTO(ctx, "", done, MPI_Type_contiguous, ((int)s->max_count, base, &block));
    GCSH_MPI_TRY_GOTO(ctx, "", done, MPI_Type_contiguous, ((int)q, block, &blocks));
    if (r == 0) {
        whole = blocks;
        blocks = MPI_DATATYPE_NULL;
    } else {
        GCSH_MPI_TRY_GOTO(ctx, "", done, MPI_Type_contiguous, ((int)r, base, &tail));
        int lens[2] = {1, 1};
        MPI_Aint disps[2] = {0, (MPI_Aint)(q * s->max_count * esize)};
        MPI_Datatype types[2] = {blocks, tail};
        GCSH_MPI_TRY_GOTO(ctx, "", done, MPI_Type_create_struct, (2, lens, disps, types, &whole));
    }
    GCSH_MPI_TRY_GOTO(ctx, "", done, MPI_Type_create_resized,
                  (whole, 0, (MPI_Aint)(count * esize), out));
    GCSH_MPI_TRY_GOTO(ctx, "", done, MPI_Type_commit, (out));
    rc = 0;
done:
    if (block != MPI_DATATYPE_NULL) MPI_Type_free(&block);
    if (blocks != MPI_DATATYPE_NULL) MPI_Type_free(&blocks);
    if (tail != MPI_DATATYPE_NULL) MPI_Type_free(&tail);
    if (whole != MPI_DATATYPE_NULL) MPI_Type_free(&whole);
    return rc;
}

static int span_make(gcsh_ctx *ctx, gcsh_dtype dt, size_t count, span *sp)
{
    const gcsh_host_comm_state *s = state_of(ctx);
    sp->type = mpi_type(s, dt);
    sp->n = (int)count;
    sp->derived = 0;
    if (count <= s->max_count)
        return 0;
    if (span_make_derived(ctx, s, sp->type, gcsh_dtype_size(dt), count, &sp->type) != 0)
        return -1;
    sp->n = 1;
    sp->derived = 1;
    return 0;
}

static void span_free(span *sp)
{
    if (sp->derived)
        MPI_Type_free(&sp->type);
}

/* ---- waiting ------------------------------------------------------------ */

static int usable(gcsh_ctx *ctx, const gcsh_comm_impl *c)
{
    if (c->broken)
        return gcsh_set_error(ctx, "this communicator was abandoned by an interrupt and can "
                                   "no longer be used: free it and make a new one");
    return 0;
}

/* What a posted request may read and write: where its buffers are (an
 * unused range has p == NULL) and the derived datatype it uses, if any, for
 * the orphan list when it is abandoned. */
typedef struct inflight {
    gcsh_range range[GCSH_ORPHAN_RANGES];
    MPI_Datatype type;
} inflight;

#define NOTHING_INFLIGHT ((inflight){.type = MPI_DATATYPE_NULL})

/* a and b (MPI_IN_PLACE or NULL: nothing) with their lengths in bytes */
static inflight touching(const void *a, size_t alen, const void *b, size_t blen)
{
    if (a == MPI_IN_PLACE)
        a = NULL;
    if (b == MPI_IN_PLACE)
        b = NULL;
    return (inflight){.range = {{a, alen}, {b, blen}}, .type = MPI_DATATYPE_NULL};
}

/* The wait for *req ends without it (see the top of the file): the
 * communicator is retired, and the request goes to the orphan list with
 * what it may touch; `forever`: MPI cannot say when it ends (an error
 * inside a collective, whose parts may still run). */
static void abandon(gcsh_ctx *ctx, gcsh_comm_impl *c, MPI_Request *req, const inflight *f,
                    int forever)
{
    c->broken = 1;
    if (forever && *req != MPI_REQUEST_NULL)
        MPI_Request_free(req);
    gcsh_orphans_adopt(gcsh_orphans_of(ctx), forever ? MPI_REQUEST_NULL : *req, f->range,
                       GCSH_ORPHAN_RANGES, NULL, f->type);
    *req = MPI_REQUEST_NULL;
}

/* What a request is, for wait_status: an MPI error inside a collective
 * leaves the ranks out of step (a point-to-point request that fails is
 * simply over); a receive, unlike a collective or a send, can be cancelled. */
typedef enum { WAIT_P2P = 0, WAIT_COLLECTIVE = 1, WAIT_RECEIVE = 2 } wait_kind;

/* An interrupted receive: MPI_Cancel, then a bounded wait for the request
 * to end (cancelled, or completed if the message was already matched).
 * 1 when it ended: MPI will never touch its buffer, which can be freed at
 * once (an abandoned one kept a 256 MiB buffer until exit); 0 when it is
 * still pending (a matched message whose data has not all come): then it
 * is abandoned as any other request. */
static int cancel_receive(MPI_Request *req)
{
    if (MPI_Cancel(req) != MPI_SUCCESS)
        return 0;
    double until = MPI_Wtime() + 0.5;
    do {
        int done = 0;
        if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return 0;
        if (done)
            return 1;
    } while (MPI_Wtime() < until);
    return 0;
}

/* Waits for *req, polling the rank's interrupt flag (see the top of the
 * file).  f: what the request may touch, kept alive if it is abandoned.
 * Returns 0; -1 with the error set; CANCELLED (a receive interrupted and
 * cancelled: nothing of it lives on). */
#define CANCELLED (-2)
static int wait_status(gcsh_ctx *ctx, gcsh_comm_impl *c, MPI_Request *req, const char *what,
                       const inflight *f, wait_kind kind, MPI_Status *status)
{
    int collective = kind == WAIT_COLLECTIVE;
    gcsh_orphans_reap(ctx->orphans);
    for (;;) {
        int done = 0;
        int rc = MPI_Test(req, &done, status);
        if (rc != MPI_SUCCESS) {
            if (collective)
                abandon(ctx, c, req, f, 1);
            else if (*req != MPI_REQUEST_NULL)
                MPI_Request_free(req); /* over, with an error MPI_Test does not free */
            return gcsh_mpi_failed(ctx, "", what, rc, __FILE__, __LINE__);
        }
        if (done)
            return 0;
        if (atomic_load(&ctx->interrupt)) {
            if (kind == WAIT_RECEIVE && cancel_receive(req)) {
                c->broken = 1; /* the ranks are out of step all the same */
                gcsh_set_error(ctx, "%s interrupted: the receive is cancelled and the "
                                    "communicator abandoned", what);
                return CANCELLED;
            }
            abandon(ctx, c, req, f, 0);
            return gcsh_set_error(ctx, "%s interrupted: the communicator is abandoned (its "
                                       "buffers are kept until MPI is done with them)", what);
        }
    }
}

static int wait_for(gcsh_ctx *ctx, gcsh_comm_impl *c, MPI_Request *req, const char *what,
                    const inflight *f)
{
    return wait_status(ctx, c, req, what, f, WAIT_COLLECTIVE, MPI_STATUS_IGNORE);
}

/* Posts one non-blocking MPI call (args end with &req) and waits for it;
 * f: what it touches (inflight). */
#define POST_AND_WAIT(ctx, c, f, fn, args)                                         \
    do {                                                                           \
        MPI_Request req;                                                           \
        GCSH_MPI_TRY(ctx, "", fn, args);                                         \
        if (wait_for(ctx, c, &req, #fn, f) != 0)                                   \
            return -1;                                                             \
    } while (0)

/* The whole body of a data-movement call (broadcast, allgather, alltoall,
 * send): count elements of dt as one span, one non-blocking MPI call whose
 * args use sp.n and sp.type and end with &req, a wait, and the span freed
 * whatever happened (an abandoned request keeps its derived type: the
 * orphan list frees it after the request).  f: the buffers it touches;
 * coll: whether it is a collective (wait_status).  Returns 0 or -1 from the calling function, so it is the caller's last
 * statement, once per function (the label is its own). */
#define POST_SPAN_AND_RETURN(ctx, c, dt, count, f, coll, fn, args)                 \
    do {                                                                           \
        span sp;                                                                   \
        if (span_make(ctx, dt, count, &sp) != 0)                                   \
            return -1;                                                             \
        inflight in_ = (f);                                                        \
        in_.type = sp.derived ? sp.type : MPI_DATATYPE_NULL;                       \
        int span_rc = -1;                                                          \
        MPI_Request req;                                                           \
        GCSH_MPI_TRY_GOTO(ctx, "", span_done, fn, args);                         \
        if (wait_status(ctx, c, &req, #fn, &in_, coll, MPI_STATUS_IGNORE) != 0) {  \
            if (c->broken)                                                         \
                sp.derived = 0; /* the orphan list owns it now */                  \
            goto span_done;                                                        \
        }                                                                          \
        span_rc = 0;                                                               \
    span_done:                                                                     \
        span_free(&sp);                                                            \
        return span_rc;                                                            \
    } while (0)

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* ---- communicators ------------------------------------------------------ */

static int adopt(gcsh_ctx *ctx, MPI_Comm comm, gcsh_comm_impl **out)
{
    gcsh_comm_impl *c = calloc(1, sizeof *c);
    if (!c) {
        MPI_Comm_free(&comm);
        return gcsh_set_error(ctx, "host collectives: out of memory");
    }
    c->comm = comm;
    MPI_Comm_rank(comm, &c->rank);
    MPI_Comm_size(comm, &c->size);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    if (gcsh_host_small_open(ctx, comm, c->rank, c->size, &c->small) != 0) {
        MPI_Comm_free(&comm);
        free(c);
        return -1;
    }
    *out = c;
    return 0;
}

static int host_world(gcsh_ctx *ctx, gcsh_comm_impl **out)
{
    MPI_Comm comm;
    GCSH_MPI_TRY(ctx, "", MPI_Comm_dup, (MPI_COMM_WORLD, &comm));
    return adopt(ctx, comm, out);
}

/* color < 0: this rank joins no new communicator (MPI_UNDEFINED), *out = NULL. */
static int host_split(gcsh_ctx *ctx, gcsh_comm_impl *parent, int color, int key,
                      gcsh_comm_impl **out)
{
    *out = NULL;
    if (usable(ctx, parent) != 0)
        return -1;
    MPI_Comm comm;
    GCSH_MPI_TRY(ctx, "", MPI_Comm_split,
                   (parent->comm, color < 0 ? MPI_UNDEFINED : color, key, &comm));
    if (comm == MPI_COMM_NULL)
        return 0;
    return adopt(ctx, comm, out);
}

/* Collective (MPI_Comm_free), except for an abandoned communicator, which is
 * leaked: its pending request still refers to it. */
static void host_release(gcsh_ctx *ctx, gcsh_comm_impl *c)
{
    (void)ctx;
    if (!c)
        return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!c->broken && !finalized)
        MPI_Comm_free(&c->comm);
    gcsh_host_small_close(c->small);
    free(c);
}

static int host_rank(gcsh_comm_impl *c)
{
    return c->rank;
}

static int host_size(gcsh_comm_impl *c)
{
    return c->size;
}

/* ---- collectives -------------------------------------------------------- */

/* Whether a call of count elements, of which each member posts `bytes`,
 * takes the shared-memory path: c has one, the bytes fit a slot, and the
 * count fits one MPI call (GCSH_HOST_MPI_MAX_COUNT keeps the cut paths
 * reachable with small tensors). */
static int small_fits(gcsh_ctx *ctx, const gcsh_comm_impl *c, size_t count, size_t bytes)
{
    return count <= state_of(ctx)->max_count && gcsh_host_small_fits(c->small, bytes);
}

/* call on the shared-memory path; a failure leaves the members out of
 * step there, so the communicator is retired as an abandoned request
 * leaves it (nothing of MPI's is pending: no orphan). */
static int small_run(gcsh_ctx *ctx, gcsh_comm_impl *c, gcsh_small_call call)
{
    if (gcsh_host_small_run(ctx, c->small, &call) == 0)
        return 0;
    c->broken = 1;
    return -1;
}

/* A call's description for small_run: reductions fill type and op. */
static gcsh_small_call small_call(enum gcsh_small_what what, const void *in, void *out,
                                  size_t count, gcsh_dtype dt, int root)
{
    return (gcsh_small_call){.what = what, .in = in, .out = out, .count = count,
                             .esize = gcsh_dtype_size(dt), .dtype = (int)dt, .op = -1,
                             .root = root, .type = MPI_DATATYPE_NULL, .mpi_op = MPI_OP_NULL};
}

static gcsh_small_call small_reduction(gcsh_ctx *ctx, enum gcsh_small_what what, const void *in,
                                       void *out, size_t count, gcsh_dtype dt, gcsh_redop op,
                                       int root)
{
    const gcsh_host_comm_state *s = state_of(ctx);
    gcsh_small_call call = small_call(what, in, out, count, dt, root);
    call.op = (int)op;
    call.type = mpi_type(s, dt);
    call.mpi_op = mpi_op(s, dt, op);
    return call;
}

static int host_barrier(gcsh_ctx *ctx, gcsh_comm_impl *c)
{
    if (usable(ctx, c) != 0)
        return -1;
    if (small_fits(ctx, c, 0, 0))
        return small_run(ctx, c, small_call(GCSH_SMALL_BARRIER, NULL, NULL, 0, GCSH_U8, -1));
    inflight none = NOTHING_INFLIGHT;
    POST_AND_WAIT(ctx, c, &none, MPI_Ibarrier, (c->comm, &req));
    return 0;
}

/* MPI_Iallreduce and MPI_Iscan: element-wise, each rank's out from its in */
typedef int (*elementwise_fn)(const void *in, void *out, int n, MPI_Datatype type, MPI_Op op,
                              MPI_Comm comm, MPI_Request *req);

/* One such reduction in chunks of max_count elements: where the cuts are
 * does not matter to an element-wise op.  name: the MPI function's. */
static int chunked(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *in, void *out, size_t count,
                   gcsh_dtype dt, gcsh_redop op, elementwise_fn post, const char *name)
{
    const gcsh_host_comm_state *s = state_of(ctx);
    size_t esize = gcsh_dtype_size(dt);
    for (size_t done = 0; done < count;) {
        size_t n = min_size(count - done, s->max_count);
        const void *src = in == out ? MPI_IN_PLACE : (const char *)in + done * esize;
        char *dst = (char *)out + done * esize;
        inflight f = touching(src, n * esize, dst, n * esize);
        MPI_Request req;
        int rc = post(src, dst, (int)n, mpi_type(s, dt), mpi_op(s, dt, op), c->comm, &req);
        if (rc != MPI_SUCCESS)
            return gcsh_mpi_failed(ctx, "", name, rc, __FILE__, __LINE__);
        if (wait_for(ctx, c, &req, name, &f) != 0)
            return -1;
        done += n;
    }
    return 0;
}

static int host_allreduce(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *in, void *out,
                          size_t count, gcsh_dtype dt, gcsh_redop op)
{
    if (usable(ctx, c) != 0)
        return -1;
    if (small_fits(ctx, c, count, count * gcsh_dtype_size(dt))) {
        if (small_run(ctx, c, small_reduction(ctx, GCSH_SMALL_ALLREDUCE, in, out, count, dt, op,
                                              -1)) != 0)
            return -1;
    } else if (chunked(ctx, c, in, out, count, dt, op, MPI_Iallreduce, "MPI_Iallreduce") != 0) {
        return -1;
    }
    if (op == GCSH_OP_AVG)
        divide_by_size(out, count, dt, c->size);
    return 0;
}

static int host_broadcast(gcsh_ctx *ctx, gcsh_comm_impl *c, void *buf, size_t count,
                          gcsh_dtype dt, int root)
{
    if (usable(ctx, c) != 0)
        return -1;
    if (small_fits(ctx, c, count, count * gcsh_dtype_size(dt)))
        return small_run(ctx, c, small_call(GCSH_SMALL_BROADCAST, NULL, buf, count, dt, root));
    POST_SPAN_AND_RETURN(ctx, c, dt, count, touching(buf, count * gcsh_dtype_size(dt), NULL, 0),
                         1, MPI_Ibcast, (buf, sp.n, sp.type, root, c->comm, &req));
}

/* One chunk of a reduce to root: in place at the root when src == dst. */
static int reduce_chunk(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *src, void *dst, size_t n,
                        gcsh_dtype dt, gcsh_redop op, int root)
{
    const gcsh_host_comm_state *s = state_of(ctx);
    int at_root = c->rank == root;
    const void *send = at_root && src == dst ? MPI_IN_PLACE : src;
    size_t bytes = n * gcsh_dtype_size(dt);
    inflight f = touching(send, bytes, at_root ? dst : NULL, bytes);
    POST_AND_WAIT(ctx, c, &f, MPI_Ireduce, (send, at_root ? dst : NULL, (int)n, mpi_type(s, dt),
                                            mpi_op(s, dt, op), root, c->comm, &req));
    return 0;
}

/* A reduce to root through MPI, in chunks of max_count elements. */
static int reduce_chunked(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *in, void *out,
                          size_t count, gcsh_dtype dt, gcsh_redop op, int root)
{
    size_t esize = gcsh_dtype_size(dt), max = state_of(ctx)->max_count;
    for (size_t done = 0; done < count;) {
        size_t n = min_size(count - done, max);
        if (reduce_chunk(ctx, c, (const char *)in + done * esize, (char *)out + done * esize, n,
                         dt, op, root) != 0)
            return -1;
        done += n;
    }
    return 0;
}

static int host_reduce(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *in, void *out,
                       size_t count, gcsh_dtype dt, gcsh_redop op, int root)
{
    if (usable(ctx, c) != 0)
        return -1;
    int rc = small_fits(ctx, c, count, count * gcsh_dtype_size(dt))
                 ? small_run(ctx, c, small_reduction(ctx, GCSH_SMALL_REDUCE, in, out, count, dt,
                                                     op, root))
                 : reduce_chunked(ctx, c, in, out, count, dt, op, root);
    if (rc != 0)
        return -1;
    if (op == GCSH_OP_AVG && c->rank == root)
        divide_by_size(out, count, dt, c->size);
    return 0;
}

static int host_scan(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *in, void *out, size_t count,
                     gcsh_dtype dt, gcsh_redop op)
{
    if (usable(ctx, c) != 0)
        return -1;
    if (small_fits(ctx, c, count, count * gcsh_dtype_size(dt)))
        return small_run(ctx, c, small_reduction(ctx, GCSH_SMALL_SCAN, in, out, count, dt, op, -1));
    return chunked(ctx, c, in, out, count, dt, op, MPI_Iscan, "MPI_Iscan");
}

static int host_allgather(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *in, void *out,
                          size_t count, gcsh_dtype dt)
{
    if (usable(ctx, c) != 0)
        return -1;
    /* NCCL's in-place layout: my input is my block of the output */
    size_t bytes = count * gcsh_dtype_size(dt);
    if (small_fits(ctx, c, count, bytes))
        return small_run(ctx, c, small_call(GCSH_SMALL_ALLGATHER, in, out, count, dt, -1));
    int in_place = in == (const char *)out + (size_t)c->rank * bytes;
    POST_SPAN_AND_RETURN(ctx, c, dt, count, touching(in, bytes, out, bytes * (size_t)c->size), 1,
                         MPI_Iallgather,
                         (in_place ? MPI_IN_PLACE : in, sp.n, sp.type, out, sp.n, sp.type, c->comm,
                          &req));
}

/* count > max_count: one reduce per block, each to the rank that keeps it. */
static int reducescatter_by_reduces(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *in,
                                    void *out, size_t count, gcsh_dtype dt, gcsh_redop op)
{
    size_t esize = gcsh_dtype_size(dt), max = state_of(ctx)->max_count;
    for (int root = 0; root < c->size; root++) {
        const char *block = (const char *)in + (size_t)root * count * esize;
        for (size_t done = 0; done < count;) {
            size_t n = min_size(count - done, max);
            if (reduce_chunk(ctx, c, block + done * esize, (char *)out + done * esize, n, dt, op,
                             root) != 0)
                return -1;
            done += n;
        }
    }
    return 0;
}

/* In place (NCCL's layout: out is my block of in), MPI leaves the result at
 * the start of in; it is moved to my block, and block 0 of in is clobbered. */
static int reducescatter_block(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *in, void *out,
                               size_t count, gcsh_dtype dt, gcsh_redop op)
{
    const gcsh_host_comm_state *s = state_of(ctx);
    size_t bytes = count * gcsh_dtype_size(dt);
    int in_place = out == (const char *)in + (size_t)c->rank * bytes;
    inflight f = touching(in, bytes * (size_t)c->size, out, bytes);
    POST_AND_WAIT(ctx, c, &f, MPI_Ireduce_scatter_block,
                  (in_place ? MPI_IN_PLACE : in, in_place ? (void *)in : out, (int)count,
                   mpi_type(s, dt), mpi_op(s, dt, op), c->comm, &req));
    if (in_place && c->rank != 0)
        memmove(out, in, bytes);
    return 0;
}

static int host_reducescatter(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *in, void *out,
                              size_t count, gcsh_dtype dt, gcsh_redop op)
{
    if (usable(ctx, c) != 0)
        return -1;
    int rc;
    if (small_fits(ctx, c, count, count * (size_t)c->size * gcsh_dtype_size(dt)))
        rc = small_run(ctx, c, small_reduction(ctx, GCSH_SMALL_REDUCESCATTER, in, out, count, dt,
                                               op, -1));
    else
        rc = count <= state_of(ctx)->max_count
                 ? reducescatter_block(ctx, c, in, out, count, dt, op)
                 : reducescatter_by_reduces(ctx, c, in, out, count, dt, op);
    if (rc == 0 && op == GCSH_OP_AVG)
        divide_by_size(out, count, dt, c->size);
    return rc;
}

static int host_alltoall(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *in, void *out,
                         size_t count, gcsh_dtype dt)
{
    if (usable(ctx, c) != 0)
        return -1;
    size_t bytes = count * (size_t)c->size * gcsh_dtype_size(dt);
    if (small_fits(ctx, c, count, bytes))
        return small_run(ctx, c, small_call(GCSH_SMALL_ALLTOALL, in, out, count, dt, -1));
    POST_SPAN_AND_RETURN(ctx, c, dt, count, touching(in, bytes, out, bytes), 1, MPI_Ialltoall,
                         (in == out ? MPI_IN_PLACE : in, sp.n, sp.type, out, sp.n, sp.type, c->comm,
                          &req));
}

static int host_send(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *buf, size_t count,
                     gcsh_dtype dt, int peer)
{
    if (usable(ctx, c) != 0)
        return -1;
    POST_SPAN_AND_RETURN(ctx, c, dt, count, touching(buf, count * gcsh_dtype_size(dt), NULL, 0),
                         0, MPI_Isend, (buf, sp.n, sp.type, peer, P2P_TAG, c->comm, &req));
}

static int host_recv(gcsh_ctx *ctx, gcsh_comm_impl *c, void *buf, size_t count, gcsh_dtype dt,
                     int peer)
{
    if (usable(ctx, c) != 0)
        return -1;
    span sp;
    if (span_make(ctx, dt, count, &sp) != 0)
        return -1;
    int rc = -1, got = 0;
    MPI_Request req;
    MPI_Status status;
    inflight f = touching(buf, count * gcsh_dtype_size(dt), NULL, 0);
    f.type = sp.derived ? sp.type : MPI_DATATYPE_NULL;
    GCSH_MPI_TRY_GOTO(ctx, "", done, MPI_Irecv,
                        (buf, sp.n, sp.type, peer, P2P_TAG, c->comm, &req));
    int waited = wait_status(ctx, c, &req, "MPI_Irecv", &f, WAIT_RECEIVE, &status);
    if (waited != 0) {
        if (waited != CANCELLED && c->broken)
            sp.derived = 0; /* the orphan list owns it now */
        goto done;
    }
    /* a longer message fails with MPI_ERR_TRUNCATE; a shorter one must fail too */
    GCSH_MPI_TRY_GOTO(ctx, "", done, MPI_Get_count, (&status, sp.type, &got));
    if (got != sp.n) {
        gcsh_set_error(ctx, "recv: peer %d sent fewer than the %zu elements expected", peer, count);
        goto done;
    }
    rc = 0;
done:
    span_free(&sp);
    return rc;
}

/* Through the orphan list's exchange (orphans.h): its buffer, not the
 * caller's, is what an abandoned exchange may still write. */
static int host_agree(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *mine, void *all,
                      size_t bytes)
{
    if (usable(ctx, c) != 0)
        return -1;
    if (bytes > INT_MAX)
        return gcsh_set_error(ctx, "agree: %zu bytes is more than one exchange carries", bytes);
    int mpi_rc;
    int rc = gcsh_orphans_allgather(gcsh_orphans_of(ctx), c->comm, c->size, mine, all, bytes,
                                    &ctx->interrupt, NULL, &mpi_rc);
    if (rc == 0)
        return 0;
    if (rc == GCSH_EXCHANGE_INTERRUPTED || mpi_rc != MPI_SUCCESS)
        c->broken = 1; /* the request lives on, or the ranks are out of step */
    if (rc == GCSH_EXCHANGE_INTERRUPTED)
        return gcsh_set_error(ctx, "MPI_Iallgather interrupted: the communicator is abandoned "
                                   "(its buffers are kept until MPI is done with them)");
    if (mpi_rc == -1)
        return gcsh_set_error(ctx, "agree: out of host memory for %zu bytes",
                              bytes * (size_t)(c->size + 1));
    return gcsh_mpi_failed(ctx, "", "MPI_Iallgather", mpi_rc, __FILE__, __LINE__);
}

/* backend.h: for ranks inside one registration together, so a plain
 * blocking MPI_Allgather (no interrupt can strand a peer in it).  The broken
 * mark is not looked at: it stops gcsh's waits, and this wait is not one. */
static int host_agree_blocking(gcsh_ctx *ctx, gcsh_comm_impl *c, const void *mine, void *all,
                               size_t bytes)
{
    if (bytes > INT_MAX)
        return gcsh_set_error(ctx, "agree: %zu bytes is more than one exchange carries", bytes);
    GCSH_MPI_TRY(ctx, "", MPI_Allgather,
             (mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, c->comm));
    return 0;
}

/* MPI cannot cancel a collective or free a communicator without its peers:
 * aborting marks it broken, so release leaks it and nothing waits. */
static void host_abort(gcsh_ctx *ctx, gcsh_comm_impl *c)
{
    c->broken = 1;
    gcsh_host_state *st = ctx->be_state;
    if (st && st->on_comm_abort) /* the residents on c stop (host.h) */
        st->on_comm_abort(ctx, c);
}

static int host_aborted(gcsh_comm_impl *c)
{
    return c->broken;
}

int gcsh_host_comm_mpi(gcsh_ctx *ctx, gcsh_comm_impl *c, MPI_Comm *out)
{
    if (usable(ctx, c) != 0)
        return -1;
    *out = c->comm;
    return 0;
}

const gcsh_comm_ops gcsh_host_comm_ops = {
    .world = host_world,
    .split = host_split,
    .release = host_release,
    .rank = host_rank,
    .size = host_size,
    .can_reduce = host_can_reduce,
    .barrier = host_barrier,
    .allreduce = host_allreduce,
    .broadcast = host_broadcast,
    .reduce = host_reduce,
    .scan = host_scan,
    .allgather = host_allgather,
    .reducescatter = host_reducescatter,
    .alltoall = host_alltoall,
    .send = host_send,
    .recv = host_recv,
    .agree = host_agree,
    .agree_blocking = host_agree_blocking,
    .abort = host_abort,
    .aborted = host_aborted,
};
