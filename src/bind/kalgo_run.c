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

static gcsh_kll_args ll_args(lua_State *L, const gcsh_kargs *a, const void *in)
{
    gcsh_symobj *o = a->o;
    return (gcsh_kll_args){
        .offset = a->offset, .n = a->n, .dt = o->dtype, .op = a->op, .in = in,
        .out = a->out ? gcsh_tensor_data(a->out) : NULL, .ll_off = gcsh_kern_ll_offset(L, o),
        .window_bytes = gcsh_kern_window_bytes(o), .slots = gcsh_ll_slots(o->comm->size),
    };
}

int gcsh_kern_run_ll(lua_State *L, const gcsh_kargs *a, const void *in)
{
    gcsh_kll_args k = ll_args(L, a, in);
    return gcsh_kern_backend(L)->ll_allreduce(gcsh_ctx_of(L), a->o->impl, &a->o->desc, &k);
}

/* one-shot with the ready flags in the data (core/kll.h): no barrier */
const char *gcsh_kalgo_run_ll(lua_State *L, const gcsh_kargs *a)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_symobj *o = a->o;
    size_t es = gcsh_dtype_size(o->dtype);
    if (a->n * es > GCSH_LL_MAX_BYTES)
        luaL_error(L, "%s: algo 'll' takes at most %I bytes (n must be 1..%I for %s), got n = %I "
                      "(%I bytes); oneshot and twoshot take any n",
                   a->fname, (lua_Integer)GCSH_LL_MAX_BYTES, (lua_Integer)(GCSH_LL_MAX_BYTES / es),
                   gcsh_dtype_name(o->dtype), (lua_Integer)a->n, (lua_Integer)(a->n * es));
    if (!gcsh_kern_backend(L)->ll_allreduce)
        luaL_error(L, "%s: algo 'll' is not available on the %s backend", a->fname,
                   ctx->be->name);
    gcsh_comm_check *cc = gcsh_kern_enter_checked(L, a, "ll", -1, 1);
    gcsh_check_leave(L, cc, gcsh_kern_run_ll(L, a, NULL));
    return "ll";
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
