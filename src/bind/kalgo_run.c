/* The runners of the all-reduce's algorithms (bind/kalgos.h): how
 * kernel.allreduce runs each row of the table of algorithms that names
 * one.  A plan's runner hands its plan to the backend's kernel
 * (gcsh_kern_collective); an algorithm with a kernel of its own calls that
 * kernel through the backend's table (core/backend.h: ll_allreduce,
 * dev_allreduce), refused by name on a backend that has none; "comm" is the
 * communicator's own all-reduce on the window's memory. */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "bind/comm.h"
#include "bind/kalgos.h"
#include "core/kll.h"
#include "wire/faults.h"

/* Whether algo "comm" can run on a's window (whose team is its whole
 * communicator: gcsh_karg_comm_window): the communicator can reduce the
 * dtype with the op.  auto falls back to two-shot where it cannot. */
int gcsh_kalgo_comm_can_run(lua_State *L, const gcsh_kargs *a)
{
    return gcsh_ctx_of(L)->be->comm->can_reduce(a->o->dtype, a->op);
}

static void comm_allreduce(lua_State *L, const gcsh_kargs *a)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_symobj *o = a->o;
    if (!ctx->be->comm->can_reduce(o->dtype, a->op))
        luaL_error(L, "%s: the communicator cannot reduce %s with %s", a->fname,
                   gcsh_dtype_name(o->dtype), gcsh_redop_name(a->op));
    void *mine = (char *)o->desc.peer[o->desc.team_rank] + a->offset * gcsh_dtype_size(o->dtype);
    void *dst = a->out ? gcsh_tensor_data(a->out) : mine;
    gcsh_comm_check *cc = gcsh_kern_enter_checked(L, a, "comm", -1, 1);
    gcsh_check_leave(L, cc, ctx->be->comm->allreduce(ctx, o->comm_impl, mine, dst, a->n,
                                                     o->dtype, a->op));
}

/* oneshot, twoshot, ring: the plan of that name (the table's row has one) */
const char *gcsh_kalgo_run_plan(lua_State *L, const gcsh_kargs *a)
{
    int algo = gcsh_kalgo_parse(a->algo);
    if (algo < 0 || !gcsh_kplan_valid(GCSH_KC_ALLREDUCE, (enum gcsh_kalgo)algo))
        luaL_error(L, "%s: algo '%s' has no plan of moves", a->fname, a->algo);
    gcsh_kern_collective(L, a, GCSH_KC_ALLREDUCE, (enum gcsh_kalgo)algo, -1, NULL, a->algo);
    return a->algo;
}

/* w:multicast()'s mode: multimem (nvls), or its emulation by peer loads and
 * stores, which moves the data as two-shot does (kplan.h) */
const char *gcsh_kalgo_run_multicast(lua_State *L, const gcsh_kargs *a)
{
    if (a->out)
        luaL_error(L, "%s: algo 'multicast' cannot keep the window untouched with out=: its st "
                      "stores the result through the multicast address into every slice; use "
                      "twoshot (the same moves, through the window's scratch area) or oneshot, "
                      "or omit out (the result in the window)",
                   a->fname);
    gcsh_mcast mc;
    gcsh_mcast_open(L, a->o, &mc);
    gcsh_mcast_check_rules(L, a->fname, a->o, 1, a->op, a->offset, a->n, a->out);
    gcsh_kern_collective(L, a, GCSH_KC_ALLREDUCE, GCSH_KA_MULTICAST, -1,
                         mc.nvls ? &a->o->mc : NULL, "multicast");
    return mc.nvls ? "multicast(nvls)" : "multicast(emulated)";
}

const char *gcsh_kalgo_run_comm(lua_State *L, const gcsh_kargs *a)
{
    comm_allreduce(L, a);
    return "comm";
}

static gcsh_kll_args ll_args(lua_State *L, const gcsh_kargs *a, const void *in,
                             enum gcsh_ll_proto proto)
{
    gcsh_symobj *o = a->o;
    return (gcsh_kll_args){
        .offset = a->offset, .n = a->n, .dt = o->dtype, .op = a->op, .in = in,
        .out = a->out ? gcsh_tensor_data(a->out) : NULL, .ll_off = gcsh_kern_ll_offset(L, o),
        .window_bytes = gcsh_kern_window_bytes(o), .slots = gcsh_ll_slots(o->comm->size),
        .proto = proto,
    };
}

int gcsh_kern_run_ll(lua_State *L, const gcsh_kargs *a, const void *in, enum gcsh_ll_proto proto)
{
    gcsh_kll_args k = ll_args(L, a, in, proto);
    return gcsh_kern_backend(L)->ll_allreduce(gcsh_ctx_of(L), a->o->impl, &a->o->desc, &k);
}

/* The region's bound for a protocol of the LL area: what a call takes,
 * never past what this window's area holds (a window smaller than the
 * bound holds its own size, the whole window). */
static void check_lines_bound(lua_State *L, const gcsh_kargs *a, const char *algo,
                              size_t bound)
{
    size_t es = gcsh_dtype_size(a->o->dtype);
    if (a->n * es > bound)
        luaL_error(L, "%s: algo '%s' takes at most %I bytes (n must be 1..%I for %s), got n = %I "
                      "(%I bytes); oneshot and twoshot take any n",
                   a->fname, algo, (lua_Integer)bound, (lua_Integer)(bound / es),
                   gcsh_dtype_name(a->o->dtype), (lua_Integer)a->n, (lua_Integer)(a->n * es));
    if (!gcsh_kern_backend(L)->ll_allreduce)
        luaL_error(L, "%s: algo '%s' is not available on the %s backend", a->fname, algo,
                   gcsh_ctx_of(L)->be->name);
}

/* one-shot with the ready flags in the data (core/kll.h): no barrier */
const char *gcsh_kalgo_run_ll(lua_State *L, const gcsh_kargs *a)
{
    check_lines_bound(L, a, "ll", GCSH_LL_MAX_BYTES);
    gcsh_comm_check *cc = gcsh_kern_enter_checked(L, a, "ll", -1, 1);
    gcsh_check_leave(L, cc, gcsh_kern_run_ll(L, a, NULL, GCSH_LL_PROTO_LL));
    return "ll";
}

/* the same in 128-byte lines of 120 data bytes (core/kll.h: LL128) */
const char *gcsh_kalgo_run_ll128(lua_State *L, const gcsh_kargs *a)
{
    check_lines_bound(L, a, "ll128", GCSH_LL128_MAX_BYTES);
    gcsh_comm_check *cc = gcsh_kern_enter_checked(L, a, "ll128", -1, 1);
    gcsh_check_leave(L, cc, gcsh_kern_run_ll(L, a, NULL, GCSH_LL_PROTO_LL128));
    return "ll128";
}

/* A one-shot written with NCCL's device API (kernels/cuda/nccl_dev.cu): cuda,
 * windows of kind nccl.  Refused before the collective check, naming the
 * window's kind and why, the same on every rank (the backend and the kind
 * are the whole communicator's), so no rank is left in the check. */
const char *gcsh_kalgo_run_nccl_dev(lua_State *L, const gcsh_kargs *a)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_symobj *o = a->o;
    const gcsh_kernel_ops *kern = gcsh_kern_backend(L);
    if (!kern->dev_allreduce)
        luaL_error(L, "%s: algo 'nccl_dev' needs NCCL's device API: the cuda backend and a "
                      "window of kind 'nccl'; this is the %s backend (window of kind '%s'); "
                      "oneshot moves the data the same way",
                   a->fname, ctx->be->name, o->kind);
    char why[320] = "";
    if (kern->dev_usable(ctx, o->impl, why, sizeof why) != 0)
        luaL_error(L, "%s: algo 'nccl_dev' cannot run on this window: %s", a->fname, why);
    gcsh_kdev_args k = {
        .offset = a->offset, .n = a->n, .dt = o->dtype, .op = a->op,
        .out = a->out ? gcsh_tensor_data(a->out) : NULL,
    };
    gcsh_comm_check *cc = gcsh_kern_enter_checked(L, a, "nccl_dev", -1, 1);
    gcsh_check_leave(L, cc, kern->dev_allreduce(ctx, o->impl, &o->desc, &k));
    return "nccl_dev";
}
