/* One-sided transfers on a GPU backend: copies between this rank's device
 * memory and peers' window slices, through the addresses of the peer
 * pointer table.  Here: what every GPU backend keeps alike (the segments a
 * plan names, but the empty ones; its signal), the CPU's wait for a post,
 * and c:quiet; how a post copies (cuda's engines "ce" and "sm") and how its
 * completion is known are the device runtime's (cuda: cuda_xfer.c).
 *
 * Ordering.  Every one-sided operation of a GPU backend runs on the rank's
 * stream, so each starts after the one before it finished; w:fence() adds a
 * system-scope fence there (the runtime's fence). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_window.h"
#include "gpu/gpu_xfer.h"

/* x and what it holds; the runtime's part is freed in the stream's order,
 * so a post in flight keeps what it reads. */
static void xfer_free(gcsh_gpu_dev *st, gcsh_xfer_impl *x)
{
    if (x->own)
        gcsh_gpu()->xfer_free(st, x->own);
    free(x->dsts);
    free(x->srcs);
    free(x->sizes);
    free(x->net_seg);
    free(x);
}

/* A peer off the team: the plan as it is, for gcsh_netpath_post. */
static int keep_net_plan(gcsh_ctx *ctx, gcsh_xfer_impl *x, const gcsh_xfer_plan *p)
{
    x->net_seg = calloc(p->nseg ? p->nseg : 1, sizeof *x->net_seg);
    if (!x->net_seg)
        return gcsh_set_error(ctx, "transfer: out of host memory");
    memcpy(x->net_seg, p->seg, p->nseg * sizeof *x->net_seg);
    x->net = *p;
    x->net.seg = x->net_seg;
    x->signal = NULL; /* an offset at the peer: the network path adds it */
    return 0;
}

static int keep_segments(gcsh_ctx *ctx, gcsh_xfer_impl *x, const gcsh_xfer_plan *p)
{
    x->dsts = calloc(p->nseg, sizeof *x->dsts);
    x->srcs = calloc(p->nseg, sizeof *x->srcs);
    x->sizes = calloc(p->nseg, sizeof *x->sizes);
    if (!x->dsts || !x->srcs || !x->sizes)
        return gcsh_set_error(ctx, "transfer: out of host memory");
    for (size_t i = 0; i < p->nseg; i++) {
        if (p->seg[i].bytes == 0)
            continue;
        x->dsts[x->nseg] = p->seg[i].dst;
        x->srcs[x->nseg] = p->seg[i].src;
        x->sizes[x->nseg] = p->seg[i].bytes;
        x->nseg++;
    }
    return 0;
}

int gpu_xfer_prepare(gcsh_ctx *ctx, const gcsh_xfer_plan *plan, gcsh_xfer_impl **out)
{
    gcsh_gpu_dev *st = gcsh_gpu()->enter(ctx);
    if (!st)
        return -1;
    gcsh_xfer_impl *x = calloc(1, sizeof *x);
    if (!x)
        return gcsh_set_error(ctx, "transfer: out of host memory");
    x->engine = plan->engine;
    x->signal = plan->signal;
    x->value = plan->signal_value;
    int kept = plan->net ? keep_net_plan(ctx, x, plan) : keep_segments(ctx, x, plan);
    if (kept != 0 || gcsh_gpu()->xfer_prepare(ctx, st, x) != 0) {
        xfer_free(st, x);
        return -1;
    }
    *out = x;
    return 0;
}

/* A peer off the team: each segment one put or get over the network path
 * (gpu_net.c), then the signal's add, each applied at the target before
 * the next and before post returns; the runtime's post then only marks the
 * completion (nothing left for its engine). */
int gpu_xfer_post(gcsh_ctx *ctx, gcsh_xfer_impl *x)
{
    gcsh_gpu_dev *st = gcsh_gpu()->enter(ctx);
    if (!st)
        return -1;
    if (x->net.net && gcsh_netpath_post(ctx, &x->net, gpu_win_net) != 0)
        return -1;
    return gcsh_gpu()->xfer_post(ctx, st, x);
}

int gpu_xfer_test(gcsh_ctx *ctx, gcsh_xfer_impl *x, enum gcsh_xfer_status *status)
{
    if (!gcsh_gpu()->enter(ctx))
        return -1;
    gcsh_gpu()->xfer_query(ctx, x, status);
    return 0;
}

int gpu_xfer_wait_stream(gcsh_ctx *ctx, gcsh_xfer_impl *x)
{
    gcsh_gpu_dev *st = gcsh_gpu()->enter(ctx);
    return st ? gcsh_gpu()->xfer_wait_stream(ctx, st, x) : -1;
}

int gpu_xfer_wait_cpu(gcsh_ctx *ctx, gcsh_xfer_impl *x, double timeout)
{
    const gcsh_gpu_rt *rt = gcsh_gpu();
    gcsh_gpu_dev *st = rt->enter(ctx);
    if (!st)
        return -1;
    double deadline = gcsh_now_seconds() + timeout;
    for (unsigned polls = 0;; polls++) {
        enum gcsh_xfer_status status;
        rt->xfer_query(ctx, x, &status);
        if (status == GCSH_XFER_DONE)
            return 0;
        if (status == GCSH_XFER_ERROR)
            return -1;
        if (atomic_load(&ctx->interrupt)) {
            rt->cancel_waits(st); /* a GPU signal wait ahead of it must not outlive the chunk */
            return gcsh_set_error(ctx, "interrupted while waiting for a transfer");
        }
        if (gcsh_now_seconds() >= deadline)
            return 1;
        gcsh_gpu_poll_pause(polls);
    }
}

/* Without the device (it is gone) x stays: what it holds went with it. */
void gpu_xfer_release(gcsh_ctx *ctx, gcsh_xfer_impl *x)
{
    gcsh_gpu_dev *st = x ? gcsh_gpu()->enter(ctx) : NULL;
    if (st)
        xfer_free(st, x);
}

int gpu_xfer_fence(gcsh_ctx *ctx)
{
    gcsh_gpu_dev *st = gcsh_gpu()->enter(ctx);
    return st ? gcsh_gpu()->fence(ctx, st) : -1;
}

/* The fence, then the CPU waits for the stream (interruptibly: a GPU signal
 * wait queued before it may be waiting for a peer). */
int gpu_xfer_quiet(gcsh_ctx *ctx)
{
    gcsh_gpu_dev *st = gcsh_gpu()->enter(ctx);
    if (!st || gpu_xfer_fence(ctx) != 0)
        return -1;
    return gcsh_gpu()->wait(ctx, st);
}
