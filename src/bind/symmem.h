/* What windows (l_window.c) and signals (l_signal.c) share: checked
 * registration, the rank's registry of symmetric-memory objects, collective
 * freeing, and what happens to objects that were never freed.
 *
 * Checked registration: before anything is allocated, every rank of the
 * communicator contributes a proposal (type, n, dtype, kind, the
 * communicator's sequence number, and what was wrong with its arguments, if
 * anything) through the backend's agree exchange.  Unless all proposals are
 * equal and fine, every rank raises the same error naming each rank's
 * arguments, so a bad or mismatched call is one collective error: never a
 * hang, never a window registered on some ranks only.
 *
 * Objects and handles: a created object is a record in the rank's registry
 * (creation order); its Lua handle points at it.  Freeing is collective: a
 * barrier on the communicator, then the backend's destroy; every tensor view
 * of the memory is then a tombstone ("attempt to use a freed window").  __gc
 * never frees: a handle collected while its object is registered leaves the
 * record behind, which is reported once in the rank's output at the end of
 * the command, and freed at exit (gcsh_symmem_close, in creation order, the
 * same order on every rank since creation and free are collective).  On a
 * communicator an abort tore down, reading an object stays possible and
 * freeing it is local, at exit too, where it goes without a word. */
#ifndef GCSH_SYMMEM_H
#define GCSH_SYMMEM_H

#include <stdint.h>

#include <lauxlib.h>
#include <lua.h>

#include "bind/comm.h"
#include "core/gcsh.h"
#include "bind/tensor.h"
#include "bind/winbuild.h"

/* The metatable names of the two types (l_window.c, l_signal.c), the one
 * place they are spelled. */
#define GCSH_WINDOW_MT "window"
#define GCSH_SIGNALS_MT "signals"

typedef struct gcsh_sym_proposal {
    uint64_t seq;       /* the communicator's sequence number (set by agree) */
    int64_t n;
    char type[8];       /* "window" | "signals" */
    char dtype[8];
    char kind[24];
    char problem[208];  /* what is wrong with this rank's arguments, or "" */
    /* Where the fingerprints were compared (GCSH_CHECKED_* bits): this rank's
     * path goes out with the proposal and, after gcsh_sym_agree, holds every
     * rank's or-ed, so a report of it is the same on every rank.  Not part
     * of what must agree: ranks may take different paths under load. */
    uint32_t checked_by;
    /* A routed collective's label ("allreduce/oneshot") when this is the
     * staging window it makes (comm_route.c): its check is named so, so a
     * rank whose call took another route is told which calls met.  Not
     * compared with the others' (the check compares it). */
    char for_call[24];
} gcsh_sym_proposal;

enum {
    GCSH_CHECKED_BOARD = 1,       /* passed on the node's check board */
    GCSH_CHECKED_COORDINATOR = 2, /* rank 0's coordinator compared it */
};

/* A zeroed proposal (every byte is sent, so none may be uninitialised). */
void gcsh_sym_proposal_init(gcsh_sym_proposal *p, const char *type);
/* Records the first thing wrong with the arguments (later ones are kept out:
 * one clear message per rank). */
void gcsh_sym_problem(gcsh_sym_proposal *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Readers of creation arguments: what is wrong becomes a problem of p.
 * n at stack index arg is argument #argno of fname (#1 of a method);
 * options {kind=} at arg are argument #argno (an unknown kind or option
 * lists the valid ones; one that does not work on communicator c says why;
 * without kind=, the backend's first kind that works on c). */
void gcsh_sym_read_n(lua_State *L, int arg, gcsh_sym_proposal *p, const char *fname, int argno);
void gcsh_sym_read_kind(lua_State *L, int arg, gcsh_sym_proposal *p, const char *fname,
                        int argno, gcsh_comm_impl *c);
/* Raises when the backend has no windows (the same on every rank). */
void gcsh_sym_require_windows(lua_State *L, const char *fname);

/* The size checks every kind shares: n (argument #argno of fname) within
 * 1..max_n, the kind's granularity and its per-rank bound.  Fills bytes,
 * gran and alloc (bytes rounded up to gran) or records a problem. */
typedef struct gcsh_sym_size {
    size_t bytes, gran, alloc;
} gcsh_sym_size;
void gcsh_sym_check_size(gcsh_ctx *ctx, gcsh_sym_proposal *p, const char *fname, int argno,
                         size_t elem, size_t max_n, gcsh_sym_size *out);

/* The agree step: returns when every rank proposed the same valid thing, and
 * otherwise raises the same error on every rank.  Either way the next
 * creation on lc proposes the same sequence number on every rank. */
void gcsh_sym_agree(lua_State *L, lcomm *lc, gcsh_sym_proposal *p);

typedef struct gcsh_symobj gcsh_symobj;
struct gcsh_symobj {
    gcsh_symobj *next;          /* the registry, in creation order */
    const char *type;           /* "window" | "signals" */
    uint64_t seq;
    char kind[24];
    size_t n;
    gcsh_dtype dtype;
    lcomm *comm;                /* alive: comm_ref holds its userdata */
    gcsh_comm_impl *comm_impl;  /* for the barrier of free */
    int comm_ref;               /* registry reference to the comm's userdata */
    gcsh_winbuild build;        /* the registration while its stages run */
    gcsh_window_impl *impl;     /* the registered window; NULL before and once freed */
    gcsh_window_desc desc;      /* team and peer arrays belong to the backend */
    gcsh_storage **slices;      /* [nslices]: each member's slice, for views */
    int nslices;                /* the communicator's size, team_size once bound */
    int listed;                 /* in the registry: its check stage passed */
    int handles;                /* Lua handles pointing here (the object's, a stepper) */
    uint64_t kern_epoch;        /* barriers the kernel collectives ran on it (l_kernel.c) */
    /* w:multicast()'s decision, once made (equal on every rank): what a
     * capture (gcsh.graph) uses, where the exchange cannot run. */
    int mc_decided;
    gcsh_mcast mc;
    int mc_lax; /* emulated without NVLS's rules: w:multicast{lax=true} (l_mcast.c) */
    /* The transfers posted over it (l_xfer.c attaches a handle's transfer
     * at its first post and detaches it when the handle goes): a free is
     * refused while one of them is in flight on any rank. */
    gcsh_xfer_impl **xfers;
    size_t nxfers, cap_xfers;
    int garbage_noted;
    /* kernel.allreduce{algo="hier"}: the ranks that are the same member of
     * their node's team, one per node (khier.c); made at the first such
     * call, released with the object. */
    gcsh_comm_impl *across;
    /* The routed collective whose staging window this is (its proposal's
     * for_call): its free's check is named after that call too. */
    char for_call[24];
};

/* ---- staged registration ----------------------------------------------------
 *
 * One path for c:window(), c:signals() and step.window (l_winstage.c):
 *
 *   o = gcsh_sym_prepare(...)      local: the record, its views, the backend's
 *                                  window object; a failure is a problem of p
 *   gcsh_sym_check_stage(...)      the check: every rank's proposal agrees
 *                                  (gcsh_sym_agree), or the same error
 *                                  everywhere; then o is in the registry
 *   gcsh_sym_run_stage(...)        each of the backend's stages (winbuild.h);
 *                                  after the last one o is a usable window
 *
 * c:window() runs them back to back (gcsh_sym_register); a stepper runs one
 * per step.  A failed stage is undone on every rank before it returns. */

/* Local: a record for the proposal p on lc (not registered anywhere), or
 * NULL with p->problem set (also when p had a problem already).  The caller
 * points a handle at it (o->handles = 1) before the check, so an error there
 * leaves nothing behind once the handle is collected. */
gcsh_symobj *gcsh_sym_prepare(lua_State *L, lcomm *lc, gcsh_sym_proposal *p, gcsh_dtype dt,
                              const gcsh_sym_size *size);
/* Collective: the check stage (gcsh_sym_agree); raises on a problem or a
 * mismatch.  On success o (never NULL then) takes p's sequence number, joins
 * the registry and keeps the comm at comm_idx alive. */
void gcsh_sym_check_stage(lua_State *L, int comm_idx, gcsh_symobj *o, gcsh_sym_proposal *p);
/* Collective: the next stage of o's registration (reports as in
 * gcsh_winbuild_stage).  0 when every rank finished it; after the last one o
 * is usable (views bound).  -1 when it failed on any rank: undone everywhere,
 * o holds nothing; the caller tidies its own state, then raises with
 * gcsh_sym_stage_failed. */
int gcsh_sym_run_stage(lua_State *L, gcsh_symobj *o, char *reports);
/* Raises the error gcsh_sym_run_stage left in ctx->err; aborted (the
 * build's flag): the communicator was aborted on the way, which cc's check
 * state learns (collcheck.h). */
int gcsh_sym_stage_failed(lua_State *L, gcsh_comm_check *cc, int aborted);
/* c:window() and c:signals(): pushes a handle of metatable mt and runs every
 * stage; raises with nothing registered anywhere, or returns the object. */
gcsh_symobj *gcsh_sym_register(lua_State *L, int comm_idx, const char *mt, gcsh_sym_proposal *p,
                               gcsh_dtype dt, const gcsh_sym_size *size);
/* Collective, checked (op "window:reset"): undoes a registration whose
 * stages have not all run.  Local when the communicator was aborted. */
void gcsh_sym_abort_build(lua_State *L, gcsh_symobj *o);

/* Collective, idempotent: barrier, then destroy; views become tombstones.
 * Raises when the barrier or the backend fails.  On a communicator an abort
 * tore down, local: every rank frees its own (refused only while a transfer
 * over o is in flight here); at exit those go without a word. */
void gcsh_sym_free(lua_State *L, gcsh_symobj *o);
/* __gc of a handle (or a stepper letting go): local only (see the top of
 * the file); a record that never passed its check is freed here. */
void gcsh_sym_handle_gone(lua_State *L, gcsh_symobj *o);

/* Attaches / detaches a transfer that uses o (see xfers above).  attach
 * returns -1 when out of host memory. */
int gcsh_sym_attach_xfer(gcsh_symobj *o, gcsh_xfer_impl *x);
void gcsh_sym_detach_xfer(gcsh_symobj *o, gcsh_xfer_impl *x);

/* The team index of communicator rank r, or -1. */
int gcsh_sym_team_index(const gcsh_symobj *o, int r);
/* Checks arg (a communicator rank) and returns its team index; the error
 * names the reachable ranks. */
int gcsh_sym_check_peer(lua_State *L, const gcsh_symobj *o, int arg);
/* As gcsh_sym_check_peer, but -1 for a rank on another node that the
 * backend's network path reaches (gcsh_window_ops.net). */
int gcsh_sym_check_peer_net(lua_State *L, const gcsh_symobj *o, int arg);
/* Whether communicator rank r (off o's team) is reached over the network. */
int gcsh_sym_net_reaches(lua_State *L, const gcsh_symobj *o, int r);
/* The node of communicator rank r (gcsh_ctx's node_of), or -1 unknown. */
int gcsh_sym_node_of(lua_State *L, const gcsh_symobj *o, int r);
/* Pushes a userdata of gcsh_ctx's nnodes ints: per node, how many of o's
 * communicator's ranks it holds (one pass over the ranks); returns it, or
 * NULL (nothing pushed) where the nodes are not known. */
int *gcsh_sym_push_node_counts(lua_State *L, const gcsh_symobj *o);
/* How many nodes o's communicator spans; ", node 0 of 2" into buf when
 * several (for tostring), else "". */
int gcsh_sym_nodes_spanned(lua_State *L, const gcsh_symobj *o);
const char *gcsh_sym_nodes_text(lua_State *L, const gcsh_symobj *o, char *buf, size_t len);
/* Pushes why communicator rank r (off o's team) cannot be reached by loads
 * and stores: on another node, that node and this one's ranks; returns it. */
const char *gcsh_sym_push_unreachable(lua_State *L, const gcsh_symobj *o, int r);
/* "0-1,3": the team as communicator ranks, into buf. */
const char *gcsh_sym_team_text(const gcsh_symobj *o, char *buf, size_t len);

/* Signal words are unsigned 64-bit, and a Lua integer carries a word's
 * bits: 2^63..2^64-1 are the negative integers (-1 is 2^64-1), in the order
 * math.ult gives them.  A value given is such an integer, or a float
 * 2^63 <= f < 2^64 (every one an integer; Lua reads the literal
 * 9223372036854775808 as one).  Returns 0 for anything else; the error
 * then says "<what> must be " GCSH_SYM_WORD_RANGE ", got ...". */
#define GCSH_SYM_WORD_RANGE                                                                        \
    "an integer 0..18446744073709551615 (a u64 word; a negative integer is its "                  \
    "two's complement, as math.ult reads it)"
int gcsh_sym_word_value(lua_State *L, int idx, uint64_t *v);
/* The word's decimal text, unsigned, pushed on L. */
const char *gcsh_sym_word_text(lua_State *L, uint64_t v);

/* Handles (one userdata type per Lua type, each holding a gcsh_symobj *,
 * NULL while closed).  push makes a closed one; check raises "attempt to use
 * a freed <type>" unless the object is registered, and check_open "<type> #N
 * is read-only evidence: its communicator was aborted" once it was. */
gcsh_symobj **gcsh_sym_push_handle(lua_State *L, const char *mt);
gcsh_symobj *gcsh_sym_check_open(lua_State *L, int idx, const char *mt);
/* The same, but also on a communicator an abort tore down: what only reads
 * the object (its fields, w:tensor(), w:peer(), w:info(), s:read()), which
 * stays possible until it is freed, unless the abort unmapped its memory
 * (gcsh_sym_check_mapped; its fields stay). */
gcsh_symobj *gcsh_sym_check_readable(lua_State *L, int idx, const char *mt);
/* Raises "<type> #N cannot be read: its communicator was aborted, and ..."
 * when the abort unmapped o's slices (desc.abort_unmaps: cuda kind nccl);
 * check_readable and a slice's views call it. */
void gcsh_sym_check_mapped(lua_State *L, const gcsh_symobj *o);
/* check_open's refusal for an object already in hand (m:st writes it). */
void gcsh_sym_check_writable(lua_State *L, const gcsh_symobj *o);
/* __index: methods (upvalue 1) first, then the fields both types have (kind,
 * n, rank, size, team, comm, seq) and those of `extra` (may be NULL). */
int gcsh_sym_index(lua_State *L, const char *mt,
                   int (*extra)(lua_State *L, gcsh_symobj *o, const char *key));
/* The info() fields both types have, into the table on top of the stack. */
void gcsh_sym_info_fields(lua_State *L, const gcsh_symobj *o);

/* c:window's arguments (l_window.c), also step.window's: n, dtype and
 * options from stack index first on (the communicator at first - 1), n
 * being argument #argno of fname.  Fills
 * p (problems recorded, never raised) and size; returns the dtype. */
gcsh_dtype gcsh_window_args(lua_State *L, int first, const char *fname, int argno,
                            gcsh_sym_proposal *p, gcsh_sym_size *size);

/* Windows keep what the kernel collectives need past their elements: the
 * "ll" all-reduce's area (kll.h), then the sync words (kreduce.h); adds
 * both to size->alloc (l_kernel.c). */
void gcsh_kern_reserve_sync(gcsh_ctx *ctx, gcsh_sym_proposal *p, gcsh_sym_size *size,
                            int comm_size);
/* The bytes the kernels keep past a slice's window_bytes on a communicator
 * of comm_size ranks (the LL area and the sync words; 0 without kernels). */
size_t gcsh_kern_reserved_bytes(gcsh_ctx *ctx, size_t window_bytes, int comm_size);

/* Opens the registry (once per state, before any handle exists). */
int gcsh_symmem_open(lua_State *L);

/* End of a command: writes one line per newly collected, unfreed object
 * into the rank's output. */
void gcsh_symmem_note_garbage(lua_State *L);
/* Before lua_close: frees every object still registered, in creation order
 * (collective; every rank calls it at exit). */
void gcsh_symmem_close(lua_State *L);

#endif
