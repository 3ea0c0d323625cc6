/* The kernel collectives' plan.  See kplan.h. */
#include <stdio.h>
#include <string.h>

#include "core/kll.h"
#include "core/kplan.h"

/* ---- names ------------------------------------------------------------------ */

static const char *const coll_names[GCSH_KC_NCOLL] = {
    [GCSH_KC_ALLREDUCE] = "allreduce",   [GCSH_KC_REDUCE_SCATTER] = "reduce_scatter",
    [GCSH_KC_ALLGATHER] = "allgather",   [GCSH_KC_BROADCAST] = "broadcast",
    [GCSH_KC_REDUCE] = "reduce",
};

static const char *const algo_names[GCSH_KA_NALGO] = {
    [GCSH_KA_ONESHOT] = "oneshot", [GCSH_KA_TWOSHOT] = "twoshot",
    [GCSH_KA_RING] = "ring",       [GCSH_KA_MULTICAST] = "multicast",
    [GCSH_KA_DIRECT] = "direct",   [GCSH_KA_TREE] = "tree",
};

static const char *const phase_names[GCSH_KP_NPHASE] = {
    [GCSH_KP_SYNC] = "sync",
    [GCSH_KP_REDUCE] = "reduce",
    [GCSH_KP_STORE] = "store",
    [GCSH_KP_REDUCE_SCATTER] = "reduce-scatter",
    [GCSH_KP_ALL_GATHER] = "all-gather",
    [GCSH_KP_BROADCAST] = "broadcast",
    [GCSH_KP_COPY_OUT] = "copy-out",
    [GCSH_KP_CLEAR] = "clear-scratch",
};

/* The plans there are (gcsh_kplan_steps builds their moves): a bit per
 * algorithm, for each collective.  The table of algorithms (bind/kalgos.c)
 * names them; its rows and these agree (tests/lua/kernel_algos.lua). */
#define PLAN(a) (1u << (a))
static const unsigned plans_of[GCSH_KC_NCOLL] = {
    [GCSH_KC_ALLREDUCE] =
        PLAN(GCSH_KA_ONESHOT) | PLAN(GCSH_KA_TWOSHOT) | PLAN(GCSH_KA_RING) | PLAN(GCSH_KA_MULTICAST),
    [GCSH_KC_REDUCE_SCATTER] = PLAN(GCSH_KA_DIRECT) | PLAN(GCSH_KA_RING),
    [GCSH_KC_ALLGATHER] = PLAN(GCSH_KA_DIRECT) | PLAN(GCSH_KA_RING),
    [GCSH_KC_BROADCAST] = PLAN(GCSH_KA_DIRECT) | PLAN(GCSH_KA_TREE) | PLAN(GCSH_KA_RING),
    [GCSH_KC_REDUCE] = PLAN(GCSH_KA_DIRECT),
};

const char *gcsh_kcoll_name(enum gcsh_kcoll c)
{
    return (unsigned)c < GCSH_KC_NCOLL ? coll_names[c] : "?";
}

const char *gcsh_kalgo_name(enum gcsh_kalgo a)
{
    return (unsigned)a < GCSH_KA_NALGO ? algo_names[a] : "?";
}

const char *gcsh_kphase_name(enum gcsh_kphase p)
{
    return (unsigned)p < GCSH_KP_NPHASE ? phase_names[p] : "?";
}

static int parse(const char *const *names, int count, const char *name)
{
    for (int i = 0; i < count; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

int gcsh_kcoll_parse(const char *name)
{
    return parse(coll_names, GCSH_KC_NCOLL, name);
}

int gcsh_kalgo_parse(const char *name)
{
    return parse(algo_names, GCSH_KA_NALGO, name);
}

/* Appends word to the space separated list in buf (used bytes so far); a
 * word that does not fit is left out whole. */
static void append_word(char *buf, size_t size, size_t *used, const char *word)
{
    int w = snprintf(buf + *used, size - *used, "%s%s", *used ? " " : "", word);
    if (w >= 0 && (size_t)w < size - *used)
        *used += (size_t)w;
    else
        buf[*used] = '\0';
}

const char *gcsh_kcoll_names(char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int c = 0; c < GCSH_KC_NCOLL; c++)
        append_word(buf, size, &used, coll_names[c]);
    return buf;
}

int gcsh_kplan_valid(enum gcsh_kcoll coll, enum gcsh_kalgo algo)
{
    return (unsigned)coll < GCSH_KC_NCOLL && (unsigned)algo < GCSH_KA_NALGO &&
           (plans_of[coll] & PLAN(algo)) != 0;
}

int gcsh_kplan_needs_scratch(const gcsh_kplan *p)
{
    return p->coll == GCSH_KC_ALLREDUCE &&
           (p->algo == GCSH_KA_TWOSHOT || (p->algo == GCSH_KA_RING && p->team > 1));
}

/* ---- chunks ------------------------------------------------------------------ */

gcsh_kchunk gcsh_kplan_chunk(size_t n, int k, int r)
{
    size_t q = n / (size_t)k, rem = n % (size_t)k, ur = (size_t)r;
    gcsh_kchunk c = {ur * q + (ur < rem ? ur : rem), q + (ur < rem ? 1 : 0)};
    return c;
}

/* r mod k for r of either sign */
static int wrap(int r, int k)
{
    return ((r % k) + k) % k;
}

/* ceil(log2 k): the levels of a binomial tree over k members */
static int tree_levels(int k)
{
    int levels = 0;
    while ((1 << levels) < k)
        levels++;
    return levels;
}

/* ---- steps ------------------------------------------------------------------- */

typedef struct program {
    gcsh_kstep *steps;
    int n;
} program;

static void add(program *pg, enum gcsh_kstep_kind kind, enum gcsh_kphase phase, int index)
{
    if (pg->n < GCSH_KPLAN_MAX_STEPS)
        pg->steps[pg->n++] = (gcsh_kstep){kind, phase, index};
}

/* count move steps of phase, each followed by a barrier */
static void fenced_moves(program *pg, enum gcsh_kphase phase, int count)
{
    for (int s = 0; s < count; s++) {
        add(pg, GCSH_KS_MOVE, phase, s);
        add(pg, GCSH_KS_BARRIER, GCSH_KP_SYNC, 0);
    }
}

int gcsh_kplan_steps(const gcsh_kplan *p, gcsh_kstep *steps)
{
    program pg = {steps, 0};
    int k = p->team;
    add(&pg, GCSH_KS_BARRIER, GCSH_KP_SYNC, 0); /* every member's input is ready */
    switch (p->coll) {
    case GCSH_KC_ALLREDUCE:
        if (p->algo == GCSH_KA_ONESHOT) {
            fenced_moves(&pg, GCSH_KP_REDUCE, 1);
            add(&pg, GCSH_KS_MOVE, GCSH_KP_STORE, 0); /* nobody reads my slice any more */
            break;
        }
        if (p->algo == GCSH_KA_RING) {
            fenced_moves(&pg, GCSH_KP_REDUCE_SCATTER, k - 1);
            fenced_moves(&pg, GCSH_KP_ALL_GATHER, k - 1);
        } else { /* two-shot, multicast */
            fenced_moves(&pg, GCSH_KP_REDUCE_SCATTER, 1);
        }
        add(&pg, GCSH_KS_MOVE, GCSH_KP_COPY_OUT, 0);
        if (p->scratch) /* zeros before any peer's next LL call (kplan.h) */
            fenced_moves(&pg, GCSH_KP_CLEAR, 1);
        break;
    case GCSH_KC_REDUCE_SCATTER:
        fenced_moves(&pg, GCSH_KP_REDUCE_SCATTER, p->algo == GCSH_KA_RING ? k - 1 : 1);
        if (p->algo == GCSH_KA_RING)
            add(&pg, GCSH_KS_MOVE, GCSH_KP_COPY_OUT, 0);
        break;
    case GCSH_KC_ALLGATHER:
        fenced_moves(&pg, GCSH_KP_ALL_GATHER, p->algo == GCSH_KA_RING ? k - 1 : 1);
        add(&pg, GCSH_KS_MOVE, GCSH_KP_COPY_OUT, 0);
        break;
    case GCSH_KC_BROADCAST:
        fenced_moves(&pg, GCSH_KP_BROADCAST,
                     p->algo == GCSH_KA_TREE ? tree_levels(k) : p->algo == GCSH_KA_RING ? k - 1 : 1);
        if (p->algo != GCSH_KA_DIRECT)
            add(&pg, GCSH_KS_MOVE, GCSH_KP_COPY_OUT, 0);
        break;
    case GCSH_KC_REDUCE:
        fenced_moves(&pg, GCSH_KP_REDUCE, 1);
        break;
    case GCSH_KC_NCOLL:
        break;
    }
    return pg.n;
}

void gcsh_kplan_barrier_name(const gcsh_kstep *steps, int n, int i, char *buf, size_t len)
{
    int prev = i - 1;
    while (prev >= 0 && steps[prev].kind != GCSH_KS_MOVE)
        prev--;
    if (prev < 0) {
        snprintf(buf, len, "ready");
        return;
    }
    /* a phase of several move steps numbers them */
    int more = steps[prev].index > 0 ||
               (prev + 2 < n && steps[prev + 1].kind == GCSH_KS_BARRIER &&
                steps[prev + 2].kind == GCSH_KS_MOVE && steps[prev + 2].phase == steps[prev].phase);
    if (more)
        snprintf(buf, len, "after %s %d", gcsh_kphase_name(steps[prev].phase),
                 steps[prev].index + 1);
    else
        snprintf(buf, len, "after %s", gcsh_kphase_name(steps[prev].phase));
}

/* ---- moves ------------------------------------------------------------------- */

static void src(gcsh_kmove *mv, int peer, size_t first)
{
    mv->src[mv->k++] = (gcsh_kplace){peer, 0, first};
}

static void dst(gcsh_kmove *mv, int peer, size_t first)
{
    mv->dst[mv->m++] = (gcsh_kplace){peer, 0, first};
}

/* member peer's scratch area, as a source or a destination */
static void src_scratch(gcsh_kmove *mv, int peer, size_t first)
{
    mv->src[mv->k++] = (gcsh_kplace){peer, 1, first};
}

static void dst_scratch(gcsh_kmove *mv, int peer, size_t first)
{
    mv->dst[mv->m++] = (gcsh_kplace){peer, 1, first};
}

/* every member's slice at first, in team order */
static void every_slice(gcsh_kmove *mv, int k, size_t first)
{
    for (int q = 0; q < k; q++)
        src(mv, q, first);
}

/* Ring step s, reduce-scatter: member r adds its left neighbour's partial
 * of chunk (r - s - 2) mod k to its own, so after k - 1 steps r holds chunk r
 * reduced.  All-gather: r copies chunk (r - s - 1) mod k from its left.
 * Through the scratch areas, the partials and results live there and the
 * slices are only read (the left's slice at step 0: its input). */
static void ring_move(const gcsh_kplan *p, enum gcsh_kphase phase, int s, int r, gcsh_kmove *mv)
{
    int k = p->team, left = wrap(r - 1, p->team);
    int c = wrap(phase == GCSH_KP_REDUCE_SCATTER ? r - s - 2 : r - s - 1, k);
    gcsh_kchunk ch = gcsh_kplan_chunk(p->n, k, c);
    mv->count = ch.count;
    if (p->scratch && (phase == GCSH_KP_ALL_GATHER || s > 0))
        src_scratch(mv, left, ch.first);
    else
        src(mv, left, ch.first);
    if (phase == GCSH_KP_REDUCE_SCATTER)
        src(mv, r, ch.first);
    if (p->scratch)
        dst_scratch(mv, r, ch.first);
    else
        dst(mv, r, ch.first);
}

/* Member r reduces chunk r of every slice: to every slice (all-reduce), or
 * to out or chunk r of its own slice (reduce-scatter). */
static void chunk_reduce(const gcsh_kplan *p, int r, int has_out, gcsh_kmove *mv)
{
    gcsh_kchunk ch = gcsh_kplan_chunk(p->n, p->team, r);
    mv->count = ch.count;
    every_slice(mv, p->team, ch.first);
    if (p->coll == GCSH_KC_ALLREDUCE && p->scratch)
        for (int q = 0; q < p->team; q++)
            dst_scratch(mv, q, ch.first);
    else if (p->coll == GCSH_KC_ALLREDUCE)
        for (int q = 0; q < p->team; q++)
            dst(mv, q, ch.first);
    else if (has_out)
        dst(mv, GCSH_KPLAN_OUT, 0);
    else
        dst(mv, r, ch.first);
}

/* Member r stores its chunk r into every other slice. */
static void chunk_spread(const gcsh_kplan *p, int r, gcsh_kmove *mv)
{
    gcsh_kchunk ch = gcsh_kplan_chunk(p->n, p->team, r);
    mv->count = ch.count;
    src(mv, r, ch.first);
    for (int q = 0; q < p->team; q++)
        if (q != r)
            dst(mv, q, ch.first);
}

/* Broadcast step s: who copies root's region from whom. */
static void broadcast_move(const gcsh_kplan *p, int s, int r, int has_out, gcsh_kmove *mv)
{
    int k = p->team, from = -1;
    if (p->algo == GCSH_KA_DIRECT) {
        if (r != p->root || has_out)
            from = p->root;
    } else if (p->algo == GCSH_KA_TREE) {
        int v = wrap(r - p->root, k), lo = 1 << s;
        if (v >= lo && v < 2 * lo)
            from = wrap(v - lo + p->root, k);
    } else if (r == wrap(p->root + s + 1, k)) {
        from = wrap(p->root + s, k);
    }
    if (from < 0)
        return;
    mv->count = p->n;
    src(mv, from, 0);
    dst(mv, p->algo == GCSH_KA_DIRECT && has_out ? GCSH_KPLAN_OUT : r, 0);
}

/* One-shot's reads (into out or the scratch) and reduce's (root only). */
static void region_reduce(const gcsh_kplan *p, int r, int has_out, gcsh_kmove *mv)
{
    if (p->coll == GCSH_KC_REDUCE && r != p->root)
        return;
    mv->count = p->n;
    every_slice(mv, p->team, 0);
    if (has_out)
        dst(mv, GCSH_KPLAN_OUT, 0);
    else
        dst(mv, p->coll == GCSH_KC_ALLREDUCE ? GCSH_KPLAN_TMP : r, 0);
}

static void copy_out(const gcsh_kplan *p, int r, gcsh_kmove *mv)
{
    gcsh_kchunk whole = {0, p->n};
    gcsh_kchunk ch = p->coll == GCSH_KC_REDUCE_SCATTER ? gcsh_kplan_chunk(p->n, p->team, r) : whole;
    mv->count = ch.count;
    if (p->scratch)
        src_scratch(mv, r, ch.first);
    else
        src(mv, r, ch.first);
    dst(mv, GCSH_KPLAN_OUT, 0);
}

/* My scratch area's region back to zeros: no move, one destination. */
static void clear_scratch(const gcsh_kplan *p, int r, gcsh_kmove *mv)
{
    mv->count = p->n;
    dst_scratch(mv, r, 0);
}

int gcsh_kplan_move(const gcsh_kplan *p, const gcsh_kstep *s, int r, int has_out, gcsh_kmove *mv)
{
    memset(mv, 0, sizeof *mv);
    if (s->kind != GCSH_KS_MOVE)
        return 0;
    switch (s->phase) {
    case GCSH_KP_REDUCE: region_reduce(p, r, has_out, mv); break;
    case GCSH_KP_STORE:
        if (!has_out) {
            mv->count = p->n;
            src(mv, GCSH_KPLAN_TMP, 0);
            dst(mv, r, 0);
        }
        break;
    case GCSH_KP_REDUCE_SCATTER:
    case GCSH_KP_ALL_GATHER:
        if (p->algo == GCSH_KA_RING)
            ring_move(p, s->phase, s->index, r, mv);
        else if (s->phase == GCSH_KP_REDUCE_SCATTER)
            chunk_reduce(p, r, has_out, mv);
        else
            chunk_spread(p, r, mv);
        break;
    case GCSH_KP_BROADCAST: broadcast_move(p, s->index, r, has_out, mv); break;
    case GCSH_KP_COPY_OUT:
        if (has_out)
            copy_out(p, r, mv);
        break;
    case GCSH_KP_CLEAR: clear_scratch(p, r, mv); break;
    case GCSH_KP_SYNC:
    case GCSH_KP_NPHASE: break;
    }
    return mv->count > 0 && (mv->k > 0 || s->phase == GCSH_KP_CLEAR) && mv->m > 0;
}
