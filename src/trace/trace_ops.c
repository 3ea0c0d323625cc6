/* Operation names and categories: see trace_ops.h. */
#include "trace/trace_ops.h"

#define OP_NAME(tab, fn, ret, params, args, trace, ...) OP_NAME_##trace(tab, fn)
#define OP_NAME_QUIET(tab, fn)
#define OP_NAME_TRACED(tab, fn) #tab "." #fn,
static const char *const op_names[] = {GCSH_BACKEND_OPS(OP_NAME) "lua", "collective", "check"};

#define OP_CAT(tab, fn, ret, params, args, trace, cat, ...) OP_CAT_##trace(cat)
#define OP_CAT_QUIET(cat)
#define OP_CAT_TRACED(cat) cat,
static const char *const op_cats[] = {GCSH_BACKEND_OPS(OP_CAT) "lua", "collective", "control"};

_Static_assert(sizeof op_names / sizeof *op_names == GCSH_TRACE_OP_COUNT, "a name an op");
_Static_assert(sizeof op_cats / sizeof *op_cats == GCSH_TRACE_OP_COUNT, "a category an op");

const char *gcsh_trace_op_name(uint32_t op)
{
    return op < GCSH_TRACE_OP_COUNT ? op_names[op] : "?";
}

const char *gcsh_trace_op_cat(uint32_t op)
{
    return op < GCSH_TRACE_OP_COUNT ? op_cats[op] : "?";
}

int gcsh_trace_op_signal(uint32_t op)
{
    if (op == GCSH_TRACE_OP_win_signal_set || op == GCSH_TRACE_OP_win_signal_add ||
        op == GCSH_TRACE_OP_xfer_post)
        return 1;
    return op == GCSH_TRACE_OP_win_signal_wait || op == GCSH_TRACE_OP_win_signal_wait_cpu ? 2 : 0;
}
