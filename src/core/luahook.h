/* The rank's Lua debug hook has one owner, which its users share (as
 * lua.c's lstop is the interpreter's one hook, and Redis multiplexes its
 * script timeout and its debugger on one): each user arms its own part,
 * with its mask, and the owner installs one hook that runs every armed
 * part, in the order of enum gcsh_luahook_user (the sample before the
 * stop, so a line sampled as an interrupt lands is still reported).  Disarming a part leaves
 * the others armed: no user replaces another's hook, so none has to check
 * for another's work (an interrupt armed while the line sample runs stays
 * armed).  The users: os.exit (l_shell.c), the interrupt (worker.c), the
 * line sample of a hang report (where.c).
 *
 * Arming and disarming may come from the watcher thread while the worker
 * runs Lua (lua_sethook may be called asynchronously); the armed set is
 * atomic, and a part disarmed while another is armed never takes that one
 * down. */
#ifndef GCSH_CORE_LUAHOOK_H
#define GCSH_CORE_LUAHOOK_H

#include <stdatomic.h>

#include <lua.h>

typedef enum gcsh_luahook_user {
    GCSH_LUAHOOK_EXIT,   /* os.exit: every instruction raises the exit token again */
    GCSH_LUAHOOK_SAMPLE, /* a hang report: the running line, once */
    GCSH_LUAHOOK_STOP,   /* an interrupt: the next instruction raises "interrupted!" */
    GCSH_LUAHOOK_USERS
} gcsh_luahook_user;

#define GCSH_LUAHOOK_ALL ((1u << GCSH_LUAHOOK_USERS) - 1)

/* The owner's state, one per rank (gcsh_ctx.luahook). */
typedef struct gcsh_luahook {
    atomic_uint armed;                          /* bit i: user i is armed */
    _Atomic(lua_Hook) fn[GCSH_LUAHOOK_USERS];   /* each user's part */
    atomic_int mask[GCSH_LUAHOOK_USERS];        /* the events it needs */
} gcsh_luahook;

/* Arms user's part fn on the rank's state (ctx->L) and on L when it is
 * another (a coroutine that must stop too), with the events of mask
 * (LUA_MASKCOUNT with a count of 1, and LUA_MASKCALL/RET). */
void gcsh_luahook_arm(lua_State *L, gcsh_luahook_user user, lua_Hook fn, int mask);
/* Disarms the users in the bit set users (1u << user; GCSH_LUAHOOK_ALL)
 * on the rank's state and on L; the hook goes when none is left. */
void gcsh_luahook_disarm(lua_State *L, unsigned users);

#endif
