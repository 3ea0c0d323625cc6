/* gcsh.graph on a GPU backend (gpu_graph.c): the record of a capture and
 * its replays, every backend alike; the capture itself is the device
 * runtime's (gpu_rt.h: capture_begin ... graph_free).  A backend's table:
 *
 *     const gcsh_graph_ops gcsh_cuda_graph_ops = {.pass_down = 1, GCSH_GPU_GRAPH_OPS};
 */
#ifndef GCSH_GPU_GRAPH_H
#define GCSH_GPU_GRAPH_H

#include "gpu/gpu_rt.h"

/* The graph operations of backend.h's list, gpu_graph_<row>. */
#define GPU_GRAPH_DECLARE(tab, fn, ret, params, ...) ret gpu_graph_##fn params;
GCSH_GRAPH_OPS(GPU_GRAPH_DECLARE)
#undef GPU_GRAPH_DECLARE

#define GPU_GRAPH_FIELD(tab, fn, ...) .fn = gpu_graph_##fn,
#define GCSH_GPU_GRAPH_OPS GCSH_GRAPH_OPS(GPU_GRAPH_FIELD)

#endif
