/* Kind "nccl": ncclMemAlloc, ncclCommWindowRegister(NCCL_WIN_COLL_SYMMETRIC)
 * and a device communicator, so kernels reach peers with the NCCL device
 * API.  The team is NCCL's LSA team (the ranks that load/store each other's
 * memory over NVLink/P2P): consecutive comm ranks, member i being comm rank
 * ncclTeamRankToWorld(comm, lsa, i) = rank - lsaRank + i.  The peer table
 * is filled once, here, by a kernel calling ncclGetLsaPointer for each
 * member.  (GCSH_RANKS_PER_NODE does not apply: NCCL decides the team.)
 *
 * Each collective step (register, device communicator) runs only after all
 * ranks agreed that the step before succeeded everywhere, and a failure is
 * undone on every rank at the same step. */
#include <stdio.h>
#include <string.h>

#include "cuda/cuda_window.h"

/* The step's ok flag, which the ranks then agree on: 1 when the call
 * succeeded and the communicator has settled, else 0 with the error
 * recorded.  Communicators are non-blocking (cuda_comm.c): a call may return
 * ncclInProgress, or return while NCCL still works on the communicator, and
 * NCCL refuses the next call on it until then ("Attempt to use communicator
 * before the previous operation returned"), so every step waits it out. */
static int nccl_ok(gcsh_ctx *ctx, ncclComm_t comm, ncclResult_t r, int line, const char *call)
{
    if (r != ncclSuccess && r != ncclInProgress) {
        nccl_error(ctx, comm, __FILE__, line, call, r);
        return 0;
    }
    return cuda_nccl_settle(ctx, comm, call) == 0;
}

#define NCCL_OK(ctx, comm, call) nccl_ok((ctx), (comm), (call), __LINE__, #call)

/* A step of undoing a failed create: it waits like any step, but the error
 * reported stays the one that made us undo. */
static void undo_step(gcsh_ctx *ctx, ncclComm_t comm, ncclResult_t r)
{
    char keep[sizeof ctx->err];
    memcpy(keep, ctx->err, sizeof keep);
    if (r == ncclSuccess || r == ncclInProgress)
        cuda_nccl_settle(ctx, comm, "nccl window: undo");
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
    CUDA_TRY(ctx, cudaMalloc(&d->peer_table_dev, tbytes));
    CUDA_TRY(ctx, gcsh_k_lsa_table(w->win, d->team_size, d->peer_table_dev, st->stream));
    CUDA_TRY(ctx, cudaMemcpyAsync(d->peer, d->peer_table_dev, tbytes, cudaMemcpyDeviceToHost,
                                  st->stream));
    CUDA_TRY(ctx, cudaMemsetAsync(w->buf, 0, w->bytes, st->stream));
    if (cuda_wait(ctx, st, NULL) != 0)
        return -1;
    for (int i = 0; i < d->team_size; i++)
        if (!d->peer[i])
            return gcsh_set_error(ctx, "nccl window: no LSA pointer for team member %d", i);
    return 0;
fail:
    return -1;
}

int win_nccl_create(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w, gcsh_window_desc *d)
{
    gcsh_comm_impl *c = w->c;
    int lsa_size = 0, lsa_rank = -1, ok;

    ok = NCCL_OK(ctx, c->comm, ncclMemAlloc(&w->buf, w->bytes));
    if (win_agree_ok(ctx, c, ok, "nccl window: allocation") != 0)
        goto free_mem;
    ok = NCCL_OK(ctx, c->comm, ncclCommWindowRegister(c->comm, w->buf, w->bytes, &w->win,
                                                      NCCL_WIN_COLL_SYMMETRIC));
    if (win_agree_ok(ctx, c, ok, "nccl window: ncclCommWindowRegister") != 0)
        goto deregister;
    ok = NCCL_OK(ctx, c->comm, gcsh_nccl_devcomm_create(c->comm, &w->devcomm));
    if (ok) /* settled by NCCL_OK: the device communicator is filled in now */
        gcsh_nccl_devcomm_lsa(w->devcomm, &lsa_size, &lsa_rank);
    if (win_agree_ok(ctx, c, ok, "nccl window: ncclDevCommCreate") != 0)
        goto destroy_devcomm;
    ok = fill_team(ctx, w, d, lsa_size, lsa_rank) == 0 && fill_table(ctx, st, w, d) == 0;
    if (win_agree_ok(ctx, c, ok, "nccl window: peer table") != 0)
        goto destroy_devcomm;
    snprintf(d->handle, sizeof d->handle,
             "ncclWindow_t %p, ncclDevComm lsa %d/%d, ncclMemAlloc %p", (void *)w->win,
             lsa_rank, lsa_size, w->buf);
    return 0;

    /* undo: every rank reaches the same label (the agreements above), so
     * the collective NCCL calls below are matched on all ranks; a rank whose
     * own call failed has nothing of that step to undo */
destroy_devcomm:
    if (w->devcomm)
        undo_step(ctx, c->comm, gcsh_nccl_devcomm_destroy(c->comm, w->devcomm));
    w->devcomm = NULL;
deregister:
    if (w->win)
        undo_step(ctx, c->comm, ncclCommWindowDeregister(c->comm, w->win));
    w->win = NULL;
free_mem:
    if (w->buf)
        ncclMemFree(w->buf);
    w->buf = NULL;
    if (d->peer_table_dev)
        cudaFree(d->peer_table_dev);
    d->peer_table_dev = NULL;
    return -1;
}

/* Collective (the binding calls it on every rank after a barrier).  After an
 * abort the communicator took its windows with it: only the memory is left. */
int win_nccl_destroy(gcsh_ctx *ctx, cuda_state *st, gcsh_window_impl *w)
{
    (void)st;
    gcsh_comm_impl *c = w->c;
    int ok = 1;
    if (!c->aborted) {
        ok &= NCCL_OK(ctx, c->comm, gcsh_nccl_devcomm_destroy(c->comm, w->devcomm));
        ok &= NCCL_OK(ctx, c->comm, ncclCommWindowDeregister(c->comm, w->win));
    }
    ok &= NCCL_OK(ctx, c->comm, ncclMemFree(w->buf));
    return ok ? 0 : -1;
}
