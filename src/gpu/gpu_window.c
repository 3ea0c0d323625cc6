/* Symmetric-memory windows and signals on a GPU backend: what every GPU
 * backend does alike (gpu_window.h).
 *
 * Kinds are rows (gpu_win_kind) of the device runtime's list (gpu_rt.h):
 * cuda's "nccl" and "vmm" (cuda_win_nccl.c, cuda_win_vmm.c).  Every kind
 * ends as a peer pointer table valid in this process for copies and
 * kernels.
 *
 * Creation runs in stages (backend.h, winbuild.h): after each one every rank
 * learns whether all succeeded, so all ranks learn of any failure at the same
 * stage and undo the same stages: nothing stays registered, and no rank
 * enters a collective of the backend's library that another rank will never
 * reach.
 *
 * Signals are 64-bit words in a window: set/add/wait are small kernels on
 * the rank's stream (cuda: kernels/window.cu; see the comments there for
 * the memory ordering); the host's polls read them off that stream. */
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_net.h"

/* The kind named (the binding has checked that a name is one of .kinds). */
static const gpu_win_kind *kind_of(const char *name)
{
    const gcsh_gpu_rt *rt = gcsh_gpu();
    for (size_t i = 0; rt->kinds[i]; i++)
        if (strcmp(rt->kinds[i]->name, name) == 0)
            return rt->kinds[i];
    return rt->kinds[0];
}

int gpu_win_granularity(gcsh_ctx *ctx, const char *kind, size_t *gran)
{
    gcsh_gpu_dev *st = gcsh_gpu()->enter(ctx);
    return st ? kind_of(kind)->granularity(ctx, st, gran) : -1;
}

/* A slice cannot exceed the GPU's memory (what is free changes, and a
 * shortfall below this bound still fails cleanly, on every rank, in create). */
int gpu_win_max_bytes(gcsh_ctx *ctx, const char *kind, size_t *max)
{
    (void)kind;
    gcsh_gpu_dev *st = gcsh_gpu()->enter(ctx);
    return st ? gcsh_gpu()->mem_total(ctx, st, max) : -1;
}

int gpu_win_kind_usable(gcsh_ctx *ctx, gcsh_comm_impl *c, const char *kind, char *why,
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

static void window_free(gcsh_window_impl *w)
{
    if (w->own)
        gcsh_gpu()->win_free(w->own);
    free(w->remote); /* the device went before gpu_net_forget could */
    free(w);
}

const gcsh_window_plan *gpu_win_create_plan(const char *kind)
{
    return kind_of(kind)->plan;
}

/* Local: host memory only; the check stage that follows tells every rank
 * of a failure here. */
int gpu_win_create_begin(gcsh_ctx *ctx, gcsh_comm_impl *c, const char *kind,
                         gcsh_window_desc *d, gcsh_window_impl **out)
{
    const gcsh_gpu_rt *rt = gcsh_gpu();
    gcsh_gpu_dev *st = rt->enter(ctx);
    if (!st) /* only if init failed, which every rank then knows */
        return -1;
    if (rt->comm_aborted(c))
        return gcsh_set_error(ctx, "communicator was aborted after an error or an interrupt");
    int rank, size;
    rt->comm_place(c, &rank, &size);
    gcsh_window_impl *w = calloc(1, sizeof *w);
    if (w)
        w->own = rt->win_new();
    d->team = calloc((size_t)size, sizeof *d->team);
    d->peer = calloc((size_t)size, sizeof *d->peer);
    if (!w || !w->own || !d->team || !d->peer) {
        if (w)
            window_free(w);
        desc_clear(d);
        return gcsh_set_error(ctx, "out of host memory");
    }
    w->kind = kind_of(kind);
    w->c = c;
    w->bytes = d->alloc_bytes;
    d->loc = rt->location(st);
    /* window memory is not the pool's: what freed tensors left cached there
     * goes back to the device first */
    rt->pool_trim(st);
    *out = w;
    return 0;
}

int gpu_win_create_stage(gcsh_ctx *ctx, gcsh_window_impl *w, gcsh_window_desc *d, int i,
                         char *report, size_t len)
{
    gcsh_gpu_dev *st = gcsh_gpu()->enter(ctx);
    if (!st)
        return -1;
    int rc = w->kind->stage(ctx, st, w, d, i, report, len);
    if (i + 1 < w->kind->plan->n)
        return rc;
    /* the last stage: ranks on other nodes reach my slice over the network */
    int net = gpu_net_share(ctx, st, w, d, rc != 0, report, len);
    return rc == 0 ? net : rc;
}

void gpu_win_create_abort(gcsh_ctx *ctx, gcsh_window_impl *w, gcsh_window_desc *d)
{
    const gcsh_gpu_rt *rt = gcsh_gpu();
    gcsh_gpu_dev *st = rt->enter(ctx);
    if (st) { /* else the device is gone, and what it held with it */
        gpu_net_forget(st, w);
        w->kind->undo(ctx, st, w);
        if (d->peer_table_dev)
            rt->free_ordered(st, d->peer_table_dev);
    }
    desc_clear(d);
    window_free(w);
}

int gpu_win_destroy(gcsh_ctx *ctx, gcsh_window_impl *w, gcsh_window_desc *d)
{
    const gcsh_gpu_rt *rt = gcsh_gpu();
    gcsh_gpu_dev *st = rt->enter(ctx);
    int rc = st ? 0 : -1;
    /* my own kernels and copies on the slice first (peers: the binding's barrier) */
    if (st && rt->wait(ctx, st) != 0)
        rc = -1;
    if (st && rt->mc_close(ctx, st, w) != 0)
        rc = -1;
    if (st) {
        gpu_net_forget(st, w); /* after the binding's barrier: no request comes */
        if (w->kind->destroy(ctx, st, w) != 0)
            rc = -1;
        if (d->peer_table_dev)
            rt->free_ordered(st, d->peer_table_dev);
    }
    desc_clear(d);
    window_free(w);
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
    gcsh_gpu_dev *st = gcsh_gpu()->enter(ctx);
    return st ? gcsh_gpu()->signal_store(ctx, st, word_of(d, peer, slot), v, add) : -1;
}

int gpu_win_signal_set(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d, int peer,
                       size_t slot, uint64_t v)
{
    (void)w;
    return signal_store(ctx, d, peer, slot, v, 0);
}

int gpu_win_signal_add(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d, int peer,
                       size_t slot, uint64_t v)
{
    (void)w;
    return signal_store(ctx, d, peer, slot, v, 1);
}

/* Stream-ordered, then waited for. */
int gpu_win_signal_fetch_add(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                             int peer, size_t slot, uint64_t v, uint64_t *old)
{
    (void)w;
    gcsh_gpu_dev *st = gcsh_gpu()->enter(ctx);
    return st ? gcsh_gpu()->signal_fetch_add(ctx, st, word_of(d, peer, slot), v, d->loc, old)
              : -1;
}

/* Stream-ordered: returns at once; the kernel spins on the GPU, bounded and
 * released early by an interrupt. */
int gpu_win_signal_wait(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                        size_t slot, uint64_t v, enum gcsh_cmp cmp)
{
    (void)w;
    gcsh_gpu_dev *st = gcsh_gpu()->enter(ctx);
    return st ? gcsh_gpu()->signal_wait(ctx, st, word_of(d, d->team_rank, slot), v, cmp) : -1;
}

/* The CPU polls the word; the acquire side is the copy engine's read, after
 * which later work on the stream sees what the signaller released.  As on
 * the host, a wait that does not hold at the first look is noted for hang
 * reports ("slot 1 is now 0", core/waitnote.h) through `seen`, the last
 * value polled (the watcher thread cannot load device memory), and an
 * interrupt ends it with the host's words. */
int gpu_win_signal_wait_cpu(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                            size_t slot, uint64_t v, enum gcsh_cmp cmp, double timeout)
{
    (void)w;
    const gcsh_gpu_rt *rt = gcsh_gpu();
    gcsh_gpu_dev *st = rt->enter(ctx);
    if (!st)
        return -1;
    const uint64_t *word = word_of(d, d->team_rank, slot);
    double deadline = gcsh_now_seconds() + timeout;
    _Atomic uint64_t seen = 0;
    int rc = 0, noted = 0;
    for (unsigned polls = 0;; polls++) {
        uint64_t x = 0;
        if (rt->peek(ctx, st, word, sizeof *word, &x) != 0) {
            rc = -1;
            break;
        }
        if (gcsh_cmp_holds(x, cmp, v))
            break;
        atomic_store_explicit(&seen, x, memory_order_release);
        if (!noted) {
            char what[32];
            snprintf(what, sizeof what, "slot %zu", slot);
            gcsh_wait_note_begin(&ctx->wait_note, what, -1, &seen, UINT64_MAX, 0);
            noted = 1;
        }
        if (atomic_load(&ctx->interrupt)) {
            rc = gcsh_set_error(ctx, "signal wait interrupted");
            break;
        }
        if (gcsh_now_seconds() >= deadline) {
            rc = 1;
            break;
        }
        gcsh_gpu_poll_pause(polls);
    }
    if (noted)
        gcsh_wait_note_end(&ctx->wait_note);
    return rc;
}

/* t:wait: the CPU polls the element off the rank's stream, as
 * gpu_win_signal_wait_cpu polls a word (the copy engine's read is the
 * acquire side).  The hang report's note reads `seen`, the last value
 * polled: the watcher thread cannot load device memory. */
int gpu_win_elem_wait(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                      int member, size_t offset, gcsh_dtype dt, gcsh_scalar v,
                      enum gcsh_cmp cmp, const char *what)
{
    (void)w;
    const gcsh_gpu_rt *rt = gcsh_gpu();
    gcsh_gpu_dev *st = rt->enter(ctx);
    if (!st)
        return -1;
    const char *elem = (const char *)d->peer[member] + offset;
    size_t bytes = gcsh_dtype_size(dt);
    _Atomic uint64_t seen = 0;
    int rc = 0, noted = 0;
    for (unsigned polls = 0;; polls++) {
        uint64_t bits = 0;
        if (rt->peek(ctx, st, elem, bytes, &bits) != 0) {
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
        gcsh_gpu_poll_pause(polls);
    }
    if (noted)
        gcsh_wait_note_end(&ctx->wait_note);
    return rc;
}

/* Stream-ordered: the value after everything this rank queued so far. */
int gpu_win_signal_read(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                        size_t slot, uint64_t *v)
{
    (void)w;
    return gcsh_gpu()->mem->copy(ctx, v, GCSH_LOC_HOST, word_of(d, d->team_rank, slot), d->loc,
                                 sizeof *v);
}

/* A kernel loads member peer's slice through the device peer table. */
int gpu_win_peer_read(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d, int peer,
                      size_t offset, void *dst, size_t bytes)
{
    (void)w;
    gcsh_gpu_dev *st = gcsh_gpu()->enter(ctx);
    return st ? gcsh_gpu()->peer_copy(ctx, st, dst, d->peer_table_dev, peer, offset, bytes)
              : -1;
}
