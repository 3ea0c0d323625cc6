/* Rank 0's side of the collective checks (src/shell/collcheck_coord.h),
 * driven with fingerprints as the ranks send them: equal calls pass, a
 * mismatch fails every member with one message, a send waiting beside a
 * collective is a mismatch, and a rank that brings an earlier check after
 * the others passed it on the check board and went on passes alone (the
 * others' later check waits for it), instead of being compared with their
 * later one.  A member that runs unchecked (gcsh.check(false)) is asked
 * where it is, its call compared, and stopped when the check fails. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shell/collcheck_coord.h"
#include "unit.h"

#define RANKS 4

static struct {
    int answered, ok;
    char text[512];
} got[RANKS];

static int running(void *arg, int r) { (void)arg, (void)r; return 1; }
static const char *where(void *arg, int r) { (void)arg, (void)r; return "running line 1"; }

static void verdict(void *arg, int r, uint32_t serial, int ok, const char *text)
{
    (void)arg, (void)serial;
    got[r].answered = 1;
    got[r].ok = ok;
    snprintf(got[r].text, sizeof got[r].text, "%s", text);
}

/* The check board says a member not waiting here will come. */
static int board(void *arg, int r, const gcsh_fingerprint *fp)
{
    (void)arg, (void)r, (void)fp;
    return CHECK_BOARD_COMING;
}

static const gcsh_checker_io io = {NULL, running, where, verdict, board, NULL, NULL, NULL};
/* Without a board, numbers only advance through the coordinator. */
static const gcsh_checker_io no_board = {NULL, running, where, verdict, NULL, NULL, NULL, NULL};

/* Rank 1 left the command: by os.exit(exit_of_1), or (-1) by finishing. */
static int exit_of_1;
static int caused[RANKS];
static int rank0_runs(void *arg, int r) { (void)arg; return r == 0; }
static const char *left(void *arg, int r) { (void)arg, (void)r; return "called os.exit"; }
static int exited(void *arg, int r) { (void)arg; return r == 1 ? exit_of_1 : -1; }
static void because_exit(void *arg, int r, int status) { (void)arg; caused[r] = status; }
static const gcsh_checker_io exits = {NULL,   rank0_runs,   left, verdict,
                                      NULL, exited, because_exit, NULL};

static void reset(void) { memset(got, 0, sizeof got); }

/* Abandons the checker asks for (a rank whose check failed, on whose
 * behalf the members running the operation unchecked must stop). */
static struct {
    int n, from;
    uint64_t seq;
} abandoned;
static void abandon(void *arg, int from, const gcsh_fingerprint *fp, const int *members,
                    const char *why)
{
    (void)arg, (void)members, (void)why;
    abandoned.n++;
    abandoned.from = from;
    abandoned.seq = fp->seq;
}
static const gcsh_checker_io asks = {NULL, running, where, verdict, NULL, NULL, NULL, abandon};

/* Rank r's allreduce #seq of count elements on communicator 7 of 2 ranks,
 * world ranks 0 and 1, as a check sends it (waiting) or as a rank that
 * runs it unchecked says it (MSG_UNCHECKED: the fingerprint alone). */
static gcsh_fingerprint allreduce_fp(int r, uint64_t seq, int64_t count)
{
    gcsh_fingerprint fp;
    memset(&fp, 0, sizeof fp);
    snprintf(fp.op, sizeof fp.op, "allreduce");
    fp.comm = 7;
    fp.seq = seq;
    fp.count = count;
    fp.kind = GCSH_FP_COLLECTIVE;
    fp.root = fp.dtype = fp.redop = -1;
    fp.offset = -1;
    fp.comm_rank = r;
    fp.comm_size = 2;
    return fp;
}
static void wait_in(gcsh_checker *k, int r, uint64_t seq, int64_t count, double now)
{
    struct {
        uint32_t head[2];
        gcsh_fingerprint fp;
        int32_t members[2];
    } msg = {{(uint32_t)seq, 2}, allreduce_fp(r, seq, count), {0, 1}};
    CHECK(gcsh_checker_add(k, r, &msg, sizeof msg, now) == 0, "rank %d waits", r);
}
static void unchecked(gcsh_checker *k, int r, uint64_t seq, int64_t count, double now)
{
    gcsh_fingerprint fp = allreduce_fp(r, seq, count);
    CHECK(gcsh_checker_unchecked(k, &asks, r, &fp, sizeof fp, now) == 0, "rank %d unchecked", r);
}

/* Rank 1 said an unchecked recv, then came to a check (a collective, which
 * passed), then skips checks again: rank 0's checked send of another size
 * must not meet the recv rank 1 said before its check (bench's shape), but
 * wait for rank 1, asked afresh at once. */
static void test_unchecked_then_checked(void)
{
    gcsh_checker k;
    gcsh_checker_init(&k, 2);
    gcsh_fingerprint r1 = allreduce_fp(1, 0, 5);
    snprintf(r1.op, sizeof r1.op, "recv");
    r1.kind = GCSH_FP_RECV;
    r1.root = 0;
    CHECK(gcsh_checker_unchecked(&k, &asks, 1, &r1, sizeof r1, 0.0) == 0, "rank 1 unchecked");
    reset();
    wait_in(&k, 0, 1, 4, 1.0); /* the collective between: both check it */
    wait_in(&k, 1, 1, 4, 1.0);
    gcsh_checker_resolve(&k, &asks, 1.0, 0, 0);
    CHECK(got[0].answered && got[0].ok && got[1].answered && got[1].ok,
          "the collective between passes");
    reset();
    struct {
        uint32_t head[2];
        gcsh_fingerprint fp;
        int32_t members[2];
    } msg = {{2, 2}, allreduce_fp(0, 0, 6), {0, 1}};
    snprintf(msg.fp.op, sizeof msg.fp.op, "send");
    msg.fp.kind = GCSH_FP_SEND;
    msg.fp.root = 1;
    msg.fp.sent = 1; /* its first send met the recv rank 1 said */
    CHECK(gcsh_checker_add(&k, 0, &msg, sizeof msg, 2.0) == 0, "rank 0's checked send");
    gcsh_checker_resolve(&k, &asks, 2.0, 0, 0);
    CHECK(!got[0].answered, "no verdict from what rank 1 said before its check ('%s')",
          got[0].text);
    int ranks[2];
    CHECK(gcsh_checker_asks(&k, &asks, 2.0, ranks) == 1 && ranks[0] == 1,
          "rank 1 is asked again at once");
    gcsh_checker_destroy(&k);

    /* the same when rank 1's check never reaches the checker (the board):
     * rank 1 says it is back to checks at its 7th operation; an answer its
     * watcher read before (an unchecked call entered 5th) comes after, and
     * is dropped; one entered later (9th) is met */
    gcsh_checker_init(&k, 2);
    r1.entered = 5;
    CHECK(gcsh_checker_unchecked(&k, &asks, 1, &r1, sizeof r1, 0.0) == 0, "rank 1 unchecked");
    uint64_t back = 7;
    CHECK(gcsh_checker_unchecked(&k, &asks, 1, &back, sizeof back, 0.5) == 0, "back to checks");
    CHECK(gcsh_checker_unchecked(&k, &asks, 1, &r1, sizeof r1, 0.6) == 0, "a late answer");
    reset();
    CHECK(gcsh_checker_add(&k, 0, &msg, sizeof msg, 2.0) == 0, "rank 0's checked send");
    gcsh_checker_resolve(&k, &asks, 2.0, 0, 0);
    CHECK(!got[0].answered, "no verdict from the late answer ('%s')", got[0].text);
    r1.entered = 9;
    r1.received = 1; /* its second recv from rank 0: the one that meets the send */
    CHECK(gcsh_checker_unchecked(&k, &asks, 1, &r1, sizeof r1, 2.1) == 0, "a fresh answer");
    gcsh_checker_resolve(&k, &asks, 2.1, 0, 0);
    CHECK(got[0].answered && !got[0].ok && strstr(got[0].text, "[0] send to 1 x6, [1] recv from 0 x5"),
          "a fresh unchecked call of another size: a mismatch, named ('%s')", got[0].text);
    gcsh_checker_destroy(&k);
}

/* Rank 0 checks, rank 1 runs unchecked. */
static void test_unchecked(void)
{
    gcsh_checker k;
    gcsh_checker_init(&k, 2);
    /* equal calls run: the checked rank passes as rank 1 is in it */
    reset();
    unchecked(&k, 1, 1, 4, 0.0);
    wait_in(&k, 0, 1, 4, 0.0);
    gcsh_checker_resolve(&k, &asks, 0.0, 0, 0);
    CHECK(got[0].answered && got[0].ok, "an unchecked equal call: the check passes ('%s')",
          got[0].text);
    /* a different call: rank 0 fails, naming rank 1, which is stopped */
    reset();
    abandoned.n = 0;
    unchecked(&k, 1, 2, 5, 0.0);
    wait_in(&k, 0, 2, 4, 0.0);
    gcsh_checker_resolve(&k, &asks, 0.0, 0, 0);
    CHECK(got[0].answered && !got[0].ok, "an unchecked different call fails the check");
    CHECK(strstr(got[0].text, "allreduce #2: [1] skipped the check (gcsh.check(false)):\n") &&
              strstr(got[0].text, "[0] x4, [1] x5") &&
              strstr(got[0].text, "\n[1] does not wait there"),
          "the message names the rank and the calls: '%s'", got[0].text);
    CHECK(abandoned.n == 1 && abandoned.from == 0 && abandoned.seq == 2,
          "rank 1 is stopped (abandons %d, from %d, #%llu)", abandoned.n, abandoned.from,
          (unsigned long long)abandoned.seq);
    /* rank 1 not there yet: rank 0 waits, and rank 1 is asked, less often */
    reset();
    CHECK(gcsh_checker_unchecked(&k, &asks, 1, NULL, 0, 1.0) == 0, "in no operation");
    wait_in(&k, 0, 3, 4, 1.0);
    gcsh_checker_resolve(&k, &asks, 1.0, 0, 0);
    CHECK(!got[0].answered, "rank 0 waits for rank 1 to come");
    int who[2];
    int n = gcsh_checker_asks(&k, &asks, 1.0, who);
    CHECK(n == 1 && who[0] == 1, "rank 1 is asked (%d)", n);
    CHECK(gcsh_checker_asks(&k, &asks, 1.0, who) == 0, "not twice at once");
    double next = gcsh_checker_next_ask(&k, &asks);
    CHECK(next > 1.0 && next < 1.6, "the next ask is due soon (%.3f)", next);
    unchecked(&k, 1, 3, 4, 1.2);
    gcsh_checker_resolve(&k, &asks, 1.2, 0, 0);
    CHECK(got[0].answered && got[0].ok, "then it comes, and the calls match");
    gcsh_checker_destroy(&k);

    /* a check that failed (its limit) before rank 1 said it runs
     * unchecked: rank 1, coming to that operation, is stopped */
    gcsh_checker_init(&k, 2);
    reset();
    abandoned.n = 0;
    wait_in(&k, 0, 1, 4, 0.0);
    gcsh_checker_resolve(&k, &asks, 2.0, 1.0, 1);
    CHECK(got[0].answered && !got[0].ok, "the check times out");
    CHECK(abandoned.n == 0, "nobody to stop yet");
    unchecked(&k, 1, 1, 4, 2.5);
    CHECK(abandoned.n == 1 && abandoned.from == 0, "rank 1 is stopped when it comes (%d)",
          abandoned.n);
    gcsh_checker_destroy(&k);
}

/* Rank r's fingerprint of op #seq on communicator 7 of n ranks, as sent. */
static void add(gcsh_checker *k, int r, int n, const char *op, uint64_t seq, int kind, int peer)
{
    struct {
        uint32_t head[2];
        gcsh_fingerprint fp;
    } msg;
    memset(&msg, 0, sizeof msg);
    msg.head[0] = (uint32_t)seq;
    msg.head[1] = 0;
    snprintf(msg.fp.op, sizeof msg.fp.op, "%s", op);
    msg.fp.comm = 7;
    msg.fp.seq = kind == GCSH_FP_COLLECTIVE ? seq : 0;
    msg.fp.count = 4;
    msg.fp.kind = kind;
    msg.fp.root = peer;
    msg.fp.dtype = msg.fp.redop = -1;
    msg.fp.comm_rank = r;
    msg.fp.comm_size = n;
    CHECK(gcsh_checker_add(k, r, &msg, sizeof msg, 0.0) == 0, "add rank %d %s #%llu", r, op,
          (unsigned long long)seq);
}

/* ---- a pair's calls in order ---------------------------------------------- */

/* Rank r's send (send != 0) or recv with its mate on communicator 7 of 2
 * ranks, after `sent` sends to it and `received` recvs from it, with its
 * pair counts (sent to each member, then received from each) as
 * collcheck.c sends them: counts[0..3]. */
typedef struct {
    uint32_t head[2];
    gcsh_fingerprint fp;
    int32_t members[2];
    uint64_t counts[4];
} p2p_msg;
static gcsh_fingerprint p2p_fp(int r, int send, uint64_t sent, uint64_t received)
{
    gcsh_fingerprint fp = allreduce_fp(r, 0, 4);
    snprintf(fp.op, sizeof fp.op, "%s", send ? "send" : "recv");
    fp.kind = send ? GCSH_FP_SEND : GCSH_FP_RECV;
    fp.root = 1 - r;
    fp.dtype = 0;
    fp.sent = sent;
    fp.received = received;
    return fp;
}
static p2p_msg p2p_wait(int r, int send, uint64_t sent, uint64_t received, uint32_t serial)
{
    p2p_msg m;
    memset(&m, 0, sizeof m);
    m.head[0] = serial;
    m.head[1] = 2;
    m.fp = p2p_fp(r, send, sent, received);
    m.members[0] = 0;
    m.members[1] = 1;
    m.counts[1 - r] = sent;     /* to the mate */
    m.counts[2 + 1 - r] = received;
    return m;
}
/* MSG_UNCHECKED from rank 1: its call (send or recv with rank 0) and its
 * counts with rank 0, said as `said` (0: where it is now). */
static int say_p2p(gcsh_checker *k, int send, uint64_t sent, uint64_t received, uint32_t said,
                   double now)
{
    struct {
        gcsh_fingerprint fp;
        uint64_t counts[4];
    } m;
    memset(&m, 0, sizeof m);
    m.fp = p2p_fp(1, send, sent, received);
    m.fp.said = said;
    m.fp.entered = 10 + sent + received;
    m.counts[0] = sent;
    m.counts[2] = received;
    return gcsh_checker_unchecked(k, &asks, 1, &m, sizeof m, now);
}

/* A checked recv meets the peer's send by their counts: the peer that
 * said an earlier send and is now past the one that meets it (MPI
 * buffered it) lets the recv pass, uncompared; a peer that ended its
 * command (its final counts) too, or not when it did not send enough;
 * two checked recvs of which one's message was sent already: that one
 * passes alone, the other waits; pair counts of a wrong length are
 * refused. */
static void test_pair_order(void)
{
    gcsh_checker k;
    gcsh_checker_init(&k, 2);
    reset();
    CHECK(say_p2p(&k, 1, 0, 0, 0, 0.0) == 0, "rank 1 says its first send, unchecked");
    p2p_msg m = p2p_wait(0, 0, 0, 1, 1); /* rank 0's second recv */
    CHECK(gcsh_checker_add(&k, 0, &m, sizeof m, 0.1) == 0, "rank 0's second recv");
    gcsh_checker_resolve(&k, &asks, 0.1, 0, 0);
    CHECK(!got[0].answered, "the first send is not the one that meets it: it waits ('%s')",
          got[0].text);
    int ask[2];
    CHECK(gcsh_checker_asks(&k, &asks, 0.1, ask) == 1 && ask[0] == 1, "rank 1 is asked at once");
    CHECK(say_p2p(&k, 0, 2, 0, 0, 0.2) == 0, "rank 1 answers: in a recv, after two sends");
    gcsh_checker_resolve(&k, &asks, 0.2, 0, 0);
    CHECK(got[0].answered && got[0].ok, "its second send was issued: the recv passes ('%s')",
          got[0].text);
    gcsh_checker_destroy(&k);

    gcsh_checker_init(&k, 2);
    reset();
    CHECK(say_p2p(&k, 1, 2, 0, GCSH_SAID_COUNTS, 0.0) == 0, "rank 1 ends after two sends");
    m = p2p_wait(0, 0, 0, 1, 1);
    CHECK(gcsh_checker_add(&k, 0, &m, sizeof m, 0.1) == 0, "rank 0's second recv");
    gcsh_checker_resolve(&k, &asks, 0.1, 0, 0);
    CHECK(got[0].answered && got[0].ok, "sent before the end: it passes ('%s')", got[0].text);
    reset();
    m = p2p_wait(0, 0, 0, 2, 2);
    CHECK(gcsh_checker_add(&k, 0, &m, sizeof m, 0.2) == 0, "rank 0's third recv");
    gcsh_checker_resolve(&k, &asks, 0.2, 0, 0);
    CHECK(!got[0].answered, "a third was never sent: no pass ('%s')", got[0].text);
    gcsh_checker_destroy(&k);

    gcsh_checker_init(&k, 2);
    reset();
    m = p2p_wait(0, 0, 1, 0, 1); /* rank 0 sent once, receives its first */
    p2p_msg m1 = p2p_wait(1, 0, 1, 0, 1); /* rank 1 likewise */
    CHECK(gcsh_checker_add(&k, 0, &m, sizeof m, 0.0) == 0, "rank 0's recv");
    CHECK(gcsh_checker_add(&k, 1, &m1, sizeof m1, 0.0) == 0, "rank 1's recv");
    gcsh_checker_resolve(&k, &asks, 0.0, 0, 0);
    CHECK(got[0].answered && got[0].ok && got[1].answered && got[1].ok,
          "both recvs meet sends issued already: both pass ('%s' '%s')", got[0].text,
          got[1].text);
    reset();
    m = p2p_wait(0, 0, 1, 1, 2);  /* rank 0: a second recv */
    m1 = p2p_wait(1, 0, 0, 1, 2); /* rank 1: receives, sent nothing yet */
    m1.counts[0] = 0;
    CHECK(gcsh_checker_add(&k, 0, &m, sizeof m, 0.1) == 0, "rank 0's second recv");
    CHECK(gcsh_checker_add(&k, 1, &m1, sizeof m1, 0.1) == 0, "rank 1's second recv");
    gcsh_checker_resolve(&k, &asks, 0.1, 0, 0);
    CHECK(got[0].answered && !got[0].ok && strstr(got[0].text, "recv from 1"),
          "both receive, nothing sent: a mismatch ('%s')", got[0].text);
    p2p_msg bad = p2p_wait(0, 0, 0, 0, 3);
    CHECK(gcsh_checker_add(&k, 0, &bad, sizeof bad - sizeof(uint64_t), 0.2) == -1,
          "pair counts of a wrong length: refused");
    struct {
        gcsh_fingerprint fp;
        uint64_t counts[3];
    } short_answer = {p2p_fp(1, 1, 0, 0), {0, 0, 0}};
    CHECK(gcsh_checker_unchecked(&k, &asks, 1, &short_answer, sizeof short_answer, 0.2) == -1,
          "an answer's pair counts of a wrong length: refused");
    gcsh_checker_destroy(&k);

    /* calls told of beside the checks (a graph's replays: its two sends to
     * rank 0 per replay, the second of them here, three replays: counts
     * 3, 5, 7), of another size: rank 0's recv of count 5 is compared
     * with them (a mismatch), one of count 4 is not one of them */
    gcsh_checker_init(&k, 2);
    struct {
        gcsh_fingerprint fp;
    } calls = {p2p_fp(1, 1, 3, 0)};
    calls.fp.count = 8;
    calls.fp.said = GCSH_SAID_CALLS;
    calls.fp.times = 3;
    calls.fp.stride = 2;
    CHECK(gcsh_checker_unchecked(&k, &asks, 1, &calls, sizeof calls, 0.0) == 0, "calls told");
    reset();
    m = p2p_wait(0, 0, 0, 4, 1);
    CHECK(gcsh_checker_add(&k, 0, &m, sizeof m, 0.1) == 0, "rank 0's recv of count 4");
    gcsh_checker_resolve(&k, &asks, 0.1, 0, 0);
    CHECK(!got[0].answered, "count 4 is none of the told calls: no verdict ('%s')", got[0].text);
    gcsh_checker_destroy(&k);
    gcsh_checker_init(&k, 2);
    CHECK(gcsh_checker_unchecked(&k, &asks, 1, &calls, sizeof calls, 0.0) == 0, "calls told");
    reset();
    m = p2p_wait(0, 0, 0, 5, 1);
    CHECK(gcsh_checker_add(&k, 0, &m, sizeof m, 0.1) == 0, "rank 0's recv of count 5");
    gcsh_checker_resolve(&k, &asks, 0.1, 0, 0);
    CHECK(got[0].answered && !got[0].ok && strstr(got[0].text, "[1] send to 0 f64 x8"),
          "count 5 is the second replay's: compared, a mismatch ('%s')", got[0].text);
    gcsh_checker_destroy(&k);
}

int main(void)
{
    gcsh_checker k;
    gcsh_checker_init(&k, 2);

    /* equal calls pass */
    reset();
    add(&k, 0, 2, "barrier", 1, GCSH_FP_COLLECTIVE, -1);
    add(&k, 1, 2, "barrier", 1, GCSH_FP_COLLECTIVE, -1);
    gcsh_checker_resolve(&k, &io, 0.0, 10.0, 0);
    CHECK(got[0].answered && got[0].ok && got[1].answered && got[1].ok, "equal calls pass");

    /* a mismatch at the same number fails both, with one message */
    reset();
    add(&k, 0, 2, "barrier", 2, GCSH_FP_COLLECTIVE, -1);
    add(&k, 1, 2, "allreduce", 2, GCSH_FP_COLLECTIVE, -1);
    gcsh_checker_resolve(&k, &io, 0.0, 10.0, 0);
    CHECK(got[0].answered && !got[0].ok && got[1].answered && !got[1].ok, "mismatch fails both");
    CHECK(strstr(got[0].text, "collective mismatch") && strcmp(got[0].text, got[1].text) == 0,
          "one mismatch message: '%s'", got[0].text);

    /* rank 1 brings barrier #3 after rank 0 passed it on the board and went
     * on to allreduce #4: rank 1 passes alone; rank 0 waits for it */
    reset();
    add(&k, 0, 2, "allreduce", 4, GCSH_FP_COLLECTIVE, -1);
    add(&k, 1, 2, "barrier", 3, GCSH_FP_COLLECTIVE, -1);
    gcsh_checker_resolve(&k, &io, 0.0, 10.0, 0);
    CHECK(got[1].answered && got[1].ok, "the late rank's earlier check passes: '%s'", got[1].text);
    CHECK(!got[0].answered, "the rank further on waits (answered %d: '%s')", got[0].answered,
          got[0].text);
    CHECK(gcsh_checker_waiting(&k, 0) && !gcsh_checker_waiting(&k, 1), "who still waits");
    add(&k, 1, 2, "allreduce", 4, GCSH_FP_COLLECTIVE, -1);
    gcsh_checker_resolve(&k, &io, 0.0, 10.0, 0);
    CHECK(got[0].answered && got[0].ok && got[1].ok, "then both pass allreduce #4");
    gcsh_checker_destroy(&k);

    /* 4 ranks: two further on, two behind at the same earlier check, which
     * they still compare (a mismatch between them is found) */
    gcsh_checker_init(&k, RANKS);
    reset();
    add(&k, 0, RANKS, "allreduce", 9, GCSH_FP_COLLECTIVE, -1);
    add(&k, 2, RANKS, "allreduce", 9, GCSH_FP_COLLECTIVE, -1);
    add(&k, 1, RANKS, "barrier", 8, GCSH_FP_COLLECTIVE, -1);
    add(&k, 3, RANKS, "reduce", 8, GCSH_FP_COLLECTIVE, -1);
    gcsh_checker_resolve(&k, &io, 0.0, 10.0, 0);
    CHECK(got[1].answered && !got[1].ok && got[3].answered && !got[3].ok,
          "the two behind compare: mismatch ('%s')", got[1].text);
    CHECK(!got[0].answered && !got[2].answered, "the two further on wait");
    gcsh_checker_destroy(&k);

    /* without a board, different numbers cannot come from a pass on it: the
     * old rule (every member waits: compare) */
    gcsh_checker_init(&k, 2);
    reset();
    add(&k, 0, 2, "allreduce", 4, GCSH_FP_COLLECTIVE, -1);
    add(&k, 1, 2, "barrier", 3, GCSH_FP_COLLECTIVE, -1);
    gcsh_checker_resolve(&k, &no_board, 0.0, 10.0, 0);
    CHECK(got[0].answered && !got[0].ok && got[1].answered && !got[1].ok,
          "no board: a mismatch ('%s')", got[0].text);
    gcsh_checker_destroy(&k);

    /* a send waiting beside a collective: every member waits, and that is a
     * mismatch (the send has no number: not a rank behind) */
    gcsh_checker_init(&k, 2);
    reset();
    add(&k, 0, 2, "send", 0, GCSH_FP_SEND, 1);
    add(&k, 1, 2, "allreduce", 5, GCSH_FP_COLLECTIVE, -1);
    gcsh_checker_resolve(&k, &io, 0.0, 10.0, 0);
    CHECK(got[0].answered && !got[0].ok && got[1].answered && !got[1].ok,
          "a send beside a collective fails both ('%s')", got[0].text);
    gcsh_checker_destroy(&k);

    /* a group that fails only because its missing member called os.exit
     * (repro.skip): its members are told the exit's status (coord.c makes
     * their errors the skip's); one whose missing member finished is not */
    for (int e = 0; e < 2; e++) {
        gcsh_checker_init(&k, 2);
        reset();
        caused[0] = caused[1] = -1;
        exit_of_1 = e == 0 ? 125 : -1;
        struct {
            uint32_t head[2];
            gcsh_fingerprint fp;
            int32_t members[2];
        } msg; /* with its members: rank 1 is known to be missing */
        memset(&msg, 0, sizeof msg);
        msg.head[0] = 1;
        msg.head[1] = 2;
        snprintf(msg.fp.op, sizeof msg.fp.op, "barrier");
        msg.fp.comm = 7;
        msg.fp.seq = 1;
        msg.fp.kind = GCSH_FP_COLLECTIVE;
        msg.fp.root = -1;
        msg.fp.dtype = msg.fp.redop = -1;
        msg.fp.comm_size = 2;
        msg.members[0] = 0;
        msg.members[1] = 1;
        CHECK(gcsh_checker_add(&k, 0, &msg, sizeof msg, 0.0) == 0, "add rank 0's barrier");
        gcsh_checker_resolve(&k, &exits, 0.0, 10.0, 0);
        CHECK(got[0].answered && !got[0].ok, "rank 1 gone from the barrier: it fails ('%s')",
              got[0].text);
        if (e == 0)
            CHECK(caused[0] == 125 && caused[1] == -1, "the exit is the cause: %d %d", caused[0],
                  caused[1]);
        else
            CHECK(caused[0] == -1, "no exit, no cause: %d", caused[0]);
        gcsh_checker_destroy(&k);
    }
    test_unchecked();
    test_unchecked_then_checked();
    test_pair_order();
    UNIT_END();
}
