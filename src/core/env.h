/* gcsh's numeric environment variables, in one table (env.c): their names,
 * units, bounds and defaults.
 *
 * Each is checked once at start (gcsh_env_check, before any rank runs: the
 * launcher refuses a bad value with a usage error naming the variable and
 * its bound, as it refuses a bad option), so the readers below never meet a
 * value they cannot parse.  Sizes take a binary suffix as nccl-tests' -b/-e
 * do (64k = 65536, 1M, 2G; KiB, MiB, GiB too); counts are plain integers;
 * seconds may have a fraction.  Unset or empty means the default. */
#ifndef GCSH_ENV_H
#define GCSH_ENV_H

#include <stddef.h>

typedef enum {
    GCSH_ENV_OUTPUT_CAP,         /* bytes of each rank's output per command */
    GCSH_ENV_TRACE_EVENTS,       /* spans each rank keeps while tracing */
    GCSH_ENV_FLIGHT_CALLS,       /* calls each rank's flight recorder keeps */
    GCSH_ENV_HOST_MPI_MAX_COUNT, /* elements of one MPI call on the host */
    GCSH_ENV_HOST_SMALL_BYTES,   /* bytes a member posts in the host's shared-memory path */
    GCSH_ENV_SPIN_US,            /* µs the control plane spins before it sleeps */
    GCSH_ENV_RANKS_PER_NODE,     /* simulated nodes of k ranks (0: the real ones) */
    GCSH_ENV_GPU_WAIT_TIMEOUT,   /* seconds a GPU wait may last */
    GCSH_ENV_COUNT
} gcsh_env_id;

/* 0 when every variable of the table, and every one that takes a word
 * (GCSH_COMM_ROUTE, GCSH_SPLIT_SHARE, GCSH_MULTICAST, GCSH_CONTROL), is
 * unset or valid; else -1, with "GCSH_X=value: what is wrong (the bound,
 * or the words)" in err: a value gcsh does not understand is an error, never
 * a silent default. */
int gcsh_env_check(char *err, size_t len);

/* The variable's value in its unit (bytes, a count, µs, seconds), or its
 * default when unset, empty or (unchecked) invalid. */
double gcsh_env_value(gcsh_env_id id);

/* Parses a size: digits with an optional binary suffix (k, M, G, T, and
 * KiB, MiB, GiB, TiB; case-insensitive for k).  0 on success. */
int gcsh_parse_size(const char *s, unsigned long long *bytes);

#endif
