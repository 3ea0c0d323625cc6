/* The flight recorder: every rank keeps its last N gcsh calls (N =
 * GCSH_FLIGHT_CALLS, default 2000; 0 turns it off) with their arguments,
 * call numbers, the collective and sequence number they belong to, the Lua
 * file:line that made them and their state (running, issued, done,
 * failed), as PyTorch's NCCL flight recorder keeps collectives.  Recording
 * is a few stores into a ring (trace.c calls it for every call that passes
 * the recording table); nothing is sent anywhere.
 *
 * The rings of the ranks on rank 0's node live in node shared memory
 * (MPI_Win_allocate_shared at start-up, as the check board): rank 0 reads
 * them without the ranks' help, so a rank stuck in a wait, or dead, still
 * tells its last calls; if rank 0 itself dies, its heir reads them
 * (rank/heir.h).  A rank elsewhere keeps its ring in its own memory
 * and sends a copy when asked (MSG_FLIGHT_FLUSH, answered by its watcher).
 * Rank 0 writes them as one trace file (trace_coord.h) on a hang report, a
 * crash, an interrupt or .flight FILE.
 *
 * Each slot is written under a sequence number (its call number, 0 while
 * the slot is rewritten), so a reader copies a slot whole or skips it. */
#ifndef GCSH_FLIGHT_H
#define GCSH_FLIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "core/gcsh.h"
#include "trace/trace_rec.h"

typedef struct gcsh_flight gcsh_flight;

#define GCSH_FLIGHT_CALLS_DEFAULT 2000

/* Collective over MPI_COMM_WORLD at start-up, before any thread: every
 * rank's ring (the clock offset to rank 0 measured for ranks on other
 * hosts).  NULL when GCSH_FLIGHT_CALLS is 0 (on every rank alike). */
gcsh_flight *gcsh_flight_open(gcsh_ctx *ctx);
/* Collective again, at the end. */
void gcsh_flight_close(gcsh_flight *f);

/* The worker: a call begins (r: what it is, its call number r->id);
 * label is its collective's name, text the Lua file:line (a Lua line: its
 * source).  Returns its slot, for end. */
int gcsh_flight_begin(gcsh_flight *f, const gcsh_trace_rec *r, const char *label,
                      const char *text);
/* The call in slot (number id) ended at t1 in state (enum gcsh_call_state). */
void gcsh_flight_end(gcsh_flight *f, int slot, uint64_t id, int64_t t1, int state);
/* A wait for the rank's stream passed: the calls issued up to call number
 * id are done. */
void gcsh_flight_synced(gcsh_flight *f, uint64_t id);

/* Whether this process can read rank r's ring (its own; on rank 0's
 * node: every rank of that node). */
int gcsh_flight_readable(const gcsh_flight *f, int r);
/* Rank r's ring as a trace blob (trace.h; malloc'd, *len bytes), the
 * calls in number order, those not finished with t1 = -1.  NULL when
 * unreadable. */
void *gcsh_flight_blob(gcsh_flight *f, int r, size_t *len);
/* The same with only its `newest` calls (a dump that must be quick:
 * the session ending as mpirun kills the job). */
void *gcsh_flight_blob_last(gcsh_flight *f, int r, size_t newest, size_t *len);
/* Whether this rank is rank 0's heir: the lowest other rank on rank 0's
 * node, which reads every ring there and writes the flight file if rank 0
 * dies (rank/heir.h).  0 when the rings are not shared. */
int gcsh_flight_heir(const gcsh_flight *f);
/* The calls a ring keeps. */
size_t gcsh_flight_size(const gcsh_flight *f);

#endif
