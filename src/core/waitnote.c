/* The wait note (waitnote.h). */
#include <sched.h>
#include <stdio.h>

#include "core/waitnote.h"

static void lock(gcsh_wait_note *n)
{
    while (atomic_exchange_explicit(&n->lock, 1, memory_order_acquire))
        sched_yield();
}

static void unlock(gcsh_wait_note *n)
{
    atomic_store_explicit(&n->lock, 0, memory_order_release);
}

void gcsh_wait_note_begin(gcsh_wait_note *n, const char *what, int peer,
                          const _Atomic uint64_t *word, uint64_t mask, int shift)
{
    lock(n);
    snprintf(n->what, sizeof n->what, "%s", what);
    n->peer = peer;
    n->word = word;
    n->mask = mask;
    n->shift = shift;
    n->active = 1;
    unlock(n);
}

void gcsh_wait_note_end(gcsh_wait_note *n)
{
    lock(n);
    n->active = 0;
    n->word = NULL;
    unlock(n);
}

int gcsh_wait_note_text(gcsh_wait_note *n, char *buf, size_t len)
{
    lock(n);
    int active = n->active;
    if (active) {
        unsigned long long now =
            (atomic_load_explicit(n->word, memory_order_acquire) & n->mask) >> n->shift;
        if (n->peer >= 0)
            snprintf(buf, len, "waits at %s for [%d]'s word (now %llu)", n->what, n->peer, now);
        else
            snprintf(buf, len, "%s is now %llu", n->what, now);
    } else if (len) {
        buf[0] = '\0';
    }
    unlock(n);
    return active;
}
