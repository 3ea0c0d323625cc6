/* What the reduce kernels of both backends share (C and CUDA): which dtypes
 * and ops they take, how two elements combine, and where a window keeps the
 * words the kernel collectives synchronise on.
 *
 * Identical results on both backends: every kernel combines the inputs in
 * the same order (team index 0, 1, ..., k-1, or the order of the tensors
 * given), in the same accumulator type (f32 for f32, f16 and bf16; 32-bit
 * wrapping integers for i32 and u32), and rounds once, to nearest even, when
 * it stores.  So a one-shot, a two-shot, a multicast and a host loop give
 * the same bits. */
#ifndef GCSH_KREDUCE_H
#define GCSH_KREDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/hd.h"

/* The largest team a kernel collective synchronises (the sync area has one
 * word per block and member) and the most inputs of kernel.reduce.  Eight
 * GPUs share an NVLink domain on the machines this targets; 16 leaves room. */
#define GCSH_KERN_MAX_TEAM 16
#define GCSH_KERN_MAX_SRC GCSH_KERN_MAX_TEAM
/* The most blocks a cuda kernel collective runs (each pairs with the same
 * block on every peer through its own sync words). */
#define GCSH_KERN_MAX_BLOCKS 64

/* The sync area: the last sync_bytes of every slice of a window (past the
 * elements a user sees), zeroed at creation.  Word [block * MAX_TEAM + src]
 * of rank r's area is written only by team member src's block `block`, with
 * the number of barriers that block has passed on this window: values only
 * grow, so a wait is "word >= the barrier's number". */
#define GCSH_KERN_SYNC_WORDS(blocks) ((size_t)(blocks) * GCSH_KERN_MAX_TEAM)
/* On cuda, GCSH_KERN_MAX_BLOCKS more words follow the rows, read and written
 * by this rank alone: word b counts the barriers block b has passed on this
 * window (its row's number), kept on the device, so that a launch replayed
 * from a CUDA graph (gcsh.graph) continues the count where the last call,
 * direct or replayed, left it; nothing on the host changes between calls. */
#define GCSH_KERN_EPOCH_WORDS GCSH_KERN_MAX_BLOCKS

/* Bit set of the ops a dtype supports, one table (kern_ops_of) for the
 * binding and both backends. */
#define GCSH_KERN_OP_BIT(op) (1u << (op))
#define GCSH_KERN_REDUCING_OPS                                                                \
    (GCSH_KERN_OP_BIT(GCSH_OP_SUM) | GCSH_KERN_OP_BIT(GCSH_OP_PROD) |                         \
     GCSH_KERN_OP_BIT(GCSH_OP_MIN) | GCSH_KERN_OP_BIT(GCSH_OP_MAX))

/* 0 when the kernels do not take dt.  avg is left to the collectives: it
 * needs a division the other ops do not, and NCCL's own path does it. */
GCSH_HD static inline unsigned gcsh_kern_ops_of(gcsh_dtype dt)
{
    switch (dt) {
    case GCSH_F32:
    case GCSH_F16:
    case GCSH_BF16:
    case GCSH_I32:
    case GCSH_U32: return GCSH_KERN_REDUCING_OPS;
    default: return 0;
    }
}

/* The ops multimem.ld_reduce has for dt (PTX ISA: add, min, max on f16,
 * bf16 and the 32-bit integers; add only on f32; no product at all): the
 * ops m:ld_reduce and algo="multicast" take in mode "nvls". */
GCSH_HD static inline unsigned gcsh_kern_nvls_ops_of(gcsh_dtype dt)
{
    unsigned add_min_max = GCSH_KERN_OP_BIT(GCSH_OP_SUM) | GCSH_KERN_OP_BIT(GCSH_OP_MIN) |
                           GCSH_KERN_OP_BIT(GCSH_OP_MAX);
    switch (dt) {
    case GCSH_F32: return GCSH_KERN_OP_BIT(GCSH_OP_SUM);
    case GCSH_F16:
    case GCSH_BF16:
    case GCSH_I32:
    case GCSH_U32: return add_min_max;
    default: return 0;
    }
}

#define GCSH_KERN_DTYPE_NAMES "f32 f16 bf16 i32 u32"
#define GCSH_KERN_OP_NAMES "sum prod min max"

/* Combining two accumulators.  min and max keep the first operand unless
 * the second compares strictly smaller (larger): one definition, so NaN
 * handling is the same everywhere. */
GCSH_HD static inline float gcsh_kern_combine_f32(float a, float b, int op)
{
    switch (op) {
    case GCSH_OP_SUM: return a + b;
    case GCSH_OP_PROD: return a * b;
    case GCSH_OP_MIN: return b < a ? b : a;
    default: return b > a ? b : a;
    }
}

/* Integers wrap (two's complement), as NCCL's and MPI's do in practice. */
GCSH_HD static inline uint32_t gcsh_kern_combine_u32(uint32_t a, uint32_t b, int op)
{
    switch (op) {
    case GCSH_OP_SUM: return a + b;
    case GCSH_OP_PROD: return a * b;
    case GCSH_OP_MIN: return b < a ? b : a;
    default: return b > a ? b : a;
    }
}

GCSH_HD static inline uint32_t gcsh_kern_combine_i32(uint32_t a, uint32_t b, int op)
{
    int32_t x = (int32_t)a, y = (int32_t)b;
    switch (op) {
    case GCSH_OP_MIN: return (uint32_t)(y < x ? y : x);
    case GCSH_OP_MAX: return (uint32_t)(y > x ? y : x);
    default: return gcsh_kern_combine_u32(a, b, op); /* wrapping sum and product */
    }
}

/* The 16-byte-vector split of a range of n elements whose first element is
 * at address `addr` (every source and destination of a job has the same
 * address modulo 16, or the range is not split): `head` scalar elements up
 * to the first 16-byte boundary, `nvec` vectors, then the tail scalars. */
typedef struct gcsh_kern_split {
    size_t head, nvec, tail;
} gcsh_kern_split;

GCSH_HD static inline gcsh_kern_split gcsh_kern_split_range(uintptr_t addr, size_t n, size_t esize,
                                                             int vectorise)
{
    gcsh_kern_split s = {n, 0, 0};
    if (!vectorise || addr % esize != 0)
        return s;
    size_t to_boundary = (size_t)((16 - addr % 16) % 16) / esize;
    if (to_boundary >= n)
        return s;
    size_t per_vec = 16 / esize;
    s.head = to_boundary;
    s.nvec = (n - s.head) / per_vec;
    s.tail = n - s.head - s.nvec * per_vec;
    return s;
}

#endif
