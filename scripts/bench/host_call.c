/* The reference of scripts/bench-host-call: back-to-back MPI collectives of
 * a few bytes, in C, timed as nccl-tests times (warm-up calls, then `iters`
 * calls under one timer, the slowest rank's time / iters), the best of
 * several such windows.  MPI is started
 * as gcsh starts it (MPI_THREAD_SERIALIZED), so both pay the same locks.
 * Two more all-reduces show what the designs gcsh did not take would cost:
 * allreduce_nb, MPI_Iallreduce polled by MPI_Test (what every host
 * collective did before host_small.c), and allreduce_persistent,
 * MPIX_Allreduce_init once, then MPI_Start and MPI_Test per call (where
 * Open MPI has the pcollreq extension).
 * Usage: host_call ITERS BYTES WINDOWS (the best of WINDOWS timings of
 * ITERS calls); prints "C <collective> <us>" per line. */
#include <mpi.h>
#include <mpi-ext.h> /* Open MPI's MPIX_Allreduce_init (MPI-4's persistent collectives) */
#include <stdio.h>
#include <stdlib.h>

typedef void (*call_fn)(float *in, float *out, int n, int size);

static void allreduce(float *in, float *out, int n, int size)
{
    (void)size;
    MPI_Allreduce(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

static void broadcast(float *in, float *out, int n, int size)
{
    (void)out, (void)size;
    MPI_Bcast(in, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
}

static void allgather(float *in, float *out, int n, int size)
{
    (void)size;
    MPI_Allgather(in, n, MPI_FLOAT, out, n, MPI_FLOAT, MPI_COMM_WORLD);
}

/* gcsh's c:reducescatter(t, out): t holds size blocks of n */
static void reduce_scatter(float *in, float *out, int n, int size)
{
    (void)size;
    MPI_Reduce_scatter_block(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

static void test_until_done(MPI_Request *req)
{
    for (int done = 0; !done;)
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
}

static void allreduce_nb(float *in, float *out, int n, int size)
{
    (void)size;
    MPI_Request req;
    MPI_Iallreduce(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
    test_until_done(&req);
}

#ifdef OMPI_HAVE_MPI_EXT_PCOLLREQ
static MPI_Request persistent = MPI_REQUEST_NULL; /* made once, for in, out and n */

static void allreduce_persistent(float *in, float *out, int n, int size)
{
    (void)size;
    if (persistent == MPI_REQUEST_NULL)
        MPIX_Allreduce_init(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                            &persistent);
    MPI_Start(&persistent);
    test_until_done(&persistent);
}
#endif

/* The best of `windows` timings of `iters` calls (each the slowest rank's):
 * on a shared machine a window without a neighbour's burst is the figure. */
static double timed(call_fn fn, float *in, float *out, int n, int size, int iters, int windows)
{
    for (int i = 0; i < iters / 10 + 1; i++)
        fn(in, out, n, size);
    double best = 1e30;
    for (int w = 0; w < windows; w++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            fn(in, out, n, size);
        double mine = (MPI_Wtime() - t0) / iters, worst = 0;
        MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        best = worst < best ? worst : best;
    }
    return best;
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = argc > 1 ? atoi(argv[1]) : 100000;
    int n = (argc > 2 ? atoi(argv[2]) : 8) / (int)sizeof(float);
    int windows = argc > 3 ? atoi(argv[3]) : 1;
    float *in = calloc((size_t)(n * size), sizeof *in), *out = calloc((size_t)(n * size), sizeof *out);
    static const struct { const char *name; call_fn fn; } calls[] = {
        {"allreduce", allreduce}, {"broadcast", broadcast},
        {"allgather", allgather}, {"reduce_scatter", reduce_scatter},
        {"allreduce_nb", allreduce_nb},
#ifdef OMPI_HAVE_MPI_EXT_PCOLLREQ
        {"allreduce_persistent", allreduce_persistent},
#endif
    };
    for (size_t c = 0; c < sizeof calls / sizeof calls[0]; c++) {
        double t = timed(calls[c].fn, in, out, n, size, iters, windows);
        if (rank == 0)
            printf("C %s %.3f\n", calls[c].name, t * 1e6);
    }
#ifdef OMPI_HAVE_MPI_EXT_PCOLLREQ
    if (persistent != MPI_REQUEST_NULL)
        MPI_Request_free(&persistent);
#endif
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
