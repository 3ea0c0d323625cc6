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
    n->elem = NULL;
    n->elem_width = 0;
    n->text = NULL;
    n->active = 1;
    unlock(n);
}

void gcsh_wait_note_begin_elem(gcsh_wait_note *n, const char *what, int peer, const void *elem,
                               int width, gcsh_dtype dt)
{
    lock(n);
    snprintf(n->what, sizeof n->what, "%s", what);
    n->peer = peer;
    n->word = NULL;
    n->elem = elem;
    n->elem_width = width;
    n->elem_dt = dt;
    n->text = NULL;
    n->active = 1;
    unlock(n);
}

void gcsh_wait_note_begin_text(gcsh_wait_note *n, int (*text)(const void *arg, char *buf,
                                                              size_t len),
                               const void *arg)
{
    lock(n);
    n->word = NULL;
    n->elem = NULL;
    n->text = text;
    n->text_arg = arg;
    n->active = 1;
    unlock(n);
}

/* The element's value now, as Lua prints it (integers exact, floats %.14g). */
static void elem_now(const gcsh_wait_note *n, char *buf, size_t len)
{
    uint64_t bits = gcsh_load_acquire(n->elem, n->elem_width);
    if (gcsh_dtype_is_float(n->elem_dt))
        snprintf(buf, len, "%.14g", gcsh_load_f(&bits, n->elem_dt, 0));
    else
        snprintf(buf, len, "%lld", (long long)gcsh_load_i(&bits, n->elem_dt, 0));
}

void gcsh_wait_note_end(gcsh_wait_note *n)
{
    lock(n);
    n->active = 0;
    n->word = NULL;
    n->elem = NULL;
    n->text = NULL;
    unlock(n);
}

int gcsh_wait_note_text(gcsh_wait_note *n, char *buf, size_t len)
{
    lock(n);
    int active = n->active;
    if (active && n->text) {
        active = n->text(n->text_arg, buf, len);
        if (!active && len)
            buf[0] = '\0';
    } else if (active && n->elem) {
        char now[40];
        elem_now(n, now, sizeof now);
        snprintf(buf, len, "%s is now %s", n->what, now);
    } else if (active) {
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
