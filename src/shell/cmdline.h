/* The command line as people type it: a table of options (main.c's
 * option_table) and one parser for it.
 *
 * Forms, as lua(1), mpirun(1) and GNU programs take them:
 *   -e stat, -estat          one-letter options take their value attached too
 *   --timeout 5, --timeout=5 long options take it after '='
 *   -np 4                    a several-letter alias is matched whole
 *   -n=4                     a one-letter option's value after '=' too
 *   --share-gpu[=nomps]      an optional value, only after '='
 *   --mca key value          two values
 * Options end at the first word that is not one (the script), at "-" (stdin
 * as the script) or after "--".  A bad option is one line naming it. */
#ifndef GCSH_CMDLINE_H
#define GCSH_CMDLINE_H

#include <stddef.h>
#include <stdio.h>

typedef enum gcsh_opt_takes {
    OPT_FLAG,     /* no value: -q */
    OPT_VALUE,    /* one value: -n N, -n2, --timeout=5 */
    OPT_OPTIONAL, /* a value only as --name=value; apply gets NULL without one */
    OPT_PAIR,     /* two values: --mca KEY VALUE */
} gcsh_opt_takes;

typedef struct gcsh_option gcsh_option;

/* Applies an option to target: val is its value (NULL for a flag or an
 * optional value left out), val2 the second of a pair.  Returns 0, or -1
 * when the value is not what the row needs (the error names row->need). */
typedef int (*gcsh_opt_fn)(void *target, const gcsh_option *row, const char *val,
                           const char *val2);

struct gcsh_option {
    const char *name;  /* "-e", "--timeout" */
    const char *alias; /* "-np", "--version", or NULL; more spellings after a blank
                          ("-np --np --n -c"): accepted, and only the first is
                          listed beside the name in --help */
    gcsh_opt_takes takes;
    const char *arg;   /* the value's name in --help ("N", "KEY VALUE", "=MODE") */
    const char *need;  /* what the value must be, for the error */
    int launcher;      /* 1: gcsh -n takes it; it never reaches the ranks */
    gcsh_opt_fn apply;
    const char *help;  /* one line in --help */
};

typedef struct gcsh_cmdline {
    int operand;         /* argv index of the script, or argc when none */
    char *launcher_only; /* [argc]: 1 where argv[i] belongs to a launcher option */
    char error[512];     /* one line, when parsing failed */
} gcsh_cmdline;

/* Parses argv[1..] against table (ended by a row with a NULL name).
 * Returns 0, or -1 with cl->error set.  Free cl with gcsh_cmdline_free. */
int gcsh_cmdline_parse(const gcsh_option *table, int argc, char **argv, void *target,
                       gcsh_cmdline *cl);
void gcsh_cmdline_free(gcsh_cmdline *cl);

/* The option list of --help: "  -n, -np N    start N ranks ...". */
void gcsh_cmdline_print(const gcsh_option *table, FILE *f);

/* Splits s into words as a shell does (blanks separate; '...' and "..."
 * quote; a backslash escapes the next character outside '...').  Returns
 * the number of words (*words a NULL-ended array, one allocation: free it
 * once), or -1 with why in err (an unclosed quote). */
int gcsh_split_words(const char *s, char ***words, char *err, size_t errlen);

#endif
