/* gcsh's numeric environment variables.  See env.h. */
#include "core/env.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { UNIT_BYTES, UNIT_COUNT, UNIT_SECONDS } env_unit;

typedef struct {
    const char *name;
    env_unit unit;
    double min, max, fallback;
} env_var;

static const env_var vars[GCSH_ENV_COUNT] = {
    [GCSH_ENV_OUTPUT_CAP] = {"GCSH_OUTPUT_CAP", UNIT_BYTES, 1, 1ull << 40, 64u << 20},
    [GCSH_ENV_TRACE_EVENTS] = {"GCSH_TRACE_EVENTS", UNIT_COUNT, 1, 1u << 28, 1u << 20},
    [GCSH_ENV_FLIGHT_CALLS] = {"GCSH_FLIGHT_CALLS", UNIT_COUNT, 0, 1u << 20, 2000},
    [GCSH_ENV_HOST_MPI_MAX_COUNT] = {"GCSH_HOST_MPI_MAX_COUNT", UNIT_COUNT, 1, INT_MAX, 1u << 30},
    [GCSH_ENV_HOST_SMALL_BYTES] = {"GCSH_HOST_SMALL_BYTES", UNIT_BYTES, 0, 1u << 20, 4096},
    [GCSH_ENV_SPIN_US] = {"GCSH_SPIN_US", UNIT_COUNT, 0, 1000000, 50},
    [GCSH_ENV_RANKS_PER_NODE] = {"GCSH_RANKS_PER_NODE", UNIT_COUNT, 1, 1u << 20, 0},
    [GCSH_ENV_GPU_WAIT_TIMEOUT] = {"GCSH_GPU_WAIT_TIMEOUT", UNIT_SECONDS, 0.001, 1e6, 600},
};

int gcsh_parse_size(const char *s, unsigned long long *bytes)
{
    static const struct { const char *suffix; int shift; } suffixes[] = {
        {"", 0}, {"k", 10}, {"K", 10}, {"KiB", 10}, {"M", 20}, {"MiB", 20},
        {"G", 30}, {"GiB", 30}, {"T", 40}, {"TiB", 40},
    };
    if (!isdigit((unsigned char)s[0]))
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE)
        return -1;
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        if (strcmp(end, suffixes[i].suffix) != 0)
            continue;
        if (v > (ULLONG_MAX >> suffixes[i].shift))
            return -1;
        *bytes = v << suffixes[i].shift;
        return 0;
    }
    return -1;
}

/* The value of s in the variable's unit; -1 when it is not one. */
static int parse_value(const env_var *v, const char *s, double *out)
{
    char *end;
    switch (v->unit) {
    case UNIT_BYTES: {
        unsigned long long b;
        if (gcsh_parse_size(s, &b) != 0)
            return -1;
        *out = (double)b;
        return 0;
    }
    case UNIT_COUNT: {
        if (!isdigit((unsigned char)s[0]))
            return -1;
        errno = 0;
        unsigned long long n = strtoull(s, &end, 10);
        if (*end || errno == ERANGE)
            return -1;
        *out = (double)n;
        return 0;
    }
    case UNIT_SECONDS:
        if (!isdigit((unsigned char)s[0]) && s[0] != '.')
            return -1;
        *out = strtod(s, &end);
        return *end || !isfinite(*out) ? -1 : 0;
    }
    return -1;
}

static const char *unit_words(env_unit unit)
{
    switch (unit) {
    case UNIT_BYTES: return "a size in bytes, as 65536, 64k, 1M or 2G";
    case UNIT_COUNT: return "a whole number";
    case UNIT_SECONDS: return "seconds, as 600 or 0.5";
    }
    return "";
}

static void bound_text(const env_var *v, double x, char *buf, size_t len)
{
    if (v->unit == UNIT_SECONDS)
        snprintf(buf, len, "%g", x);
    else
        snprintf(buf, len, "%.0f", x);
}

/* The variables that take one of a few words (unset or empty: the
 * default); their readers take the words as they are. */
static const struct {
    const char *name;
    const char *words[5];
} word_vars[] = {
    {"GCSH_COMM_ROUTE", {"auto", "kernel", "comm", "nccl"}}, /* bind/comm_route.c */
    {"GCSH_SPLIT_SHARE", {"0", "1"}},                       /* cuda/cuda_backend.c */
    {"GCSH_MULTICAST", {"0", "1"}},                         /* cuda/cuda_kern.c */
    {"GCSH_CONTROL", {"tcp"}},                              /* wire/link.c */
};

/* "auto, kernel, comm or nccl" */
static void words_text(const char *const *w, char *buf, size_t len)
{
    size_t n = 0, used = 0;
    while (n < 5 && w[n])
        n++;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used < len; i++) {
        int k = snprintf(buf + used, len - used, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ",
                         w[i]);
        used += k > 0 ? (size_t)k : 0;
    }
}

static int check_words(char *err, size_t len)
{
    for (size_t i = 0; i < sizeof word_vars / sizeof word_vars[0]; i++) {
        const char *s = getenv(word_vars[i].name);
        if (!s || !*s)
            continue;
        int known = 0;
        for (int j = 0; j < 5 && word_vars[i].words[j] && !known; j++)
            known = strcmp(s, word_vars[i].words[j]) == 0;
        if (!known) {
            char words[64];
            words_text(word_vars[i].words, words, sizeof words);
            snprintf(err, len, "%s=%.40s: not %s", word_vars[i].name, s, words);
            return -1;
        }
    }
    return 0;
}

int gcsh_env_check(char *err, size_t len)
{
    for (int i = 0; i < GCSH_ENV_COUNT; i++) {
        const env_var *v = &vars[i];
        const char *s = getenv(v->name);
        double x;
        if (!s || !*s)
            continue;
        if (parse_value(v, s, &x) != 0) {
            snprintf(err, len, "%s=%s: not %s", v->name, s, unit_words(v->unit));
            return -1;
        }
        if (x < v->min || x > v->max) {
            char lo[32], hi[32];
            bound_text(v, v->min, lo, sizeof lo);
            bound_text(v, v->max, hi, sizeof hi);
            snprintf(err, len, "%s=%s: out of range (%s..%s)", v->name, s, lo, hi);
            return -1;
        }
    }
    return check_words(err, len);
}

double gcsh_env_value(gcsh_env_id id)
{
    const env_var *v = &vars[id];
    const char *s = getenv(v->name);
    double x;
    if (!s || !*s || parse_value(v, s, &x) != 0 || x < v->min || x > v->max)
        return v->fallback;
    return x;
}
