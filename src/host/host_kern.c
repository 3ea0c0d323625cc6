/* The host backend's reduce kernels: C loops over the same peer pointer
 * table the cuda kernels take.  Host windows are MPI shared memory, so the
 * loads and stores below are real loads and stores into other ranks' memory.
 *
 * The collectives synchronise like the cuda kernels (kern.h: one word per
 * member in every slice's sync area, barrier numbers that only grow), with
 * C11 atomics: each rank stores the barrier's number into its word of every
 * peer's area with release ordering, then waits with acquire loads until
 * each member's word in its own area has reached it.  The host runs one
 * "block", so only the first row of the area is used.  Waits are
 * host_wait.c's, and end on an interrupt (Ctrl-C). */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elementwise.h"
#include "gcsh.h"
#include "host/host.h"


/* ---- one job: k sources reduced into m destinations ------------------------ */

/* Element loops per dtype, each in its accumulator type (kern.h). */
static void job_f32(const gcsh_kjob *j)
{
    for (size_t i = 0; i < j->n; i++) {
        float acc = ((const float *)j->src[0])[i];
        for (int s = 1; s < j->k; s++)
            acc = gcsh_kern_combine_f32(acc, ((const float *)j->src[s])[i], j->op);
        for (int d = 0; d < j->m; d++)
            ((float *)j->dst[d])[i] = acc;
    }
}

/* f16 and bf16: widened exactly to f32, combined in f32, rounded once. */
static void job_half(const gcsh_kjob *j, double (*widen)(uint16_t), uint16_t (*narrow)(double))
{
    for (size_t i = 0; i < j->n; i++) {
        float acc = (float)widen(((const uint16_t *)j->src[0])[i]);
        for (int s = 1; s < j->k; s++)
            acc = gcsh_kern_combine_f32(acc, (float)widen(((const uint16_t *)j->src[s])[i]),
                                        j->op);
        uint16_t bits = narrow((double)acc);
        for (int d = 0; d < j->m; d++)
            ((uint16_t *)j->dst[d])[i] = bits;
    }
}

static void job_f16(const gcsh_kjob *j)
{
    job_half(j, gcsh_f16_bits_to_f64, gcsh_f64_to_f16_bits);
}

static void job_bf16(const gcsh_kjob *j)
{
    job_half(j, gcsh_bf16_bits_to_f64, gcsh_f64_to_bf16_bits);
}

static void job_int(const gcsh_kjob *j, uint32_t (*combine)(uint32_t, uint32_t, int))
{
    for (size_t i = 0; i < j->n; i++) {
        uint32_t acc = ((const uint32_t *)j->src[0])[i];
        for (int s = 1; s < j->k; s++)
            acc = combine(acc, ((const uint32_t *)j->src[s])[i], j->op);
        for (int d = 0; d < j->m; d++)
            ((uint32_t *)j->dst[d])[i] = acc;
    }
}

static void job_i32(const gcsh_kjob *j)
{
    job_int(j, gcsh_kern_combine_i32);
}

static void job_u32(const gcsh_kjob *j)
{
    job_int(j, gcsh_kern_combine_u32);
}

/* The dispatch table: one loop per dtype the kernels take (gcsh_kern_ops_of). */
static void (*const job_loops[GCSH_NDTYPES])(const gcsh_kjob *) = {
    [GCSH_F32] = job_f32, [GCSH_F16] = job_f16, [GCSH_BF16] = job_bf16,
    [GCSH_I32] = job_i32, [GCSH_U32] = job_u32,
};

static int host_reduce(gcsh_ctx *ctx, const gcsh_kjob *j)
{
    if ((unsigned)j->dt >= GCSH_NDTYPES || !job_loops[j->dt])
        return gcsh_set_error(ctx, "host kernels: no loop for %s", gcsh_dtype_name(j->dt));
    job_loops[j->dt](j);
    return 0;
}

/* ---- barriers on the sync words ------------------------------------------------ */

static _Atomic uint64_t *sync_word(const gcsh_window_desc *d, size_t sync_off, int owner,
                                   int src)
{
    return (_Atomic uint64_t *)((char *)d->peer[owner] + sync_off) + src;
}

static int wait_word(gcsh_ctx *ctx, _Atomic uint64_t *word, uint64_t value)
{
    return gcsh_host_wait_word(ctx, word, GCSH_CMP_GE, value, INFINITY,
                               "kernel collective interrupted while waiting for a peer");
}

/* Every member's writes before its barrier are visible to every member
 * after it. */
static int barrier(gcsh_ctx *ctx, const gcsh_window_desc *d, const gcsh_kcoll_args *a)
{
    uint64_t value = ++*a->epoch;
    int me = d->team_rank;
    for (int p = 0; p < d->team_size; p++)
        atomic_store_explicit(sync_word(d, a->sync_off, p, me), value, memory_order_release);
    for (int p = 0; p < d->team_size; p++)
        if (wait_word(ctx, sync_word(d, a->sync_off, me, p), value) != 0)
            return -1;
    return 0;
}

/* ---- the collectives -------------------------------------------------------------- */

typedef struct region {
    const gcsh_window_desc *d;
    size_t esize;
} region;

/* Element `elem` of member p's slice. */
static char *at(const region *r, int p, size_t elem)
{
    return (char *)r->d->peer[p] + elem * r->esize;
}

static gcsh_kjob job_of(const gcsh_kcoll_args *a, size_t n)
{
    gcsh_kjob j;
    memset(&j, 0, sizeof j);
    j.n = n;
    j.dt = a->dt;
    j.op = a->op;
    return j;
}

/* Every member's [first, first + n) as the sources. */
static void all_sources(gcsh_kjob *j, const region *r, size_t first)
{
    j->k = r->d->team_size;
    for (int p = 0; p < j->k; p++)
        j->src[p] = at(r, p, first);
}

/* One-shot: everyone reads everyone; in place, the result is written only
 * after the second barrier, when no peer reads my slice any more. */
static int oneshot(gcsh_ctx *ctx, const region *r, const gcsh_kcoll_args *a)
{
    void *tmp = a->out ? a->out : malloc(a->n * r->esize);
    if (!tmp)
        return gcsh_set_error(ctx, "host kernels: out of host memory");
    gcsh_kjob j = job_of(a, a->n);
    all_sources(&j, r, a->offset);
    j.dst[0] = tmp;
    j.m = 1;
    int rc = barrier(ctx, r->d, a);
    if (rc == 0)
        rc = host_reduce(ctx, &j);
    if (rc == 0)
        rc = barrier(ctx, r->d, a);
    if (rc == 0 && !a->out)
        memcpy(at(r, r->d->team_rank, a->offset), tmp, a->n * r->esize);
    if (!a->out)
        free(tmp);
    return rc;
}

/* Two-shot: member r reduces chunk r from every slice and stores the result
 * into every slice; nobody else touches chunk r, so it is done in place. */
static int twoshot(gcsh_ctx *ctx, const region *r, const gcsh_kcoll_args *a)
{
    size_t k = (size_t)r->d->team_size, me = (size_t)r->d->team_rank;
    size_t chunk = (a->n + k - 1) / k;
    size_t first = me * chunk < a->n ? me * chunk : a->n;
    size_t count = a->n - first < chunk ? a->n - first : chunk;
    gcsh_kjob j = job_of(a, count);
    all_sources(&j, r, a->offset + first);
    j.m = j.k;
    for (int p = 0; p < j.m; p++)
        j.dst[p] = (void *)j.src[p];
    if (barrier(ctx, r->d, a) != 0 || (count && host_reduce(ctx, &j) != 0) ||
        barrier(ctx, r->d, a) != 0)
        return -1;
    if (a->out)
        memcpy(a->out, at(r, (int)me, a->offset), a->n * r->esize);
    return 0;
}

/* The job between the two barriers of the collectives that need no more. */
static int fenced_job(gcsh_ctx *ctx, const region *r, const gcsh_kcoll_args *a, int active,
                      const gcsh_kjob *j)
{
    if (barrier(ctx, r->d, a) != 0 || (active && host_reduce(ctx, j) != 0))
        return -1;
    return barrier(ctx, r->d, a);
}

static int host_collective(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                           const gcsh_kcoll_args *a)
{
    (void)w;
    region r = {d, gcsh_dtype_size(a->dt)};
    int me = d->team_rank, k = d->team_size;
    size_t chunk = a->n / (size_t)k; /* reduce_scatter and allgather: n divisible by k */
    gcsh_kjob j;
    int rc;
    switch (a->coll) {
    case GCSH_KC_ONESHOT: return oneshot(ctx, &r, a);
    case GCSH_KC_TWOSHOT: return twoshot(ctx, &r, a);
    case GCSH_KC_REDUCE_TO:
        j = job_of(a, a->n);
        all_sources(&j, &r, a->offset);
        j.dst[0] = a->out ? a->out : at(&r, me, a->offset);
        j.m = 1;
        return fenced_job(ctx, &r, a, me == a->root, &j);
    case GCSH_KC_REDUCE_SCATTER:
        j = job_of(a, chunk);
        all_sources(&j, &r, a->offset + (size_t)me * chunk);
        j.dst[0] = a->out ? a->out : at(&r, me, a->offset + (size_t)me * chunk);
        j.m = 1;
        return fenced_job(ctx, &r, a, 1, &j);
    case GCSH_KC_ALLGATHER:
        j = job_of(a, chunk);
        j.src[0] = at(&r, me, a->offset + (size_t)me * chunk);
        j.k = 1;
        j.m = k;
        for (int p = 0; p < k; p++)
            j.dst[p] = at(&r, p, a->offset + (size_t)me * chunk);
        rc = fenced_job(ctx, &r, a, 1, &j);
        if (rc == 0 && a->out)
            memcpy(a->out, at(&r, me, a->offset), a->n * r.esize);
        return rc;
    case GCSH_KC_BROADCAST:
        j = job_of(a, a->n);
        j.src[0] = at(&r, a->root, a->offset);
        j.k = 1;
        j.dst[0] = a->out ? a->out : at(&r, me, a->offset);
        j.m = 1;
        return fenced_job(ctx, &r, a, me != a->root || a->out != NULL, &j);
    case GCSH_KC_MULTICAST:
        break; /* nvls only; the binding never asks (mc_open said emulated) */
    }
    return gcsh_set_error(ctx, "host kernels: unknown collective %d", (int)a->coll);
}

/* ---- multicast: always emulated here ---------------------------------------------- */

static int host_mc_open(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                        gcsh_mcast *out)
{
    (void)ctx;
    (void)w;
    (void)d;
    memset(out, 0, sizeof *out);
    snprintf(out->why, sizeof out->why,
             "the host backend has no NVLink multicast: peer loads and stores over MPI shared "
             "memory");
    return 0;
}

const gcsh_kernel_ops gcsh_host_kernel_ops = {
    .sync_bytes = GCSH_KERN_SYNC_WORDS(1) * sizeof(uint64_t),
    .reduce = host_reduce,
    .collective = host_collective,
    .mc_open = host_mc_open,
    .mc_ld_reduce = NULL,
    .mc_st = NULL,
};
