/* algo="auto" of kernel.allreduce: which algorithm runs for a message of
 * `bytes` on a team of `team` ranks, by measured crossover points.
 *
 * THE table to edit after a benchmark (scripts/bench-gpu.sh prints the
 * crossovers it measured, per rank count).  Rows per backend; the row used
 * is the first with team_size >= the team, or the last of its backend.
 * A message of up to oneshot_max bytes runs one-shot, up to twoshot_max
 * two-shot, anything larger the communicator's own all-reduce ("comm":
 * NCCL on cuda, MPI on host), which wins at large sizes where its
 * pipelining and ring/tree algorithms beat two peer-memory passes.
 *
 * Seeds, until the H200 bench fills the cuda rows: NOT measured here.
 * The cuda rows come from the published figures the issue cites (custom
 * all-reduce kernels of vLLM, TensorRT-LLM and PyTorch symmetric memory:
 * one-shot wins up to a few hundred KiB, less as the team grows, since its
 * traffic per rank grows with the team; two-shot up to tens of MiB).  The
 * host rows are a guess for shared memory (one-shot reads k slices per
 * rank, two-shot k / team), and only steer CI, where results are identical
 * whatever runs. */
#ifndef GCSH_KERN_TUNE_H
#define GCSH_KERN_TUNE_H

#include <stddef.h>

typedef struct gcsh_kern_crossover {
    const char *backend;
    int team_size;
    size_t oneshot_max;
    size_t twoshot_max;
} gcsh_kern_crossover;

static const gcsh_kern_crossover gcsh_kern_crossovers[] = {
    /* backend  team  one-shot up to      two-shot up to */
    {"cuda", 2, (size_t)512 << 10, (size_t)64 << 20},
    {"cuda", 4, (size_t)256 << 10, (size_t)64 << 20},
    {"cuda", 8, (size_t)128 << 10, (size_t)32 << 20},
    {"host", 2, (size_t)64 << 10, (size_t)256 << 20},
    {"host", 8, (size_t)16 << 10, (size_t)256 << 20},
};

#endif
