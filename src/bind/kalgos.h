/* The one table of the kernel collectives' algorithms (kalgos.c), and the
 * runners its rows name (kalgo_run.c, khier.c).
 *
 * A row per algorithm a collective takes: its name; its plan of moves
 * (core/kplan.h), which both backends execute and kernel.plan shows, or
 * none; the all-reduce's runner, where it has a kernel of its own or builds
 * on others (NULL: its plan's); kernel.plan's answer where it has no plan
 * (a builder of its own, or the error that says why); the steppers' turn;
 * auto's column in core/kreduce_tune.h.  l_kernel.c (the collectives,
 * kernel.algos, kernel.plan, kernel.choose), the steppers, bench and help
 * (through gcsh.kalgos) read it; adding an algorithm adds a row and its
 * runner (src/DESIGN.md, "What a new thing touches"). */
#ifndef GCSH_BIND_KALGOS_H
#define GCSH_BIND_KALGOS_H

#include "bind/kernel.h"

/* How kernel.allreduce runs an algorithm; returns the name the call
 * reports ("multicast(emulated)"). */
typedef const char *gcsh_kalgo_run_fn(lua_State *L, const gcsh_kargs *a);
/* Pushes what kernel.plan returns for an algorithm that builds its own. */
typedef void gcsh_kalgo_plan_fn(lua_State *L, const gcsh_kargs *a);

/* Auto's column: the n-th algorithm auto considers (order 1, 2, ...; 0:
 * never), taken for messages of at most `field` of the backend's
 * kreduce_tune.h row (never more than cap); field SIZE_MAX: what it takes
 * when none before held. */
typedef struct gcsh_kalgo_auto {
    int order;
    size_t field; /* offsetof in gcsh_kern_crossover (core/kreduce_tune.h) */
    size_t cap;
} gcsh_kalgo_auto_column;

typedef struct gcsh_kalgo_row {
    enum gcsh_kcoll coll;
    const char *name;
    int plan;                     /* enum gcsh_kalgo, or -1: none */
    gcsh_kalgo_run_fn *run;       /* the all-reduce's runner; NULL: the plan's */
    gcsh_kalgo_plan_fn *push_plan; /* kernel.plan's answer, where it builds one */
    const char *no_plan;          /* kernel.plan's error where it shows none, or NULL */
    int turn;                     /* the steppers walk it, the turn-th of its collective
                                     (1: the default); 0: they do not */
    gcsh_kalgo_auto_column chosen;
} gcsh_kalgo_row;

/* coll's i-th row (in the table's order, which errors and kernel.algos
 * keep), NULL past the last. */
const gcsh_kalgo_row *gcsh_kalgo_at(enum gcsh_kcoll coll, int i);
/* coll's row named name, NULL when coll does not take it. */
const gcsh_kalgo_row *gcsh_kalgo_find(enum gcsh_kcoll coll, const char *name);
/* coll's names space separated into buf (planned_only: those with a plan,
 * "oneshot twoshot ring multicast"); returns buf. */
const char *gcsh_kalgo_names(enum gcsh_kcoll coll, int planned_only, char *buf, size_t size);
/* The all-reduce's algorithms auto takes, in the order it considers them:
 * the i-th, NULL past the last. */
const char *gcsh_kalgo_auto(int i);
/* What auto runs for a message of bytes by a backend's crossover row. */
struct gcsh_kern_crossover;
const char *gcsh_kalgo_choose(const struct gcsh_kern_crossover *tune, size_t bytes);

/* ---- the runners (kalgo_run.c; khier.c: "hier") ------------------------------------ */

gcsh_kalgo_run_fn gcsh_kalgo_run_plan, gcsh_kalgo_run_ll, gcsh_kalgo_run_ll128, gcsh_kalgo_run_multicast,
    gcsh_kalgo_run_comm, gcsh_kalgo_run_nccl_dev, gcsh_khier_run;
gcsh_kalgo_plan_fn gcsh_khier_plan;
/* Whether algo "comm" can run on a's window: the communicator can reduce
 * the dtype with the op (auto falls back where it cannot). */
int gcsh_kalgo_comm_can_run(lua_State *L, const gcsh_kargs *a);

#endif
