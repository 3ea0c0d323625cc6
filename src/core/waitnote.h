/* What a rank's blocking wait waits for, in words a hang report can print:
 * "waits at barrier ready #17 for [3]'s word (now 16)".
 *
 * The worker fills it in when a wait does not hold at the first look (the
 * backend's waits: host_wait.c), and clears it when the wait ends; the
 * watcher thread reads it when rank 0 asks where the rank is (collcheck.c's
 * gcsh_check_where) and reads the word itself at that moment, so the value
 * it prints is the one seen now.  The word is read only while the note is
 * set, that is while the wait holds the memory (a spin lock orders the two
 * threads: the worker takes it twice per slow wait, never per poll). */
#ifndef GCSH_WAITNOTE_H
#define GCSH_WAITNOTE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/dtype.h"

typedef struct gcsh_wait_note {
    atomic_int lock;                /* 0 free, 1 held (zero-initialised ctx: free) */
    int active;
    char what[64];                  /* "barrier ready #17", "slot 0" (a signal) */
    int peer;                       /* the rank (in the communicator) whose word it is, or -1 */
    const _Atomic uint64_t *word;   /* the word waited on */
    uint64_t mask;                  /* the bits compared (ll: the flag half) */
    int shift;                      /* printed value = (word & mask) >> shift */
    /* A data element's wait (t:wait) instead of a word's: elem_width > 0
     * bytes loaded from elem, whose first bytes hold an element of elem_dt
     * (the element itself, or a copy the waiter keeps up to date). */
    const void *elem;
    int elem_width;
    gcsh_dtype elem_dt;
    /* Or words of the backend's own (a GPU wait the kernel notes in host
     * memory): text writes the note, returns whether there is one now. */
    int (*text)(const void *arg, char *buf, size_t len);
    const void *text_arg;
} gcsh_wait_note;

/* An acquire load of width (1, 2, 4 or 8) bytes at p, into the first bytes
 * of the result (the rest zero): a data element another rank stores. */
static inline uint64_t gcsh_load_acquire(const void *p, int width)
{
    uint64_t bits = 0;
    if (width == 1) {
        uint8_t v = atomic_load_explicit((const _Atomic uint8_t *)p, memory_order_acquire);
        memcpy(&bits, &v, 1);
    } else if (width == 2) {
        uint16_t v = atomic_load_explicit((const _Atomic uint16_t *)p, memory_order_acquire);
        memcpy(&bits, &v, 2);
    } else if (width == 4) {
        uint32_t v = atomic_load_explicit((const _Atomic uint32_t *)p, memory_order_acquire);
        memcpy(&bits, &v, 4);
    } else {
        bits = atomic_load_explicit((const _Atomic uint64_t *)p, memory_order_acquire);
    }
    return bits;
}

/* A wait of the worker begins / ends (what: short words, cut to fit). */
void gcsh_wait_note_begin(gcsh_wait_note *n, const char *what, int peer,
                          const _Atomic uint64_t *word, uint64_t mask, int shift);
/* As begin, for an element of dt: the note reads width bytes at elem and
 * prints the element they start with ("element 5 is now 2.5"). */
void gcsh_wait_note_begin_elem(gcsh_wait_note *n, const char *what, int peer, const void *elem,
                               int width, gcsh_dtype dt);
/* As begin, for a wait whose words only the backend can read: the
 * watcher calls text(arg, ...) under the note's lock (it must only read
 * memory), and prints nothing when it returns 0. */
void gcsh_wait_note_begin_text(gcsh_wait_note *n, int (*text)(const void *arg, char *buf,
                                                              size_t len),
                               const void *arg);
void gcsh_wait_note_end(gcsh_wait_note *n);
/* The note in words ("waits at barrier ready #17 for [3]'s word (now 16)"),
 * or "" when no wait is noted; returns whether one is. */
int gcsh_wait_note_text(gcsh_wait_note *n, char *buf, size_t len);

#endif
