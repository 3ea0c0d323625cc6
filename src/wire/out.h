/* Output: per-rank capture (workers) and rank-range folding (rank 0).
 *
 * Workers: everything Lua writes goes into a capture buffer, on one of two
 * streams: program output (print, io.write, io.stdout) and errors (error
 * messages and tracebacks, io.stderr, warn(), gcsh's own notes).  The buffer
 * is shipped to rank 0 while the chunk runs (by the watcher thread, at least
 * every 100 ms) and with the chunk's DONE, each stream's runs in the order
 * they were written (MSG_OUT, MSG_ERR).  Output beyond a per-command cap is
 * dropped and counted.
 *
 * Rank 0: text from each rank accumulates per rank; a flush prints ranks whose
 * text is identical once, under a rank range ("[0-2,5] 42", dshbak -c),
 * program output on rank 0's stdout and errors on its stderr, in the order
 * the rank wrote them.  Texts that differ only in the addresses Lua prints
 * ("function: 0x55d0c3a4b2c0") fold too, the differing addresses shown as
 * 0x…; the tag mode says when lines get their "[ranks] " prefix. */
#ifndef GCSH_OUT_H
#define GCSH_OUT_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "core/gcsh.h"
#include "wire/msg.h"

/* The two streams of a rank's output. */
enum { GCSH_STDOUT = 0, GCSH_STDERR = 1 };

/* Where a run of one stream starts in a buffer (the run goes on to the next
 * segment's start or the buffer's end). */
typedef struct gcsh_segment {
    size_t at;
    int stream;
} gcsh_segment;

/* Notes that text of `stream` starts at `at` (the buffer's end), unless the
 * last run is of that stream already.  Returns 0, or -1 out of memory. */
int gcsh_segment_note(gcsh_segment **seg, size_t *nseg, size_t *capseg, size_t at, int stream);

/* ---- capture (every rank) ------------------------------------------------ */

struct gcsh_capture {
    pthread_mutex_t lock; /* also serialises sends on fd */
    char *buf;
    size_t len, cap;
    gcsh_segment *seg;    /* the streams' runs in buf; seg[0].at == 0 when len */
    size_t nseg, capseg;
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
/* Appends n bytes of stream (GCSH_STDOUT or GCSH_STDERR). */
void gcsh_capture_write(gcsh_capture *c, int stream, const char *s, size_t n);
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
/* A FILE* whose writes go to the capture's stream (io.stdout, io.stderr). */
FILE *gcsh_capture_file(gcsh_capture *c, int stream);

/* ---- folding (rank 0) ---------------------------------------------------- */

typedef struct gcsh_text {
    char *s;
    size_t len, cap;
} gcsh_text;

/* When folded lines get their "[0-2,5] " prefix (--tag): always; never
 * (mpirun's habit: each rank's lines as they are, not folded, in the order
 * they arrive: rank 0 flushes after each gcsh_fold_add); auto: program
 * output is left bare while one rank alone has printed in the command
 * (errors are always tagged).  At one rank, never. */
typedef enum gcsh_tag_mode { GCSH_TAG_ALWAYS, GCSH_TAG_NEVER, GCSH_TAG_AUTO } gcsh_tag_mode;

/* "always", "never", "auto": 0 and *mode set, else -1. */
int gcsh_tag_parse(const char *s, gcsh_tag_mode *mode);

/* One rank's text not yet printed, with its streams' runs. */
typedef struct gcsh_pending {
    gcsh_text text;
    gcsh_segment *seg; /* seg[0].at == 0 when text.len */
    size_t nseg, capseg;
} gcsh_pending;

typedef struct gcsh_fold {
    int nranks;
    gcsh_pending *pending; /* per rank */
    FILE *out[2];       /* GCSH_STDOUT, GCSH_STDERR */
    gcsh_tag_mode tag;
    char *printed;      /* per rank: printed program output in this command */
    int nprinted;
    int addresses_seen; /* some fold hid differing addresses as 0x… */
    int addresses_said; /* the note on 0x… was printed (once a session) */
    int open;           /* a line is unfinished on the screen: text of the same
                           ranks (open_label) and stream continues it */
    int open_stream;
    char open_label[4096];
    char *open_ranks;   /* per rank: its line is the open one */
    /* Per rank and stream ([2 * rank + stream]): the rank's line there is
     * unfinished and its beginning is on the screen (this command), so the
     * newline that finishes it adds nothing but the line's end: never a
     * "[ranks] " line of its own, which the rank did not print. */
    char *shown;
    int closed;         /* a write failed with EPIPE: the reader of rank 0's
                           stdout or stderr is gone (head, less quit) */
} gcsh_fold;

void gcsh_fold_init(gcsh_fold *f, int nranks, FILE *out, FILE *err, gcsh_tag_mode tag);
void gcsh_fold_destroy(gcsh_fold *f);
/* A command starts: --tag=auto counts the ranks that print from here. */
void gcsh_fold_begin(gcsh_fold *f);
void gcsh_fold_add(gcsh_fold *f, int rank, int stream, const char *s, size_t n);
/* Whether any rank has text waiting. */
int gcsh_fold_pending(const gcsh_fold *f);
/* Bytes waiting, all ranks together. */
size_t gcsh_fold_bytes(const gcsh_fold *f);
/* Prints what is pending, ranks whose texts agree (one is the beginning of
 * the other's) folded over what all of them have, the rest of each after.
 * With end (the command is over), everything goes and an unfinished line
 * is ended.  Otherwise (it runs) waiting[r] (NULL: none) marks a rank that
 * runs and keeps printing: while such a rank has nothing pending, the
 * others' text waits for it (it may be about to print the same), and an
 * unfinished line is printed and stays open (a progress of dots).  With
 * --tag=never nothing waits or folds.  A write that finds its reader gone
 * sets f->closed. */
void gcsh_fold_flush(gcsh_fold *f, int end, const char *waiting);
/* Ends an unfinished line on the screen (before the shell's own lines). */
void gcsh_fold_end_line(gcsh_fold *f);

void gcsh_text_append(gcsh_text *t, const char *s, size_t n);
/* Appends "[0,2-3] text<sep>[1] other": ranks[i] said texts[i]; equal texts
 * are folded, in the order of their lowest rank. */
void gcsh_fold_texts(gcsh_text *out, const int *ranks, int n, const char *const *texts,
                     const char *sep);
void gcsh_text_free(gcsh_text *t);
/* Appends text with each of its lines broken to fit width columns (gcsh's
 * own texts: a byte a column), every line after a break starting with
 * indent: gcsh_text_wrap breaks at the last space that fits (the space
 * goes), else after the last '/', else at the width;
 * gcsh_text_wrap_path keeps every character (a file name): it breaks after
 * the last '/' that fits, else at the width.  A break never falls inside
 * the first strlen(indent) columns, so the line's own prefix stays whole. */
void gcsh_text_wrap(gcsh_text *out, const char *text, const char *indent, size_t width);
void gcsh_text_wrap_path(gcsh_text *out, const char *text, const char *indent, size_t width);

#endif
