/* Staged window registration, without Lua: the one path by which every
 * window and every set of signals is registered.  c:window() and c:signals()
 * run its stages back to back, step.window one per step, the C tests through
 * gcsh_window_create.
 *
 * A backend names the stages of each kind (backend.h: create_plan) and runs
 * them one at a time (create_stage).  After every stage the ranks exchange
 * its outcome (agree_blocking): whether it worked, why not, whether the
 * rank's interrupt flag was up, whether its communicator was aborted, and
 * what the stage did (a short report, which step.window prints).  So every
 * rank learns of a failure in the same stage, and then every rank undoes the
 * whole registration at the same point (create_abort): nothing stays
 * registered anywhere.  An interrupt (Ctrl-C) counts as a failure of the
 * stage in which a rank saw it, so it also ends in a clean undo; a rank whose
 * communicator was aborted in a stage (NCCL gave up) makes every rank abort
 * it before the undo, which is then local and waits for nobody.
 *
 * The exchange is not interruptible: past the registration's check, every
 * rank runs the same stages, so every rank comes, and a rank leaving early
 * on an interrupt would strand the others in the next stage's collectives
 * (MPI_Win_allocate_shared cannot be interrupted). */
#ifndef GCSH_WINBUILD_H
#define GCSH_WINBUILD_H

#include "core/gcsh.h"

/* Bytes of one rank's report of one stage (longer ones are cut). */
#define GCSH_STAGE_REPORT_LEN 640

typedef struct gcsh_stage_status gcsh_stage_status;

typedef struct gcsh_winbuild {
    gcsh_comm_impl *c;
    const gcsh_window_plan *plan;
    gcsh_window_impl *w;        /* the window being made; NULL: none */
    int done;                   /* stages every rank has finished */
    int aborted;                /* the last failure aborted the communicator */
    gcsh_stage_status *status;  /* [comm size]: the exchange's buffer */
} gcsh_winbuild;

/* Local: the window object of kind on c (nothing registered).  -1 with
 * ctx->err: out of host memory, or the backend refused. */
int gcsh_winbuild_begin(gcsh_ctx *ctx, gcsh_winbuild *b, gcsh_comm_impl *c, const char *kind,
                        gcsh_window_desc *d);
/* Collective: runs the next stage, then the exchange.  0 when it worked on
 * every rank; reports (NULL, or comm size * GCSH_STAGE_REPORT_LEN bytes) then
 * holds every rank's report in rank order.  Otherwise -1 on every rank, with
 * the same ctx->err ("stage 'segment' failed on rank 1: ..."), and the
 * registration undone on every rank (b->w is NULL, b->aborted says whether
 * the communicator was aborted on the way). */
int gcsh_winbuild_stage(gcsh_ctx *ctx, gcsh_winbuild *b, gcsh_window_desc *d, char *reports);
/* Undoes the stages run so far (create_abort): every rank at the same point,
 * or any rank alone once the communicator was aborted.  Idempotent. */
void gcsh_winbuild_abort(gcsh_ctx *ctx, gcsh_winbuild *b, gcsh_window_desc *d);
/* Lets go of b without undoing anything (at exit, when the communicator can
 * no longer be trusted to bring every rank: the process's end frees it). */
void gcsh_winbuild_leak(gcsh_winbuild *b);
/* After the last stage: the window, which b gives up. */
gcsh_window_impl *gcsh_winbuild_take(gcsh_winbuild *b);

static inline int gcsh_winbuild_complete(const gcsh_winbuild *b)
{
    return b->w && b->done == b->plan->n;
}

/* gcsh.debug.inject("stage:NAME"): the next stage NAME this rank runs fails
 * after it ran (the undo then has everything to undo); with slow
 * ("stage_slow:NAME") it waits after it ran until the rank is interrupted
 * (at most 10 s) instead, so a test can interrupt a stage for sure.  -1 with ctx->err naming the valid stages when no kind of
 * the backend has one so called. */
int gcsh_winbuild_inject(gcsh_ctx *ctx, const char *name, int slow);

/* Every stage back to back, for the C tests (the Lua bindings check the
 * ranks' arguments first, in a stage of their own: symmem.h).  Collective;
 * 0, or -1 on every rank with nothing registered. */
int gcsh_window_create(gcsh_ctx *ctx, gcsh_comm_impl *c, const char *kind, gcsh_window_desc *d,
                       gcsh_window_impl **out);

#endif
