/* GCSH_HD marks helpers that compile for both the host and CUDA devices, so
 * the host backend and the kernels compute elements with the same code. */
#ifndef GCSH_HD_H
#define GCSH_HD_H

#ifdef __CUDACC__
#define GCSH_HD __host__ __device__
#else
#define GCSH_HD
#endif

#endif
