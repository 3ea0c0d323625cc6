/* The cuda backend's windows and signals driven through its tables, under
 * mpirun on a GPU machine (one GPU per rank, one node):
 *   for kinds nccl and vmm: create, team and peer table, each rank's slice
 *   seen by every peer through copies (UVA) and through the peer-read
 *   kernel (the device table, from ncclGetLsaPointer for nccl), writes
 *   through peer pointers, signals with data ordering (no barrier between
 *   the data, the signal and the reader), CPU waits with timeouts, the
 *   bounded and the cancelled GPU wait, a failure on one rank failing
 *   everywhere with nothing left, the staged registration stopped after
 *   each stage and failed in each stage on one rank (undone everywhere, the
 *   next window works), and a window on a split communicator; plus the
 *   cuda 'agree'.
 * `--bench` adds figures: 1 GiB registration per kind, and rank 0 copying
 * 1 GiB of rank 1's slice by cudaMemcpyAsync (UVA, what a tensor copy from
 * w:peer(r) does) and by the peer-read kernel, against cudaMemcpyPeerAsync of
 * 1 GiB from a buffer of its own on rank 1's GPU (the baseline).
 * Without a GPU (or a cuda build) it skips.
 *
 *   mpirun -np 2 build/tests/test_cuda_window [--bench] */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "rank/rank.h"
#include "unit.h"

#ifndef GCSH_HAVE_CUDA
int main(void)
{
    printf("test_cuda_window: skipped (built without CUDA)\n0 passed, 0 failed, 1 skipped\n");
    return 0;
}
#else

#include "cuda_test.h"

enum { N = 4099 }; /* i32 elements per slice: odd, so the byte path runs too */

static int32_t value(int r, size_t i)
{
    return (int32_t)(r * 1000003 + (int)i);
}

/* Host copy of n i32 at a device address (a peer's through UVA). */
static int32_t *fetch(const void *dev, size_t n)
{
    int32_t *h = malloc(n * 4);
    int rc = M->copy(&ctx, h, GCSH_LOC_HOST, dev, ctx.loc, n * 4);
    CHECK(rc == 0, "[%d] copy to host: %s", ctx.rank, ctx.err);
    return h;
}

static void expect_values(const char *what, const int32_t *h, size_t n, int r, size_t from)
{
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++)
        if (h[i] != value(r, from + i))
            bad = i;
    CHECK(bad == n, "[%d] %s: element %zu is %d, want %d", ctx.rank, what, bad,
          bad < n ? h[bad] : 0, bad < n ? value(r, from + bad) : 0);
}

static void test_agree(gcsh_comm_impl *c)
{
    int mine[2] = {ctx.rank * 7, -ctx.rank}, *all = calloc((size_t)ctx.size * 2, sizeof *all);
    CHECK(C->agree(&ctx, c, mine, all, sizeof mine) == 0, "agree: %s", ctx.err);
    int bad = 0;
    for (int r = 0; r < ctx.size; r++)
        bad |= all[2 * r] != r * 7 || all[2 * r + 1] != -r;
    CHECK(!bad, "[%d] agree gathered the wrong values", ctx.rank);
    free(all);
}

/* Team and table: one node, so every rank of c is in the team, in order. */
static void check_team(const char *kind, gcsh_comm_impl *c, const win *x)
{
    const gcsh_window_desc *d = &x->d;
    CHECK(d->team_size == C->size(c) && d->team_rank == C->rank(c),
          "[%d] %s team %d/%d in a comm of %d", ctx.rank, kind, d->team_rank, d->team_size,
          C->size(c));
    for (int i = 0; i < d->team_size; i++)
        CHECK(d->team[i] == i && d->peer[i], "[%d] %s team[%d] = %d, peer %p", ctx.rank, kind, i,
              d->team[i], d->peer[i]);
    CHECK(d->peer_table_dev && d->loc == ctx.loc && d->handle[0], "[%d] %s desc", ctx.rank, kind);
    if (ctx.rank == 0)
        printf("%s window: %zu bytes (granularity %zu): %s\n", kind, d->alloc_bytes,
               d->granularity, d->handle);
}

/* Every rank fills its slice; everyone reads everyone (copy engine), and
 * the next rank's slice through the kernel, aligned and at an odd offset. */
static void test_visibility(const char *kind, gcsh_comm_impl *c, win *x)
{
    gcsh_window_desc *d = &x->d;
    int me = d->team_rank, n = d->team_size, next = (me + 1) % n;
    gcsh_scalar start = {1, value(C->rank(c), 0), 0}, one = {1, 1, 0};
    CHECK(M->arange(&ctx, d->peer[me], d->loc, GCSH_I32, N, start, one) == 0, "arange: %s",
          ctx.err);
    CHECK(C->barrier(&ctx, c) == 0, "barrier: %s", ctx.err);
    for (int p = 0; p < n; p++) {
        int32_t *h = fetch(d->peer[p], N);
        expect_values(kind, h, N, d->team[p], 0);
        free(h);
    }
    void *dst = NULL;
    int loc;
    M->alloc(&ctx, N * 4, &dst, &loc);
    CHECK(W->peer_read(&ctx, x->w, d, next, 0, dst, N * 4) == 0, "peer_read: %s", ctx.err);
    int32_t *h = fetch(dst, N);
    expect_values("peer_read kernel", h, N, d->team[next], 0);
    free(h);
    CHECK(W->peer_read(&ctx, x->w, d, next, 12, dst, (N - 5) * 4 + 2) == 0, "peer_read: %s",
          ctx.err);
    h = fetch(dst, N - 5);
    expect_values("peer_read kernel, odd offset and length", h, N - 5, d->team[next], 3);
    free(h);
    M->release(&ctx, dst, loc);
    CHECK(C->barrier(&ctx, c) == 0, "barrier: %s", ctx.err);
}

/* Each rank writes the second half of the next rank's slice. */
static void test_peer_writes(const char *kind, gcsh_comm_impl *c, win *x)
{
    gcsh_window_desc *d = &x->d;
    int me = d->team_rank, n = d->team_size, next = (me + 1) % n, prev = (me + n - 1) % n;
    size_t half = N / 2;
    gcsh_scalar v = {1, 5000 + d->team[me], 0};
    CHECK(M->fill(&ctx, (int32_t *)d->peer[next] + half, d->loc, GCSH_I32, N - half, v) == 0,
          "fill through a peer pointer: %s", ctx.err);
    CHECK(C->barrier(&ctx, c) == 0, "barrier: %s", ctx.err);
    int32_t *h = fetch(d->peer[me], N);
    size_t bad = N;
    for (size_t i = 0; i < N && bad == N; i++)
        if (h[i] != (i < half ? value(d->team[me], i) : 5000 + d->team[prev]))
            bad = i;
    CHECK(bad == N, "[%d] %s: writes through the previous rank's pointer: element %zu is %d",
          ctx.rank, kind, bad, bad < N ? h[bad] : 0);
    free(h);
    CHECK(C->barrier(&ctx, c) == 0, "barrier: %s", ctx.err);
}

/* Data then signal, on the writer's stream; wait then read, on the
 * reader's stream: no barrier anywhere between, for several rounds. */
static void test_signal_ordering(const char *kind, gcsh_comm_impl *c, win *data, win *sig)
{
    gcsh_window_desc *d = &data->d, *s = &sig->d;
    int me = d->team_rank, n = d->team_size, next = (me + 1) % n, prev = (me + n - 1) % n;
    int ok = 1;
    for (int round = 1; round <= 5; round++) {
        gcsh_scalar v = {1, round * 100 + d->team[me], 0};
        ok &= M->fill(&ctx, d->peer[next], d->loc, GCSH_I32, N, v) == 0;
        ok &= W->signal_add(&ctx, sig->w, s, next, 0, 1) == 0;
        ok &= W->signal_wait(&ctx, sig->w, s, 0, (uint64_t)round, GCSH_CMP_GE) == 0;
        int32_t *h = fetch(d->peer[me], N);
        size_t bad = N;
        for (size_t i = 0; i < N && bad == N; i++)
            if (h[i] != round * 100 + d->team[prev])
                bad = i;
        CHECK(bad == N, "[%d] %s round %d: after the wait element %zu is %d, want %d", ctx.rank,
              kind, round, bad, bad < N ? h[bad] : 0, round * 100 + d->team[prev]);
        free(h);
        /* the next round's fill must not overwrite data the reader has not
         * checked yet: a second signal says "read" */
        ok &= W->signal_add(&ctx, sig->w, s, prev, 1, 1) == 0;
        ok &= W->signal_wait(&ctx, sig->w, s, 1, (uint64_t)round, GCSH_CMP_GE) == 0;
    }
    CHECK(ok, "[%d] %s signal ops: %s", ctx.rank, kind, ctx.err);
    uint64_t v = 0;
    CHECK(W->signal_read(&ctx, sig->w, s, 0, &v) == 0 && v == 5, "[%d] read slot 0: %llu",
          ctx.rank, (unsigned long long)v);
    CHECK(C->barrier(&ctx, c) == 0, "barrier: %s", ctx.err);
}

static double now(void)
{
    return MPI_Wtime();
}

static void test_signal_cpu_and_bounds(const char *kind, gcsh_comm_impl *c, win *sig)
{
    gcsh_window_desc *s = &sig->d;
    cuda_state *st = ctx.be_state;
    int me = s->team_rank, n = s->team_size, next = (me + 1) % n;
    CHECK(W->signal_set(&ctx, sig->w, s, next, 2, 77) == 0, "set: %s", ctx.err);
    CHECK(W->signal_wait_cpu(&ctx, sig->w, s, 2, 77, GCSH_CMP_EQ, 20.0) == 0,
          "[%d] %s wait_cpu: %s", ctx.rank, kind, ctx.err);
    double t0 = now();
    int rc = W->signal_wait_cpu(&ctx, sig->w, s, 3, 1, GCSH_CMP_GE, 0.05);
    CHECK(rc == 1 && now() - t0 < 2.0, "[%d] wait_cpu timeout: rc %d after %.3f s", ctx.rank,
          rc, now() - t0);
    CHECK(W->signal_set(&ctx, sig->w, s, me, 4, 42) == 0, "set self: %s", ctx.err);
    uint64_t v = 0;
    CHECK(W->signal_read(&ctx, sig->w, s, 4, &v) == 0 && v == 42, "read after set: %llu",
          (unsigned long long)v);

    /* never satisfied: the bound ends it and the next stream wait says so */
    uint64_t bound = st->wait_bound_ns;
    st->wait_bound_ns = 200 * 1000 * 1000ull;
    t0 = now();
    CHECK(W->signal_wait(&ctx, sig->w, s, 5, 1, GCSH_CMP_GE) == 0, "wait: %s", ctx.err);
    rc = M->sync(&ctx);
    CHECK(rc == -1 && strstr(ctx.err, "gave up") && now() - t0 < 10,
          "[%d] bounded wait: rc %d after %.2f s: %s", ctx.rank, rc, now() - t0, ctx.err);
    st->wait_bound_ns = bound;
    /* never satisfied, long bound: a cancel releases it, silently */
    t0 = now();
    CHECK(W->signal_wait(&ctx, sig->w, s, 5, 1, GCSH_CMP_GE) == 0, "wait: %s", ctx.err);
    cuda_cancel_waits(st);
    rc = M->sync(&ctx);
    CHECK(rc == 0 && now() - t0 < 10, "[%d] cancelled wait: rc %d after %.2f s: %s", ctx.rank,
          rc, now() - t0, ctx.err);
    CHECK(C->barrier(&ctx, c) == 0, "barrier: %s", ctx.err);
}

/* Rank 0 asks for an impossible slice: every rank fails at the same step
 * with rank 0's reason, and a window made right after works. */
static void test_failure(const char *kind, gcsh_comm_impl *c)
{
    gcsh_window_desc d;
    gcsh_window_impl *w = NULL;
    size_t gran = 0;
    W->granularity(&ctx, kind, &gran);
    memset(&d, 0, sizeof d);
    d.granularity = gran;
    d.bytes = d.alloc_bytes = gran;
    if (ctx.rank == 0) /* vmm: not a multiple of the granularity; nccl: too large */
        d.bytes = d.alloc_bytes = strcmp(kind, "vmm") == 0 ? gran + 1 : (size_t)1 << 50;
    int rc = gcsh_window_create(&ctx, c, kind, &d, &w);
    CHECK(rc == -1 && strstr(ctx.err, "failed on rank 0") && !d.team && !d.peer,
          "[%d] %s failure on rank 0: rc %d: %s", ctx.rank, kind, rc, ctx.err);
    if (ctx.rank == 1)
        printf("%s, rank 1 sees: %s\n", kind, ctx.err);
    win x;
    CHECK(win_create(c, kind, 4096, &x) == 0, "[%d] %s after a failure: %s", ctx.rank, kind,
          ctx.err);
    if (x.w)
        win_free(c, &x);
}

/* The staged registration, stopped after each stage: the undo on every
 * rank leaves nothing (a window made right after works), and a failure of
 * stage k on rank 1 alone (gcsh.debug.inject's "stage:NAME") fails every
 * rank with rank 1's reason and nothing registered. */
static void test_stages(const char *kind, gcsh_comm_impl *c)
{
    const gcsh_window_plan *plan = W->create_plan(kind);
    size_t gran = 0;
    W->granularity(&ctx, kind, &gran);
    char *reports = calloc((size_t)ctx.size, GCSH_STAGE_REPORT_LEN);
    for (int k = 0; k <= plan->n; k++) {
        gcsh_window_desc d;
        memset(&d, 0, sizeof d);
        d.bytes = 4096;
        d.granularity = gran;
        d.alloc_bytes = gran;
        gcsh_winbuild b;
        int rc = gcsh_winbuild_begin(&ctx, &b, c, kind, &d);
        CHECK(rc == 0, "[%d] %s begin: %s", ctx.rank, kind, ctx.err);
        for (int i = 0; rc == 0 && i < k && i < plan->n; i++) {
            rc = gcsh_winbuild_stage(&ctx, &b, &d, reports);
            CHECK(rc == 0 && reports[0] && reports[GCSH_STAGE_REPORT_LEN],
                  "[%d] %s stage %s: %s", ctx.rank, kind, plan->name[i], ctx.err);
        }
        if (rc != 0)
            break;
        if (k < plan->n) { /* stopped part-way: undone on every rank together */
            gcsh_winbuild_abort(&ctx, &b, &d);
            CHECK(!b.w && !d.team && !d.peer && !d.peer_table_dev,
                  "[%d] %s undone after %d stages", ctx.rank, kind, k);
        } else if (rc == 0) {
            win x = {gcsh_winbuild_take(&b), d};
            win_free(c, &x);
        }
        if (ctx.rank == 0 && k == plan->n && rc == 0)
            printf("%s, rank 0's report of stage %s:\n%s\n", kind, plan->name[k - 1],
                   reports);
    }
    for (int k = 0; k < plan->n; k++) {
        if (ctx.rank == 1)
            CHECK(gcsh_winbuild_inject(&ctx, plan->name[k], 0) == 0, "inject: %s", ctx.err);
        gcsh_window_desc d;
        memset(&d, 0, sizeof d);
        d.bytes = 4096;
        d.granularity = gran;
        d.alloc_bytes = gran;
        gcsh_window_impl *w = NULL;
        int rc = gcsh_window_create(&ctx, c, kind, &d, &w);
        char want[64];
        snprintf(want, sizeof want, "stage '%s' failed on rank 1", plan->name[k]);
        CHECK(rc == -1 && strstr(ctx.err, want) && strstr(ctx.err, "injected") && !d.team &&
                  !d.peer,
              "[%d] %s injected failure in %s: rc %d: %s", ctx.rank, kind, plan->name[k], rc,
              ctx.err);
        win x;
        CHECK(win_create(c, kind, 4096, &x) == 0, "[%d] %s after a failed %s: %s", ctx.rank,
              kind, plan->name[k], ctx.err);
        if (x.w)
            win_free(c, &x);
    }
    free(reports);
}

/* Even and odd ranks: each half has its own window and team. */
static void test_split(const char *kind, gcsh_comm_impl *world)
{
    gcsh_comm_impl *sub = NULL;
    CHECK(C->split(&ctx, world, ctx.rank % 2, ctx.rank, &sub) == 0 && sub, "split: %s", ctx.err);
    if (!sub)
        return;
    win x;
    if (win_create(sub, kind, N * 4, &x) != 0) {
        CHECK(0, "[%d] %s on a split comm: %s", ctx.rank, kind, ctx.err);
    } else {
        check_team(kind, sub, &x);
        test_visibility(kind, sub, &x);
        win_free(sub, &x);
    }
    C->release(&ctx, sub);
}

static void test_kind(const char *kind, gcsh_comm_impl *c)
{
    win data, sig;
    int rc = win_create(c, kind, N * 4, &data);
    CHECK(rc == 0, "[%d] %s create: %s", ctx.rank, kind, ctx.err);
    if (rc != 0)
        return;
    rc = win_create(c, kind, 64 * 8, &sig);
    CHECK(rc == 0, "[%d] %s signals create: %s", ctx.rank, kind, ctx.err);
    check_team(kind, c, &data);
    test_visibility(kind, c, &data);
    test_peer_writes(kind, c, &data);
    if (rc == 0) {
        test_signal_ordering(kind, c, &data, &sig);
        test_signal_cpu_and_bounds(kind, c, &sig);
        win_free(c, &sig);
    }
    win_free(c, &data);
    test_failure(kind, c);
    test_stages(kind, c);
    if (ctx.size >= 4)
        test_split(kind, c);
}

/* ---- figures -------------------------------------------------------------- */

static double time_copy(int how, void *dst, const gcsh_window_desc *d, win *x, int peer_dev,
                        const void *peer_src, size_t bytes)
{
    cuda_state *st = ctx.be_state;
    double best = 1e9;
    for (int it = 0; it < 6; it++) { /* the first is a warm-up */
        void *tok = NULL;
        double s = 0;
        cudaError_t e = cudaSuccess;
        M->timer_begin(&ctx, &tok);
        if (how == 0)
            e = cudaMemcpyAsync(dst, d->peer[1], bytes, cudaMemcpyDefault, st->stream);
        else if (how == 1) /* the baseline: this process's own buffer on rank 1's GPU */
            e = cudaMemcpyPeerAsync(dst, st->dev, peer_src, peer_dev, bytes, st->stream);
        else if (W->peer_read(&ctx, x->w, d, 1, 0, dst, bytes) != 0)
            e = cudaErrorUnknown;
        CHECK(M->timer_end(&ctx, tok, &s) == 0, "timer: %s", ctx.err);
        if (e != cudaSuccess) {
            CHECK(0, "bench copy %d: %s", how, cudaGetErrorString(e));
            return 1e9;
        }
        if (it && s < best)
            best = s;
    }
    return best;
}

static void bench_kind(const char *kind, gcsh_comm_impl *c)
{
    size_t bytes = (size_t)1 << 30;
    cuda_state *st = ctx.be_state;
    int devs[2] = {st->dev, 0}, *all = calloc((size_t)ctx.size * 2, sizeof *all);
    C->agree(&ctx, c, devs, all, sizeof devs);
    win x;
    C->barrier(&ctx, c);
    double t0 = now();
    int rc = win_create(c, kind, bytes, &x);
    double reg = now() - t0, reg_max = 0;
    MPI_Allreduce(&reg, &reg_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    CHECK(rc == 0, "[%d] bench %s 1 GiB: %s", ctx.rank, kind, ctx.err);
    if (rc != 0) {
        free(all);
        return;
    }
    if (ctx.rank == 0) {
        void *dst = NULL;
        int loc;
        M->alloc(&ctx, bytes, &dst, &loc);
        /* the baseline the issue names: 1 GiB of rank 0's own on rank 1's GPU */
        void *src = peer_device_alloc(all[2], bytes);
        double uva = time_copy(0, dst, &x.d, &x, all[2], src, bytes);
        double peer = src ? time_copy(1, dst, &x.d, &x, all[2], src, bytes) : 1e9;
        double kern = time_copy(2, dst, &x.d, &x, all[2], src, bytes);
        peer_device_free(all[2], src);
        printf("bench %s np=%d: register 1 GiB %.1f ms (slowest rank); rank 0 <- rank 1, 1 GiB "
               "(best of 5): cudaMemcpyAsync UVA (w:peer copy path) %.1f GB/s, "
               "cudaMemcpyPeerAsync baseline %.1f GB/s (UVA/baseline %.0f%%), peer-read kernel %.1f GB/s\n",
               kind, ctx.size, reg_max * 1e3, bytes / uva / 1e9, bytes / peer / 1e9,
               100 * peer / uva, bytes / kern / 1e9);
        M->release(&ctx, dst, loc);
    }
    t0 = now();
    win_free(c, &x);
    double fr = now() - t0;
    if (ctx.rank == 0)
        printf("bench %s np=%d: free 1 GiB %.1f ms (rank 0)\n", kind, ctx.size, fr * 1e3);
    free(all);
}

int main(int argc, char **argv)
{
    int bench = argc > 1 && strcmp(argv[1], "--bench") == 0;
    if (!cuda_test_start(&argc, &argv, "test_cuda_window", 2))
        return 0;
    gcsh_comm_impl *w = NULL;
    CHECK(W && W->peer_read && C->agree, "the cuda backend has windows, peer_read and agree");
    CHECK(C->world(&ctx, &w) == 0 && w, "world: %s", ctx.err);
    if (w && W) {
        test_agree(w);
        for_each_kind(w, test_kind, bench ? bench_kind : NULL);
        C->release(&ctx, w);
    }
    return cuda_test_end();
}
#endif
