/* The host backend: CPU memory, MPI collectives, C loops as "kernels". */
#ifndef GCSH_HOST_H
#define GCSH_HOST_H

#include <stdatomic.h>
#include <stdint.h>

#include <mpi.h>

#include "core/backend.h"
#include "core/netpath.h"

/* The host backend's table. */
extern const gcsh_backend gcsh_host_backend;
extern const gcsh_mem_ops gcsh_host_mem_ops;
extern const gcsh_comm_ops gcsh_host_comm_ops;
extern const gcsh_window_ops gcsh_host_window_ops; /* host_window.c */
extern const gcsh_kernel_ops gcsh_host_kernel_ops; /* host_kern.c */
extern const gcsh_xfer_ops gcsh_host_xfer_ops;     /* host_xfer.c */
extern const gcsh_graph_ops gcsh_host_graph_ops;   /* host_graph.c */
extern const gcsh_persist_ops gcsh_host_persist_ops; /* host_persist.c */

/* A copy of a backend's table in which every operation that touches memory
 * first waits for the rank's persistent all-reduces (host_order.c): what
 * host_init makes the rank's ctx->be.  Freed with free(). */
typedef struct gcsh_host_ordered gcsh_host_ordered;
gcsh_host_ordered *gcsh_host_ordered_new(const gcsh_backend *host);
const gcsh_backend *gcsh_host_ordered_backend(const gcsh_host_ordered *t);

/* Per-rank MPI objects of the collectives (datatypes and ops for f16/bf16);
 * defined in host_comm.c. */
typedef struct gcsh_host_comm_state gcsh_host_comm_state;

/* The host backend's per-rank state, hung off ctx->be_state by host_init. */
typedef struct gcsh_host_state {
    gcsh_host_comm_state *comm;
    gcsh_persist_impl *resident; /* running persistent all-reduces (host_persist.c) */
    /* What an abort of a communicator runs first (host_persist.c registers
     * it with its first resident: the residents on it stop, as their calls
     * would wait for peers forever), so host_comm.c never names it. */
    void (*on_comm_abort)(gcsh_ctx *ctx, gcsh_comm_impl *c);
    gcsh_host_ordered *ordered;  /* the rank's ctx->be (host_order.c) */
    gcsh_netpath *net;           /* the network path, once a window needs it (core/netpath.h) */
} gcsh_host_state;

/* Creates / frees state->comm (MPI must be initialised; local, not collective). */
int gcsh_host_comm_init(gcsh_ctx *ctx, gcsh_host_state *state);
void gcsh_host_comm_fini(gcsh_ctx *ctx, gcsh_host_state *state);

/* Small collectives through the node's shared memory (host_small.c): a
 * communicator whose members all share this node has a segment with a slot
 * of GCSH_HOST_SMALL_BYTES per member; a collective whose every member posts
 * at most that many bytes runs there instead of through MPI's non-blocking
 * calls, interruptible as they are. */
typedef struct gcsh_host_small gcsh_host_small;
enum gcsh_small_what {
    GCSH_SMALL_BARRIER, GCSH_SMALL_ALLREDUCE, GCSH_SMALL_BROADCAST, GCSH_SMALL_REDUCE,
    GCSH_SMALL_SCAN, GCSH_SMALL_ALLGATHER, GCSH_SMALL_REDUCESCATTER, GCSH_SMALL_ALLTOALL,
    GCSH_SMALL_NCALLS
};
/* One call, as host_comm.c's collective of the same name takes it (out is
 * broadcast's buffer; reduce_scatter's and alltoall's in hold count x size
 * elements); type and mpi_op reduce the elements (MPI_Reduce_local). */
typedef struct gcsh_small_call {
    enum gcsh_small_what what;
    const void *in;
    void *out;
    size_t count, esize;
    int dtype, op, root;
    MPI_Datatype type;
    MPI_Op mpi_op;
} gcsh_small_call;
/* Collective over comm, where it is made: *out is the segment, or NULL
 * when the members span nodes, GCSH_HOST_SMALL_BYTES is 0 or shared memory
 * cannot be had (every call then goes to MPI).  0, or -1 with ctx->err. */
int gcsh_host_small_open(gcsh_ctx *ctx, MPI_Comm comm, int rank, int size,
                         gcsh_host_small **out);
/* Local (munmap), so a communicator freed by one rank alone frees it. */
void gcsh_host_small_close(gcsh_host_small *s);
/* Whether s exists and a member may post `bytes` there. */
int gcsh_host_small_fits(const gcsh_host_small *s, size_t bytes);
/* Runs c on every member: 0, or -1 with ctx->err (interrupted, a peer
 * aborted, ranks that called differently): the segment is then out of
 * step and the communicator must be retired. */
int gcsh_host_small_run(gcsh_ctx *ctx, gcsh_host_small *s, const gcsh_small_call *c);

/* The MPI communicator under a gcsh communicator, for windows; -1 with
 * ctx->err when an interrupt left it broken (host_comm.c). */
int gcsh_host_comm_mpi(gcsh_ctx *ctx, gcsh_comm_impl *c, MPI_Comm *out);

/* Waits until `*word cmp v` holds (acquire): 0; 1 after timeout seconds
 * (INFINITY: never); -1 with ctx->err = `interrupted` when the rank is
 * interrupted (host_wait.c). */
int gcsh_host_wait_word(gcsh_ctx *ctx, _Atomic uint64_t *word, enum gcsh_cmp cmp, uint64_t v,
                        double timeout, const char *interrupted);
/* What a wait is for, for hang reports (core/waitnote.h): text(arg) writes
 * "barrier ready #17" and the like, called only when the wait does not
 * hold at the first look; peer: the rank whose word it is (-1: anyone);
 * shift: the printed value is (word & mask) >> shift. */
typedef struct gcsh_host_note {
    void (*text)(const void *arg, char *buf, size_t len);
    const void *arg;
    int peer, shift;
} gcsh_host_note;
/* gcsh_host_wait_word, noted (note may be NULL). */
int gcsh_host_wait_noted(gcsh_ctx *ctx, _Atomic uint64_t *word, enum gcsh_cmp cmp, uint64_t v,
                         double timeout, const char *interrupted, const gcsh_host_note *note);
/* Waits, with no time bound, until `(*word & mask) == v`: 0, or -1 as above. */
int gcsh_host_wait_bits(gcsh_ctx *ctx, _Atomic uint64_t *word, uint64_t mask, uint64_t v,
                        const char *interrupted, const gcsh_host_note *note);

/* Waits, with no time bound, until the element of dt at elem compares true
 * against v (gcsh_elem_holds), noted for hang reports as `what` of
 * communicator rank peer's slice (-1: none): 0, or -1 as above. */
int gcsh_host_wait_elem(gcsh_ctx *ctx, const void *elem, gcsh_dtype dt, enum gcsh_cmp cmp,
                        gcsh_scalar v, const char *interrupted, const char *what, int peer);

/* gcsh_window_ops.net of host windows (host_window.c): a rank off the team. */
int gcsh_host_window_net(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d, int rank,
                         enum gcsh_net_op op, size_t offset, void *data, size_t bytes,
                         uint64_t value, uint64_t *old);

/* kernel.allreduce{algo="ll"} (host_ll.c; core/kll.h). */
int gcsh_host_ll_allreduce(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                           const gcsh_kll_args *a);

/* The host backend's stream order: waits until every running persistent
 * all-reduce of the rank completed the calls rung so far (host_persist.c). */
int gcsh_host_persist_drain(gcsh_ctx *ctx);

#endif
