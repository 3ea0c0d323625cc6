/* ncclDevCommCreate/Destroy for the C reproducers beside it
 * (nccl_split_rss.c, built with -DWITH_WINDOWS): the requirements are a C++
 * struct of NCCL's device headers.  lsaMultimem stays false (no NVLink
 * multicast, ever); barrier counts as gcsh's windows ask (kernels/cuda/
 * ncclwin.cu).  Build: nvcc -c nccl_devcomm.cu */
#include <nccl.h>
#include <nccl_device.h>
#include <new>

extern "C" ncclResult_t bench_devcomm_create(ncclComm_t comm, int lsa_barriers, void **out)
{
    ncclDevComm *dc = new (std::nothrow) ncclDevComm();
    if (!dc)
        return ncclSystemError;
    ncclDevCommRequirements reqs = {};
    reqs.lsaMultimem = false;
    reqs.lsaBarrierCount = lsa_barriers;
    ncclResult_t r = ncclDevCommCreate(comm, &reqs, dc);
    if (r != ncclSuccess && r != ncclInProgress) {
        delete dc;
        return r;
    }
    *out = dc;
    return r;
}

extern "C" ncclResult_t bench_devcomm_destroy(ncclComm_t comm, void *dc)
{
    ncclResult_t r = ncclDevCommDestroy(comm, (ncclDevComm *)dc);
    delete (ncclDevComm *)dc;
    return r;
}
