/* The "comm" Lua type as other bindings see it (windows, signals).
 *
 * Symmetric-memory objects (windows, signals) are created on a communicator
 * and keep it alive: each holds a registry reference to the comm's userdata
 * until it is freed, and c:free() refuses while any is still registered
 * (their free needs the communicator's barrier). */
#ifndef GCSH_COMM_H
#define GCSH_COMM_H

#include <stdint.h>

#include <lua.h>

#include "wire/collcheck.h"
#include "core/gcsh.h"
#include "bind/tensor.h"

#define GCSH_COMM_MT "comm"

typedef struct lcomm {
    gcsh_comm_impl *impl; /* NULL when closed: not yet acquired, or freed */
    int rank, size;
    /* Checked registration: the sequence number the next window or signals
     * creation on this communicator proposes (symmem.c). */
    uint64_t next_seq;
    /* Windows and signals registered on it and not yet freed. */
    int registered;
    gcsh_comm_check chk;  /* id, sequence number, members, aborted (collcheck.h) */
    struct comm_entry *entry; /* its place among the open ones (l_comm.c) */
} lcomm;

/* luaL_checkudata + "attempt to use a freed comm". */
lcomm *gcsh_arg_comm(lua_State *L, int idx);

/* At the end of the session, before lua_close and after the windows and
 * signals (gcsh_symmem_close): every communicator not yet freed, its handle
 * open or collected, is released in creation order, as c:free() would
 * (after a barrier on it; an aborted one, or one whose barrier fails,
 * locally). */
void gcsh_comm_close(lua_State *L);

/* ---- routed collectives ----------------------------------------------------
 *
 * c:allreduce, c:reducescatter, c:allgather and c:broadcast may run on the
 * kernel collectives instead of the communicator's library (comm_route.c,
 * which sits on the kernel library and so above this file: it registers
 * the router below as it opens, and l_comm.c never names it).  A call
 * asks for a path with a last argument {algo=} (auto, kernel, comm, nccl). */

enum gcsh_route_want { GCSH_ROUTE_AUTO, GCSH_ROUTE_KERNEL, GCSH_ROUTE_COMM };

/* One call, checked (l_comm.c's checks ran: sizes, dtypes, overlap). */
typedef struct gcsh_comm_call {
    const char *name;    /* "allreduce", "reducescatter", "allgather", "broadcast" */
    int coll;            /* enum gcsh_kcoll (core/kplan.h) */
    lcomm *comm;
    int comm_idx;        /* the communicator's stack index */
    const gcsh_tensor *in, *out;
    size_t count;        /* in the backend's sense (backend.h) */
    gcsh_dtype dt;
    gcsh_redop op;
    int root;            /* broadcast's root */
    enum gcsh_route_want want;
} gcsh_comm_call;

/* Where a call runs: the label its check and trace span carry
 * ("allreduce/ll"; "" where the router takes no part: the communicator's
 * library, unlabelled), kernel 1 on the kernels with algo, and why. */
typedef struct gcsh_comm_route {
    int kernel;
    char algo[16];
    char label[24];
    char why[160];
} gcsh_comm_route;

typedef struct gcsh_comm_router {
    /* Decides the route (local; the same on every rank of the communicator,
     * from facts they share) and readies what it needs: a staging window
     * grown is collective and checked, so it runs before the call's check. */
    void (*prepare)(lua_State *L, const gcsh_comm_call *c, gcsh_comm_route *r);
    /* Runs a kernel route (inside the call's check): 0, or -1 with ctx->err. */
    int (*run)(lua_State *L, const gcsh_comm_call *c, const gcsh_comm_route *r);
    /* Windows the router holds on lc (its staging window), and their free
     * (collective: c:free runs it on every rank before the release). */
    int (*held)(lua_State *L, const lcomm *lc);
    void (*release)(lua_State *L, lcomm *lc);
} gcsh_comm_router;

/* The options table {algo=} at idx of the call fname: the path it asks
 * for ("nccl" only on cuda; every backend's library is "comm"); raises,
 * naming fname, on an unknown key or algo. */
enum gcsh_route_want gcsh_comm_route_option(lua_State *L, int idx, const char *fname);

/* The router (one a state; comm_route.c's, as it opens). */
void gcsh_comm_set_router(lua_State *L, const gcsh_comm_router *r);

/* c:window() and c:signals() are those types' constructors: each type's
 * file adds its one to comm's methods as it opens (gcsh_add_methods, after
 * comm's luaopen), so l_comm.c names neither. */

#endif
