/* The rank's whereabouts (where.c): what it waits in, and the Lua line it
 * runs, for hang reports and fault reports (collcheck.h tells the story). */
#ifndef GCSH_WIRE_WHERE_H
#define GCSH_WIRE_WHERE_H

#include <stddef.h>

#include "core/gcsh.h"

/* Publishes a blocking wait for other ranks that is not a checked operation
 * (a signal wait, a transfer): "in <what>" until gcsh_where_end.  _alone: a
 * wait of the rank's own (gcsh.sleep), which is no reason for a hang report. */
void gcsh_where_begin(gcsh_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gcsh_where_begin_alone(gcsh_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void gcsh_where_end(gcsh_ctx *ctx);

/* A communicator as hang reports name it: "world", or "comm 1a2b3c". */
struct gcsh_comm_check;
const char *gcsh_comm_name(const struct gcsh_comm_check *cc, char *buf, size_t len);

/* Watcher thread, answering MSG_WHERE.  First, holding the worker's run
 * lock while a chunk runs: arms the one-shot line sample (returns whether it
 * did).  Then: writes where the worker is into buf, waiting up to 100 ms for
 * an armed sample; returns 1 when it waits for other ranks (a checked
 * operation, gcsh_where_begin), 0 while it runs its own Lua or C. */
int gcsh_where_sample_arm(gcsh_ctx *ctx);
int gcsh_where_report(gcsh_ctx *ctx, int running, int armed, char *buf, size_t len);

#endif
