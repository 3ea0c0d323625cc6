/* Rank 0's side of tracing (trace.h): starts and stops it on every rank,
 * collects the ranks' spans and writes the file; and the flight recorder's
 * file (flight.h): every rank's last calls, on a hang report, a crash, an
 * interrupt or .flight FILE. */
#ifndef GCSH_TRACE_COORD_H
#define GCSH_TRACE_COORD_H

#include "shell/coord.h"

typedef struct gcsh_tracer gcsh_tracer;

/* Between commands: every rank starts tracing (ctx->be becomes the traced
 * table, clocks are measured); path is written at once (an empty trace),
 * so an unwritable one is refused here.  0, or after saying why the exit
 * status it gives: GCSH_EXIT_USAGE (the file is refused), GCSH_EXIT_SKIP. */
int gcsh_tracer_start(gcsh_coord *c, const char *path);
/* Between commands: every rank stops, and the file is written with all
 * their spans (the most recent GCSH_TRACE_EVENTS of each rank; how many
 * older ones were dropped is said).  0, or -1 after saying why the file could not be written.
 * Nothing (0) when tracing is off. */
int gcsh_tracer_stop(gcsh_coord *c);
/* Says where the trace goes, or that it is off. */
void gcsh_tracer_say(gcsh_coord *c);

/* gcsh_flight_write to the automatic dump's file, said in one line: after
 * an interrupt, as the session ends at once. */
void gcsh_flight_dump(gcsh_coord *c, const char *why);
/* While a command runs (a hang report): asks every rank for a copy of its
 * spans; each answer (gcsh_tracer_take, from the coordinator's message
 * handler) rewrites the file. */
void gcsh_tracer_request(gcsh_coord *c);
void gcsh_tracer_take(gcsh_coord *c, int rank, const char *data, size_t len);
/* Now, waiting a little for the answers: after an .abort, before the
 * session ends on a lost rank or a device fault.  why goes into the file.
 * A rank that died is written from its last copy and its flight recorder. */
void gcsh_tracer_snapshot(gcsh_coord *c, const char *why);

/* ---- the flight recorder's file (flight.h) ---- */

/* Where automatic dumps go: --flight FILE (c->flight_path), else
 * $TMPDIR/gcsh-flight-PID.json (into buf). */
const char *gcsh_flight_path(gcsh_coord *c, char *buf, size_t len);
/* Between commands, or as the session ends: every rank's last calls
 * written to path (NULL: gcsh_flight_path) now; rank 0 reads the rings of
 * its node itself, the other ranks are asked and waited for a little.  why
 * goes into the file ("at .flight", "at an interrupt").  The calls
 * written, or -1 after saying why not. */
long gcsh_flight_write(gcsh_coord *c, const char *path, const char *why);
/* gcsh_flight_write to the automatic dump's file, said in one line: after
 * an interrupt, as the session ends at once. */
void gcsh_flight_dump(gcsh_coord *c, const char *why);
/* While a command runs (a hang report): written at once with what rank 0
 * reads itself, and again as the other ranks' copies come
 * (gcsh_flight_take, from the coordinator's message handler); said once
 * per command. */
void gcsh_flight_request(gcsh_coord *c, const char *why);
void gcsh_flight_take(gcsh_coord *c, int rank, const char *data, size_t len);
void gcsh_flight_out_free(gcsh_coord *c);

#endif
