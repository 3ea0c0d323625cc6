// Element traits of the reduce kernels (reduce.cu, ll.cu): storage type S,
// accumulator A (kreduce.h: f32 for f32/f16/bf16, wrapping 32-bit integers),
// and the packing of a 16-byte vector into VE accumulators.
#ifndef GCSH_KERNELS_KTRAITS_CUH
#define GCSH_KERNELS_KTRAITS_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/kreduce.h"

namespace gcsh_k {

struct F32 {
    using S = float;
    using A = float;
    static constexpr int VE = 4;
    __device__ static A load(S x) { return x; }
    __device__ static S store(A x) { return x; }
    __device__ static A combine(A a, A b, int op) { return gcsh_kern_combine_f32(a, b, op); }
    __device__ static void unpack(uint4 v, A *e)
    {
        e[0] = __uint_as_float(v.x), e[1] = __uint_as_float(v.y);
        e[2] = __uint_as_float(v.z), e[3] = __uint_as_float(v.w);
    }
    __device__ static uint4 pack(const A *e)
    {
        return make_uint4(__float_as_uint(e[0]), __float_as_uint(e[1]), __float_as_uint(e[2]),
                          __float_as_uint(e[3]));
    }
};

// f16 and bf16: exact widening, f32 arithmetic, one round to nearest even.
template <class H, class H2> struct Half {
    using S = H;
    using A = float;
    static constexpr int VE = 8;
    __device__ static A combine(A a, A b, int op) { return gcsh_kern_combine_f32(a, b, op); }
};

struct F16 : Half<__half, __half2> {
    __device__ static A load(S x) { return __half2float(x); }
    __device__ static S store(A x) { return __float2half_rn(x); }
    __device__ static void unpack(uint4 v, A *e)
    {
        const __half2 *h = reinterpret_cast<const __half2 *>(&v);
        for (int i = 0; i < 4; i++) {
            float2 f = __half22float2(h[i]);
            e[2 * i] = f.x, e[2 * i + 1] = f.y;
        }
    }
    __device__ static uint4 pack(const A *e)
    {
        uint4 v;
        __half2 *h = reinterpret_cast<__half2 *>(&v);
        for (int i = 0; i < 4; i++)
            h[i] = __floats2half2_rn(e[2 * i], e[2 * i + 1]);
        return v;
    }
};

struct BF16 : Half<__nv_bfloat16, __nv_bfloat162> {
    __device__ static A load(S x) { return __bfloat162float(x); }
    __device__ static S store(A x) { return __float2bfloat16_rn(x); }
    __device__ static void unpack(uint4 v, A *e)
    {
        const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&v);
        for (int i = 0; i < 4; i++) {
            float2 f = __bfloat1622float2(h[i]);
            e[2 * i] = f.x, e[2 * i + 1] = f.y;
        }
    }
    __device__ static uint4 pack(const A *e)
    {
        uint4 v;
        __nv_bfloat162 *h = reinterpret_cast<__nv_bfloat162 *>(&v);
        for (int i = 0; i < 4; i++)
            h[i] = __floats2bfloat162_rn(e[2 * i], e[2 * i + 1]);
        return v;
    }
};

template <bool Signed> struct Int32 {
    using S = unsigned;
    using A = unsigned;
    static constexpr int VE = 4;
    __device__ static A load(S x) { return x; }
    __device__ static S store(A x) { return x; }
    __device__ static A combine(A a, A b, int op)
    {
        return Signed ? gcsh_kern_combine_i32(a, b, op) : gcsh_kern_combine_u32(a, b, op);
    }
    __device__ static void unpack(uint4 v, A *e) { e[0] = v.x, e[1] = v.y, e[2] = v.z, e[3] = v.w; }
    __device__ static uint4 pack(const A *e) { return make_uint4(e[0], e[1], e[2], e[3]); }
};

} // namespace gcsh_k

#endif
