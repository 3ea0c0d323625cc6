/* Rank 0's tally of collective counts (src/shell/tally.h), fed MSG_COUNTS
 * payloads as ranks send them at a command's end: members that agree leave
 * nothing to do; members an interrupt left one call apart mark their
 * communicator, naming the first reporter and the first that differed; a
 * communicator only some ranks touched is compared among those; a payload
 * cut short counts only its whole entries; reset forgets the command. */
#include <stdint.h>
#include <string.h>

#include "shell/tally.h"
#include "wire/collcheck.h"
#include "unit.h"

static void report(gcsh_tally *t, int r, const gcsh_comm_count *v, size_t n, size_t cut)
{
    gcsh_tally_add(t, r, v, n * sizeof *v - cut);
}

static const gcsh_tally_entry *find(const gcsh_tally *t, uint64_t id)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->e[i].id == id)
            return &t->e[i];
    return NULL;
}

int main(void)
{
    gcsh_tally t = {0};
    const uint64_t world = 1, split = (1ULL << 63) | 0xabcdef;

    /* four ranks agree on the world; ranks 2 and 3 made a split, and an
     * interrupt left rank 3 one call behind rank 2 there */
    gcsh_comm_count r0[] = {{world, 83}}, r1[] = {{world, 83}};
    gcsh_comm_count r2[] = {{world, 83}, {split, 12}}, r3[] = {{split, 11}, {world, 83}};
    report(&t, 0, r0, 1, 0);
    report(&t, 1, r1, 1, 0);
    report(&t, 2, r2, 2, 0);
    report(&t, 3, r3, 2, 0);
    CHECK(t.n == 2, "two communicators tallied, got %zu", t.n);
    const gcsh_tally_entry *w = find(&t, world), *s = find(&t, split);
    CHECK(w && !w->differs && w->seq == 83 && w->rank == 0, "the world agrees at 83");
    CHECK(s && s->differs, "the split's members differ");
    CHECK(s && s->rank == 2 && s->seq == 12, "the first reporter named: [2] 12");
    CHECK(s && s->other_rank == 3 && s->other_seq == 11, "the first to differ: [3] 11");

    /* a third count changes nothing: the first difference is what is said */
    gcsh_comm_count late[] = {{split, 10}};
    report(&t, 1, late, 1, 0);
    CHECK(s && s->other_rank == 3 && s->other_seq == 11, "still [3] 11 after a third count");

    /* the next command starts empty; a payload cut inside its second entry
     * counts its first */
    gcsh_tally_reset(&t);
    CHECK(t.n == 0, "reset forgets the command");
    gcsh_comm_count two[] = {{world, 90}, {split, 20}};
    report(&t, 0, two, 2, 1);
    CHECK(t.n == 1 && find(&t, world) && !find(&t, split), "a cut entry is ignored");
    gcsh_comm_count behind[] = {{world, 89}};
    report(&t, 1, behind, 1, 0);
    w = find(&t, world);
    CHECK(w && w->differs && w->rank == 0 && w->other_rank == 1, "[0] 90 against [1] 89");

    gcsh_tally_free(&t);
    CHECK(t.e == NULL && t.n == 0, "freed");
    UNIT_END();
}
