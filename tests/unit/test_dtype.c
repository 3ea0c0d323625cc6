/* dtype tables, f16/bf16 conversions (exhaustive where 2^16 allows, against
 * independent references elsewhere), element loads/stores, counter RNG. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/dtype.h"
#include "core/elementwise.h"
#include "unit.h"

static uint32_t f32_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

static float bits_f32(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* ---- independent references ------------------------------------------ */

/* f16 value by the textbook formula, with ldexp. */
static double ref_f16_value(uint16_t h)
{
    int sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
    double v;
    if (exp == 31)
        v = man ? NAN : INFINITY;
    else if (exp == 0)
        v = ldexp(man, -24);
    else
        v = ldexp(1024 + man, exp - 25);
    return sign ? -v : v;
}

/* Nearest f16 by binary search over the positive finite encodings (which
 * are ordered like their values); ties go to the even encoding. */
static uint16_t ref_f16_nearest(double x)
{
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    double a = fabs(x);
    if (isnan(x))
        return 0x7e00;
    if (a >= 65520.0) /* 65504 + half an ulp (16): ties go to "even" inf */
        return sign | 0x7c00;
    int lo = 0, hi = 0x7bff; /* largest encoding with value <= a */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (ref_f16_value((uint16_t)mid) <= a)
            lo = mid;
        else
            hi = mid - 1;
    }
    if (lo == 0x7bff)
        return sign | 0x7bff;
    double below = ref_f16_value((uint16_t)lo), above = ref_f16_value((uint16_t)(lo + 1));
    uint16_t pick;
    if (a - below < above - a)
        pick = (uint16_t)lo;
    else if (a - below > above - a)
        pick = (uint16_t)(lo + 1);
    else
        pick = (lo & 1) ? (uint16_t)(lo + 1) : (uint16_t)lo;
    return sign | pick;
}

/* The well-known integer RNE for float -> bf16 (non-NaN inputs). */
static uint16_t ref_bf16_from_f32(float f)
{
    uint32_t b = f32_bits(f);
    return (uint16_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

/* ---- tests -------------------------------------------------------------- */

static void test_tables(void)
{
    const char *names[] = {"f64", "f32", "f16", "bf16", "i64", "i32", "u32", "u8", "i8"};
    const size_t sizes[] = {8, 4, 2, 2, 8, 4, 4, 1, 1};
    for (int i = 0; i < GCSH_NDTYPES; i++) {
        CHECK(strcmp(gcsh_dtype_name((gcsh_dtype)i), names[i]) == 0, "name %d", i);
        CHECK(gcsh_dtype_from_name(names[i]) == i, "from_name %s", names[i]);
        CHECK(gcsh_dtype_size((gcsh_dtype)i) == sizes[i], "size %s", names[i]);
        CHECK(gcsh_dtype_is_float((gcsh_dtype)i) == (i <= GCSH_BF16), "is_float %s", names[i]);
        CHECK(strstr(gcsh_dtype_names(), names[i]) != NULL, "names lists %s", names[i]);
    }
    CHECK(gcsh_dtype_from_name("f33") == -1, "unknown dtype");
    CHECK(gcsh_dtype_from_name("") == -1, "empty dtype");
    CHECK(gcsh_dtype_from_name("F32") == -1, "dtype names are lower case");
    CHECK(strcmp(gcsh_dtype_names(), "f64 f32 f16 bf16 i64 i32 u32 u8 i8") == 0, "names");
    const char *ops[] = {"sum", "prod", "min", "max", "avg"};
    for (int i = 0; i < GCSH_NOPS; i++) {
        CHECK(strcmp(gcsh_redop_name((gcsh_redop)i), ops[i]) == 0, "op name %d", i);
        CHECK(gcsh_redop_from_name(ops[i]) == i, "op from_name %s", ops[i]);
    }
    CHECK(gcsh_redop_from_name("mean") == -1, "unknown op");
    CHECK(strcmp(gcsh_redop_names(), "sum prod min max avg") == 0, "op names");
}

static void test_f16_all_encodings(void)
{
    int bad_value = 0, bad_trip = 0, bad_nan = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = gcsh_f16_to_f32((uint16_t)h);
        double want = ref_f16_value((uint16_t)h);
        int is_nan = ((h >> 10) & 31) == 31 && (h & 1023);
        if (is_nan) {
            uint16_t back = gcsh_f32_to_f16(f);
            bad_nan += !(isnan(f) && (signbit(f) != 0) == (h >> 15) &&
                         (back & 0x7c00) == 0x7c00 && (back & 0x3ff) &&
                         (back & 0x8000) == (h & 0x8000));
            continue;
        }
        bad_value += !((double)f == want && (signbit(f) != 0) == (h >> 15));
        bad_trip += gcsh_f32_to_f16(f) != h;
    }
    CHECK(bad_value == 0, "f16 -> f32: %d encodings decode wrong", bad_value);
    CHECK(bad_trip == 0, "f16 -> f32 -> f16: %d encodings do not round-trip", bad_trip);
    CHECK(bad_nan == 0, "f16 NaN: %d encodings lose NaN-ness or sign", bad_nan);
}

/* Every midpoint between neighbouring f16 values is a tie; the values just
 * around it must go to the nearer side. */
static void test_f16_ties(void)
{
    int bad = 0, checked = 0;
    for (uint32_t h = 0; h < 0x7bff; h++) {
        double lo = ref_f16_value((uint16_t)h), hi = ref_f16_value((uint16_t)(h + 1));
        float mid = (float)((lo + hi) / 2); /* exact: 12 significant bits */
        uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
        bad += gcsh_f32_to_f16(mid) != even;
        bad += gcsh_f32_to_f16(nextafterf(mid, 0.0f)) != h;
        bad += gcsh_f32_to_f16(nextafterf(mid, INFINITY)) != h + 1;
        bad += gcsh_f32_to_f16(-mid) != (even | 0x8000);
        checked += 4;
    }
    CHECK(bad == 0, "f16 ties: %d of %d wrong", bad, checked);
}

/* f32 values across the whole f16 range (and beyond) against the reference. */
static void test_f16_sampled(void)
{
    int bad = 0, checked = 0;
    for (uint32_t b = 0; b < 0x47ffffffu; b += 4099) { /* up to 131071.99 */
        float f = bits_f32(b);
        uint16_t got = gcsh_f32_to_f16(f), want = ref_f16_nearest(f);
        if (got != want && bad < 5)
            printf("  f16(%a) = %04x, want %04x\n", (double)f, got, want);
        bad += got != want;
        checked++;
    }
    CHECK(bad == 0, "f16 sampled: %d of %d wrong", bad, checked);
}

static void test_f16_cases(void)
{
    struct { double x; uint16_t want; const char *what; } c[] = {
        {1.0 / 3.0, 0x3555, "1/3"},
        {1.0, 0x3c00, "1"},
        {-2.0, 0xc000, "-2"},
        {65504.0, 0x7bff, "max"},
        {65519.99, 0x7bff, "just below the overflow threshold"},
        {65520.0, 0x7c00, "overflow threshold (tie) -> inf"},
        {1e6, 0x7c00, "overflow -> inf"},
        {-1e6, 0xfc00, "negative overflow -> -inf"},
        {INFINITY, 0x7c00, "inf"},
        {-INFINITY, 0xfc00, "-inf"},
        {0.0, 0x0000, "0"},
        {-0.0, 0x8000, "-0"},
        {0x1p-14, 0x0400, "smallest normal"},
        {0x1p-24, 0x0001, "smallest subnormal"},
        {0x1p-25, 0x0000, "half the smallest subnormal: tie to even 0"},
        {0x1.0001p-25, 0x0001, "just above half the smallest subnormal"},
        {3 * 0x1p-25, 0x0002, "1.5 subnormal ulps: tie to even 2"},
        {1023.5 * 0x1p-24, 0x0400, "largest subnormal + half: rounds up into normal"},
        {1e-8, 0x0000, "1e-8 is below half the smallest subnormal"},
        {1e-7, 0x0002, "1e-7 -> 2 subnormal ulps"},
        {-1e-7, 0x8002, "-1e-7"},
        {1e-300, 0x0000, "tiny double"},
        {-1e-300, 0x8000, "tiny negative double keeps its sign"},
        {2049.0, 0x6800, "2049: tie between 2048 and 2050 -> 2048 (even)"},
        {2051.0, 0x6802, "2051: tie -> 2052 (even)"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        uint16_t got = gcsh_f64_to_f16_bits(c[i].x);
        CHECK(got == c[i].want, "f16(%s) = 0x%04x, want 0x%04x", c[i].what, got, c[i].want);
    }
    CHECK((gcsh_f64_to_f16_bits(NAN) & 0x7c00) == 0x7c00 && (gcsh_f64_to_f16_bits(NAN) & 0x3ff),
          "NaN stays NaN");
    CHECK(gcsh_f16_to_f32(0x3555) == 0.333251953125f, "f16 1/3 reads back as 0.333251953125");
    /* Rounding from double directly, not through float: x is just above the
     * tie 1 + 2^-11 by 2^-40, which a float would drop (and then tie-to-even
     * down to 1.0). */
    CHECK(gcsh_f64_to_f16_bits(1.0 + 0x1p-11 + 0x1p-40) == 0x3c01, "single rounding from double");
}

static void test_bf16_all_encodings(void)
{
    int bad = 0, bad_nan = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = gcsh_bf16_to_f32((uint16_t)h);
        int is_nan = ((h >> 7) & 255) == 255 && (h & 127);
        if (is_nan) {
            uint16_t back = gcsh_f32_to_bf16(f);
            bad_nan += !(isnan(f) && (back & 0x7f80) == 0x7f80 && (back & 0x7f) &&
                         (back & 0x8000) == (h & 0x8000));
            continue;
        }
        bad += f32_bits(f) != h << 16; /* bf16 is the top half of a float */
        bad += gcsh_f32_to_bf16(f) != h;
    }
    CHECK(bad == 0, "bf16: %d decode or round-trip failures", bad);
    CHECK(bad_nan == 0, "bf16 NaN: %d failures", bad_nan);
}

static void test_bf16_ties_and_sampled(void)
{
    int bad = 0, checked = 0;
    for (uint32_t h = 0; h < 0x7f7f; h++) { /* every tie between finite neighbours */
        float mid = bits_f32(h << 16 | 0x8000);
        uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
        bad += gcsh_f32_to_bf16(mid) != even;
        bad += gcsh_f32_to_bf16(bits_f32(h << 16 | 0x7fff)) != h;
        bad += gcsh_f32_to_bf16(bits_f32(h << 16 | 0x8001)) != h + 1;
        checked += 3;
    }
    for (uint64_t b = 0; b < 0x100000000ULL; b += 7919) {
        float f = bits_f32((uint32_t)b);
        if (isnan(f))
            continue;
        bad += gcsh_f32_to_bf16(f) != ref_bf16_from_f32(f);
        checked++;
    }
    CHECK(bad == 0, "bf16 ties/sampled: %d of %d wrong", bad, checked);
    CHECK(gcsh_f32_to_bf16(3.4028234663852886e38f) == 0x7f80, "FLT_MAX rounds to inf in bf16");
    CHECK(gcsh_f32_to_bf16(1.0f / 3.0f) == 0x3eab, "bf16(1/3)");
    CHECK(gcsh_f32_to_bf16(-0.0f) == 0x8000, "bf16(-0)");
    CHECK(gcsh_f32_to_bf16(1e-8f) == 0x322c, "bf16(1e-8) is normal");
    CHECK(gcsh_f32_to_bf16(0x1p-133f) == 0x0001, "bf16 smallest subnormal");
    CHECK(gcsh_f32_to_bf16(0x1p-134f) == 0x0000, "bf16 half the smallest subnormal -> 0");
    CHECK(gcsh_f64_to_bf16_bits(1.0 + 0x1p-8 + 0x1p-40) == 0x3f81, "bf16 single rounding");
}

static void test_load_store(void)
{
    unsigned char buf[8 * 4];
    for (int d = 0; d < GCSH_NDTYPES; d++) {
        gcsh_dtype dt = (gcsh_dtype)d;
        gcsh_store_i(buf, dt, 3, 100);
        CHECK(gcsh_load_i(buf, dt, 3) == 100, "%s store_i/load_i 100", gcsh_dtype_name(dt));
        CHECK(gcsh_load_f(buf, dt, 3) == 100.0, "%s load_f 100", gcsh_dtype_name(dt));
        gcsh_store_f(buf, dt, 2, 7.0);
        CHECK(gcsh_load_i(buf, dt, 2) == 7, "%s store_f 7", gcsh_dtype_name(dt));
        CHECK(gcsh_load_i(buf, dt, 3) == 100, "%s neighbour untouched", gcsh_dtype_name(dt));
    }
    gcsh_store_i(buf, GCSH_I64, 0, INT64_MIN);
    CHECK(gcsh_load_i(buf, GCSH_I64, 0) == INT64_MIN, "i64 min exact");
    gcsh_store_i(buf, GCSH_I64, 0, (1LL << 62) + 1);
    CHECK(gcsh_load_i(buf, GCSH_I64, 0) == (1LL << 62) + 1, "i64 2^62+1 exact");
    gcsh_store_i(buf, GCSH_U32, 0, 4294967295LL);
    CHECK(gcsh_load_i(buf, GCSH_U32, 0) == 4294967295LL, "u32 max reads back unsigned");
    gcsh_store_i(buf, GCSH_I8, 0, -128);
    CHECK(gcsh_load_i(buf, GCSH_I8, 0) == -128, "i8 min");
    gcsh_store_i(buf, GCSH_U8, 0, 300);
    CHECK(gcsh_load_i(buf, GCSH_U8, 0) == 44, "u8 wraps (callers validate)");
    gcsh_store_f(buf, GCSH_I32, 0, NAN);
    CHECK(gcsh_load_i(buf, GCSH_I32, 0) == 0, "NaN into an int dtype gives 0, not UB");
    gcsh_store_f(buf, GCSH_I64, 0, 1e300);
    CHECK(gcsh_load_i(buf, GCSH_I64, 0) == INT64_MAX, "huge float saturates");
    gcsh_store_f(buf, GCSH_F16, 0, -0.0);
    CHECK(signbit(gcsh_load_f(buf, GCSH_F16, 0)), "f16 -0 keeps its sign");
    gcsh_store_f(buf, GCSH_F32, 1, 1.0 / 3.0);
    CHECK(gcsh_load_f(buf, GCSH_F32, 1) == (double)(1.0f / 3.0f), "f32 1/3");
    CHECK(gcsh_load_i(buf, GCSH_F32, 1) == 0, "load_i of a float dtype truncates");
}

static void test_arange_and_fill_values(void)
{
    float out[5];
    gcsh_scalar start = {.is_int = 0, .f = 0.5}, step = {.is_int = 1, .i = 2};
    for (size_t i = 0; i < 5; i++)
        gcsh_elem_arange(out, GCSH_F32, i, start, step);
    CHECK(out[0] == 0.5f && out[4] == 8.5f, "arange f32 0.5 step 2");
    int8_t i8[4];
    gcsh_scalar s0 = {.is_int = 1, .i = 127}, ds = {.is_int = 1, .i = -85};
    for (size_t i = 0; i < 4; i++)
        gcsh_elem_arange(i8, GCSH_I8, i, s0, ds);
    CHECK(i8[0] == 127 && i8[1] == 42 && i8[2] == -43 && i8[3] == -128, "arange i8 down");
    CHECK(gcsh_arange_f(0.0, 0.1, 3) == 3 * 0.1, "arange_f is start + i*step");
    uint16_t h;
    gcsh_scalar third = {.is_int = 0, .f = 1.0 / 3.0};
    gcsh_elem_store_scalar(&h, GCSH_F16, 0, third);
    CHECK(h == 0x3555, "fill scalar 1/3 into f16");
}

static void test_rng(void)
{
    CHECK(gcsh_rng_bits(1, 0) == gcsh_rng_bits(1, 0), "pure");
    CHECK(gcsh_rng_bits(1, 0) != gcsh_rng_bits(2, 0), "seeds differ");
    CHECK(gcsh_rng_bits(1, 0) != gcsh_rng_bits(1, 1), "elements differ");
    /* Pinned values: the cuda kernel must reproduce exactly these. */
    CHECK(gcsh_rng_mix64(0) == 0, "mix64(0) = 0");
    CHECK(gcsh_rng_mix64(GCSH_RNG_GOLDEN) == 0xe220a8397b1dcdafULL,
          "mix64 is splitmix64's finaliser (first splitmix64 output of seed 0)");
    enum { N = 200000 };
    int counts[GCSH_RNG_INT_RANGE] = {0};
    int bad = 0;
    double sum = 0;
    for (uint64_t i = 0; i < N; i++) {
        double d = gcsh_rng_f64(7, i);
        float f = gcsh_rng_f32(7, i);
        double h = gcsh_rng_f16_value(7, i), b = gcsh_rng_bf16_value(7, i);
        int64_t k = gcsh_rng_int(7, i);
        bad += !(d >= 0 && d < 1) + !(f >= 0 && f < 1) + !(h >= 0 && h < 1) + !(b >= 0 && b < 1);
        bad += gcsh_f16_bits_to_f64(gcsh_f64_to_f16_bits(h)) != h; /* exact in f16 */
        bad += gcsh_bf16_bits_to_f64(gcsh_f64_to_bf16_bits(b)) != b;
        bad += !(k >= 0 && k < GCSH_RNG_INT_RANGE);
        if (k >= 0 && k < GCSH_RNG_INT_RANGE)
            counts[k]++;
        sum += d;
    }
    CHECK(bad == 0, "rng: %d values out of range or not exact", bad);
    CHECK(fabs(sum / N - 0.5) < 0.005, "rng mean %.4f", sum / N);
    int lo = N, hi = 0;
    for (int k = 0; k < GCSH_RNG_INT_RANGE; k++) {
        lo = counts[k] < lo ? counts[k] : lo;
        hi = counts[k] > hi ? counts[k] : hi;
    }
    /* Expected 2000 per bucket, sd ~44: 6 sd either way. */
    CHECK(lo > 1730 && hi < 2270, "rng ints uniform: buckets %d..%d", lo, hi);
}

int main(void)
{
    test_tables();
    test_f16_all_encodings();
    test_f16_ties();
    test_f16_sampled();
    test_f16_cases();
    test_bf16_all_encodings();
    test_bf16_ties_and_sampled();
    test_load_store();
    test_arange_and_fill_values();
    test_rng();
    UNIT_END();
}
