/* The host backend's reduce kernels: C loops over the same peer pointer
 * table the cuda kernels take.  Host windows are MPI shared memory, so the
 * loads and stores below are real loads and stores into other ranks' memory.
 *
 * The collectives follow the plan of kplan.h step by step and synchronise
 * like the cuda kernels (kreduce.h: one word per
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

#include "core/elementwise.h"
#include "core/gcsh.h"
#include "host/host.h"


/* ---- one job: k sources reduced into m destinations ------------------------ */

/* Element loops per dtype, each in its accumulator type (kreduce.h). */
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

/* A barrier wait in words: "barrier ready #17" (its name, then its number). */
typedef struct barrier_at {
    const char *name;
    uint64_t value;
} barrier_at;

static void barrier_text(const void *arg, char *buf, size_t len)
{
    const barrier_at *b = arg;
    snprintf(buf, len, "barrier %s #%llu", b->name, (unsigned long long)b->value);
}

/* Every member's writes before its barrier are visible to every member
 * after it.  name: the barrier's, for hang reports (gcsh_kplan_barrier_name). */
static int barrier(gcsh_ctx *ctx, const gcsh_window_desc *d, size_t sync_off, uint64_t *epoch,
                   const char *name)
{
    uint64_t value = ++*epoch;
    int me = d->team_rank;
    for (int p = 0; p < d->team_size; p++)
        atomic_store_explicit(sync_word(d, sync_off, p, me), value, memory_order_release);
    barrier_at at = {name, value};
    for (int p = 0; p < d->team_size; p++) {
        gcsh_host_note note = {barrier_text, &at, d->team[p], 0};
        if (gcsh_host_wait_noted(ctx, sync_word(d, sync_off, me, p), GCSH_CMP_GE, value,
                                 INFINITY,
                                 "kernel collective interrupted while waiting for a peer",
                                 &note) != 0)
            return -1;
    }
    return 0;
}

/* ---- the collectives: the plan (kplan.h), move by move ------------------------------ */

typedef struct run {
    const gcsh_window_desc *d;
    const gcsh_kcoll_args *a;
    size_t esize;
    char *tmp; /* the plan's scratch, allocated when a move first uses it */
} run;

/* Where a place of the plan is on this rank. */
static char *place_at(run *r, const gcsh_kplace *pl)
{
    if (pl->peer >= 0 && pl->scratch)
        return (char *)r->d->peer[pl->peer] + r->a->scratch_off + pl->first * r->esize;
    if (pl->peer >= 0)
        return (char *)r->d->peer[pl->peer] + (r->a->offset + pl->first) * r->esize;
    if (pl->peer == GCSH_KPLAN_OUT)
        return (char *)r->a->out + pl->first * r->esize;
    if (!r->tmp)
        r->tmp = malloc(r->a->plan.n * r->esize);
    return r->tmp ? r->tmp + pl->first * r->esize : NULL;
}

static int run_move(gcsh_ctx *ctx, run *r, const gcsh_kmove *mv)
{
    gcsh_kjob j;
    memset(&j, 0, sizeof j);
    j.k = mv->k;
    j.m = mv->m;
    j.n = mv->count;
    j.dt = r->a->dt;
    j.op = r->a->op;
    for (int s = 0; s < mv->k; s++)
        if (!(j.src[s] = place_at(r, &mv->src[s])))
            return gcsh_set_error(ctx, "host kernels: out of host memory");
    for (int q = 0; q < mv->m; q++)
        if (!(j.dst[q] = place_at(r, &mv->dst[q])))
            return gcsh_set_error(ctx, "host kernels: out of host memory");
    if (mv->k == 0) { /* a scratch area zeroed (kplan.h) */
        for (int q = 0; q < mv->m; q++)
            memset(j.dst[q], 0, mv->count * r->esize);
        return 0;
    }
    return host_reduce(ctx, &j);
}

static int host_collective(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                           const gcsh_kcoll_args *a)
{
    (void)w;
    run r = {d, a, gcsh_dtype_size(a->dt), NULL};
    gcsh_kstep steps[GCSH_KPLAN_MAX_STEPS];
    int ns = gcsh_kplan_steps(&a->plan, steps), rc = 0;
    for (int i = 0; i < ns && rc == 0; i++) {
        gcsh_kmove mv;
        if (steps[i].kind == GCSH_KS_BARRIER) {
            char name[40];
            gcsh_kplan_barrier_name(steps, ns, i, name, sizeof name);
            rc = barrier(ctx, d, a->sync_off, a->epoch, name);
        }
        else if (gcsh_kplan_move(&a->plan, &steps[i], d->team_rank, a->out != NULL, &mv))
            rc = run_move(ctx, &r, &mv);
    }
    free(r.tmp);
    return rc;
}

/* kernel.alltoallv: every member's blocks are in its slice before anyone
 * reads (barrier "ready"), and nobody reads a slice any more after the
 * second ("done"). */
static int host_alltoallv(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                          const gcsh_kv_args *a)
{
    (void)w;
    size_t es = gcsh_dtype_size(a->dt);
    if (barrier(ctx, d, a->sync_off, a->epoch, "ready") != 0)
        return -1;
    for (int p = 0; p < d->team_size; p++)
        memcpy((char *)a->out + a->out_first[p] * es,
               (const char *)d->peer[p] + (a->offset + a->src_first[p]) * es, a->count[p] * es);
    return barrier(ctx, d, a->sync_off, a->epoch, "done");
}

/* ---- multicast: always emulated here ---------------------------------------------- */

/* The host has no launch: kernel.empty() costs the binding's path alone. */
static int host_empty(gcsh_ctx *ctx)
{
    (void)ctx;
    return 0;
}

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
    .empty = host_empty,
    .collective = host_collective,
    .alltoallv = host_alltoallv,
    .ll_allreduce = gcsh_host_ll_allreduce,
    .mc_open = host_mc_open,
    .mc_ld_reduce = NULL,
    .mc_st = NULL,
};
