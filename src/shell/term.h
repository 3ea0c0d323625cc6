/* Rank 0's terminal: which streams to read lines from and print to, and
 * whether there is a real terminal to edit lines on.
 *
 * Under mpirun, rank 0's stdin and stdout are pipes from mpirun.  When mpirun
 * was told not to forward stdin (`--stdin none`, as `gcsh -n` does) and the
 * user sits at a terminal, rank 0 opens /dev/tty and makes its own process
 * group the terminal's foreground group: line editing works, and Ctrl-C goes
 * to rank 0 alone instead of killing the job through mpirun.
 *
 * Program output goes to `out`, errors and the shell's own diagnostics to
 * `err`: the launcher's stdout and stderr when gcsh -n handed them over
 * (launch.h), else the process's own, or the terminal when rank 0 took it
 * and mpirun's own stream is that terminal. */
#ifndef GCSH_TERM_H
#define GCSH_TERM_H

#include <stdio.h>
#include <sys/types.h>

typedef struct gcsh_term {
    FILE *in;         /* lines come from here */
    FILE *out;        /* program output and answers go here */
    FILE *err;        /* errors, diagnostics and the progress line go here */
    FILE *tty;        /* /dev/tty when we opened it (prompts go there), else NULL */
    int interactive;  /* show a banner and prompts */
    int editing;      /* readline: in is a terminal */
    int out_tty;      /* out reaches a terminal (under mpirun, stdout is a pty of
                         mpirun's even when mpirun's own output is a pipe) */
    int err_tty;      /* err reaches a terminal */
    int own[2];       /* out, err were opened here (the launcher's) */
    pid_t saved_fg;   /* foreground group to give back, or -1 */
    const char *hint; /* a one-line notice for the user, or NULL */
    int launcher;     /* gcsh -n's launcher (launch.h), 0 when none */
} gcsh_term;

/* force: -i was given; streams: the launcher's stdout and stderr as file
 * descriptors (-1 each where there is none: the process's own are used);
 * launcher: gcsh -n's launcher (launch.h), 0 when none. */
void gcsh_term_open(gcsh_term *t, int force, const int streams[2], int launcher);
void gcsh_term_close(gcsh_term *t);

/* Job control, as any program that edits lines on a terminal does it.
 * Ctrl-Z: gcsh_term_suspend gives the terminal back to the job's process
 * group and stops the job (through the launcher, which stops every rank and
 * itself, so the user's shell reports it stopped); it returns once the job is
 * continued.  -1 (nothing stopped) under a plain mpirun, where the job
 * cannot stop as one.  gcsh_term_resume takes the terminal again when the
 * job is in the foreground and returns 1; 0 when it runs in the background
 * (bg), where a prompt cannot be read. */
int gcsh_term_suspend(gcsh_term *t);
int gcsh_term_resume(gcsh_term *t);
/* Whether rank 0's own process group has the terminal now. */
int gcsh_term_holds(const gcsh_term *t);

/* Whether this process was started by mpirun (or another PMIx launcher). */
int gcsh_under_mpirun(void);

#endif
