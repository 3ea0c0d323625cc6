/* The few CUDA driver calls the windows need (VMM: create, export, import,
 * map) and the persistent all-reduce's stream memory operations, reached through cudaGetDriverEntryPointByVersion so that the binary
 * never links libcuda and still starts on machines without a driver. */
#ifndef GCSH_CUDA_DRIVER_H
#define GCSH_CUDA_DRIVER_H

#include <cuda.h>
#include <cudaTypedefs.h>

typedef struct cuda_driver {
    int loaded;
    PFN_cuGetErrorString_v6000 GetErrorString;
    PFN_cuMemGetAllocationGranularity_v10020 MemGetAllocationGranularity;
    PFN_cuMemCreate_v10020 MemCreate;
    PFN_cuMemRelease_v10020 MemRelease;
    PFN_cuMemExportToShareableHandle_v10020 MemExportToShareableHandle;
    PFN_cuMemImportFromShareableHandle_v10020 MemImportFromShareableHandle;
    PFN_cuMemAddressReserve_v10020 MemAddressReserve;
    PFN_cuMemAddressFree_v10020 MemAddressFree;
    PFN_cuMemMap_v10020 MemMap;
    PFN_cuMemUnmap_v10020 MemUnmap;
    PFN_cuMemSetAccess_v10020 MemSetAccess;
    PFN_cuStreamWriteValue64_v11070 StreamWriteValue64; /* the persistent all-reduce */
    PFN_cuStreamWaitValue64_v11070 StreamWaitValue64;
} cuda_driver;

#endif
