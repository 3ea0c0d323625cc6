/* Rank 0's terminal: which streams to read lines from and print to, and
 * whether there is a real terminal to edit lines on.
 *
 * Under mpirun, rank 0's stdin and stdout are pipes from mpirun.  When mpirun
 * was told not to forward stdin (`--stdin none`, as `gcsh -n` does) and the
 * user sits at a terminal, rank 0 opens /dev/tty and makes its own process
 * group the terminal's foreground group: line editing works, and Ctrl-C goes
 * to rank 0 alone instead of killing the job through mpirun. */
#ifndef GCSH_TERM_H
#define GCSH_TERM_H

#include <stdio.h>
#include <sys/types.h>

typedef struct gcsh_term {
    FILE *in;         /* lines come from here */
    FILE *out;        /* rank output and reports go here */
    FILE *tty;        /* /dev/tty when we opened it (prompts go there), else NULL */
    int interactive;  /* show a banner and prompts */
    int editing;      /* readline: in is a terminal */
    int out_tty;      /* out reaches a terminal (under mpirun, stdout is a pty of
                         mpirun's even when mpirun's own output is a pipe) */
    pid_t saved_fg;   /* foreground group to give back, or -1 */
    const char *hint; /* a one-line notice for the user, or NULL */
} gcsh_term;

/* force: -i was given. */
void gcsh_term_open(gcsh_term *t, int force);
void gcsh_term_close(gcsh_term *t);

/* Whether this process was started by mpirun (or another PMIx launcher). */
int gcsh_under_mpirun(void);

#endif
