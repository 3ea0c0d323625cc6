/* Which GPU a rank uses, and what follows when ranks share one (--share-gpu,
 * core/share.h): NCCL's host identity and the facts .info shows.
 *
 * One GPU per rank is NCCL's layout: the machine's rank r takes GPU r, and
 * more ranks than GPUs is refused.  With --share-gpu rank r takes GPU
 * r % count.  NCCL refuses two ranks of one host on one GPU ("Duplicate GPU
 * detected"), so ranks that share a GPU must be different NCCL hosts: the
 * ranks of round k = r / count (one per GPU) get NCCL_HOSTID "ID.gcshK"
 * (core/share.c sets it before MPI starts).  Within a round NCCL connects
 * GPUs as usual (NVLink, PCIe); between rounds it uses its network
 * transport (sockets, or InfiniBand where there is some), as between
 * machines.  On one GPU every rank is its own NCCL host. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda/cuda.h"

int cuda_choose_device(gcsh_ctx *ctx, int count, int *dev)
{
    const gcsh_share *s = &ctx->share;
    if (s->round_gpus && s->round_gpus != count)
        return gcsh_set_error(ctx,
                              "cuda backend: CUDA shows %d GPU%s where the driver listed %d when "
                              "the ranks were given their NCCL hosts (--share-gpu); set "
                              "CUDA_VISIBLE_DEVICES to whole GPUs",
                              count, count == 1 ? "" : "s", s->round_gpus);
    if (s->node_size > count && s->mode == GCSH_SHARE_OFF)
        return gcsh_set_error(ctx,
                              "cuda backend: this machine runs %d ranks but has %d visible GPU%s "
                              "(one GPU per rank): start at most %d ranks here, let ranks share "
                              "GPUs with --share-gpu (GCSH_SHARE_GPU=1 under mpirun), or use "
                              "--backend host",
                              s->node_size, count, count == 1 ? "" : "s", count);
    *dev = s->node_rank % count;
    return 0;
}

/* The world ranks of this machine on GPU dev, from the gathered (rank,
 * device) pairs, into buf ("0,2-3"); how many. */
static int ranks_on(const int *pairs, int n, int dev, char *buf, size_t len)
{
    int *with = malloc(sizeof *with * (size_t)n), k = 0;
    if (!with)
        return snprintf(buf, len, "?"), 0;
    for (int i = 0; i < n; i++)
        if (pairs[2 * i + 1] == dev)
            with[k++] = pairs[2 * i];
    gcsh_format_ranks(with, k, buf, len);
    free(with);
    return k;
}

static int named_before(const int *pairs, int i)
{
    for (int j = 0; j < i; j++)
        if (pairs[2 * j + 1] == pairs[2 * i + 1])
            return 1;
    return 0;
}

/* "cuda:0 by ranks 0-3; cuda:1 by ranks ..." for every shared GPU of the
 * machine (the banner's line), from the gathered pairs. */
static void describe_machine(const int *pairs, int n, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        int dev = pairs[2 * i + 1];
        char ranks[96];
        if (dev < 0 || named_before(pairs, i) || ranks_on(pairs, n, dev, ranks, sizeof ranks) < 2)
            continue;
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%scuda:%d by ranks %s", used ? "; " : "", dev, ranks);
    }
}

/* The most ranks of this machine on any one GPU, from the gathered pairs:
 * the same on every rank of it. */
static int most_on_one_gpu(const int *pairs, int n)
{
    int most = 1;
    for (int i = 0; i < n; i++) {
        int on = 0;
        for (int j = 0; j < n; j++)
            on += pairs[2 * j + 1] >= 0 && pairs[2 * j + 1] == pairs[2 * i + 1];
        most = on > most ? on : most;
    }
    return most;
}

/* Who shares this rank's GPU (st->shared, .info) and every shared GPU of
 * the machine (ctx->share.gpus, the banner).  Collective over the
 * machine's ranks, also for a rank without a device (dev -1). */
static void describe_sharing(gcsh_ctx *ctx, int dev, cuda_state *st)
{
    gcsh_share *s = &ctx->share;
    int mine[2] = {ctx->rank, dev};
    int *pairs = malloc(sizeof mine * (size_t)s->node_size);
    if (!pairs) /* a few ints; the others wait in the gather, so no way out */
        MPI_Abort(MPI_COMM_WORLD, 70);
    MPI_Allgather(mine, 2, MPI_INT, pairs, 2, MPI_INT, s->node);
    describe_machine(pairs, s->node_size, s->gpus, sizeof s->gpus);
    if (st) {
        char ranks[96];
        int n = ranks_on(pairs, s->node_size, dev, ranks, sizeof ranks);
        snprintf(st->shared, sizeof st->shared, n > 1 ? "cuda:%d with ranks %s" : "no", dev,
                 ranks);
        st->sharers = most_on_one_gpu(pairs, s->node_size);
        st->one_gpu = st->sharers == s->node_size;
    }
    /* ...and on any machine of the job, for what must be the same on
     * every rank (when NCCL connects: cuda_backend.c) */
    int here = st ? st->sharers : 1, most = here;
    MPI_Allreduce(&here, &most, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (st)
        st->job_sharers = most;
    free(pairs);
}

void cuda_share_setup(gcsh_ctx *ctx, int count, int dev, cuda_state *st)
{
    describe_sharing(ctx, dev, st);
    if (!st)
        return;
    if (!ctx->share.round_gpus)
        snprintf(st->nccl_hosts, sizeof st->nccl_hosts, "one per machine (no GPU shared)");
    else if (count == 1)
        snprintf(st->nccl_hosts, sizeof st->nccl_hosts,
                 "each rank its own NCCL host (NCCL_HOSTID): NCCL's network transport between "
                 "them");
    else
        snprintf(st->nccl_hosts, sizeof st->nccl_hosts,
                 "one NCCL host per round of %d ranks (NCCL_HOSTID): NCCL's network transport "
                 "between rounds", count);
}

/* Whether an MPS server serves this rank, as the driver says (the
 * attribute is what CUDA decided for contexts on the device). */
static const char *mps_truth(const cuda_state *st)
{
    int v = 0;
    if (cuda_device_attribute(st->dev, CU_DEVICE_ATTRIBUTE_MPS_ENABLED, &v) != 0)
        return "unknown";
    return v ? "yes" : "no";
}

void cuda_share_info(const gcsh_ctx *ctx, const cuda_state *st, lua_State *L)
{
    gcsh_set_string(L, "gpu_shared", st->shared);
    gcsh_set_string(L, "nccl_hosts", st->nccl_hosts);
    char mps[320];
    snprintf(mps, sizeof mps, "%s; serves this rank: %s", ctx->share.mps, mps_truth(st));
    gcsh_set_string(L, "mps", mps);
}

/* Whether the environment variable name is set to "0". */
static int turned_off(const char *name)
{
    const char *v = getenv(name);
    return v && strcmp(v, "0") == 0;
}

const char *cuda_no_symmetric_reason(const cuda_state *st, int comm_size)
{
    if (turned_off("NCCL_WIN_ENABLE"))
        return "NCCL_WIN_ENABLE=0 turns NCCL's symmetric memory off";
    if (turned_off("NCCL_CUMEM_ENABLE"))
        return "NCCL_CUMEM_ENABLE=0 turns NCCL's symmetric memory off";
    if (comm_size == 1)
        return "NCCL offers no symmetric memory to a one-rank communicator";
    if (strcmp(st->shared, "no") != 0)
        return "NCCL offers no symmetric memory to ranks that share a GPU";
    return "NCCL offers no symmetric memory to these ranks (it needs their GPUs on one "
           "machine, each with direct peer access to the others)";
}
