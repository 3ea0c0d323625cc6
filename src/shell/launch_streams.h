/* The launcher's stdout and stderr, handed to rank 0 (gcsh -n, launch.h).
 *
 * Under mpirun, rank 0's stdout and stderr are two pipes that mpirun reads
 * and copies to its own: the order between the two is lost (an error shows
 * before the output printed ahead of it), and every byte takes a detour.  So
 * the launcher hands its own stdout and stderr to rank 0 over a Unix socket
 * (SCM_RIGHTS), as a parent hands them to its child: rank 0 writes where the
 * user's command line pointed them, in order.  The socket is abstract, named
 * after the launcher's pid and the token, and each side checks the other's
 * pid (SO_PEERCRED).  Where it cannot happen (rank 0 on another host),
 * rank 0 keeps mpirun's pipes. */
#ifndef GCSH_LAUNCH_STREAMS_H
#define GCSH_LAUNCH_STREAMS_H

#include <sys/types.h>

/* Launcher: the listening socket, or -1 (then rank 0 keeps mpirun's pipes). */
int gcsh_streams_listen(int token);
/* Launcher: sends fds 1 and 2 to rank 0 (pid) when it connects (5 s at most). */
void gcsh_streams_send(int lfd, pid_t rank0);
/* Rank 0: the launcher's stdout and stderr into fds[0], fds[1]; -1 when
 * they cannot be had. */
int gcsh_streams_take(int pid, int token, int fds[2]);

#endif
