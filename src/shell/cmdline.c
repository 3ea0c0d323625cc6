/* The command-line parser.  See cmdline.h. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "shell/cmdline.h"

static int fail(gcsh_cmdline *cl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(gcsh_cmdline *cl, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cl->error, sizeof cl->error, fmt, ap);
    va_end(ap);
    return -1;
}

/* Whether one of the blank-separated words of list is name[0..len). */
static int in_list(const char *list, const char *name, size_t len)
{
    for (const char *w = list; w && *w;) {
        size_t n = strcspn(w, " ");
        if (n == len && strncmp(w, name, len) == 0)
            return 1;
        w += n + strspn(w + n, " ");
    }
    return 0;
}

static const gcsh_option *find_named(const gcsh_option *table, const char *name, size_t len)
{
    for (const gcsh_option *r = table; r->name; r++)
        if ((strlen(r->name) == len && strncmp(name, r->name, len) == 0) ||
            in_list(r->alias, name, len))
            return r;
    return NULL;
}

/* The row for the word a, and its value when the word carries one
 * ("--timeout=5": "5"; "-n2": "2"), else *attached = NULL.  *len: the
 * length of the option's own name in a, for messages. */
static const gcsh_option *match(const gcsh_option *table, const char *a, const char **attached,
                                size_t *len)
{
    *attached = NULL;
    if (strncmp(a, "--", 2) == 0) {
        const char *eq = strchr(a, '=');
        *len = eq ? (size_t)(eq - a) : strlen(a);
        if (eq)
            *attached = eq + 1;
        return find_named(table, a, *len);
    }
    *len = strlen(a);
    const gcsh_option *row = find_named(table, a, *len);
    const char *eq = strchr(a, '=');
    if (!row && eq) {
        /* -n=2, -np=2 (mpirun's options: the value after '=', as a long
         * option's); lua's own keep all after the letter (-e=1: "=1") */
        const gcsh_option *named = find_named(table, a, (size_t)(eq - a));
        if (named && named->takes == OPT_VALUE && (named->launcher || eq - a > 2)) {
            *len = (size_t)(eq - a);
            *attached = eq + 1;
            return named;
        }
    }
    if (row || *len <= 2)
        return row;
    /* -estat, -n2: a one-letter option with its value attached */
    row = find_named(table, a, 2);
    if (row && row->takes == OPT_VALUE) {
        *len = 2;
        *attached = a + 2;
        return row;
    }
    return NULL;
}

/* Takes the option at argv[i]; returns how many words it used, or -1. */
static int take_option(const gcsh_option *table, int argc, char **argv, int i, void *target,
                       gcsh_cmdline *cl)
{
    const char *a = argv[i], *val = NULL, *val2 = NULL;
    size_t len;
    const gcsh_option *row = match(table, a, &val, &len);
    if (!row)
        return fail(cl, "unrecognized option '%s'", a);
    int used = 1;
    switch (row->takes) {
    case OPT_FLAG:
        if (val)
            return fail(cl, "'%.*s' takes no value (got '%s')", (int)len, a, val);
        break;
    case OPT_OPTIONAL:
        break;
    case OPT_VALUE:
        if (!val && i + 1 < argc)
            val = argv[i + used++];
        if (!val)
            return fail(cl, "'%.*s' needs %s", (int)len, a, row->need);
        break;
    case OPT_PAIR:
        if (val)
            return fail(cl, "'%.*s' takes %s as two words", (int)len, a, row->arg);
        if (i + 2 >= argc)
            return fail(cl, "'%.*s' needs %s", (int)len, a, row->need);
        val = argv[i + 1];
        val2 = argv[i + 2];
        used = 3;
        break;
    }
    if (row->apply(target, row, val, val2) != 0) {
        if (!val)
            return fail(cl, "'%.*s' needs %s", (int)len, a, row->need);
        return fail(cl, "'%.*s' needs %s, got '%s%s%s'", (int)len, a, row->need, val,
                    val2 ? " " : "", val2 ? val2 : "");
    }
    if (row->launcher)
        memset(cl->launcher_only + i, 1, (size_t)used);
    return used;
}

int gcsh_cmdline_parse(const gcsh_option *table, int argc, char **argv, void *target,
                       gcsh_cmdline *cl)
{
    *cl = (gcsh_cmdline){.operand = argc};
    cl->launcher_only = calloc((size_t)argc + 1, 1);
    if (!cl->launcher_only)
        return fail(cl, "out of memory");
    int i = 1;
    while (i < argc) {
        const char *a = argv[i];
        if (a[0] != '-' || strcmp(a, "-") == 0)
            break;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        int used = take_option(table, argc, argv, i, target, cl);
        if (used < 0)
            return -1;
        i += used;
    }
    cl->operand = i;
    return 0;
}

void gcsh_cmdline_free(gcsh_cmdline *cl)
{
    free(cl->launcher_only);
    cl->launcher_only = NULL;
}

void gcsh_cmdline_print(const gcsh_option *table, FILE *f)
{
    for (const gcsh_option *r = table; r->name; r++) {
        char head[64];
        const char *sep = !r->arg ? "" : r->takes == OPT_OPTIONAL ? "" : " ";
        snprintf(head, sizeof head, "%s%s%.*s%s%s", r->name, r->alias ? ", " : "",
                 r->alias ? (int)strcspn(r->alias, " ") : 0, r->alias ? r->alias : "", sep,
                 r->arg ? r->arg : "");
        if (strlen(head) > 22)
            fprintf(f, "  %s\n  %-22s %s\n", head, "", r->help);
        else
            fprintf(f, "  %-22s %s\n", head, r->help);
    }
    fprintf(f, "  %-22s %s\n  %-22s %s\n", "--", "stop handling options", "-",
            "run stdin as a script");
}

/* ---- words ------------------------------------------------------------------ */

int gcsh_split_words(const char *s, char ***words, char *err, size_t errlen)
{
    size_t len = strlen(s);
    /* at most len/2+1 words, each at most len bytes: one block holds them */
    size_t nmax = len / 2 + 2;
    char **v = malloc(nmax * sizeof *v + len + nmax);
    if (!v)
        return snprintf(err, errlen, "out of memory"), -1;
    char *out = (char *)(v + nmax);
    int n = 0;
    const char *p = s;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            break;
        v[n++] = out;
        char quote = 0;
        for (; *p && (quote || (*p != ' ' && *p != '\t' && *p != '\n')); p++) {
            if (quote && *p == quote)
                quote = 0;
            else if (!quote && (*p == '\'' || *p == '"'))
                quote = *p;
            else if (*p == '\\' && quote != '\'' && p[1])
                *out++ = *++p;
            else
                *out++ = *p;
        }
        *out++ = '\0';
        if (quote) {
            free(v);
            return snprintf(err, errlen, "unclosed %c in '%s'", quote, s), -1;
        }
    }
    v[n] = NULL;
    *words = v;
    return n;
}
