/* Who uses a resource besides its handle: a resource (tensor storage, a
 * window or signal set, a communicator, a transfer) keeps a list of users,
 * which the features that hold raw pointers into it register: graph
 * capture (a live graph replays into what it captured) and the persistent
 * all-reduce (its resident reads and writes its window).  A binding asks
 * the resource before it frees or takes it (gcsh_users_refuse), and runs
 * the rank's touch hooks before the host reads or writes memory
 * (gcsh_users_touch); it never names the features, which sit above it.
 *
 * A resource is its raw pointer (what the graph's capture keeps); the
 * lists live in the Lua registry, weak in their users, so a user that is
 * collected leaves them, and a user's kind says in words why it refuses. */
#ifndef GCSH_BIND_USERS_H
#define GCSH_BIND_USERS_H

#include <lua.h>

/* What a user is.  refuses: pushes the error text refusing `what` on the
 * resource and returns 1, or returns 0 when the user does not stand in its
 * way (the user's handle is at idx).  exclusive: the caller wants the
 * resource to itself (a resident's LL area), not only to free it. */
typedef struct gcsh_user_kind {
    int (*refuses)(lua_State *L, int idx, const char *what, int exclusive);
} gcsh_user_kind;

/* The value at idx (a full userdata) uses resource, as a user of kind k,
 * until gcsh_users_remove. */
void gcsh_users_add(lua_State *L, const void *resource, int idx, const gcsh_user_kind *k);
/* The value at idx no longer uses resource. */
void gcsh_users_remove(lua_State *L, const void *resource, int idx);

/* Raises the first registered user's refusal of `what` on resource (NULL:
 * none): "<what>: graph #2 (captured at stdin:1) uses it ...". */
void gcsh_users_refuse(lua_State *L, const void *resource, const char *what);
/* The same, for a caller that needs the resource to itself. */
void gcsh_users_refuse_shared(lua_State *L, const void *resource, const char *what);

/* Whether some user of resource would refuse its free (a live graph, a
 * running resident): the question, without the error. */
int gcsh_users_refusing(lua_State *L, const void *resource);

/* Before the host reads or writes memory: what must finish first (work a
 * resident was rung for).  A hook raises on failure; each is registered
 * once, at most GCSH_TOUCH_MAX. */
typedef void (*gcsh_touch_hook)(lua_State *L);
void gcsh_users_on_touch(lua_State *L, gcsh_touch_hook hook);
void gcsh_users_touch(lua_State *L);

#endif
