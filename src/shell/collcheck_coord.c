/* Rank 0's side of the collective checks.  See collcheck_coord.h. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shell/collcheck_coord.h"
#include "core/dtype.h"
#include "wire/out.h"

#define DESC_LEN 160
/* Asks of a rank that runs unchecked (collcheck_coord.h): the first soon
 * after a group starts to wait for it, then less often while it is not in
 * the operation yet (a rank that computes for minutes first is asked a
 * few times a second, not thousands). */
#define ASK_FIRST_S 0.001
#define ASK_MAX_S 0.5
/* An unchecked peer still in an earlier send or recv of a pair this long
 * is let be, its call not compared (p2p_unchecked) */
#define UNCHECKED_STALL_S 1.0

void gcsh_checker_init(gcsh_checker *k, int size)
{
    k->size = size;
    k->slot = calloc((size_t)size, sizeof *k->slot);
    k->unchecked = calloc((size_t)size, sizeof *k->unchecked);
    k->told = calloc((size_t)size * GCSH_CHECKER_TOLD, sizeof *k->told);
    k->tick = 0;
    for (int i = 0; i < GCSH_CHECKER_FAILED; i++)
        k->failed[i] = (failed_check){.from = -1};
    k->nfailed = 0;
}

static void slot_clear(fp_slot *s)
{
    free(s->members);
    *s = (fp_slot){0};
}


/* The bytes of a send's or recv's pair counts on a communicator of size
 * members (collcheck.c: sent to each, then received from each). */
static size_t pairs_len(int size)
{
    return 2 * (size_t)size * sizeof(uint64_t);
}

void gcsh_checker_clear(gcsh_checker *k)
{
    for (int r = 0; r < k->size; r++) {
        slot_clear(&k->slot[r]);
        k->unchecked[r] = (unchecked_slot){0};
    }
    for (int i = 0; i < GCSH_CHECKER_FAILED; i++) {
        free(k->failed[i].members);
        k->failed[i] = (failed_check){.from = -1};
    }
    k->nfailed = 0;
}

void gcsh_checker_destroy(gcsh_checker *k)
{
    gcsh_checker_clear(k);
    for (size_t i = 0; k->told && i < (size_t)k->size * GCSH_CHECKER_TOLD; i++)
        free(k->told[i].pairs);
    free(k->told);
    k->told = NULL;
    free(k->slot);
    free(k->unchecked);
    k->slot = NULL;
    k->unchecked = NULL;
}

static int is_p2p(const gcsh_fingerprint *fp);

/* Whether a rank's unchecked call fp is the operation of the failed check
 * f (a send or recv: with f's rank). */
static int failed_here(const failed_check *f, const gcsh_fingerprint *fp)
{
    if (f->from < 0 || f->fp.comm != fp->comm || is_p2p(&f->fp) != is_p2p(fp))
        return 0;
    return is_p2p(fp) ? fp->root == f->fp.comm_rank : fp->seq == f->fp.seq;
}

/* Rank r's entry for fp's communicator (told_counts), or NULL. */
static told_counts *told_on(const gcsh_checker *k, int r, const gcsh_fingerprint *fp)
{
    told_counts *t = &k->told[(size_t)r * GCSH_CHECKER_TOLD];
    for (int i = 0; i < GCSH_CHECKER_TOLD; i++)
        if (t[i].size && t[i].comm == fp->comm && t[i].size == fp->comm_size)
            return &t[i];
    return NULL;
}

/* Rank r's pair counts on fp's communicator, or NULL when it told none. */
static const uint64_t *pairs_on(const gcsh_checker *k, int r, const gcsh_fingerprint *fp)
{
    const told_counts *t = told_on(k, r, fp);
    return t ? t->pairs : NULL;
}

/* The pair counts rank r told of with fp (plen bytes, collcheck.c): merged
 * with what it told before on that communicator, as counts of calls
 * issued only grow (an answer overtaken by a later one changes nothing);
 * a communicator not held takes the entry told of longest ago. */
static void keep_pairs(gcsh_checker *k, int r, const gcsh_fingerprint *fp, const char *pairs,
                       size_t plen)
{
    if (!plen)
        return;
    told_counts *t = told_on(k, r, fp);
    if (!t) {
        told_counts *row = &k->told[(size_t)r * GCSH_CHECKER_TOLD];
        t = &row[0];
        for (int i = 1; i < GCSH_CHECKER_TOLD; i++)
            if (row[i].used < t->used)
                t = &row[i];
        uint64_t *p = realloc(t->pairs, plen);
        if (!p)
            return;
        *t = (told_counts){.comm = fp->comm, .size = fp->comm_size, .pairs = p};
        memset(p, 0, plen);
    }
    for (size_t i = 0; i < 2 * (size_t)fp->comm_size; i++) {
        uint64_t v;
        memcpy(&v, pairs + i * sizeof v, sizeof v);
        if (v > t->pairs[i])
            t->pairs[i] = v;
    }
    t->used = ++k->tick;
}

/* A send or recv u's rank told of (its count says which call it is), kept
 * in the ring of the last ones. */
static void told_call(unchecked_slot *u, const gcsh_fingerprint *fp)
{
    int n = u->ncalls < GCSH_CHECKER_CALLS ? u->ncalls : GCSH_CHECKER_CALLS;
    for (int i = 0; i < n; i++)
        if (memcmp(&u->calls[i], fp, sizeof *fp) == 0)
            return; /* (asked again in the same call) */
    u->calls[u->ncalls++ % GCSH_CHECKER_CALLS] = *fp;
}

int gcsh_checker_unchecked(gcsh_checker *k, const gcsh_checker_io *io, int r, const void *payload,
                           size_t len, double now)
{
    unchecked_slot *u = &k->unchecked[r];
    if (len == sizeof(uint64_t)) { /* back to checks: its unchecked call is over */
        uint64_t entered;
        memcpy(&entered, payload, sizeof entered);
        if (entered > u->checked)
            u->checked = entered;
        u->known = 0;
        u->gap = ASK_FIRST_S;
        u->next_ask = now;
        return 0;
    }
    if (len != 0 && len < sizeof u->fp)
        return -1;
    size_t plen = len ? len - sizeof u->fp : 0;
    if (len) {
        gcsh_fingerprint f;
        memcpy(&f, payload, sizeof f);
        if (plen && (f.comm_size < 1 || plen != pairs_len(f.comm_size))) /* pair counts */
            return -1;
        if (f.said) { /* counts, or calls told of beside its checks: not where it is */
            f.op[sizeof f.op - 1] = f.extra[sizeof f.extra - 1] = '\0';
            keep_pairs(k, r, &f, (const char *)payload + sizeof f, plen);
            if (f.said == GCSH_SAID_CALLS && is_p2p(&f))
                told_call(u, &f);
            return 0;
        }
    }
    int first = !u->said;
    if (first) {
        u->said = 1;
        u->gap = ASK_FIRST_S;
        u->next_ask = now;
    }
    uint64_t was = u->known ? u->fp.entered : 0;
    u->known = len != 0;
    if (u->known) {
        memcpy(&u->fp, payload, sizeof u->fp);
        keep_pairs(k, r, &u->fp, (const char *)payload + sizeof u->fp, plen);
        if (u->fp.entered != was) {
            u->still_since = now;
            u->stalled = 0;
        } else if (now - u->still_since >= UNCHECKED_STALL_S) {
            u->stalled = 1;
        }
        u->fp.op[sizeof u->fp.op - 1] = u->fp.extra[sizeof u->fp.extra - 1] = '\0';
        if (is_p2p(&u->fp))
            told_call(u, &u->fp);
        /* an answer its watcher read before the rank came to a check, and
         * sent after it: that call is over */
        if (u->fp.entered < u->checked)
            u->known = 0;
    }
    /* a check that failed before this rank said it skips them: the ranks
     * of that check do not join the operation this rank came to */
    for (int i = 0; first && u->known && io->abandon && i < GCSH_CHECKER_FAILED; i++)
        if (failed_here(&k->failed[i], &u->fp))
            io->abandon(io->arg, k->failed[i].from, &k->failed[i].fp, k->failed[i].members,
                        "its check failed");
    return 0;
}

static int peer_of(const fp_slot *s);

/* A new check asks the unchecked members it waits for at once, however
 * long earlier checks asked them for: a loop of checked calls that meet a
 * rank running unchecked waits one question a call, not the longest gap. */
static void ask_afresh(gcsh_checker *k, const fp_slot *s, double now)
{
    for (int i = 0; s->members && i < s->fp.comm_size; i++) {
        int m = s->members[i];
        if (is_p2p(&s->fp) && m != peer_of(s))
            continue;
        unchecked_slot *u = &k->unchecked[m];
        if (u->said) {
            u->gap = ASK_FIRST_S;
            u->next_ask = now;
        }
    }
}

int gcsh_checker_add(gcsh_checker *k, int r, const void *payload, size_t len, double now)
{
    uint32_t head[2];
    const char *p = payload;
    if (len < sizeof head + sizeof(gcsh_fingerprint))
        return -1;
    memcpy(head, p, sizeof head);
    size_t mlen = (size_t)head[1] * sizeof(int32_t);
    if (len < sizeof head + sizeof(gcsh_fingerprint) + mlen)
        return -1;
    size_t plen = len - (sizeof head + sizeof(gcsh_fingerprint) + mlen); /* pair counts */
    fp_slot *s = &k->slot[r];
    slot_clear(s);
    /* a rank in a check is in no unchecked operation: what it said of one
     * before is over (a peer waiting for it must not meet that call); it
     * may skip checks again in this command, so it is asked afresh then */
    unchecked_slot *u = &k->unchecked[r];
    u->known = 0;
    u->gap = ASK_FIRST_S;
    u->next_ask = now;
    memcpy(&s->fp, p + sizeof head, sizeof s->fp);
    if (s->fp.entered > u->checked)
        u->checked = s->fp.entered;
    s->fp.op[sizeof s->fp.op - 1] = s->fp.extra[sizeof s->fp.extra - 1] = '\0';
    if (s->fp.comm_size < 1 || s->fp.comm_rank < 0 || s->fp.comm_rank >= s->fp.comm_size ||
        (head[1] && (int)head[1] != s->fp.comm_size) ||
        (plen && (!head[1] || plen != pairs_len(s->fp.comm_size))))
        return -1;
    /* (kept per rank: while it waits here its counts stand still) */
    keep_pairs(k, r, &s->fp, p + sizeof head + sizeof s->fp + mlen, plen);
    if (head[1]) {
        s->members = malloc(mlen);
        for (uint32_t i = 0; i < head[1]; i++) {
            int32_t m;
            memcpy(&m, p + sizeof head + sizeof s->fp + i * sizeof m, sizeof m);
            s->members[i] = m >= 0 && m < k->size ? m : 0;
        }
    }
    s->present = 1;
    s->serial = head[0];
    s->since = now;
    ask_afresh(k, s, now);
    return 0;
}

int gcsh_checker_waiting(const gcsh_checker *k, int r)
{
    return k->slot[r].present;
}

/* ---- descriptions ------------------------------------------------------------ */

static int is_p2p(const gcsh_fingerprint *fp)
{
    return fp->kind == GCSH_FP_SEND || fp->kind == GCSH_FP_RECV;
}

static const char *comm_suffix(const gcsh_fingerprint *fp, char *buf, size_t len)
{
    gcsh_comm_check cc = {.id = fp->comm};
    char name[32];
    gcsh_comm_name(&cc, name, sizeof name);
    snprintf(buf, len, "%s%s", strcmp(name, "world") ? " on " : "",
             strcmp(name, "world") ? name : "");
    return buf;
}

/* "allreduce #5" / "send to 1" (+ " on comm 1a2b3c") */
static void fp_title(const gcsh_fingerprint *fp, char *buf, size_t len)
{
    char on[48];
    comm_suffix(fp, on, sizeof on);
    if (is_p2p(fp))
        snprintf(buf, len, "%s %s %d%s", fp->op, fp->kind == GCSH_FP_SEND ? "to" : "from",
                 fp->root, on);
    else
        snprintf(buf, len, "%s #%llu%s", fp->op, (unsigned long long)fp->seq, on);
}

/* The arguments: "f32 x1024 sum", "root 1", "window 3 offset 8" */
static void fp_args(const gcsh_fingerprint *fp, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
#define ADD(...)                                                                  \
    do {                                                                          \
        int w_ = snprintf(buf + n, len - n, "%s", n ? " " : "");                  \
        if (w_ > 0 && (size_t)w_ < len - n)                                       \
            n += (size_t)w_;                                                      \
        w_ = snprintf(buf + n, len - n, __VA_ARGS__);                             \
        if (w_ > 0 && (size_t)w_ < len - n)                                       \
            n += (size_t)w_;                                                      \
    } while (0)
    if (fp->dtype >= 0 && fp->dtype < GCSH_NDTYPES)
        ADD("%s", gcsh_dtype_name((gcsh_dtype)fp->dtype));
    if (fp->count >= 0)
        ADD("x%lld", (long long)fp->count);
    if (fp->redop >= 0 && fp->redop < GCSH_NOPS)
        ADD("%s", gcsh_redop_name((gcsh_redop)fp->redop));
    if (fp->root >= 0 && !is_p2p(fp))
        ADD("root %d", fp->root);
    if (fp->window)
        ADD("window %llu", (unsigned long long)fp->window);
    if (fp->offset >= 0)
        ADD("offset %lld", (long long)fp->offset);
    if (fp->extra[0])
        ADD("%s", fp->extra);
#undef ADD
}

/* Everything compared: title + arguments. */
static void fp_full(const gcsh_fingerprint *fp, char *buf, size_t len)
{
    char title[64], args[DESC_LEN - 65]; /* sized so the sum fits buf */
    fp_title(fp, title, sizeof title);
    fp_args(fp, args, sizeof args);
    snprintf(buf, len, "%s%s%s", title, args[0] ? " " : "", args);
}

/* gcsh_fold_texts over an array of fixed-size strings. */
static void fold_texts(gcsh_text *out, const int *ranks, int n, char (*texts)[DESC_LEN],
                       const char *sep)
{
    const char **v = malloc((size_t)n * sizeof *v);
    for (int i = 0; i < n; i++)
        v[i] = texts[i];
    gcsh_fold_texts(out, ranks, n, v, sep);
    free(v);
}

void gcsh_checker_where(const gcsh_checker *k, int r, double now, char *buf, size_t len)
{
    const fp_slot *s = &k->slot[r];
    char title[96];
    fp_title(&s->fp, title, sizeof title);
    snprintf(buf, len, "in %s (waiting for the others, %.1f s)", title, now - s->since);
}

/* ---- groups ---------------------------------------------------------------- */

typedef struct group {
    int complete;  /* everyone is there: compare */
    int n;         /* ranks waiting in it (who gets the verdict) */
    int nmissing;  /* members it waits for */
    int ncoming;   /* members on the check board that will come or pass (collcheck.h) */
    int nunchecked; /* members in the operation unchecked: their call stands for a fingerprint */
    int *ranks, *missing, *unchecked;
    const gcsh_fingerprint *peer_fp; /* a send or recv: the unchecked peer's call */
    double since;  /* the earliest of the waits */
} group;

static int waits_on(const gcsh_checker *k, int r, uint64_t comm)
{
    return k->slot[r].present && k->slot[r].fp.comm == comm;
}

static void group_add(group *g, int r, const gcsh_checker *k)
{
    g->ranks[g->n++] = r;
    if (k->slot[r].since < g->since)
        g->since = k->slot[r].since;
}

/* The peer of the send or recv at r, or -1 when r's members are unknown. */
static int peer_of(const fp_slot *s)
{
    if (!s->members || s->fp.root < 0 || s->fp.root >= s->fp.comm_size)
        return -1;
    return s->members[s->fp.root];
}

/* The counts of sends to and receives from comm rank `to` that the rank
 * of send or recv fp (pairs: its counts with every member, or NULL)
 * issued before fp; 0 when they are not known. */
static int counts_toward(const gcsh_fingerprint *fp, const uint64_t *pairs, int to,
                         uint64_t *sent, uint64_t *received)
{
    if (pairs && to >= 0 && to < fp->comm_size) {
        *sent = pairs[to];
        *received = pairs[fp->comm_size + to];
        return 1;
    }
    if (fp->root != to)
        return 0;
    *sent = fp->sent;
    *received = fp->received;
    return 1;
}

/* Whether send or recv b (or one of the b->times calls it stands for,
 * b->stride apart in the count: a loop's, a graph replay's) is the call of
 * a's peer that meets a: the other kind, with a's rank, of a's count of the
 * pair (then what the peer said of it, even long before, is that call). */
static int meets(const gcsh_fingerprint *a, const gcsh_fingerprint *b)
{
    if (!is_p2p(b) || b->comm != a->comm || b->kind == a->kind || b->root != a->comm_rank)
        return 0;
    uint64_t want = a->kind == GCSH_FP_RECV ? a->received : a->sent;
    uint64_t first = b->kind == GCSH_FP_SEND ? b->sent : b->received;
    uint64_t times = b->times ? b->times : 1, stride = b->stride ? b->stride : 1;
    return want >= first && (want - first) % stride == 0 && (want - first) / stride < times;
}

/* The call member m told of that meets send or recv a (meets): what it
 * said of a call it was in, or one of the calls it told of in this command
 * (told_call keeps both); NULL when none does. */
static const gcsh_fingerprint *told_meeting(const gcsh_checker *k, int m,
                                            const gcsh_fingerprint *a)
{
    const unchecked_slot *u = &k->unchecked[m];
    int n = u->ncalls < GCSH_CHECKER_CALLS ? u->ncalls : GCSH_CHECKER_CALLS;
    for (int i = 0; i < n; i++)
        if (meets(a, &u->calls[i]))
            return &u->calls[i];
    return NULL;
}

/* Whether a peer that issued sent sends to a's rank and received recvs
 * from it issued the call that meets a. */
static int meets_issued(const gcsh_fingerprint *a, uint64_t sent, uint64_t received)
{
    return a->kind == GCSH_FP_RECV ? sent > a->received : received > a->sent;
}

/* Whether the rank of b (a send or recv on a's communicator, with its pair
 * counts) issued the call that meets a before b.  A pair's calls meet in
 * order (the n-th send meets the n-th recv, in MPI and NCCL), and a send
 * may end before its recv comes (MPI buffers it): a peer may be past the
 * call that meets a, which is then not there to compare. */
static int meeting_issued(const gcsh_fingerprint *a, const gcsh_fingerprint *b,
                          const uint64_t *b_pairs)
{
    uint64_t sent, received;
    if (!is_p2p(b) || b->comm != a->comm ||
        !counts_toward(b, b_pairs, a->comm_rank, &sent, &received))
        return 0;
    return meets_issued(a, sent, received);
}

/* Whether what member m told of its pair counts (unchecked_slot) shows it
 * issued the call that meets s's: it need not be there. */
static int told_issued(const gcsh_checker *k, const fp_slot *s, int m)
{
    const uint64_t *pairs = pairs_on(k, m, &s->fp);
    int me = s->fp.comm_rank;
    return pairs && meets_issued(&s->fp, pairs[me], pairs[s->fp.comm_size + me]);
}

/* The slot of the peer of r's send or recv when it waits in a send or recv
 * on the same communicator (with r's rank or another's); NULL otherwise. */
static const fp_slot *peer_waits_p2p(const gcsh_checker *k, int r)
{
    const fp_slot *s = &k->slot[r];
    int w = peer_of(s);
    if (!is_p2p(&s->fp) || w < 0 || !waits_on(k, w, s->fp.comm) || !is_p2p(&k->slot[w].fp))
        return NULL;
    return &k->slot[w];
}

/* Whether the send or recv at r and its peer's call that meets it both
 * wait: a pair to compare. */
static int paired(const gcsh_checker *k, int r)
{
    const fp_slot *s = &k->slot[r], *w = peer_waits_p2p(k, r);
    return w && w->fp.root == s->fp.comm_rank &&
           !meeting_issued(&s->fp, &w->fp, pairs_on(k, peer_of(s), &w->fp)) &&
           !meeting_issued(&w->fp, &s->fp, pairs_on(k, r, &s->fp));
}

/* Whether what the peer of r's send or recv said of an unchecked call is
 * the call that meets it (meets): a pair to compare, wherever the peer
 * waits now (a collective it came to after a buffered send). */
static int meets_said(const gcsh_checker *k, int r)
{
    const fp_slot *s = &k->slot[r];
    int peer = peer_of(s);
    return is_p2p(&s->fp) && peer >= 0 && told_meeting(k, peer, &s->fp);
}

/* Whether the peer of r's send or recv, waiting in a later call, issued
 * the one that meets r's already (unchecked, or in a loop, c:loop): r's
 * call has nothing to meet but what was sent or is awaited. */
static int passes_alone(const gcsh_checker *k, int r)
{
    const fp_slot *s = &k->slot[r], *w = peer_waits_p2p(k, r);
    if (w && meeting_issued(&s->fp, &w->fp, pairs_on(k, peer_of(s), &w->fp)))
        return 1;
    /* or told of it, waiting elsewhere (a collective) or not at all, unless
     * what it said of an unchecked call is that one: then it is compared */
    int peer = peer_of(s);
    return is_p2p(&s->fp) && peer >= 0 && !told_meeting(k, peer, &s->fp) &&
           told_issued(k, s, peer);
}

/* Every member waits on the communicator (of any kind): one group. */
static int all_members_wait(const gcsh_checker *k, const fp_slot *s)
{
    int count = 0;
    for (int m = 0; m < k->size; m++)
        count += waits_on(k, m, s->fp.comm);
    if (!s->members)
        return count == s->fp.comm_size;
    for (int i = 0; i < s->fp.comm_size; i++)
        if (!waits_on(k, s->members[i], s->fp.comm))
            return 0;
    return 1;
}

/* Whether the ranks waiting on comm wait in collectives (no send or recv:
 * those carry no number) with different numbers. */
static int numbers_differ(const gcsh_checker *k, uint64_t comm)
{
    int any = 0;
    uint64_t first = 0;
    for (int m = 0; m < k->size; m++) {
        if (!waits_on(k, m, comm))
            continue;
        if (is_p2p(&k->slot[m].fp))
            return 0;
        if (any && k->slot[m].fp.seq != first)
            return 1;
        any = 1;
        first = k->slot[m].fp.seq;
    }
    return 0;
}

/* The lowest check number among the ranks waiting on comm. */
static uint64_t lowest_seq(const gcsh_checker *k, uint64_t comm)
{
    uint64_t low = UINT64_MAX;
    for (int m = 0; m < k->size; m++)
        if (waits_on(k, m, comm) && k->slot[m].fp.seq < low)
            low = k->slot[m].fp.seq;
    return low;
}

/* Every member waits, at different collectives: a member at a later check
 * has passed the earlier ones (a rank that stalled on the check board may
 * bring its check here after the others passed it there and went on: only
 * with a board, where numbers advance without the coordinator), so
 * the members at the lowest number compare now and those further on wait
 * for them to come. */
static void group_by_number(const gcsh_checker *k, const fp_slot *s, group *g)
{
    for (int m = 0; m < k->size; m++) {
        if (!waits_on(k, m, s->fp.comm))
            continue;
        if (k->slot[m].fp.seq == s->fp.seq)
            group_add(g, m, k);
        else if (k->slot[m].fp.seq < s->fp.seq)
            g->ncoming++;
    }
    g->complete = s->fp.seq == lowest_seq(k, s->fp.comm);
}

enum { UNCHECKED_NO, UNCHECKED_HERE, UNCHECKED_PAST, UNCHECKED_PENDING };

/* The same for a send or recv s whose peer runs unchecked, in its call u
 * on s's communicator.  A pair's calls meet in order (meeting_issued), so
 * the peer may be past the call that meets s (a send that MPI buffered:
 * nothing is left to compare, as a collective member past on the board),
 * in an earlier call of the pair whose message is there already, or in a
 * call with another rank (either ends: asked again).  A peer in a call of
 * the pair that meets no call of s (both receive, both send) is compared:
 * the mismatch is the verdict; so is one seen in a collective of the
 * communicator for UNCHECKED_STALL_S (it needs s's rank, held in this
 * check).  A peer that stays that long in a call that ends (counts that
 * went apart, or a rank that keeps it waiting) is let be, as one past: its
 * call is not known, so neither a mismatch nor a wait forever is true. */
static int p2p_unchecked(const gcsh_checker *k, int m, const fp_slot *s)
{
    const unchecked_slot *u = &k->unchecked[m];
    const gcsh_fingerprint *a = &s->fp, *b = &u->fp;
    if (!is_p2p(b))
        return u->stalled ? UNCHECKED_HERE : UNCHECKED_PENDING;
    if (meeting_issued(a, b, pairs_on(k, m, b)))
        return UNCHECKED_PAST;
    int behind = b->root != a->comm_rank ||
                 (b->kind == GCSH_FP_RECV ? b->received < a->sent : b->sent < a->received);
    if (!behind)
        return UNCHECKED_HERE;
    return u->stalled ? UNCHECKED_PAST : UNCHECKED_PENDING;
}

/* Where member m, which does not wait on a fingerprint, stands for the
 * check of s as a rank that runs unchecked (collcheck_coord.h): not one,
 * in s's operation (a send or recv: the one with s's rank), past it on s's
 * communicator (as a member that passed on the board), or not there yet. */
static int member_unchecked(const gcsh_checker *k, const fp_slot *s, int m)
{
    const unchecked_slot *u = &k->unchecked[m]; /* (a send or recv that meets a call it
                                                     told of: passes_alone, meets_said) */
    if (!u->said)
        return UNCHECKED_NO;
    if (!u->known || u->fp.comm != s->fp.comm)
        return UNCHECKED_PENDING;
    if (is_p2p(&s->fp))
        return p2p_unchecked(k, m, s);
    if (is_p2p(&u->fp) || u->fp.seq < s->fp.seq)
        return UNCHECKED_PENDING;
    return u->fp.seq == s->fp.seq ? UNCHECKED_HERE : UNCHECKED_PAST;
}

/* The fingerprint of a group's i-th participant: its waiting ranks, then
 * the members in its operation unchecked. */
static const gcsh_fingerprint *fp_at(const gcsh_checker *k, const group *g, int i)
{
    if (i < g->n)
        return &k->slot[g->ranks[i]].fp;
    return g->peer_fp ? g->peer_fp : &k->unchecked[g->unchecked[i - g->n]].fp;
}

static int rank_at(const group *g, int i)
{
    return i < g->n ? g->ranks[i] : g->unchecked[i - g->n];
}

/* The group r waits in.  Pairs, and calls whose peer is past them, are
 * resolved before groups (resolve), so when every member waits and r is
 * not paired, the mixture is a deadlock. */
static void find_group(const gcsh_checker *k, const gcsh_checker_io *io, int r, group *g)
{
    const fp_slot *s = &k->slot[r];
    g->n = g->nmissing = g->ncoming = g->complete = g->nunchecked = 0;
    g->since = s->since;
    g->peer_fp = NULL;
    if (passes_alone(k, r)) {
        group_add(g, r, k);
        g->complete = 1;
    } else if (meets_said(k, r)) {
        group_add(g, r, k);
        g->unchecked[g->nunchecked++] = peer_of(s);
        g->peer_fp = told_meeting(k, peer_of(s), &s->fp);
        g->complete = 1;
    } else if (paired(k, r)) {
        group_add(g, r, k);
        group_add(g, peer_of(s), k);
        g->complete = 1;
    } else if (io->board && all_members_wait(k, s) && numbers_differ(k, s->fp.comm)) {
        group_by_number(k, s, g);
    } else if (all_members_wait(k, s)) {
        for (int m = 0; m < k->size; m++)
            if (waits_on(k, m, s->fp.comm))
                group_add(g, m, k);
        g->complete = 1;
    } else if (is_p2p(&s->fp)) {
        group_add(g, r, k);
        int peer = peer_of(s);
        int where = peer < 0 ? UNCHECKED_NO : member_unchecked(k, s, peer);
        if (where == UNCHECKED_HERE) {
            g->unchecked[g->nunchecked++] = peer;
            g->peer_fp = told_meeting(k, peer, &s->fp); /* (NULL: the call it is in) */
        }
        else if (peer >= 0 && where != UNCHECKED_PAST) /* past: nothing left to compare */
            g->missing[g->nmissing++] = peer;
        g->complete = g->nunchecked > 0 || where == UNCHECKED_PAST;
    } else {
        for (int m = 0; m < k->size; m++)
            if (waits_on(k, m, s->fp.comm) && !is_p2p(&k->slot[m].fp))
                group_add(g, m, k);
        int agreed = 0;
        for (int i = 0; s->members && i < s->fp.comm_size; i++) {
            int m = s->members[i];
            if (waits_on(k, m, s->fp.comm) && !is_p2p(&k->slot[m].fp))
                continue;
            int unchecked = member_unchecked(k, s, m);
            if (unchecked == UNCHECKED_HERE) {
                g->unchecked[g->nunchecked++] = m;
                continue;
            }
            int on_board = unchecked == UNCHECKED_PAST ? CHECK_BOARD_AGREED
                           : io->board                 ? io->board(io->arg, m, &s->fp)
                                                       : CHECK_BOARD_ABSENT;
            if (on_board == CHECK_BOARD_AGREED)
                agreed++;
            else if (on_board == CHECK_BOARD_COMING)
                g->ncoming++;
            else
                g->missing[g->nmissing++] = m;
        }
        /* members that passed on the board saw every fingerprint agree;
         * those in the operation unchecked are compared with the rest */
        g->complete = (agreed > 0 || g->nunchecked > 0) && g->nmissing == 0 && g->ncoming == 0;
    }
}

/* ---- verdicts --------------------------------------------------------------- */

static void answer(gcsh_checker *k, const gcsh_checker_io *io, const group *g, int ok,
                   const char *text)
{
    for (int i = 0; i < g->n; i++) {
        int r = g->ranks[i];
        io->verdict(io->arg, r, k->slot[r].serial, ok, text);
        slot_clear(&k->slot[r]);
    }
}

/* A send and a recv match when they move the same elements. */
static int pair_matches(const gcsh_fingerprint *a, const gcsh_fingerprint *b)
{
    return a->kind != b->kind && a->count == b->count && a->dtype == b->dtype;
}

/* The waiting ranks of g will not join the operation that members of g run
 * unchecked (their check failed): those members must not wait for them. */
static void stop_unchecked(const gcsh_checker *k, const gcsh_checker_io *io, const group *g,
                           const char *why)
{
    if (!io->abandon)
        return;
    for (int i = 0; i < g->n; i++) {
        const fp_slot *s = &k->slot[g->ranks[i]];
        io->abandon(io->arg, g->ranks[i], &s->fp, s->members, why);
    }
    /* a send or recv that met a member's collective: that one is stopped
     * (the send's abandon names a send or recv, which it is not in) */
    for (int i = 0; g->n && is_p2p(&k->slot[g->ranks[0]].fp) && i < g->nunchecked; i++) {
        const unchecked_slot *u = &k->unchecked[g->unchecked[i]];
        if (!is_p2p(&u->fp))
            io->abandon(io->arg, g->ranks[0], &u->fp, k->slot[g->ranks[0]].members, why);
    }
}

/* The head of a mismatch with members that skipped their check: "allreduce
 * #1: [1] skipped the check (gcsh.check(false)):" and a line break, so that
 * each line fits 80 columns under its rank tag (src/DESIGN.md). */
static void unchecked_head(gcsh_text *msg, const group *g, const char *title)
{
    char who[256];
    gcsh_format_ranks(g->unchecked, g->nunchecked, who, sizeof who);
    gcsh_text_append(msg, title, strlen(title));
    gcsh_text_append(msg, ": [", 3);
    gcsh_text_append(msg, who, strlen(who));
    const char *said = "] skipped the check (gcsh.check(false)):\nthe calls: ";
    gcsh_text_append(msg, said, strlen(said));
}

/* ... and the last line: what becomes of them (stopped in it, refused
 * later, or gone on already: a send MPI buffered). */
static void unchecked_tail(gcsh_text *msg, const group *g)
{
    char who[256];
    gcsh_format_ranks(g->unchecked, g->nunchecked, who, sizeof who);
    gcsh_text_append(msg, "\n[", 2);
    gcsh_text_append(msg, who, strlen(who));
    const char *tail = "] does not wait there: the checked ranks do not join it";
    gcsh_text_append(msg, tail, strlen(tail));
}

/* Everyone is there (the members that skipped their check, in the
 * operation, with their calls): equal fingerprints pass; otherwise one
 * message naming each rank's call ("allreduce #17: [0,2-3] f32 x1024
 * sum, [1] f32 x1025 sum"). */
static void compare_group(gcsh_checker *k, const gcsh_checker_io *io, const group *g)
{
    int np = g->n + g->nunchecked;
    char (*full)[DESC_LEN] = malloc((size_t)np * sizeof *full);
    int *who = malloc((size_t)np * sizeof *who);
    int same = 1, pair = np == 2 && is_p2p(fp_at(k, g, 0)) && is_p2p(fp_at(k, g, 1));
    for (int i = 0; i < np; i++) {
        who[i] = rank_at(g, i);
        fp_full(fp_at(k, g, i), full[i], DESC_LEN);
        same &= strcmp(full[i], full[0]) == 0;
    }
    if (pair)
        same = pair_matches(fp_at(k, g, 0), fp_at(k, g, 1));
    if (same) {
        answer(k, io, g, 1, "");
        free(full);
        free(who);
        return;
    }
    gcsh_text msg = {0};
    char title[96], t2[96];
    fp_title(fp_at(k, g, 0), title, sizeof title);
    int one_title = !pair;
    for (int i = 1; i < np && one_title; i++) {
        fp_title(fp_at(k, g, i), t2, sizeof t2);
        one_title = strcmp(title, t2) == 0;
    }
    if (one_title) /* only the arguments differ: show them alone */
        for (int i = 0; i < np; i++)
            fp_args(fp_at(k, g, i), full[i], DESC_LEN);
    if (g->nunchecked) {
        unchecked_head(&msg, g, pair ? "send/recv" : title);
    } else if (one_title) {
        gcsh_text_append(&msg, "collective mismatch: ", 21);
        gcsh_text_append(&msg, title, strlen(title));
        gcsh_text_append(&msg, ": ", 2);
    } else {
        const char *head = pair ? "send/recv mismatch: " : "collective mismatch: ";
        gcsh_text_append(&msg, head, strlen(head));
    }
    fold_texts(&msg, who, np, full, ", ");
    if (g->nunchecked) {
        unchecked_tail(&msg, g);
        stop_unchecked(k, io, g, "its check cannot meet a call made unchecked");
    }
    answer(k, io, g, 0, msg.s);
    gcsh_text_free(&msg);
    free(full);
    free(who);
}

/* Whether every missing member's whereabouts are known without asking it. */
static int accounted_for(const gcsh_checker *k, const gcsh_checker_io *io, const group *g,
                         int probed)
{
    for (int i = 0; i < g->nmissing; i++) {
        int m = g->missing[i];
        if (!k->slot[m].present && io->running(io->arg, m) && !probed)
            return 0;
    }
    return 1;
}

static int doomed(const gcsh_checker *k, const gcsh_checker_io *io, const group *g)
{
    for (int i = 0; i < g->nmissing; i++)
        if (!k->slot[g->missing[i]].present && !io->running(io->arg, g->missing[i]))
            return 1;
    return 0;
}

static group group_new(int size);
static void group_free(group *g);
static int cmp_int(const void *a, const void *b);

/* Whether g waits for a member that waits, in a check on another
 * communicator, for a member that waits ... for one of g's own ranks: a
 * cycle that no arrival can end, since a rank waits in one check at a time
 * (rank 1 gave up on a sweep's case and went to its next collective while
 * rank 0 still waits in the case's).  Every rank is looked at once. */
static int deadlocked(const gcsh_checker *k, const gcsh_checker_io *io, const group *g)
{
    int found = 0, n = 0;
    char *seen = calloc((size_t)k->size, 1);
    int *pending = malloc((size_t)k->size * sizeof *pending);
    for (int i = 0; i < g->nmissing; i++)
        if (k->slot[g->missing[i]].present && !seen[g->missing[i]]) {
            seen[g->missing[i]] = 1;
            pending[n++] = g->missing[i];
        }
    group h = group_new(k->size);
    while (n > 0 && !found) {
        find_group(k, io, pending[--n], &h);
        for (int i = 0; i < h.nmissing && !found; i++) {
            int m = h.missing[i];
            for (int j = 0; j < g->n && !found; j++)
                found = g->ranks[j] == m;
            if (!found && k->slot[m].present && !seen[m]) {
                seen[m] = 1;
                pending[n++] = m;
            }
        }
    }
    group_free(&h);
    free(seen);
    free(pending);
    return found;
}

static int failed(const gcsh_checker *k, const gcsh_checker_io *io, const group *g, double now,
                  double timeout)
{
    /* members still on the board escalate within BOARD_SPIN_S: they get
     * the same verdict as the rest of the group */
    if (g->complete || g->ncoming > 0)
        return 0;
    return doomed(k, io, g) || (timeout > 0 && now - g->since >= timeout);
}

/* "barrier #5: [0,2] waited 10.0 s for [1,3]: [1] finished the command; [3] running ..."
 * or, when the waiting ranks are in different calls,
 * "[0-1] barrier #2, [3] allreduce #2 f32 x3 sum: waited 1.1 s for [2]: ..." */
static void fail_text(const gcsh_checker *k, const gcsh_checker_io *io, const group *g, double now,
                      gcsh_text *msg_out)
{
    char label[1024];
    char (*text)[DESC_LEN] = malloc((size_t)(g->n + g->nmissing) * sizeof *text);
    char (*where)[DESC_LEN] = text + g->n;
    int same = 1;
    for (int i = 0; i < g->n; i++) {
        fp_full(&k->slot[g->ranks[i]].fp, text[i], DESC_LEN);
        same &= strcmp(text[i], text[0]) == 0;
    }
    for (int i = 0; i < g->nmissing; i++) {
        int m = g->missing[i];
        if (k->slot[m].present)
            gcsh_checker_where(k, m, now, where[i], DESC_LEN);
        else
            snprintf(where[i], DESC_LEN, "%s", io->where(io->arg, m));
    }
    gcsh_text msg = {0};
    if (same) {
        fp_title(&k->slot[g->ranks[0]].fp, label, sizeof label);
        gcsh_text_append(&msg, label, strlen(label));
        gcsh_text_append(&msg, ": [", 3);
        gcsh_format_ranks(g->ranks, g->n, label, sizeof label);
        gcsh_text_append(&msg, label, strlen(label));
        gcsh_text_append(&msg, "]", 1);
    } else {
        fold_texts(&msg, g->ranks, g->n, text, ", ");
        gcsh_text_append(&msg, ":", 1);
    }
    char mid[64];
    snprintf(mid, sizeof mid, " waited %.1f s for [", now - g->since);
    gcsh_text_append(&msg, mid, strlen(mid));
    gcsh_format_ranks(g->missing, g->nmissing, label, sizeof label);
    gcsh_text_append(&msg, label, strlen(label));
    gcsh_text_append(&msg, "]: ", 3);
    if (g->nmissing)
        fold_texts(&msg, g->missing, g->nmissing, where, "; ");
    else /* members unknown: the backend could not tell them */
        gcsh_text_append(&msg, "the other members never arrived", 31);
    *msg_out = msg;
    free(text);
}

/* A group that failed because members left by os.exit (repro.skip on one
 * rank while the others wait) or failed by such an exit themselves: each
 * member is told so (the job's verdict is then the exit's: coord.c).  A
 * member still running (late under load, or in an operation of its own)
 * does not change that: the exit alone keeps the group from meeting.  A
 * missing member that failed on its own does: its failure counts. */
static void blame_exits(const gcsh_checker *k, const gcsh_checker_io *io, const group *g)
{
    if (!io->exited || !io->because_exit || g->nmissing == 0)
        return;
    int cause = -1;
    for (int i = 0; i < g->nmissing; i++) {
        int m = g->missing[i];
        if (k->slot[m].present || (io->running && io->running(io->arg, m)))
            continue;
        int st = io->exited(io->arg, m);
        if (st < 0)
            return; /* a failure of its own */
        cause = gcsh_status_worst(cause, st);
    }
    if (cause < 0)
        return; /* nobody left by os.exit */
    for (int i = 0; i < g->n; i++)
        io->because_exit(io->arg, g->ranks[i], cause);
}

/* Whether a missing member of g runs unchecked in this command: it would
 * enter the operation later and wait there for ranks whose check failed. */
static int misses_unchecked(const gcsh_checker *k, const group *g)
{
    for (int i = 0; i < g->nmissing; i++)
        if (k->unchecked[g->missing[i]].said)
            return 1;
    return 0;
}

/* Keeps g's failed check for members that come to it later, unchecked. */
static void keep_failed(gcsh_checker *k, const group *g)
{
    const fp_slot *s = &k->slot[g->ranks[0]];
    failed_check *f = &k->failed[k->nfailed++ % GCSH_CHECKER_FAILED];
    free(f->members);
    *f = (failed_check){.from = g->ranks[0], .fp = s->fp};
    size_t bytes = (size_t)s->fp.comm_size * sizeof *f->members;
    if (s->members && (f->members = malloc(bytes)))
        memcpy(f->members, s->members, bytes);
}

static void fail_group(gcsh_checker *k, const gcsh_checker_io *io, const group *g, double now)
{
    gcsh_text msg = {0};
    blame_exits(k, io, g);
    fail_text(k, io, g, now, &msg);
    if (misses_unchecked(k, g))
        stop_unchecked(k, io, g, "its check failed");
    else if (g->nmissing > 0 && g->n > 0)
        keep_failed(k, g);
    answer(k, io, g, 0, msg.s);
    gcsh_text_free(&msg);
}

/* Every group in a cycle of waits (deadlocked) fails in one pass, each
 * message saying where the others wait: answering one group first would
 * take its ranks out of the others' view.  Returns whether any failed. */
static int fail_deadlocks(gcsh_checker *k, const gcsh_checker_io *io, double now)
{
    group g = group_new(k->size);
    int *first = malloc((size_t)k->size * sizeof *first), n = 0;
    gcsh_text *msg = calloc((size_t)k->size, sizeof *msg);
    for (int r = 0; r < k->size; r++) {
        if (!k->slot[r].present)
            continue;
        find_group(k, io, r, &g);
        int lowest = 1;
        for (int i = 0; i < g.n; i++)
            lowest &= g.ranks[i] >= r;
        if (!lowest || g.complete || g.ncoming > 0 || !deadlocked(k, io, &g))
            continue;
        qsort(g.ranks, (size_t)g.n, sizeof *g.ranks, cmp_int);
        qsort(g.missing, (size_t)g.nmissing, sizeof *g.missing, cmp_int);
        fail_text(k, io, &g, now, &msg[n]);
        first[n++] = r;
    }
    for (int i = 0; i < n; i++) {
        find_group(k, io, first[i], &g);
        answer(k, io, &g, 0, msg[i].s);
        gcsh_text_free(&msg[i]);
    }
    group_free(&g);
    free(first);
    free(msg);
    return n > 0;
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

static group group_new(int size)
{
    group g = {0};
    g.ranks = malloc((size_t)size * sizeof *g.ranks);
    g.missing = malloc((size_t)size * sizeof *g.missing);
    g.unchecked = malloc((size_t)size * sizeof *g.unchecked);
    return g;
}

static void group_free(group *g)
{
    free(g->ranks);
    free(g->missing);
    free(g->unchecked);
}

static int any_waiting(const gcsh_checker *k)
{
    for (int r = 0; r < k->size; r++)
        if (k->slot[r].present)
            return 1;
    return 0;
}

void gcsh_checker_resolve(gcsh_checker *k, const gcsh_checker_io *io, double now,
                          double timeout, int probed)
{
    if (!any_waiting(k)) /* the common case, after every message: cheap */
        return;
    group g = group_new(k->size);
    for (int changed = 1; changed;) {
        changed = fail_deadlocks(k, io, now);
        for (int r = 0; r < k->size; r++) /* pairs first: see find_group */
            if (k->slot[r].present && (paired(k, r) || passes_alone(k, r) || meets_said(k, r))) {
                find_group(k, io, r, &g);
                compare_group(k, io, &g);
                changed = 1;
            }
        for (int r = 0; r < k->size && !changed; r++) {
            if (!k->slot[r].present)
                continue;
            find_group(k, io, r, &g);
            qsort(g.ranks, (size_t)g.n, sizeof *g.ranks, cmp_int);
            qsort(g.missing, (size_t)g.nmissing, sizeof *g.missing, cmp_int);
            qsort(g.unchecked, (size_t)g.nunchecked, sizeof *g.unchecked, cmp_int);
            if (g.complete) {
                compare_group(k, io, &g);
                changed = 1;
            } else if (failed(k, io, &g, now, timeout) && accounted_for(k, io, &g, probed)) {
                fail_group(k, io, &g, now);
                changed = 1;
            }
        }
    }
    group_free(&g);
}

int gcsh_checker_needs_probe(const gcsh_checker *k, const gcsh_checker_io *io, double now,
                             double timeout)
{
    if (!any_waiting(k))
        return 0;
    group g = group_new(k->size);
    int needs = 0;
    for (int r = 0; r < k->size && !needs; r++) {
        if (!k->slot[r].present)
            continue;
        find_group(k, io, r, &g);
        needs = failed(k, io, &g, now, timeout) && !accounted_for(k, io, &g, 0);
    }
    group_free(&g);
    return needs;
}

int gcsh_checker_expects_board(const gcsh_checker *k, const gcsh_checker_io *io)
{
    if (!io->board || !any_waiting(k))
        return 0;
    group g = group_new(k->size);
    int expects = 0;
    for (int r = 0; r < k->size && !expects; r++)
        if (k->slot[r].present) {
            find_group(k, io, r, &g);
            expects = g.ncoming > 0;
        }
    group_free(&g);
    return expects;
}

double gcsh_checker_deadline(const gcsh_checker *k, double timeout)
{
    double first = 0;
    if (timeout <= 0)
        return 0;
    for (int r = 0; r < k->size; r++)
        if (k->slot[r].present && (first == 0 || k->slot[r].since + timeout < first))
            first = k->slot[r].since + timeout;
    return first;
}

/* Calls fn(k, m, arg) for every member m of a waiting group that runs
 * unchecked in this command and is not in the group's operation yet. */
static void each_pending_unchecked(gcsh_checker *k, const gcsh_checker_io *io,
                                   void (*fn)(gcsh_checker *k, int m, void *arg), void *arg)
{
    if (!any_waiting(k))
        return;
    group g = group_new(k->size);
    for (int r = 0; r < k->size; r++) {
        if (!k->slot[r].present)
            continue;
        find_group(k, io, r, &g);
        for (int i = 0; i < g.nmissing; i++)
            if (k->unchecked[g.missing[i]].said)
                fn(k, g.missing[i], arg);
    }
    group_free(&g);
}

typedef struct asks {
    double now;
    int n;
    int *ranks;
} asks;

static void ask_if_due(gcsh_checker *k, int m, void *arg)
{
    asks *a = arg;
    unchecked_slot *u = &k->unchecked[m];
    if (u->next_ask > a->now)
        return;
    u->next_ask = a->now + u->gap;
    u->gap = u->gap * 2 < ASK_MAX_S ? u->gap * 2 : ASK_MAX_S;
    a->ranks[a->n++] = m;
}

int gcsh_checker_asks(gcsh_checker *k, const gcsh_checker_io *io, double now, int *ranks)
{
    asks a = {now, 0, ranks};
    each_pending_unchecked(k, io, ask_if_due, &a);
    return a.n;
}

static void earliest_ask(gcsh_checker *k, int m, void *arg)
{
    double *first = arg, at = k->unchecked[m].next_ask;
    if (*first == 0 || at < *first)
        *first = at;
}

double gcsh_checker_next_ask(gcsh_checker *k, const gcsh_checker_io *io)
{
    double first = 0;
    each_pending_unchecked(k, io, earliest_ask, &first);
    return first;
}
