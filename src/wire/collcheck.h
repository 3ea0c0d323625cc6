/* Collective checks, the rank's whereabouts (where.h), communicator aborts
 * and unrecoverable faults (faults.h): what keeps a session from hanging
 * or being lost.  collcheck.c holds the checks and the aborts.
 *
 * Checks (.check on, the default).  Before a collective operation is issued,
 * the rank sends a fingerprint of it (operation, communicator id, sequence
 * number, count, dtype, op, root or peer, window, offset) to rank 0's
 * coordinator over its command channel and waits, interruptibly, for the
 * verdict.  The coordinator groups the fingerprints of a communicator's
 * members (collcheck_coord.c): when all are there and equal, every one gets OK and
 * the operation runs; when they differ, every one gets the same error naming
 * each rank's call, folded by rank range, and nothing is issued.  A member that
 * cannot or does not arrive within .timeout is named with where it is instead.
 * MPI is never involved, so a failed check leaves every communicator usable.
 *
 * The board.  When every member of the communicator lives on rank 0's node,
 * the fingerprint goes first to the node's check board (board.h): each rank
 * posts it and reads the others'; when all are there and equal (or have
 * already moved past this collective), the check passed, in about a
 * microsecond.  Anything else (a mismatch, a member missing after
 * BOARD_SPIN_S, a member that escalated or failed) escalates: the rank goes
 * to the coordinator as above, and so does every member that sees it did.
 * The coordinator counts members that passed on the board as agreeing and
 * waits for those still posted there, so both paths give one verdict and
 * the same messages.  Other communicators, and send/recv, always go to the
 * coordinator.
 *
 * Sequence numbers count the collectives issued on a communicator (send and
 * recv are checked in pairs and not counted).  A check that fails consumes no
 * number, so the members stay in step.  Communicator ids are equal on all
 * members: the n-th world communicator of the session has id n (the first is
 * 0), a split's id is derived from its parent's id, the split's sequence
 * number and the color.
 *
 * Whereabouts.  While a rank is inside a checked operation or a blocking wait
 * it publishes "in barrier #16" and since when; when rank 0 asks (MSG_WHERE),
 * the watcher answers with that or with the Lua line the worker is running
 * (sampled by a one-shot count hook).
 *
 * Aborts.  A communicator whose operation was abandoned (an interrupt, an
 * MPI error: the ranks are out of step) or that .abort tore down is aborted
 * on every rank: the backend's abort, then every use fails with "attempt to
 * use an aborted communicator".  A rank that abandons an operation says so
 * at once (MSG_ABORTED); the coordinator stops the members still inside an
 * operation on that communicator (MSG_ABORT_NOW: they would wait forever),
 * and passes the ids on to every rank before the next command.
 * comm.world() then builds a fresh world.
 *
 * Abandons (.check off).  Nothing compares fingerprints, so a rank whose
 * arguments fail before it enters an operation would leave the members that
 * did enter it waiting forever.  A binding states its intent as soon as it
 * knows the communicator (gcsh_check_intent: a few stores, no message), and
 * gcsh_check_enter clears it.  An error raised by that binding that ends the
 * command (gcsh_check_abandon, from the message handler, at once) sends
 * MSG_ABANDONED: this rank will not join that operation (one a pcall
 * catches is the script's to handle: it may call again).  The coordinator passes the first one
 * on to the ranks still running (MSG_ABANDON_NOW): a member inside that
 * operation stops it (GCSH_INTERRUPT_PEER; the communicator is then aborted
 * as above), one that reaches it later refuses to enter it, naming the rank
 * and its error.  When the command ends and not every member said it did
 * not join, some member may have run it: the communicator is out of step
 * and is aborted on every rank.  Arguments that are fine cost nothing more.
 *
 * Unchecked members.  A rank with .check off (gcsh.check(false) on it
 * alone) sends no fingerprint, so checked members would wait for it while
 * it waits in the operation: it says once a command that it runs
 * unchecked (MSG_UNCHECKED, with the call), and the watcher answers rank
 * 0's MSG_ASK_OP with the unchecked operation it is in (op_unchecked,
 * published with the operation); rank 0 compares that call with the
 * checked ranks' (shell/collcheck_coord.h).  When their check fails, it
 * abandons the operation for them (gcsh_abandon_msg.unchecked): the
 * unchecked rank stops it, or refuses it when it comes.  A timed loop of
 * unchecked calls pays one message a command, none a call.
 *
 * Faults.  A backend that meets an error the process cannot recover from
 * (a sticky CUDA error) sets ctx->fatal; gcsh_raise then reports it to rank 0,
 * which prints it and makes every rank exit with GCSH_EXIT_FATAL. */
#ifndef GCSH_COLLCHECK_H
#define GCSH_COLLCHECK_H

#include <stddef.h>
#include <stdint.h>

#include <lua.h>

#include "core/check_hooks.h"
#include "core/gcsh.h"
#include "wire/faults.h" /* a check that fails raises */
#include "wire/where.h"  /* a checked operation is published */

#define GCSH_ABORTED_MSG "attempt to use an aborted communicator"

enum gcsh_fp_kind { GCSH_FP_COLLECTIVE = 0, GCSH_FP_SEND = 1, GCSH_FP_RECV = 2 };
/* A fingerprint's said, in what a rank tells rank 0 of its sends and
 * recvs beside its checks (MSG_UNCHECKED): the pair counts that come with
 * it are all it issued on that communicator (COUNTS: at the end of a
 * command, back to checks), or it is calls the rank issues now without a
 * check each (CALLS: a loop of them, c:loop, or a graph's replay): `times`
 * calls of this fingerprint, `stride` apart in its count of the pair. */
enum { GCSH_SAID_COUNTS = 1, GCSH_SAID_CALLS = 2 };

/* What every member must agree on.  Fields that do not apply are -1 (0 for
 * window); every byte is sent, so gcsh_fp_init zeroes it all first. */
typedef struct gcsh_fingerprint {
    char op[24];        /* "allreduce", "window", "signals.free" ... */
    char extra[32];     /* anything else that must be equal (a window kind) */
    uint64_t comm;      /* communicator id */
    uint64_t seq;       /* per-communicator sequence number; 0 for send/recv */
    int64_t count;      /* elements */
    int64_t offset;
    uint64_t window;    /* window id */
    int32_t kind;       /* enum gcsh_fp_kind */
    int32_t dtype;      /* gcsh_dtype */
    int32_t redop;      /* gcsh_redop */
    int32_t root;       /* root, or the peer of send/recv: a rank of the communicator */
    int32_t comm_rank, comm_size;
    uint32_t attempt;   /* checks of this seq that failed in this command: not compared,
                           it tells the board's entries of a retry apart */
    uint32_t said;      /* in what a rank says of its unchecked calls (MSG_UNCHECKED):
                           GCSH_SAID_COUNTS, GCSH_SAID_CALLS; not compared */
    uint32_t times, stride; /* GCSH_SAID_CALLS: how many, how far apart (0: one) */
    uint64_t entered;   /* the rank's count of operations entered, this one included
                           (gcsh_check_enter): not compared; rank 0's checker drops
                           what a rank says of an unchecked call entered before its
                           latest check (an answer overtaken by the check) */
    uint64_t sent, received; /* send/recv: this rank's sends to root and receives from
                           it on the communicator before this call (gcsh_check_enter
                           fills them in): not compared.  MPI and NCCL match a pair's
                           calls in order (the n-th send meets the n-th recv), so rank
                           0's checker tells an unchecked peer's call that meets this
                           one from an earlier or later one of the pair */
} gcsh_fingerprint;

/* The check state of one communicator, kept inside its Lua handle. */
typedef struct gcsh_comm_check {
    struct gcsh_comm_check *next, *prev; /* the rank's live communicators */
    gcsh_comm_impl *impl;                /* the backend's, for aborts */
    uint64_t id;
    uint64_t seq;   /* collectives issued */
    int rank, size;
    int *members;   /* world rank of each member, or NULL when unknown */
    int linked;
    int aborted;
    /* Checks on the board (board.h): whether every member posts there (-1:
     * not known yet), and the attempt of the check in hand (failed checks
     * of sequence number attempt_seq in command attempt_chunk). */
    int on_board;
    uint32_t attempt, attempt_chunk;
    uint64_t attempt_seq;
    /* The command that last checked or entered a collective on it: its
     * count then goes to rank 0 at the command's end (MSG_COUNTS). */
    uint32_t touched_chunk;
    /* sends to and receives from each member issued so far, checked or not
     * (NULL until the first): a fingerprint's sent and received */
    uint64_t *sent, *received;
    uint32_t p2p_chunk; /* the command that last issued one (its end says the counts) */
} gcsh_comm_check;

/* MSG_COUNTS, at the end of a command: a communicator's id and its count
 * of collectives (seq) on this rank, for each one touched in the command;
 * rank 0 aborts one whose members an interrupt left apart (shell/tally.h). */
typedef struct gcsh_comm_count {
    uint64_t id, seq;
} gcsh_comm_count;

/* ---- communicators (l_comm.c) --------------------------------------------- */

/* Registers cc (impl, id, members: an array of size taken over, or NULL). */
void gcsh_comm_check_attach(gcsh_ctx *ctx, gcsh_comm_check *cc, gcsh_comm_impl *impl,
                            uint64_t id, int rank, int size, int *members);
/* Unregisters cc and frees its members; idempotent. */
void gcsh_comm_check_detach(gcsh_ctx *ctx, gcsh_comm_check *cc);
/* n more sends (send != 0) or receives with member peer issued than
 * gcsh_check_enter counted (a loop of them under one check, a graph's
 * replays); negative: fewer (a loop that stopped before its first). */
void gcsh_check_p2p_issued(gcsh_ctx *ctx, gcsh_comm_check *cc, int send, int peer, int64_t n);
/* A loop of sends or recvs (c:loop) past its check, fp: the check counted
 * one, this counts `more`, and rank 0's checker hears the counts (a peer's
 * check meets the loop's calls; GCSH_SAID_LOOP). */
void gcsh_check_loop_issues(gcsh_ctx *ctx, gcsh_comm_check *cc, const gcsh_fingerprint *fp,
                            int64_t more);
/* Before rec's n replays: counts the sends and recvs they issue, and tells
 * rank 0 which (their fingerprints as captured, GCSH_SAID_CALLS) and the
 * counts after (a peer's check meets them: they run unchecked from C). */
void gcsh_check_replay_issues(gcsh_ctx *ctx, const gcsh_graph_rec *rec, uint64_t n);
/* The id of the next world communicator (collective: every rank counts). */
uint64_t gcsh_comm_world_id(gcsh_ctx *ctx);
uint64_t gcsh_comm_split_id(const gcsh_comm_check *parent, int color);
/* Raises GCSH_ABORTED_MSG when cc was aborted. */
void gcsh_check_usable(lua_State *L, const gcsh_comm_check *cc);
/* Whether cc is aborted, counting the aborts other ranks announced (the
 * watcher's list) and the backend's own (an asynchronous error), which it
 * applies now: what was made on cc then stays readable, never written or
 * freed together (symmem.c). */
int gcsh_check_aborted(gcsh_ctx *ctx, gcsh_comm_check *cc);
/* Aborts cc here now and, at the command's end, on every rank (as an
 * interrupted collective does): for work of this rank that its peers wait
 * in and that it gave up outside a collective (a persistent resident
 * stopped with calls in flight). */
void gcsh_check_abort_comm(gcsh_ctx *ctx, gcsh_comm_check *cc);

/* ---- checked operations ------------------------------------------------------
 *
 *   gcsh_fingerprint fp;
 *   gcsh_fp_init(&fp, cc, "allreduce");
 *   fp.count = n; fp.dtype = dt; fp.redop = op;
 *   gcsh_check_enter(L, cc, &fp);        raises on mismatch, timeout, interrupt
 *   int rc = <the backend's operation>;
 *   gcsh_check_leave(L, cc, rc);         raises ctx->err when rc != 0
 *
 * Everything between enter and leave must not raise: leave unpublishes. */
void gcsh_fp_init(gcsh_fingerprint *fp, const gcsh_comm_check *cc, const char *op);
void gcsh_check_enter(lua_State *L, gcsh_comm_check *cc, gcsh_fingerprint *fp);
/* What the check tells its listener (ctx->check_hooks) about fp on cc. */
void gcsh_check_note_of(gcsh_check_note *n, gcsh_ctx *ctx, const gcsh_comm_check *cc,
                        const gcsh_fingerprint *fp);
void gcsh_check_leave(lua_State *L, gcsh_comm_check *cc, int rc);

/* A checked operation on cc is about to read its arguments (p2p: a send or
 * a recv); gcsh_check_enter ends the intent.  Only kept with .check off. */
void gcsh_check_intent(lua_State *L, const gcsh_comm_check *cc, int p2p);
/* An error ends the command (the message handler: why, its text): the
 * intent standing, if the binding that stated it raised the error, is
 * abandoned (MSG_ABANDONED). */
void gcsh_check_abandon(lua_State *L, const char *why);
/* pcall or xpcall caught an error: the intent standing, if any, is the
 * script's to handle (it may call again). */
void gcsh_check_caught(gcsh_ctx *ctx);

/* MSG_ABANDONED and MSG_ABANDON_NOW: rank `from` (the message's seq for
 * ABANDON_NOW) will not join this operation in command `chunk`.  Followed
 * by the comm's members' world ranks (nmembers: comm_size, or 0 unknown). */
typedef struct gcsh_abandon_msg {
    uint64_t comm, seq; /* seq: the collective's sequence number; 0 for p2p */
    uint32_t chunk;     /* the command's number (the coordinator's) */
    int32_t comm_rank;  /* the abandoning rank's rank in comm */
    int32_t comm_size, nmembers;
    int32_t unchecked;  /* 1: its check failed while others run the operation unchecked
                           (gcsh.check(false)), which is why it does not join */
    char why[200];      /* its error, terminated */
} gcsh_abandon_msg;

/* The fingerprint exchange alone (no publishing): 0 when every member
 * agreed, else -1 with the message in ctx->err.  A no-op with .check off. */
int gcsh_check_collective(lua_State *L, gcsh_comm_check *cc, const gcsh_fingerprint *fp);

/* This rank's checks so far: passed on the board, answered by the
 * coordinator (escalated or never eligible), failed (either way). */
typedef struct gcsh_check_counts {
    uint64_t board, coordinator, failed;
} gcsh_check_counts;
void gcsh_check_get_counts(gcsh_ctx *ctx, gcsh_check_counts *out);

/* Whether msg is this rank's last failed collective check's error, raised
 * or re-raised as it came (positions before it, a traceback after): what
 * decides a skip's consequence (worker.c) and another rank's trouble
 * (gcsh.is_check_error, for lessons and sweeps), never the words alone. */
int gcsh_check_error_is(const gcsh_ctx *ctx, const char *msg);

/* .check for this rank: gcsh.check([on]) and CHUNK_CHECK set it. */
int gcsh_check_enabled(gcsh_ctx *ctx);
void gcsh_check_set_enabled(gcsh_ctx *ctx, int on);

/* ---- the worker's side (worker.c) ------------------------------------------ */

typedef struct gcsh_capture gcsh_capture;

/* Creates ctx->check: fingerprints go out on fd under cap's lock. */
int gcsh_check_open(gcsh_ctx *ctx, int fd, gcsh_capture *cap);
void gcsh_check_close(gcsh_ctx *ctx);
/* A chunk begins (its name, for "line 4 of the chunk") / ends: reports the
 * communicators aborted meanwhile (MSG_ABORTED) before the DONE. */
void gcsh_check_chunk_begin(gcsh_ctx *ctx, const char *name, int check_on, uint32_t chunk);
void gcsh_check_chunk_end(gcsh_ctx *ctx);
/* MSG_ABORT_COMMS: aborts the listed communicators, or all of them. */
void gcsh_check_abort_ids(gcsh_ctx *ctx, const uint64_t *ids, size_t n, int all);
/* Watcher thread, MSG_ABORT_NOW: rank `from` aborted these communicators
 * while this command runs.  An operation in progress on one of them stops
 * (GCSH_INTERRUPT_PEER: it would wait for that rank forever); the worker
 * aborts them before it next uses a communicator. */
void gcsh_check_abort_now(gcsh_ctx *ctx, const uint64_t *ids, size_t n, int from);
/* Watcher thread, MSG_ASK_OP: answers MSG_UNCHECKED with the operation
 * this rank is in with .check off, or nothing (shell/collcheck_coord.h). */
void gcsh_check_answer_unchecked(gcsh_ctx *ctx);
/* Watcher thread, MSG_ABANDON_NOW: rank `from` will not join m's operation
 * (see Abandons above). */
void gcsh_check_abandon_now(gcsh_ctx *ctx, const gcsh_abandon_msg *m, int from);
/* A lua_CFunction run at the end of every command that succeeded: waits for
 * the work the command left on the rank's stream (cuda: collectives, kernels
 * and copies are stream-ordered), so that an asynchronous error, or a hang
 * interrupted by Ctrl-C, is reported by the command that caused it. */
int gcsh_check_end_sync(lua_State *L);

#endif
