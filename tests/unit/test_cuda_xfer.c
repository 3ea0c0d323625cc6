/* The cuda backend's one-sided transfers driven through its tables, under
 * mpirun on a GPU machine (one GPU per rank, one node): for kinds nccl and
 * vmm and engines ce and sm, rank 0 puts an odd-sized range into rank 1's
 * slice, gets it back, and checks both; a put with signal is seen by rank 1
 * with its data.
 * `--bench` adds figures (rank 0 and rank 1's slice, 1 GiB, best of 5):
 * put and get with each engine against cudaMemcpyPeerAsync between rank 0's
 * GPU and a buffer of rank 0's own on rank 1's GPU (a window mapping is not a
 * cudaMemcpyPeer operand), in the same run, with the ratio.
 * Without a GPU (or a cuda build) it skips.
 *
 *   mpirun -np 2 build/tests/test_cuda_xfer [--bench] */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "rank/rank.h"
#include "unit.h"

#ifndef GCSH_HAVE_CUDA
int main(void)
{
    printf("test_cuda_xfer: skipped (built without CUDA)\n0 passed, 0 failed, 1 skipped\n");
    return 0;
}
#else

#include "cuda_test.h"

/* Prepares, posts and waits one transfer of one segment. */
static int run_once(gcsh_xfer_engine engine, void *dst, const void *src, size_t bytes,
                    uint64_t *signal)
{
    gcsh_xfer_seg seg = {dst, src, bytes};
    gcsh_xfer_plan plan = {.engine = engine, .nseg = 1, .seg = &seg, .signal = signal,
                           .signal_value = 1, .signal_slot = -1};
    gcsh_xfer_impl *x = NULL;
    int rc = X->prepare(&ctx, &plan, &x);
    if (rc == 0)
        rc = X->post(&ctx, x);
    if (rc == 0)
        rc = X->wait_cpu(&ctx, x, 60) == 0 ? 0 : -1;
    if (x)
        X->release(&ctx, x);
    return rc;
}

static unsigned char *host_pattern(size_t bytes, int seed)
{
    unsigned char *h = malloc(bytes);
    for (size_t i = 0; i < bytes; i++)
        h[i] = (unsigned char)(i * 7 + (size_t)seed * 13 + (i >> 9));
    return h;
}

/* Rank 0 puts `bytes` at byte offset 3 of rank 1's slice with a signal to
 * rank 1's word 0; rank 1 waits for the word and checks the data; then rank 0
 * gets the range back and checks it. */
static void test_engine(const char *kind, gcsh_xfer_engine engine, gcsh_comm_impl *c, win *data,
                        win *sig)
{
    const size_t bytes = (1 << 20) + 5, off = 3;
    const char *ename = engine == GCSH_XFER_SM ? "sm" : "ce";
    unsigned char *want = host_pattern(bytes, (int)engine + 1);
    void *src = NULL, *back = NULL;
    int loc;
    CHECK(M->alloc(&ctx, bytes, &src, &loc) == 0 && M->alloc(&ctx, bytes, &back, &loc) == 0,
          "alloc: %s", ctx.err);
    if (ctx.rank == 0) {
        M->copy(&ctx, src, loc, want, GCSH_LOC_HOST, bytes);
        M->sync(&ctx);
        uint64_t *word = (uint64_t *)sig->d.peer[1];
        CHECK(run_once(engine, (char *)data->d.peer[1] + off, src, bytes, word) == 0,
              "%s %s put: %s", kind, ename, ctx.err);
    }
    if (ctx.rank == 1) {
        int rc = W->signal_wait_cpu(&ctx, sig->w, &sig->d, 0, 1, GCSH_CMP_GE, 60);
        CHECK(rc == 0, "%s %s: signal after the put (rc %d): %s", kind, ename, rc, ctx.err);
        unsigned char *got = malloc(bytes);
        M->copy(&ctx, back, loc, (char *)data->d.peer[1] + off, loc, bytes);
        M->copy(&ctx, got, GCSH_LOC_HOST, back, loc, bytes);
        CHECK(memcmp(got, want, bytes) == 0, "%s %s: rank 1 sees the put's data", kind, ename);
        free(got);
    }
    C->barrier(&ctx, c);
    if (ctx.rank == 0) {
        unsigned char *got = malloc(bytes);
        CHECK(run_once(engine, back, (char *)data->d.peer[1] + off, bytes, NULL) == 0,
              "%s %s get: %s", kind, ename, ctx.err);
        M->copy(&ctx, got, GCSH_LOC_HOST, back, loc, bytes);
        CHECK(memcmp(got, want, bytes) == 0, "%s %s: get brings the data back", kind, ename);
        free(got);
    }
    C->barrier(&ctx, c);
    if (ctx.rank == 1)
        W->signal_set(&ctx, sig->w, &sig->d, 1, 0, 0);
    M->sync(&ctx);
    C->barrier(&ctx, c);
    M->release(&ctx, src, loc);
    M->release(&ctx, back, loc);
    free(want);
}

static void test_kind(const char *kind, gcsh_comm_impl *c)
{
    win data, sig;
    int rc = win_create(c, kind, (2 << 20), &data);
    CHECK(rc == 0, "[%d] %s data window: %s", ctx.rank, kind, ctx.err);
    if (rc != 0)
        return;
    rc = win_create(c, kind, 64, &sig);
    CHECK(rc == 0, "[%d] %s signal window: %s", ctx.rank, kind, ctx.err);
    if (rc == 0) {
        test_engine(kind, GCSH_XFER_CE, c, &data, &sig);
        test_engine(kind, GCSH_XFER_SM, c, &data, &sig);
        win_free(c, &sig);
    }
    win_free(c, &data);
}

/* ---- figures -------------------------------------------------------------- */

/* Best of 5 (after a warm-up) of one prepared transfer, or of the baseline
 * copy when x is NULL. */
static double best_time(gcsh_xfer_impl *x, void *dst, int dst_dev, const void *src, int src_dev,
                        size_t bytes)
{
    cuda_state *st = ctx.be_state;
    double best = 1e9;
    for (int it = 0; it < 6; it++) {
        void *tok = NULL;
        double s = 0;
        int rc = 0;
        M->timer_begin(&ctx, &tok);
        if (x)
            rc = X->post(&ctx, x);
        else if (cudaMemcpyPeerAsync(dst, dst_dev, src, src_dev, bytes, st->stream) != cudaSuccess)
            rc = gcsh_set_error(&ctx, "cudaMemcpyPeerAsync failed");
        CHECK(M->timer_end(&ctx, tok, &s) == 0, "timer: %s", ctx.err);
        CHECK(rc == 0, "bench copy: %s", ctx.err);
        if (rc != 0)
            return 1e9;
        if (it && s < best)
            best = s;
    }
    return best;
}

static double time_xfer(gcsh_xfer_engine engine, void *dst, const void *src, size_t bytes)
{
    gcsh_xfer_seg seg = {dst, src, bytes};
    gcsh_xfer_plan plan = {.engine = engine, .nseg = 1, .seg = &seg, .signal_slot = -1};
    gcsh_xfer_impl *x = NULL;
    if (X->prepare(&ctx, &plan, &x) != 0) {
        CHECK(0, "prepare: %s", ctx.err);
        return 1e9;
    }
    double t = best_time(x, NULL, 0, NULL, 0, bytes);
    X->release(&ctx, x);
    return t;
}

static void bench_kind(const char *kind, gcsh_comm_impl *c)
{
    const size_t bytes = (size_t)1 << 30;
    cuda_state *st = ctx.be_state;
    int mine = st->dev, *devs = calloc((size_t)ctx.size, sizeof *devs);
    C->agree(&ctx, c, &mine, devs, sizeof mine);
    win x;
    int rc = win_create(c, kind, bytes, &x);
    CHECK(rc == 0, "[%d] bench %s 1 GiB: %s", ctx.rank, kind, ctx.err);
    if (rc != 0) {
        free(devs);
        return;
    }
    if (ctx.rank == 0) {
        void *local = NULL, *remote = peer_device_alloc(devs[1], bytes);
        int loc;
        M->alloc(&ctx, bytes, &local, &loc);
        M->fill(&ctx, local, loc, GCSH_U8, bytes, (gcsh_scalar){.is_int = 1, .i = 3});
        double put_base = remote ? best_time(NULL, remote, devs[1], local, st->dev, bytes) : 1e9;
        double get_base = remote ? best_time(NULL, local, st->dev, remote, devs[1], bytes) : 1e9;
        for (int e = 0; e < 2; e++) {
            gcsh_xfer_engine engine = e ? GCSH_XFER_SM : GCSH_XFER_CE;
            double put = time_xfer(engine, x.d.peer[1], local, bytes);
            double get = time_xfer(engine, local, x.d.peer[1], bytes);
            printf("bench xfer %s %s np=%d 1 GiB: put %.1f GB/s (%.0f%% of cudaMemcpyPeer %.1f GB/s), "
                   "get %.1f GB/s (%.0f%% of cudaMemcpyPeer %.1f GB/s)\n",
                   kind, e ? "sm" : "ce", ctx.size, bytes / put / 1e9, 100 * put_base / put,
                   bytes / put_base / 1e9, bytes / get / 1e9, 100 * get_base / get,
                   bytes / get_base / 1e9);
        }
        M->release(&ctx, local, loc);
        peer_device_free(devs[1], remote);
    }
    win_free(c, &x);
    free(devs);
}

int main(int argc, char **argv)
{
    int bench = argc > 1 && strcmp(argv[1], "--bench") == 0;
    if (!cuda_test_start(&argc, &argv, "test_cuda_xfer", 2))
        return 0;
    gcsh_comm_impl *w = NULL;
    CHECK(W && X, "the cuda backend has windows and transfers");
    CHECK(C->world(&ctx, &w) == 0 && w, "world: %s", ctx.err);
    if (w && W && X) {
        for_each_kind(w, test_kind, bench ? bench_kind : NULL);
        C->release(&ctx, w);
    }
    return cuda_test_end();
}
#endif
