/* Staged window registration without Lua.  See winbuild.h. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wire/out.h"
#include "bind/winbuild.h"
#include "bind/opts.h"

/* What each rank says after a stage; every byte is sent. */
struct gcsh_stage_status {
    int32_t failed;      /* the stage returned an error (msg says why) */
    int32_t interrupted; /* the rank's interrupt flag was up */
    int32_t aborted;     /* the rank's communicator was aborted */
    int32_t pad;
    char msg[232];
    char report[GCSH_STAGE_REPORT_LEN];
};

static const gcsh_window_ops *win_of(gcsh_ctx *ctx)
{
    return ctx->be->win;
}

static const gcsh_comm_ops *comm_of(gcsh_ctx *ctx)
{
    return ctx->be->comm;
}

int gcsh_winbuild_begin(gcsh_ctx *ctx, gcsh_winbuild *b, gcsh_comm_impl *c, const char *kind,
                        gcsh_window_desc *d)
{
    memset(b, 0, sizeof *b);
    b->c = c;
    b->plan = win_of(ctx)->create_plan(kind);
    b->status = calloc((size_t)comm_of(ctx)->size(c), sizeof *b->status);
    if (!b->status)
        return gcsh_set_error(ctx, "window: out of host memory");
    if (win_of(ctx)->create_begin(ctx, c, kind, d, &b->w) != 0) {
        free(b->status);
        b->status = NULL;
        b->w = NULL;
        return -1;
    }
    return 0;
}

void gcsh_winbuild_abort(gcsh_ctx *ctx, gcsh_winbuild *b, gcsh_window_desc *d)
{
    if (b->w)
        win_of(ctx)->create_abort(ctx, b->w, d);
    b->w = NULL;
    b->done = 0;
    free(b->status);
    b->status = NULL;
}

void gcsh_winbuild_leak(gcsh_winbuild *b)
{
    (void)gcsh_winbuild_take(b);
}

gcsh_window_impl *gcsh_winbuild_take(gcsh_winbuild *b)
{
    gcsh_window_impl *w = b->w;
    b->w = NULL;
    b->done = 0;
    free(b->status);
    b->status = NULL;
    return w;
}

/* Whether this stage is the one gcsh.debug.inject asked to fail (once); a
 * slow one waits here for an interrupt (at most SLOW_STAGE_S) and works. */
#define SLOW_STAGE_S 10.0
static int injected(gcsh_ctx *ctx, const char *stage)
{
    if (!ctx->inject_stage[0] || strcmp(ctx->inject_stage, stage) != 0)
        return 0;
    ctx->inject_stage[0] = '\0';
    if (!ctx->inject_stage_slow)
        return 1;
    double until = gcsh_now_seconds() + SLOW_STAGE_S;
    while (!atomic_load(&ctx->interrupt) && gcsh_now_seconds() < until) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return 0;
}

int gcsh_winbuild_inject(gcsh_ctx *ctx, const char *name, int slow)
{
    const gcsh_window_ops *win = win_of(ctx);
    char valid[256] = "";
    size_t used = 0;
    for (const char *k = win ? win->kinds : ""; *k;) {
        char kind[32];
        size_t len = strcspn(k, " ");
        snprintf(kind, sizeof kind, "%.*s", (int)len, k);
        const gcsh_window_plan *plan = win->create_plan(kind);
        for (int i = 0; i < plan->n; i++) {
            if (strcmp(plan->name[i], name) == 0) {
                snprintf(ctx->inject_stage, sizeof ctx->inject_stage, "%s", name);
                ctx->inject_stage_slow = slow;
                return 0;
            }
            if (used < sizeof valid && !gcsh_opts_listed(valid, plan->name[i])) /* once */
                used += (size_t)snprintf(valid + used, sizeof valid - used, "%s%s",
                                         used ? " " : "", plan->name[i]);
        }
        k += len;
        k += strspn(k, " ");
    }
    return gcsh_set_error(ctx, "gcsh.debug.inject: no window stage is called '%s' on the %s "
                               "backend (valid: %s)",
                          name, ctx->be->name, valid);
}

static int was_interrupted(const void *b, int r)
{
    return ((const gcsh_winbuild *)b)->status[r].interrupted;
}

/* "0-1,3": the ranks whose flag is set, into buf. */
static void interrupted_ranks(const gcsh_winbuild *b, int size, char *buf, size_t len)
{
    gcsh_format_ranks_where(size, was_interrupted, b, buf, len, NULL);
}

/* The agreed outcome: 0 when every rank's stage worked, else the message of
 * the first rank that failed (an error before an interrupt) into ctx->err. */
static int verdict(gcsh_ctx *ctx, const gcsh_winbuild *b, const char *stage, int size,
                   int *any_aborted)
{
    int failed = -1, n_interrupted = 0;
    *any_aborted = 0;
    for (int r = 0; r < size; r++) {
        const gcsh_stage_status *s = &b->status[r];
        if (s->failed && failed < 0)
            failed = r;
        n_interrupted += s->interrupted != 0;
        *any_aborted |= s->aborted != 0;
    }
    if (failed >= 0) {
        char msg[sizeof b->status->msg];
        snprintf(msg, sizeof msg, "%s", b->status[failed].msg);
        return gcsh_set_error(ctx, "stage '%s' failed on rank %d: %s", stage, failed, msg);
    }
    if (n_interrupted > 0) {
        char ranks[128];
        interrupted_ranks(b, size, ranks, sizeof ranks);
        return gcsh_set_error(ctx, "interrupted in stage '%s' (on rank%s %s)", stage,
                              n_interrupted == 1 ? "" : "s", ranks);
    }
    return 0;
}

int gcsh_winbuild_stage(gcsh_ctx *ctx, gcsh_winbuild *b, gcsh_window_desc *d, char *reports)
{
    const gcsh_comm_ops *comm = comm_of(ctx);
    const char *stage = b->plan->name[b->done];
    int size = comm->size(b->c);
    gcsh_stage_status mine;
    memset(&mine, 0, sizeof mine);
    int rc = win_of(ctx)->create_stage(ctx, b->w, d, b->done, mine.report, sizeof mine.report);
    if (rc == 0 && injected(ctx, stage))
        rc = gcsh_set_error(ctx, "injected failure (gcsh.debug.inject)");
    mine.failed = rc != 0;
    if (rc != 0)
        snprintf(mine.msg, sizeof mine.msg, "%.231s", ctx->err); /* long errors are cut */
    mine.interrupted = atomic_load(&ctx->interrupt) != 0;
    mine.aborted = comm->aborted(b->c) != 0;
    int any_aborted = 0;
    if (comm->agree_blocking(ctx, b->c, &mine, b->status, sizeof mine) != 0) {
        /* the others' outcome is unknown: give the communicator up, so the
         * undo below is local and nobody waits for this rank */
        char why[sizeof ctx->err];
        snprintf(why, sizeof why, "%s", ctx->err);
        comm->abort(ctx, b->c);
        gcsh_set_error(ctx, "stage '%s': the status exchange failed (%s); the communicator is "
                            "aborted",
                       stage, why);
        any_aborted = 1;
        rc = -1;
    } else {
        rc = verdict(ctx, b, stage, size, &any_aborted);
    }
    if (rc == 0) {
        b->done++;
        for (int r = 0; reports && r < size; r++)
            memcpy(reports + (size_t)r * GCSH_STAGE_REPORT_LEN, b->status[r].report,
                   GCSH_STAGE_REPORT_LEN);
        return 0;
    }
    /* every rank is here, in the same stage: undo it all, everywhere */
    if (any_aborted && !comm->aborted(b->c))
        comm->abort(ctx, b->c);
    char keep[sizeof ctx->err];
    memcpy(keep, ctx->err, sizeof keep); /* the undo may record errors of its own */
    gcsh_winbuild_abort(ctx, b, d);
    memcpy(ctx->err, keep, sizeof keep);
    b->aborted = any_aborted;
    return -1;
}

int gcsh_window_create(gcsh_ctx *ctx, gcsh_comm_impl *c, const char *kind, gcsh_window_desc *d,
                       gcsh_window_impl **out)
{
    gcsh_winbuild b;
    int size = comm_of(ctx)->size(c);
    int ok = gcsh_winbuild_begin(ctx, &b, c, kind, d) == 0, *all = calloc((size_t)size, sizeof *all);
    /* begin is local: the ranks agree on it before any stage */
    int agreed = all && comm_of(ctx)->agree_blocking(ctx, c, &ok, all, sizeof ok) == 0;
    for (int r = 0; agreed && r < size; r++)
        if (!all[r])
            agreed = gcsh_set_error(ctx, "window: preparing failed on rank %d", r) == 0;
    free(all);
    if (!agreed) {
        gcsh_winbuild_abort(ctx, &b, d);
        return -1;
    }
    while (!gcsh_winbuild_complete(&b))
        if (gcsh_winbuild_stage(ctx, &b, d, NULL) != 0)
            return -1;
    *out = gcsh_winbuild_take(&b);
    return 0;
}
