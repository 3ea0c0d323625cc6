/* The one data-movement plan of the kernel collectives: for a collective
 * over a window's region of n elements, which member reads, reduces and
 * writes which range of which slice, step by step.
 *
 * Both backends execute it (host_kern.c move by move with C loops;
 * kernels/reduce.cu one launch per move step, with the steps' barriers in
 * the launch), kernel.plan() returns it to Lua, and the steppers follow it.
 * So what a stepper or a trace shows is what the kernels do.
 *
 * A plan is a list of steps, the same on every member: a barrier (every
 * member waits for every member: what was written before is visible after),
 * or a move step, where each member does at most one move (a reduce of k
 * sources into m destinations, a copy when k == 1, zeros when k == 0).
 * Moves read and write slices (team indices), the caller's out tensor, a
 * local scratch of n elements, or a member's scratch area (the window's LL
 * area past its header, reachable by peers like its slice); element
 * indices are relative to the region.
 *
 * out= is out of place: the window is never written.  One-shot reduces
 * straight into out; two-shot and ring, whose moves store results into
 * slices, gather them in the members' scratch areas instead (every member
 * must then pass out: gcsh_kplan.scratch), copy their own into out and
 * zero it again (the LL protocol takes any nonzero word for a flag), with
 * a barrier after, so no peer's next LL call lands before the zeros.
 *
 * Chunks: n elements over k members, balanced: the first n % k members get
 * one element more than n / k; member r's chunk starts at
 * r * (n / k) + min(r, n % k).  Each backend vectorises inside a chunk as
 * its alignment allows (every slice has the same alignment). */
#ifndef GCSH_KPLAN_H
#define GCSH_KPLAN_H

#include <stddef.h>

#include "core/kreduce.h"

#ifdef __cplusplus
extern "C" {
#endif

enum gcsh_kcoll {
    GCSH_KC_ALLREDUCE,
    GCSH_KC_REDUCE_SCATTER,
    GCSH_KC_ALLGATHER,
    GCSH_KC_BROADCAST,
    GCSH_KC_REDUCE,
    GCSH_KC_NCOLL
};

enum gcsh_kalgo {
    GCSH_KA_ONESHOT,   /* allreduce: each member reduces every slice */
    GCSH_KA_TWOSHOT,   /* allreduce: member r reduces chunk r, stores it to every slice */
    GCSH_KA_RING,      /* reduce-scatter and/or all-gather around the ring; broadcast: a chain */
    GCSH_KA_MULTICAST, /* allreduce: ld_reduce of chunk r, st to every slice (two-shot's moves) */
    GCSH_KA_DIRECT,    /* reduce_scatter, allgather, broadcast, reduce: one move step */
    GCSH_KA_TREE,      /* broadcast: binomial tree, ceil(log2 k) steps */
    GCSH_KA_NALGO
};

/* The places a move reads and writes besides slices (team indices >= 0). */
#define GCSH_KPLAN_OUT (-1) /* the caller's out tensor */
#define GCSH_KPLAN_TMP (-2) /* a local scratch of n elements */

typedef struct gcsh_kplace {
    int peer;     /* team index, GCSH_KPLAN_OUT or GCSH_KPLAN_TMP */
    int scratch;  /* with a team index: that member's scratch area, not its slice */
    size_t first; /* element index: in the region for slices, tmp and scratch, in out */
} gcsh_kplace;

/* k sources reduced in order with the collective's op (k == 1: a copy,
 * k == 0: zeros), stored to m destinations; count elements from each
 * place's first. */
typedef struct gcsh_kmove {
    int k, m;
    size_t count;
    gcsh_kplace src[GCSH_KERN_MAX_TEAM];
    gcsh_kplace dst[GCSH_KERN_MAX_TEAM];
} gcsh_kmove;

typedef struct gcsh_kplan {
    enum gcsh_kcoll coll;
    enum gcsh_kalgo algo;
    int team;   /* members, 1..GCSH_KERN_MAX_TEAM */
    int root;   /* team index (broadcast, reduce) */
    size_t n;   /* elements of the region */
    int scratch; /* every member passed out and the moves go through the
                    scratch areas (gcsh_kplan_needs_scratch) */
} gcsh_kplan;

enum gcsh_kstep_kind { GCSH_KS_BARRIER, GCSH_KS_MOVE };

/* What a move step is for, as kernel.plan and the steppers name it. */
enum gcsh_kphase {
    GCSH_KP_SYNC,           /* barriers */
    GCSH_KP_REDUCE,         /* one-shot's and reduce's reads of every slice */
    GCSH_KP_STORE,          /* one-shot in place: the result into my slice */
    GCSH_KP_REDUCE_SCATTER, /* chunks reduced (two-shot, multicast's ld_reduce + st, rings) */
    GCSH_KP_ALL_GATHER,     /* chunks spread */
    GCSH_KP_BROADCAST,      /* copies of root's region */
    GCSH_KP_COPY_OUT,       /* the result into the caller's out */
    GCSH_KP_CLEAR,          /* my scratch area zeroed again */
    GCSH_KP_NPHASE
};

typedef struct gcsh_kstep {
    enum gcsh_kstep_kind kind;
    enum gcsh_kphase phase;
    int index; /* the step's number within its phase (ring step s, tree level) */
} gcsh_kstep;

/* The most steps a plan has (a ring all-reduce of GCSH_KERN_MAX_TEAM). */
#define GCSH_KPLAN_MAX_STEPS (4 * GCSH_KERN_MAX_TEAM + 6)

typedef struct gcsh_kchunk {
    size_t first, count;
} gcsh_kchunk;

/* Member r's chunk of n elements over k members (the rule above). */
gcsh_kchunk gcsh_kplan_chunk(size_t n, int k, int r);

/* Names ("allreduce", "ring", "reduce-scatter") and their parsers (-1:
 * unknown). */
const char *gcsh_kcoll_name(enum gcsh_kcoll c);
const char *gcsh_kalgo_name(enum gcsh_kalgo a);
const char *gcsh_kphase_name(enum gcsh_kphase p);
int gcsh_kcoll_parse(const char *name);
int gcsh_kalgo_parse(const char *name);
/* Whether coll has a plan for algo (which algorithms a collective takes,
 * with a plan or not, is the table of algorithms': bind/kalgos.h). */
int gcsh_kplan_valid(enum gcsh_kcoll coll, enum gcsh_kalgo algo);
/* Whether p with out= goes through the scratch areas: the all-reduce's
 * two-shot and ring (of more than one member: alone, a ring only copies
 * its slice into out), whose moves store into slices. */
int gcsh_kplan_needs_scratch(const gcsh_kplan *p);
/* Every collective's name, space separated, into buf; returns buf. */
const char *gcsh_kcoll_names(char *buf, size_t size);

/* The steps of p (the same on every member, whatever out each passes),
 * into steps[GCSH_KPLAN_MAX_STEPS]; returns how many. */
int gcsh_kplan_steps(const gcsh_kplan *p, gcsh_kstep *steps);
/* The name of barrier step i of the n steps, as hang reports and w:sync_state
 * say it: "ready" (the first: every member's input is there), else
 * "after reduce-scatter" ("after reduce-scatter 2" for a ring's second). */
void gcsh_kplan_barrier_name(const gcsh_kstep *steps, int n, int i, char *buf, size_t len);

/* What member r does at move step s: 1 with *mv filled, 0 when it has
 * nothing to do there.  has_out: whether r passed an out tensor (the
 * result goes there instead of, or besides, the window). */
int gcsh_kplan_move(const gcsh_kplan *p, const gcsh_kstep *s, int r, int has_out, gcsh_kmove *mv);

#ifdef __cplusplus
}
#endif

#endif
