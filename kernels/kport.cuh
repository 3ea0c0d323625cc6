// The device primitives gcsh's generic kernels are written against, so that
// a second GPU backend maps them instead of copying the kernels: 64-bit
// atomics at a scope (device: this GPU; system: other GPUs and the host)
// with a memory order, fences at those scopes, the GPU's clock in
// nanoseconds, a sleep, and a 16-byte line stored and loaded whole with no
// caching (the ll protocol's flags ride in it).  Names, in namespace
// gcsh_k:
//
//   Scope, kScopeDevice, kScopeSystem      a scope, as a template argument
//   atomic_u64<Scope>, sys_atomic          a reference to a 64-bit word
//   kRelaxed, kAcquire, kRelease, kAcqRel, kSeqCst   memory orders
//   fence_device(), fence_system(), fence_seq_cst_system()
//   globaltimer(), sleep_ns(ns)
//   store_line(p, uint4), load_line(p)
//
// Each backend's mapping is a header of its folder (CUDA's:
// kernels/cuda/kport.cuh); atomicAdd/atomicMax and __syncthreads keep their
// names, which every GPU C++ dialect gcsh could target shares.
#ifndef GCSH_KERNELS_KPORT_CUH
#define GCSH_KERNELS_KPORT_CUH

#include "cuda/kport.cuh"

#endif
