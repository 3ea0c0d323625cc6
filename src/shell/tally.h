/* Rank 0's tally of the collective counts ranks report at a command's end
 * (MSG_COUNTS, collcheck.h): for each communicator a rank checked or
 * entered collectives on in the command, how many it has issued.
 *
 * Members of a communicator always agree on that count after a command
 * that ran to its end.  An interrupt can break that: it may land on one
 * rank in a collective's check after another rank passed the same check
 * (it saw everyone there) and ran the collective, or queued it.  The
 * members are then one call apart, and the next collective on the
 * communicator waits forever for a call that never comes; the coordinator
 * aborts such a communicator on every rank instead. */
#ifndef GCSH_TALLY_H
#define GCSH_TALLY_H

#include <stddef.h>
#include <stdint.h>

typedef struct gcsh_tally_entry {
    uint64_t id;
    uint64_t seq;     /* the first reporter's count */
    int rank;         /* the first reporter */
    int differs;      /* a later reporter's count was other */
    uint64_t other_seq;
    int other_rank;   /* the first reporter that differed */
} gcsh_tally_entry;

typedef struct gcsh_tally {
    gcsh_tally_entry *e;
    size_t n, cap;
} gcsh_tally;

/* A MSG_COUNTS payload (gcsh_comm_count[]) of rank r; malformed: ignored. */
void gcsh_tally_add(gcsh_tally *t, int r, const void *data, size_t len);
/* Forgets the command's reports (the memory stays for the next). */
void gcsh_tally_reset(gcsh_tally *t);
void gcsh_tally_free(gcsh_tally *t);

#endif
