/* One time line for the recorders (trace.c, flight.c): this rank's
 * monotonic clock, and its offset to rank 0's. */
#ifndef GCSH_TRACE_CLOCK_H
#define GCSH_TRACE_CLOCK_H

#include <stdint.h>

#include "core/gcsh.h"

/* Rank 0's clock minus this rank's, and the round trip it was measured
 * with (-1: not measured: the same host's clock, offset 0).  Collective
 * over MPI_COMM_WORLD; only ranks on other hosts than rank 0's ping. */
void gcsh_trace_clock(gcsh_ctx *ctx, const char *host, int64_t *offset, int64_t *rtt);
int64_t gcsh_trace_now(void);

#endif
