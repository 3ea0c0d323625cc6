/* Signals on rank 0's terminal thread, turned into bytes on a self-pipe so
 * that the prompt and the command wait can poll() for them. */
#ifndef GCSH_SIGINT_H
#define GCSH_SIGINT_H

#include "core/exit_codes.h" /* GCSH_EXIT_TERM, _INT, _PIPE */

#define GCSH_SIG_INT 'I'
#define GCSH_SIG_WINCH 'W'
#define GCSH_SIG_TERM 'T'
#define GCSH_SIG_TSTP 'Z'
#define GCSH_SIG_CONT 'C'
#define GCSH_SIG_KEY 'K' /* SIGINT typed at a terminal */
/* The value gcsh -n's launcher queues with a SIGINT that was typed at its
 * terminal (Ctrl-C), so that rank 0 tells it from kill -INT or timeout. */
#define GCSH_SIGINT_KEYBOARD 0x4b4559

/* What gcsh_sig_drain returns, or'ed. */
#define GCSH_SIGMASK_INT 1   /* SIGINT: interrupt the command (Ctrl-C) */
#define GCSH_SIGMASK_WINCH 2 /* SIGWINCH: the terminal changed size */
#define GCSH_SIGMASK_TERM 4  /* SIGTERM, SIGHUP: interrupt and end the session */
#define GCSH_SIGMASK_TSTP 8  /* SIGTSTP: Ctrl-Z, suspend the job (term.h) */
#define GCSH_SIGMASK_CONT 16 /* SIGCONT: the job was continued (fg, bg) */
#define GCSH_SIGMASK_KEYBOARD 32 /* with INT: Ctrl-C typed at a terminal (the kernel's
                                    SIGINT, or the launcher's with GCSH_SIGINT_KEYBOARD),
                                    not one sent by a program (kill, timeout -s INT) */


/* One SIGTERM always ends the process: if the session has not ended this
 * long after the first SIGTERM or SIGHUP (rank 0 stuck in C: a finalizer
 * that loops or waits for a collective at exit, a write to a pipe nobody
 * reads, a FIFO), the process says so and exits GCSH_EXIT_TERM (SIGALRM).
 * The coordinator's own grace (coord.c) is shorter, gcsh -n's launcher's
 * longer (launch.c). */
#define GCSH_TERM_DEADLINE_S 6
/* A SIGTERM this soon after the last is the same request (`timeout` and
 * `kill -- -PGID` signal the process, then its process group). */
#define GCSH_SAME_SIGNAL_MS 200

/* Installs SIGINT/SIGWINCH/SIGTERM/SIGHUP handlers (and SIGALRM for
 * SIGTERM's deadline); returns the pipe's read end (or -1). */
int gcsh_sig_install(void);
/* fn(arg, GCSH_EXIT_TERM) runs in the signal handler at SIGTERM's
 * deadline, before the process exits: async-signal-safe calls only (rank 0
 * tells gcsh -n's launcher the status: gcsh_launcher_status, a sigqueue). */
void gcsh_sig_at_deadline(void (*fn)(int arg, int status), int arg);
/* Catches SIGTSTP and SIGCONT too (rank 0 edits lines on a terminal): the
 * terminal is given back before the job stops, taken again after. */
void gcsh_sig_catch_job_control(void);
/* Calls stop(arg), which makes someone stop this process (SIGSTOP), and
 * returns once the process was continued (SIGCONT), however the stop and
 * the continue interleave with stop's own return.  Needs
 * gcsh_sig_catch_job_control. */
void gcsh_sig_stop_and_wait(void (*stop)(void *arg), void *arg);
/* Reads every pending signal byte; returns a GCSH_SIGMASK_* bitmask. */
int gcsh_sig_drain(int fd);

#endif
