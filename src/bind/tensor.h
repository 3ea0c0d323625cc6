/* Tensors as other bindings see them (l_comm.c, windows, kernels).
 *
 * A tensor is a view (offset, n, dtype) into a storage.  Storages are reference
 * counted: the tensor that allocated it and every view hold one reference, so
 * a view keeps working after its parent is garbage.  Freeing releases the
 * memory at once and leaves the storage as a tombstone: every view then fails
 * with "attempt to use a freed <owner>".
 *
 * Who frees what:
 *   - t:free() and __close on the handle that allocated the storage release
 *     the memory now (every view then fails); on a view, or on a tensor over
 *     a window's memory, they only drop that handle;
 *   - __gc only drops the handle's reference, so views outlive their parent;
 *   - the last reference frees the storage struct itself with free(), so a
 *     storage must come from malloc (gcsh_storage_new / gcsh_storage_wrap). */
#ifndef GCSH_TENSOR_H
#define GCSH_TENSOR_H

#include <stddef.h>

#include <lua.h>

#include "core/gcsh.h"

typedef struct gcsh_storage gcsh_storage;

struct gcsh_storage {
    int refs;
    void *base;          /* NULL once released */
    size_t bytes;
    int loc;             /* GCSH_LOC_HOST or a CUDA device ordinal */
    const char *owner;   /* "tensor", "window": names it in error messages */
    const char *where;   /* "host", "cuda:0", "window peer 1" for tostring */
    /* Frees base; NULL when someone else (a window) owns the memory. */
    void (*release)(gcsh_ctx *ctx, gcsh_storage *st);
    void *owner_data;    /* for release (e.g. the window) */
    /* Raises when the memory may be read but not written (a window's slice
     * once its communicator was aborted: symmem.c); NULL: always writable. */
    void (*check_write)(lua_State *L, const gcsh_storage *st);
    /* Raises when the memory may not even be read (a window's slice whose
     * mapping went with its aborted communicator: symmem.c); NULL: readable.
     * gcsh_arg_tensor and tostring call it. */
    void (*check_read)(lua_State *L, const gcsh_storage *st);
};

typedef struct gcsh_tensor {
    gcsh_storage *st;
    size_t offset;       /* in elements, from st->base */
    size_t n;
    gcsh_dtype dtype;
    /* 1 on the handle that allocated st (gcsh_new_tensor): its :free()
     * releases the memory; 0 on views and on tensors over someone else's
     * memory, whose :free() only detaches the handle. */
    int owns_memory;
} gcsh_tensor;

#define GCSH_TENSOR_MT "tensor"

/* luaL_checkudata + "attempt to use a freed ..." check, and the storage's
 * check_read. */
gcsh_tensor *gcsh_arg_tensor(lua_State *L, int idx);
/* The same, for a tensor the call writes: raises when its memory is
 * read-only (storage's check_write). */
gcsh_tensor *gcsh_arg_tensor_out(lua_State *L, int idx);
/* Raises when t's memory is read-only (for a tensor already checked). */
void gcsh_tensor_check_write(lua_State *L, const gcsh_tensor *t);
/* Address of element 0 of the view (in the storage's memory space). */
void *gcsh_tensor_data(const gcsh_tensor *t);
size_t gcsh_tensor_bytes(const gcsh_tensor *t);
/* The backend's copy, for copies with a side in host memory: on a
 * stream-ordered backend the rank's queued work is waited for first as a
 * command's end waits (gcsh_check_end_sync: hang reports see it, an
 * interrupt or a peer that failed before joining a queued collective stops
 * it), not inside the driver, where neither reaches.  Raises on failure. */
void gcsh_host_copy(lua_State *L, void *dst, int dst_loc, const void *src, int src_loc,
                    size_t bytes);

/* New storage with refs = 1 owning `bytes` of backend memory (ctx->be->mem
 * alloc; a zero-byte storage still gets a non-NULL base).  NULL on failure,
 * with ctx->err set. */
gcsh_storage *gcsh_storage_new(gcsh_ctx *ctx, size_t bytes, const char *owner);
/* New storage with refs = 1 over memory someone else owns (a window's slice
 * or a peer's): release may be NULL, where is copied.  NULL with ctx->err set
 * when out of memory. */
gcsh_storage *gcsh_storage_wrap(gcsh_ctx *ctx, void *base, size_t bytes, int loc,
                                const char *owner, const char *where,
                                void (*release)(gcsh_ctx *ctx, gcsh_storage *st),
                                void *owner_data);
/* Replaces the `where` text (at most 47 characters are kept). */
void gcsh_storage_set_where(gcsh_storage *st, const char *where);
void gcsh_storage_ref(gcsh_storage *st);
void gcsh_storage_unref(gcsh_ctx *ctx, gcsh_storage *st);
/* Frees the memory now; the storage stays as a tombstone until unreferenced. */
void gcsh_storage_release(gcsh_ctx *ctx, gcsh_storage *st);

/* Pushes a new tensor userdata viewing st (takes a new reference; the caller
 * keeps its own).  The caller has checked offset + n against st->bytes. */
gcsh_tensor *gcsh_push_tensor(lua_State *L, gcsh_storage *st, size_t offset, size_t n,
                              gcsh_dtype dt);
/* Allocates a fresh tensor with the backend and pushes it; raises a Lua
 * error when n exceeds GCSH_TENSOR_MAX_N or the allocation fails. */
gcsh_tensor *gcsh_new_tensor(lua_State *L, size_t n, gcsh_dtype dt);

/* The largest element count a tensor may have (2^40): far above any real
 * buffer, low enough that n * sizeof(element) never overflows. */
#define GCSH_TENSOR_MAX_N ((size_t)1 << 40)

/* Element index idx of t (an integer 0..#t-1; the error names the bound),
 * and a value for an element of dt at arg (integer dtypes: an integer in
 * the dtype's range; the error names it), as t[i] = v checks them. */
size_t gcsh_arg_index(lua_State *L, const gcsh_tensor *t, int idx);
gcsh_scalar gcsh_arg_value(lua_State *L, int arg, gcsh_dtype dt);

/* luaL_checkoption-style helpers that name the argument and the valid set;
 * a missing or nil argument gives def. */
gcsh_dtype gcsh_arg_dtype(lua_State *L, int idx, gcsh_dtype def);
gcsh_redop gcsh_arg_redop(lua_State *L, int idx, gcsh_redop def);

#endif
