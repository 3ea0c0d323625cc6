/* Collective checks and aborts: the rank's side.  See collcheck.h; the
 * coordinator's side is collcheck_coord.c; whereabouts in where.c, faults
 * in faults.c (their shared state: check_state.h). */
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>

#include "wire/board.h"
#include "wire/check_state.h"
#include "wire/collcheck.h"
#include "wire/faults.h"
#include "wire/where.h"
#include "core/graph.h"
#include "wire/msg.h"
#include "wire/out.h"
#include "core/check_hooks.h"

#define VERDICT_POLL_MS 50   /* interrupt latency of a fingerprint wait */
/* How long a check waits on the board for the others before it escalates
 * to the coordinator (collcheck.h): ranks that arrive together never need it;
 * a rank that is late by more waits on a socket, costing no CPU. */
#define BOARD_SPIN_S 2e-3

/* ---- set-up ---------------------------------------------------------------- */

int gcsh_check_open(gcsh_ctx *ctx, int fd, gcsh_capture *cap)
{
    gcsh_check *k = calloc(1, sizeof *k);
    if (!k)
        return -1;
    k->enabled = 1;
    k->fd = fd;
    k->cap = cap;
    pthread_mutex_init(&k->lock, NULL);
    pthread_cond_init(&k->sampled_cond, NULL);
    ctx->check = k;
    return 0;
}

void gcsh_check_close(gcsh_ctx *ctx)
{
    gcsh_check *k = ctx->check;
    if (!k)
        return;
    /* communicators still open belong to Lua handles, which outlive us only
     * at exit: unlink them so a late __gc finds nothing to do */
    while (k->comms) {
        gcsh_comm_check *cc = k->comms;
        k->comms = cc->next;
        cc->linked = 0;
        cc->next = cc->prev = NULL;
    }
    pthread_mutex_destroy(&k->lock);
    pthread_cond_destroy(&k->sampled_cond);
    free(k->aborted);
    free(k->op_pairs);
    free(k);
    ctx->check = NULL;
}

/* Whether an error is this rank's last failed collective check's own (its
 * message as the check set it, ctx->check_failed), raised or re-raised as it came: the message, after
 * the positions ("chunk:line: ") that the raising C function and each Lua
 * error(e) at level 1 put before it, and before the traceback the message
 * handler adds.  An error that quotes it in a text of its own ("step 3
 * failed: " .. e) is the command's own failure (README, "Exit statuses":
 * never a verdict from an error's text). */
int gcsh_check_error_is(const gcsh_ctx *ctx, const char *msg)
{
    const char *cf = ctx->check_failed;
    size_t c = strlen(cf);
    const char *at = c ? strstr(msg, cf) : NULL;
    if (!at || (at[c] != '\0' && strncmp(at + c, "\nstack traceback:", 17) != 0))
        return 0;
    /* before it: positions only, each ": " right after ":<digits>" */
    for (const char *p = msg; p < at; p++) {
        if (*p == '\n')
            return 0;
        if (p[0] != ':' || p[1] != ' ')
            continue;
        const char *d = p;
        while (d > msg && d[-1] >= '0' && d[-1] <= '9')
            d--;
        if (d == p || d == msg || d[-1] != ':')
            return 0;
    }
    return at == msg || (at - msg >= 2 && at[-2] == ':' && at[-1] == ' ');
}

int gcsh_check_enabled(gcsh_ctx *ctx)
{
    return ctx->check && ctx->check->enabled;
}

void gcsh_check_get_counts(gcsh_ctx *ctx, gcsh_check_counts *out)
{
    gcsh_check_counts none = {0, 0, 0};
    *out = ctx->check ? ctx->check->counts : none;
}

void gcsh_check_set_enabled(gcsh_ctx *ctx, int on)
{
    if (ctx->check)
        ctx->check->enabled = on != 0;
}

/* ---- communicators ---------------------------------------------------------- */

void gcsh_comm_check_attach(gcsh_ctx *ctx, gcsh_comm_check *cc, gcsh_comm_impl *impl,
                            uint64_t id, int rank, int size, int *members)
{
    gcsh_check *k = ctx->check;
    *cc = (gcsh_comm_check){.impl = impl, .id = id, .rank = rank, .size = size,
                            .members = members, .on_board = -1};
    if (!k)
        return;
    cc->next = k->comms;
    if (k->comms)
        k->comms->prev = cc;
    k->comms = cc;
    cc->linked = 1;
}

void gcsh_comm_check_detach(gcsh_ctx *ctx, gcsh_comm_check *cc)
{
    gcsh_check *k = ctx->check;
    if (cc->linked && k) {
        if (cc->prev)
            cc->prev->next = cc->next;
        else
            k->comms = cc->next;
        if (cc->next)
            cc->next->prev = cc->prev;
    }
    if (k && k->intent_cc == cc)
        k->intent_cc = NULL;
    if (cc->on_board == 1)
        gcsh_board_forget(ctx->board, ctx->rank, cc->id);
    free(cc->members);
    free(cc->sent);
    free(cc->received);
    cc->members = NULL;
    cc->sent = cc->received = NULL;
    cc->next = cc->prev = NULL;
    cc->linked = 0;
    cc->impl = NULL;
}

uint64_t gcsh_comm_world_id(gcsh_ctx *ctx)
{
    return ctx->check ? ctx->check->worlds++ : 0;
}

/* splitmix64's finaliser: ids of different splits do not collide in practice,
 * and never with world ids (which are small). */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t gcsh_comm_split_id(const gcsh_comm_check *parent, int color)
{
    uint64_t h = mix64(parent->id ^ 0x9e3779b97f4a7c15ULL);
    h = mix64(h ^ parent->seq);
    h = mix64(h ^ (uint64_t)(uint32_t)color);
    return h | (1ULL << 63);
}

static void abort_doomed(gcsh_ctx *ctx);
static _Noreturn void raise_error(lua_State *L, gcsh_ctx *ctx);

void gcsh_check_usable(lua_State *L, const gcsh_comm_check *cc)
{
    abort_doomed(gcsh_ctx_of(L));
    if (cc->aborted)
        luaL_error(L, GCSH_ABORTED_MSG " (an interrupt, an error or .abort tore it down; "
                      "comm.world() makes a fresh one; its windows and signals can still be "
                      "read and freed)");
}

static void note_aborted(gcsh_check *k, uint64_t id)
{
    for (size_t i = 0; i < k->naborted; i++)
        if (k->aborted[i] == id)
            return;
    if (k->naborted == k->cap_aborted) {
        size_t cap = k->cap_aborted ? 2 * k->cap_aborted : 8;
        uint64_t *p = realloc(k->aborted, cap * sizeof *p);
        if (!p)
            return; /* the others then learn it from their own failure */
        k->aborted = p;
        k->cap_aborted = cap;
    }
    k->aborted[k->naborted++] = id;
}

static void abort_comm(gcsh_ctx *ctx, gcsh_comm_check *cc)
{
    if (cc->aborted)
        return;
    cc->aborted = 1;
    if (cc->impl && ctx->be->comm->abort)
        ctx->be->comm->abort(ctx, cc->impl);
}

/* The communicators that the watcher heard other ranks aborted, aborted
 * here too (worker thread: the backend is not the watcher's to call). */
static void abort_doomed(gcsh_ctx *ctx)
{
    gcsh_check *k = ctx->check;
    if (!k)
        return;
    uint64_t ids[DOOMED_MAX];
    pthread_mutex_lock(&k->lock);
    int n = k->ndoomed;
    memcpy(ids, k->doomed, (size_t)n * sizeof *ids);
    k->ndoomed = 0;
    pthread_mutex_unlock(&k->lock);
    if (n)
        gcsh_check_abort_ids(ctx, ids, (size_t)n, 0);
}

/* The last collective this command queued on communicator `comm` (an
 * index of k->entered), or -1; the caller holds k->lock. */
static int entered_on(const gcsh_check *k, uint64_t comm)
{
    if (k->entered_chunk != k->chunk_seq)
        return -1;
    for (int i = k->nentered - 1; i >= 0; i--)
        if (k->entered[i].comm == comm)
            return i;
    return -1;
}

void gcsh_check_abort_now(gcsh_ctx *ctx, const uint64_t *ids, size_t n, int from)
{
    gcsh_check *k = ctx->check;
    if (!k)
        return;
    pthread_mutex_lock(&k->lock);
    for (size_t i = 0; i < n; i++) {
        if (k->ndoomed < DOOMED_MAX) {
            k->doomed[k->ndoomed] = ids[i];
            k->doomed_from[k->ndoomed++] = from;
        }
        int expected = 0, queued = k->in_end_sync ? entered_on(k, ids[i]) : -1;
        if (((k->in_op && k->op_on_comm && k->op_comm == ids[i]) || queued >= 0) &&
            atomic_compare_exchange_strong(&ctx->interrupt, &expected, GCSH_INTERRUPT_PEER)) {
            k->peer_from = from;
            k->peer_unchecked = 0;
            k->peer_why[0] = '\0';
            /* the command's end waits for GPU work that waits for `from` */
            if (queued >= 0)
                gcsh_fp_describe(&k->entered[queued], k->peer_op, sizeof k->peer_op);
        }
    }
    pthread_mutex_unlock(&k->lock);
}

/* ---- abandons (collcheck.h), .check off ---------------------------------------- */

/* The call at level `level` of L's stack, or NULL: which call it is, not
 * what it runs (lua_getstack alone, in O(1): the unchecked path pays no
 * more; lua_Debug's i_ci tells calls apart).  c_only: a C function's. */
static const void *call_at(lua_State *L, int level, int c_only)
{
    lua_Debug ar;
    if (!lua_getstack(L, level, &ar))
        return NULL;
    if (c_only && (!lua_getinfo(L, "S", &ar) || strcmp(ar.what, "C") != 0))
        return NULL;
    return ar.i_ci;
}

void gcsh_check_intent(lua_State *L, const gcsh_comm_check *cc, int p2p)
{
    gcsh_check *k = gcsh_ctx_of(L)->check;
    if (!k || k->enabled)
        return;
    k->intent_on = 1;
    k->intent_call = call_at(L, 0, 0);
    k->intent_cc = cc;
    k->intent.comm = cc->id;
    k->intent.seq = p2p ? 0 : cc->seq + 1;
    k->intent.comm_rank = cc->rank;
    k->intent.comm_size = cc->size;
}

/* Whether fp's operation waits for abandoned operation a: a itself, or a
 * later collective of its communicator (the rank that abandoned a does not
 * reach it in this command either); a p2p one: any send or recv with the
 * rank that abandoned. */
static int abandon_matches(const gcsh_abandon_msg *a, const gcsh_fingerprint *fp)
{
    if (fp->comm != a->comm)
        return 0;
    if (a->seq)
        return fp->kind == GCSH_FP_COLLECTIVE && fp->seq >= a->seq;
    return fp->kind != GCSH_FP_COLLECTIVE && fp->root == a->comm_rank;
}

/* MSG_ABANDONED for m (its members from cc, when cc is still there). */
static void send_abandon(gcsh_check *k, gcsh_abandon_msg *m, const gcsh_comm_check *cc,
                         const char *why)
{
    int n = cc && cc->members ? cc->size : 0;
    size_t len = sizeof *m + (size_t)n * sizeof(int32_t);
    char *buf = malloc(len);
    m->chunk = k->chunk_seq;
    m->nmembers = n;
    snprintf(m->why, sizeof m->why, "%s", why);
    if (!buf)
        return; /* the others then wait: .timeout names this rank */
    memcpy(buf, m, sizeof *m);
    for (int i = 0; i < n; i++) {
        int32_t w = cc->members[i];
        memcpy(buf + sizeof *m + (size_t)i * sizeof w, &w, sizeof w);
    }
    gcsh_capture_send(k->cap, MSG_ABANDONED, buf, len);
    free(buf);
}

void gcsh_check_caught(gcsh_ctx *ctx)
{
    if (ctx->check)
        ctx->check->intent_on = 0;
}

void gcsh_check_abandon(lua_State *L, const char *why)
{
    gcsh_check *k = gcsh_ctx_of(L)->check;
    if (!k || !k->intent_on)
        return;
    k->intent_on = 0;
    /* the binding that stated the intent raised it, still in that call (not
     * one whose error a pcall caught, before an unrelated error) */
    if (k->intent_call && call_at(L, 1, 1) == k->intent_call)
        send_abandon(k, &k->intent, k->intent_cc, why);
}

/* On a stream-ordered backend: notes fp's collective as entered in this
 * command (its kernel may outlive the call); the caller holds k->lock. */
static void note_entered_locked(gcsh_ctx *ctx, gcsh_check *k, const gcsh_fingerprint *fp)
{
    if (!ctx->be || !ctx->be->stream_ordered)
        return;
    if (k->entered_chunk != k->chunk_seq) {
        k->entered_chunk = k->chunk_seq;
        k->nentered = 0;
    }
    if (k->nentered == ENTERED_MAX) { /* the oldest goes: it has had longest to end */
        memmove(k->entered, k->entered + 1, sizeof k->entered - sizeof *k->entered);
        k->nentered--;
    }
    k->entered[k->nentered++] = *fp;
}

/* The command's end waits for its GPU work, and abandon m (rank from's)
 * matches a collective this rank queued in the command: that work waits
 * for a rank that never joins it, so the wait stops as for an interrupt
 * (the backend aborts the communicators with work in flight) and the
 * error says why.  The caller holds k->lock. */
static void stop_end_sync_locked(gcsh_ctx *ctx, gcsh_check *k, const gcsh_abandon_msg *m,
                                 int from)
{
    if (k->entered_chunk != k->chunk_seq)
        return;
    for (int i = 0; i < k->nentered; i++) {
        int expected = 0;
        if (abandon_matches(m, &k->entered[i]) &&
            atomic_compare_exchange_strong(&ctx->interrupt, &expected, GCSH_INTERRUPT_PEER)) {
            k->peer_from = from;
            k->peer_unchecked = m->unchecked;
            snprintf(k->peer_why, sizeof k->peer_why, "%.*s", (int)sizeof m->why - 1, m->why);
            gcsh_fp_describe(&k->entered[i], k->peer_op, sizeof k->peer_op);
            return;
        }
    }
}

void gcsh_check_abandon_now(gcsh_ctx *ctx, const gcsh_abandon_msg *m, int from)
{
    gcsh_check *k = ctx->check;
    if (!k)
        return;
    pthread_mutex_lock(&k->lock);
    int n = atomic_load(&k->nabandoned);
    if (n > 0 && k->abandoned[0].chunk != m->chunk)
        n = 0; /* an earlier command's */
    if (n < ABANDONED_MAX) {
        k->abandoned[n] = *m;
        k->abandoned[n].why[sizeof m->why - 1] = '\0';
        k->abandoned_from[n++] = from;
        atomic_store(&k->nabandoned, n);
    }
    int expected = 0; /* (an earlier command's may come late: its numbers are not ours) */
    if (k->in_op && k->op_on_comm && m->chunk == k->chunk_seq && abandon_matches(m, &k->op_fp) &&
        atomic_compare_exchange_strong(&ctx->interrupt, &expected, GCSH_INTERRUPT_PEER)) {
        k->peer_from = from;
        k->peer_unchecked = m->unchecked;
        snprintf(k->peer_why, sizeof k->peer_why, "%.*s", (int)sizeof m->why - 1, m->why);
    }
    if (k->in_end_sync && m->chunk == k->chunk_seq)
        stop_end_sync_locked(ctx, k, m, from);
    pthread_mutex_unlock(&k->lock);
}

/* The rank that abandoned fp's operation in this command, or -1 (*a: its
 * message); the caller holds k->lock. */
static int abandoned_by(gcsh_check *k, const gcsh_fingerprint *fp, gcsh_abandon_msg *a)
{
    for (int i = 0; i < atomic_load(&k->nabandoned); i++)
        if (k->abandoned[i].chunk == k->chunk_seq && abandon_matches(&k->abandoned[i], fp)) {
            *a = k->abandoned[i];
            return k->abandoned_from[i];
        }
    return -1;
}

static int is_p2p_fp(const gcsh_fingerprint *fp)
{
    return fp->kind == GCSH_FP_SEND || fp->kind == GCSH_FP_RECV;
}

/* cc's pair counts with every member, issued so far (sent, then
 * received: 2 x cc->size, 0 for none yet) into out, aligned or not (a
 * message's bytes). */
static void pair_counts(const gcsh_comm_check *cc, void *out)
{
    char *o = out;
    for (int i = 0; i < cc->size; i++) {
        uint64_t sent = cc->sent ? cc->sent[i] : 0, received = cc->received ? cc->received[i] : 0;
        memcpy(o + (size_t)i * sizeof sent, &sent, sizeof sent);
        memcpy(o + ((size_t)cc->size + (size_t)i) * sizeof received, &received, sizeof received);
    }
}

/* The published operation's pair counts (check_state.h), for what this
 * rank says of it unchecked: a send's or recv's, or any on a communicator
 * that had some; none otherwise (or out of memory: rank 0 then knows only
 * a send's or recv's count with its peer). */
static void keep_pair_counts_locked(gcsh_check *k, const gcsh_comm_check *cc,
                                    const gcsh_fingerprint *fp)
{
    k->op_npairs = 0;
    if (k->enabled || (!is_p2p_fp(fp) && !cc->sent && !cc->received))
        return;
    if (cc->size > k->op_pairs_cap) {
        uint64_t *p = realloc(k->op_pairs, 2 * (size_t)cc->size * sizeof *p);
        if (!p)
            return;
        k->op_pairs = p;
        k->op_pairs_cap = cc->size;
    }
    pair_counts(cc, k->op_pairs);
    k->op_npairs = cc->size;
}

/* MSG_UNCHECKED with fp and, for a send or recv, its pair counts (npairs
 * members: 2 x npairs counts). */
static void send_unchecked(gcsh_check *k, const gcsh_fingerprint *fp, const uint64_t *pairs,
                           int npairs)
{
    size_t plen = 2 * (size_t)npairs * sizeof *pairs;
    char *buf = malloc(sizeof *fp + plen);
    if (!buf) { /* the fingerprint alone: its count with its peer */
        gcsh_capture_send(k->cap, MSG_UNCHECKED, fp, sizeof *fp);
        return;
    }
    memcpy(buf, fp, sizeof *fp);
    if (plen)
        memcpy(buf + sizeof *fp, pairs, plen);
    gcsh_capture_send(k->cap, MSG_UNCHECKED, buf, sizeof *fp + plen);
    free(buf);
}

/* With .check off, the first operation of a command that skips its check
 * is said to rank 0 (MSG_UNCHECKED): a checked rank that waits for this
 * one can then be answered (collcheck_coord.h).  Once a command: a timed
 * loop of unchecked calls pays nothing per call. */
static void say_unchecked(gcsh_check *k, const gcsh_fingerprint *fp)
{
    if (!k->enabled)
        k->unchecked_open = 1;
    if (k->enabled || k->unchecked_said == k->chunk_seq)
        return;
    k->unchecked_said = k->chunk_seq;
    send_unchecked(k, fp, k->op_pairs, fp->comm_size == k->op_npairs ? k->op_npairs : 0);
}

/* In gcsh_check_enter: publishes fp's operation, unless .check is off and
 * another rank abandoned it in this command: then it is refused (it would
 * wait for that rank forever), and this rank does not join it either, and
 * says so.  One look under the lock: an abandon the watcher hears later
 * finds the operation published and stops it. */
static void publish_or_refuse(lua_State *L, gcsh_ctx *ctx, gcsh_check *k, gcsh_comm_check *cc,
                              const gcsh_fingerprint *fp)
{
    gcsh_abandon_msg a;
    int from = -1;
    pthread_mutex_lock(&k->lock);
    if (!k->enabled && atomic_load_explicit(&k->nabandoned, memory_order_relaxed))
        from = abandoned_by(k, fp, &a);
    if (from < 0) {
        gcsh_where_publish_fp_locked(k, fp);
        keep_pair_counts_locked(k, cc, fp);
        note_entered_locked(ctx, k, fp);
    }
    pthread_mutex_unlock(&k->lock);
    if (from < 0) {
        say_unchecked(k, fp);
        return;
    }
    char what[128];
    gcsh_fp_describe(fp, what, sizeof what);
    gcsh_abandon_msg mine = {.comm = cc->id, .seq = fp->kind == GCSH_FP_COLLECTIVE ? fp->seq : 0,
                             .comm_rank = cc->rank, .comm_size = cc->size};
    char why[64];
    snprintf(why, sizeof why, "it did not join because rank %d did not", from);
    send_abandon(k, &mine, cc, why);
    if (a.unchecked) /* lines within 80 columns under a rank tag (src/DESIGN.md) */
        gcsh_set_error(ctx, "%s: not run: rank %d's check failed, this rank's was off\n"
                            "(gcsh.check(false)): nobody joins it", what, from);
    else
        gcsh_set_error(ctx, "%s: not run: rank %d failed before joining it (%s)", what, from,
                       a.why);
    raise_error(L, ctx);
}

void gcsh_check_answer_unchecked(gcsh_ctx *ctx)
{
    gcsh_check *k = ctx->check;
    if (!k)
        return;
    gcsh_fingerprint fp;
    uint64_t *pairs = NULL;
    int npairs = 0;
    pthread_mutex_lock(&k->lock);
    int in = k->in_op && k->op_on_comm && k->op_unchecked;
    if (in) {
        fp = k->op_fp;
        npairs = fp.comm_size == k->op_npairs ? k->op_npairs : 0;
        pairs = npairs ? malloc(2 * (size_t)npairs * sizeof *pairs) : NULL;
        if (pairs)
            memcpy(pairs, k->op_pairs, 2 * (size_t)npairs * sizeof *pairs);
        else
            npairs = 0;
    }
    pthread_mutex_unlock(&k->lock);
    if (in)
        send_unchecked(k, &fp, pairs, npairs);
    else
        gcsh_capture_send(k->cap, MSG_UNCHECKED, &fp, 0);
    free(pairs);
}

/* fp with the pair counts of cc now, said (collcheck.h's GCSH_SAID_*). */
static void say_counts(gcsh_check *k, const gcsh_comm_check *cc, const gcsh_fingerprint *fp,
                       uint32_t said)
{
    uint64_t *pairs = malloc(2 * (size_t)cc->size * sizeof *pairs);
    if (!pairs)
        return;
    pair_counts(cc, pairs);
    gcsh_fingerprint f = *fp;
    f.said = said;
    f.entered = k->entered_count;
    send_unchecked(k, &f, pairs, cc->size);
    free(pairs);
}

/* cc's pair counts now, alone (GCSH_SAID_COUNTS). */
static void say_counts_now(gcsh_check *k, const gcsh_comm_check *cc)
{
    gcsh_fingerprint fp;
    gcsh_fp_init(&fp, cc, "counts");
    say_counts(k, cc, &fp, GCSH_SAID_COUNTS);
}

void gcsh_check_loop_issues(gcsh_ctx *ctx, gcsh_comm_check *cc, const gcsh_fingerprint *fp,
                            int64_t more)
{
    gcsh_check_p2p_issued(ctx, cc, fp->kind == GCSH_FP_SEND, fp->root, more);
    if (!ctx->check)
        return;
    gcsh_fingerprint calls = *fp; /* the loop's calls, from fp's count on */
    calls.times = (uint32_t)(more + 1 > UINT32_MAX ? UINT32_MAX : more + 1);
    calls.stride = 1;
    say_counts(ctx->check, cc, &calls, GCSH_SAID_CALLS);
}

/* The count of the pair that the i-th send or recv of rec issues next,
 * and how many of that pair (cc, kind, peer) one replay issues (stride). */
static uint64_t replayed_first(const gcsh_graph_rec *rec, size_t i, uint64_t *stride)
{
    const gcsh_graph_p2p *p = &rec->p2p[i];
    const gcsh_comm_check *cc = p->check;
    uint64_t before = 0, all = 0;
    for (size_t j = 0; j < rec->np2p; j++)
        if (rec->p2p[j].check == cc && rec->p2p[j].send == p->send && rec->p2p[j].peer == p->peer) {
            before += j < i;
            all++;
        }
    *stride = all;
    const uint64_t *done = p->send ? cc->sent : cc->received;
    return (done ? done[p->peer] : 0) + before;
}

void gcsh_check_replay_issues(gcsh_ctx *ctx, const gcsh_graph_rec *rec, uint64_t n)
{
    gcsh_check *k = ctx->check;
    /* the calls first, from the counts before the replays (the last
     * GCSH_CHECKER_CALLS of them are what rank 0 keeps) */
    for (size_t i = 0; k && i < rec->np2p; i++) {
        const gcsh_comm_check *cc = rec->p2p[i].check;
        if (!cc->linked)
            continue;
        gcsh_fingerprint f;
        memcpy(&f, rec->p2p[i].fp, sizeof f);
        uint64_t stride, first = replayed_first(rec, i, &stride);
        if (rec->p2p[i].send)
            f.sent = first;
        else
            f.received = first;
        f.said = GCSH_SAID_CALLS;
        f.times = (uint32_t)(n > UINT32_MAX ? UINT32_MAX : n);
        f.stride = (uint32_t)stride;
        f.entered = k->entered_count;
        send_unchecked(k, &f, NULL, 0);
    }
    for (size_t i = 0; i < rec->np2p; i++)
        gcsh_check_p2p_issued(ctx, rec->p2p[i].check, rec->p2p[i].send, rec->p2p[i].peer,
                              (int64_t)n);
    for (size_t i = 0; k && i < rec->np2p; i++) { /* then the counts, once a communicator */
        const gcsh_comm_check *cc = rec->p2p[i].check;
        size_t j = 0;
        while (rec->p2p[j].check != cc)
            j++;
        if (j == i && cc->linked)
            say_counts_now(k, cc);
    }
}

void gcsh_check_abort_ids(gcsh_ctx *ctx, const uint64_t *ids, size_t n, int all)
{
    gcsh_check *k = ctx->check;
    if (!k)
        return;
    for (gcsh_comm_check *cc = k->comms; cc; cc = cc->next) {
        int hit = all;
        for (size_t i = 0; i < n && !hit; i++)
            hit = cc->id == ids[i];
        if (hit)
            abort_comm(ctx, cc);
    }
}

void gcsh_check_chunk_begin(gcsh_ctx *ctx, const char *name, int check_on, uint32_t chunk)
{
    gcsh_check *k = ctx->check;
    if (!k)
        return;
    k->enabled = check_on;
    pthread_mutex_lock(&k->lock); /* the watcher compares abandons' with it */
    k->chunk_seq = chunk;
    pthread_mutex_unlock(&k->lock);
    k->naborted = 0;
    k->intent_on = 0;
    /* (k->doomed is not cleared: an abort the watcher heard may come
     * before this, for the command about to run) */
    /* the short source Lua shows for this chunk name ("=stdin" -> "stdin") */
    const char *s = name[0] == '=' || name[0] == '@' ? name + 1 : name;
    snprintf(k->chunk, sizeof k->chunk, "%s", s);
}

static int backend_aborted(gcsh_ctx *ctx, const gcsh_comm_check *cc);

/* Communicators the backend gave up by itself meanwhile (an interrupted
 * stream wait aborts those with work in flight; an asynchronous error
 * aborts its own): every rank must abort them too. */
static void reap_aborted(gcsh_ctx *ctx, gcsh_check *k)
{
    for (gcsh_comm_check *cc = k->comms; cc; cc = cc->next)
        if (!cc->aborted && backend_aborted(ctx, cc)) {
            abort_comm(ctx, cc);
            note_aborted(k, cc->id);
        }
}

int gcsh_check_aborted(gcsh_ctx *ctx, gcsh_comm_check *cc)
{
    abort_doomed(ctx);
    if (!cc->aborted && backend_aborted(ctx, cc)) {
        abort_comm(ctx, cc);
        if (ctx->check) /* the others hear of it at the chunk's end */
            note_aborted(ctx->check, cc->id);
    }
    return cc->aborted;
}

void gcsh_check_abort_comm(gcsh_ctx *ctx, gcsh_comm_check *cc)
{
    abort_comm(ctx, cc);
    if (ctx->check)
        note_aborted(ctx->check, cc->id);
}

/* The counts of the communicators this command touched, for rank 0 to
 * compare across their members (shell/tally.h); aborted ones need none. */
static void send_counts(gcsh_check *k)
{
    size_t n = 0, i = 0;
    for (gcsh_comm_check *cc = k->comms; cc; cc = cc->next)
        n += cc->touched_chunk == k->chunk_seq && !cc->aborted;
    if (n == 0)
        return;
    gcsh_comm_count *v = malloc(n * sizeof *v);
    if (!v)
        return; /* then a disagreement shows as the next collective's hang */
    for (gcsh_comm_check *cc = k->comms; cc; cc = cc->next)
        if (cc->touched_chunk == k->chunk_seq && !cc->aborted)
            v[i++] = (gcsh_comm_count){cc->id, cc->seq};
    gcsh_capture_send(k->cap, MSG_COUNTS, v, n * sizeof *v);
    free(v);
}

/* A command that issued sends or recvs ends: the pair counts of each
 * communicator it issued them on (GCSH_SAID_FINAL) tell rank 0's checker
 * what a peer still in its check, or in a later command, can meet: a send
 * this rank issued unchecked or in a loop ended before the peer came (MPI
 * buffered it). */
static void say_final_counts(gcsh_check *k)
{
    gcsh_comm_check *cc = k->comms;
    while (cc && cc->next) /* the oldest first: rank 0 keeps the last told */
        cc = cc->next;
    for (; cc; cc = cc->prev)
        if (cc->p2p_chunk == k->chunk_seq && (cc->sent || cc->received))
            say_counts_now(k, cc);
}

void gcsh_check_chunk_end(gcsh_ctx *ctx)
{
    gcsh_check *k = ctx->check;
    if (!k)
        return;
    reap_aborted(ctx, k);
    say_final_counts(k);
    send_counts(k);
    gcsh_where_unpublish(k);
    if (k->naborted)
        gcsh_capture_send(k->cap, MSG_ABORTED, k->aborted, k->naborted * sizeof *k->aborted);
    k->naborted = 0;
}

/* ---- checked operations ---------------------------------------------------- */

void gcsh_fp_init(gcsh_fingerprint *fp, const gcsh_comm_check *cc, const char *op)
{
    memset(fp, 0, sizeof *fp);
    /* cut to fit, terminated by the memset (snprintf's parsing is most of
     * what filling a fingerprint costs, on every collective) */
    memcpy(fp->op, op, strnlen(op, sizeof fp->op - 1));
    fp->comm = cc->id;
    fp->seq = cc->seq + 1;
    fp->count = fp->offset = -1;
    fp->dtype = fp->redop = fp->root = -1;
    fp->kind = GCSH_FP_COLLECTIVE;
    fp->comm_rank = cc->rank;
    fp->comm_size = cc->size;
}

static int send_fingerprint(gcsh_check *k, const gcsh_comm_check *cc, const gcsh_fingerprint *fp)
{
    uint32_t head[2] = {++k->serial, cc->members ? (uint32_t)cc->size : 0};
    size_t mlen = cc->members ? (size_t)cc->size * sizeof(int32_t) : 0;
    /* a send or recv, or any call on a communicator that had some: the pair
     * counts with every member follow (rank 0's checker finds which call of
     * a peer meets a send or recv, collcheck_coord.c) */
    int counted = is_p2p_fp(fp) || cc->sent || cc->received;
    size_t plen = cc->members && counted ? 2 * (size_t)cc->size * sizeof(uint64_t) : 0;
    size_t len = sizeof head + sizeof *fp + mlen + plen;
    char *buf = malloc(len);
    if (!buf)
        return -1;
    memcpy(buf, head, sizeof head);
    memcpy(buf + sizeof head, fp, sizeof *fp);
    for (int i = 0; cc->members && i < cc->size; i++) {
        int32_t m = cc->members[i];
        memcpy(buf + sizeof head + sizeof *fp + (size_t)i * sizeof m, &m, sizeof m);
    }
    if (plen)
        pair_counts(cc, buf + sizeof head + sizeof *fp + mlen);
    int rc = gcsh_capture_send(k->cap, MSG_FP, buf, len);
    free(buf);
    return rc;
}

/* Reads the command channel until the verdict on fingerprint `serial`
 * arrives (stale verdicts of interrupted waits are skipped). */
static int await_verdict(gcsh_ctx *ctx, gcsh_check *k, const char *what)
{
    gcsh_msg m = {0};
    int rc = -1;
    for (;;) {
        if (atomic_load(&ctx->interrupt)) {
            gcsh_set_error(ctx, "interrupted while waiting for the others at %s", what);
            break;
        }
        int r = gcsh_wait_readable(k->fd, 0, VERDICT_POLL_MS);
        if (r == 0)
            continue;
        if (r < 0 || gcsh_msg_recv(k->fd, &m) != 0) {
            gcsh_set_error(ctx, "%s: rank 0 is gone (control channel closed)", what);
            break;
        }
        uint32_t v[2];
        if (m.h.type != MSG_VERDICT || m.h.len < sizeof v)
            continue;
        memcpy(v, m.data, sizeof v);
        if (v[0] != k->serial)
            continue;
        rc = v[1] ? 0 : gcsh_set_error(ctx, "%s", m.data + sizeof v);
        if (rc != 0)
            snprintf(ctx->check_failed, sizeof ctx->check_failed, "%s", ctx->err);
        break;
    }
    gcsh_msg_free(&m);
    return rc;
}

/* ---- the board (collcheck.h) ---------------------------------------------------------- */

/* Whether every member of cc posts on this rank's board. */
static int on_board(gcsh_ctx *ctx, gcsh_comm_check *cc)
{
    if (cc->on_board < 0) {
        cc->on_board = ctx->board && cc->members;
        for (int i = 0; cc->on_board && i < cc->size; i++)
            cc->on_board = gcsh_board_has(ctx->board, cc->members[i]);
    }
    return cc->on_board;
}

/* Everything a check compares (the coordinator compares the same fields as
 * text: collcheck_coord.c). */
static int same_call(const gcsh_fingerprint *a, const gcsh_fingerprint *b)
{
    return strcmp(a->op, b->op) == 0 && strcmp(a->extra, b->extra) == 0 && a->comm == b->comm &&
           a->seq == b->seq && a->count == b->count && a->offset == b->offset &&
           a->window == b->window && a->kind == b->kind && a->dtype == b->dtype &&
           a->redop == b->redop && a->root == b->root;
}

enum board_verdict { BOARD_AGREED, BOARD_WAIT, BOARD_ESCALATE };

/* One look at every other member's entry for my check `mine`. */
static enum board_verdict board_scan(gcsh_ctx *ctx, const gcsh_comm_check *cc,
                                     const gcsh_board_entry *mine)
{
    enum board_verdict v = BOARD_AGREED;
    for (int i = 0; i < cc->size; i++) {
        int m = cc->members[i];
        gcsh_board_entry e;
        if (m == ctx->rank)
            continue;
        if (!gcsh_board_read(ctx->board, m, cc->id, &e) || e.chunk != mine->chunk ||
            e.seq < mine->seq || (e.seq == mine->seq && e.attempt < mine->attempt)) {
            v = BOARD_WAIT; /* not there yet */
            continue;
        }
        if (e.seq > mine->seq)
            continue; /* it passed this one: it saw everyone agree, me included */
        if (e.attempt > mine->attempt || e.state == BOARD_ESCALATED ||
            e.state == BOARD_FAILED || !same_call(&e.fp, &mine->fp))
            return BOARD_ESCALATE; /* the coordinator says what is wrong, to everyone */
    }
    return v;
}

/* 0: passed on the board; 1: go to the coordinator (the board says so to
 * the others); -1: interrupted, with ctx->err. */
static int board_check(gcsh_ctx *ctx, gcsh_check *k, gcsh_comm_check *cc,
                       const gcsh_fingerprint *fp)
{
    gcsh_board_entry mine = {.chunk = k->chunk_seq, .attempt = fp->attempt, .seq = fp->seq,
                             .state = BOARD_POSTED, .fp = *fp};
    if (gcsh_board_post(ctx->board, ctx->rank, cc->id, &mine) != 0)
        return 1; /* this rank's table is full: the others will not see me there */
    double start = 0;
    for (unsigned polls = 0;; polls++) {
        enum board_verdict v = board_scan(ctx, cc, &mine);
        if (v == BOARD_AGREED) {
            gcsh_board_set_state(ctx->board, ctx->rank, cc->id, BOARD_PASSED);
            return 0;
        }
        if (v == BOARD_ESCALATE)
            break;
        if (atomic_load(&ctx->interrupt)) {
            gcsh_board_set_state(ctx->board, ctx->rank, cc->id, BOARD_FAILED);
            char what[128];
            gcsh_fp_describe(fp, what, sizeof what);
            return gcsh_set_error(ctx, "interrupted while waiting for the others at %s",
                                  what);
        }
        if (polls == 64)
            start = now_seconds();
        else if (polls > 64 && now_seconds() - start > BOARD_SPIN_S)
            break;
        if (polls >= 64 && now_seconds() - start >= gcsh_spin_first_s(ctx))
            sched_yield(); /* ranks may share cores: let the one we wait for run */
    }
    gcsh_board_set_state(ctx->board, ctx->rank, cc->id, BOARD_ESCALATED);
    return 1;
}

/* The attempt of cc's check at seq in this command (see gcsh_comm_check). */
static uint32_t attempt_of(const gcsh_check *k, gcsh_comm_check *cc, uint64_t seq)
{
    if (cc->attempt_chunk != k->chunk_seq || cc->attempt_seq != seq) {
        cc->attempt_chunk = k->chunk_seq;
        cc->attempt_seq = seq;
        cc->attempt = 0;
    }
    return cc->attempt;
}

/* The coordinator's verdict on fp (its round trip). */
static int coordinator_check(gcsh_ctx *ctx, gcsh_check *k, const gcsh_comm_check *cc,
                             const gcsh_fingerprint *fp)
{
    char what[128];
    gcsh_fp_describe(fp, what, sizeof what);
    if (send_fingerprint(k, cc, fp) != 0)
        return gcsh_set_error(ctx, "%s: rank 0 is gone (control channel closed)", what);
    return await_verdict(ctx, k, what);
}

int gcsh_check_collective(lua_State *L, gcsh_comm_check *cc, const gcsh_fingerprint *fp)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_check *k = ctx->check;
    if (!k || !k->enabled)
        return 0;
    int rc;
    if (fp->kind != GCSH_FP_COLLECTIVE || !on_board(ctx, cc)) {
        k->counts.coordinator++;
        rc = coordinator_check(ctx, k, cc, fp);
        k->counts.failed += rc != 0;
        return rc;
    }
    gcsh_fingerprint f = *fp;
    f.attempt = attempt_of(k, cc, fp->seq);
    rc = board_check(ctx, k, cc, &f);
    if (rc == 1) {
        k->counts.coordinator++;
        rc = coordinator_check(ctx, k, cc, &f);
        gcsh_board_set_state(ctx->board, ctx->rank, cc->id, rc == 0 ? BOARD_PASSED : BOARD_FAILED);
    } else if (rc == 0) {
        k->counts.board++;
    }
    if (rc != 0) {
        k->counts.failed++;
        cc->attempt++;
    }
    return rc;
}

/* Raises ctx->err.  After an interrupt, the stop part of the rank's hook
 * is still armed and would replace this message by "interrupted!" as soon
 * as the error handler is called: this message says more, so it goes. */
static _Noreturn void raise_error(lua_State *L, gcsh_ctx *ctx)
{
    if (atomic_load(&ctx->interrupt))
        gcsh_luahook_disarm(L, 1u << GCSH_LUAHOOK_STOP);
    luaL_error(L, "%s", ctx->err);
    abort(); /* not reached: luaL_error does not return */
}

void gcsh_check_note_of(gcsh_check_note *n, gcsh_ctx *ctx, const gcsh_comm_check *cc,
                        const gcsh_fingerprint *fp)
{
    int collective = fp->kind == GCSH_FP_COLLECTIVE;
    *n = (gcsh_check_note){.comm = cc->id, .seq = collective ? fp->seq : 0,
                           .comm_rank = cc->rank, .comm_size = cc->size,
                           .peer = collective ? -1 : fp->root, .op = fp->op,
                           .exchanged = gcsh_check_enabled(ctx)};
}

/* ---- a pair's sends and receives, in order ----------------------------------- */

void gcsh_check_p2p_issued(gcsh_ctx *ctx, gcsh_comm_check *cc, int send, int peer, int64_t n)
{
    uint64_t **done = send ? &cc->sent : &cc->received;
    if (peer < 0 || peer >= cc->size || !cc->linked) /* (a freed communicator's: none) */
        return;
    if (ctx->check)
        cc->p2p_chunk = ctx->check->chunk_seq;
    if (!*done)
        *done = calloc((size_t)cc->size, sizeof **done);
    if (*done) /* (out of memory: the counts stay 0; rank 0 then compares as before) */
        (*done)[peer] += (uint64_t)n;
}

/* fp's counts of the pair's calls before it */
static void p2p_counts(const gcsh_comm_check *cc, gcsh_fingerprint *fp)
{
    int peer = fp->root;
    int in = peer >= 0 && peer < cc->size;
    fp->sent = in && cc->sent ? cc->sent[peer] : 0;
    fp->received = in && cc->received ? cc->received[peer] : 0;
}

/* A send or recv past its check is issued (whatever the backend says of it
 * then: a failed recv may have taken its message), except while a graph
 * captures it: its replays issue it (l_graph.c counts them). */
static void p2p_entered(gcsh_ctx *ctx, gcsh_comm_check *cc, const gcsh_fingerprint *fp)
{
    if (ctx->graph)
        gcsh_graph_note_p2p(ctx, cc, fp->kind == GCSH_FP_SEND, fp->root, fp, sizeof *fp);
    else
        gcsh_check_p2p_issued(ctx, cc, fp->kind == GCSH_FP_SEND, fp->root, 1);
}

void gcsh_check_enter(lua_State *L, gcsh_comm_check *cc, gcsh_fingerprint *fp)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_check *k = ctx->check;
    if (k) {
        k->intent_on = 0;
        cc->touched_chunk = k->chunk_seq;
    }
    gcsh_check_usable(L, cc);
    if (k) /* (only this thread counts; the watcher reads it in op_fp, under the lock) */
        fp->entered = ++k->entered_count;
    if (is_p2p_fp(fp))
        p2p_counts(cc, fp);
    /* Back to checks after unchecked calls in this command: rank 0's
     * checker hears that those are over before this check (a check on the
     * board never reaches it, and a peer's checked call must not meet
     * what this rank said of an unchecked one). */
    if (k && k->enabled && k->unchecked_open && k->unchecked_said == k->chunk_seq) {
        k->unchecked_open = 0;
        say_final_counts(k); /* what it issued unchecked, on every communicator */
        gcsh_capture_send(k->cap, MSG_UNCHECKED, &fp->entered, sizeof fp->entered);
    }
    const gcsh_check_hooks *h = ctx->check_hooks;
    gcsh_check_note note;
    gcsh_check_note_of(&note, ctx, cc, fp);
    int token = h ? h->begin(ctx, &note) : -1;
    int rc = gcsh_check_collective(L, cc, fp);
    if (h) /* the calls the backend makes until leave belong to the collective */
        h->end(ctx, token, &note, rc);
    if (rc != 0)
        raise_error(L, ctx);
    if (k)
        publish_or_refuse(L, ctx, k, cc, fp);
    if (is_p2p_fp(fp))
        p2p_entered(ctx, cc, fp);
    if (fp->kind == GCSH_FP_COLLECTIVE) {
        cc->seq = fp->seq;
        if (ctx->graph) /* captured: a replay counts it again (core/graph.h) */
            gcsh_graph_note_check(ctx, cc, cc->impl);
    }
}

static int backend_aborted(gcsh_ctx *ctx, const gcsh_comm_check *cc)
{
    return cc->impl && ctx->be->comm->aborted && ctx->be->comm->aborted(cc->impl);
}

/* Ends the published operation; whether GCSH_INTERRUPT_PEER stopped it
 * (then *from: the rank that aborted its communicator).  what: the
 * operation in words, when rc says it failed. */
static int unpublish_leave(gcsh_ctx *ctx, gcsh_check *k, int rc, char *what, size_t len,
                           int *from, char *why, size_t why_len, int *unchecked)
{
    int expected = GCSH_INTERRUPT_PEER, peer;
    pthread_mutex_lock(&k->lock);
    if (rc != 0) /* words only for an error message */
        snprintf(what, len, "%s", gcsh_where_op_text(k));
    k->in_op = 0;
    peer = atomic_compare_exchange_strong(&ctx->interrupt, &expected, 0);
    *from = k->peer_from;
    *unchecked = peer && k->peer_unchecked;
    snprintf(why, why_len, "%s", peer ? k->peer_why : "");
    pthread_mutex_unlock(&k->lock);
    return peer;
}

/* cc's operation was abandoned on this rank: nobody can use cc any more.
 * The coordinator hears it now and stops the members still inside an
 * operation on it (they would wait for this rank forever). */
static void abandon_comm(gcsh_ctx *ctx, gcsh_check *k, gcsh_comm_check *cc)
{
    abort_comm(ctx, cc);
    if (!k)
        return;
    note_aborted(k, cc->id);
    gcsh_capture_send(k->cap, MSG_ABORTED, &cc->id, sizeof cc->id);
}

void gcsh_check_leave(lua_State *L, gcsh_comm_check *cc, int rc)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_check *k = ctx->check;
    char what[128] = "", cause[sizeof ctx->err], why[256] = "";
    int peer = 0, from = -1, unchecked = 0;
    if (ctx->check_hooks)
        ctx->check_hooks->leave(ctx);
    if (k)
        peer = unpublish_leave(ctx, k, rc, what, sizeof what, &from, why, sizeof why,
                               &unchecked);
    if (rc == 0)
        return;
    if (ctx->fatal)
        gcsh_fatal(L, ctx);
    int interrupted = atomic_load(&ctx->interrupt);
    if (!interrupted && !peer && !backend_aborted(ctx, cc))
        raise_error(L, ctx);
    abandon_comm(ctx, k, cc);
    const char *op = what[0] ? what : "a collective";
    if (interrupted) /* two lines, each within 80 columns under a rank tag (src/DESIGN.md) */
        gcsh_set_error(ctx, "interrupted in %s:\nthe communicator is aborted on every rank; "
                            "comm.world() makes a fresh one", op);
    else if (peer && unchecked) /* likewise, three */
        gcsh_set_error(ctx, "%s: stopped: rank %d's check failed, this rank's was off\n"
                            "(gcsh.check(false)): nobody joins it; the communicator is aborted\n"
                            "on every rank; comm.world() makes a fresh one", op, from);
    else if (peer && why[0])
        gcsh_set_error(ctx, "%s: abandoned: rank %d failed before joining it (%s); the "
                            "communicator is aborted on every rank (comm.world() makes a "
                            "fresh one)", op, from, why);
    else if (peer)
        gcsh_set_error(ctx, "%s: abandoned: it failed on rank %d, which aborted the "
                            "communicator; it is aborted on every rank (comm.world() makes a "
                            "fresh one)", op, from);
    else {
        snprintf(cause, sizeof cause, "%s", ctx->err);
        gcsh_set_error(ctx, "%s: %s; the communicator is aborted on every rank (comm.world() "
                            "makes a fresh one)%s", op, cause,
                       k && !k->enabled ? "; .check is off, so ranks that call a collective "
                                          "differently reach the backend unchecked" : "");
    }
    raise_error(L, ctx);
}

/* While the command's end waits for the GPU work of collectives it queued,
 * the rank is where a hang report looks: it waits for other ranks there
 * (the kernels wait for their peers).  The caller holds k->lock. */
static void publish_end_sync_locked(gcsh_check *k)
{
    if (k->entered_chunk != k->chunk_seq || k->nentered == 0)
        return;
    char last[96];
    gcsh_fp_describe(&k->entered[k->nentered - 1], last, sizeof last);
    snprintf(k->op, sizeof k->op, "the GPU work of %s", last);
    k->op_lazy = 0;
    k->since = now_seconds();
    k->in_op = 1;
    k->op_waits = 1;
    k->op_on_comm = 0;
}

/* The end of a command stopped waiting for GPU work it queued (an
 * interrupt, a peer that abandoned or aborted): the communicators of the
 * collectives it queued are aborted, here and (at the command's end) on
 * every rank, as its error says; their windows' sync words are no longer
 * in step. */
static void abort_entered(gcsh_ctx *ctx, gcsh_check *k)
{
    if (k->entered_chunk != k->chunk_seq)
        return;
    for (int i = 0; i < k->nentered; i++)
        for (gcsh_comm_check *cc = k->comms; cc; cc = cc->next)
            if (cc->id == k->entered[i].comm && !cc->aborted)
                gcsh_check_abort_comm(ctx, cc);
}

/* Arms (on 1) or disarms the end-of-command wait for abandons: one that
 * came before the wait began stops it at once.  Returns, on disarm,
 * whether an abandon stopped it (then *from and why say whose). */
static int end_sync_abandons(gcsh_ctx *ctx, gcsh_check *k, int on, int *from, char *why,
                             size_t why_len)
{
    int peer = 0;
    pthread_mutex_lock(&k->lock);
    k->in_end_sync = on;
    if (on) {
        publish_end_sync_locked(k);
        for (int i = 0; i < atomic_load(&k->nabandoned); i++)
            if (k->abandoned[i].chunk == k->chunk_seq)
                stop_end_sync_locked(ctx, k, &k->abandoned[i], k->abandoned_from[i]);
    } else {
        k->in_op = 0;
        int expected = GCSH_INTERRUPT_PEER;
        peer = atomic_compare_exchange_strong(&ctx->interrupt, &expected, 0);
        *from = k->peer_from;
        snprintf(why, why_len, "%s", peer ? k->peer_why : "");
    }
    pthread_mutex_unlock(&k->lock);
    return peer;
}

int gcsh_check_end_sync(lua_State *L)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_check *k = ctx->check;
    int from = -1, peer = 0;
    char why[256] = "";
    if (!ctx->be)
        return 0;
    if (k && ctx->be->stream_ordered)
        end_sync_abandons(ctx, k, 1, NULL, NULL, 0);
    int rc = ctx->be->mem->sync(ctx);
    if (k && ctx->be->stream_ordered)
        peer = end_sync_abandons(ctx, k, 0, &from, why, sizeof why);
    if (rc == 0)
        return 0;
    if (ctx->fatal)
        gcsh_fatal(L, ctx);
    if (k && (peer || atomic_load(&ctx->interrupt)))
        abort_entered(ctx, k);
    if (k)
        reap_aborted(ctx, k);
    /* what follows the cause in two lines of their own, each within 80
     * columns under a rank tag, as the host's (src/DESIGN.md); the first
     * line is as long as the operation's name and the peer's error make it */
#define IN_FLIGHT_ABORTED                                                                          \
    "\nthe communicators with work in flight are aborted on every rank;"                           \
    "\ncomm.world() makes a fresh one"
    if (peer && why[0])
        gcsh_set_error(ctx, "%s: abandoned: rank %d failed before joining it (%s);" IN_FLIGHT_ABORTED,
                       k->peer_op, from, why);
    else if (peer)
        gcsh_set_error(ctx, "%s: stopped: rank %d aborted its communicator;" IN_FLIGHT_ABORTED,
                       k->peer_op, from);
    else if (atomic_load(&ctx->interrupt))
        gcsh_set_error(ctx, "interrupted while the GPU ran this command's work (last: %s):"
                            IN_FLIGHT_ABORTED,
                       gcsh_where_last_op(k));
#undef IN_FLIGHT_ABORTED
    raise_error(L, ctx);
}
