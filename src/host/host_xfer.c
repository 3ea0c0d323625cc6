/* One-sided transfers on the host backend, over the shared-memory windows.
 *
 * The host backend has no stream: everything else it does (fills, copies,
 * signal waits) completes before the call returns, and a transfer does too,
 * so that scripts see the same ordering on both backends.  A post copies
 * every segment on the calling thread, then adds to the signal word with
 * release ordering (the same atomic as host_signal_add), so a peer whose
 * s:wait sees the value also sees the data.  test() after a post is
 * therefore always "done"; "pending" is a state of the cuda backend only.
 *
 * Engines: "ce" is memcpy; "sm" is a word loop, the host's stand-in for the
 * copy kernel (src/DESIGN.md: host "kernels" are C loops).  Results are equal.
 *
 * A peer on another node (plan->net) is reached through the network path
 * (core/netpath.c): each segment is one put or get, answered once it landed,
 * then the signal's add, so the order is the same as through loads and
 * stores; the engine does not apply there. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/gcsh.h"
#include "host/host.h"

struct gcsh_xfer_impl {
    gcsh_xfer_plan plan; /* plan.seg points at seg */
    gcsh_xfer_seg *seg;
};

static int host_xfer_prepare(gcsh_ctx *ctx, const gcsh_xfer_plan *plan, gcsh_xfer_impl **out)
{
    gcsh_xfer_impl *x = calloc(1, sizeof *x);
    gcsh_xfer_seg *seg = calloc(plan->nseg, sizeof *seg);
    if (!x || !seg) {
        free(x);
        free(seg);
        return gcsh_set_error(ctx, "transfer: out of host memory");
    }
    memcpy(seg, plan->seg, plan->nseg * sizeof *seg);
    x->plan = *plan;
    x->plan.seg = seg;
    x->seg = seg;
    *out = x;
    return 0;
}

/* 8-byte words, then bytes for the tail (memcpy of one word: an aligned or
 * unaligned load and store, without type-punning the caller's elements). */
static void copy_loop(unsigned char *dst, const unsigned char *src, size_t bytes)
{
    size_t i = 0;
    for (; i + 8 <= bytes; i += 8)
        memcpy(dst + i, src + i, 8);
    for (; i < bytes; i++)
        dst[i] = src[i];
}

static int host_xfer_post(gcsh_ctx *ctx, gcsh_xfer_impl *x)
{
    const gcsh_xfer_plan *p = &x->plan;
    if (p->net)
        return gcsh_netpath_post(ctx, p, gcsh_host_window_net);
    for (size_t i = 0; i < p->nseg; i++) {
        if (p->engine == GCSH_XFER_SM)
            copy_loop(x->seg[i].dst, x->seg[i].src, x->seg[i].bytes);
        else
            memcpy(x->seg[i].dst, x->seg[i].src, x->seg[i].bytes);
    }
    if (p->signal)
        atomic_fetch_add_explicit((_Atomic uint64_t *)p->signal, p->signal_value,
                                  memory_order_release);
    return 0;
}

static int host_xfer_test(gcsh_ctx *ctx, gcsh_xfer_impl *x, enum gcsh_xfer_status *status)
{
    (void)ctx;
    (void)x;
    *status = GCSH_XFER_DONE; /* post finished the copy */
    return 0;
}

static int host_xfer_wait_stream(gcsh_ctx *ctx, gcsh_xfer_impl *x)
{
    (void)ctx;
    (void)x;
    return 0;
}

static int host_xfer_wait_cpu(gcsh_ctx *ctx, gcsh_xfer_impl *x, double timeout)
{
    (void)ctx;
    (void)x;
    (void)timeout;
    return 0;
}

static void host_xfer_release(gcsh_ctx *ctx, gcsh_xfer_impl *x)
{
    (void)ctx;
    if (!x)
        return;
    free(x->seg);
    free(x);
}

/* Ordering.  Every operation of this backend has completed when its call
 * returns: a post's copies and its signal's add (loads and stores into the
 * node's shared memory), a signal set or add, and on the network path each
 * request, answered once applied at the target (core/netpath.c).  So what
 * fence and quiet must still give is the memory order of those stores for
 * the C11 model: a sequentially consistent fence, which the waits' acquire
 * loads pair with.  (The persistent all-reduce's work rung before is
 * waited for by the host's order, host_order.c: both rows are ORDERED.) */
static int host_xfer_fence(gcsh_ctx *ctx)
{
    (void)ctx;
    atomic_thread_fence(memory_order_seq_cst);
    return 0;
}

static int host_xfer_quiet(gcsh_ctx *ctx)
{
    return host_xfer_fence(ctx);
}

const gcsh_xfer_ops gcsh_host_xfer_ops = {
    .engines = "ce sm",
    .prepare = host_xfer_prepare,
    .post = host_xfer_post,
    .test = host_xfer_test,
    .wait_stream = host_xfer_wait_stream,
    .wait_cpu = host_xfer_wait_cpu,
    .release = host_xfer_release,
    .fence = host_xfer_fence,
    .quiet = host_xfer_quiet,
};
