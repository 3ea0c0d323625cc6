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
#include "core/share.h"

#define GCSH_VERSION "0.1.0"

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
     * sticky CUDA error): gcsh_raise then ends every rank (collcheck.h). */
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

/* NUMA node of a CPU, and of a PCI device ("0000:19:00.0"), from sysfs;
 * -1 when unknown. */
int gcsh_numa_of_cpu(int cpu);
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

/* The error object os.exit raises to end the chunk (l_shell.c): the
 * worker's error handler passes it through without a traceback. */
const void *gcsh_exit_token(void);

/* Raises ctx->err as a Lua error (never returns); after an unrecoverable
 * fault (ctx->fatal) it ends every rank instead (collcheck.c). */
int gcsh_raise(lua_State *L, gcsh_ctx *ctx);

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

/* Opens every gcsh library (tensor, comm, ...) into L: one luaopen per type. */
void gcsh_open_libs(lua_State *L);

/* One luaopen per Lua type, each in src/bind/l_<type>.c. */
int luaopen_gcsh_tensor(lua_State *L);
/* The dtype facts (dtype.c's one list), for the Lua modules: returns
 * {f32 = {size=4, float=true, bits=24, rtol=1e-5}, ...}, which
 * gcsh_open_libs puts in package.loaded as "gcsh.dtypes", l_tensor.c. */
int luaopen_gcsh_dtypes(lua_State *L);
int luaopen_gcsh_comm(lua_State *L);
/* Register the "window" and "signals" metatables (made by comm methods). */
int luaopen_gcsh_window(lua_State *L);
int luaopen_gcsh_signals(lua_State *L);
/* The "winstage" type (a window's registration stage by stage, step.window's
 * C half): returns {new=}, which gcsh_open_libs puts in package.loaded as
 * "gcsh.winstage" (no global), l_winstage.c. */
int luaopen_gcsh_winstage(lua_State *L);
/* The kernel library (reduce kernels), l_kernel.c. */
int luaopen_gcsh_kernel(lua_State *L);
/* The kernel collectives' algorithm names (core/kplan.c's one list):
 * {takes = {allreduce = {"auto", "oneshot", ...}, ...}, planned = {oneshot =
 * true, ...}}, which gcsh_open_libs puts in package.loaded as
 * "gcsh.kalgos", l_kernel.c. */
int luaopen_gcsh_kalgos(lua_State *L);
/* Registers the "multicast" metatable and adds w:multicast() to the window
 * type's methods (after luaopen_gcsh_window), l_mcast.c. */
int luaopen_gcsh_multicast(lua_State *L);
/* Registers the "xfer" metatable (handles made by w:put, w:get, w:putv). */
int luaopen_gcsh_xfer(lua_State *L);
/* Returns {timer=, wtime=, sync=}, which gcsh_open_libs puts into `gcsh`. */
int luaopen_gcsh_timer(lua_State *L);

#endif
