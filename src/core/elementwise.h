/* Per-element loads, stores and initialiser values, shared by the host
 * backend's loops and the cuda backend's kernels so both produce the same
 * bits for fill, arange and rand.  Header-only; C and CUDA.
 *
 * Stores convert without range checks (the binding validated the value), but
 * never with undefined behaviour: a float stored into an integer dtype is
 * truncated toward zero and saturated to int64 (NaN gives 0), then wrapped to
 * the element width. */
#ifndef GCSH_ELEMENTWISE_H
#define GCSH_ELEMENTWISE_H

#include <stddef.h>
#include <stdint.h>

#include "core/counter_rng.h"
#include "core/dtype.h"
#include "core/half.h"

GCSH_HD static inline int gcsh_elem_is_float(gcsh_dtype dt)
{
    return dt == GCSH_F64 || dt == GCSH_F32 || dt == GCSH_F16 || dt == GCSH_BF16;
}

/* double -> int64 without undefined behaviour (see the file comment). */
GCSH_HD static inline int64_t gcsh_elem_f64_to_i64(double v)
{
    if (v != v)
        return 0;
    if (v >= 9223372036854775808.0)
        return INT64_MAX;
    if (v < -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)v;
}

GCSH_HD static inline double gcsh_elem_load_f(const void *base, gcsh_dtype dt, size_t i)
{
    switch (dt) {
    case GCSH_F64: return ((const double *)base)[i];
    case GCSH_F32: return (double)((const float *)base)[i];
    case GCSH_F16: return gcsh_f16_bits_to_f64(((const uint16_t *)base)[i]);
    case GCSH_BF16: return gcsh_bf16_bits_to_f64(((const uint16_t *)base)[i]);
    case GCSH_I64: return (double)((const int64_t *)base)[i];
    case GCSH_I32: return (double)((const int32_t *)base)[i];
    case GCSH_U32: return (double)((const uint32_t *)base)[i];
    case GCSH_U8: return (double)((const uint8_t *)base)[i];
    case GCSH_I8: return (double)((const int8_t *)base)[i];
    default: return 0.0;
    }
}

GCSH_HD static inline int64_t gcsh_elem_load_i(const void *base, gcsh_dtype dt, size_t i)
{
    switch (dt) {
    case GCSH_I64: return ((const int64_t *)base)[i];
    case GCSH_I32: return ((const int32_t *)base)[i];
    case GCSH_U32: return ((const uint32_t *)base)[i];
    case GCSH_U8: return ((const uint8_t *)base)[i];
    case GCSH_I8: return ((const int8_t *)base)[i];
    default: return gcsh_elem_f64_to_i64(gcsh_elem_load_f(base, dt, i));
    }
}

/* Integer stores wrap to the element width (two's complement). */
GCSH_HD static inline void gcsh_elem_store_i(void *base, gcsh_dtype dt, size_t i, int64_t v)
{
    switch (dt) {
    case GCSH_I64: ((int64_t *)base)[i] = v; break;
    case GCSH_I32: ((uint32_t *)base)[i] = (uint32_t)(uint64_t)v; break;
    case GCSH_U32: ((uint32_t *)base)[i] = (uint32_t)(uint64_t)v; break;
    case GCSH_U8: ((uint8_t *)base)[i] = (uint8_t)(uint64_t)v; break;
    case GCSH_I8: ((uint8_t *)base)[i] = (uint8_t)(uint64_t)v; break;
    case GCSH_F64: ((double *)base)[i] = (double)v; break;
    case GCSH_F32: ((float *)base)[i] = (float)v; break;
    /* |v| > 2^53 rounds twice (to double, then to the small format); host
     * and device take the same path, so they still agree bit for bit. */
    case GCSH_F16: ((uint16_t *)base)[i] = gcsh_f64_to_f16_bits((double)v); break;
    case GCSH_BF16: ((uint16_t *)base)[i] = gcsh_f64_to_bf16_bits((double)v); break;
    default: break;
    }
}

GCSH_HD static inline void gcsh_elem_store_f(void *base, gcsh_dtype dt, size_t i, double v)
{
    switch (dt) {
    case GCSH_F64: ((double *)base)[i] = v; break;
    case GCSH_F32: ((float *)base)[i] = (float)v; break;
    case GCSH_F16: ((uint16_t *)base)[i] = gcsh_f64_to_f16_bits(v); break;
    case GCSH_BF16: ((uint16_t *)base)[i] = gcsh_f64_to_bf16_bits(v); break;
    default: gcsh_elem_store_i(base, dt, i, gcsh_elem_f64_to_i64(v)); break;
    }
}

/* A Lua scalar into element i: integer dtypes take the integer (a float
 * scalar has been checked integral), float dtypes the double. */
GCSH_HD static inline void gcsh_elem_store_scalar(void *base, gcsh_dtype dt, size_t i,
                                                  gcsh_scalar v)
{
    if (gcsh_elem_is_float(dt))
        gcsh_elem_store_f(base, dt, i, v.is_int ? (double)v.i : v.f);
    else
        gcsh_elem_store_i(base, dt, i, v.is_int ? v.i : gcsh_elem_f64_to_i64(v.f));
}

/* arange, float dtypes: start + i * step, computed in double and rounded
 * once to the dtype.  The multiply and the add are separately rounded
 * (no FMA), which ISO C mode guarantees on the host (-std=c11 implies
 * -ffp-contract=off) and the _rn intrinsics guarantee on the device. */
GCSH_HD static inline double gcsh_arange_f(double start, double step, uint64_t i)
{
#ifdef __CUDA_ARCH__
    return __dadd_rn(start, __dmul_rn((double)i, step));
#else
    return start + (double)i * step;
#endif
}

/* arange, integer dtypes: start + i * step in wrapping 64-bit arithmetic
 * (the binding checked that the first and last values fit the dtype). */
GCSH_HD static inline int64_t gcsh_arange_i(int64_t start, int64_t step, uint64_t i)
{
    return (int64_t)((uint64_t)start + i * (uint64_t)step);
}

/* Element i of arange(start, step) stored into base[i]. */
GCSH_HD static inline void gcsh_elem_arange(void *base, gcsh_dtype dt, size_t i,
                                            gcsh_scalar start, gcsh_scalar step)
{
    if (gcsh_elem_is_float(dt)) {
        double s0 = start.is_int ? (double)start.i : start.f;
        double ds = step.is_int ? (double)step.i : step.f;
        gcsh_elem_store_f(base, dt, i, gcsh_arange_f(s0, ds, i));
    } else {
        int64_t s0 = start.is_int ? start.i : gcsh_elem_f64_to_i64(start.f);
        int64_t ds = step.is_int ? step.i : gcsh_elem_f64_to_i64(step.f);
        gcsh_elem_store_i(base, dt, i, gcsh_arange_i(s0, ds, i));
    }
}

/* Element i of rand(seed) stored into base[i] (see counter_rng.h). */
GCSH_HD static inline void gcsh_elem_rand(void *base, gcsh_dtype dt, size_t i, uint64_t seed)
{
    switch (dt) {
    case GCSH_F64: ((double *)base)[i] = gcsh_rng_f64(seed, i); break;
    case GCSH_F32: ((float *)base)[i] = gcsh_rng_f32(seed, i); break;
    case GCSH_F16:
        ((uint16_t *)base)[i] = gcsh_f64_to_f16_bits(gcsh_rng_f16_value(seed, i));
        break;
    case GCSH_BF16:
        ((uint16_t *)base)[i] = gcsh_f64_to_bf16_bits(gcsh_rng_bf16_value(seed, i));
        break;
    default: gcsh_elem_store_i(base, dt, i, gcsh_rng_int(seed, i)); break;
    }
}

#endif
