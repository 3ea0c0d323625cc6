/* The network path of a GPU backend's windows (gpu_net.c): one-sided
 * operations on the slice of a rank on another node, where NVLink loads
 * and stores do not reach.  The protocol is core/netpath.c's; the origin's
 * side and the window's bookkeeping are here, every GPU backend alike; how
 * the target applies a request to device memory is the device runtime's
 * (gpu_rt.h: net_server; cuda: its proxy, cuda_net.c). */
#ifndef GCSH_GPU_NET_H
#define GCSH_GPU_NET_H

#include "gpu/gpu_window.h"

/* A rank's network path, in its device state (gpu_rt.h: net). */
struct gcsh_gpu_net {
    gcsh_netpath *server; /* started with the first window spanning nodes */
    void *stage;          /* the origin's staging: GCSH_NETPATH_CHUNK host bytes */
};

/* In a window's last stage, collective over its communicator (every rank,
 * failed or not): when it spans several nodes, my slice served to the
 * others and their addresses gathered.  0, or -1 (failed: -1). */
int gpu_net_share(gcsh_ctx *ctx, gcsh_gpu_dev *st, gcsh_window_impl *w, gcsh_window_desc *d,
                  int failed, char *report, size_t len);
/* Before the slice's memory goes: no longer served. */
void gpu_net_forget(gcsh_gpu_dev *st, gcsh_window_impl *w);
/* Stops the server (its thread ends first) and frees the staging buffer:
 * before the device goes, and before what the server's callbacks use. */
void gpu_net_stop(gcsh_gpu_net *n);

#endif
