/* Rank 0's side of tracing (trace.h): starts and stops it on every rank,
 * collects the ranks' spans and writes the file. */
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
 * their spans.  0, or -1 after saying why the file could not be written.
 * Nothing (0) when tracing is off. */
int gcsh_tracer_stop(gcsh_coord *c);
/* Says where the trace goes, or that it is off. */
void gcsh_tracer_say(gcsh_coord *c);

/* While a command runs (a hang report): asks every rank for a copy of its
 * spans; each answer (gcsh_tracer_take, from the coordinator's message
 * handler) rewrites the file. */
void gcsh_tracer_request(gcsh_coord *c);
void gcsh_tracer_take(gcsh_coord *c, int rank, const char *data, size_t len);
/* Now, waiting a little for the answers: after an .abort, before the
 * session ends on a lost rank or a device fault.  why goes into the file. */
void gcsh_tracer_snapshot(gcsh_coord *c, const char *why);

#endif
