/* The cuda backend driven directly through its gcsh_backend table, under
 * mpirun on a GPU machine: initialisers against the host formulas (bit for
 * bit), copies, every collective x op x dtype against a host reference, split,
 * send/recv, barrier, timers.  Without a GPU (or a cuda build) it skips, so
 * `make unit` stays green on CPU-only CI.
 *
 *   mpirun -np 2 build/tests/test_cuda_backend */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "rank/rank.h"
#include "unit.h"

#ifndef GCSH_HAVE_CUDA
int main(void)
{
    printf("test_cuda_backend: skipped (built without CUDA)\n0 passed, 0 failed, 1 skipped\n");
    return 0;
}
#else

#include <lauxlib.h>

#include "cuda_test.h"
#include "elem.h"

enum { N = 1000 };

static const char *dt_name[GCSH_NDTYPES] = {"f64", "f32", "f16",  "bf16", "i64",
                                            "i32", "u32", "u8", "i8"};
static const char *op_name[GCSH_NOPS] = {"sum", "prod", "min", "max", "avg"};

static uint64_t mask_of(size_t esize)
{
    return esize == 8 ? ~0ull : (1ull << (8 * esize)) - 1;
}

static uint64_t load_bits(const void *p, size_t esize, size_t i)
{
    uint64_t v = 0;
    memcpy(&v, (const char *)p + i * esize, esize);
    return v;
}

/* Bits of a reference value: integers through int64, floats through double. */
static uint64_t ref_bits(gcsh_dtype dt, double v)
{
    uint64_t bits = 0;
    if (dt <= GCSH_BF16)
        gcsh_elem_store_f(&bits, dt, 0, v);
    else
        gcsh_elem_store_i(&bits, dt, 0, (int64_t)v);
    return bits & mask_of(gcsh_dtype_size(dt));
}

/* Compares n device elements with want[] (bits); reports the first mismatch. */
static void expect(const char *what, gcsh_dtype dt, const void *dev, const uint64_t *want,
                   size_t n)
{
    size_t es = gcsh_dtype_size(dt);
    char *h = malloc(n * es + 1);
    int rc = M->copy(&ctx, h, GCSH_LOC_HOST, dev, 0, n * es);
    CHECK(rc == 0, "[%d] %s %s: copy back: %s", ctx.rank, what, dt_name[dt], ctx.err);
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++)
        if (load_bits(h, es, i) != (want[i] & mask_of(es)))
            bad = i;
    CHECK(bad == n, "[%d] %s %s: element %zu is %#llx, want %#llx", ctx.rank, what,
          dt_name[dt], bad, bad < n ? (unsigned long long)load_bits(h, es, bad) : 0ull,
          bad < n ? (unsigned long long)(want[bad] & mask_of(es)) : 0ull);
    free(h);
}

static void *dalloc(size_t bytes)
{
    void *p = NULL;
    int loc = -2;
    int rc = M->alloc(&ctx, bytes, &p, &loc);
    CHECK(rc == 0 && p && loc >= 0, "[%d] alloc %zu: %s", ctx.rank, bytes, ctx.err);
    return p;
}

/* The host's element code (elem.h, the host backend's) writes the
 * reference into a host buffer; the device result must match it bit for bit. */
enum { FILL, ARANGE, RAND };

static void check_init(int kind, const char *what, gcsh_dtype dt, void *dev, gcsh_scalar a,
                       gcsh_scalar b, uint64_t seed)
{
    size_t es = gcsh_dtype_size(dt);
    char *h = calloc(N, es);
    uint64_t *want = malloc(N * sizeof *want);
    int rc = kind == FILL     ? M->fill(&ctx, dev, 0, dt, N, a)
             : kind == ARANGE ? M->arange(&ctx, dev, 0, dt, N, a, b)
                              : M->rand(&ctx, dev, 0, dt, N, seed);
    CHECK(rc == 0, "%s %s: %s", what, dt_name[dt], ctx.err);
    for (size_t i = 0; i < N; i++) {
        if (kind == FILL)
            gcsh_elem_store_scalar(h, dt, i, a);
        else if (kind == ARANGE)
            gcsh_elem_arange(h, dt, i, a, b);
        else
            gcsh_elem_rand(h, dt, i, seed);
        want[i] = load_bits(h, es, i);
    }
    expect(what, dt, dev, want, N);
    free(want);
    free(h);
}

static void test_init_kernels(void)
{
    for (int d = 0; d < GCSH_NDTYPES; d++) {
        gcsh_dtype dt = d;
        int fl = dt <= GCSH_BF16;
        void *p = dalloc(N * gcsh_dtype_size(dt));
        gcsh_scalar v = {1, -3, 0}, a = {1, 5, 0}, s = {1, -2, 0};
        gcsh_scalar vf = {0, 0, 0.1}, af = {0, 0, -1.5}, sf = {0, 0, 0.1};
        check_init(FILL, "fill", dt, p, fl ? vf : v, v, 0);
        check_init(ARANGE, "arange int", dt, p, a, s, 0);
        if (fl) /* 0.1 steps: catches an fma-contracted GPU arange */
            check_init(ARANGE, "arange float", dt, p, af, sf, 0);
        check_init(RAND, "rand", dt, p, v, v, 1234);
        check_init(RAND, "rand seed 0", dt, p, v, v, 0);
        M->release(&ctx, p, 0);
    }
}

/* Rank r's input element i for op: small integers, exact in every dtype. */
static double input(gcsh_redop op, int r, size_t i)
{
    return op == GCSH_OP_PROD ? 1 + (double)((i + (size_t)r) % 2) : (double)(i % 5) + r + 1;
}

static double reduce_ref(gcsh_dtype dt, gcsh_redop op, int size, size_t i)
{
    double acc = input(op, 0, i);
    for (int r = 1; r < size; r++) {
        double x = input(op, r, i);
        switch (op) {
        case GCSH_OP_PROD: acc *= x; break;
        case GCSH_OP_MIN: acc = x < acc ? x : acc; break;
        case GCSH_OP_MAX: acc = x > acc ? x : acc; break;
        default: acc += x; break;
        }
    }
    if (op == GCSH_OP_AVG)
        acc = dt <= GCSH_BF16 ? acc / size : (double)((int64_t)acc / size);
    return acc;
}

/* Fills a device buffer with input(op, r, i) for i < n. */
static void put_input(void *dev, gcsh_dtype dt, gcsh_redop op, int r, size_t n)
{
    size_t es = gcsh_dtype_size(dt);
    char *h = malloc(n * es);
    for (size_t i = 0; i < n; i++)
    {
        uint64_t b = ref_bits(dt, input(op, r, i));
        memcpy(h + i * es, &b, es); /* little-endian: the low bytes are the element */
    }
    CHECK(M->copy(&ctx, dev, 0, h, GCSH_LOC_HOST, n * es) == 0, "copy in: %s", ctx.err);
    free(h);
}

/* scan: rank r gets the reduction over ranks 0..r, out of place and in place */
static void test_scan(gcsh_comm_impl *w, gcsh_dtype dt, gcsh_redop op, void *in, void *out,
                      uint64_t *want)
{
    int me = C->rank(w);
    char what[64];
    for (size_t i = 0; i < N; i++)
        want[i] = ref_bits(dt, reduce_ref(dt, op, me + 1, i));
    put_input(in, dt, op, me, N);
    snprintf(what, sizeof what, "scan %s", op_name[op]);
    CHECK(C->scan(&ctx, w, in, out, N, dt, op) == 0, "%s: %s", what, ctx.err);
    expect(what, dt, out, want, N);
    snprintf(what, sizeof what, "scan in place %s", op_name[op]);
    CHECK(C->scan(&ctx, w, in, in, N, dt, op) == 0, "%s: %s", what, ctx.err);
    expect(what, dt, in, want, N);
}

static void test_reductions(gcsh_comm_impl *w)
{
    int size = C->size(w), me = C->rank(w);
    uint64_t *want = malloc(N * (size_t)size * sizeof *want);
    for (int d = 0; d < GCSH_NDTYPES; d++) {
        gcsh_dtype dt = d;
        size_t es = gcsh_dtype_size(dt);
        void *in = dalloc(N * es * size), *out = dalloc(N * es * size);
        for (int o = 0; o < GCSH_NOPS; o++) {
            gcsh_redop op = o;
            char what[64];
            CHECK(C->can_reduce(dt, op), "can_reduce %s %s", dt_name[dt], op_name[op]);
            for (size_t i = 0; i < N; i++)
                want[i] = ref_bits(dt, reduce_ref(dt, op, size, i));
            /* allreduce, out of place and in place */
            put_input(in, dt, op, me, N);
            snprintf(what, sizeof what, "allreduce %s", op_name[op]);
            CHECK(C->allreduce(&ctx, w, in, out, N, dt, op) == 0, "%s: %s", what, ctx.err);
            expect(what, dt, out, want, N);
            snprintf(what, sizeof what, "allreduce in place %s", op_name[op]);
            CHECK(C->allreduce(&ctx, w, in, in, N, dt, op) == 0, "%s: %s", what, ctx.err);
            expect(what, dt, in, want, N);
            /* reduce to the last rank */
            put_input(in, dt, op, me, N);
            snprintf(what, sizeof what, "reduce %s", op_name[op]);
            CHECK(C->reduce(&ctx, w, in, out, N, dt, op, size - 1) == 0, "%s: %s", what,
                  ctx.err);
            if (me == size - 1)
                expect(what, dt, out, want, N);
            /* reducescatter: N per rank out, N * size in; element j of the input
             * is input(op, r, j), so my block starts at me * N */
            put_input(in, dt, op, me, N * size);
            snprintf(what, sizeof what, "reducescatter %s", op_name[op]);
            CHECK(C->reducescatter(&ctx, w, in, out, N, dt, op) == 0, "%s: %s", what, ctx.err);
            for (size_t i = 0; i < N; i++)
                want[i] = ref_bits(dt, reduce_ref(dt, op, size, me * N + i));
            expect(what, dt, out, want, N);
            if (op != GCSH_OP_AVG)
                test_scan(w, dt, op, in, out, want);
        }
        M->release(&ctx, in, 0);
        M->release(&ctx, out, 0);
    }
    free(want);
}

/* Data movement: broadcast, allgather, alltoall (also in place), send/recv. */
static void test_movement(gcsh_comm_impl *w)
{
    int size = C->size(w), me = C->rank(w);
    gcsh_dtype dt = GCSH_I32;
    size_t es = 4, tot = N * (size_t)size;
    void *in = dalloc(tot * es), *out = dalloc(tot * es);
    uint64_t *want = malloc(tot * sizeof *want);
    gcsh_scalar start = {1, me * 100000, 0}, one = {1, 1, 0};

    M->arange(&ctx, in, 0, dt, N, start, one);
    CHECK(C->broadcast(&ctx, w, in, N, dt, size - 1) == 0, "broadcast: %s", ctx.err);
    for (size_t i = 0; i < N; i++)
        want[i] = (uint64_t)((size - 1) * 100000 + (int64_t)i);
    expect("broadcast", dt, in, want, N);

    M->arange(&ctx, in, 0, dt, N, start, one);
    CHECK(C->allgather(&ctx, w, in, out, N, dt) == 0, "allgather: %s", ctx.err);
    for (size_t i = 0; i < tot; i++)
        want[i] = (uint64_t)((int64_t)(i / N) * 100000 + (int64_t)(i % N));
    expect("allgather", dt, out, want, tot);

    /* alltoall: my block p carries me*100000 + p*N + i; I receive block me of everyone */
    gcsh_scalar a2a = {1, me * 100000, 0};
    for (int pass = 0; pass < 2; pass++) {
        M->arange(&ctx, in, 0, dt, tot, a2a, one);
        void *dst = pass ? in : out;
        CHECK(C->alltoall(&ctx, w, in, dst, N, dt) == 0, "alltoall: %s", ctx.err);
        for (size_t i = 0; i < tot; i++)
            want[i] = (uint64_t)((int64_t)(i / N) * 100000 + me * N + (int64_t)(i % N));
        expect(pass ? "alltoall in place" : "alltoall", dt, dst, want, tot);
    }

    /* a ring: send to the right, receive from the left; even ranks send
     * first.  Not at 1 rank: a send to oneself never completes outside a
     * group, and the binding refuses it (tests/lua/comm_p2p.lua). */
    int right = (me + 1) % size, left = (me + size - 1) % size;
    M->arange(&ctx, in, 0, dt, N, start, one);
    int rc = 0;
    if (size > 1 && me % 2 == 0) {
        rc |= C->send(&ctx, w, in, N, dt, right);
        rc |= C->recv(&ctx, w, out, N, dt, left);
    } else if (size > 1) {
        rc |= C->recv(&ctx, w, out, N, dt, left);
        rc |= C->send(&ctx, w, in, N, dt, right);
    }
    if (size > 1) {
        CHECK(rc == 0, "send/recv: %s", ctx.err);
        for (size_t i = 0; i < N; i++)
            want[i] = (uint64_t)(left * 100000 + (int64_t)i);
        expect("send/recv", dt, out, want, N);
    }

    CHECK(C->barrier(&ctx, w) == 0, "barrier: %s", ctx.err);
    M->release(&ctx, in, 0);
    M->release(&ctx, out, 0);
    free(want);
}

/* Even and odd world ranks in two communicators; a sum over each. */
static void test_split(gcsh_comm_impl *w)
{
    int me = C->rank(w), size = C->size(w);
    gcsh_comm_impl *sub = NULL;
    CHECK(C->split(&ctx, w, me % 2, me, &sub) == 0 && sub, "split: %s", ctx.err);
    if (!sub)
        return;
    int members = (size - me % 2 + 1) / 2;
    CHECK(C->size(sub) == members && C->rank(sub) == me / 2, "split rank %d/%d", C->rank(sub),
          C->size(sub));
    void *p = dalloc(8);
    gcsh_scalar v = {1, me, 0};
    M->fill(&ctx, p, 0, GCSH_I64, 1, v);
    CHECK(C->allreduce(&ctx, sub, p, p, 1, GCSH_I64, GCSH_OP_SUM) == 0, "sub: %s", ctx.err);
    uint64_t want = 0;
    for (int r = me % 2; r < size; r += 2)
        want += (uint64_t)r;
    expect("split allreduce", GCSH_I64, p, &want, 1);
    M->release(&ctx, p, 0);
    C->release(&ctx, sub);
    /* a rank that opts out gets no communicator */
    CHECK(C->split(&ctx, w, me == 0 ? -1 : 0, 0, &sub) == 0, "split nocolor: %s", ctx.err);
    CHECK((me == 0) == (sub == NULL), "split nocolor: rank %d got %p", me, (void *)sub);
    if (sub)
        C->release(&ctx, sub);
}

/* A figure, not a check: allreduce bus bandwidth at 256 MiB (nccl-tests'
 * busbw = algbw * 2 (n - 1) / n), timed with the backend's timer. */
static void report_bandwidth(gcsh_comm_impl *w)
{
    size_t count = 64u << 20, bytes = count * 4;
    int iters = 10, n = C->size(w);
    void *p = dalloc(bytes), *tok = NULL;
    double s = 0;
    gcsh_scalar one = {1, 1, 0};
    M->fill(&ctx, p, 0, GCSH_F32, count, one);
    C->allreduce(&ctx, w, p, p, count, GCSH_F32, GCSH_OP_SUM); /* warm-up */
    M->timer_begin(&ctx, &tok);
    for (int i = 0; i < iters; i++)
        C->allreduce(&ctx, w, p, p, count, GCSH_F32, GCSH_OP_SUM);
    CHECK(M->timer_end(&ctx, tok, &s) == 0, "timer: %s", ctx.err);
    double algbw = bytes / (s / iters) / 1e9;
    if (ctx.rank == 0)
        printf("allreduce f32 256 MiB x %d ranks: %.0f us, algbw %.1f GB/s, busbw %.1f GB/s\n",
               n, s / iters * 1e6, algbw, algbw * 2 * (n - 1) / n);
    M->release(&ctx, p, 0);
}

static void test_timer_and_info(void)
{
    void *tok = NULL;
    double s = -1;
    void *p = dalloc(64 << 20);
    CHECK(M->timer_begin(&ctx, &tok) == 0, "timer_begin: %s", ctx.err);
    gcsh_scalar z = {1, 0, 0};
    M->fill(&ctx, p, 0, GCSH_U8, 64 << 20, z);
    CHECK(M->timer_end(&ctx, tok, &s) == 0 && s > 0 && s < 10, "timer: %g s: %s", s, ctx.err);
    if (ctx.rank == 0)
        printf("fill of 64 MiB: %.1f us (%.0f GB/s)\n", s * 1e6, (64 << 20) / s / 1e9);
    M->release(&ctx, p, 0);
    CHECK(M->sync(&ctx) == 0, "sync: %s", ctx.err);

    lua_State *L = luaL_newstate();
    ctx.be->info(&ctx, L);
    lua_getfield(L, -1, "nccl_version");
    lua_getfield(L, -2, "driver_version");
    lua_getfield(L, -3, "runtime_version");
    if (ctx.rank == 0)
        printf("device %s, nccl %s, driver %s, runtime %s\n", ctx.device, lua_tostring(L, -3),
               lua_tostring(L, -2), lua_tostring(L, -1));
    CHECK(lua_isstring(L, -3), "info has nccl_version");
    lua_close(L);
}

int main(int argc, char **argv)
{
    if (!cuda_test_start(&argc, &argv, "test_cuda_backend", 1))
        return 0;
    int count = 0;
    cudaGetDeviceCount(&count);
    CHECK(count > 0 && ctx.loc == ctx.share.node_rank % count,
          "ctx.loc %d (rank %d of this machine, %d GPUs)", ctx.loc, ctx.share.node_rank, count);
    test_init_kernels();
    gcsh_comm_impl *w = NULL;
    CHECK(C->world(&ctx, &w) == 0 && w, "world: %s", ctx.err);
    if (w) {
        CHECK(C->rank(w) == ctx.rank && C->size(w) == ctx.size, "world rank/size");
        test_reductions(w);
        test_movement(w);
        if (ctx.size > 1)
            test_split(w);
        report_bandwidth(w);
        C->release(&ctx, w);
    }
    test_timer_and_info();
    return cuda_test_end();
}
#endif
