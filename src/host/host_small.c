/* Small collectives through the node's shared memory.  See host.h.
 *
 * Why: a non-blocking MPI collective costs about 2 us more a call than the
 * blocking one on the 2-core CI machine (Open MPI 4.1's libnbc builds a
 * schedule per call and is progressed by MPI_Test), and a blocking MPI call
 * cannot be left when a peer never comes (Ctrl-C would not end it).  A
 * communicator whose members all share this node gets a segment of shared
 * memory when it is made; a collective whose every member posts at most
 * `room` bytes goes through it, with the host backend's waits
 * (host_wait.c: they poll the interrupt flag), so it stays interruptible
 * and costs a few cache-line moves (docs/benchmarks.md, "The host
 * backend's per-call cost").
 *
 * The segment: a header and two slots of `room` bytes per member, used in
 * turn.  Call number k of the communicator, on every member:
 *   1. wait until every member consumed call k-2 (nobody reads the slot
 *      of my turn any more: with one slot, waiting for call k-1 made two
 *      meetings of every call, slow where ranks share cores; this wait holds
 *      at the first look, since every member consumed k-2 before it posted
 *      k-1, which I saw), copy what I post into my slot, write my call's
 *      description (what, count, dtype, op, root) and store posted = k
 *      (release);
 *   2. wait until every member posted k (acquire) and compare its
 *      description with mine: ranks that call differently (.check off) get
 *      an error, never a result;
 *   3. read the slots (a reduction combines them in rank order with
 *      MPI_Reduce_local, MPI's own ops on MPI's types, f16/bf16 ours, so
 *      every rank gets the same bits MPI's element-wise semantics give);
 *      store consumed = k.
 * A member that is interrupted, or whose peer failed, returns -1 with the
 * error set; the caller retires the communicator as it does an abandoned MPI
 * request, so the segment is never used again (its mapping stays until the
 * communicator is released; peers that still read it read their own
 * mapping). */
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/env.h"
#include "core/gcsh.h"
#include "core/mpi_try.h"
#include "host/host.h"

#define HEADER_BYTES 128 /* a member's words, apart from its neighbours' lines */
#define NAME_LEN 64

typedef struct header {
    _Atomic uint64_t posted;   /* the last call whose slot and description are written */
    _Atomic uint64_t consumed; /* the last call whose slots this member read */
    uint64_t desc[2][4]; /* per turn (as the slots): what, count, dtype | op << 32, root */
} header;

struct gcsh_host_small {
    unsigned char *base;
    size_t bytes, room;
    int rank, size;
    uint64_t calls; /* calls made; equal on every member */
};

_Static_assert(sizeof(header) <= HEADER_BYTES, "a header fits its line");

static header *header_of(const gcsh_host_small *s, int r)
{
    return (header *)(s->base + (size_t)r * HEADER_BYTES);
}

/* Member r's slot of the call in hand: two per member, used in turn. */
static unsigned char *slot_of(const gcsh_host_small *s, int r)
{
    size_t turn = (size_t)(s->calls & 1);
    return s->base + (size_t)s->size * HEADER_BYTES + ((size_t)r * 2 + turn) * s->room;
}

/* ---- making the segment ----------------------------------------------------- */

/* Whether every member of comm shares this node, as gcsh numbers nodes
 * (GCSH_RANKS_PER_NODE included) and as MPI sees shared memory. */
static int one_node(gcsh_ctx *ctx, MPI_Comm comm, int size, int *out)
{
    *out = 0;
    MPI_Group group, world;
    int *mine = malloc(sizeof *mine * (size_t)size), *theirs = malloc(sizeof *theirs * (size_t)size);
    if (!mine || !theirs) {
        free(mine);
        free(theirs);
        return gcsh_set_error(ctx, "host collectives: out of memory");
    }
    for (int r = 0; r < size; r++)
        mine[r] = r;
    int rc = MPI_Comm_group(comm, &group);
    if (rc == MPI_SUCCESS) {
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        rc = MPI_Group_translate_ranks(group, size, mine, world, theirs);
        MPI_Group_free(&group);
        MPI_Group_free(&world);
    }
    int same = rc == MPI_SUCCESS;
    for (int r = 1; same && r < size; r++)
        same = ctx->node_of[theirs[r]] == ctx->node_of[theirs[0]];
    free(mine);
    free(theirs);
    if (rc != MPI_SUCCESS)
        return gcsh_mpi_failed(ctx, "", "MPI_Group_translate_ranks", rc, __FILE__, __LINE__);
    MPI_Comm shared;
    rc = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
    if (rc != MPI_SUCCESS)
        return gcsh_mpi_failed(ctx, "", "MPI_Comm_split_type", rc, __FILE__, __LINE__);
    int shared_size = 0;
    MPI_Comm_size(shared, &shared_size);
    MPI_Comm_free(&shared);
    *out = same && shared_size == size;
    return 0;
}

/* Maps the segment called name (made by the caller when create): NULL on
 * any failure, which leaves the communicator on MPI alone. */
static unsigned char *map_segment(const char *name, size_t bytes, int create)
{
    int fd = create ? shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600)
                    : shm_open(name, O_RDWR | O_NOFOLLOW, 0);
    if (fd < 0)
        return NULL;
    struct stat st;
    int ok = (!create || ftruncate(fd, (off_t)bytes) == 0) && fstat(fd, &st) == 0 &&
             st.st_uid == geteuid() && (size_t)st.st_size == bytes;
    void *p = ok ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

int gcsh_host_small_open(gcsh_ctx *ctx, MPI_Comm comm, int rank, int size,
                         gcsh_host_small **out)
{
    *out = NULL;
    size_t room = (size_t)gcsh_env_value(GCSH_ENV_HOST_SMALL_BYTES);
    int eligible = 0;
    if (room == 0)
        return 0; /* the same on every rank: the environment is the job's */
    if (one_node(ctx, comm, size, &eligible) != 0)
        return -1;
    if (!eligible)
        return 0;
    room = (room + 63) & ~(size_t)63;
    size_t bytes = (size_t)size * (HEADER_BYTES + 2 * room);
    /* rank 0 makes it under a name nobody can guess, the others map it, and
     * once all did (or any failed) the name goes: nothing stays in /dev/shm */
    struct { int ok; char name[NAME_LEN]; } offer = {0, ""};
    unsigned char *base = NULL;
    uint64_t nonce = 0;
    if (rank == 0 && getrandom(&nonce, sizeof nonce, 0) == (ssize_t)sizeof nonce) {
        snprintf(offer.name, sizeof offer.name, "/gcsh-small-%d-%016llx", (int)getpid(),
                 (unsigned long long)nonce);
        base = map_segment(offer.name, bytes, 1);
        offer.ok = base != NULL;
    }
    int rc = MPI_Bcast(&offer, (int)sizeof offer, MPI_BYTE, 0, comm);
    if (rc == MPI_SUCCESS && rank != 0 && offer.ok)
        base = map_segment(offer.name, bytes, 0);
    int mapped = base != NULL, all = 0;
    if (rc == MPI_SUCCESS)
        rc = MPI_Allreduce(&mapped, &all, 1, MPI_INT, MPI_MIN, comm);
    if (rank == 0 && offer.ok)
        shm_unlink(offer.name);
    if (rc != MPI_SUCCESS || !all) {
        if (base)
            munmap(base, bytes);
        return rc == MPI_SUCCESS ? 0 : gcsh_mpi_failed(ctx, "", "MPI_Bcast", rc, __FILE__, __LINE__);
    }
    gcsh_host_small *s = calloc(1, sizeof *s);
    if (!s) {
        munmap(base, bytes);
        return gcsh_set_error(ctx, "host collectives: out of memory");
    }
    *s = (gcsh_host_small){.base = base, .bytes = bytes, .room = room, .rank = rank, .size = size};
    *out = s;
    return 0;
}

void gcsh_host_small_close(gcsh_host_small *s)
{
    if (!s)
        return;
    munmap(s->base, s->bytes);
    free(s);
}

int gcsh_host_small_fits(const gcsh_host_small *s, size_t bytes)
{
    return s && bytes <= s->room;
}

/* ---- one call ---------------------------------------------------------------- */

static const char *const call_names[] = {
    [GCSH_SMALL_BARRIER] = "barrier",     [GCSH_SMALL_ALLREDUCE] = "allreduce",
    [GCSH_SMALL_BROADCAST] = "broadcast", [GCSH_SMALL_REDUCE] = "reduce",
    [GCSH_SMALL_SCAN] = "scan",           [GCSH_SMALL_ALLGATHER] = "allgather",
    [GCSH_SMALL_REDUCESCATTER] = "reduce_scatter", [GCSH_SMALL_ALLTOALL] = "alltoall",
};

/* "shared-memory call #12": the segment's own count (the check's differs
 * once a call went to MPI) */
static void wait_text(const void *arg, char *buf, size_t len)
{
    snprintf(buf, len, "shared-memory call #%llu", (unsigned long long)*(const uint64_t *)arg);
}

#define INTERRUPTED "collective interrupted while waiting for a peer"

/* Waits until member p's word reaches v. */
static int wait_member(gcsh_ctx *ctx, _Atomic uint64_t *word, int p, uint64_t v,
                       const uint64_t *call)
{
    gcsh_host_note note = {wait_text, call, p, 0};
    return gcsh_host_wait_noted(ctx, word, GCSH_CMP_GE, v, INFINITY, INTERRUPTED, &note);
}

static void describe(char *buf, size_t len, const uint64_t d[4])
{
    int op = (int)(int32_t)(d[2] >> 32), root = (int)(int64_t)d[3];
    int n = snprintf(buf, len, "%s of %llu %s", d[0] < GCSH_SMALL_NCALLS ? call_names[d[0]] : "?",
                     (unsigned long long)d[1], gcsh_dtype_name((gcsh_dtype)(d[2] & 0xffffffffu)));
    if (op >= 0 && n >= 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " (%s)", gcsh_redop_name((gcsh_redop)op));
    if (root >= 0 && n >= 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " to/from root %d", root);
}

/* Steps 1 and 2 of the top of the file. */
static int post_and_gather(gcsh_ctx *ctx, gcsh_host_small *s, const gcsh_small_call *c,
                           const void *post, size_t bytes)
{
    uint64_t k = ++s->calls;
    for (int p = 0; p < s->size; p++)
        if (p != s->rank && k > 2 &&
            wait_member(ctx, &header_of(s, p)->consumed, p, k - 2, &k) != 0)
            return -1;
    header *me = header_of(s, s->rank);
    if (bytes)
        memcpy(slot_of(s, s->rank), post, bytes);
    uint64_t *mine = me->desc[k & 1];
    mine[0] = (uint64_t)c->what;
    mine[1] = (uint64_t)c->count;
    mine[2] = (uint64_t)(uint32_t)c->dtype | (uint64_t)(uint32_t)c->op << 32;
    mine[3] = (uint64_t)(int64_t)c->root;
    atomic_store_explicit(&me->posted, k, memory_order_release);
    for (int p = 0; p < s->size; p++) {
        if (p == s->rank)
            continue;
        if (wait_member(ctx, &header_of(s, p)->posted, p, k, &k) != 0)
            return -1;
        const uint64_t *theirs = header_of(s, p)->desc[k & 1];
        if (memcmp(theirs, mine, sizeof me->desc[0]) != 0) {
            char their_call[96], my_call[96];
            describe(their_call, sizeof their_call, theirs);
            describe(my_call, sizeof my_call, mine);
            return gcsh_set_error(ctx, "ranks called the collective differently: rank %d %s, "
                                       "rank %d %s", p, their_call, s->rank, my_call);
        }
    }
    return 0;
}

static void consumed(gcsh_host_small *s)
{
    atomic_store_explicit(&header_of(s, s->rank)->consumed, s->calls, memory_order_release);
}

/* out (n elements) = slot[first] op ... op slot[last], at offset `at` bytes
 * of each slot, combined as MPI does (MPI_Reduce_local: inout = in op inout)
 * from the last slot down, the same order on every rank. */
static int combine(gcsh_ctx *ctx, gcsh_host_small *s, const gcsh_small_call *c, void *out,
                   int first, int last, size_t at)
{
    size_t bytes = c->count * c->esize;
    memmove(out, slot_of(s, last) + at, bytes);
    for (int p = last - 1; p >= first; p--) {
        int rc = MPI_Reduce_local(slot_of(s, p) + at, out, (int)c->count, c->type, c->mpi_op);
        if (rc != MPI_SUCCESS)
            return gcsh_mpi_failed(ctx, "", "MPI_Reduce_local", rc, __FILE__, __LINE__);
    }
    return 0;
}

int gcsh_host_small_run(gcsh_ctx *ctx, gcsh_host_small *s, const gcsh_small_call *c)
{
    size_t bytes = c->count * c->esize, n = (size_t)s->size;
    const void *post = c->in;
    size_t posted = bytes;
    switch (c->what) {
    case GCSH_SMALL_BARRIER: posted = 0; break;
    case GCSH_SMALL_BROADCAST:
        post = c->out;
        posted = s->rank == c->root ? bytes : 0;
        break;
    case GCSH_SMALL_REDUCESCATTER:
    case GCSH_SMALL_ALLTOALL: posted = bytes * n; break;
    default: break;
    }
    if (post_and_gather(ctx, s, c, post, posted) != 0)
        return -1;
    int rc = 0;
    switch (c->what) {
    case GCSH_SMALL_BARRIER: break;
    case GCSH_SMALL_ALLREDUCE: rc = combine(ctx, s, c, c->out, 0, s->size - 1, 0); break;
    case GCSH_SMALL_REDUCE:
        if (s->rank == c->root)
            rc = combine(ctx, s, c, c->out, 0, s->size - 1, 0);
        break;
    case GCSH_SMALL_SCAN: rc = combine(ctx, s, c, c->out, 0, s->rank, 0); break;
    case GCSH_SMALL_REDUCESCATTER:
        rc = combine(ctx, s, c, c->out, 0, s->size - 1, (size_t)s->rank * bytes);
        break;
    case GCSH_SMALL_BROADCAST:
        if (s->rank != c->root)
            memcpy(c->out, slot_of(s, c->root), bytes);
        break;
    case GCSH_SMALL_ALLGATHER:
        for (int p = 0; p < s->size; p++)
            memmove((char *)c->out + (size_t)p * bytes, slot_of(s, p), bytes);
        break;
    case GCSH_SMALL_ALLTOALL:
        for (int p = 0; p < s->size; p++)
            memcpy((char *)c->out + (size_t)p * bytes, slot_of(s, p) + (size_t)s->rank * bytes,
                   bytes);
        break;
    default: rc = gcsh_set_error(ctx, "host collectives: no shared-memory path for call %d", c->what);
    }
    consumed(s);
    return rc;
}
