/* Output: per-rank capture (workers) and rank-range folding (rank 0).
 *
 * Workers: everything Lua writes (print, io.write, io.stderr, error messages)
 * goes into a capture buffer that is shipped to rank 0 while the chunk runs
 * (by the watcher thread, at least every 100 ms) and with the chunk's DONE.
 * Output beyond a per-command cap is dropped and counted.
 *
 * Rank 0: text from each rank accumulates per rank; a flush prints ranks whose
 * text is identical once, under a rank range ("[0-2,5] 42", dshbak -c). */
#ifndef GCSH_OUT_H
#define GCSH_OUT_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "wire/msg.h"

/* ---- capture (every rank) ------------------------------------------------ */

struct gcsh_capture {
    pthread_mutex_t lock; /* also serialises sends on fd */
    char *buf;
    size_t len, cap;
    size_t limit;   /* bytes kept per command */
    size_t kept;    /* bytes kept this command */
    size_t dropped; /* bytes dropped this command */
    int mid_line;   /* the last byte kept was not a newline */
    int fd;         /* command socket to rank 0 */
    uint32_t seq;   /* the chunk being run */
    int running;
    int broken;     /* rank 0 is gone: sends are pointless */
    /* gcsh.progress: the latest report, sent by the next flush when dirty;
     * reports are kept only when rank 0 shows them (CHUNK_PROGRESS). */
    int progress_on, progress_dirty;
    gcsh_progress_msg progress;
};

typedef struct gcsh_capture gcsh_capture;

void gcsh_capture_init(gcsh_capture *c, int fd, size_t limit);
void gcsh_capture_destroy(gcsh_capture *c);
void gcsh_capture_write(gcsh_capture *c, const char *s, size_t n);
/* A command starts; progress: rank 0 shows progress lines for it. */
void gcsh_capture_begin(gcsh_capture *c, uint32_t seq, int progress);
/* Sends what is buffered as MSG_OUT (watcher thread, during a chunk). */
void gcsh_capture_flush(gcsh_capture *c);
/* Sends what is buffered, then one message of `type` with payload p (any
 * thread; the capture's lock orders it after the output).  -1: rank 0 gone. */
int gcsh_capture_send(gcsh_capture *c, uint32_t type, const void *p, size_t len);
/* Sends MSG_DONE with the status and what is left; ends the command. */
int gcsh_capture_done(gcsh_capture *c, uint32_t status);
/* Records a progress report (done of total, label; total 0 clears it): the
 * watcher's next flush sends it, so a tight loop may report every step.
 * Does nothing unless this command's progress is shown (begin's flag). */
void gcsh_capture_progress(gcsh_capture *c, uint64_t done, uint64_t total, const char *label);
/* A FILE* whose writes go to the capture (for io.stdout / io.stderr). */
FILE *gcsh_capture_file(gcsh_capture *c);

/* ---- folding (rank 0) ---------------------------------------------------- */

typedef struct gcsh_text {
    char *s;
    size_t len, cap;
} gcsh_text;

typedef struct gcsh_fold {
    int nranks;
    gcsh_text *pending; /* per rank, not yet printed */
    FILE *out;
    int prefix;         /* print "[ranks] " before lines (off for 1 rank) */
} gcsh_fold;

void gcsh_fold_init(gcsh_fold *f, int nranks, FILE *out, int prefix);
void gcsh_fold_destroy(gcsh_fold *f);
void gcsh_fold_add(gcsh_fold *f, int rank, const char *s, size_t n);
/* Whether any rank has text waiting. */
int gcsh_fold_pending(const gcsh_fold *f);
/* Bytes waiting, all ranks together. */
size_t gcsh_fold_bytes(const gcsh_fold *f);
/* Prints what is pending.  With whole_lines, a rank's unfinished last line
 * stays pending (it may still grow); otherwise everything goes. */
void gcsh_fold_flush(gcsh_fold *f, int whole_lines);

/* Formats a sorted rank list as "0-2,5" into buf; returns buf. */
char *gcsh_format_ranks(const int *ranks, int n, char *buf, size_t len);

void gcsh_text_append(gcsh_text *t, const char *s, size_t n);
/* Appends "[0,2-3] text<sep>[1] other": ranks[i] said texts[i]; equal texts
 * are folded, in the order of their lowest rank. */
void gcsh_fold_texts(gcsh_text *out, const int *ranks, int n, const char *const *texts,
                     const char *sep);
void gcsh_text_free(gcsh_text *t);

#endif
