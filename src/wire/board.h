/* The check board: node shared memory where the ranks of rank 0's node post
 * the fingerprints of their collectives, so that a check whose members all
 * live there costs a few loads and stores instead of a round trip to rank
 * 0's coordinator (collcheck.h says when each path is taken).
 *
 * Each rank owns a table of slots, one per communicator it checks on; only
 * the owner writes them, everyone reads.  A slot holds the owner's latest
 * check on that communicator: the command (chunk) it belongs to, the
 * communicator's sequence number, the attempt (failed checks of the same
 * number in the same command), the state and the fingerprint.  Writes go
 * through a version counter (a sequence lock), so a reader copies a slot
 * whole or tries again.
 *
 * States: POSTED (waiting for the others), PASSED (every member agreed),
 * ESCALATED (gone to the coordinator, which then decides for everyone who
 * has not passed), FAILED (the check failed on this rank). */
#ifndef GCSH_BOARD_H
#define GCSH_BOARD_H

#include <stdint.h>

#include "wire/collcheck.h"

typedef struct gcsh_board gcsh_board;

enum gcsh_board_state { BOARD_NONE, BOARD_POSTED, BOARD_PASSED, BOARD_ESCALATED, BOARD_FAILED };

typedef struct gcsh_board_entry {
    uint32_t chunk;   /* the command's number (the coordinator's chunk sequence) */
    uint32_t attempt;
    uint64_t seq;
    int32_t state;    /* enum gcsh_board_state */
    gcsh_fingerprint fp;
} gcsh_board_entry;

/* Collective over MPI_COMM_WORLD at start-up (before any thread): the ranks
 * of rank 0's node map one board; the others get NULL (they always check
 * through the coordinator).  Returns NULL too when shared memory cannot be
 * had, which only slows checks down. */
gcsh_board *gcsh_board_open(const gcsh_ctx *ctx);
/* Collective again, at the end. */
void gcsh_board_close(gcsh_board *b);

/* Whether world rank r posts on this board. */
int gcsh_board_has(const gcsh_board *b, int r);

/* The owner's side: writes e as r's entry for communicator `comm` (a slot is
 * taken on first use; -1 when r's table is full), or changes its state. */
int gcsh_board_post(gcsh_board *b, int r, uint64_t comm, const gcsh_board_entry *e);
void gcsh_board_set_state(gcsh_board *b, int r, uint64_t comm, enum gcsh_board_state s);

/* The owner's communicator is gone: its slot may be taken over once the
 * table is full (until then the others still read its last entry). */
void gcsh_board_forget(gcsh_board *b, int r, uint64_t comm);

/* Anyone: r's latest entry for comm; 0 when r has none (state BOARD_NONE). */
int gcsh_board_read(const gcsh_board *b, int r, uint64_t comm, gcsh_board_entry *out);

#endif
