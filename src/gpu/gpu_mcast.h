/* w:multicast()'s decision on a GPU backend (gpu_mcast.c): the kernel
 * table's mc_open (backend.h) of every GPU backend. */
#ifndef GCSH_GPU_MCAST_H
#define GCSH_GPU_MCAST_H

#include "gpu/gpu_rt.h"

int gpu_kern_mc_open(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                     gcsh_mcast *out);

#endif
