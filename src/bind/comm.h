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

/* c:window() and c:signals() are those types' constructors: each type's
 * file adds its one to comm's methods as it opens (gcsh_add_methods, after
 * comm's luaopen), so l_comm.c names neither. */

#endif
