/* dtype and reduction-op tables, and the C entry points of the element
 * conversions (the bit work itself lives in half.h / elementwise.h so that
 * CUDA kernels share it). */
#include <string.h>

#include "core/dtype.h"
#include "core/elementwise.h"

/* The dtype facts, the one list C and Lua read (Lua through the module
 * gcsh.dtypes, l_tensor.c). */
typedef struct dtype_info {
    const char *name;
    size_t size;
    int is_float;
    /* Bits of value: a float's significand (the implicit bit counted), an
     * integer's magnitude.  2^r sums of up to this many ranks are exact. */
    int bits;
    /* A float's relative tolerance against a reference computed in another
     * order (the kernels round at every step); 0 for integers: exact. */
    double rtol;
} dtype_info;

/* X(dtype, name, size, is_float, bits, rtol), in the enum's order. */
#define DTYPES(X)                                                                                  \
    X(GCSH_F64, "f64", 8, 1, 53, 1e-12)                                                            \
    X(GCSH_F32, "f32", 4, 1, 24, 1e-5)                                                             \
    X(GCSH_F16, "f16", 2, 1, 11, 1e-2)                                                             \
    X(GCSH_BF16, "bf16", 2, 1, 8, 2e-2)                                                            \
    X(GCSH_I64, "i64", 8, 0, 63, 0)                                                                \
    X(GCSH_I32, "i32", 4, 0, 31, 0)                                                                \
    X(GCSH_U32, "u32", 4, 0, 32, 0)                                                                \
    X(GCSH_U8, "u8", 1, 0, 8, 0)                                                                   \
    X(GCSH_I8, "i8", 1, 0, 7, 0)

#define INFO(dt, name, size, is_float, bits, rtol) [dt] = {name, size, is_float, bits, rtol},
static const dtype_info dtypes[GCSH_NDTYPES] = {DTYPES(INFO)};

/* " f64 f32 ...": every name, for messages (gcsh_dtype_names skips the first space). */
#define SPACE_NAME(dt, name, ...) " " name
static const char dtype_names[] = DTYPES(SPACE_NAME);

static const char *const redop_names[GCSH_NOPS] = {
    [GCSH_OP_SUM] = "sum", [GCSH_OP_PROD] = "prod", [GCSH_OP_MIN] = "min",
    [GCSH_OP_MAX] = "max", [GCSH_OP_AVG] = "avg",
};

static int valid_dtype(gcsh_dtype dt)
{
    return (unsigned)dt < GCSH_NDTYPES;
}

size_t gcsh_dtype_size(gcsh_dtype dt)
{
    return valid_dtype(dt) ? dtypes[dt].size : 0;
}

int gcsh_dtype_bits(gcsh_dtype dt)
{
    return valid_dtype(dt) ? dtypes[dt].bits : 0;
}

double gcsh_dtype_rtol(gcsh_dtype dt)
{
    return valid_dtype(dt) ? dtypes[dt].rtol : 0;
}

const char *gcsh_dtype_name(gcsh_dtype dt)
{
    return valid_dtype(dt) ? dtypes[dt].name : "?";
}

int gcsh_dtype_from_name(const char *name)
{
    for (int i = 0; i < GCSH_NDTYPES; i++)
        if (strcmp(name, dtypes[i].name) == 0)
            return i;
    return -1;
}

int gcsh_dtype_is_float(gcsh_dtype dt)
{
    return valid_dtype(dt) && dtypes[dt].is_float;
}

const char *gcsh_dtype_names(void)
{
    return dtype_names + 1;
}

const char *gcsh_redop_name(gcsh_redop op)
{
    return (unsigned)op < GCSH_NOPS ? redop_names[op] : "?";
}

int gcsh_redop_from_name(const char *name)
{
    for (int i = 0; i < GCSH_NOPS; i++)
        if (strcmp(name, redop_names[i]) == 0)
            return i;
    return -1;
}

const char *gcsh_redop_names(void)
{
    return "sum prod min max avg";
}

/* float -> double is exact, so rounding from the double is rounding from
 * the float: one correctly rounded step. */
uint16_t gcsh_f32_to_f16(float f)
{
    return gcsh_f64_to_f16_bits((double)f);
}

/* Every f16 and bf16 value is exactly representable as a float. */
float gcsh_f16_to_f32(uint16_t h)
{
    return (float)gcsh_f16_bits_to_f64(h);
}

uint16_t gcsh_f32_to_bf16(float f)
{
    return gcsh_f64_to_bf16_bits((double)f);
}

float gcsh_bf16_to_f32(uint16_t b)
{
    return (float)gcsh_bf16_bits_to_f64(b);
}

double gcsh_load_f(const void *base, gcsh_dtype dt, size_t i)
{
    return gcsh_elem_load_f(base, dt, i);
}

int64_t gcsh_load_i(const void *base, gcsh_dtype dt, size_t i)
{
    return gcsh_elem_load_i(base, dt, i);
}

void gcsh_store_f(void *base, gcsh_dtype dt, size_t i, double v)
{
    gcsh_elem_store_f(base, dt, i, v);
}

void gcsh_store_i(void *base, gcsh_dtype dt, size_t i, int64_t v)
{
    gcsh_elem_store_i(base, dt, i, v);
}
