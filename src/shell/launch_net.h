/* Which networks gcsh -n's job may use (issue 35: nothing listening beyond
 * the machine unless needed).
 *
 * When every rank runs on this machine (no host list, host file or batch
 * allocation names another), the launcher keeps Open MPI off the network
 * through MCA parameters in mpirun's environment, which mpirun passes to
 * every rank:
 *   pml ob1, btl self,vader   shared memory between the ranks, no TCP
 *                             transport (MPI_Init opened listeners on
 *                             every address for it), no UCX or OFI
 *   oob_tcp_if_include lo     mpirun's out-of-band channel on loopback
 * Each one the user set (OMPI_MCA_<name> in the environment, --mca NAME on
 * the command line or in --mpirun-args, a line of ~/.openmpi/mca-params.conf)
 * stays the user's.  With several machines Open MPI's own choice (or the
 * user's) stands: it uses the interfaces that reach the other machines.
 *
 * What no parameter changes: Open MPI 4's mpirun (ORTE) binds its own
 * out-of-band listener to every address (INADDR_ANY and in6addr_any,
 * whatever oob_tcp_if_include says, which only picks the addresses it
 * announces and connects to).
 *
 * GCSH_MPI_NETWORK, set here and exported to every rank, says in words
 * which choice was made (gcsh.info().mpi_network, .info). */
#ifndef GCSH_LAUNCH_NET_H
#define GCSH_LAUNCH_NET_H

#define GCSH_MPI_NETWORK_ENV "GCSH_MPI_NETWORK"

/* Before mpirun starts: args are the words gcsh -n passes to mpirun
 * (--host, --hostfile, --mca, --mpirun-args' words).  Sets the environment
 * described above and writes into out (room for 2) the words that export
 * GCSH_MPI_NETWORK to ranks on other machines; returns how many. */
int gcsh_launch_network(char *const *args, int n, char **out);

#endif
