/* Rank 0 died: the flight file and the trace, by the others.  See heir.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/private.h"
#include "core/safefile.h"
#include "rank/heir.h"
#include "trace/flight.h"
#include "trace/trace.h"
#include "trace/trace_json.h"

/* How long the heir waits for the others' copies of their spans: they write
 * them as soon as they see rank 0 gone, as it does; mpirun ends the job
 * soon after. */
#define HEIR_WAIT_S 1.5

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Where rank r leaves its copy: gcsh's own folder, named by the job (its
 * MPI job id and mpirun's pid, the same on every rank of the job's node),
 * so that no two jobs mix.  0, or -1 when there is no folder or no job id. */
static int copy_path(char *buf, size_t len, int r)
{
    char dir[PATH_MAX], err[PATH_MAX + 200];
    const char *job = getenv("PMIX_NAMESPACE");
    if (!job)
        job = getenv("OMPI_MCA_ess_base_jobid");
    if (!job || strlen(job) > 64 || strchr(job, '/') ||
        gcsh_private_dir(dir, sizeof dir, err, sizeof err) != 0)
        return -1;
    int n = snprintf(buf, len, "%s/gcsh-heir-%s-%d-rank%d.blob", dir, job, (int)getppid(), r);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

/* Every rank but the heir: its spans, for the heir to write. */
static void leave_copy(gcsh_ctx *ctx)
{
    size_t len = 0;
    void *blob = gcsh_trace_snapshot(ctx, &len);
    char path[PATH_MAX + 64], err[PATH_MAX + 200];
    if (blob && copy_path(path, sizeof path, ctx->rank) == 0 &&
        gcsh_file_write_all(path, blob, len, err, sizeof err) != 0) /* 0600: gcsh's folder */
        fprintf(stderr, "gcsh: rank %d: its spans, for the trace: %s\n", ctx->rank, err);
    free(blob);
}

/* Rank r's copy, once there (NULL after the wait); removed once read. */
static void *take_copy(int r, double until, size_t *len)
{
    char path[PATH_MAX + 64];
    if (copy_path(path, sizeof path, r) != 0)
        return NULL;
    for (;;) {
        FILE *f = fopen(path, "rb");
        if (f) {
            struct stat st;
            void *blob = NULL;
            if (fstat(fileno(f), &st) == 0 && st.st_size >= (off_t)sizeof(gcsh_trace_blob)) {
                blob = malloc((size_t)st.st_size);
                if (blob && fread(blob, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
                    free(blob);
                    blob = NULL;
                }
                *len = blob ? (size_t)st.st_size : 0;
            }
            fclose(f);
            unlink(path);
            return blob;
        }
        if (now_s() >= until)
            return NULL;
        usleep(20000);
    }
}

static void free_all(void **blobs, int n)
{
    for (int r = 0; r < n; r++)
        free(blobs[r]);
}

static void write_flight(gcsh_ctx *ctx, const char *flight)
{
    char own[PATH_MAX], err[PATH_MAX + 200];
    const char *path = flight;
    if (!path) {
        if (gcsh_private_path(own, sizeof own, "gcsh-flight", "json", err, sizeof err) != 0) {
            fprintf(stderr, "gcsh: rank %d: flight recorder: %s\n", ctx->rank, err);
            return;
        }
        path = own;
    }
    void **blobs = calloc((size_t)ctx->size, sizeof *blobs);
    size_t *lens = calloc((size_t)ctx->size, sizeof *lens);
    for (int r = 0; r < ctx->size; r++)
        blobs[r] = gcsh_flight_blob(ctx->flight, r, &lens[r]);
    char note[200];
    snprintf(note, sizeof note, "the flight recorder (the last %zu calls of each rank), written "
             "by rank %d as the session ended: rank 0 died", gcsh_flight_size(ctx->flight),
             ctx->rank);
    long n = gcsh_trace_write(path, !flight, ctx->size, blobs, lens, note, err, sizeof err);
    if (n < 0)
        fprintf(stderr, "gcsh: rank %d: flight recorder: %s\n", ctx->rank, err);
    else
        fprintf(stderr, "gcsh: rank %d: flight recorder: %s (every rank's last calls)\n",
                ctx->rank, path);
    free_all(blobs, ctx->size);
    free(blobs);
    free(lens);
}

/* The trace: the heir's own spans, the others' copies, and for rank 0 and
 * any rank that left none its flight ring (its last known calls). */
static void write_trace(gcsh_ctx *ctx, const char *trace, void *mine, size_t mine_len)
{
    void **blobs = calloc((size_t)ctx->size, sizeof *blobs);
    size_t *lens = calloc((size_t)ctx->size, sizeof *lens);
    double until = now_s() + HEIR_WAIT_S;
    char note[400], err[PATH_MAX + 200];
    int k = snprintf(note, sizeof note, "written by rank %d as the session ended: rank 0 died; "
                     "its last calls are from its flight recorder", ctx->rank);
    blobs[ctx->rank] = mine;
    lens[ctx->rank] = mine_len;
    for (int r = 1; r < ctx->size; r++)
        if (r != ctx->rank)
            blobs[r] = take_copy(r, until, &lens[r]);
    for (int r = 0; r < ctx->size; r++) {
        if (blobs[r])
            continue;
        blobs[r] = gcsh_flight_blob(ctx->flight, r, &lens[r]);
        if (r > 0 && k > 0 && (size_t)k < sizeof note)
            k += snprintf(note + k, sizeof note - (size_t)k, "; rank %d left no spans%s", r,
                          blobs[r] ? ": its last calls are from its flight recorder" : "");
    }
    long n = gcsh_trace_write(trace, 0, ctx->size, blobs, lens, note, err, sizeof err);
    if (n < 0)
        fprintf(stderr, "gcsh: rank %d: trace: %s\n", ctx->rank, err);
    else
        fprintf(stderr, "gcsh: rank %d: trace written to %s (rank 0 died)\n", ctx->rank, trace);
    free_all(blobs, ctx->size);
    free(blobs);
    free(lens);
}

void gcsh_heir_write(gcsh_ctx *ctx, const char *flight, const char *trace)
{
    int heir = ctx->flight ? gcsh_flight_heir(ctx->flight) : ctx->rank == 1;
    if (!heir) {
        if (trace)
            leave_copy(ctx);
        return;
    }
    if (ctx->flight)
        write_flight(ctx, flight);
    size_t len = 0;
    void *mine = trace ? gcsh_trace_snapshot(ctx, &len) : NULL;
    if (mine)
        write_trace(ctx, trace, mine, len);
}
