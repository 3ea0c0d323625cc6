// The copy kernel of one-sided transfers (xferkern.h): chunks of segments,
// each copied with the widest word that the source and destination
// alignments share, and an optional release-ordered signal at the end.
#include "kport.cuh"
#include "xferkern.h"

namespace {

using gcsh_k::sys_atomic;

constexpr unsigned kThreads = 256;
constexpr unsigned kUnroll = 4;

// Bytes [0, n) one byte per thread step: heads and tails.
__device__ void copy_bytes(unsigned char *dst, const unsigned char *src, size_t n)
{
    for (size_t i = threadIdx.x; i < n; i += blockDim.x)
        dst[i] = src[i];
}

// n words of W: kUnroll independent loads in flight per thread per step
// (NVLink latency is microseconds; bandwidth needs many outstanding).
template <typename W>
__device__ void copy_words(W *dst, const W *src, size_t n)
{
    const size_t stride = blockDim.x;
    size_t i = threadIdx.x;
    for (; i + (kUnroll - 1) * stride < n; i += kUnroll * stride) {
        W v[kUnroll];
#pragma unroll
        for (unsigned k = 0; k < kUnroll; k++)
            v[k] = src[i + k * stride];
#pragma unroll
        for (unsigned k = 0; k < kUnroll; k++)
            dst[i + k * stride] = v[k];
    }
    for (; i < n; i += stride)
        dst[i] = src[i];
}

// Head bytes up to W alignment of dst (src shares it), W words, tail bytes.
template <typename W>
__device__ void copy_aligned(unsigned char *dst, const unsigned char *src, size_t n)
{
    size_t head = (sizeof(W) - ((uintptr_t)dst & (sizeof(W) - 1))) & (sizeof(W) - 1);
    if (head > n)
        head = n;
    size_t words = (n - head) / sizeof(W);
    size_t body = words * sizeof(W);
    copy_bytes(dst, src, head);
    copy_words((W *)(dst + head), (const W *)(src + head), words);
    copy_bytes(dst + head + body, src + head + body, n - head - body);
}

__device__ void copy_chunk(unsigned char *dst, const unsigned char *src, size_t n)
{
    uintptr_t skew = (uintptr_t)dst ^ (uintptr_t)src;
    if ((skew & 15) == 0)
        copy_aligned<uint4>(dst, src, n);
    else if ((skew & 7) == 0)
        copy_aligned<unsigned long long>(dst, src, n);
    else if ((skew & 3) == 0)
        copy_aligned<unsigned>(dst, src, n);
    else if ((skew & 1) == 0)
        copy_aligned<unsigned short>(dst, src, n);
    else
        copy_bytes(dst, src, n);
}

// The segment holding chunk c: the last one whose first_chunk <= c.
__device__ size_t segment_of(const gcsh_kseg *segs, size_t nseg, size_t c)
{
    size_t lo = 0, hi = nseg - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        if (segs[mid].first_chunk <= c)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

__global__ void xfer_kernel(const gcsh_kseg *segs, size_t nseg, size_t chunks, unsigned *arrived,
                            unsigned long long *signal, unsigned long long value)
{
    for (size_t c = blockIdx.x; c < chunks; c += gridDim.x) {
        const gcsh_kseg s = segs[segment_of(segs, nseg, c)];
        size_t off = (c - s.first_chunk) * GCSH_XFER_CHUNK;
        size_t n = s.bytes - off < GCSH_XFER_CHUNK ? s.bytes - off : GCSH_XFER_CHUNK;
        copy_chunk((unsigned char *)s.dst + off, (const unsigned char *)s.src + off, n);
    }
    if (!signal)
        return;
    // every thread fences its own stores at system scope (the data went to
    // another GPU, the word may be on a third), then one thread arrives
    gcsh_k::fence_system();
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    if (atomicAdd(arrived, 1u) != gridDim.x - 1)
        return;
    // the last block: every block fenced before it arrived
    *arrived = 0; // ready for the next post (stream order separates them)
    gcsh_k::fence_system();
    sys_atomic(*signal).fetch_add(value, gcsh_k::kRelease);
}

__global__ void fence_kernel()
{
    gcsh_k::fence_seq_cst_system();
}

} // namespace

extern "C" size_t gcsh_k_xfer_layout(gcsh_kseg *seg, size_t nseg)
{
    size_t chunks = 0;
    for (size_t i = 0; i < nseg; i++) {
        if (seg[i].bytes == 0)
            return 0;
        seg[i].first_chunk = chunks;
        chunks += (seg[i].bytes + GCSH_XFER_CHUNK - 1) / GCSH_XFER_CHUNK;
    }
    return chunks;
}

extern "C" cudaError_t gcsh_k_xfer(const gcsh_kseg *segs, size_t nseg, size_t chunks,
                                   unsigned max_blocks, unsigned *arrived, uint64_t *signal,
                                   uint64_t value, cudaStream_t stream)
{
    // a chunk count below the segment count means a layout that was not made
    // by gcsh_k_xfer_layout: never launch on it
    if (!segs || nseg == 0 || chunks < nseg || max_blocks == 0)
        return cudaErrorInvalidValue;
    if (signal && (((uintptr_t)signal & 7) || !arrived))
        return cudaErrorInvalidValue;
    unsigned blocks = chunks < max_blocks ? (unsigned)chunks : max_blocks;
    (void)cudaGetLastError(); // report this launch only (see window.cu)
    xfer_kernel<<<blocks, kThreads, 0, stream>>>(segs, nseg, chunks, arrived,
                                                 (unsigned long long *)signal, value);
    return cudaGetLastError();
}

extern "C" cudaError_t gcsh_k_fence(cudaStream_t stream)
{
    (void)cudaGetLastError(); // report this launch only (see window.cu)
    fence_kernel<<<1, 1, 0, stream>>>();
    return cudaGetLastError();
}
