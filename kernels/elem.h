/* The per-element initialisers the kernels call: the host backend's own
 * (src/core/elementwise.h), so both backends run literally the same element code. */
#ifndef GCSH_KERNELS_ELEM_H
#define GCSH_KERNELS_ELEM_H

#include "core/elementwise.h"

#endif
