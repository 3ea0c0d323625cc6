/* w:multicast() on a GPU backend: what every GPU backend does alike.  The
 * mode is decided once a window, and is the same on every rank: each rank's
 * verdict (the device runtime's mc_allowed: cuda's opt-in, src/DESIGN.md's
 * safety rules) is exchanged, and NVLS is used only when all allow it; its
 * set-up (the runtime's mc_open) is then agreed, so that every rank learns
 * of a failure on any. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_mcast.h"
#include "gpu/gpu_window.h"

typedef struct mc_verdict {
    int ok;
    char why[200];
} mc_verdict;

/* Every rank's verdict; the mode is nvls only when all allow it, and the
 * reason names the first rank that did not (or is this rank's own). */
static int agree_verdict(gcsh_ctx *ctx, gcsh_comm_impl *c, const mc_verdict *mine,
                         gcsh_mcast *out)
{
    const gcsh_gpu_rt *rt = gcsh_gpu();
    int rank, size;
    rt->comm_place(c, &rank, &size);
    mc_verdict *all = calloc((size_t)size, sizeof *all);
    if (!all)
        return gcsh_set_error(ctx, "multicast: out of host memory");
    int rc = rt->comm->agree(ctx, c, mine, all, sizeof *mine);
    out->nvls = rc == 0;
    for (int r = 0; rc == 0 && r < size && out->nvls; r++) {
        if (all[r].ok)
            continue;
        out->nvls = 0;
        all[r].why[sizeof all[r].why - 1] = 0;
        if (r == rank || strcmp(all[r].why, mine->why) == 0)
            snprintf(out->why, sizeof out->why, "%s", all[r].why);
        else
            snprintf(out->why, sizeof out->why, "rank %d: %.180s", r, all[r].why);
    }
    free(all);
    return rc;
}

typedef struct win_status {
    int ok;
    char msg[236];
} win_status;

/* Every rank of c says whether its step succeeded (ok, with its ctx->err
 * when not).  Returns 0 when all did; otherwise -1 on every rank, with the
 * same message everywhere: "<what> failed on rank R: <R's error>".  A rank
 * that could not even exchange (interrupt) fails with its own error.  (The
 * multicast set-up's; window creation has winbuild.h's exchange.) */
static int agree_ok(gcsh_ctx *ctx, gcsh_comm_impl *c, int ok, const char *what)
{
    const gcsh_gpu_rt *rt = gcsh_gpu();
    int rank, size;
    rt->comm_place(c, &rank, &size);
    win_status mine = {ok, {0}};
    if (!ok)
        snprintf(mine.msg, sizeof mine.msg, "%.235s", ctx->err); /* long errors are cut */
    win_status *all = calloc((size_t)size, sizeof *all);
    if (!all)
        return gcsh_set_error(ctx, "%s: out of host memory", what);
    int rc = rt->comm->agree(ctx, c, &mine, all, sizeof mine);
    for (int r = 0; rc == 0 && r < size; r++)
        if (!all[r].ok) {
            all[r].msg[sizeof all[r].msg - 1] = 0;
            rc = gcsh_set_error(ctx, "%s failed on rank %d: %s", what, r, all[r].msg);
        }
    free(all);
    return rc;
}

int gpu_kern_mc_open(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                     gcsh_mcast *out)
{
    (void)d;
    const gcsh_gpu_rt *rt = gcsh_gpu();
    gcsh_gpu_dev *st = rt->enter(ctx);
    if (!st)
        return -1;
    if (w->mc_decided) {
        *out = w->mc;
        return 0;
    }
    mc_verdict mine;
    memset(&mine, 0, sizeof mine);
    mine.ok = rt->mc_allowed(st, w, mine.why, sizeof mine.why);
    gcsh_mcast mc;
    memset(&mc, 0, sizeof mc);
    if (agree_verdict(ctx, w->c, &mine, &mc) != 0)
        return -1;
    if (mc.nvls) {
        int ok = rt->mc_open(ctx, st, w, &mc) == 0;
        if (agree_ok(ctx, w->c, ok, "multicast (nvls)") != 0)
            return -1;
    }
    w->mc = mc;
    w->mc_decided = 1;
    *out = mc;
    return 0;
}
