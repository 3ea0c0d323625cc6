/* Element types shared by tensors, collectives and kernels.
 *
 * The enum order is part of the wire format between ranks (fingerprints, window
 * registration checks), so only append to it. */
#ifndef GCSH_DTYPE_H
#define GCSH_DTYPE_H

#include <stddef.h>
#include <stdint.h>

typedef enum gcsh_dtype {
    GCSH_F64,
    GCSH_F32,
    GCSH_F16,
    GCSH_BF16,
    GCSH_I64,
    GCSH_I32,
    GCSH_U32,
    GCSH_U8,
    GCSH_I8,
    GCSH_NDTYPES
} gcsh_dtype;

typedef enum gcsh_redop {
    GCSH_OP_SUM,
    GCSH_OP_PROD,
    GCSH_OP_MIN,
    GCSH_OP_MAX,
    GCSH_OP_AVG,
    GCSH_NOPS
} gcsh_redop;

/* A scalar as Lua hands it over: integers stay exact (i64 fill of 2^62+1). */
typedef struct gcsh_scalar {
    int is_int;
    int64_t i;
    double f;
} gcsh_scalar;

size_t gcsh_dtype_size(gcsh_dtype dt);
const char *gcsh_dtype_name(gcsh_dtype dt);
/* Returns -1 when name is not a dtype. */
int gcsh_dtype_from_name(const char *name);
int gcsh_dtype_is_float(gcsh_dtype dt);
/* Bits of value (a float's significand, an integer's magnitude) and the
 * relative tolerance of a float against a reference summed in another
 * order (0: integers compare exactly); dtype.c keeps the one list. */
int gcsh_dtype_bits(gcsh_dtype dt);
double gcsh_dtype_rtol(gcsh_dtype dt);
/* Space-separated list of every dtype name, for error messages. */
const char *gcsh_dtype_names(void);

const char *gcsh_redop_name(gcsh_redop op);
int gcsh_redop_from_name(const char *name); /* -1 when unknown */
const char *gcsh_redop_names(void);

/* IEEE half and bfloat16, round-to-nearest-even, NaN and infinities kept. */
uint16_t gcsh_f32_to_f16(float f);
float gcsh_f16_to_f32(uint16_t h);
uint16_t gcsh_f32_to_bf16(float f);
float gcsh_bf16_to_f32(uint16_t b);

/* Element i of a raw buffer as double / as int64, and stores.  The store
 * functions convert without range checks: callers validate first. */
double gcsh_load_f(const void *base, gcsh_dtype dt, size_t i);
int64_t gcsh_load_i(const void *base, gcsh_dtype dt, size_t i);
void gcsh_store_f(void *base, gcsh_dtype dt, size_t i, double v);
void gcsh_store_i(void *base, gcsh_dtype dt, size_t i, int64_t v);

#endif
