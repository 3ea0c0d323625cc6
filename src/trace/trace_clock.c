/* One time line for the recorders: see trace_clock.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "trace/trace_clock.h"

#define SYNC_ROUNDS 10 /* clock ping-pongs per rank */
#define SYNC_TAG 0x7ace

int64_t gcsh_trace_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Rank 0 answers each rank that asks (one on another host), in turn; the
 * ping-pong with the least round trip gives the offset. */
void gcsh_trace_clock(gcsh_ctx *ctx, const char *host, int64_t *offset, int64_t *rtt)
{
    char host0[64] = "";
    snprintf(host0, sizeof host0, "%s", host);
    MPI_Bcast(host0, (int)sizeof host0, MPI_CHAR, 0, MPI_COMM_WORLD);
    int away = strcmp(host0, host) != 0;
    int *who = ctx->rank == 0 ? calloc((size_t)ctx->size, sizeof *who) : NULL;
    MPI_Gather(&away, 1, MPI_INT, who, 1, MPI_INT, 0, MPI_COMM_WORLD);
    *offset = 0;
    *rtt = -1;
    for (int r = 1; ctx->rank == 0 && r < ctx->size; r++)
        for (int k = 0; who[r] && k < SYNC_ROUNDS; k++) {
            int64_t v;
            MPI_Recv(&v, 1, MPI_INT64_T, r, SYNC_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            v = gcsh_trace_now();
            MPI_Send(&v, 1, MPI_INT64_T, r, SYNC_TAG, MPI_COMM_WORLD);
        }
    free(who);
    for (int k = 0; ctx->rank != 0 && away && k < SYNC_ROUNDS; k++) {
        int64_t t1 = gcsh_trace_now(), t0;
        MPI_Send(&t1, 1, MPI_INT64_T, 0, SYNC_TAG, MPI_COMM_WORLD);
        MPI_Recv(&t0, 1, MPI_INT64_T, 0, SYNC_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        int64_t t2 = gcsh_trace_now();
        if (*rtt < 0 || t2 - t1 < *rtt) {
            *rtt = t2 - t1;
            *offset = t0 - (t1 + t2) / 2;
        }
    }
}
