/* The check board.  See board.h. */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "wire/board.h"

/* Communicators one rank can check on the board at once; more fall back to
 * the coordinator.  The slot of a freed communicator stays readable (a
 * member that passed its last check and freed it must still be seen to
 * have passed by slower members) until the table is full and a new
 * communicator takes it over. */
#define BOARD_SLOTS 64
#define KEY_EMPTY 0u

typedef struct board_slot {
    _Atomic uint64_t key;     /* communicator id + 1, or KEY_EMPTY (never again once taken) */
    _Atomic int retired;      /* its communicator is gone: the slot may be taken over */
    _Atomic uint64_t version; /* odd while the owner writes the entry */
    gcsh_board_entry e;
} board_slot;

typedef struct board_part { /* one rank's, in shared memory */
    board_slot slot[BOARD_SLOTS];
} board_part;

struct gcsh_board {
    MPI_Comm comm;
    MPI_Win win;
    int n;              /* ranks on the board */
    board_part **part;  /* [n] */
    int *local_of;      /* [world size]: index on the board, or -1 */
};

gcsh_board *gcsh_board_open(const gcsh_ctx *ctx)
{
    /* no board (an MPI failure included) is no error: rank 0 checks alone */
    MPI_Comm comm = MPI_COMM_NULL;
    if (MPI_Comm_split(MPI_COMM_WORLD, ctx->node == 0 ? 0 : MPI_UNDEFINED, ctx->rank, &comm) !=
            MPI_SUCCESS ||
        comm == MPI_COMM_NULL)
        return NULL;
    gcsh_board *b = calloc(1, sizeof *b);
    board_part *mine = NULL;
    int ok = b && MPI_Win_allocate_shared(sizeof *mine, 1, MPI_INFO_NULL, comm, &mine,
                                          &b->win) == MPI_SUCCESS;
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
    if (!all_ok) {
        if (ok)
            MPI_Win_free(&b->win);
        MPI_Comm_free(&comm);
        free(b);
        return NULL;
    }
    memset(mine, 0, sizeof *mine);
    MPI_Win_set_errhandler(b->win, MPI_ERRORS_RETURN); /* windows do not inherit it */
    b->comm = comm;
    MPI_Comm_size(comm, &b->n);
    b->part = calloc((size_t)b->n, sizeof *b->part);
    b->local_of = malloc((size_t)ctx->size * sizeof *b->local_of);
    int *world = malloc((size_t)b->n * sizeof *world);
    MPI_Allgather(&ctx->rank, 1, MPI_INT, world, 1, MPI_INT, comm);
    for (int r = 0; r < ctx->size; r++)
        b->local_of[r] = -1;
    for (int i = 0; i < b->n; i++) {
        MPI_Aint size;
        int disp;
        MPI_Win_shared_query(b->win, i, &size, &disp, &b->part[i]);
        b->local_of[world[i]] = i;
    }
    free(world);
    MPI_Barrier(comm); /* every part is zeroed before anyone reads it */
    return b;
}

void gcsh_board_close(gcsh_board *b)
{
    if (!b)
        return;
    MPI_Win_free(&b->win);
    MPI_Comm_free(&b->comm);
    free(b->part);
    free(b->local_of);
    free(b);
}

int gcsh_board_has(const gcsh_board *b, int r)
{
    return b && r >= 0 && b->local_of[r] >= 0;
}

/* ---- slots: open addressing by communicator id -------------------------------- */

static uint64_t key_of(uint64_t comm)
{
    return comm + 1 == KEY_EMPTY ? comm : comm + 1; /* never EMPTY */
}

static size_t home_of(uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)(key % BOARD_SLOTS);
}

/* r's slot for comm, or NULL. */
static board_slot *find(const gcsh_board *b, int r, uint64_t comm)
{
    board_part *p = b->part[b->local_of[r]];
    uint64_t key = key_of(comm);
    for (size_t i = 0, at = home_of(key); i < BOARD_SLOTS; i++, at = (at + 1) % BOARD_SLOTS) {
        uint64_t k = atomic_load_explicit(&p->slot[at].key, memory_order_acquire);
        if (k == key)
            return &p->slot[at];
        if (k == KEY_EMPTY)
            return NULL;
    }
    return NULL;
}

/* ---- entries: a sequence lock ------------------------------------------------------ */

static void write_entry(board_slot *s, const gcsh_board_entry *e)
{
    uint64_t v = atomic_load_explicit(&s->version, memory_order_relaxed);
    atomic_store_explicit(&s->version, v + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    s->e = *e;
    atomic_store_explicit(&s->version, v + 2, memory_order_release);
}

/* The owner's slot for comm, taken if need be: the first empty slot on the
 * probe path (keys are never removed, so every reader's probe still meets
 * the keys it looks for), else, in a full table, the first retired one. */
static board_slot *take(gcsh_board *b, int r, uint64_t comm)
{
    board_slot *s = find(b, r, comm);
    if (s) {
        atomic_store_explicit(&s->retired, 0, memory_order_relaxed);
        return s;
    }
    board_part *p = b->part[b->local_of[r]];
    uint64_t key = key_of(comm);
    board_slot *retired = NULL;
    for (size_t i = 0, at = home_of(key); i < BOARD_SLOTS; i++, at = (at + 1) % BOARD_SLOTS) {
        board_slot *t = &p->slot[at];
        if (atomic_load_explicit(&t->key, memory_order_relaxed) == KEY_EMPTY) {
            s = t;
            break;
        }
        if (!retired && atomic_load_explicit(&t->retired, memory_order_relaxed))
            retired = t;
    }
    s = s ? s : retired;
    if (!s)
        return NULL;
    gcsh_board_entry none;
    memset(&none, 0, sizeof none);
    write_entry(s, &none);
    atomic_store_explicit(&s->retired, 0, memory_order_relaxed);
    atomic_store_explicit(&s->key, key, memory_order_release);
    return s;
}

int gcsh_board_post(gcsh_board *b, int r, uint64_t comm, const gcsh_board_entry *e)
{
    board_slot *s = gcsh_board_has(b, r) ? take(b, r, comm) : NULL;
    if (!s)
        return -1;
    write_entry(s, e);
    return 0;
}

void gcsh_board_set_state(gcsh_board *b, int r, uint64_t comm, enum gcsh_board_state state)
{
    board_slot *s = gcsh_board_has(b, r) ? find(b, r, comm) : NULL;
    if (!s)
        return;
    gcsh_board_entry e = s->e; /* only the owner writes: its own copy is stable */
    e.state = state;
    write_entry(s, &e);
}

void gcsh_board_forget(gcsh_board *b, int r, uint64_t comm)
{
    board_slot *s = gcsh_board_has(b, r) ? find(b, r, comm) : NULL;
    if (s)
        atomic_store_explicit(&s->retired, 1, memory_order_release);
}

int gcsh_board_read(const gcsh_board *b, int r, uint64_t comm, gcsh_board_entry *out)
{
    memset(out, 0, sizeof *out);
    board_slot *s = gcsh_board_has(b, r) ? find(b, r, comm) : NULL;
    if (!s)
        return 0;
    for (unsigned tries = 0;; tries++) {
        uint64_t v1 = atomic_load_explicit(&s->version, memory_order_acquire);
        if (v1 & 1) { /* the owner is writing: a few stores, unless it lost its core */
            if (tries > 64)
                sched_yield();
            continue;
        }
        *out = s->e;
        atomic_thread_fence(memory_order_acquire);
        uint64_t v2 = atomic_load_explicit(&s->version, memory_order_relaxed);
        if (v1 == v2)
            break;
    }
    if (atomic_load_explicit(&s->key, memory_order_acquire) != key_of(comm)) {
        memset(out, 0, sizeof *out); /* given back meanwhile */
        return 0;
    }
    return out->state != BOARD_NONE;
}
