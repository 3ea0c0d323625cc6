// Element-wise initialisers for device tensors: fill, arange, rand.
//
// Every value comes from the shared host+device functions in dtype_hd.h and
// rand_hd.h, so a device tensor holds the same bits as a host tensor given the
// same initialiser.  Kernels are templated on the storage width only; the
// dtype stays a (uniform) runtime argument, which costs nothing next to the
// memory traffic and keeps one instantiation per width.
#include "kernels.h"
#include "rand_hd.h"

namespace {

constexpr unsigned kThreads = 256;
// Enough blocks to fill an H200 several times over; larger n loops (grid-stride).
constexpr size_t kMaxBlocks = 4096;

unsigned blocks_for(size_t n)
{
    size_t b = (n + kThreads - 1) / kThreads;
    return (unsigned)(b < kMaxBlocks ? b : kMaxBlocks);
}

template <typename T>
__global__ void fill_kernel(T *p, size_t n, T v)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = v;
}

struct Arange {
    gcsh_dtype dt;
    gcsh_scalar start, step;
    __device__ uint64_t operator()(uint64_t i) const
    {
        return gcsh_hd_arange_bits(dt, start, step, i);
    }
};

struct Rand {
    gcsh_dtype dt;
    uint64_t seed;
    __device__ uint64_t operator()(uint64_t i) const { return gcsh_hd_rand_bits(dt, seed, i); }
};

template <typename T, typename F>
__global__ void map_kernel(T *p, size_t n, F f)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = (T)f(i);
}

template <typename T>
cudaError_t launch_fill(void *p, size_t n, uint64_t bits, cudaStream_t s)
{
    fill_kernel<T><<<blocks_for(n), kThreads, 0, s>>>((T *)p, n, (T)bits);
    return cudaGetLastError();
}

template <typename T, typename F>
cudaError_t launch_map(void *p, size_t n, F f, cudaStream_t s)
{
    map_kernel<T, F><<<blocks_for(n), kThreads, 0, s>>>((T *)p, n, f);
    return cudaGetLastError();
}

// Dispatch on the element width of dt.
template <typename F>
cudaError_t launch_by_width(void *p, gcsh_dtype dt, size_t n, F f, cudaStream_t s)
{
    switch (dt) {
    case GCSH_F64: case GCSH_I64: return launch_map<uint64_t>(p, n, f, s);
    case GCSH_F32: case GCSH_I32: case GCSH_U32: return launch_map<uint32_t>(p, n, f, s);
    case GCSH_F16: case GCSH_BF16: return launch_map<uint16_t>(p, n, f, s);
    case GCSH_U8: case GCSH_I8: return launch_map<uint8_t>(p, n, f, s);
    default: return cudaErrorInvalidValue;
    }
}

} // namespace

extern "C" cudaError_t gcsh_k_fill(void *p, size_t esize, size_t n, uint64_t bits,
                                   cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    switch (esize) {
    case 8: return launch_fill<uint64_t>(p, n, bits, stream);
    case 4: return launch_fill<uint32_t>(p, n, bits, stream);
    case 2: return launch_fill<uint16_t>(p, n, bits, stream);
    case 1: return launch_fill<uint8_t>(p, n, bits, stream);
    default: return cudaErrorInvalidValue;
    }
}

extern "C" cudaError_t gcsh_k_arange(void *p, gcsh_dtype dt, size_t n, gcsh_scalar start,
                                     gcsh_scalar step, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    return launch_by_width(p, dt, n, Arange{dt, start, step}, stream);
}

extern "C" cudaError_t gcsh_k_rand(void *p, gcsh_dtype dt, size_t n, uint64_t seed,
                                   cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    return launch_by_width(p, dt, n, Rand{dt, seed}, stream);
}
