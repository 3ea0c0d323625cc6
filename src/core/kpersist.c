/* What both backends' persistent all-reduces say, and how their host sides
 * fill and read ring entries (core/kpersist.h, host_persist.c,
 * cuda_persist.c). */
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

void gcsh_persist_fill(gcsh_persist_entry *e, uint64_t call, const gcsh_persist_job *j, int pairs)
{
    for (int i = 0; i < pairs; i++)
        __atomic_store_n(&e->pair[i], gcsh_persist_pair(j, call, i), __ATOMIC_RELEASE);
}

int gcsh_persist_read(const gcsh_persist_entry *e, uint64_t call, gcsh_persist_job *j)
{
    uint32_t w[8];
    for (int i = 0; i < 4; i++) {
        uint64_t pair = __atomic_load_n(&e->pair[i], __ATOMIC_ACQUIRE);
        w[2 * i] = (uint32_t)pair;
        w[2 * i + 1] = (uint32_t)(pair >> 32);
    }
    return gcsh_persist_unpack(w, call, j);
}
