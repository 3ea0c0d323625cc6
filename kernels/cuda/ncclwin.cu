// NCCL's device-API glue for windows of kind nccl (cuda_win_nccl.c): the
// device communicator, the LSA team, and the peer table filled with
// ncclGetLsaPointer.  NCCL's alone: a GPU backend of another vendor has
// its own kinds (kernels/window.cu holds what every backend's windows run).
#include <new>

// NCCL 2.28's device headers have unused parameters in their GIN entry points; the
// warning is theirs, so it is silenced for their headers only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <nccl_device.h>
#pragma GCC diagnostic pop

#include "cuda/cudakern.h"
#include "winkern.h"

namespace {

__global__ void lsa_table_kernel(ncclWindow_t win, int n, void **table)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        table[i] = ncclGetLsaPointer(win, 0, i);
}

} // namespace

extern "C" cudaError_t gcsh_k_lsa_table(ncclWindow_t win, int n, void **table,
                                        cudaStream_t stream)
{
    if (n <= 0 || n > GCSH_MAX_TEAM || !win || !table)
        return cudaErrorInvalidValue;
    (void)cudaGetLastError(); // an earlier call's error is that call's (window.cu says why)
    lsa_table_kernel<<<(n + 127) / 128, 128, 0, stream>>>(win, n, table);
    return cudaGetLastError();
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
