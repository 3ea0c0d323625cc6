/* Signals on rank 0's terminal thread, turned into bytes on a self-pipe so
 * that the prompt and the command wait can poll() for them. */
#ifndef GCSH_SIG_H
#define GCSH_SIG_H

#define GCSH_SIG_INT 'I'
#define GCSH_SIG_WINCH 'W'

/* Installs SIGINT/SIGWINCH handlers; returns the pipe's read end (or -1). */
int gcsh_sig_install(void);
/* Reads every pending signal byte; returns a bitmask: 1 = SIGINT, 2 = SIGWINCH. */
int gcsh_sig_drain(int fd);

#endif
