// Window kernels: signal words (store/add with release, wait with acquire)
// and the peer read through a peer table.  (NCCL's device-API glue is
// cuda/ncclwin.cu's.)
#include "core/backend.h"
#include "kwait.cuh"
#include "winkern.h"

namespace {

using gcsh_k::sys_atomic;

__global__ void signal_store_kernel(unsigned long long *word, unsigned long long v, int add)
{
    // system scope: the word may live on another GPU (NVLink), and the data
    // it publishes may have been written by this GPU to any peer
    sys_atomic a(*word);
    if (add)
        a.fetch_add(v, gcsh_k::kRelease);
    else
        a.store(v, gcsh_k::kRelease);
}

// add returning the old value into *old: acquire (what the owner published
// before its last store is visible after) and release (this rank's earlier
// writes are visible to whoever sees the new value), system scope
__global__ void signal_fetch_add_kernel(unsigned long long *word, unsigned long long v,
                                        unsigned long long *old)
{
    sys_atomic a(*word);
    *old = a.fetch_add(v, gcsh_k::kAcqRel);
}

__global__ void signal_wait_kernel(unsigned long long *word, unsigned long long v, int cmp,
                                   gcsh_wait_ctl *ctl, unsigned gen, unsigned long long bound)
{
    gcsh_k::wait_until(word, cmp, v, {ctl, gen, bound}, 1024);
}

constexpr unsigned kCopyThreads = 512;
constexpr size_t kCopyMaxBlocks = 1024;

unsigned copy_blocks(size_t n)
{
    size_t b = (n + kCopyThreads - 1) / kCopyThreads;
    return (unsigned)(b < 1 ? 1 : b < kCopyMaxBlocks ? b : kCopyMaxBlocks);
}

// Four independent 16-byte loads in flight per thread per step: NVLink
// latency is microseconds, so bandwidth needs many outstanding loads.
__global__ void peer_copy16_kernel(uint4 *dst, void *const *table, int peer, size_t offset,
                                   size_t n)
{
    const uint4 *src = (const uint4 *)((const char *)table[peer] + offset);
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        dst[i] = a;
        dst[i + stride] = b;
        dst[i + 2 * stride] = c;
        dst[i + 3 * stride] = d;
    }
    for (; i < n; i += stride)
        dst[i] = src[i];
}

__global__ void peer_copy1_kernel(unsigned char *dst, void *const *table, int peer,
                                  size_t offset, size_t n)
{
    const unsigned char *src = (const unsigned char *)table[peer] + offset;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = src[i];
}

// cudaGetLastError also returns (and clears) the error of an earlier runtime
// call, which that call already returned to its caller: clear it first, so
// a launcher reports its own launch only.  (Sticky errors stay either way.)
cudaError_t launched()
{
    return cudaGetLastError();
}

void clear_stale_error()
{
    (void)cudaGetLastError();
}

} // namespace

extern "C" cudaError_t gcsh_k_signal_store(uint64_t *word, uint64_t v, int add,
                                           cudaStream_t stream)
{
    if (!word || ((uintptr_t)word & 7))
        return cudaErrorInvalidValue;
    clear_stale_error();
    signal_store_kernel<<<1, 1, 0, stream>>>((unsigned long long *)word, v, add);
    return launched();
}

extern "C" cudaError_t gcsh_k_signal_fetch_add(uint64_t *word, uint64_t v, uint64_t *old_dev,
                                               cudaStream_t stream)
{
    if (!word || ((uintptr_t)word & 7) || !old_dev)
        return cudaErrorInvalidValue;
    clear_stale_error();
    signal_fetch_add_kernel<<<1, 1, 0, stream>>>((unsigned long long *)word, v,
                                                 (unsigned long long *)old_dev);
    return launched();
}

extern "C" cudaError_t gcsh_k_signal_wait(const uint64_t *word, uint64_t v, int cmp,
                                          gcsh_wait_ctl *ctl, unsigned gen, uint64_t bound_ns,
                                          cudaStream_t stream)
{
    if (!word || ((uintptr_t)word & 7) || !ctl || cmp < GCSH_CMP_GE || cmp > GCSH_CMP_LT)
        return cudaErrorInvalidValue;
    clear_stale_error();
    signal_wait_kernel<<<1, 1, 0, stream>>>((unsigned long long *)word, v, cmp, ctl, gen,
                                            bound_ns);
    return launched();
}

extern "C" cudaError_t gcsh_k_peer_copy(void *dst, void *const *table, int peer, size_t offset,
                                        size_t bytes, cudaStream_t stream)
{
    if (bytes == 0)
        return cudaSuccess;
    if (!dst || !table || peer < 0 || peer >= GCSH_MAX_TEAM)
        return cudaErrorInvalidValue;
    clear_stale_error();
    if ((((uintptr_t)dst | offset | bytes) & 15) == 0) {
        size_t n = bytes / 16;
        peer_copy16_kernel<<<copy_blocks(n), kCopyThreads, 0, stream>>>((uint4 *)dst, table,
                                                                        peer, offset, n);
    } else {
        peer_copy1_kernel<<<copy_blocks(bytes), kCopyThreads, 0, stream>>>(
            (unsigned char *)dst, table, peer, offset, bytes);
    }
    return launched();
}
