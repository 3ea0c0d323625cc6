/* rand(seed) element values for the GPU kernels.
 *
 * The contract (DESIGN.md, backend.h): element i depends only on (seed, i);
 * floats are uniform in [0, 1) built from integer bits (exactly representable
 * in the type, so no rounding can reach 1.0), integers uniform in [0, 100).
 *
 * The mixing function is the one the host backend must use too: once the
 * tensor branch's src/counter_rng.h lands, this header includes it instead of
 * defining gcsh_hd_rng_u64, so both backends share one definition. */
#ifndef GCSH_RAND_HD_H
#define GCSH_RAND_HD_H

#include "dtype_hd.h"

/* SplitMix64 finaliser over a Weyl sequence keyed by the seed: a bijection of
 * the counter, so distinct i give distinct 64-bit words for one seed. */
GCSH_HD uint64_t gcsh_hd_rng_u64(uint64_t seed, uint64_t i)
{
    uint64_t z = seed * 0xd1342543de82ef95ull + (i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Element bits of rand for dt: the top bits of the word, as many as the type's
 * significand holds exactly. */
GCSH_HD uint64_t gcsh_hd_rand_bits(gcsh_dtype dt, uint64_t seed, uint64_t i)
{
    uint64_t u = gcsh_hd_rng_u64(seed, i);
    switch (dt) {
    case GCSH_F64: return gcsh_hd_bits_f(dt, (double)(u >> 11) * 0x1p-53);
    case GCSH_F32: return gcsh_hd_bits_f(dt, (double)(u >> 40) * 0x1p-24);
    case GCSH_F16: return gcsh_hd_bits_f(dt, (double)(u >> 53) * 0x1p-11);
    case GCSH_BF16: return gcsh_hd_bits_f(dt, (double)(u >> 56) * 0x1p-8);
    default: return (uint64_t)((u >> 32) % 100u);
    }
}

#endif
