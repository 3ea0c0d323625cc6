/* Rank 0's side of the collective checks (collcheck.h): the fingerprints ranks
 * are waiting on, grouped per communicator, compared, and answered.
 *
 * A rank waits on at most one fingerprint at a time, so the pending set is
 * one slot per rank.  A collective's group is complete when every member of
 * its communicator waits on that communicator; a send or recv pairs with its
 * peer's opposite call.  A group that cannot complete (a member finished the
 * command, is gone, or was not sent the command) or that waited .timeout is
 * failed, naming where each missing member is; for members that are running
 * that needs their answer to MSG_WHERE first (a "probe", coord.c).
 *
 * A member that skips its checks (gcsh.check(false), .check off) sends no
 * fingerprint: it goes straight into the operation and waits there for the
 * others.  It says once per command that it runs unchecked (MSG_UNCHECKED);
 * then a group that waits for it asks it which operation it is in
 * (MSG_ASK_OP, answered with MSG_UNCHECKED), again while it is not there
 * yet.  Its call counts as that member's fingerprint: equal ones pass (the
 * checked ranks join it), different ones fail the checked ranks, naming the
 * member that skipped its check, and that member is stopped (an abandon,
 * collcheck.h: it never waits for ranks whose check failed).
 *
 * Sends and recvs meet in order: a send's or recv's fingerprint carries the
 * rank's counts of sends to and recvs from each member issued before it
 * (collcheck.h), so the check of one meets the peer's call with the same
 * count; when the peer's counts (in its own waiting call, in what it says
 * unchecked, or at the end of its command or before a loop) show it issued
 * that call already, the check passes uncompared: there is nothing left to
 * compare it with, and nothing to wait for. */
#ifndef GCSH_COLLCHECK_COORD_H
#define GCSH_COLLCHECK_COORD_H

#include <stddef.h>
#include <stdint.h>

#include "wire/collcheck.h"

typedef struct fp_slot {
    int present;
    uint32_t serial;
    gcsh_fingerprint fp;
    int *members; /* world ranks, or NULL when the rank did not know them */
    double since;
} fp_slot;

/* A rank that runs checked operations unchecked in this command. */
typedef struct unchecked_slot {
    int said;              /* it said so (MSG_UNCHECKED) */
    int known;             /* fp is the unchecked operation it was in when it last said */
    gcsh_fingerprint fp;
    double next_ask;       /* when a group that waits for it may ask again */
    double gap;            /* the wait before the next ask (doubles, up to ASK_MAX_S) */
    uint64_t checked;      /* the entered count of its latest check: what it says of
                              a call entered before that one is over */
    /* sends and recvs it told of in this command (what it said of an
     * unchecked one, a loop's or a graph replay's: GCSH_SAID_CALLS), the
     * last GCSH_CHECKER_CALLS: a check meets the one of its count */
#define GCSH_CHECKER_CALLS 16
    gcsh_fingerprint calls[GCSH_CHECKER_CALLS];
    int ncalls;            /* told in all (the ring holds the last ones) */
    double still_since;    /* when it was first seen in fp's call */
    int stalled;           /* in it for UNCHECKED_STALL_S (collcheck_coord.c) */
} unchecked_slot;

/* A check that failed in this command while members it waited for had
 * not come: one that comes later unchecked must not wait for its ranks. */
#define GCSH_CHECKER_FAILED 8
typedef struct failed_check {
    int from;     /* a rank whose check failed (-1: none) */
    gcsh_fingerprint fp;
    int *members; /* its communicator's world ranks, or NULL */
} failed_check;

/* What a rank told of the sends and recvs it issued on a communicator
 * (collcheck.c's pair counts: with a send or recv, a call on a communicator
 * that had some, before a loop of them, at the end of a command).  Counts
 * only grow, so this is what it issued at least; kept across commands. */
#define GCSH_CHECKER_TOLD 4 /* communicators a rank, the last told of */
typedef struct told_counts {
    uint64_t comm;
    int size;        /* members; 0: an empty entry */
    uint64_t *pairs; /* sent to each member, then received from each */
    uint64_t used;   /* the checker's tick when last told */
} told_counts;

typedef struct gcsh_checker {
    int size;
    fp_slot *slot;           /* per world rank */
    unchecked_slot *unchecked; /* per world rank */
    told_counts *told;       /* GCSH_CHECKER_TOLD per world rank */
    uint64_t tick;
    failed_check failed[GCSH_CHECKER_FAILED]; /* the last ones, a ring */
    int nfailed;
} gcsh_checker;

/* What the checker needs from the coordinator. */
typedef struct gcsh_checker_io {
    void *arg;
    /* whether rank r runs this command and has not finished it */
    int (*running)(void *arg, int r);
    /* where a rank that is not waiting on a fingerprint is, as text
     * ("finished the command", "running line 4 of the chunk") */
    const char *(*where)(void *arg, int r);
    void (*verdict)(void *arg, int r, uint32_t serial, int ok, const char *text);
    /* Where rank r stands on the check board for the check fp (collcheck.h):
     * CHECK_BOARD_AGREED (it passed there), CHECK_BOARD_COMING (posted or
     * escalated: its fingerprint will come, or its check will pass) or
     * CHECK_BOARD_ABSENT.  NULL: no board. */
    int (*board)(void *arg, int r, const gcsh_fingerprint *fp);
    /* The os.exit status of a rank that ended the command by os.exit, or
     * failed only because of such an exit (the exit's status), or -1; and,
     * for each rank of a group that failed only because the ranks missing
     * from it called os.exit or failed by it, that failure's cause (the
     * worst of their statuses).  NULL: not asked. */
    int (*exited)(void *arg, int r);
    void (*because_exit)(void *arg, int r, int status);
    /* Rank `from` (waiting with fp, its communicator's members: members,
     * or NULL) will not join fp's operation, whose other members run it
     * unchecked: they must stop it or not enter it (an abandon, why).
     * NULL: not told. */
    void (*abandon)(void *arg, int from, const gcsh_fingerprint *fp, const int *members,
                    const char *why);
} gcsh_checker_io;

enum { CHECK_BOARD_ABSENT, CHECK_BOARD_AGREED, CHECK_BOARD_COMING };

void gcsh_checker_init(gcsh_checker *k, int size);
void gcsh_checker_destroy(gcsh_checker *k);
/* Forgets every pending fingerprint without answering (interrupts, the end
 * of a command). */
void gcsh_checker_clear(gcsh_checker *k);
/* A MSG_UNCHECKED payload from rank r: empty (it runs unchecked, in no
 * such operation now), the fingerprint of the unchecked operation it is
 * in, or its entered count (8 bytes) as it comes back to checks (its
 * unchecked calls are over; a fingerprint of one entered before that is
 * dropped); -1 when malformed. */
int gcsh_checker_unchecked(gcsh_checker *k, const gcsh_checker_io *io, int r, const void *payload,
                           size_t len, double now);
/* The ranks a waiting group would ask which unchecked operation they are
 * in (MSG_ASK_OP) now, into ranks (k->size of room); their next ask is
 * put off.  Returns how many. */
int gcsh_checker_asks(gcsh_checker *k, const gcsh_checker_io *io, double now, int *ranks);
/* The earliest moment a waiting group asks again (0: none). */
double gcsh_checker_next_ask(gcsh_checker *k, const gcsh_checker_io *io);
/* A MSG_FP payload from rank r; -1 when malformed. */
int gcsh_checker_add(gcsh_checker *k, int r, const void *payload, size_t len, double now);
int gcsh_checker_waiting(const gcsh_checker *k, int r);
/* "in allreduce #5 (waiting for the others, 2.0 s)" for a waiting rank. */
void gcsh_checker_where(const gcsh_checker *k, int r, double now, char *buf, size_t len);

/* Answers every group that is complete, and every failed group whose missing
 * members are all accounted for: waiting elsewhere, not running, or (with
 * probed set) running with a fresh answer to MSG_WHERE.  timeout <= 0: no
 * group times out. */
void gcsh_checker_resolve(gcsh_checker *k, const gcsh_checker_io *io, double now,
                          double timeout, int probed);
/* Whether some failed group has a missing member that is running and not
 * waiting on a fingerprint: its whereabouts are needed (MSG_WHERE). */
int gcsh_checker_needs_probe(const gcsh_checker *k, const gcsh_checker_io *io, double now,
                             double timeout);
/* Whether a pending group waits for members still on the check board (they
 * pass or escalate without a message to the coordinator: poll). */
int gcsh_checker_expects_board(const gcsh_checker *k, const gcsh_checker_io *io);
/* The earliest moment a pending group times out (0: none). */
double gcsh_checker_deadline(const gcsh_checker *k, double timeout);

#endif
