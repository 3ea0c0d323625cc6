// Fault injection for tests (gcsh.debug.inject): a kernel that writes where
// no allocation is.  Never used outside GCSH_TEST_FAULTS=1 sessions.
#include "initkern.h"

namespace {

__global__ void oob_write_kernel(volatile unsigned long long *p)
{
    *p = 0xdeadbeefULL;
}

}  // namespace

extern "C" cudaError_t gcsh_k_fault_oob_write(cudaStream_t stream)
{
    // An address in the lowest page, which CUDA never maps: a certain
    // illegal address, not a silent corruption of some tensor.
    oob_write_kernel<<<1, 1, 0, stream>>>(reinterpret_cast<unsigned long long *>(0x100));
    return cudaGetLastError();
}
