/* Rank 0's tally of collective counts.  See tally.h. */
#include <stdlib.h>
#include <string.h>

#include "shell/tally.h"
#include "wire/collcheck.h"

static gcsh_tally_entry *entry_of(gcsh_tally *t, uint64_t id)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->e[i].id == id)
            return &t->e[i];
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 8;
        gcsh_tally_entry *p = realloc(t->e, cap * sizeof *p);
        if (!p)
            return NULL; /* then that communicator goes unchecked */
        t->e = p;
        t->cap = cap;
    }
    t->e[t->n] = (gcsh_tally_entry){.id = id, .rank = -1, .other_rank = -1};
    return &t->e[t->n++];
}

void gcsh_tally_add(gcsh_tally *t, int r, const void *data, size_t len)
{
    for (size_t off = 0; off + sizeof(gcsh_comm_count) <= len; off += sizeof(gcsh_comm_count)) {
        gcsh_comm_count c;
        memcpy(&c, (const char *)data + off, sizeof c);
        gcsh_tally_entry *e = entry_of(t, c.id);
        if (!e)
            return;
        if (e->rank < 0) {
            e->rank = r;
            e->seq = c.seq;
        } else if (c.seq != e->seq && !e->differs) {
            e->differs = 1;
            e->other_rank = r;
            e->other_seq = c.seq;
        }
    }
}

void gcsh_tally_reset(gcsh_tally *t)
{
    t->n = 0;
}

void gcsh_tally_free(gcsh_tally *t)
{
    free(t->e);
    *t = (gcsh_tally){0};
}
