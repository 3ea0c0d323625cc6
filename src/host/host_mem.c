/* Host memory and the element-wise initialisers as C loops.  The values come
 * from elementwise.h, which the cuda kernels use too, so both backends write
 * the same bits. */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/elementwise.h"
#include "core/gcsh.h"
#include "core/orphans.h"
#include "host/host.h"

/* Cache-line alignment: what vector loops and MPI like; also >= any dtype. */
#define HOST_ALIGN 64

/* Bytes of physical memory, or 0 when the system will not say. */
static size_t physical_memory_bytes(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0)
        return 0;
    return (size_t)pages * (size_t)page_size;
}

static int host_alloc(gcsh_ctx *ctx, size_t bytes, void **out, int *loc)
{
    /* More than the machine's RAM can only end in the OOM killer at first
     * touch (with overcommit) or in a sanitizer abort: refuse it up front,
     * so the answer is the same clean error everywhere. */
    if (ctx->inject_oom) {
        ctx->inject_oom = 0;
        return gcsh_set_error(ctx, "out of host memory: cannot allocate %zu bytes (injected by "
                                   "gcsh.debug.inject)", bytes);
    }
    size_t ram = physical_memory_bytes();
    if (ram && bytes > ram)
        return gcsh_set_error(ctx, "out of host memory: cannot allocate %zu bytes (this host has %zu)",
                              bytes, ram);
    void *p = NULL;
    /* A zero-byte request still gets a unique, non-NULL block so that a live
     * empty tensor is told apart from a released one (base == NULL). */
    if (posix_memalign(&p, HOST_ALIGN, bytes ? bytes : 1) != 0)
        return gcsh_set_error(ctx, "out of host memory: cannot allocate %zu bytes", bytes);
    *out = p;
    *loc = GCSH_LOC_HOST;
    return 0;
}

/* A collective that an interrupt abandoned may still write this memory
 * (orphans.h): then it is freed once MPI is done with it. */
static void host_release(gcsh_ctx *ctx, void *p, int loc)
{
    (void)loc;
    gcsh_orphans_free(ctx->orphans, p, malloc_usable_size(p), free);
}

/* Views of one storage may overlap, hence memmove. */
static int host_copy(gcsh_ctx *ctx, void *dst, int dst_loc, const void *src, int src_loc,
                     size_t bytes)
{
    (void)ctx;
    (void)dst_loc;
    (void)src_loc;
    if (bytes)
        memmove(dst, src, bytes);
    return 0;
}

/* Encodes the value once, then doubles the filled prefix with memcpy: one
 * generic loop for every element size, log2(n) calls. */
static int host_fill(gcsh_ctx *ctx, void *p, int loc, gcsh_dtype dt, size_t n, gcsh_scalar v)
{
    (void)ctx;
    (void)loc;
    if (n == 0)
        return 0;
    const size_t size = gcsh_dtype_size(dt), total = n * size;
    unsigned char *bytes = p;
    gcsh_elem_store_scalar(p, dt, 0, v);
    for (size_t done = size; done < total;) {
        size_t chunk = done < total - done ? done : total - done;
        memcpy(bytes + done, bytes, chunk);
        done += chunk;
    }
    return 0;
}

static int host_arange(gcsh_ctx *ctx, void *p, int loc, gcsh_dtype dt, size_t n,
                       gcsh_scalar start, gcsh_scalar step)
{
    (void)ctx;
    (void)loc;
    for (size_t i = 0; i < n; i++)
        gcsh_elem_arange(p, dt, i, start, step);
    return 0;
}

static int host_rand(gcsh_ctx *ctx, void *p, int loc, gcsh_dtype dt, size_t n, uint64_t seed)
{
    (void)ctx;
    (void)loc;
    for (size_t i = 0; i < n; i++)
        gcsh_elem_rand(p, dt, i, seed);
    return 0;
}

/* Host operations complete before they return: nothing is queued (but a
 * test can make this wait fail, as an asynchronous GPU error would). */
static int host_sync(gcsh_ctx *ctx)
{
    if (ctx->inject_async) {
        ctx->inject_async = 0;
        return gcsh_set_error(ctx, "injected asynchronous error (gcsh.debug.inject, standing in "
                                   "for an error of work still on a GPU stream)");
    }
    return 0;
}

static int host_timer_begin(gcsh_ctx *ctx, void **tok)
{
    struct timespec *t0 = malloc(sizeof *t0);
    if (!t0)
        return gcsh_set_error(ctx, "out of host memory: cannot allocate a timer");
    clock_gettime(CLOCK_MONOTONIC, t0);
    *tok = t0;
    return 0;
}

static int host_timer_end(gcsh_ctx *ctx, void *tok, double *seconds)
{
    (void)ctx;
    struct timespec t1, *t0 = tok;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *seconds = (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) * 1e-9;
    free(t0);
    return 0;
}

const gcsh_mem_ops gcsh_host_mem_ops = {
    .alloc = host_alloc,
    .release = host_release,
    .copy = host_copy,
    .fill = host_fill,
    .arange = host_arange,
    .rand = host_rand,
    .sync = host_sync,
    .timer_begin = host_timer_begin,
    .timer_end = host_timer_end,
};
