// Window kernels: signal words (store/add with release, wait with acquire),
// the peer read through a peer table, and the NCCL device-API glue (device
// communicator, ncclGetLsaPointer table fill).
#include <new>

#include <cuda/atomic>
// NCCL 2.28's device headers have unused parameters in their GIN entry points; the
// warning is theirs, so it is silenced for their headers only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <nccl_device.h>
#pragma GCC diagnostic pop

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
        a.fetch_add(v, cuda::memory_order_release);
    else
        a.store(v, cuda::memory_order_release);
}

// add returning the old value into *old: acquire (what the owner published
// before its last store is visible after) and release (this rank's earlier
// writes are visible to whoever sees the new value), system scope
__global__ void signal_fetch_add_kernel(unsigned long long *word, unsigned long long v,
                                        unsigned long long *old)
{
    sys_atomic a(*word);
    *old = a.fetch_add(v, cuda::memory_order_acq_rel);
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

__global__ void lsa_table_kernel(ncclWindow_t win, int n, void **table)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        table[i] = ncclGetLsaPointer(win, 0, i);
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

extern "C" cudaError_t gcsh_k_lsa_table(ncclWindow_t win, int n, void **table,
                                        cudaStream_t stream)
{
    if (n <= 0 || n > GCSH_MAX_TEAM || !win || !table)
        return cudaErrorInvalidValue;
    clear_stale_error();
    lsa_table_kernel<<<(n + 127) / 128, 128, 0, stream>>>(win, n, table);
    return launched();
}

extern "C" ncclResult_t gcsh_nccl_devcomm_create(ncclComm_t comm, int lsa_barriers, void **out)
{
    ncclDevComm *dc = new (std::nothrow) ncclDevComm();
    if (!dc)
        return ncclSystemError;
    // value-initialised: no GIN, and lsaMultimem false, which keeps NVLink
    // multicast (NVLS) out of this communicator for good; the LSA barriers
    // asked for (NCCL keeps their state in a small buffer of its own)
    ncclDevCommRequirements reqs = {};
    reqs.lsaMultimem = false;
    reqs.lsaBarrierCount = lsa_barriers;
    ncclResult_t r = ncclDevCommCreate(comm, &reqs, dc);
    if (r != ncclSuccess && r != ncclInProgress) {
        delete dc;
        return r;
    }
    // On a non-blocking communicator NCCL may still be filling *dc: it stays
    // allocated, and the caller waits for the communicator before reading it
    // (gcsh_nccl_devcomm_lsa) or handing it to a kernel.
    *out = dc;
    return r;
}

extern "C" void gcsh_nccl_devcomm_lsa(const void *dev_comm, int *lsa_size, int *lsa_rank)
{
    const ncclDevComm *dc = (const ncclDevComm *)dev_comm;
    *lsa_size = dc->lsaSize;
    *lsa_rank = dc->lsaRank;
}

extern "C" ncclResult_t gcsh_nccl_devcomm_destroy(ncclComm_t comm, void *dev_comm)
{
    ncclDevComm *dc = (ncclDevComm *)dev_comm;
    if (!dc)
        return ncclSuccess;
    ncclResult_t r = ncclDevCommDestroy(comm, dc);
    delete dc;
    return r;
}

extern "C" void gcsh_nccl_lsa_team(ncclComm_t comm, int *size, int *rank, int *members, int max)
{
    ncclTeam_t lsa = ncclTeamLsa(comm);
    *size = lsa.nRanks;
    *rank = lsa.rank;
    for (int i = 0; i < lsa.nRanks && i < max; i++)
        members[i] = ncclTeamRankToWorld(comm, lsa, i);
}
