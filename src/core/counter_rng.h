/* Counter-based random numbers for t:rand(seed): element i is a pure function
 * of (seed, i), so a host loop, a GPU kernel with any launch shape, and a
 * rand over a view all give the same bits.  Header-only; C and CUDA.
 *
 * Construction: splitmix64.  The seed is hashed once into a stream key, and
 * element i takes the (i+1)-th output of the splitmix64 sequence that starts
 * at that key: mix64(key + (i + 1) * golden).  splitmix64 passes BigCrush;
 * hashing the seed makes neighbouring seeds (rank 0, 1, 2, ...) unrelated.
 *
 * Values:
 *   - floats are uniform in [0, 1) on a grid the format holds exactly: the
 *     top p bits of the 64-bit word times 2^-p, with p the format's
 *     significand precision (f64 53, f32 24, f16 11, bf16 8).  No rounding
 *     happens, so no value can round up to 1.0 and every backend agrees;
 *   - integers (every integer dtype) are uniform in [0, 100), by the
 *     multiply-shift range reduction of the top 32 bits (bias < 2^-25).
 *
 * Every operation is integer arithmetic or an exact int -> float conversion,
 * so the result does not depend on compiler flags (-ffast-math, FMA
 * contraction, flush-to-zero). */
#ifndef GCSH_COUNTER_RNG_H
#define GCSH_COUNTER_RNG_H

#include <stdint.h>

#include "core/hd.h"

#define GCSH_RNG_GOLDEN 0x9e3779b97f4a7c15ULL
/* Integers drawn by rand lie in [0, GCSH_RNG_INT_RANGE). */
#define GCSH_RNG_INT_RANGE 100

/* The splitmix64 finaliser (Stafford's "Mix13"): a bijection on 64 bits. */
GCSH_HD static inline uint64_t gcsh_rng_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The 64 random bits of element i for this seed. */
GCSH_HD static inline uint64_t gcsh_rng_bits(uint64_t seed, uint64_t i)
{
    const uint64_t key = gcsh_rng_mix64(seed ^ GCSH_RNG_GOLDEN);
    return gcsh_rng_mix64(key + (i + 1) * GCSH_RNG_GOLDEN);
}

GCSH_HD static inline double gcsh_rng_f64(uint64_t seed, uint64_t i)
{
    return (double)(gcsh_rng_bits(seed, i) >> 11) * 0x1p-53;
}

GCSH_HD static inline float gcsh_rng_f32(uint64_t seed, uint64_t i)
{
    return (float)(uint32_t)(gcsh_rng_bits(seed, i) >> 40) * 0x1p-24f;
}

/* f16 and bf16 are returned as doubles that the format holds exactly
 * (k * 2^-11 and k * 2^-8): convert them with half.h, which is then exact. */
GCSH_HD static inline double gcsh_rng_f16_value(uint64_t seed, uint64_t i)
{
    return (double)(gcsh_rng_bits(seed, i) >> 53) * 0x1p-11;
}

GCSH_HD static inline double gcsh_rng_bf16_value(uint64_t seed, uint64_t i)
{
    return (double)(gcsh_rng_bits(seed, i) >> 56) * 0x1p-8;
}

GCSH_HD static inline int64_t gcsh_rng_int(uint64_t seed, uint64_t i)
{
    return (int64_t)(((gcsh_rng_bits(seed, i) >> 32) * GCSH_RNG_INT_RANGE) >> 32);
}

#endif
