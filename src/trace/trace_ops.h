/* The operations a record names: backend.h's rows marked TRACED, in
 * order, then the records of the layers above the backend.  The same ids,
 * names and categories in every process of one build. */
#ifndef GCSH_TRACE_OPS_H
#define GCSH_TRACE_OPS_H

#include <stdint.h>

#include "core/backend.h"

#define GCSH_TRACE_OP_ID(tab, fn, ret, params, args, trace, ...) GCSH_TRACE_OP_ID_##trace(tab, fn)
#define GCSH_TRACE_OP_ID_QUIET(tab, fn)
#define GCSH_TRACE_OP_ID_TRACED(tab, fn) GCSH_TRACE_OP_##tab##_##fn,
enum gcsh_trace_op {
    GCSH_BACKEND_OPS(GCSH_TRACE_OP_ID)
    GCSH_TRACE_OP_LUA,   /* a Lua line */
    GCSH_TRACE_OP_COLL,  /* a collective: parent of its check and calls */
    GCSH_TRACE_OP_CHECK, /* its check */
    GCSH_TRACE_OP_COUNT
};

/* "comm.allreduce", and its category ("collective"); "?" for no op. */
const char *gcsh_trace_op_name(uint32_t op);
const char *gcsh_trace_op_cat(uint32_t op);
/* Signal operations, for the flows from what releases a wait to the wait:
 * 0 none, 1 a set or add (or a put with a signal), 2 a wait. */
int gcsh_trace_op_signal(uint32_t op);

#endif
