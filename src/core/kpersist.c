/* What both backends' persistent all-reduces say (core/kpersist.h,
 * host_persist.c, cuda_persist.c). */
#include "core/gcsh.h"
#include "core/kpersist.h"

int gcsh_persist_error_ended(gcsh_ctx *ctx, uint64_t completed, uint64_t rung, const char *why)
{
    return gcsh_set_error(ctx, "the persistent all-reduce ended after %llu of its %llu calls: %s",
                          (unsigned long long)completed, (unsigned long long)rung, why);
}

int gcsh_persist_error_interrupted(gcsh_ctx *ctx)
{
    return gcsh_set_error(ctx, "interrupted while the persistent all-reduce had calls in flight: "
                               "it is stopped, and its communicator aborted on every rank "
                               "(comm.world() makes a fresh one)");
}

int gcsh_persist_error_full(gcsh_ctx *ctx)
{
    return gcsh_set_error(ctx, "kernel.persistent: %d residents already run on this rank (the "
                               "most at once: each holds an SM or a thread); p:stop() one first",
                          GCSH_PERSIST_MAX_RUNNING);
}
