/* The per-rank context: the one place where a rank keeps mutable state.
 *
 * Every Lua state carries a pointer to its rank's context in its extra space
 * (lua_getextraspace), so bindings reach it with gcsh_ctx_of(L) in O(1). */
#ifndef GCSH_GCSH_H
#define GCSH_GCSH_H

#include <stdatomic.h>
#include <stddef.h>

#include <lua.h>

#include "core/backend.h"
#include "core/luahook.h"
#include "core/share.h"
#include "core/waitnote.h"

#define GCSH_VERSION "0.1.0"

#define GCSH_TOUCH_MAX 4 /* touch hooks a rank may have (bind/users.h) */

#include "core/exit_codes.h" /* every GCSH_EXIT_* */

/* The job's verdict is the worst of every rank's status (and of every
 * command's, in a session), in this order: abort (128 and above) > bad
 * (1-124, 126, 127) > skip (125) > good (0); of two in the same class, the
 * higher (a rank's os.exit(4) or a crash's 69 says more than the 1 of an
 * error it caused elsewhere).  -1 is "none yet" and loses to anything. */
static inline int gcsh_status_class(int status)
{
    return status < 0 ? -1 : status == 0 ? 0 : status == GCSH_EXIT_SKIP ? 1 : status < 128 ? 2 : 3;
}

static inline int gcsh_status_worst(int a, int b)
{
    int ca = gcsh_status_class(a), cb = gcsh_status_class(b);
    return cb > ca || (cb == ca && b > a) ? b : a;
}

typedef struct gcsh_capture gcsh_capture;
typedef struct gcsh_check gcsh_check;
typedef struct gcsh_trace gcsh_trace;
typedef struct gcsh_flight gcsh_flight;
typedef struct gcsh_board gcsh_board;
typedef struct gcsh_orphans gcsh_orphans;
typedef struct gcsh_graph_capture gcsh_graph_capture;

/* gcsh.wtime's tape (record.h): while a recorded chunk runs (CHUNK_TAPE)
 * the values gcsh.wtime returned, sent to rank 0 with the chunk's end; for
 * a replayed one (MSG_TAPE), the values it returns in turn, then the clock
 * again.  So a replay sees the times the recording saw. */
enum gcsh_tape_mode { GCSH_TAPE_OFF, GCSH_TAPE_RECORD, GCSH_TAPE_PLAY };
typedef struct gcsh_tape {
    double *v;
    size_t n, cap, next;
    int mode; /* enum gcsh_tape_mode */
} gcsh_tape;

struct gcsh_ctx {
    int rank, size;             /* in MPI_COMM_WORLD */
    int local_rank, local_size; /* on this node (or GCSH_RANKS_PER_NODE group) */
    int node;                   /* index of this rank's node */
    /* Every world rank's node (node_of[r]) and how many nodes there are:
     * what windows say of peers off their team (gcsh_rank_topology). */
    int *node_of, nnodes;
    /* --share-gpu: the machine's ranks, what serves the GPUs they share
     * (share.h); set before the backend starts. */
    gcsh_share share;
    const gcsh_backend *be;
    void *be_state;             /* owned by the backend */
    /* Where this rank's collectives read and write: GCSH_LOC_HOST, or the
     * CUDA ordinal of the rank's GPU.  Set by be->init; bindings refuse
     * tensors that live elsewhere before any collective is called. */
    int loc;
    lua_State *L;               /* this rank's Lua state (worker thread only) */
    gcsh_capture *cap;          /* where print / io.write go */
    /* Set by the rank's watcher thread when rank 0 asks for an interrupt
     * (GCSH_INTERRUPT); cleared when the next chunk starts.  Blocking waits
     * poll it and stop on any non-zero value.  GCSH_INTERRUPT_PEER stops
     * only the operation in progress, on a communicator that another rank
     * aborted (collcheck.h); the operation's end clears it. */
    atomic_int interrupt;
    /* The Lua debug hook's one owner (luahook.h): os.exit, the interrupt
     * and the line sample arm their parts there, never lua_sethook. */
    gcsh_luahook luahook;
    /* What must finish before the host reads or writes memory, registered
     * by the features above the bindings (bind/users.h: the persistent
     * all-reduce's drain).  Here, not in Lua's registry: every host read of
     * a tensor element runs them. */
    void (*touch[GCSH_TOUCH_MAX])(lua_State *L);
    int ntouch;
    /* Collective checks, whereabouts and aborts (collcheck.h); NULL in a bare
     * state (C tests), where checks are off. */
    gcsh_check *check;
    /* The check board (board.h) of rank 0's node, or NULL elsewhere. */
    gcsh_board *board;
    /* MPI requests an interrupt or an error abandoned, and the memory they
     * may still touch (orphans.h); made on first use, kept until the rank
     * closes, before MPI_Finalize. */
    gcsh_orphans *orphans;
    /* Set by a backend that met an error the process cannot recover from (a
     * sticky CUDA error): gcsh_raise then ends every rank (wire/faults.h). */
    int fatal;
    /* gcsh.debug.inject("oom"): the backend's next tensor allocation fails
     * (each backend fails it its own real way, then clears this). */
    int inject_oom;
    /* gcsh.debug.inject("async") on the host backend: the next wait for the
     * rank's work fails as an asynchronous device error would (tests of the
     * end-of-command wait, collcheck.h). */
    int inject_async;
    /* gcsh.debug.inject("stage:NAME") / ("stage_slow:NAME"): the next window
     * registration stage of that name fails on this rank after it ran, or
     * waits for an interrupt (winbuild.c); then this clears. */
    char inject_stage[24];
    int inject_stage_slow;
    /* os.exit(code) in the running chunk: the status the session should
     * end with (-1: not called).  Reset when a chunk starts. */
    int exit_code;
    /* --seed N, gcsh.seed(N): math.random was seeded with (seed, rank), and
     * t:rand() without a seed uses (seed << 32) + rank instead of the rank. */
    int seeded;
    long long seed;
    /* The running chunk read a clock, an address or the machine's facts:
     * its output may differ between runs (CHUNK_VARIES).  Reset when a
     * chunk starts; set by gcsh.varies() and the functions that do. */
    int output_varies;
    gcsh_tape tape;             /* gcsh.wtime's, for record and replay (above) */
    /* Tracing (trace.h): trace_store records every call (the flight
     * recorder's and the trace's) while ctx->be is its copy of the
     * backend's table; ctx->trace is set while spans are kept (.trace);
     * trace_store lives until the rank closes (the watcher copies from it). */
    gcsh_trace *trace;
    gcsh_trace *trace_store;
    /* Who hears the collective checks (check_hooks.h: the recording
     * layer's, set by gcsh_trace_init), or NULL. */
    const struct gcsh_check_hooks *check_hooks;
    /* The flight recorder (flight.h): this rank's last calls, in memory
     * rank 0 can read; NULL when GCSH_FLIGHT_CALLS=0. */
    gcsh_flight *flight;
    /* gcsh.graph's capture in progress (core/graph.h), or NULL: while set,
     * ctx->be is its table. */
    gcsh_graph_capture *graph;
    char device[128];           /* e.g. "cpu", "cuda:0 NVIDIA H200" */
    char err[1024];             /* last backend error, see gcsh_set_error */
    char check_failed[1024];    /* the running chunk's last failed collective check ("":
                                   none): its error may be that failure (worker.c) */
    /* What the worker's blocking wait waits for, read by the watcher for
     * hang reports (waitnote.h). */
    gcsh_wait_note wait_note;
};

/* Values of ctx->interrupt (0: none). */
#define GCSH_INTERRUPT 1
#define GCSH_INTERRUPT_PEER 2

static inline gcsh_ctx *gcsh_ctx_of(lua_State *L)
{
    return *(gcsh_ctx **)lua_getextraspace(L);
}

/* printf-style: records a one-line error message in ctx->err; returns -1 so
 * backends can write `return gcsh_set_error(ctx, ...)`. */
int gcsh_set_error(gcsh_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Seconds on the monotonic clock, for deadlines and durations (the wall
 * clock may jump). */
double gcsh_now_seconds(void);
/* The first IPv4 address host resolves to, in network order; 0: none (the
 * control plane's bootstrap and the network path both listen there). */
uint32_t gcsh_resolve_ipv4(const char *host);
/* Reads exactly len bytes from fd (a socket or a pipe), through EINTR:
 * 0, or -1 at an error or the end of the stream before len bytes. */
int gcsh_read_all(int fd, void *buf, size_t len);

/* How long a rank polls another's store in shared memory before it yields
 * the core (host_wait.c, the check board): GCSH_SPIN_FIRST_S while every
 * rank of this node has a core of its own (a yield on a busy machine hands
 * the core to another process for its slice: tens of us a wait), 0 when
 * the ranks outnumber the cores (the rank waited for may need this core;
 * Open MPI's progress loop yields only then too). */
#define GCSH_SPIN_FIRST_S 1e-3
double gcsh_spin_first_s(const gcsh_ctx *ctx);

/* NUMA node of a CPU, and of a PCI device ("0000:19:00.0"), from sysfs;
 * -1 when unknown. */
int gcsh_numa_of_cpu(int cpu);
/* The first of relative[0..n) (paths from the folder of the running
 * binary: the build tree's, then an installed prefix's) for which
 * usable(path) holds, resolved, into out; 0, or -1 when none does. */
int gcsh_beside_binary(const char *const *relative, size_t n, int (*usable)(const char *path),
                       char *out, size_t len);
int gcsh_numa_of_pci(const char *bus);

/* "64 MiB", "4 KiB", "4160 B": exact, in the largest unit that divides
 * bytes; into buf, which it returns. */
char *gcsh_format_bytes(size_t bytes, char *buf, size_t len);
/* A sorted rank list as "0-2,5" into buf, which it returns. */
char *gcsh_format_ranks(const int *ranks, int n, char *buf, size_t len);
/* The ranks r < n with keep(arg, r), as "0-2,5" into buf, which it
 * returns; *count (or NULL) gets how many.  The one "collect the ranks
 * that ..., then format them". */
char *gcsh_format_ranks_where(int n, int (*keep)(const void *arg, int r), const void *arg,
                              char *buf, size_t len, int *count);
/* keep for gcsh_format_ranks_where: arg is a per-rank char mask. */
int gcsh_rank_in_mask(const void *mask, int r);

/* Creates the metatable of a Lua type (lua.c/liolib.c style): metamethods
 * from metameth, methods from meth.  __index is the method table itself, or,
 * when index is given, the closure index(methods as upvalue 1) for types
 * that also answer fields or elements.  The method table is also kept as
 * __methods for tab completion. */
struct luaL_Reg;
void gcsh_new_type(lua_State *L, const char *name, const struct luaL_Reg *meth,
                   const struct luaL_Reg *metameth, lua_CFunction index);
/* For "attempt to call a nil value (method 'alreduce')": the method closest
 * to name, within two edits, of the gcsh type named type ("comm"; NULL: of
 * any), into buf; 0, or -1 when none is that close. */
int gcsh_suggest_method(lua_State *L, const char *type, const char *name, char *buf, size_t len);
/* Adds meth to the methods of the type made as name (gcsh_new_type): a
 * type whose constructor is another type's method (c:window(), c:signals())
 * adds it from its own file. */
void gcsh_add_methods(lua_State *L, const char *name, const struct luaL_Reg *meth);

/* The next value (1, 2, ...) of a counter kept in L's registry under key:
 * the numbers handles are shown with (graph #2, persistent #1). */
lua_Integer gcsh_registry_count(lua_State *L, const char *key);
/* Where the running Lua code is, as "stdin:3" (luaL_where without its
 * ": "), into buf: where a handle was made, for messages naming it. */
void gcsh_lua_where(lua_State *L, char *buf, size_t len);

/* Fields of the table on top of the stack: t[key] = v. */
static inline void gcsh_set_string(lua_State *L, const char *key, const char *v)
{
    lua_pushstring(L, v);
    lua_setfield(L, -2, key);
}

static inline void gcsh_set_integer(lua_State *L, const char *key, lua_Integer v)
{
    lua_pushinteger(L, v);
    lua_setfield(L, -2, key);
}


#endif
