/* Host windows: MPI-3 shared memory, the CPU analogue of NVLink load/store.
 *
 * A window's team is the communicator's ranks on this rank's node: the
 * communicator split by ctx->node, which is the real node, or the emulated one
 * under GCSH_RANKS_PER_NODE (each emulated node is part of a real one, so its
 * ranks can still share memory).  The team allocates one segment with
 * MPI_Win_allocate_shared; MPI_Win_shared_query maps every member's slice
 * here, which gives the peer pointer table.
 *
 * Memory model: the window is locked for passive access for its whole life
 * (MPI_Win_lock_all with MPI_MODE_NOCHECK, the usual shared-memory pattern),
 * and ranks use plain loads and stores; data written before a c:barrier() is
 * visible after it.  Signal words use C11 atomics: release stores and
 * read-modify-writes, acquire loads in the waits.
 *
 * Waits are host_wait.c's: poll, yield, then sleep with a doubling interval,
 * so a long wait does not spin a core; they end with an error when the
 * rank's interrupt flag is raised (Ctrl-C). */
#include <arpa/inet.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "core/mpi_try.h"
#include "core/gcsh.h"
#include "core/orphans.h"
#include "host/host.h"

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "signal words need lock-free 64-bit atomics");

struct gcsh_window_impl {
    gcsh_comm_impl *c; /* the communicator it is registered on (outlives it) */
    MPI_Comm team;     /* the communicator's ranks on this (emulated) node */
    MPI_Win win;
    int locked;        /* MPI_Win_lock_all is in force */
    void *mine;        /* my slice */
    const struct emulated_kind *emu; /* kinds nccl and vmm: their emulation, else NULL */
    /* A window whose communicator spans several nodes: every rank's slice
     * at its network server ([communicator size], core/netpath.c), and
     * mine's id at my server (0: none). */
    gcsh_net_addr *remote;
    uint64_t net_id;
};

/* Kinds "nccl" and "vmm" on the host: the same MPI shared segment, made
 * with the cuda kind's rules (its granularity, its stages, symmetric
 * slices), so a script or a step.window lesson written for a GPU kind runs
 * here first (src/DESIGN.md, Truth rules: emulation as strict as what it
 * stands for).  Their stages are at the end of this file. */
typedef struct emulated_kind emulated_kind;
static const emulated_kind *emulated_kind_of(const char *kind);
static int emulated_stages(const emulated_kind *k);
static size_t emulated_granularity(void);


static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

static int host_granularity(gcsh_ctx *ctx, const char *kind, size_t *gran)
{
    (void)ctx;
    *gran = emulated_kind_of(kind) ? emulated_granularity() : page_size();
    return 0;
}

/* The node's ranks share one segment in host memory: each rank's slice may be
 * at most the machine's RAM divided among the ranks of its (emulated) node.
 * A sanity bound, so that an absurd size is refused everywhere up front. */
static int host_max_bytes(gcsh_ctx *ctx, const char *kind, size_t *max)
{
    (void)kind;
    long pages = sysconf(_SC_PHYS_PAGES);
    size_t ram = pages > 0 ? (size_t)pages * page_size() : SIZE_MAX;
    *max = ram / (size_t)(ctx->local_size > 0 ? ctx->local_size : 1);
    return 0;
}

/* Frees whatever the stages made; safe on a partly made window.  MPI_Win_free
 * and MPI_Comm_free are collective over the team: every member calls this at
 * the same point, unless the communicator was aborted, when the MPI objects
 * are left to MPI_Finalize rather than wait for members that may never come.
 * keep: the segment stays mapped for good (segment_in_use). */
static void release_impl(gcsh_ctx *ctx, gcsh_window_impl *w, gcsh_window_desc *desc, int keep)
{
    gcsh_host_state *state = ctx->be_state;
    /* after the free's barrier: no request comes */
    gcsh_netpath_unregister(state ? state->net : NULL, w->net_id);
    free(w->remote);
    /* the communicator is asked only when there is an MPI object to free: a
     * window that ran no stage (its check failed) may be collected after
     * its communicator is gone, at the session's end */
    int made = w->win != MPI_WIN_NULL || w->team != MPI_COMM_NULL;
    if (!keep && made && !gcsh_host_comm_ops.aborted(w->c)) {
        if (w->locked)
            MPI_Win_unlock_all(w->win);
        if (w->win != MPI_WIN_NULL)
            MPI_Win_free(&w->win);
        if (w->team != MPI_COMM_NULL)
            MPI_Comm_free(&w->team);
    }
    free(w);
    free(desc->team);
    free(desc->peer);
    desc->team = NULL;
    desc->peer = NULL;
    desc->team_size = 0; /* as the cuda kinds do: nothing may rely on it after */
}

/* ---- staged creation (backend.h) ------------------------------------------
 *
 *   segment  MPI_Comm_split of the communicator by node: the team; then
 *            MPI_Win_allocate_shared, one segment with every member's slice,
 *            locked for passive access (MPI_Win_lock_all) for its whole life
 *   peers    MPI_Win_shared_query of every member: the peer pointer table;
 *            my slice zeroed.  The status exchange that follows every stage
 *            (winbuild.c) is the barrier after which all slices read zeros. */

static const char *const host_stage_names[] = {"segment", "peers"};
static const gcsh_window_plan host_plan = {2, host_stage_names};

static const gcsh_window_plan *emulated_plan(const emulated_kind *k);

static const gcsh_window_plan *host_create_plan(const char *kind)
{
    const emulated_kind *k = emulated_kind_of(kind);
    return k ? emulated_plan(k) : &host_plan;
}

static int host_create_begin(gcsh_ctx *ctx, gcsh_comm_impl *c, const char *kind,
                             gcsh_window_desc *desc, gcsh_window_impl **out)
{
    gcsh_window_impl *w = calloc(1, sizeof *w);
    if (!w)
        return gcsh_set_error(ctx, "host window: out of host memory");
    w->c = c;
    w->emu = emulated_kind_of(kind);
    w->team = MPI_COMM_NULL;
    w->win = MPI_WIN_NULL;
    desc->loc = GCSH_LOC_HOST;
    desc->peer_table_dev = NULL;
    *out = w;
    return 0;
}

static int make_team(gcsh_ctx *ctx, MPI_Comm comm, gcsh_window_impl *w, gcsh_window_desc *desc)
{
    int comm_rank;
    GCSH_MPI_TRY_GOTO(ctx, "host window: ", fail, MPI_Comm_rank, (comm, &comm_rank));
    GCSH_MPI_TRY_GOTO(ctx, "host window: ", fail, MPI_Comm_split,
                        (comm, ctx->node, comm_rank, &w->team));
    GCSH_MPI_TRY_GOTO(ctx, "host window: ", fail, MPI_Comm_set_errhandler,
                        (w->team, MPI_ERRORS_RETURN));
    GCSH_MPI_TRY_GOTO(ctx, "host window: ", fail, MPI_Comm_size, (w->team, &desc->team_size));
    GCSH_MPI_TRY_GOTO(ctx, "host window: ", fail, MPI_Comm_rank, (w->team, &desc->team_rank));
    desc->team = calloc((size_t)desc->team_size, sizeof *desc->team);
    desc->peer = calloc((size_t)desc->team_size, sizeof *desc->peer);
    int *index = calloc((size_t)desc->team_size, sizeof *index);
    MPI_Group team = MPI_GROUP_NULL, all = MPI_GROUP_NULL;
    int rc = -1;
    if (!desc->team || !desc->peer || !index) {
        gcsh_set_error(ctx, "host window: out of host memory");
        goto done;
    }
    /* each member's rank in the communicator, from the groups: local, where
     * an MPI_Allgather over the team would be one more collective */
    for (int i = 0; i < desc->team_size; i++)
        index[i] = i;
    GCSH_MPI_TRY_GOTO(ctx, "host window: ", done, MPI_Comm_group, (w->team, &team));
    GCSH_MPI_TRY_GOTO(ctx, "host window: ", done, MPI_Comm_group, (comm, &all));
    GCSH_MPI_TRY_GOTO(ctx, "host window: ", done, MPI_Group_translate_ranks,
                  (team, desc->team_size, index, all, desc->team));
    rc = 0;
done:
    if (team != MPI_GROUP_NULL)
        MPI_Group_free(&team);
    if (all != MPI_GROUP_NULL)
        MPI_Group_free(&all);
    free(index);
    return rc;
fail:
    return -1;
}

static int allocate_segment(gcsh_ctx *ctx, gcsh_window_impl *w, gcsh_window_desc *desc)
{
    MPI_Info info;
    GCSH_MPI_TRY_GOTO(ctx, "host window: ", fail, MPI_Info_create, (&info));
    /* each slice placed by the rank that owns it (its NUMA node), not one
     * block on the first rank's */
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    int rc = MPI_Win_allocate_shared((MPI_Aint)desc->alloc_bytes, 1, info, w->team, &w->mine,
                                     &w->win);
    MPI_Info_free(&info);
    if (rc != MPI_SUCCESS) {
        gcsh_mpi_failed(ctx, "host window: ", "MPI_Win_allocate_shared", rc, __FILE__, __LINE__);
        goto fail;
    }
    GCSH_MPI_TRY_GOTO(ctx, "host window: ", fail, MPI_Win_set_errhandler,
                        (w->win, MPI_ERRORS_RETURN));
    GCSH_MPI_TRY_GOTO(ctx, "host window: ", fail, MPI_Win_lock_all, (MPI_MODE_NOCHECK, w->win));
    w->locked = 1;
    return 0;
fail:
    return -1;
}

static int stage_segment(gcsh_ctx *ctx, gcsh_window_impl *w, gcsh_window_desc *desc,
                         char *report, size_t len)
{
    MPI_Comm comm;
    if (gcsh_host_comm_mpi(ctx, w->c, &comm) != 0 || make_team(ctx, comm, w, desc) != 0 ||
        allocate_segment(ctx, w, desc) != 0)
        return -1;
    char team[128], size[32];
    gcsh_format_ranks(desc->team, desc->team_size, team, sizeof team);
    gcsh_format_bytes(desc->alloc_bytes, size, sizeof size);
    snprintf(report, len,
             "MPI_Comm_split by node: team %s on node %d (%d of %d ranks)\n"
             "MPI_Win_allocate_shared: one segment, %s per member\n"
             "MPI_Win_lock_all: passive access for the window's life\n"
             "my slice at %p (in my own address space)",
             team, ctx->node, desc->team_size, gcsh_host_comm_ops.size(w->c), size, w->mine);
    return 0;
}

static int stage_peers(gcsh_ctx *ctx, gcsh_window_impl *w, gcsh_window_desc *desc, char *report,
                       size_t len)
{
    for (int i = 0; i < desc->team_size; i++) {
        MPI_Aint size;
        int disp;
        GCSH_MPI_TRY_GOTO(ctx, "host window: ", fail, MPI_Win_shared_query,
                            (w->win, i, &size, &disp, &desc->peer[i]));
    }
    /* A new window reads as zeros everywhere (signal words start at 0): each
     * rank clears its slice; the status exchange after this stage is the
     * barrier that waits until all have. */
    memset(w->mine, 0, desc->alloc_bytes);
    GCSH_MPI_TRY_GOTO(ctx, "host window: ", fail, MPI_Win_sync, (w->win));
    snprintf(desc->handle, sizeof desc->handle,
             "MPI_Win_allocate_shared on node %d (%d of the comm's ranks), segment %p", ctx->node,
             desc->team_size, w->mine);
    char layout[160], size[32];
    gcsh_window_layout_text(desc, layout, sizeof layout);
    gcsh_format_bytes(desc->alloc_bytes, size, sizeof size);
    snprintf(report, len,
             "MPI_Win_shared_query x %d: the peer pointer table\n"
             "%s\n"
             "zeroed my %s, MPI_Win_sync",
             desc->team_size, layout, size);
    return 0;
fail:
    return -1;
}

static int emulated_stage(gcsh_ctx *ctx, gcsh_window_impl *w, gcsh_window_desc *desc, int i,
                          char *report, size_t len);

/* The network server applies requests to host memory as the node's own
 * ranks would with stores: the data before the answer (release), words
 * with the signals' C11 atomics. */
static int net_write(void *arg, void *base, uint64_t offset, const void *src, size_t bytes)
{
    (void)arg;
    memcpy((char *)base + offset, src, bytes);
    atomic_thread_fence(memory_order_release);
    return 0;
}

static int net_read(void *arg, void *base, uint64_t offset, void *dst, size_t bytes)
{
    (void)arg;
    atomic_thread_fence(memory_order_acquire);
    memcpy(dst, (char *)base + offset, bytes);
    return 0;
}

static int net_word(void *arg, void *base, enum gcsh_net_op op, uint64_t offset, uint64_t value,
                    uint64_t *old)
{
    (void)arg;
    _Atomic uint64_t *w = (_Atomic uint64_t *)(void *)((char *)base + offset);
    if (op == GCSH_NET_SET)
        atomic_store_explicit(w, value, memory_order_release);
    else
        *old = atomic_fetch_add_explicit(w, value, memory_order_acq_rel);
    return 0;
}

static const gcsh_netpath_server net_server = {
    .name = "tcp", .write = net_write, .read = net_read, .word = net_word,
};

/* A communicator of several nodes: my slice served on my network server,
 * and every rank's address gathered (collective over the communicator:
 * every rank takes part, whether its registration worked or not). */
static int net_register(gcsh_ctx *ctx, gcsh_window_impl *w, gcsh_window_desc *desc, int failed,
                        char *report, size_t len)
{
    MPI_Comm comm;
    gcsh_host_state *state = ctx->be_state;
    if (desc->team_size == gcsh_host_comm_ops.size(w->c))
        return 0;
    if (gcsh_host_comm_mpi(ctx, w->c, &comm) != 0)
        return -1;
    return gcsh_netpath_share(ctx, &state->net, &net_server, comm, failed, w->mine,
                              desc->alloc_bytes, desc->team_size, &w->remote, &w->net_id, report,
                              len);
}

static int host_create_stage(gcsh_ctx *ctx, gcsh_window_impl *w, gcsh_window_desc *desc, int i,
                             char *report, size_t len)
{
    if (w->emu) { /* the cuda kinds' network path too, after their last stage */
        int rc = emulated_stage(ctx, w, desc, i, report, len);
        if (i + 1 < emulated_stages(w->emu))
            return rc;
        int net = net_register(ctx, w, desc, rc != 0, report, len);
        return rc == 0 ? net : rc;
    }
    if (i == 0)
        return stage_segment(ctx, w, desc, report, len);
    int rc = stage_peers(ctx, w, desc, report, len);
    int net = net_register(ctx, w, desc, rc != 0, report, len);
    return rc == 0 ? net : rc;
}

int gcsh_host_window_net(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d, int rank,
                         enum gcsh_net_op op, size_t offset, void *data, size_t bytes,
                         uint64_t value, uint64_t *old)
{
    (void)d;
    if (!w->remote)
        return gcsh_set_error(ctx, "host window: rank %d is not reached over the network", rank);
    gcsh_host_state *state = ctx->be_state;
    return gcsh_netpath_request(ctx, state->net, &w->remote[rank], rank, op, offset, data, bytes,
                                value, old);
}

static void host_create_abort(gcsh_ctx *ctx, gcsh_window_impl *w, gcsh_window_desc *desc)
{
    (void)ctx;
    release_impl(ctx, w, desc, 0);
}

/* Whether a collective that an interrupt abandoned (on any communicator) may
 * still write into some slice of this segment here, on any member
 * (core/orphans.h): MPI_Win_free would unmap memory MPI writes.  Then every
 * member keeps the segment until exit (the window is retired).  Collective
 * over the team, as MPI_Win_free is. */
static int segment_in_use(gcsh_ctx *ctx, const gcsh_window_impl *w,
                          const gcsh_window_desc *desc)
{
    gcsh_orphans *o = ctx->orphans;
    gcsh_orphans_reap(o);
    int mine = 0, any = 1;
    for (int i = 0; i < desc->team_size && !mine; i++)
        mine = desc->peer[i] && gcsh_orphans_touch(o, desc->peer[i], desc->alloc_bytes);
    if (w->team == MPI_COMM_NULL ||
        MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, w->team) != MPI_SUCCESS)
        return mine;
    return any;
}

static int host_destroy(gcsh_ctx *ctx, gcsh_window_impl *w, gcsh_window_desc *desc)
{
    int keep = !gcsh_host_comm_ops.aborted(w->c) && segment_in_use(ctx, w, desc);
    release_impl(ctx, w, desc, keep);
    return 0;
}

/* ---- signals ------------------------------------------------------------- */

static _Atomic uint64_t *signal_word(const gcsh_window_desc *d, int peer, size_t slot)
{
    return (_Atomic uint64_t *)d->peer[peer] + slot;
}

static int host_signal_set(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                           int peer, size_t slot, uint64_t v)
{
    (void)ctx;
    (void)w;
    atomic_store_explicit(signal_word(d, peer, slot), v, memory_order_release);
    return 0;
}

static int host_signal_add(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                           int peer, size_t slot, uint64_t v)
{
    (void)ctx;
    (void)w;
    atomic_fetch_add_explicit(signal_word(d, peer, slot), v, memory_order_release);
    return 0;
}

static int host_signal_fetch_add(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                                 int peer, size_t slot, uint64_t v, uint64_t *old)
{
    (void)ctx;
    (void)w;
    *old = atomic_fetch_add_explicit(signal_word(d, peer, slot), v, memory_order_acq_rel);
    return 0;
}

/* A signal wait in words, for hang reports: "slot 0", which the note
 * follows with its value ("slot 0 is now 2"; the where text of l_signal.c
 * says the condition). */
static void slot_text(const void *arg, char *buf, size_t len)
{
    snprintf(buf, len, "slot %zu", *(const size_t *)arg);
}

/* 0 when my word `slot` compares true, 1 after timeout seconds, -1 when
 * interrupted. */
static int wait_word(gcsh_ctx *ctx, const gcsh_window_desc *d, size_t slot, uint64_t v,
                     enum gcsh_cmp cmp, double timeout)
{
    gcsh_host_note note = {slot_text, &slot, -1, 0};
    return gcsh_host_wait_noted(ctx, signal_word(d, d->team_rank, slot), cmp, v, timeout,
                                "signal wait interrupted", &note);
}

static int host_signal_wait(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                            size_t slot, uint64_t v, enum gcsh_cmp cmp)
{
    (void)w;
    return wait_word(ctx, d, slot, v, cmp, INFINITY) == 0 ? 0 : -1;
}

static int host_signal_wait_cpu(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                                size_t slot, uint64_t v, enum gcsh_cmp cmp, double timeout)
{
    (void)w;
    return wait_word(ctx, d, slot, v, cmp, timeout);
}

static int host_elem_wait(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                          int member, size_t offset, gcsh_dtype dt, gcsh_scalar v,
                          enum gcsh_cmp cmp, const char *what)
{
    (void)w;
    const char *elem = (const char *)d->peer[member] + offset;
    /* a wait on my own slice waits for nobody in particular: no peer named */
    int peer = member == d->team_rank ? -1 : d->team[member];
    return gcsh_host_wait_elem(ctx, elem, dt, cmp, v, "element wait interrupted", what, peer);
}

static int host_signal_read(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                            size_t slot, uint64_t *v)
{
    (void)ctx;
    (void)w;
    *v = atomic_load_explicit(signal_word(d, d->team_rank, slot), memory_order_acquire);
    return 0;
}

const gcsh_window_ops gcsh_host_window_ops = {
    .kinds = "host nccl vmm", /* host first: the default (nccl, vmm: emulated, below) */
    .granularity = host_granularity,
    .max_bytes = host_max_bytes,
    .create_plan = host_create_plan,
    .create_begin = host_create_begin,
    .create_stage = host_create_stage,
    .create_abort = host_create_abort,
    .destroy = host_destroy,
    .signal_set = host_signal_set,
    .signal_add = host_signal_add,
    .signal_fetch_add = host_signal_fetch_add,
    .signal_wait = host_signal_wait,
    .signal_wait_cpu = host_signal_wait_cpu,
    .signal_read = host_signal_read,
    .elem_wait = host_elem_wait,
    .net_path = "tcp",
    .net = gcsh_host_window_net,
};

/* ---- kinds nccl and vmm, emulated (see emulated_kind above) ----------------
 *
 * Each stage does on the host what its namesake does on a GPU, where the
 * host has an equivalent, and says "(emulated)": the segment is made where
 * the cuda kind allocates, the symmetric registration checks that every
 * member's slice has the window's size at offset 0 of its allocation (what
 * NCCL_WIN_COLL_SYMMETRIC needs), and the peer table is filled where the
 * cuda kind fills it.  Stages that only move handles on a GPU (vmm's export
 * and exchange, access) say what stands in for them. */

/* CUDA's allocation granularity for cuMemCreate and ncclMemAlloc on the GPUs
 * gcsh targets (cuMemGetAllocationGranularity: 2 MiB on H100 and H200). */
#define EMULATED_GRANULARITY ((size_t)2 << 20)

enum emulated_step { EMU_SEGMENT, EMU_SYMMETRIC, EMU_DEVCOMM, EMU_NOTE, EMU_PEERS, EMU_ZERO };

struct emulated_kind {
    const char *name;
    gcsh_window_plan plan;
    const enum emulated_step *steps; /* [plan.n] */
    const char *const *what;         /* [plan.n]: the GPU call it stands for */
    const char *abort_unmaps;        /* desc.abort_unmaps: the GPU kind's rule, kept */
};

static int emulated_stages(const emulated_kind *k)
{
    return k->plan.n;
}

static const char *const nccl_names[] = {"allocate", "register", "devcomm", "peers"};
static const enum emulated_step nccl_steps[] = {EMU_SEGMENT, EMU_SYMMETRIC, EMU_DEVCOMM,
                                                EMU_PEERS};
static const char *const nccl_what[] = {"ncclMemAlloc", "ncclCommWindowRegister",
                                        "ncclDevCommCreate", "ncclGetLsaPointer"};
static const char *const vmm_names[] = {"allocate", "export", "exchange", "map", "access", "table"};
static const enum emulated_step vmm_steps[] = {EMU_SEGMENT, EMU_NOTE, EMU_NOTE,
                                               EMU_PEERS,   EMU_NOTE, EMU_ZERO};
static const char *const vmm_what[] = {"cuMemCreate", "cuMemExportToShareableHandle",
                                       "the fd exchange (SCM_RIGHTS)", "cuMemMap",
                                       "cuMemSetAccess", "the peer pointer table"};

static const emulated_kind emulated_kinds[] = {
    {"nccl", {4, nccl_names}, nccl_steps, nccl_what, GCSH_NCCL_ABORT_UNMAPS},
    {"vmm", {6, vmm_names}, vmm_steps, vmm_what, NULL},
};

static const emulated_kind *emulated_kind_of(const char *kind)
{
    for (size_t i = 0; kind && i < sizeof emulated_kinds / sizeof emulated_kinds[0]; i++)
        if (strcmp(kind, emulated_kinds[i].name) == 0)
            return &emulated_kinds[i];
    return NULL;
}

static size_t emulated_granularity(void)
{
    return EMULATED_GRANULARITY;
}

static const gcsh_window_plan *emulated_plan(const emulated_kind *k)
{
    return &k->plan;
}

/* NCCL_WIN_COLL_SYMMETRIC: every member registers the same size, and the
 * window starts at the same offset (0) of every member's allocation. */
static int check_symmetric(gcsh_ctx *ctx, gcsh_window_impl *w, gcsh_window_desc *desc)
{
    for (int i = 0; i < desc->team_size; i++) {
        MPI_Aint size;
        int disp;
        void *base;
        GCSH_MPI_TRY_GOTO(ctx, "nccl window (emulated): ", fail, MPI_Win_shared_query,
                            (w->win, i, &size, &disp, &base));
        if ((size_t)size != desc->alloc_bytes)
            return gcsh_set_error(ctx,
                                  "nccl window (emulated): member %d registers %zu bytes, not "
                                  "%zu: a symmetric window has the same size on every rank",
                                  i, (size_t)size, desc->alloc_bytes);
    }
    return 0;
fail:
    return -1;
}

static int emulated_stage(gcsh_ctx *ctx, gcsh_window_impl *w, gcsh_window_desc *desc, int i,
                          char *report, size_t len)
{
    const emulated_kind *k = w->emu;
    char done[512] = "", size[32], gran[32];
    gcsh_format_bytes(desc->alloc_bytes, size, sizeof size);
    gcsh_format_bytes(desc->granularity, gran, sizeof gran);
    switch (k->steps[i]) {
    case EMU_SEGMENT:
        if (stage_segment(ctx, w, desc, done, sizeof done) != 0)
            return -1;
        snprintf(report, len, "%s (emulated): %s per rank (granularity %s)\n%s", k->what[i], size,
                 gran, done);
        return 0;
    case EMU_SYMMETRIC:
        if (check_symmetric(ctx, w, desc) != 0)
            return -1;
        snprintf(report, len,
                 "%s(NCCL_WIN_COLL_SYMMETRIC) (emulated) on %d ranks\n"
                 "every slice %s, the window at offset 0 of each: symmetric",
                 k->what[i], desc->team_size, size);
        return 0;
    case EMU_DEVCOMM:
        snprintf(report, len,
                 "%s (emulated): LSA team of %d (the node's ranks)\nmy LSA rank: %d\n"
                 "no LSA barriers: algo nccl_dev needs the cuda backend",
                 k->what[i], desc->team_size, desc->team_rank);
        return 0;
    case EMU_NOTE:
        snprintf(report, len, "%s (emulated): nothing to move on the host: %s", k->what[i],
                 i == 1 ? "the slices are one MPI segment already"
                 : i == 2 ? "MPI_Win_shared_query finds every slice"
                          : "every member reads and writes the segment");
        return 0;
    case EMU_PEERS:
        if (stage_peers(ctx, w, desc, done, sizeof done) != 0)
            return -1;
        snprintf(report, len, "%s (emulated): %s", k->what[i], done);
        snprintf(desc->handle, sizeof desc->handle,
                 "%s window (emulated): MPI_Win_allocate_shared on node %d, segment %p", k->name,
                 ctx->node, w->mine);
        /* the segment outlives an abort here; NCCL's mappings do not */
        desc->abort_unmaps = k->abort_unmaps;
        return 0;
    case EMU_ZERO:
        snprintf(report, len, "%s (emulated): %d slices, mine zeroed (in map)", k->what[i],
                 desc->team_size);
        return 0;
    }
    return gcsh_set_error(ctx, "%s window (emulated): no stage %d", k->name, i);
}
