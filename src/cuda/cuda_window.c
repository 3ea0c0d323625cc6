/* Symmetric-memory windows and signals on the cuda backend.
 *
 * Kinds: "nccl" (ncclMemAlloc + ncclCommWindowRegister(SYMMETRIC) + a device
 * communicator; cuda_win_nccl.c) and "vmm" (cuMemCreate, POSIX-fd export
 * over a private Unix socket, cuMemMap; cuda_win_vmm.c).  Both end as a
 * peer pointer table valid in this process for copies (UVA) and kernels.
 *
 * Creation runs in stages (backend.h, winbuild.h): after each one every rank
 * learns whether all succeeded, so all ranks learn of any failure at the same
 * stage and undo the same stages: nothing stays registered, and no rank
 * enters an NCCL collective that another rank will never reach.
 *
 * Signals are 64-bit words in a window: set/add/wait are small kernels on
 * the rank's stream (kernels/window.cu); see the comments there for the
 * memory ordering. */
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_window.h"

/* The kinds, in the order of .kinds below (the binding has checked that
 * a name is one of .kinds). */
static const cuda_win_kind *const kinds[] = {&win_nccl_kind, &win_vmm_kind};

static const cuda_win_kind *kind_of(const char *name)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kinds[i]->name, name) == 0)
            return kinds[i];
    return kinds[0];
}

static int cuda_win_granularity(gcsh_ctx *ctx, const char *kind, size_t *gran)
{
    cuda_state *st = cuda_enter(ctx);
    return st ? kind_of(kind)->granularity(ctx, st, gran) : -1;
}

/* A slice cannot exceed the GPU's memory (what is free changes, and a
 * shortfall below this bound still fails cleanly, on every rank, in create). */
static int cuda_win_max_bytes(gcsh_ctx *ctx, const char *kind, size_t *max)
{
    (void)kind;
    size_t free_b = 0, total = 0;
    if (!cuda_enter(ctx))
        return -1;
    CUDA_TRY(ctx, cudaMemGetInfo(&free_b, &total));
    *max = total;
    return 0;
fail:
    return -1;
}

static int cuda_kind_usable(gcsh_ctx *ctx, gcsh_comm_impl *c, const char *kind, char *why,
                            size_t len)
{
    return kind_of(kind)->usable(ctx->be_state, c, why, len);
}

static void desc_clear(gcsh_window_desc *d)
{
    free(d->team);
    free(d->peer);
    d->team = NULL;
    d->peer = NULL;
    d->peer_table_dev = NULL;
    d->team_size = 0;
}

static const gcsh_window_plan *cuda_create_plan(const char *kind)
{
    return kind_of(kind)->plan;
}

/* Local: host memory only; the check stage that follows tells every rank
 * of a failure here. */
static int cuda_create_begin(gcsh_ctx *ctx, gcsh_comm_impl *c, const char *kind,
                             gcsh_window_desc *d, gcsh_window_impl **out)
{
    cuda_state *st = cuda_enter(ctx);
    if (!st) /* only if init failed, which every rank then knows */
        return -1;
    if (c->aborted)
        return gcsh_set_error(ctx, "communicator was aborted after an error or an interrupt");
    gcsh_window_impl *w = calloc(1, sizeof *w);
    d->team = calloc((size_t)c->size, sizeof *d->team);
    d->peer = calloc((size_t)c->size, sizeof *d->peer);
    if (!w || !d->team || !d->peer) {
        free(w);
        desc_clear(d);
        return gcsh_set_error(ctx, "out of host memory");
    }
    w->kind = kind_of(kind);
    w->c = c;
    w->bytes = d->alloc_bytes;
    w->fd = -1;
    w->x.listen_fd = -1;
    d->loc = st->dev;
    /* window memory is not the pool's: what freed tensors left cached there
     * goes back to the device first */
    cuda_pool_trim(st);
    *out = w;
    return 0;
}

static int cuda_create_stage(gcsh_ctx *ctx, gcsh_window_impl *w, gcsh_window_desc *d, int i,
                             char *report, size_t len)
{
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    int rc = w->kind->stage(ctx, st, w, d, i, report, len);
    if (i + 1 < w->kind->plan->n)
        return rc;
    /* the last stage: ranks on other nodes reach my slice over the network */
    int net = cuda_net_share(ctx, st, w, d, rc != 0, report, len);
    return rc == 0 ? net : rc;
}

static void cuda_create_abort(gcsh_ctx *ctx, gcsh_window_impl *w, gcsh_window_desc *d)
{
    cuda_state *st = cuda_enter(ctx);
    if (st) { /* else the device is gone, and what it held with it */
        cuda_net_forget(st, w);
        w->kind->undo(ctx, st, w);
        if (d->peer_table_dev)
            cuda_free_ordered(st, d->peer_table_dev);
    }
    desc_clear(d);
    free(w);
}

static int cuda_win_destroy(gcsh_ctx *ctx, gcsh_window_impl *w, gcsh_window_desc *d)
{
    cuda_state *st = cuda_enter(ctx);
    int rc = st ? 0 : -1;
    /* my own kernels and copies on the slice first (peers: the binding's barrier) */
    if (st && cuda_wait(ctx, st, NULL) != 0)
        rc = -1;
    if (st && cuda_kern_window_gone(ctx, w) != 0)
        rc = -1;
    if (st) {
        cuda_net_forget(st, w); /* after the binding's barrier: no request comes */
        if (w->kind->destroy(ctx, st, w) != 0)
            rc = -1;
        if (d->peer_table_dev)
            cuda_free_ordered(st, d->peer_table_dev);
    }
    desc_clear(d);
    free(w);
    return rc;
}

/* ---- signals ------------------------------------------------------------ */

static uint64_t *word_of(const gcsh_window_desc *d, int member, size_t slot)
{
    return (uint64_t *)d->peer[member] + slot;
}

static int signal_store(gcsh_ctx *ctx, const gcsh_window_desc *d, int peer, size_t slot,
                        uint64_t v, int add)
{
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    CUDA_TRY(ctx, gcsh_k_signal_store(word_of(d, peer, slot), v, add, st->stream));
    return 0;
fail:
    return -1;
}

static int cuda_signal_set(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                           int peer, size_t slot, uint64_t v)
{
    (void)w;
    return signal_store(ctx, d, peer, slot, v, 0);
}

static int cuda_signal_add(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                           int peer, size_t slot, uint64_t v)
{
    (void)w;
    return signal_store(ctx, d, peer, slot, v, 1);
}

/* Stream-ordered, then waited for: the kernel leaves the old value in
 * poll_dev (free: the poll stream is only used inside a call), which the
 * stream-ordered copy of s:read brings to the host. */
static int cuda_signal_fetch_add(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                                 int peer, size_t slot, uint64_t v, uint64_t *old)
{
    (void)w;
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    CUDA_TRY(ctx, gcsh_k_signal_fetch_add(word_of(d, peer, slot), v, st->poll_dev, st->stream));
    return gcsh_cuda_mem_ops.copy(ctx, old, GCSH_LOC_HOST, st->poll_dev, d->loc,
                                  sizeof *old);
fail:
    return -1;
}

/* Stream-ordered: returns at once; the kernel spins on the GPU, bounded by
 * st->wait_bound_ns and released early by cuda_cancel_waits (interrupts). */
static int cuda_signal_wait(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                            size_t slot, uint64_t v, enum gcsh_cmp cmp)
{
    (void)w;
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    CUDA_TRY(ctx, gcsh_k_signal_wait(word_of(d, d->team_rank, slot), v, (int)cmp, st->wctl,
                                     cuda_wait_gen(ctx, st), st->wait_bound_ns, st->stream));
    return 0;
fail:
    return -1;
}

/* Reads `bytes` (<= 8) at p now, off the rank's stream (which a GPU wait
 * may hold): on the poll stream, device to device into poll_dev, then into
 * pinned memory (window memory is only copied device to device: see
 * cuda_copy); into the first bytes of *bits, the rest zero. */
static int peek_bytes(gcsh_ctx *ctx, cuda_state *st, const void *p, size_t bytes, uint64_t *bits)
{
    CUDA_TRY(ctx, cudaMemcpyAsync(st->poll_dev, p, bytes, cudaMemcpyDeviceToDevice,
                                  st->poll_stream));
    CUDA_TRY(ctx, cudaMemcpyAsync(st->poll_buf, st->poll_dev, bytes, cudaMemcpyDeviceToHost,
                                  st->poll_stream));
    CUDA_TRY(ctx, cudaStreamSynchronize(st->poll_stream));
    *bits = 0;
    memcpy(bits, st->poll_buf, bytes);
    return 0;
fail:
    return -1;
}

/* A signal word now. */
static int peek(gcsh_ctx *ctx, cuda_state *st, const uint64_t *word, uint64_t *v)
{
    return peek_bytes(ctx, st, word, sizeof *word, v);
}

/* The CPU polls the word; the acquire side is the copy engine's read, after
 * which later work on the stream sees what the signaller released. */
static int cuda_signal_wait_cpu(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                                size_t slot, uint64_t v, enum gcsh_cmp cmp, double timeout)
{
    (void)w;
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    const uint64_t *word = word_of(d, d->team_rank, slot);
    double deadline = gcsh_now_seconds() + timeout;
    for (unsigned polls = 0;; polls++) {
        uint64_t x = 0;
        if (peek(ctx, st, word, &x) != 0)
            return -1;
        if (gcsh_cmp_holds(x, cmp, v))
            return 0;
        if (atomic_load(&ctx->interrupt))
            return gcsh_set_error(ctx, "interrupted while waiting for a signal");
        if (gcsh_now_seconds() >= deadline)
            return 1;
        cuda_poll_pause(polls);
    }
}

/* t:wait: the CPU polls the element off the rank's stream, as
 * cuda_signal_wait_cpu polls a word (the copy engine's read is the acquire
 * side).  The hang report's note reads `seen`, the last value polled: the
 * watcher thread cannot load device memory. */
static int cuda_elem_wait(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                          int member, size_t offset, gcsh_dtype dt, gcsh_scalar v,
                          enum gcsh_cmp cmp, const char *what)
{
    (void)w;
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    const char *elem = (const char *)d->peer[member] + offset;
    size_t bytes = gcsh_dtype_size(dt);
    _Atomic uint64_t seen = 0;
    int rc = 0, noted = 0;
    for (unsigned polls = 0;; polls++) {
        uint64_t bits = 0;
        if (peek_bytes(ctx, st, elem, bytes, &bits) != 0) {
            rc = -1;
            break;
        }
        if (gcsh_elem_holds(&bits, dt, cmp, v))
            break;
        atomic_store_explicit(&seen, bits, memory_order_release);
        if (!noted) {
            gcsh_wait_note_begin_elem(&ctx->wait_note, what, -1, &seen, 8, dt);
            noted = 1;
        }
        if (atomic_load(&ctx->interrupt)) {
            rc = gcsh_set_error(ctx, "element wait interrupted");
            break;
        }
        cuda_poll_pause(polls);
    }
    if (noted)
        gcsh_wait_note_end(&ctx->wait_note);
    return rc;
}

/* Stream-ordered: the value after everything this rank queued so far. */
static int cuda_signal_read(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                            size_t slot, uint64_t *v)
{
    (void)w;
    return gcsh_cuda_mem_ops.copy(ctx, v, GCSH_LOC_HOST, word_of(d, d->team_rank, slot),
                                  d->loc, sizeof *v);
}

/* A kernel loads member peer's slice through the device peer table. */
static int cuda_peer_read(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                          int peer, size_t offset, void *dst, size_t bytes)
{
    (void)w;
    cuda_state *st = cuda_enter(ctx);
    if (!st)
        return -1;
    CUDA_TRY(ctx, gcsh_k_peer_copy(dst, d->peer_table_dev, peer, offset, bytes, st->stream));
    return 0;
fail:
    return -1;
}

const gcsh_window_ops gcsh_cuda_window_ops = {
    .kinds = "nccl vmm", /* kinds[]'s names, in order of preference */
    .kind_usable = cuda_kind_usable,
    .granularity = cuda_win_granularity,
    .max_bytes = cuda_win_max_bytes,
    .create_plan = cuda_create_plan,
    .create_begin = cuda_create_begin,
    .create_stage = cuda_create_stage,
    .create_abort = cuda_create_abort,
    .destroy = cuda_win_destroy,
    .signal_set = cuda_signal_set,
    .signal_add = cuda_signal_add,
    .signal_fetch_add = cuda_signal_fetch_add,
    .signal_wait = cuda_signal_wait,
    .signal_wait_cpu = cuda_signal_wait_cpu,
    .signal_read = cuda_signal_read,
    .elem_wait = cuda_elem_wait,
    .peer_read = cuda_peer_read,
    .net = cuda_win_net,
    .net_path = "tcp",
};
