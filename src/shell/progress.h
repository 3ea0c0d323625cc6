/* The one-line progress indicator on rank 0's terminal.
 *
 * Long work reports its progress: Lua calls gcsh.progress(done, total
 * [, label]) on any rank (bench over many sizes, lessons), C code
 * gcsh_capture_progress (out.h); the reports reach rank 0 with the output.
 * Rank 0 shows, when its stderr is a terminal (as curl or pv do: the output
 * can go to a file meanwhile) and the command has run for
 * half a second, one line that the next output or the command's end clears:
 *
 *   bench.allreduce [##########..........] 12/24  3.4 s
 *   waiting for [2-3]: 2 of 4 ranks done  12.0 s
 *
 * The first is the slowest reporting rank's report; the second is the
 * coordinator's own, while some targeted ranks are done and others run.
 * Scripts and pipes get none (the ranks are not even asked to report). */
#ifndef GCSH_PROGRESS_H
#define GCSH_PROGRESS_H

#include <stdio.h>

#include "wire/msg.h"

typedef struct gcsh_progress {
    FILE *out;
    int tty;                    /* out reaches a terminal: lines are shown at all
                                   (the owner sets it: term.h's out_tty) */
    int shown;                  /* a line is on the screen, the cursor after it */
    int plain;                  /* no escape sequences (TERM=dumb, NO_COLOR): the
                                   line is blanked with spaces */
    size_t len;                 /* the length of the line on the screen */
    int nranks;
    gcsh_progress_msg *by_rank; /* the latest report of each rank; total 0: none */
    char waiting[160];          /* the coordinator's own text, "" when none */
    double start;               /* when the command started */
    double drawn;               /* when the line was last drawn */
    int dirty;                  /* something changed since */
} gcsh_progress;

void gcsh_progress_init(gcsh_progress *p, FILE *out, int nranks);
void gcsh_progress_destroy(gcsh_progress *p);
/* A command starts (forgets earlier reports); and ends (clears the line). */
void gcsh_progress_begin(gcsh_progress *p, double now);
void gcsh_progress_end(gcsh_progress *p);
void gcsh_progress_report(gcsh_progress *p, int rank, const gcsh_progress_msg *m);
/* The coordinator's own line ("waiting for [2-3]: ..."); NULL or "": none. */
void gcsh_progress_waiting(gcsh_progress *p, const char *text);
/* Clears the line before other output is printed (it comes back later). */
void gcsh_progress_hide(gcsh_progress *p);
/* Draws the line if something is to be shown and it is time. */
void gcsh_progress_draw(gcsh_progress *p, double now);
/* When gcsh_progress_draw next has something to do (0: nothing). */
double gcsh_progress_due(const gcsh_progress *p);

#endif
