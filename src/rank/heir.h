/* Rank 0 died: the evidence it would have written, written by the others
 * (issue 36: evidence survives any rank's death).
 *
 * Rank 0 writes the flight file and the trace when another rank dies; when
 * rank 0 itself dies (a crash, kill -9), every other rank sees its control
 * channel close and ends with GCSH_EXIT_LOST.  Before it does:
 *  - with a trace on, each rank leaves a copy of its spans in gcsh's own
 *    folder (private.h), named by the job;
 *  - the heir (flight.h: the lowest other rank on rank 0's node, which reads
 *    every ring there; rank 1 when the flight recorder is off) writes the
 *    flight file (--flight FILE, or a new one in gcsh's folder) from the
 *    rings, and the trace from the copies that came within HEIR_WAIT_S,
 *    rank 0's part (and a rank that left none) from its ring: its last
 *    known calls.
 * Rings of ranks on other nodes are not shared: the heir writes only those
 * of rank 0's node. */
#ifndef GCSH_HEIR_H
#define GCSH_HEIR_H

#include "core/gcsh.h"

/* flight: --flight FILE or NULL (a new file in gcsh's folder); trace:
 * --trace FILE or NULL (not tracing at start).  Says what it wrote on
 * stderr.  Called once, from the watcher, with rank 0 gone. */
void gcsh_heir_write(gcsh_ctx *ctx, const char *flight, const char *trace);

#endif
