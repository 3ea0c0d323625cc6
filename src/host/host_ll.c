/* The host backend's "ll" and "ll128" all-reduces: the protocols of
 * core/kll.h over MPI shared memory, with the cuda kernels' layout
 * (kernels/ll.cu, kernels/ll128.cu).
 *
 * An ll line's two halves are 64-bit words, { data | flag << 32 }, each
 * stored and loaded atomically: a reader that sees the flag in a word sees
 * that word's data, so no barrier and no fence between data and flag is
 * needed, which is the point of the protocol.  An ll128 line's 120 data
 * bytes are stored first and its flag word after them with release; a
 * reader loads the flag word with acquire before the data (what a GPU
 * warp's whole-line store gives the kernel, release and acquire give
 * here).  The reduction itself is the host's
 * job loop (host_kern.c's gcsh_kjob) over the members' contributions, once
 * they are unpacked: the same order and rounding as every other kernel. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gcsh.h"
#include "core/kll.h"
#include "host/host.h"

#define FLAG_MASK ((uint64_t)UINT32_MAX << 32)

typedef struct ll_call {
    const gcsh_window_desc *d;
    const gcsh_kll_args *a;
    size_t bytes, lines;
    size_t line_data, line_bytes; /* the protocol's lines (kll.h) */
    uint32_t flag;
    unsigned set;
} ll_call;

static char *area_of(const ll_call *c, int member)
{
    return (char *)c->d->peer[member] + c->a->ll_off;
}

/* Line `line` of slot `slot` in member's set (ll128's lines in their own
 * part of the slot: kll.h). */
static char *line_at_slot(const ll_call *c, int member, int slot, size_t line)
{
    size_t at = c->a->proto == GCSH_LL_PROTO_LL128
                    ? gcsh_ll128_slot_offset(c->a->window_bytes, c->a->slots, c->set, slot)
                    : gcsh_ll_slot_offset(c->a->window_bytes, c->a->slots, c->set, slot);
    return area_of(c, member) + at + line * c->line_bytes;
}

/* Word `half` (0 or 1) of an ll line; an ll128 line's flag word is its
 * last (word 15). */
static _Atomic uint64_t *line_word(const ll_call *c, int member, int slot, size_t line, int half)
{
    return (_Atomic uint64_t *)line_at_slot(c, member, slot, line) + half;
}

/* Bytes of line i's data that are the region's (the last line may hold
 * fewer than a whole line's). */
static size_t line_valid(const ll_call *c, size_t i)
{
    size_t left = c->bytes - i * c->line_data;
    return left < c->line_data ? left : c->line_data;
}

/* My region, line by line with the flag, into slot `me` of every member
 * (mine included). */
static void post_ll(const ll_call *c, const char *mine)
{
    int me = c->d->team_rank;
    for (size_t i = 0; i < c->lines; i++) {
        uint32_t data[2] = {0, 0};
        memcpy(data, mine + i * GCSH_LL_LINE_DATA, line_valid(c, i));
        for (int p = 0; p < c->d->team_size; p++)
            for (int h = 0; h < 2; h++)
                atomic_store_explicit(line_word(c, p, me, i, h),
                                      (uint64_t)c->flag << 32 | data[h], memory_order_release);
    }
}

#define LL128_WORDS (GCSH_LL128_LINE_DATA / 4)

/* ll128's flag word for a line's data (kll.h): the call's flag and the
 * data's checksum, as the kernel stores them. */
static uint64_t ll128_flag_word(const ll_call *c, const uint32_t *data)
{
    return gcsh_ll128_flag_word((uint64_t)c->flag - 1, gcsh_ll128_words(data, 0, LL128_WORDS));
}

/* ll128: a line's data (zeros past the region), then its flag word. */
static void post_ll128(const ll_call *c, const char *mine)
{
    int me = c->d->team_rank;
    for (size_t i = 0; i < c->lines; i++) {
        uint32_t data[LL128_WORDS] = {0};
        memcpy(data, mine + i * GCSH_LL128_LINE_DATA, line_valid(c, i));
        uint64_t flag = ll128_flag_word(c, data);
        for (int p = 0; p < c->d->team_size; p++) {
            memcpy(line_at_slot(c, p, me, i), data, sizeof data);
            atomic_store_explicit(line_word(c, p, me, i, GCSH_LL128_LINE_DATA / 8), flag,
                                  memory_order_release);
        }
    }
}

static void post(const ll_call *c, const char *mine)
{
    if (c->a->proto == GCSH_LL_PROTO_LL128)
        post_ll128(c, mine);
    else
        post_ll(c, mine);
}

/* A line's wait in words, for hang reports: "ll flag 5 (set 0, line 3)". */
typedef struct line_at {
    const ll_call *c;
    size_t line;
} line_at;

static void line_text(const void *arg, char *buf, size_t len)
{
    const line_at *at = arg;
    snprintf(buf, len, "%s flag %u (set %u, line %zu)",
             at->c->a->proto == GCSH_LL_PROTO_LL128 ? "ll128" : "ll", (unsigned)at->c->flag,
             at->c->set, at->line);
}

static const char *const interrupted_text = "kernel collective interrupted while waiting for a peer";

/* ll128: member s's line i, once its flag word is this call's.  The data
 * stored before the flag word with release is seen after it is loaded
 * with acquire, so its checksum is the one stored with the flag, unless
 * the word is not the flag word at all: an ll word of an older call, whose
 * low half (user data) happens to equal the flag.  Then the real one is
 * still to come: wait for the word to change, and look again. */
static int receive_line128(gcsh_ctx *ctx, const ll_call *c, int s, size_t i, char *to)
{
    line_at at = {c, i};
    gcsh_host_note note = {line_text, &at, c->d->team[s], 0};
    _Atomic uint64_t *w = line_word(c, c->d->team_rank, s, i, GCSH_LL128_LINE_DATA / 8);
    uint32_t data[LL128_WORDS];
    for (;;) {
        if (gcsh_host_wait_bits(ctx, w, UINT32_MAX, c->flag, interrupted_text, &note) != 0)
            return -1;
        uint64_t flag = atomic_load_explicit(w, memory_order_acquire); /* the data after it */
        memcpy(data, line_at_slot(c, c->d->team_rank, s, i), sizeof data);
        if (flag == ll128_flag_word(c, data))
            break;
        if (gcsh_host_wait_noted(ctx, w, GCSH_CMP_NE, flag, INFINITY, interrupted_text, &note) != 0)
            return -1;
    }
    memcpy(to + i * GCSH_LL128_LINE_DATA, data, line_valid(c, i));
    return 0;
}

static int receive(gcsh_ctx *ctx, const ll_call *c, int s, char *to)
{
    int me = c->d->team_rank;
    for (size_t i = 0; i < c->lines && c->a->proto == GCSH_LL_PROTO_LL128; i++)
        if (receive_line128(ctx, c, s, i, to) != 0)
            return -1;
    for (size_t i = 0; i < c->lines && c->a->proto == GCSH_LL_PROTO_LL; i++) {
        uint32_t data[2];
        line_at at = {c, i};
        gcsh_host_note note = {line_text, &at, c->d->team[s], 32};
        for (int h = 0; h < 2; h++) {
            _Atomic uint64_t *w = line_word(c, me, s, i, h);
            if (gcsh_host_wait_bits(ctx, w, FLAG_MASK, (uint64_t)c->flag << 32, interrupted_text,
                                    &note) != 0)
                return -1;
            data[h] = (uint32_t)atomic_load_explicit(w, memory_order_acquire);
        }
        memcpy(to + i * GCSH_LL_LINE_DATA, data, line_valid(c, i));
    }
    return 0;
}

/* Every member's contribution (team order), reduced into dst. */
static int reduce_into(gcsh_ctx *ctx, const ll_call *c, void *dst)
{
    int k = c->d->team_size;
    char *all = malloc(c->bytes * (size_t)k);
    if (!all)
        return gcsh_set_error(ctx, "kernel.allreduce: out of host memory");
    int rc = 0;
    for (int s = 0; s < k && rc == 0; s++)
        rc = receive(ctx, c, s, all + (size_t)s * c->bytes);
    if (rc == 0) {
        gcsh_kjob j;
        memset(&j, 0, sizeof j);
        j.k = k;
        j.m = 1;
        j.n = c->a->n;
        j.dt = c->a->dt;
        j.op = c->a->op;
        for (int s = 0; s < k; s++)
            j.src[s] = all + (size_t)s * c->bytes;
        j.dst[0] = dst;
        rc = gcsh_host_kernel_ops.reduce(ctx, &j);
    }
    free(all);
    return rc;
}

int gcsh_host_ll_allreduce(gcsh_ctx *ctx, gcsh_window_impl *w, const gcsh_window_desc *d,
                           const gcsh_kll_args *a)
{
    (void)w;
    int ll128 = a->proto == GCSH_LL_PROTO_LL128;
    ll_call c = {.d = d, .a = a, .bytes = a->n * gcsh_dtype_size(a->dt),
                 .line_data = ll128 ? GCSH_LL128_LINE_DATA : GCSH_LL_LINE_DATA,
                 .line_bytes = ll128 ? GCSH_LL128_LINE_BYTES : GCSH_LL_LINE_BYTES};
    size_t cap = ll128 ? gcsh_ll128_capacity(a->window_bytes) : gcsh_ll_capacity(a->window_bytes);
    if (c.bytes > cap)
        return gcsh_set_error(ctx, "kernel.allreduce (%s): %zu bytes exceed the LL area's %zu",
                              ll128 ? "ll128" : "ll", c.bytes, cap);
    gcsh_ll_header *h = (gcsh_ll_header *)area_of(&c, d->team_rank);
    uint64_t count = h->count; /* only I touch my header */
    c.lines = (c.bytes + c.line_data - 1) / c.line_data;
    c.flag = gcsh_ll_flag(count);
    c.set = (unsigned)(count & 1);
    char *mine = (char *)d->peer[d->team_rank] + a->offset * gcsh_dtype_size(a->dt);
    post(&c, a->in ? (const char *)a->in : mine);
    int rc = reduce_into(ctx, &c, a->out ? a->out : mine);
    /* counted even when interrupted: every member posted, so its peers may
     * have finished; the counts stay equal (kll.h) */
    h->count = count + 1;
    return rc;
}
