/* The reference for gcsh's start-up benchmark: a bare MPI program that starts,
 * does what `gcsh -e 'x=1'` does at least (init, one barrier), and exits. */
#include <mpi.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
