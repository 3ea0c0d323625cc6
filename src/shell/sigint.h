/* Signals on rank 0's terminal thread, turned into bytes on a self-pipe so
 * that the prompt and the command wait can poll() for them. */
#ifndef GCSH_SIG_H
#define GCSH_SIG_H

#define GCSH_SIG_INT 'I'
#define GCSH_SIG_WINCH 'W'
#define GCSH_SIG_TERM 'T'

/* What gcsh_sig_drain returns, or'ed. */
#define GCSH_SIGMASK_INT 1   /* SIGINT: interrupt the command (Ctrl-C) */
#define GCSH_SIGMASK_WINCH 2 /* SIGWINCH: the terminal changed size */
#define GCSH_SIGMASK_TERM 4  /* SIGTERM, SIGHUP: interrupt and end the session */

/* The status a session stopped by SIGTERM ends with (128 + SIGTERM, as a
 * shell reports a process killed by it). */
#define GCSH_EXIT_TERM 143
/* The status of a job ended at once by a second Ctrl-C (128 + SIGINT). */
#define GCSH_EXIT_INT 130

/* Installs SIGINT/SIGWINCH/SIGTERM/SIGHUP handlers; returns the pipe's read
 * end (or -1). */
int gcsh_sig_install(void);
/* Reads every pending signal byte; returns a GCSH_SIGMASK_* bitmask. */
int gcsh_sig_drain(int fd);

#endif
