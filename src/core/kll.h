/* The "ll" all-reduce: a one-shot whose data carries its own ready flag, so
 * a call needs no barrier round trip (NCCL's LL protocol, taken to a whole
 * small all-reduce).  Both backends run the same protocol over the same
 * layout: host_ll.c with C11 atomics, kernels/ll.cu with volatile 16-byte
 * stores and loads.
 *
 * The LL area.  Every window slice keeps, between the user's elements and
 * the sync words, a header and two sets ("parities") of `slots` slots, one
 * per possible team member: the communicator's size, at most
 * GCSH_KERN_MAX_TEAM (a window's team is part of its communicator).  Slot s of a set on rank r receives team member s's contribution
 * for rank r.  A slot is a run of 16-byte lines; a line carries 8 bytes of
 * data as two 32-bit words, each followed by a 32-bit flag:
 *
 *     { data0, flag, data1, flag }
 *
 * so a line is valid when both flags equal the call's flag (a 16-byte store
 * may land as two 8-byte halves: each half is checked on its own).
 *
 * A call.  Rank r reads its header's count c (calls done on this window), so
 * flag = c + 1 (never 0, which fresh memory holds) and set = c & 1.  It
 * stores its region, line by line with the flag, into slot r of that set on
 * every member (its own included), then, for every line, waits until every
 * slot holds the flag, reduces the slots in team order (0, 1, ..., k-1:
 * the same bits as one-shot) and stores the result; the header's count
 * becomes c + 1.
 *
 * Why two sets and no clearing.  A member can store call c + 2 into my set
 * c & 1 only after finishing call c + 1, which needed my call c + 1 data,
 * which I store only after I finished reading call c.  Old lines hold old
 * flags, which never equal the new one.  The count lives in the window, not
 * on the host, so a CUDA graph's replays advance it too, and an interrupted
 * call leaves every rank's count one further, as a finished one does.
 *
 * Sizes: a slot holds GCSH_LL_MAX_BYTES of ll lines per member (the region
 * a call takes, past which one-shot and two-shot win anyway), or the
 * window's own size when that is smaller, then ll128's lines (below).
 *
 * "ll128" (NCCL's LL128, taken to a whole all-reduce) uses the same area,
 * header, count, flags, sets and slots, with lines of 128 bytes, in a part
 * of each slot of their own after ll's: 120 data bytes
 * and, in the last 8, a flag word: the call's flag in its low half and, in
 * its high half, a checksum of the line's data (gcsh_ll128_checksum).  A
 * warp stores a line as eight 16-byte stores of one instruction and loads
 * it the same way.  NCCL's LL128 takes a line whose flag it sees as whole,
 * because a warp's aligned 128-byte store reaches a 128-byte load whole on
 * NVLink (it enables LL128 only where that holds); gcsh also checks the
 * checksum, because it does not always hold: under compute-sanitizer
 * synccheck a line's flag arrived before its first 16 bytes (a stale sum,
 * 2 H200s), and a torn line taken on its flag is a wrong result reported
 * as right.  A line is taken when its flag is the call's and its checksum
 * matches the data read with it; a torn one is read again.  (The checksum
 * is a sum of a bijective mix of each data word and its place, so a line
 * that differs from the one stored in one word never passes; in several,
 * with odds of about 2^-32.)  The host stores a line's data, then its flag
 * word with release, and reads the flag word with acquire before the data,
 * which needs neither; its flag words carry the same checksum.  So a call
 * carries 120 bytes a 128-byte line instead of 8 a 16-byte line: 15 of
 * every 16 bytes moved are data instead of 1 of 2, and a slot's ll128 part
 * holds GCSH_LL128_MAX_BYTES (or the window's size).  The two parts never
 * share a byte: when they did (a slot as long as the longer need), an ll
 * line took the user data an ll128 call had left where ll keeps its flags
 * (words 1 and 3 of 16 bytes) for a flag, and an ll call after two ll128
 * calls returned a stale contribution as right (an i32 fill equal to the
 * call count; the review of 2026-11-28, on the host and on 2 H200s).  In
 * its own part each protocol sees only its own old lines, whose flags are
 * older calls'.  Zeros, which fresh and cleared scratch memory hold, are no
 * flag. */
#ifndef GCSH_KLL_H
#define GCSH_KLL_H

#include <stddef.h>
#include <stdint.h>

#include "core/hd.h"
#include "core/kreduce.h"

/* The most bytes of a region an "ll" call takes. */
#define GCSH_LL_MAX_BYTES ((size_t)64 * 1024)
/* Data bytes per 16-byte line. */
#define GCSH_LL_LINE_DATA 8
#define GCSH_LL_LINE_BYTES 16
/* "ll128": the most bytes a call takes, and its 128-byte lines' data. */
#define GCSH_LL128_MAX_BYTES ((size_t)256 * 1024)
#define GCSH_LL128_LINE_DATA 120
#define GCSH_LL128_LINE_BYTES 128
/* The header at the start of the LL area: the call count (and, on cuda, a
 * word its blocks count themselves out on); padded to a line boundary. */
#define GCSH_LL_HEADER_BYTES 256

typedef struct gcsh_ll_header {
    uint64_t count; /* calls done on this window: flag = count + 1 */
    uint32_t done;  /* cuda: blocks of the running call that finished */
    uint32_t pad;
} gcsh_ll_header;

/* Lines that carry `bytes` of data. */
GCSH_HD static inline size_t gcsh_ll_lines(size_t bytes)
{
    return (bytes + GCSH_LL_LINE_DATA - 1) / GCSH_LL_LINE_DATA;
}

/* The region bytes the LL area of a window of `window_bytes` holds. */
GCSH_HD static inline size_t gcsh_ll_capacity(size_t window_bytes)
{
    return window_bytes < GCSH_LL_MAX_BYTES ? window_bytes : GCSH_LL_MAX_BYTES;
}

/* ll128's lines for `bytes`, and the region bytes its slots hold for a
 * window of `window_bytes`. */
GCSH_HD static inline size_t gcsh_ll128_lines(size_t bytes)
{
    return (bytes + GCSH_LL128_LINE_DATA - 1) / GCSH_LL128_LINE_DATA;
}

GCSH_HD static inline size_t gcsh_ll128_capacity(size_t window_bytes)
{
    return window_bytes < GCSH_LL128_MAX_BYTES ? window_bytes : GCSH_LL128_MAX_BYTES;
}

/* A slot's two parts: ll's lines, rounded up to whole 128-byte lines (so
 * that every ll128 line after them is 128-byte aligned: the area's start
 * and its header are), then ll128's. */
GCSH_HD static inline size_t gcsh_ll_part_bytes(size_t window_bytes)
{
    size_t ll = gcsh_ll_lines(gcsh_ll_capacity(window_bytes)) * GCSH_LL_LINE_BYTES;
    return (ll + GCSH_LL128_LINE_BYTES - 1) / GCSH_LL128_LINE_BYTES * GCSH_LL128_LINE_BYTES;
}

GCSH_HD static inline size_t gcsh_ll128_part_bytes(size_t window_bytes)
{
    return gcsh_ll128_lines(gcsh_ll128_capacity(window_bytes)) * GCSH_LL128_LINE_BYTES;
}

GCSH_HD static inline size_t gcsh_ll_slot_bytes(size_t window_bytes)
{
    return gcsh_ll_part_bytes(window_bytes) + gcsh_ll128_part_bytes(window_bytes);
}

/* The slots per set for a communicator of comm_size ranks. */
GCSH_HD static inline int gcsh_ll_slots(int comm_size)
{
    return comm_size < GCSH_KERN_MAX_TEAM ? comm_size : GCSH_KERN_MAX_TEAM;
}

/* The LL area's bytes for a window of `window_bytes` per slice. */
GCSH_HD static inline size_t gcsh_ll_area_bytes(size_t window_bytes, int slots)
{
    return GCSH_LL_HEADER_BYTES + 2 * (size_t)slots * gcsh_ll_slot_bytes(window_bytes);
}

/* Byte offset, from the LL area's start, of slot `member` of set `set`. */
GCSH_HD static inline size_t gcsh_ll_slot_offset(size_t window_bytes, int slots, unsigned set,
                                                 int member)
{
    return GCSH_LL_HEADER_BYTES +
           ((size_t)set * (size_t)slots + (size_t)member) * gcsh_ll_slot_bytes(window_bytes);
}

/* Byte offset, from the LL area's start, of the ll128 lines of slot
 * `member` of set `set` (after its ll lines). */
GCSH_HD static inline size_t gcsh_ll128_slot_offset(size_t window_bytes, int slots, unsigned set,
                                                    int member)
{
    return gcsh_ll_slot_offset(window_bytes, slots, set, member) + gcsh_ll_part_bytes(window_bytes);
}

/* The flag of the call after `count` calls: never 0 (fresh memory). */
GCSH_HD static inline uint32_t gcsh_ll_flag(uint64_t count)
{
    return (uint32_t)(count % 0xffffffffu) + 1u;
}

/* An ll128 line's checksum: the sum over its data's 32-bit words (30; past
 * the region, zeros) of a bijective mix (MurmurHash3's finaliser) of each
 * word and its place, so that any one word changed changes the sum.  Lane
 * j of a warp adds words 4j..4j+3 (lane 7: 28 and 29) with
 * gcsh_ll128_words, and the lanes of a line add their parts. */
GCSH_HD static inline uint32_t gcsh_ll128_mix(uint32_t word, unsigned place)
{
    uint32_t x = word ^ (place * 0x9e3779b9u);
    x ^= x >> 16;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    x *= 0xc2b2ae35u;
    x ^= x >> 16;
    return x;
}

GCSH_HD static inline uint32_t gcsh_ll128_words(const uint32_t *w, unsigned first, unsigned count)
{
    uint32_t sum = 0;
    for (unsigned i = 0; i < count; i++)
        sum += gcsh_ll128_mix(w[i], first + i);
    return sum;
}

/* A line's flag word: the flag of the call after `count` calls, and the
 * checksum of its data. */
GCSH_HD static inline uint64_t gcsh_ll128_flag_word(uint64_t count, uint32_t checksum)
{
    return (uint64_t)checksum << 32 | gcsh_ll_flag(count);
}

#endif
