/* The reduce kernels as the bindings see them: what the kernel library
 * (l_kernel.c), the table of algorithms and their runners (kalgos.h), the
 * multicast type (l_mcast.c) and kernel.plan's table (kplan_table.c)
 * share.  Below them: kcoll.c runs a kernel collective and keeps the
 * kernels' areas in a window; kargs.c reads and checks the arguments, and
 * runs the local reduce job. */
#ifndef GCSH_BIND_KERNEL_H
#define GCSH_BIND_KERNEL_H

#include <stddef.h>

#include <lua.h>

#include "core/kplan.h"
#include "core/kreduce.h"
#include "bind/symmem.h"
#include "bind/tensor.h"

/* ---- kargs.c: arguments --------------------------------------------------------- */

/* The backend's kernel table (NULL where the backend has none). */
const gcsh_kernel_ops *gcsh_kern_backend(lua_State *L);

/* A call over a window's region: what its arguments said. */
typedef struct gcsh_kargs {
    const char *fname;
    gcsh_symobj *o;
    gcsh_redop op;
    size_t offset, n;
    gcsh_tensor *out;
    int out_idx; /* stack index of out, 0 when none */
    int out_required; /* out is a positional argument (reduce_peers, ld_reduce) */
    const char *algo;
} gcsh_kargs;

/* Errors unless the kernels take dtype dt with op among ops (bits of
 * GCSH_KERN_OP_BIT); `what` names who runs it ("the kernels"). */
void gcsh_karg_dtype_op(lua_State *L, const char *fname, gcsh_dtype dt, gcsh_redop op,
                        unsigned ops, const char *what);
/* The tensor at idx, which must live where the backend's kernels run
 * (device memory on cuda); `what` names it in errors ("out"). */
gcsh_tensor *gcsh_karg_placed(lua_State *L, int idx, const char *fname, const char *what);
/* Errors unless t's dtype is dt (`of` names where dt comes from). */
void gcsh_karg_same_dtype(lua_State *L, const char *fname, const char *what,
                          const gcsh_tensor *t, gcsh_dtype dt, const char *of);
/* The open window at idx, whose team the kernels can synchronise. */
gcsh_symobj *gcsh_karg_window(lua_State *L, int idx, const char *fname);
/* The same for a job that only loads the slices, on this rank alone, no
 * barrier, no communicator (kernel.reduce_peers): also a window whose
 * communicator was aborted, the read-only evidence w:peer(r) reads too. */
gcsh_symobj *gcsh_karg_window_read(lua_State *L, int idx, const char *fname);
/* The same, for a collective over the window's team, which must be its
 * whole communicator: a team of one node out of several would reduce over
 * that node only, a silent subset labelled as the communicator's (src/
 * DESIGN.md, Truth rules).  `instead` names the communicator's call. */
gcsh_symobj *gcsh_karg_comm_window(lua_State *L, int idx, const char *fname, const char *instead);
/* Reads {offset, n} of the options table at idx into a (a->o set). */
void gcsh_karg_region(lua_State *L, int idx, gcsh_kargs *a);
/* Reads {op, offset, n, out, algo} at idx (none/nil: the defaults) for
 * a->o, keys checked against valid. */
void gcsh_karg_read(lua_State *L, int idx, gcsh_kargs *a, const char *valid);
/* Errors unless a->out (when given) fits: the window's dtype, at least
 * `needs` elements (`why` says why), not the window's own memory. */
void gcsh_karg_out_size(lua_State *L, const gcsh_kargs *a, size_t needs, const char *why);
/* A root given at idx as a rank of the window's comm; returns its team
 * index. */
int gcsh_karg_root(lua_State *L, int idx, const gcsh_kargs *a);
/* (out, w-or-m, op-or-options at idx) for kernel.reduce_peers and
 * m:ld_reduce: a->out and a->o set, fills op, offset and n. */
void gcsh_karg_peer_reduce(lua_State *L, gcsh_kargs *a, int idx);

/* ---- kcoll.c: where the kernels keep their areas in a window's slices ------------- */

/* A slice's user bytes (n elements of the window's dtype). */
size_t gcsh_kern_window_bytes(const gcsh_symobj *o);
/* Where the sync words start in every slice, in bytes. */
size_t gcsh_kern_sync_offset(lua_State *L, const gcsh_symobj *o);
/* Where the LL area (core/kll.h) starts in every slice, in bytes. */
size_t gcsh_kern_ll_offset(lua_State *L, const gcsh_symobj *o);
/* The kernels' areas of window o (backends with kernels) as fields of the
 * table on top: ll_offset, scratch_bytes (what kernel.allreduce's out=
 * may use of the LL area, kplan.h), sync_offset, in bytes from a slice's
 * start (w:info()). */
void gcsh_kern_info_fields(lua_State *L, const gcsh_symobj *o);
/* w:sync_state([s]): the window's barrier epoch, the sync words and LL
 * flags each member left here, my words of signals s. */
int gcsh_kern_sync_state(lua_State *L);

/* ---- kcoll.c: a kernel collective's run ------------------------------------------- */

/* The collective check of a kernel collective over a's region (every member
 * of the window's communicator calls the same one, the same algorithm
 * `algo`, the same region; root: a team index or -1; reduces: the op is
 * compared); returns the state gcsh_check_leave takes. */
gcsh_comm_check *gcsh_kern_enter_checked(lua_State *L, const gcsh_kargs *a, const char *algo,
                                         int root, int reduces);
/* Whether a's region fits the window's scratch area: an out-of-place
 * two-shot or ring gathers the result there (kplan.h). */
int gcsh_kern_fits_scratch(const gcsh_kargs *a);
/* A kernel collective over a's region with the plan (coll, algo), checked
 * under the name `shown` (with " out=" where the plan goes through the
 * scratch areas); root: a team index or -1; mc: the window's multicast set-up
 * for multicast's nvls mode, else NULL. */
void gcsh_kern_collective(lua_State *L, const gcsh_kargs *a, enum gcsh_kcoll coll,
                          enum gcsh_kalgo algo, int root, const gcsh_mcast *mc, const char *shown);

/* The same collective unchecked, for a caller that ran its own check (the
 * routed collectives of comm_route.c, inside c:allreduce's): the backend's
 * status, 0 or -1 with ctx->err.  The plan must not need the scratch areas
 * (no out= with two-shot or ring). */
int gcsh_kern_run(lua_State *L, const gcsh_kargs *a, enum gcsh_kcoll coll, enum gcsh_kalgo algo,
                  int root);
/* algo "ll" or "ll128" (proto) unchecked (kalgo_run.c), as gcsh_kern_run:
 * a's region of every slice, or, with in (local memory at the window's
 * place, n elements), that memory in place of my region: nothing is copied
 * into the window. */
int gcsh_kern_run_ll(lua_State *L, const gcsh_kargs *a, const void *in, enum gcsh_ll_proto proto);
/* What kernel.allreduce's auto runs for `bytes` over a team of `team` ranks
 * on backend (kreduce_tune.h's row; l_kernel.c). */
const char *gcsh_kern_choose(const char *backend, int team, size_t bytes);

/* ---- kargs.c: the local reduce job ---------------------------------------------- */

/* Runs j on the rank's kernels; errors as the backend said. */
void gcsh_kjob_run(lua_State *L, const gcsh_kjob *j);
/* out = the op over every member's [offset, offset + n) of o (peer loads). */
void gcsh_kjob_peers(lua_State *L, const gcsh_symobj *o, size_t offset, size_t n,
                     gcsh_tensor *out, gcsh_redop op);

/* ---- l_mcast.c: the multicast type ---------------------------------------------- */

/* o's multicast mode into mc: collective (and checked) the first time, the
 * decision every rank made afterwards (strict, unless the first
 * w:multicast{lax=true} said otherwise). */
void gcsh_mcast_open(lua_State *L, gcsh_symobj *o, gcsh_mcast *mc);
/* NVLS's rules, which mode nvls needs and the emulation keeps unless lax
 * (src/DESIGN.md, Truth rules): errors unless op (reduces: an ld_reduce;
 * else a store) is one multimem has for o's dtype and [offset, offset + n)
 * of o and local (may be NULL) fall on 4-byte units.  The same messages
 * on every backend, NVLS or emulated.  A no-op for a lax emulation. */
void gcsh_mcast_check_rules(lua_State *L, const char *fname, const gcsh_symobj *o, int reduces,
                            gcsh_redop op, size_t offset, size_t n, const gcsh_tensor *local);

/* ---- kplan_table.c: kernel.plan's answer ------------------------------------------ */

/* Adds kalltoallv.c's kernel.alltoallv to the kernel library (libs.c,
 * after it opened). */
void gcsh_kalltoallv_open(lua_State *L);

/* Pushes p over o's region from offset as kernel.plan returns it; has_out:
 * the members pass out (the copy-out step has moves). */
void gcsh_push_kplan(lua_State *L, const gcsh_symobj *o, const gcsh_kplan *p, size_t offset,
                     int has_out);
/* Pushes member r's move mv as kernel.plan's steps hold it ({rank=, op=,
 * count=, src=, dst=}); ranks (NULL: none) maps team indices to the
 * communicator's ranks, for a plan over several teams (khier.c). */
void gcsh_push_kmove(lua_State *L, int r, const gcsh_kmove *mv, size_t offset, const int *ranks);

#endif
