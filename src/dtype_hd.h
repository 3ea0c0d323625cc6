/* Element values for fill / arange / rand, computed the same way on the host
 * and on the GPU: every function here is plain integer and IEEE arithmetic,
 * compiled by gcc for the host and by nvcc (__host__ __device__) for kernels,
 * so a GPU tensor holds the same bits as a host tensor initialised alike.
 *
 * Pure header (static inline, C11 and CUDA C++ alike), no library calls. */
#ifndef GCSH_DTYPE_HD_H
#define GCSH_DTYPE_HD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dtype.h"

#ifdef __CUDACC__
#define GCSH_HD __host__ __device__ __forceinline__
#else
#define GCSH_HD static inline
#endif

GCSH_HD size_t gcsh_hd_dtype_size(gcsh_dtype dt)
{
    switch (dt) {
    case GCSH_F64: case GCSH_I64: return 8;
    case GCSH_F32: case GCSH_I32: case GCSH_U32: return 4;
    case GCSH_F16: case GCSH_BF16: return 2;
    default: return 1;
    }
}

/* Bits of a float / double without aliasing trouble (memcpy folds away). */
GCSH_HD uint32_t gcsh_hd_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* f32 -> IEEE half, round to nearest even; NaN keeps its sign and becomes the
 * quiet NaN 0x7e00; overflow gives infinity. */
GCSH_HD uint16_t gcsh_hd_f32_to_f16(float f)
{
    uint32_t x = gcsh_hd_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t exp = (x >> 23) & 0xffu, man = x & 0x7fffffu;
    if (exp == 0xff)
        return (uint16_t)(sign | (man ? 0x7e00u : 0x7c00u));
    int e = (int)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        /* subnormal half (or zero): shift the full significand into place */
        if (e < -10)
            return sign;
        uint32_t m = man | 0x800000u;
        int shift = 14 - e; /* 24-bit significand down to the half's 10 bits */
        uint32_t h = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1u)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        h++; /* a carry into the exponent is the right result, up to infinity */
    return (uint16_t)(sign | h);
}

/* f32 -> bfloat16, round to nearest even; NaN keeps its sign, becomes quiet. */
GCSH_HD uint16_t gcsh_hd_f32_to_bf16(float f)
{
    uint32_t x = gcsh_hd_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x0040u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* a + i * step with both roundings explicit: nvcc would otherwise contract it
 * into one fma and the GPU's arange would differ from the host's in the last
 * bit. */
GCSH_HD double gcsh_hd_arange_f(double start, double step, uint64_t i)
{
#ifdef __CUDA_ARCH__
    return __dadd_rn(start, __dmul_rn((double)i, step));
#else
    volatile double prod = (double)i * step; /* keep the host honest too */
    return start + prod;
#endif
}

/* Integer arange wraps like two's complement (uint64 arithmetic, no UB). */
GCSH_HD int64_t gcsh_hd_arange_i(int64_t start, int64_t step, uint64_t i)
{
    return (int64_t)((uint64_t)start + (uint64_t)step * i);
}

/* The value v, as the element bits of dt (low bytes hold the element).
 * Floats round once from double to the type (half types through f32, as
 * the host's stores do); integers wrap to the width. */
GCSH_HD uint64_t gcsh_hd_bits_f(gcsh_dtype dt, double v)
{
    switch (dt) {
    case GCSH_F64: {
        uint64_t u;
        memcpy(&u, &v, sizeof u);
        return u;
    }
    case GCSH_F32: return gcsh_hd_f32_bits((float)v);
    case GCSH_F16: return gcsh_hd_f32_to_f16((float)v);
    case GCSH_BF16: return gcsh_hd_f32_to_bf16((float)v);
    default: return (uint64_t)(int64_t)v; /* integer types: callers pass integers */
    }
}

GCSH_HD uint64_t gcsh_hd_bits_i(gcsh_dtype dt, int64_t v)
{
    if (dt <= GCSH_BF16) /* the float types come first in gcsh_dtype */
        return gcsh_hd_bits_f(dt, (double)v);
    return (uint64_t)v; /* truncated to the width by the store */
}

/* The bits of a scalar as Lua handed it over (integers stay exact). */
GCSH_HD uint64_t gcsh_hd_bits_scalar(gcsh_dtype dt, gcsh_scalar v)
{
    if (v.is_int)
        return gcsh_hd_bits_i(dt, v.i);
    if (dt <= GCSH_BF16)
        return gcsh_hd_bits_f(dt, v.f);
    return (uint64_t)(int64_t)v.f;
}

/* Element i of arange(start, step): integer arithmetic when dt is an integer
 * type and both scalars are integers, double arithmetic otherwise. */
GCSH_HD uint64_t gcsh_hd_arange_bits(gcsh_dtype dt, gcsh_scalar start, gcsh_scalar step,
                                     uint64_t i)
{
    if (dt > GCSH_BF16 && start.is_int && step.is_int)
        return gcsh_hd_bits_i(dt, gcsh_hd_arange_i(start.i, step.i, i));
    double a = start.is_int ? (double)start.i : start.f;
    double s = step.is_int ? (double)step.i : step.f;
    return gcsh_hd_bits_f(dt, gcsh_hd_arange_f(a, s, i));
}

/* Stores the low `esize` bytes of bits as element i (little-endian hosts and
 * GPUs: the low bytes are the narrower integer). */
GCSH_HD void gcsh_hd_store_bits(void *base, size_t esize, size_t i, uint64_t bits)
{
    switch (esize) {
    case 8: ((uint64_t *)base)[i] = bits; break;
    case 4: ((uint32_t *)base)[i] = (uint32_t)bits; break;
    case 2: ((uint16_t *)base)[i] = (uint16_t)bits; break;
    default: ((uint8_t *)base)[i] = (uint8_t)bits; break;
    }
}

#endif
