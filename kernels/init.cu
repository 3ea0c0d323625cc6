// Element-wise initialisers for device tensors: fill, arange, rand.
//
// Each thread stores its elements with the same per-element functions the
// host backend's loops use (elem.h), so a device tensor holds the same bits
// as a host tensor given the same initialiser.  fill is special-cased: the
// host encodes the value once and the kernel only replicates the bits.
#include "elem.h"
#include "initkern.h"

namespace {

constexpr unsigned kThreads = 256;
// Enough blocks to fill an H200 many times over; larger n loops (grid-stride).
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

template <typename T>
cudaError_t launch_fill(void *p, size_t n, uint64_t bits, cudaStream_t s)
{
    fill_kernel<T><<<blocks_for(n), kThreads, 0, s>>>((T *)p, n, (T)bits);
    return cudaGetLastError();
}

struct Arange {
    gcsh_dtype dt;
    gcsh_scalar start, step;
    __device__ void operator()(void *p, size_t i) const { gcsh_elem_arange(p, dt, i, start, step); }
};

struct Rand {
    gcsh_dtype dt;
    uint64_t seed;
    __device__ void operator()(void *p, size_t i) const { gcsh_elem_rand(p, dt, i, seed); }
};

// The dtype is a runtime argument, uniform across the grid: its switch costs
// nothing next to the store, and one instantiation serves all nine dtypes.
template <typename F>
__global__ void elem_kernel(void *p, size_t n, F f)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        f(p, i);
}

template <typename F>
cudaError_t launch_elem(void *p, size_t n, F f, cudaStream_t s)
{
    elem_kernel<F><<<blocks_for(n), kThreads, 0, s>>>(p, n, f);
    return cudaGetLastError();
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
    if ((unsigned)dt >= GCSH_NDTYPES)
        return cudaErrorInvalidValue;
    return launch_elem(p, n, Arange{dt, start, step}, stream);
}

extern "C" cudaError_t gcsh_k_rand(void *p, gcsh_dtype dt, size_t n, uint64_t seed,
                                   cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    if ((unsigned)dt >= GCSH_NDTYPES)
        return cudaErrorInvalidValue;
    return launch_elem(p, n, Rand{dt, seed}, stream);
}
