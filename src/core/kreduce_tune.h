/* algo="auto" of kernel.allreduce: which algorithm runs for a message of
 * `bytes` on a team of `team` ranks, by measured crossover points.
 *
 * THE table to edit after a benchmark (scripts/bench-gpu.sh prints the
 * crossovers it measured, per rank count).  Rows per backend; the row used
 * is the first with team_size >= the team, or the last of its backend.
 * A message of up to ll_max bytes runs "ll" (one launch, no barrier: the
 * ready flags ride in the data; never more than GCSH_LL_MAX_BYTES, the
 * region its LL area holds), up to oneshot_max one-shot, up to twoshot_max
 * two-shot, anything larger the communicator's own all-reduce ("comm":
 * NCCL on cuda, MPI on host), which wins at large sizes where its
 * pipelining and ring/tree algorithms beat two peer-memory passes.
 *
 * Measured (bench.allreduce through scripts/bench-gpu.sh, f32 sum in place
 * on a window of kind nccl, 8 B to 1 GiB by factors of 2, every algorithm in
 * one run per rank count; docs/benchmarks.md has the tables):
 * - cuda, 2 ranks, 2 H200s (NVLink NV18, NVLS off), the run of 2026-11-26
 *   (GCSH_BENCH_ONLY=multi bash scripts/bench-gpu.sh, today's kernels: one
 *   fenced launch per move step, co-residency bound, barriers at system
 *   scope): two-shot at or under one-shot's time at every size (8 B: 7.56
 *   against 7.83 us; 64 KiB: 8.07 against 9.00; 1 MiB: 10.25 against
 *   14.24), NCCL faster only at 1 GiB (3248 against 3311 us): one-shot
 *   never, two-shot to 512 MiB, as bench.allreduce_targets measured.  (An
 *   earlier run, before the one-plan executor, had one-shot to 64 KiB.)
 *   "ll" was the fastest of all at every size it takes, 8 B to 64 KiB
 *   (6.8-6.9 us against two-shot's 7.6-8.1 and NCCL's 11.2-11.8; from
 *   graphs 3.4-4.3 against two-shot's 5.3-5.9): ll to 64 KiB.
 *   "ll128" (2026-11-28, GCSH_BENCH_ONLY=multi GCSH_BENCH_MAX=4194304
 *   bash scripts/bench-gpu.sh, time / nccl-tests -R 2 in the same job):
 *   even with ll to 64 KiB (0.48-0.61 against 0.48-0.60), the fastest at 128
 *   and 256 KiB (0.48 and 0.57, two-shot 0.62 and 0.72): ll to 64 KiB, ll128
 *   to its 256 KiB.
 * - cuda, 4 ranks, 4 H200s (NVLink NV18, NVLS off), the run of 2026-11-26
 *   (GCSH_BENCH_ONLY=multi GCSH_BENCH_RANKS=4 bash scripts/bench-gpu.sh):
 *   ll fastest at every size it takes (5.8 us at 8 B, 6.2 at 4 KiB, 7.9 at
 *   64 KiB, against two-shot's 9.3 / 7.6 / 8.5 and NCCL's 10.3 / 9.7 /
 *   11.0); one-shot never ahead of two-shot (8 B: 9.5 against 9.3; 1 MiB:
 *   22.4 against 12.7); two-shot ahead of NCCL to 32 MiB (166 against 173
 *   us), about even at 64 MiB (325 against 320), behind from 128 MiB (641
 *   against 613; 5038 against 4548 at 1 GiB): ll to 64 KiB, one-shot never,
 *   two-shot to 32 MiB, as bench.allreduce_targets measured.  (Two earlier
 *   runs, before ll and the one-plan executor: one-shot to 32 KiB, two-shot
 *   to 256 MiB.)
 *   "ll128" at 4 ranks (2026-11-28, 4 H200s, GCSH_BENCH_ONLY=multi
 *   GCSH_BENCH_RANKS=4 GCSH_BENCH_MAX=1048576, time / nccl-tests -R 2 in
 *   the same job): even with ll to 64 KiB (0.64-0.88 against 0.63-0.93),
 *   ahead of two-shot at 128 KiB (8.46 against 8.88 us: 0.60 and 0.63),
 *   behind it at 256 KiB (12.28 against 9.35: its 64 blocks take two
 *   rounds of lines there): ll to 64 KiB, ll128 to 128 KiB.  Not measured
 *   at 8 ranks: auto does not take it there, nor on the host.
 * - cuda, 8 ranks: NOT measured (no 8-GPU machine was lent): extrapolated
 *   from 2 and 4 ranks, half of 4 ranks' limits (every algorithm's traffic
 *   per rank grows with the team, and NCCL's rings catch up sooner).
 * - host, 2 and 4 ranks, on the 2-core machine CI runs on (4 ranks share
 *   the 2 cores): the kernels win up to 8 KiB (2 ranks: 1.1-4.1 us against
 *   MPI's 1.3-9.8; one-shot to 512 B), MPI's shared-memory all-reduce from
 *   32 KiB (19.5 us against 21.6 at 2 ranks, 48 against 71 at 4).  Above
 *   8 MiB two-shot won again in one run (32 MiB: 24 ms against 35), too
 *   noisy on this machine to set a third crossover.  ll on the host
 *   (2026-11-26, the same machine, 2 ranks, 2000 calls a size): 2.6-2.7 us
 *   at 8-32 B against one-shot's 3.1-3.3, behind from 128 B (3.6 against
 *   3.3-3.5) and 3x slower from 2 KiB: its progress polls lines one by
 *   one; at 4 ranks on 2 cores MPI's all-reduce led at every size: ll
 *   to 32 B at 2 ranks, never at 4. */
#ifndef GCSH_KREDUCE_TUNE_H
#define GCSH_KREDUCE_TUNE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct gcsh_kern_crossover {
    const char *backend;
    int team_size;
    size_t ll_max;    /* capped at GCSH_LL_MAX_BYTES where it is used */
    size_t ll128_max; /* capped at GCSH_LL128_MAX_BYTES where it is used */
    size_t oneshot_max;
    size_t twoshot_max;
} gcsh_kern_crossover;

/* twoshot_max with no crossover measured: two-shot at any size */
#define GCSH_KERN_NO_LIMIT SIZE_MAX

static const gcsh_kern_crossover gcsh_kern_crossovers[] = {
    /* backend  team  ll up to   ll128 up to   one-shot up to   two-shot up to */
    {"cuda", 2, (size_t)64 << 10, (size_t)256 << 10, 0, (size_t)512 << 20},
    {"cuda", 4, (size_t)64 << 10, (size_t)128 << 10, 0, (size_t)32 << 20},
    {"cuda", 8, (size_t)32 << 10, 0, 0, (size_t)16 << 20},
    {"host", 2, 32, 0, 512, (size_t)8 << 10},
    {"host", 4, 0, 0, 32, (size_t)8 << 10},
};

/* Whether backend has a row: auto chooses by them, so a backend without
 * one is refused at start (rank.c) rather than running one-shot at every
 * size. */
static inline int gcsh_kern_tuned(const char *backend)
{
    for (size_t i = 0; i < sizeof gcsh_kern_crossovers / sizeof gcsh_kern_crossovers[0]; i++)
        if (strcmp(gcsh_kern_crossovers[i].backend, backend) == 0)
            return 1;
    return 0;
}

#endif
