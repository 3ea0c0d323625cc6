/* IEEE binary16 (f16) and bfloat16 conversions as pure integer bit work,
 * usable from C and from CUDA device code, so that a value stored by a host
 * loop and by a GPU kernel has the same bits.
 *
 * Rounding is round-to-nearest, ties-to-even, done once from double: storing
 * a double through float first would round twice and can be off by one ulp
 * at ties.  Subnormals are produced and read, overflow gives infinity, NaN
 * stays NaN (quiet, sign and top payload bits kept).
 *
 * Nothing here depends on the FPU rounding mode or on flush-to-zero. */
#ifndef GCSH_HALF_H
#define GCSH_HALF_H

#include <stdint.h>
#include <string.h>

#include "core/hd.h"

GCSH_HD static inline uint64_t gcsh_f64_to_bits(double d)
{
#ifdef __CUDA_ARCH__
    return (uint64_t)__double_as_longlong(d);
#else
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
#endif
}

GCSH_HD static inline double gcsh_bits_to_f64(uint64_t b)
{
#ifdef __CUDA_ARCH__
    return __longlong_as_double((long long)b);
#else
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
#endif
}

/* Rounds x to a small IEEE-layout format with exp_bits exponent bits and
 * man_bits stored mantissa bits (f16: 5, 10; bf16: 8, 7).  Returns the
 * encoding in the low 1 + exp_bits + man_bits bits. */
GCSH_HD static inline uint16_t gcsh_round_f64_to_small(double x, int exp_bits, int man_bits)
{
    const uint64_t b = gcsh_f64_to_bits(x);
    const uint32_t sign = (uint32_t)(b >> 63) << (exp_bits + man_bits);
    const int exp = (int)((b >> 52) & 0x7ff);
    const uint64_t frac = b & 0xfffffffffffffULL;
    const int exp_all_ones = (1 << exp_bits) - 1;
    const uint32_t inf = (uint32_t)exp_all_ones << man_bits;

    if (exp == 0x7ff) {
        if (frac == 0)
            return (uint16_t)(sign | inf);
        /* Keep the top payload bits; the quiet bit guarantees it stays a NaN
         * even when every kept payload bit is zero. */
        return (uint16_t)(sign | inf | (1u << (man_bits - 1)) |
                          (uint32_t)(frac >> (52 - man_bits)));
    }
    /* Zero or a double subnormal (< 2^-1022): far below half the smallest
     * subnormal of either small format, so it rounds to a signed zero. */
    if (exp == 0)
        return (uint16_t)sign;

    const int bias = (1 << (exp_bits - 1)) - 1;
    int target_exp = exp - 1023 + bias;
    if (target_exp >= exp_all_ones)
        return (uint16_t)(sign | inf);

    const uint64_t sig = frac | (1ULL << 52); /* 53 significant bits */
    int shift = 52 - man_bits;                /* bits dropped for a normal */
    if (target_exp <= 0) {
        /* Subnormal result: the unit in the last place is fixed at
         * 2^(1 - bias - man_bits), so drop (1 - target_exp) more bits. */
        shift += 1 - target_exp;
        if (shift > 53) /* below half the smallest subnormal */
            return (uint16_t)sign;
    }
    uint64_t kept = sig >> shift;
    const uint64_t rest = sig & ((1ULL << shift) - 1);
    const uint64_t half = 1ULL << (shift - 1);
    if (rest > half || (rest == half && (kept & 1)))
        kept++;

    uint32_t mag;
    if (target_exp <= 0) {
        /* A carry out of the subnormal range lands exactly on the encoding
         * of the smallest normal, so no special case is needed. */
        mag = (uint32_t)kept;
    } else {
        /* kept includes the implicit bit, which adds the 1 back to
         * (target_exp - 1); a rounding carry bumps the exponent, up to inf. */
        mag = ((uint32_t)(target_exp - 1) << man_bits) + (uint32_t)kept;
    }
    if (mag > inf)
        mag = inf;
    return (uint16_t)(sign | mag);
}

/* Exact widening of a small-format encoding to double. */
GCSH_HD static inline double gcsh_small_to_f64(uint16_t h, int exp_bits, int man_bits)
{
    const uint64_t sign = (uint64_t)((h >> (exp_bits + man_bits)) & 1) << 63;
    const int exp_all_ones = (1 << exp_bits) - 1;
    const int exp = (h >> man_bits) & exp_all_ones;
    uint32_t man = h & ((1u << man_bits) - 1);
    const int bias = (1 << (exp_bits - 1)) - 1;

    if (exp == exp_all_ones) /* inf (man == 0) or NaN with its payload */
        return gcsh_bits_to_f64(sign | (0x7ffULL << 52) | ((uint64_t)man << (52 - man_bits)));
    int e; /* unbiased exponent of the leading 1 */
    if (exp == 0) {
        if (man == 0)
            return gcsh_bits_to_f64(sign);
        /* Subnormal: normalise so the leading 1 becomes the implicit bit. */
        e = 1 - bias;
        while (!(man & (1u << man_bits))) {
            man <<= 1;
            e--;
        }
        man &= (1u << man_bits) - 1;
    } else {
        e = exp - bias;
    }
    return gcsh_bits_to_f64(sign | ((uint64_t)(e + 1023) << 52) |
                            ((uint64_t)man << (52 - man_bits)));
}

GCSH_HD static inline uint16_t gcsh_f64_to_f16_bits(double x)
{
    return gcsh_round_f64_to_small(x, 5, 10);
}

GCSH_HD static inline uint16_t gcsh_f64_to_bf16_bits(double x)
{
    return gcsh_round_f64_to_small(x, 8, 7);
}

GCSH_HD static inline double gcsh_f16_bits_to_f64(uint16_t h)
{
    return gcsh_small_to_f64(h, 5, 10);
}

GCSH_HD static inline double gcsh_bf16_bits_to_f64(uint16_t h)
{
    return gcsh_small_to_f64(h, 8, 7);
}

#endif
