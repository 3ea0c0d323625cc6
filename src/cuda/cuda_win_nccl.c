/* Kind "nccl": ncclMemAlloc, ncclCommWindowRegister(NCCL_WIN_COLL_SYMMETRIC)
 * and a device communicator, so kernels reach peers with the NCCL device
 * API.  The team is NCCL's LSA team (the ranks that load/store each other's
 * memory over NVLink/P2P): consecutive comm ranks, member i being comm rank
 * ncclTeamRankToWorld(comm, lsa, i) = rank - lsaRank + i.  The peer table
 * is filled once, here, by a kernel calling ncclGetLsaPointer for each
 * member.  (GCSH_RANKS_PER_NODE does not apply: NCCL decides the team.)
 *
 * Stages (backend.h; winbuild.h agrees on each before the next):
 *   allocate  ncclMemAlloc of my slice (local)
 *   register  ncclCommWindowRegister, SYMMETRIC (collective)
 *   devcomm   ncclDevCommCreate (collective): the LSA team, and the LSA
 *             barriers of algo "nccl_dev" (kernels/cuda/nccl_dev.cu)
 *   peers     the LSA peer pointers, through the device communicator
 * so each collective step runs only after all ranks agreed that the step
 * before succeeded everywhere, and a failure is undone on every rank at the
 * same step. */
#include <stdio.h>
#include <string.h>

#include "cuda/cuda_window.h"

static const char *const stage_names[] = {"allocate", "register", "devcomm", "peers"};
static const gcsh_window_plan win_nccl_plan = {4, stage_names};

/* The step's outcome: 1 when the call succeeded and the communicator has
 * settled, else 0 with the error recorded.  Communicators are non-blocking
 * (cuda_comm.c): a call may return ncclInProgress, or return while NCCL
 * still works on the communicator, and NCCL refuses the next call on it
 * until then ("Attempt to use communicator before the previous operation
 * returned"), so every step waits it out.  A settle that fails has aborted
 * the NCCL communicator (cuda_nccl_settle): c says so, so that no call
 * reaches it again and the other ranks abort theirs (winbuild.h). */
static int nccl_ok(gcsh_ctx *ctx, gcsh_comm_impl *c, ncclResult_t r, int line, const char *call)
{
    if (r != ncclSuccess && r != ncclInProgress) {
        nccl_error(ctx, c->comm, __FILE__, line, call, r);
        return 0;
    }
    if (cuda_nccl_settle(ctx, c->comm, call) == 0)
        return 1;
    cuda_comm_lost(c);
    return 0;
}

#define NCCL_OK(ctx, c, call) nccl_ok((ctx), (c), (call), __LINE__, #call)

/* A step of undoing: it waits like any step, but the error reported stays
 * the one that made us undo. */
static void undo_step(gcsh_ctx *ctx, gcsh_comm_impl *c, ncclResult_t r)
{
    char keep[sizeof ctx->err];
    memcpy(keep, ctx->err, sizeof keep);
    if ((r == ncclSuccess || r == ncclInProgress) &&
        cuda_nccl_settle(ctx, c->comm, "nccl window: undo") != 0)
        cuda_comm_lost(c);
    memcpy(ctx->err, keep, sizeof keep);
}

/* Team from the device communicator, checked against the host-side team. */
static int fill_team(gcsh_ctx *ctx, gcsh_window_impl *w, gcsh_window_desc *d, int lsa_size,
                     int lsa_rank)
{
    int n = 0, me = -1;
    gcsh_nccl_lsa_team(w->c->comm, &n, &me, d->team, w->c->size);
    if (n != lsa_size || me != lsa_rank || n < 1 || n > w->c->size || n > GCSH_MAX_TEAM ||
        d->team[me] != w->c->rank)
        return gcsh_set_error(ctx, "nccl window: LSA team %d/%d from the device communicator, "
                                   "%d/%d from the communicator",
                              lsa_rank, lsa_size, me, n);
    d->team_size = n;
    d->team_rank = me;
    return 0;
}

/* The peer table through the device API, its host copy, and a zeroed slice
 * (signals start at 0); waits for the stream, so peers may use the slice
 * once every rank has agreed. */
static int fill_table(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w, gcsh_window_desc *d)
{
    size_t tbytes = (size_t)d->team_size * sizeof(void *);
    size_t rbytes = (size_t)d->team_size * sizeof(int);
    if (cuda_wait(ctx, st, NULL) != 0) /* the copy into pageable d->peer waits uninterruptibly */
        return -1;
    CUDA_TRY(ctx, cudaMallocAsync(&d->peer_table_dev, tbytes + rbytes, st->stream));
    CUDA_TRY(ctx, gcsh_k_lsa_table(w->own->win, d->team_size, d->peer_table_dev, st->stream));
    CUDA_TRY(ctx, cudaMemcpyAsync((char *)d->peer_table_dev + tbytes, d->team, rbytes,
                                  cudaMemcpyHostToDevice, st->stream));
    CUDA_TRY(ctx, cudaMemcpyAsync(d->peer, d->peer_table_dev, tbytes, cudaMemcpyDeviceToHost,
                                  st->stream));
    CUDA_TRY(ctx, cudaMemsetAsync(w->own->buf, 0, w->bytes, st->stream));
    if (cuda_wait(ctx, st, NULL) != 0)
        return -1;
    for (int i = 0; i < d->team_size; i++)
        if (!d->peer[i])
            return gcsh_set_error(ctx, "nccl window: no LSA pointer for team member %d", i);
    return 0;
fail:
    return -1;
}

static int stage_allocate(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w,
                          const gcsh_window_desc *d, char *report, size_t len)
{
    if (!NCCL_OK(ctx, w->c, ncclMemAlloc(&w->own->buf, w->bytes)))
        return -1;
    char size[32], gran[32];
    snprintf(report, len,
             "ncclMemAlloc: %s per rank (granularity %s)\n"
             "my slice: %p on cuda:%d",
             gcsh_format_bytes(w->bytes, size, sizeof size),
             gcsh_format_bytes(d->granularity, gran, sizeof gran), w->own->buf, st->dev);
    return 0;
}

static int stage_register(gcsh_ctx *ctx, gcsh_window_impl *w, char *report, size_t len)
{
    gcsh_comm_impl *c = w->c;
    if (!NCCL_OK(ctx, c, ncclCommWindowRegister(c->comm, w->own->buf, w->bytes, &w->own->win,
                                                NCCL_WIN_COLL_SYMMETRIC)))
        return -1;
    snprintf(report, len,
             "ncclCommWindowRegister(NCCL_WIN_COLL_SYMMETRIC) on %d ranks\n"
             "my ncclWindow_t: %p",
             c->size, (void *)w->own->win);
    return 0;
}

static int stage_devcomm(gcsh_ctx *ctx, gcsh_window_impl *w, char *report, size_t len)
{
    gcsh_comm_impl *c = w->c;
    if (!NCCL_OK(ctx, c, gcsh_nccl_devcomm_create(c->comm, GCSH_NCCL_DEV_BLOCKS, &w->own->devcomm)))
        return -1;
    /* settled by NCCL_OK: the device communicator is filled in now */
    gcsh_nccl_devcomm_lsa(w->own->devcomm, &w->own->lsa_size, &w->own->lsa_rank);
    snprintf(report, len,
             "ncclDevCommCreate: a device communicator, LSA team of %d\n"
             "my LSA rank: %d\n"
             "%d LSA barriers (algo nccl_dev: one per CTA)",
             w->own->lsa_size, w->own->lsa_rank, GCSH_NCCL_DEV_BLOCKS);
    return 0;
}

static int stage_peers(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w, gcsh_window_desc *d,
                       char *report, size_t len)
{
    if (fill_team(ctx, w, d, w->own->lsa_size, w->own->lsa_rank) != 0 ||
        fill_table(ctx, st, w, d) != 0)
        return -1;
    /* the table's pointers, mine too, are in NCCL's LSA address range, which
     * ncclCommAbort unmaps (its symmetric memory runtime goes with the
     * communicator): after an abort nothing of the window may be loaded */
    d->abort_unmaps = GCSH_NCCL_ABORT_UNMAPS;
    snprintf(d->handle, sizeof d->handle,
             "ncclWindow_t %p, ncclDevComm lsa %d/%d, ncclMemAlloc %p", (void *)w->own->win,
             w->own->lsa_rank, w->own->lsa_size, w->own->buf);
    char team[128], layout[160];
    gcsh_format_ranks(d->team, d->team_size, team, sizeof team);
    gcsh_window_layout_text(d, layout, sizeof layout);
    snprintf(report, len,
             "ncclGetLsaPointer x %d in a kernel: the peer pointer table\n"
             "team %s (NCCL's LSA team)\n"
             "%s\n"
             "my slice zeroed; the table's device copy: %p",
             d->team_size, team, layout, d->peer_table_dev);
    return 0;
}

static int win_nccl_stage(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w, gcsh_window_desc *d, int i,
                   char *report, size_t len)
{
    switch (i) {
    case 0:
        return stage_allocate(ctx, st, w, d, report, len);
    case 1:
        return stage_register(ctx, w, report, len);
    case 2:
        return stage_devcomm(ctx, w, report, len);
    default:
        return stage_peers(ctx, st, w, d, report, len);
    }
}

/* Every rank gets here at the same point (winbuild.h), so the collective
 * NCCL calls below are matched on all ranks; a rank whose own call failed
 * has nothing of that step to undo.  After an abort the communicator took
 * its window and device communicator with it: only the memory is left. */
static void win_nccl_undo(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w)
{
    (void)st;
    gcsh_comm_impl *c = w->c;
    if (w->own->devcomm && !c->aborted)
        undo_step(ctx, c, gcsh_nccl_devcomm_destroy(c->comm, w->own->devcomm));
    w->own->devcomm = NULL;
    if (w->own->win && !c->aborted)
        undo_step(ctx, c, ncclCommWindowDeregister(c->comm, w->own->win));
    w->own->win = NULL;
    if (w->own->buf)
        ncclMemFree(w->own->buf);
    w->own->buf = NULL;
}

/* Collective (the binding calls it on every rank after a barrier).  After an
 * abort the communicator took its windows with it: only the memory is left. */
static int win_nccl_destroy(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w)
{
    (void)st;
    gcsh_comm_impl *c = w->c;
    int ok = 1;
    if (!c->aborted)
        ok &= NCCL_OK(ctx, c, gcsh_nccl_devcomm_destroy(c->comm, w->own->devcomm));
    if (!c->aborted)
        ok &= NCCL_OK(ctx, c, ncclCommWindowDeregister(c->comm, w->own->win));
    /* local: no communicator to settle (an aborted one is gone) */
    ncclResult_t r = ncclMemFree(w->own->buf);
    if (r != ncclSuccess)
        ok = nccl_error(ctx, NULL, __FILE__, __LINE__, "ncclMemFree", r) == 0;
    return ok ? 0 : -1;
}

/* Needs NCCL's symmetric memory on c, as NCCL answered when c was made. */
static int win_nccl_usable(cuda_state *st, const gcsh_comm_impl *c, char *why, size_t len)
{
    if (!c || c->symmetric)
        return 0;
    snprintf(why, len, "%s; kind='vmm' works", cuda_no_symmetric_reason(st, c->size));
    return -1;
}

/* The VMM granularity (ncclMemAlloc rounds to it too), and NCCL's own
 * alignment for registered windows. */
static int win_nccl_granularity(gcsh_ctx *ctx, cuda_state *st, size_t *gran)
{
    if (win_vmm_granularity(ctx, st, gran) != 0)
        return -1;
    if (*gran < NCCL_WIN_REQUIRED_ALIGNMENT)
        *gran = NCCL_WIN_REQUIRED_ALIGNMENT;
    return 0;
}

const gpu_win_kind win_nccl_kind = {
    .name = "nccl",
    .plan = &win_nccl_plan,
    .usable = win_nccl_usable,
    .granularity = win_nccl_granularity,
    .stage = win_nccl_stage,
    .undo = win_nccl_undo,
    .destroy = win_nccl_destroy,
    .device_api = 1,
};
