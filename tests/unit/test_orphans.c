/* Requests an interrupt abandoned keep their memory alive (core/orphans.h):
 * the orphan list on its own, then through the host backend, whose tensor
 * and window frees wait for MPI.  One process: a receive from self that
 * nobody has sent to yet stands in for a collective whose peers are late,
 * and the send that follows for the progress that resumes. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <mpi.h>

#include "bind/tensor.h"
#include "core/orphans.h"
#include "rank/rank.h"
#include "host/host.h"
#include "unit.h"

#define TAG 99

static int freed;
static void count_free(void *p)
{
    freed++;
    free(p);
}

/* A receive of n bytes into buf that waits for send_to_self. */
static MPI_Request pending_recv(MPI_Comm comm, void *buf, int n)
{
    MPI_Request req;
    MPI_Irecv(buf, n, MPI_BYTE, 0, TAG, comm, &req);
    return req;
}

static void send_to_self(MPI_Comm comm, const char *text)
{
    MPI_Send(text, (int)strlen(text) + 1, MPI_BYTE, 0, TAG, comm);
}

static void test_list(MPI_Comm comm)
{
    gcsh_ctx bare = {0};
    gcsh_orphans *o = gcsh_orphans_of(&bare);
    char *buf = calloc(1, 64);
    gcsh_range r = {buf, 64};
    CHECK(gcsh_orphans_adopt(o, pending_recv(comm, buf, 64), &r, 1, NULL, MPI_DATATYPE_NULL) == 0,
          "adopt");
    CHECK(gcsh_orphans_touch(o, buf + 10, 4), "the request touches its buffer");
    CHECK(!gcsh_orphans_touch(o, buf + 64, 4), "and nothing past it");
    freed = 0;
    gcsh_orphans_free(o, buf, 64, count_free);
    CHECK(freed == 0, "a free waits while the request is pending");
    gcsh_orphans_reap(o);
    CHECK(freed == 0 && gcsh_orphans_pending(o) == 1, "still pending after a reap");
    send_to_self(comm, "late data");
    CHECK(strcmp(buf, "late data") == 0, "MPI wrote into the kept buffer: '%s'", buf);
    gcsh_orphans_reap(o);
    CHECK(freed == 1 && gcsh_orphans_pending(o) == 0, "freed once the request completed");
    char *other = malloc(8);
    gcsh_orphans_free(o, other, 8, count_free);
    CHECK(freed == 2, "memory no request touches is freed at once");
    gcsh_orphans_close(o);
}

/* A tensor (Lua) whose memory an abandoned receive may still write. */
static void test_tensor(gcsh_ctx *ctx, lua_State *L, MPI_Comm comm)
{
    gcsh_tensor *t = gcsh_new_tensor(L, 64, GCSH_U8);
    char *data = gcsh_tensor_data(t);
    lua_setglobal(L, "t");
    gcsh_range r = {data, 64};
    gcsh_orphans_adopt(gcsh_orphans_of(ctx), pending_recv(comm, data, 64), &r, 1, NULL,
                       MPI_DATATYPE_NULL);
    CHECK(luaL_dostring(L, "t:free() t = nil collectgarbage()") == LUA_OK, "free: %s",
          lua_tostring(L, -1));
    /* under ASan, MPI's copy into freed memory is reported here */
    send_to_self(comm, "into the tensor");
    CHECK(strcmp(data, "into the tensor") == 0, "the tensor's memory was kept");
    gcsh_orphans_reap(gcsh_orphans_of(ctx));
    CHECK(gcsh_orphans_pending(gcsh_orphans_of(ctx)) == 0, "then released");
}

/* A window segment: w:free() keeps it while an abandoned request writes a
 * slice (MPI_Win_free would unmap it: SIGSEGV at the send). */
static void test_window(gcsh_ctx *ctx, lua_State *L, MPI_Comm comm)
{
    CHECK(luaL_dostring(L, "w = comm.world():window(4096, 'u8') return w:tensor()") == LUA_OK,
          "window: %s", lua_tostring(L, -1));
    char *slice = gcsh_tensor_data(lua_touserdata(L, -1));
    lua_pop(L, 1);
    gcsh_range r = {slice + 100, 64};
    gcsh_orphans_adopt(gcsh_orphans_of(ctx), pending_recv(comm, slice + 100, 64), &r, 1, NULL,
                       MPI_DATATYPE_NULL);
    CHECK(luaL_dostring(L, "w:free() w = nil collectgarbage()") == LUA_OK, "w:free: %s",
          lua_tostring(L, -1));
    send_to_self(comm, "into the window");
    CHECK(strcmp(slice + 100, "into the window") == 0, "the segment stayed mapped");
    gcsh_orphans_reap(gcsh_orphans_of(ctx));
}

/* The host backend's own wait: an interrupt cancels the receive (MPI can
 * cancel a receive, not a collective), so its buffer is not kept; the
 * communicator is retired all the same. */
static void test_interrupted_recv(gcsh_ctx *ctx)
{
    const gcsh_comm_ops *ops = gcsh_host_backend.comm;
    gcsh_comm_impl *c = NULL;
    CHECK(ops->world(ctx, &c) == 0, "world: %s", ctx->err);
    static char buf[16];
    atomic_store(&ctx->interrupt, GCSH_INTERRUPT);
    CHECK(ops->recv(ctx, c, buf, sizeof buf, GCSH_U8, 0) == -1, "an interrupted recv fails");
    atomic_store(&ctx->interrupt, 0);
    CHECK(strstr(ctx->err, "interrupted") != NULL && strstr(ctx->err, "cancelled") != NULL,
          "says it was cancelled: %s", ctx->err);
    CHECK(!gcsh_orphans_touch(gcsh_orphans_of(ctx), buf, sizeof buf),
          "its buffer is nobody's to keep: MPI will never write it");
    CHECK(ops->aborted(c), "its communicator is retired");
    CHECK(ops->barrier(ctx, c) == -1, "and refuses use");
    ops->release(ctx, c);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    gcsh_ctx ctx = {0};
    gcsh_rank_topology(&ctx);
    CHECK(gcsh_rank_backend(&ctx, "host") == 0, "host backend: %s", ctx.err);
    lua_State *L = gcsh_rank_lua(&ctx);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_SELF, &comm);
    test_list(comm);
    test_tensor(&ctx, L, comm);
    test_window(&ctx, L, comm);
    test_interrupted_recv(&ctx);
    MPI_Comm_free(&comm);
    gcsh_rank_close(&ctx);
    MPI_Finalize();
    UNIT_END();
}
