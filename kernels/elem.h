/* The per-element initialisers the kernels call, under the names and
 * signatures of the tensor branch's src/elementwise.h (gcsh_elem_store_scalar,
 * gcsh_elem_arange, gcsh_elem_rand), which the host backend's loops use.
 *
 * Until that branch is merged they are defined here over dtype_hd.h and
 * rand_hd.h; after the merge this header shrinks to #include "elementwise.h"
 * and both backends run literally the same element code. */
#ifndef GCSH_KERNELS_ELEM_H
#define GCSH_KERNELS_ELEM_H

#include "dtype_hd.h"
#include "rand_hd.h"

GCSH_HD void gcsh_elem_store_scalar(void *base, gcsh_dtype dt, size_t i, gcsh_scalar v)
{
    gcsh_hd_store_bits(base, gcsh_hd_dtype_size(dt), i, gcsh_hd_bits_scalar(dt, v));
}

GCSH_HD void gcsh_elem_arange(void *base, gcsh_dtype dt, size_t i, gcsh_scalar start,
                              gcsh_scalar step)
{
    gcsh_hd_store_bits(base, gcsh_hd_dtype_size(dt), i, gcsh_hd_arange_bits(dt, start, step, i));
}

GCSH_HD void gcsh_elem_rand(void *base, gcsh_dtype dt, size_t i, uint64_t seed)
{
    gcsh_hd_store_bits(base, gcsh_hd_dtype_size(dt), i, gcsh_hd_rand_bits(dt, seed, i));
}

#endif
