/* `gcsh -n N`: the launcher stays the parent of mpirun.
 *
 * The launcher starts mpirun in a process group of its own, so that a signal
 * sent to the user's job (Ctrl-C on a pipe, `timeout -s INT`, a batch
 * system's SIGTERM) reaches the launcher alone, not mpirun, which would kill
 * every rank.  Rank 0 says hello to the launcher at start (a queued SIGUSR1
 * carrying a token from the environment, when it runs on the launcher's
 * host), so the launcher knows its pid and turns
 *   SIGINT          into a SIGINT to rank 0: the interrupt Ctrl-C gives;
 *   SIGTERM, SIGHUP into a SIGTERM to rank 0: the command is interrupted and
 *                   every rank stops cleanly (status 143).
 * Before the hello (or when rank 0 is on another host) they go to mpirun.
 * When rank 0 ends the session at once with a status of its own (a lost rank,
 * os.exit on some ranks, a device fault), it declares that status (SIGUSR2),
 * and the launcher exits with it whatever mpirun reports.  At a normal end
 * rank 0 declares the session's status too, and every rank exits 0: mpirun
 * takes about 2 s to end a job in which a process exited with another
 * status (a crash after that still shows: mpirun's status then).  If rank 0
 * ends without declaring anything (killed, crashed), the job's status is
 * the survivors', GCSH_EXIT_LOST (the launcher watches rank 0's pid).
 * A rank 0 that is stopped (SIGSTOP) cannot take signals: then SIGTERM or
 * Ctrl-C (a second one when a debugger holds it), and a third SIGTERM in any
 * case, end the job through mpirun.  A rank 0 stopped from outside is said,
 * and at a terminal it held, the launcher takes the foreground so that
 * Ctrl-C reaches it (rank 0 takes it back when continued).  Before the hello, SIGINT and SIGTERM
 * end the job through mpirun (130, 143).  The same signal twice within
 * GCSH_SAME_SIGNAL_MS is one request (`timeout`, `kill -- -PGID`: the
 * launcher, then its process group).  One SIGTERM ends any job within 10 s:
 * END_AFTER_TERM_S after it the job ends through mpirun, and what is left is
 * killed KILL_AFTER_END_S later (launch.c).
 * After the hello the launcher hands rank 0 its own stdout and stderr
 * (launch_streams.h), so that rank 0 prints where the user's command line
 * points them, program output and errors in order.
 * Job control: a SIGTSTP (from rank 0 after Ctrl-Z, or from anyone) stops
 * the ranks on this host and then the launcher, so the user's shell sees the
 * job stopped; SIGCONT (fg, bg) continues them (term.h says what rank 0 does
 * about the terminal). */
#ifndef GCSH_LAUNCH_H
#define GCSH_LAUNCH_H

/* Launcher side: runs argv (mpirun and its arguments) as described above;
 * returns the exit status for the user (mpirun's, rank 0's declared one, or
 * 128 + signal). */
int gcsh_launch(char *const argv[]);

/* Rank 0 side, after its signal handlers are installed: tells the launcher
 * (if any, and on this host) where rank 0 is, and takes the launcher's
 * stdout and stderr into streams[0] and streams[1] (-1 each when it could
 * not).  Returns the launcher's pid, or 0 when there is none to tell. */
int gcsh_launcher_hello(int streams[2]);

/* Rank 0 side: the session ends with `status` now, whatever mpirun will say
 * (launcher: what hello returned; 0 does nothing). */
void gcsh_launcher_status(int launcher, int status);

/* Rank 0 side, at the session's normal end: its status is `status`, and the
 * ranks may exit 0.  Returns 0 when the launcher was told, else -1 (no
 * launcher: the ranks exit with the status themselves). */
int gcsh_launcher_end(int launcher, int status);

#endif
