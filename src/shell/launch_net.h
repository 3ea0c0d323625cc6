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
 * announces and connects to).  So, on one machine, mpirun alone runs with
 * gcsh-loopback.so preloaded (src/preload/loopback.c, built beside gcsh,
 * installed in PREFIX/lib/gcsh): its bind() of a TCP socket to a wildcard
 * address binds 127.0.0.1 or ::1 instead.  The library takes itself out of
 * LD_PRELOAD as it loads into mpirun (what the user preloaded stays, and
 * reaches the ranks as before), so the ranks never have it; a wrapper
 * script that GCSH_MPIRUN names passes it on to the mpirun it runs.  It is left out when the
 * user chose the out-of-band interfaces (oob_tcp_if_include or
 * oob_tcp_if_exclude set as above), when other machines are named, when
 * the library is not found, or when a loopback address cannot be bound;
 * .info says which ("mpirun listens on loopback only").
 *
 * GCSH_MPI_NETWORK, set here and exported to every rank, says in words
 * which choice was made (gcsh.info().mpi_network, .info). */
#ifndef GCSH_LAUNCH_NET_H
#define GCSH_LAUNCH_NET_H

#define GCSH_MPI_NETWORK_ENV "GCSH_MPI_NETWORK"
/* The preloaded library's path, for it to find itself in LD_PRELOAD. */
#define GCSH_LOOPBACK_SO_ENV "GCSH_LOOPBACK_SO"

/* Before mpirun starts: args are the words gcsh -n passes to mpirun
 * (--host, --hostfile, --mca, --mpirun-args' words).  Sets the environment
 * described above and writes into out (room for 2) the words that export
 * GCSH_MPI_NETWORK to ranks on other machines; returns how many. */
int gcsh_launch_network(char *const *args, int n, char **out);
/* In mpirun's process, before it is executed: preloads gcsh-loopback.so
 * when gcsh_launch_network chose it. */
void gcsh_launch_network_child(void);

#endif
