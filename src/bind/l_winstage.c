/* The "winstage" Lua type: a window's registration, one stage at a time.
 * The C half of step.window (lua/gcsh/step_window.lua prints the stages and
 * checks the window at the end); not a global: require("gcsh.winstage").
 *
 *   s = require("gcsh.winstage").new(c, n [, dtype="f32" [, {kind=}]])
 *               local: the arguments are checked here, with errors naming
 *               step.window's arguments; nothing is registered yet
 *   s:next()    collective: the next stage; returns its step number
 *               (1-based), its name and every rank's report of it (a table
 *               of strings in rank order)
 *   s:run([done])  collective: every stage left; appends {step=, name=,
 *               reports=} to the list done (or a new one) after each, so
 *               what ran is there even when a later stage fails; returns it
 *   s:reset()   collective: releases what is registered (the window too,
 *               once made) and goes back to step 0; :free() and __close
 *               are the same
 *   s.step s.steps s.kind s.n s.dtype s.seq s.window s.names s.comm
 *
 * The steps are the check (step 1: every rank's proposal agrees, symmem.h)
 * and the backend's stages (winbuild.h), run by the very functions
 * c:window() runs back to back.  What a stepper adds is one check per call:
 * between two calls any Lua may have run, so next() first makes sure
 * (fingerprint "window:step", count = the step) that every rank is at the
 * same step of the same window; run() checks once, then runs the rest as
 * c:window() does.  A stage that fails, or in which any rank saw Ctrl-C, is
 * undone on every rank and the stepper goes back to step 0.
 *
 * Layout follows liolib.c: metatable "winstage", meth[] and metameth[];
 * __gc only lets go (a registration dropped part-way stays registered, is
 * reported, and is freed at exit, as windows are). */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "wire/collcheck.h"
#include "bind/comm.h"
#include "bind/graph.h"
#include "bind/symmem.h"

#define WINSTAGE_MT "winstage"
#define FNAME "step.window"
/* The user values of a stepper's userdata. */
enum { UV_COMM = 1, UV_WINDOW = 2 };

typedef struct winstage {
    gcsh_symobj *o;                /* the registration; NULL at step 0 */
    gcsh_sym_proposal p;           /* the arguments, as read once (no problem) */
    gcsh_dtype dt;
    gcsh_sym_size size;
    const gcsh_window_plan *plan;
    int step;                      /* steps done: 0 .. steps */
} winstage;

static winstage *check_stager(lua_State *L, int idx)
{
    return luaL_checkudata(L, idx, WINSTAGE_MT);
}

static int steps_of(const winstage *s)
{
    return s->plan->n + 1;
}

static const char *step_name(const winstage *s, int step)
{
    return step == 1 ? "check" : s->plan->name[step - 2];
}

/* Pushes the stepper's comm; returns it checked (freed, aborted: raises). */
static lcomm *push_comm(lua_State *L, int ud)
{
    lua_getiuservalue(L, ud, UV_COMM);
    return gcsh_arg_comm(L, -1);
}

/* Lets go of the registration (whatever it still holds stays in the
 * registry: symmem.h) and goes back to step 0. */
static void forget(lua_State *L, int ud, winstage *s)
{
    gcsh_symobj *o = s->o;
    s->o = NULL;
    s->step = 0;
    lua_pushnil(L);
    lua_setiuservalue(L, ud, UV_WINDOW);
    gcsh_sym_handle_gone(L, o);
}

/* ---- creation ------------------------------------------------------------ */

static int winstage_new(lua_State *L)
{
    if (!luaL_testudata(L, 1, GCSH_COMM_MT))
        return luaL_error(L, "bad argument #1 to '" FNAME "' (comm expected, got %s)",
                          luaL_typename(L, 1));
    gcsh_arg_comm(L, 1);
    gcsh_sym_require_windows(L, FNAME);
    winstage args;
    memset(&args, 0, sizeof args);
    args.dt = gcsh_window_args(L, 2, FNAME, 2, &args.p, &args.size);
    if (args.p.problem[0]) /* the same as c:window would say, in step.window's terms */
        return luaL_error(L, "%s", args.p.problem);
    args.plan = gcsh_ctx_of(L)->be->win->create_plan(args.p.kind);
    lua_settop(L, 1); /* the readers leave strings behind */
    winstage *s = lua_newuserdatauv(L, sizeof *s, 2);
    *s = args;
    luaL_setmetatable(L, WINSTAGE_MT);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, 2, UV_COMM);
    return 1;
}

/* ---- the steps ----------------------------------------------------------- */

static void push_reports(lua_State *L, const char *reports, int size)
{
    lua_createtable(L, size, 0);
    for (int r = 0; r < size; r++) {
        const char *text = reports + (size_t)r * GCSH_STAGE_REPORT_LEN;
        lua_pushlstring(L, text, strnlen(text, GCSH_STAGE_REPORT_LEN));
        lua_rawseti(L, -2, r + 1);
    }
}

/* Where the fingerprints were compared, from every rank's path (the same
 * words on every rank: gcsh_sym_agree or-ed them).  A rank late to post
 * sends its members to rank 0 (collcheck.h), and under load some may pass
 * on the board while others escalate: both are said. */
static const char *fingerprint_path(uint32_t checked_by)
{
    switch (checked_by) {
    case GCSH_CHECKED_BOARD:
        return "fingerprints agree: compared on the node's check board";
    case GCSH_CHECKED_COORDINATOR:
        return "fingerprints agree: compared by rank 0";
    case GCSH_CHECKED_BOARD | GCSH_CHECKED_COORDINATOR:
        return "fingerprints agree: compared on the node's check board and by rank 0";
    default:
        return "fingerprints: none (.check off)";
    }
}

/* What the check did: the same on every rank (the proposals agreed, and
 * checked_by holds every rank's path). */
static void push_check_report(lua_State *L, const winstage *s, int size, uint32_t checked_by)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    size_t kept = gcsh_kern_reserved_bytes(ctx, s->size.bytes, s->o->comm->size);
    char alloc[32], data[32], kern[32], gran[32], text[GCSH_STAGE_REPORT_LEN];
    snprintf(text, sizeof text,
             "every rank asks for window #%llu: %lld %s, kind %s\n"
             "%s\n"
             "proposals exchanged: n, dtype, kind and seq agree\n"
             "%s per rank: %s of data + %s of kernel state\n"
             "  (ll slots and sync words), rounded up to the %s granularity",
             (unsigned long long)s->o->seq, (long long)s->p.n, s->p.dtype, s->p.kind,
             fingerprint_path(checked_by),
             gcsh_format_bytes(s->size.alloc, alloc, sizeof alloc),
             gcsh_format_bytes(s->size.bytes, data, sizeof data),
             gcsh_format_bytes(kept, kern, sizeof kern),
             gcsh_format_bytes(s->size.gran, gran, sizeof gran));
    /* no exchange of its own: one more collective here, after the check,
     * would be a place where an interrupt strands a rank; the proposals'
     * exchange already carried every rank's path */
    lua_createtable(L, size, 0);
    for (int r = 0; r < size; r++) {
        lua_pushstring(L, text);
        lua_rawseti(L, -2, r + 1);
    }
}

/* Step 1: a record for the arguments, and the check.  A failed check
 * leaves an unchecked record, which the next start or the stepper's end
 * gives back (it holds host memory only). */
static void step_check(lua_State *L, int ud, winstage *s, int comm_idx, lcomm *lc)
{
    if (s->o)
        forget(L, ud, s);
    gcsh_sym_proposal p = s->p;
    gcsh_symobj *o = gcsh_sym_prepare(L, lc, &p, s->dt, &s->size);
    if (o) {
        s->o = o;
        o->handles = 1;
    }
    gcsh_sym_check_stage(L, comm_idx, o, &p);
    s->step = 1;
    push_check_report(L, s, lc->size, p.checked_by);
}

/* The next backend stage; after the last, the window's handle. */
static void step_stage(lua_State *L, int ud, winstage *s, lcomm *lc)
{
    char *reports = lua_newuserdatauv(L, (size_t)lc->size * GCSH_STAGE_REPORT_LEN, 0);
    gcsh_symobj *o = s->o;
    if (gcsh_sym_run_stage(L, o, reports) != 0) {
        int aborted = o->build.aborted;
        forget(L, ud, s);
        gcsh_sym_stage_failed(L, &lc->chk, aborted);
    }
    s->step++;
    if (o->impl) {
        gcsh_symobj **h = gcsh_sym_push_handle(L, GCSH_WINDOW_MT);
        *h = o;
        o->handles++;
        lua_setiuservalue(L, ud, UV_WINDOW);
    }
    push_reports(L, reports, lc->size);
    lua_remove(L, -2); /* the buffer */
}

/* Every rank is at the same step of the same registration (collcheck.h). */
static void check_step(lua_State *L, const winstage *s, lcomm *lc, const char *op)
{
    gcsh_graph_refuse_now(L, "step.window (a window's registration)",
                          "make windows before the capture");
    gcsh_fingerprint fp;
    gcsh_fp_init(&fp, &lc->chk, op);
    fp.window = s->o->seq;
    fp.count = s->step;
    snprintf(fp.extra, sizeof fp.extra, "%s", s->p.kind);
    gcsh_check_enter(L, &lc->chk, &fp);
    gcsh_check_leave(L, &lc->chk, 0);
}

/* One step: pushes the reports table.  What it says (addresses, handles,
 * fds, the path a check took) differs between runs: a replay (gcsh --replay)
 * does not compare it. */
static void one_step(lua_State *L, int ud, winstage *s, int comm_idx, lcomm *lc)
{
    gcsh_ctx_of(L)->output_varies = 1;
    if (s->step == 0)
        step_check(L, ud, s, comm_idx, lc);
    else
        step_stage(L, ud, s, lc);
}

static int winstage_next(lua_State *L)
{
    winstage *s = check_stager(L, 1);
    if (s->step == steps_of(s))
        return luaL_error(L, FNAME ": all %d steps are done (st:reset() starts again)",
                          steps_of(s));
    lcomm *lc = push_comm(L, 1);
    int comm_idx = lua_gettop(L);
    if (s->step > 0)
        check_step(L, s, lc, "window:step");
    one_step(L, 1, s, comm_idx, lc);
    lua_pushinteger(L, s->step);
    lua_pushstring(L, step_name(s, s->step));
    lua_rotate(L, -3, 2); /* step, name, reports */
    return 3;
}

static int winstage_run(lua_State *L)
{
    winstage *s = check_stager(L, 1);
    if (lua_isnoneornil(L, 2))
        lua_newtable(L);
    else
        luaL_checktype(L, 2, LUA_TTABLE);
    lua_settop(L, 2);
    int list = 2;
    if (s->step == steps_of(s))
        return 1;
    lcomm *lc = push_comm(L, 1);
    int comm_idx = lua_gettop(L);
    if (s->step > 0)
        check_step(L, s, lc, "window:run");
    while (s->step < steps_of(s)) {
        one_step(L, 1, s, comm_idx, lc);
        lua_createtable(L, 0, 3);
        lua_rotate(L, -2, 1);
        lua_setfield(L, -2, "reports");
        lua_pushinteger(L, s->step);
        lua_setfield(L, -2, "step");
        lua_pushstring(L, step_name(s, s->step));
        lua_setfield(L, -2, "name");
        lua_rawseti(L, list, (lua_Integer)luaL_len(L, list) + 1);
    }
    lua_settop(L, list);
    return 1;
}

/* Releases what the stepper registered, on every rank: the window (checked
 * like w:free()), or the stages run so far (checked as "window:reset"). */
static int winstage_reset(lua_State *L)
{
    winstage *s = check_stager(L, 1);
    gcsh_symobj *o = s->o;
    if (o && o->impl)
        gcsh_sym_free(L, o);
    else if (o)
        gcsh_sym_abort_build(L, o);
    if (o)
        forget(L, 1, s);
    return 0;
}

/* ---- fields and metamethods ---------------------------------------------- */

static void push_names(lua_State *L, const winstage *s)
{
    lua_createtable(L, steps_of(s), 0);
    for (int i = 1; i <= steps_of(s); i++) {
        lua_pushstring(L, step_name(s, i));
        lua_rawseti(L, -2, i);
    }
}

static int winstage_index(lua_State *L)
{
    winstage *s = check_stager(L, 1);
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL)
        return 1;
    const char *key = lua_tostring(L, 2);
    if (!key)
        lua_pushnil(L);
    else if (strcmp(key, "step") == 0)
        lua_pushinteger(L, s->step);
    else if (strcmp(key, "steps") == 0)
        lua_pushinteger(L, steps_of(s));
    else if (strcmp(key, "kind") == 0)
        lua_pushstring(L, s->p.kind);
    else if (strcmp(key, "n") == 0)
        lua_pushinteger(L, (lua_Integer)s->p.n);
    else if (strcmp(key, "dtype") == 0)
        lua_pushstring(L, s->p.dtype);
    else if (strcmp(key, "seq") == 0 && s->step > 0)
        lua_pushinteger(L, (lua_Integer)s->o->seq);
    else if (strcmp(key, "window") == 0)
        lua_getiuservalue(L, 1, UV_WINDOW);
    else if (strcmp(key, "names") == 0)
        push_names(L, s);
    else if (strcmp(key, "comm") == 0)
        lua_getiuservalue(L, 1, UV_COMM);
    else
        lua_pushnil(L);
    return 1;
}

static int winstage_gc(lua_State *L)
{
    winstage *s = check_stager(L, 1);
    gcsh_symobj *o = s->o;
    s->o = NULL;
    gcsh_sym_handle_gone(L, o);
    return 0;
}

static int winstage_tostring(lua_State *L)
{
    winstage *s = check_stager(L, 1);
    if (s->step > 0)
        lua_pushfstring(L, "winstage(register-%s, window #%I, step %d of %d)", s->p.kind,
                        (lua_Integer)s->o->seq, s->step, steps_of(s));
    else
        lua_pushfstring(L, "winstage(register-%s, step 0 of %d)", s->p.kind, steps_of(s));
    return 1;
}

static const luaL_Reg meth[] = {
    {"next", winstage_next},
    {"run", winstage_run},
    {"reset", winstage_reset},
    {"free", winstage_reset},
    {NULL, NULL},
};

static const luaL_Reg metameth[] = {
    {"__index", NULL}, /* placeholder: gcsh_new_type sets it */
    {"__gc", winstage_gc},
    {"__close", winstage_reset},
    {"__tostring", winstage_tostring},
    {NULL, NULL},
};

int luaopen_gcsh_winstage(lua_State *L)
{
    gcsh_new_type(L, WINSTAGE_MT, meth, metameth, winstage_index);
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, winstage_new);
    lua_setfield(L, -2, "new");
    return 1;
}
