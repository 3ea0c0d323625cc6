/* Rank 0's side of tracing (trace.h): starts and stops it on every rank,
 * collects the ranks' spans and writes the file; and the flight recorder's
 * file (flight.h): every rank's last calls, on a hang report, a crash, an
 * interrupt or .flight FILE. */
#ifndef GCSH_TRACE_COORD_H
#define GCSH_TRACE_COORD_H

#include "shell/coord.h"

typedef struct gcsh_tracer gcsh_tracer;

/* Listens to the coordinator (coord.h's hooks): hang reports, interrupts,
 * .abort and the session's sudden end write the trace (when on) and the
 * flight recorder's file; flight_path: --flight FILE, or NULL for the
 * default.  Freed with the coordinator. */
void gcsh_tracing_listen(gcsh_coord *c, const char *flight_path);

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
/* Whether tracing is on. */
int gcsh_tracer_on(gcsh_coord *c);

/* ---- the flight recorder's file (flight.h) ---- */

/* Where automatic dumps go: --flight FILE, else a file of gcsh's own
 * folder (private.h), DIR/gcsh-flight-PID-RANDOM.json, chosen once a
 * session, 0600; the newest 20 of them are kept.  NULL with why in why
 * when gcsh's folder is refused. */
const char *gcsh_flight_path(gcsh_coord *c, char *why, size_t len);
/* Between commands, or as the session ends: every rank's last calls
 * written to path (NULL: gcsh_flight_path) now; rank 0 reads the rings of
 * its node itself, the other ranks are asked and waited for a little.  why
 * goes into the file ("at .flight", "at an interrupt").  The calls
 * written, or -1 after saying why not. */
long gcsh_flight_write(gcsh_coord *c, const char *path, const char *why);

#endif
