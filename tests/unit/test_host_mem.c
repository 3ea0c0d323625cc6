/* The host backend's memory ops, called directly through the ops table. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/elementwise.h"
#include "core/gcsh.h"
#include "host/host.h"
#include "unit.h"

static const gcsh_mem_ops *mem = &gcsh_host_mem_ops;

static gcsh_scalar int_scalar(int64_t i)
{
    return (gcsh_scalar){.is_int = 1, .i = i};
}

static gcsh_scalar float_scalar(double f)
{
    return (gcsh_scalar){.is_int = 0, .f = f};
}

static void test_alloc(gcsh_ctx *ctx)
{
    void *p = NULL;
    int loc = 123;
    CHECK(mem->alloc(ctx, 1000, &p, &loc) == 0 && p, "alloc 1000");
    CHECK(loc == GCSH_LOC_HOST, "host location");
    CHECK(((uintptr_t)p & 63) == 0, "64-byte aligned");
    mem->release(ctx, p, loc);
    p = NULL;
    CHECK(mem->alloc(ctx, 0, &p, &loc) == 0 && p, "zero bytes still gives a live block");
    mem->release(ctx, p, loc);
    /* Far past any address space: must fail cleanly with the byte count. */
    size_t huge = (size_t)1 << 62;
    ctx->err[0] = 0;
    CHECK(mem->alloc(ctx, huge, &p, &loc) == -1, "huge alloc fails");
    CHECK(strstr(ctx->err, "4611686018427387904 bytes") != NULL, "error names bytes: %s", ctx->err);
}

static void test_fill(gcsh_ctx *ctx)
{
    unsigned char buf[8 * 37 + 8];
    for (int d = 0; d < GCSH_NDTYPES; d++) {
        gcsh_dtype dt = (gcsh_dtype)d;
        size_t size = gcsh_dtype_size(dt);
        memset(buf, 0xee, sizeof buf);
        CHECK(mem->fill(ctx, buf, GCSH_LOC_HOST, dt, 37, int_scalar(5)) == 0, "fill");
        int bad = 0;
        for (size_t i = 0; i < 37; i++)
            bad += gcsh_load_f(buf, dt, i) != 5.0;
        CHECK(bad == 0, "%s fill 5: %d wrong", gcsh_dtype_name(dt), bad);
        CHECK(buf[37 * size] == 0xee, "%s fill stops at n", gcsh_dtype_name(dt));
    }
    CHECK(mem->fill(ctx, buf, GCSH_LOC_HOST, GCSH_F32, 0, int_scalar(1)) == 0, "fill of 0");
    int64_t big[3];
    mem->fill(ctx, big, GCSH_LOC_HOST, GCSH_I64, 3, int_scalar((1LL << 62) + 1));
    CHECK(big[2] == (1LL << 62) + 1, "i64 fill exact beyond 2^53");
    uint16_t h[5];
    mem->fill(ctx, h, GCSH_LOC_HOST, GCSH_F16, 5, float_scalar(1.0 / 3.0));
    CHECK(h[4] == 0x3555, "f16 fill 1/3 bits");
}

static void test_arange(gcsh_ctx *ctx)
{
    double d[10];
    mem->arange(ctx, d, GCSH_LOC_HOST, GCSH_F64, 10, float_scalar(1.5), float_scalar(-0.25));
    CHECK(d[0] == 1.5 && d[9] == 1.5 + 9 * -0.25, "f64 arange");
    uint32_t u[4];
    mem->arange(ctx, u, GCSH_LOC_HOST, GCSH_U32, 4, int_scalar(4294967292LL), int_scalar(1));
    CHECK(u[3] == 4294967295u, "u32 arange to max");
    uint16_t bf[300];
    mem->arange(ctx, bf, GCSH_LOC_HOST, GCSH_BF16, 300, int_scalar(0), int_scalar(1));
    CHECK(gcsh_load_f(bf, GCSH_BF16, 256) == 256 && gcsh_load_f(bf, GCSH_BF16, 257) == 256,
          "bf16 arange: 257 rounds to even 256");
    CHECK(gcsh_load_f(bf, GCSH_BF16, 259) == 260, "bf16 arange: 259 rounds to even 260");
}

static void test_rand(gcsh_ctx *ctx)
{
    float a[1000], b[1000];
    mem->rand(ctx, a, GCSH_LOC_HOST, GCSH_F32, 1000, 42);
    mem->rand(ctx, b, GCSH_LOC_HOST, GCSH_F32, 1000, 42);
    CHECK(memcmp(a, b, sizeof a) == 0, "same seed, same values");
    int bad = 0;
    for (int i = 0; i < 1000; i++)
        bad += a[i] != gcsh_rng_f32(42, (uint64_t)i) || !(a[i] >= 0 && a[i] < 1);
    CHECK(bad == 0, "rand f32 = counter RNG, in [0,1): %d bad", bad);
    mem->rand(ctx, b + 10, GCSH_LOC_HOST, GCSH_F32, 10, 42);
    CHECK(memcmp(a, b + 10, 10 * sizeof(float)) == 0, "rand over a view restarts at index 0");
    mem->rand(ctx, b, GCSH_LOC_HOST, GCSH_F32, 1000, 43);
    CHECK(memcmp(a, b, sizeof a) != 0, "other seed, other values");
    int8_t k[1000];
    mem->rand(ctx, k, GCSH_LOC_HOST, GCSH_I8, 1000, 1);
    int lo = 100, hi = -1;
    for (int i = 0; i < 1000; i++) {
        lo = k[i] < lo ? k[i] : lo;
        hi = k[i] > hi ? k[i] : hi;
    }
    CHECK(lo >= 0 && lo < 3 && hi > 96 && hi <= 99, "rand i8 spans [0,100): %d..%d", lo, hi);
}

static void test_copy_sync_timer(gcsh_ctx *ctx)
{
    int32_t v[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    CHECK(mem->copy(ctx, v + 2, GCSH_LOC_HOST, v, GCSH_LOC_HOST, 4 * sizeof(int32_t)) == 0, "copy");
    CHECK(v[2] == 0 && v[5] == 3 && v[6] == 6, "overlapping copy behaves like memmove");
    CHECK(mem->sync(ctx) == 0, "sync");
    void *tok = NULL;
    double s = -1;
    CHECK(mem->timer_begin(ctx, &tok) == 0 && tok, "timer_begin");
    CHECK(mem->timer_end(ctx, tok, &s) == 0 && s >= 0 && s < 5, "timer_end gives %g s", s);
}

int main(void)
{
    gcsh_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.be = &gcsh_host_backend;
    test_alloc(&ctx);
    test_fill(&ctx);
    test_arange(&ctx);
    test_rand(&ctx);
    test_copy_sync_timer(&ctx);
    UNIT_END();
}
