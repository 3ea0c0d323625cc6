/* The tensor binding over non-host memory, with a fake "device" backend.
 *
 * The fake device keeps every byte XOR-scrambled, and only its own mem ops
 * unscramble: a binding that read or wrote device memory directly, instead
 * of going through mem->copy / fill / arange / rand, would see garbage.  The
 * same Lua checks then run on the host backend, and both must agree. */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "core/gcsh.h"
#include "host/host.h"
#include "bind/libs.h"
#include "bind/tensor.h"
#include "unit.h"

#define SCRAMBLE 0x5a
#define FAKE_DEVICE 3 /* the ordinal the fake memory reports */

typedef struct fake_state {
    int copies_to_host, copies_to_device, copies_on_device;
} fake_state;

static void scramble(void *p, size_t bytes)
{
    unsigned char *b = p;
    for (size_t i = 0; i < bytes; i++)
        b[i] ^= SCRAMBLE;
}

static int fake_alloc(gcsh_ctx *ctx, size_t bytes, void **out, int *loc)
{
    int host_loc;
    if (gcsh_host_mem_ops.alloc(ctx, bytes, out, &host_loc) != 0)
        return -1;
    *loc = FAKE_DEVICE;
    return 0;
}

static void fake_release(gcsh_ctx *ctx, void *p, int loc)
{
    (void)loc;
    gcsh_host_mem_ops.release(ctx, p, GCSH_LOC_HOST);
}

/* Byte-wise XOR does not depend on the offset, so views need nothing special. */
static int fake_copy(gcsh_ctx *ctx, void *dst, int dst_loc, const void *src, int src_loc,
                     size_t bytes)
{
    fake_state *fs = ctx->be_state;
    memmove(dst, src, bytes);
    if (dst_loc == GCSH_LOC_HOST && src_loc == FAKE_DEVICE) {
        scramble(dst, bytes);
        fs->copies_to_host++;
    } else if (dst_loc == FAKE_DEVICE && src_loc == GCSH_LOC_HOST) {
        scramble(dst, bytes);
        fs->copies_to_device++;
    } else {
        fs->copies_on_device++;
    }
    return 0;
}

static int fake_fill(gcsh_ctx *ctx, void *p, int loc, gcsh_dtype dt, size_t n, gcsh_scalar v)
{
    (void)loc;
    gcsh_host_mem_ops.fill(ctx, p, GCSH_LOC_HOST, dt, n, v);
    scramble(p, n * gcsh_dtype_size(dt));
    return 0;
}

static int fake_arange(gcsh_ctx *ctx, void *p, int loc, gcsh_dtype dt, size_t n,
                       gcsh_scalar start, gcsh_scalar step)
{
    (void)loc;
    gcsh_host_mem_ops.arange(ctx, p, GCSH_LOC_HOST, dt, n, start, step);
    scramble(p, n * gcsh_dtype_size(dt));
    return 0;
}

static int fake_rand(gcsh_ctx *ctx, void *p, int loc, gcsh_dtype dt, size_t n, uint64_t seed)
{
    (void)loc;
    gcsh_host_mem_ops.rand(ctx, p, GCSH_LOC_HOST, dt, n, seed);
    scramble(p, n * gcsh_dtype_size(dt));
    return 0;
}

static const gcsh_mem_ops fake_mem = {
    .alloc = fake_alloc,
    .release = fake_release,
    .copy = fake_copy,
    .fill = fake_fill,
    .arange = fake_arange,
    .rand = fake_rand,
};

static const gcsh_backend fake_backend = {.name = "fake", .mem = &fake_mem};

/* Runs with globals WHERE ("host" or "cuda:3"); returns a few results in
 * the global R for the C side to compare between backends. */
static const char *checks =
    "local n = 300001 -- f64: 2.4 MB, more than one 1 MiB staging chunk\n"
    "local t = tensor.new(n, 'f64'):arange()\n"
    "assert(t.where == WHERE, 'where: ' .. t.where)\n"
    "assert(t:sum() == n * (n - 1) / 2, 'sum ' .. t:sum())\n"
    "assert(t[0] == 0 and t[n - 1] == n - 1, 'element reads')\n"
    "t[7] = -3.5\n"
    "assert(t[7] == -3.5 and t[6] == 6 and t[8] == 8, 'element write')\n"
    "local tt = t:totable()\n"
    "assert(#tt == n and tt[8] == -3.5 and tt[n] == n - 1, 'totable')\n"
    "assert(tostring(t) == 'tensor(f64, 300001, ' .. WHERE .. ') [0, 1, 2, 3, 4, 5, ..., "
    "299995, 299996, 299997, 299998, 299999, 300000]', tostring(t))\n"
    "local u = tensor.new(n, 'f64'):copy(t)\n"
    "assert(u:equal(t) and u:allclose(t) and u:maxdiff(t) == 0, 'copy, compare')\n"
    "u[n - 1] = 0\n"
    "assert(not u:equal(t) and u:maxdiff(t) == n - 1, 'difference in the last chunk')\n"
    "local v = t:view(262140, 10)\n"
    "assert(v[0] == 262140 and v:sum() == 10 * 262140 + 45, 'view across a chunk edge')\n"
    "v:view(2, 3):fill(1)\n"
    "assert(t[262142] == 1 and t[262145] == 262145, 'fill of a view of a view')\n"
    "local f = tensor.from({1, 2, 300}, 'u32')\n"
    "assert(f.where == WHERE and f[2] == 300 and f:sum() == 303, 'from')\n"
    "local h = tensor.new(5, 'f16'):fill(1/3)\n"
    "assert(h[4] == 0.333251953125, 'f16 element')\n"
    "local r = tensor.new(1000, 'bf16'):rand(9)\n"
    "local ok = pcall(function() return t[n] end)\n"
    "assert(not ok, 'bounds still checked')\n"
    "t:free()\n"
    "assert(not pcall(function() return v[0] end), 'view of freed device tensor')\n"
    "R = {u:checksum(), r:checksum(), f:checksum(), h:checksum(), u:sum(), tostring(r):match('%) (.*)$')}\n";

static int run_checks(const gcsh_backend *be, const char *where, char results[6][128])
{
    /* the fake backend's state, or the host backend's own (its persistent
     * all-reduce's drain reads it before every host read) */
    union { fake_state fake; gcsh_host_state host; } state;
    memset(&state, 0, sizeof state);
    gcsh_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.be = be;
    ctx.be_state = &state;
    lua_State *L = luaL_newstate();
    *(gcsh_ctx **)lua_getextraspace(L) = &ctx;
    ctx.L = L;
    luaL_openlibs(L);
    gcsh_open_libs(L);
    lua_pushstring(L, where);
    lua_setglobal(L, "WHERE");
    int ok = luaL_dostring(L, checks) == LUA_OK;
    CHECK(ok, "%s: %s", where, ok ? "" : lua_tostring(L, -1));
    if (ok) {
        lua_getglobal(L, "R");
        for (int i = 0; i < 6; i++) {
            lua_geti(L, -1, i + 1);
            snprintf(results[i], 128, "%s", luaL_tolstring(L, -1, NULL));
            CHECK(strcmp(results[i], "nil") != 0, "%s: result %d is nil", where, i);
            lua_pop(L, 2);
        }
    }
    lua_close(L);
    if (be == &fake_backend) {
        CHECK(state.fake.copies_to_host > 10, "device reads staged through mem->copy (%d)",
              state.fake.copies_to_host);
        CHECK(state.fake.copies_to_device >= 3, "element writes and from() copied to the device (%d)",
              state.fake.copies_to_device);
        CHECK(state.fake.copies_on_device >= 1, "tensor copy stays on the device (%d)",
              state.fake.copies_on_device);
    }
    return ok;
}

/* gcsh_arg_redop / gcsh_arg_dtype as other bindings call them. */
static int call_check_redop(lua_State *L)
{
    lua_pushinteger(L, gcsh_arg_redop(L, 1, GCSH_OP_SUM));
    return 1;
}

static int call_check_dtype(lua_State *L)
{
    lua_pushinteger(L, gcsh_arg_dtype(L, 1, GCSH_F32));
    return 1;
}

static void test_option_checks(void)
{
    lua_State *L = luaL_newstate();
    struct { lua_CFunction fn; const char *arg; int want; const char *err; } c[] = {
        {call_check_redop, "max", GCSH_OP_MAX, NULL},
        {call_check_redop, NULL, GCSH_OP_SUM, NULL},
        {call_check_redop, "mean", -1, "unknown op 'mean' (valid: sum prod min max avg)"},
        {call_check_dtype, "bf16", GCSH_BF16, NULL},
        {call_check_dtype, NULL, GCSH_F32, NULL},
        {call_check_dtype, "float", -1, "unknown dtype 'float' (valid: f64 f32 f16 bf16 i64"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        lua_pushcfunction(L, c[i].fn);
        if (c[i].arg)
            lua_pushstring(L, c[i].arg);
        int rc = lua_pcall(L, c[i].arg ? 1 : 0, 1, 0);
        if (c[i].err)
            CHECK(rc != LUA_OK && strstr(lua_tostring(L, -1), c[i].err), "check %zu: %s", i,
                  lua_tostring(L, -1));
        else
            CHECK(rc == LUA_OK && lua_tointeger(L, -1) == c[i].want, "check %zu", i);
        lua_pop(L, 1);
    }
    lua_close(L);
}

int main(void)
{
    test_option_checks();
    char host[6][128], dev[6][128];
    int ok_host = run_checks(&gcsh_host_backend, "host", host);
    int ok_dev = run_checks(&fake_backend, "cuda:3", dev);
    if (ok_host && ok_dev)
        for (int i = 0; i < 6; i++)
            CHECK(strcmp(host[i], dev[i]) == 0, "result %d: host %s, device %s", i, host[i], dev[i]);
    UNIT_END();
}
