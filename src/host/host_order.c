/* The host backend's stream order.  On cuda, work is queued on the rank's
 * stream, so whatever the rank issues runs after what it issued before.
 * On the host every operation runs as it is called, with one exception:
 * the calls rung on a persistent all-reduce run on the rank's progress
 * threads (host_persist.c).  So every operation here that reads or writes
 * memory first waits until those threads completed the calls rung so far
 * (gcsh_host_persist_drain: nothing to wait for, and nearly free, when no
 * persistent all-reduce runs), then calls the host's own.  host_init
 * makes the rank's ctx->be this ordered copy of gcsh_host_backend (per
 * rank, in its backend state); the operations that touch no memory
 * (creation, release, control exchanges, rank and size) stay the host's own. */
#include <stdlib.h>

#include "core/gcsh.h"
#include "host/host.h"

/* The rows of backend.h marked ORDERED, in front of the host's own. */
#define HOST_TABLE_mem gcsh_host_mem_ops
#define HOST_TABLE_comm gcsh_host_comm_ops
#define HOST_TABLE_win gcsh_host_window_ops
#define HOST_TABLE_kern gcsh_host_kernel_ops
#define HOST_TABLE_xfer gcsh_host_xfer_ops
#define HOST_TABLE_graph gcsh_host_graph_ops

#define ORDERED_FN(tab, fn, ret, params, args, trace, cat, flags, capture, order, facts)          \
    ORDERED_FN_##order(tab, fn, params, args)
#define ORDERED_FN_FREELY(...)
#define ORDERED_FN_ORDERED(tab, fn, params, args)                                                  \
    static int ordered_##tab##_##fn params                                                         \
    {                                                                                              \
        if (gcsh_host_persist_drain(ctx) != 0)                                                     \
            return -1;                                                                             \
        return HOST_TABLE_##tab.fn args;                                                           \
    }
GCSH_BACKEND_OPS(ORDERED_FN)

#define SET_ORDERED(tab, fn, ret, params, args, trace, cat, flags, capture, order, facts)         \
    SET_ORDERED_##order(tab, fn)
#define SET_ORDERED_FREELY(tab, fn)
#define SET_ORDERED_ORDERED(tab, fn)                                                               \
    if (host->tab && host->tab->fn)                                                                \
        t->tables.tab.fn = ordered_##tab##_##fn;

struct gcsh_host_ordered {
    gcsh_backend_copy tables;
};

gcsh_host_ordered *gcsh_host_ordered_new(const gcsh_backend *host)
{
    gcsh_host_ordered *t = malloc(sizeof *t);
    if (!t)
        return NULL;
    gcsh_backend_copy_of(&t->tables, host);
    GCSH_BACKEND_OPS(SET_ORDERED)
    return t;
}

const gcsh_backend *gcsh_host_ordered_backend(const gcsh_host_ordered *t)
{
    return &t->tables.be;
}
