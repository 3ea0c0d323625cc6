/* Driver entry points through the runtime (no -lcuda at link time). */
#include <string.h>

#include "cuda/cuda.h"

/* The ABI versions the PFN_*_v* typedefs describe. */
#define DRV_VERSION 12000

static int load_one(gcsh_ctx *ctx, const char *sym, void **fn)
{
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    cudaError_t e = cudaGetDriverEntryPointByVersion(sym, fn, DRV_VERSION, cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !*fn)
        return gcsh_set_error(ctx, "CUDA driver entry point %s not found (%s, query %d)", sym,
                              cudaGetErrorString(e), (int)q);
    return 0;
}

#define LOAD(name) load_one(ctx, "cu" #name, (void **)&d.name)

int cuda_driver_load(gcsh_ctx *ctx, cuda_state *st)
{
    if (st->drv.loaded)
        return 0;
    cuda_driver d;
    memset(&d, 0, sizeof d);
    if (LOAD(GetErrorString) || LOAD(MemGetAllocationGranularity) || LOAD(MemCreate) ||
        LOAD(MemRelease) || LOAD(MemExportToShareableHandle) ||
        LOAD(MemImportFromShareableHandle) || LOAD(MemAddressReserve) || LOAD(MemAddressFree) ||
        LOAD(MemMap) || LOAD(MemUnmap) || LOAD(MemSetAccess) || LOAD(StreamWriteValue64) ||
        LOAD(StreamWaitValue64))
        return -1;
    d.loaded = 1;
    st->drv = d;
    return 0;
}

int cu_error(gcsh_ctx *ctx, cuda_state *st, const char *file, int line, const char *call,
             CUresult r)
{
    const char *s = NULL;
    if (st->drv.GetErrorString)
        st->drv.GetErrorString(r, &s);
    return gcsh_set_error(ctx, "%s:%d: cu%s: %s (CUresult %d)", file, line, call,
                          s ? s : "unknown error", (int)r);
}

int cuda_device_attribute(int dev, CUdevice_attribute attr, int *v)
{
    PFN_cuDeviceGetAttribute_v2000 get_attr = NULL;
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    *v = 0;
    if (cudaGetDriverEntryPointByVersion("cuDeviceGetAttribute", (void **)&get_attr, DRV_VERSION,
                                         cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !get_attr)
        return -1;
    return get_attr(v, attr, dev) == CUDA_SUCCESS ? 0 : -1;
}
