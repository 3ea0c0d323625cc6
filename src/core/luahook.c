/* The one owner of the rank's Lua debug hook (luahook.h). */
#include "core/gcsh.h"
#include "core/luahook.h"

static int armed_mask(gcsh_luahook *h, unsigned armed)
{
    int mask = 0;
    for (int u = 0; u < GCSH_LUAHOOK_USERS; u++)
        if (armed & (1u << u))
            mask |= atomic_load(&h->mask[u]);
    return mask;
}

/* The installed hook: every armed part, in the users' order.  A part may
 * raise (and then the parts after it wait for the next event). */
static void run_armed(lua_State *L, lua_Debug *ar)
{
    gcsh_luahook *h = &gcsh_ctx_of(L)->luahook;
    unsigned armed = atomic_load(&h->armed);
    for (int u = 0; u < GCSH_LUAHOOK_USERS; u++) {
        lua_Hook fn = atomic_load(&h->fn[u]);
        if ((armed & (1u << u)) && fn)
            fn(L, ar);
    }
}

/* Installs the hook for what is armed now on L, or removes it. */
static void install(lua_State *L, gcsh_luahook *h)
{
    unsigned armed = atomic_load(&h->armed);
    if (armed)
        lua_sethook(L, run_armed, armed_mask(h, armed), 1);
    else
        lua_sethook(L, NULL, 0, 0);
}

void gcsh_luahook_arm(lua_State *L, gcsh_luahook_user user, lua_Hook fn, int mask)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_luahook *h = &ctx->luahook;
    atomic_store(&h->fn[user], fn);
    atomic_store(&h->mask[user], mask);
    atomic_fetch_or(&h->armed, 1u << user);
    install(ctx->L, h);
    if (L != ctx->L)
        install(L, h);
}

void gcsh_luahook_disarm(lua_State *L, unsigned users)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_luahook *h = &ctx->luahook;
    atomic_fetch_and(&h->armed, ~users);
    /* Installing from the armed set after the change: a user armed by the
     * other thread between the two is installed again by this call or by
     * its own, whichever runs last, since both read the set after it
     * changed. */
    install(ctx->L, h);
    if (L != ctx->L)
        install(L, h);
}
