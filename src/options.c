/* The option table and what each option does to `options` (options.h):
 * parsing, --help and the man page's list follow the table. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "options.h"
#include "core/safefile.h"

void options_free(options *o)
{
    for (int i = 0; i < o->n_mpirun_args; i++)
        free(o->mpirun_args[i]);
    free(o->mpirun_args);
    free(o->actions);
    free(o->diff_code);
    free(o->launcher_only);
    gcsh_recording_free(&o->recording);
}

/* ---- the option table ----------------------------------------------------- */

static int parse_number(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !(v >= lo && v <= hi)) /* NaN is in no range */
        return -1;
    *out = v;
    return 0;
}

/* An option's word, not a value: "-e", "--deadline" (a negative number is a
 * value).  An option that takes a file, a module or mpirun's value would take it
 * as one, and what follows it as gcsh's (-l -e 'x': "-e" a module). */
static int looks_like_option(const char *w)
{
    return w && w[0] == '-' && (w[1] == '-' || (w[1] >= 'a' && w[1] <= 'z') ||
                                (w[1] >= 'A' && w[1] <= 'Z'));
}

static int opt_exec(void *target, const gcsh_option *row, const char *val, const char *val2)
{
    (void)val2;
    options *o = target;
    if (row->name[1] == 'l' && looks_like_option(val))
        return -1;
    o->actions[o->nactions++] = (action){row->name[1], val};
    o->has_exec |= row->name[1] == 'e';
    return 0;
}

static int opt_flag(void *target, const gcsh_option *row, const char *val, const char *val2)
{
    (void)val, (void)val2;
    options *o = target;
    switch (row->name[1]) {
    case 'i': o->interactive = 1; break;
    case 'q': o->quiet = 1; break;
    case 'v': o->version = 1; break;
    case 'h': o->help = 1; break;
    case 'W': o->warnings = 1; break;
    case 'E': o->no_env = 1; break;
    }
    return 0;
}

static int opt_ranks(void *target, const gcsh_option *row, const char *val, const char *val2)
{
    (void)row, (void)val2;
    double v;
    if (parse_number(val, 1, GCSH_MAX_RANKS, &v) != 0 || v != (int)v)
        return -1;
    ((options *)target)->nranks = (int)v;
    return 0;
}

static int opt_backend(void *target, const gcsh_option *row, const char *val, const char *val2)
{
    (void)row, (void)val2;
    ((options *)target)->backend = val;
    return 0;
}

static int opt_timeout(void *target, const gcsh_option *row, const char *val, const char *val2)
{
    (void)row, (void)val2;
    options *o = target;
    o->timeout_set = 1;
    return parse_number(val, 0, 1e6, &o->timeout);
}

static int opt_seed(void *target, const gcsh_option *row, const char *val, const char *val2)
{
    (void)row, (void)val2;
    double v;
    if (parse_number(val, 0, 2147483647.0, &v) != 0 || v != (long long)v)
        return -1;
    ((options *)target)->seed = (long long)v;
    return 0;
}

static int opt_deadline(void *target, const gcsh_option *row, const char *val,
                        const char *val2)
{
    (void)row, (void)val2;
    return parse_number(val, 0, 1e6, &((options *)target)->deadline);
}

static int opt_deadline_status(void *target, const gcsh_option *row, const char *val,
                               const char *val2)
{
    (void)row, (void)val2;
    double v;
    if (parse_number(val, 0, 255, &v) != 0 || v != (int)v)
        return -1;
    ((options *)target)->deadline_status = (int)v;
    return 0;
}

static int opt_tag(void *target, const gcsh_option *row, const char *val, const char *val2)
{
    (void)row, (void)val2;
    return gcsh_tag_parse(val, &((options *)target)->tag);
}

/* --record, --replay, --trace FILE. */
/* --flight FILE: where the flight recorder writes on its own. */
static int opt_flight(void *target, const gcsh_option *row, const char *val, const char *val2)
{
    (void)row, (void)val2;
    char err[PATH_MAX + 200];
    ((options *)target)->flight = val;
    /* refused now, not when a hang or a crash comes to write it */
    return gcsh_file_check(val, err, sizeof err) == 0 ? 0 : -1;
}

/* s as a Lua string literal: every byte but letters, digits and / . _ -
 * as \ddd, so any file name survives. */
static void lua_quote(char *out, const char *s)
{
    *out++ = '"';
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (isalnum(ch) || strchr("/._-", ch))
            *out++ = (char)ch;
        else
            out += sprintf(out, "\\%03u", ch);
    }
    *out++ = '"';
    *out = '\0';
}

/* --diff A B: runs as a one-rank -e chunk (gcsh.diff's main gives the
 * status); alone on the command line (main.c checks). */
static int opt_diff(void *target, const gcsh_option *row, const char *val, const char *val2)
{
    (void)row;
    options *o = target;
    if (o->diff_code)
        return -1;
    size_t n = 4 * (strlen(val) + strlen(val2)) + 64;
    o->diff_code = malloc(n);
    if (!o->diff_code)
        return -1;
    char *p = o->diff_code + sprintf(o->diff_code, "os.exit(require(\"gcsh.diff\").main(");
    lua_quote(p, val);
    p += strlen(p);
    p += sprintf(p, ", ");
    lua_quote(p, val2);
    strcat(p, "))");
    o->actions[o->nactions++] = (action){'e', o->diff_code};
    return 0;
}

static int opt_first_failure(void *target, const gcsh_option *row, const char *val,
                             const char *val2)
{
    (void)row, (void)val, (void)val2;
    ((options *)target)->first_failure = 1;
    return 0;
}

static int opt_keep_going(void *target, const gcsh_option *row, const char *val,
                          const char *val2)
{
    (void)row, (void)val, (void)val2;
    ((options *)target)->keep_going = 1;
    return 0;
}

/* --share-gpu (MPS) and --share-gpu=nomps. */
static int opt_share(void *target, const gcsh_option *row, const char *val, const char *val2)
{
    (void)row, (void)val2;
    options *o = target;
    if (val && strcmp(val, "nomps") != 0)
        return -1;
    return gcsh_share_parse(val, &o->share);
}

static int opt_file(void *target, const gcsh_option *row, const char *val, const char *val2)
{
    (void)val2;
    options *o = target;
    if (!val[0] || looks_like_option(val))
        return -1;
    const char *n = row->name;
    *(strcmp(n, "--trace") == 0    ? &o->trace
      : strcmp(n, "--record") == 0 ? &o->record
      : strcmp(n, "--trust") == 0  ? &o->trust
                                   : &o->replay) = val;
    return 0;
}

/* Appends words to what mpirun gets; the first option's name is kept for
 * the error when -n is missing. */
static void add_mpirun_words(options *o, const char *option, const char *const *words, int n)
{
    if (o->n_mpirun_args + n > o->cap_mpirun_args) {
        o->cap_mpirun_args = 2 * o->cap_mpirun_args + n + 8;
        o->mpirun_args = realloc(o->mpirun_args,
                                 (size_t)o->cap_mpirun_args * sizeof *o->mpirun_args);
    }
    for (int i = 0; i < n; i++)
        o->mpirun_args[o->n_mpirun_args++] = strdup(words[i]);
    if (!o->first_mpirun_option)
        o->first_mpirun_option = option;
}

/* --host, --map-by, --mca and the like: the option and its values, as given. */
static int opt_mpirun(void *target, const gcsh_option *row, const char *val, const char *val2)
{
    if (!val[0] || looks_like_option(val) || looks_like_option(val2))
        return -1;
    const char *words[3] = {row->name, val, val2};
    add_mpirun_words(target, row->name, words, val2 ? 3 : 2);
    return 0;
}

/* --mca KEY VALUE, two words as mpirun's: KEY=VALUE as one word would take
 * the next word (a script) as its value, and nothing would run. */
static int opt_mca(void *target, const gcsh_option *row, const char *val, const char *val2)
{
    for (const char *p = val; *p; p++)
        if (!(*p == '_' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
              (*p >= 'A' && *p <= 'Z')))
            return -1;
    return opt_mpirun(target, row, val, val2);
}

/* mpirun says nothing under --quiet about a host file it cannot read. */
static int opt_hostfile(void *target, const gcsh_option *row, const char *val, const char *val2)
{
    if (access(val, R_OK) != 0)
        return -1;
    return opt_mpirun(target, row, val, val2);
}

/* -x VAR or -x VAR=value: mpirun exports it to every rank. */
static int opt_export(void *target, const gcsh_option *row, const char *val, const char *val2)
{
    size_t name = strcspn(val, "=");
    if (name == 0 || !(val[0] == '_' || (val[0] >= 'A' && val[0] <= 'Z') ||
                       (val[0] >= 'a' && val[0] <= 'z')))
        return -1;
    for (size_t i = 1; i < name; i++)
        if (!(val[i] == '_' || (val[i] >= '0' && val[i] <= '9') || (val[i] >= 'A' && val[i] <= 'Z') ||
              (val[i] >= 'a' && val[i] <= 'z')))
            return -1;
    return opt_mpirun(target, row, val, val2);
}

/* --mpirun-args "words": anything else for mpirun, split as a shell would. */
static int opt_mpirun_words(void *target, const gcsh_option *row, const char *val,
                            const char *val2)
{
    (void)val2;
    char **words, err[200];
    int n = gcsh_split_words(val, &words, err, sizeof err);
    if (n <= 0) {
        if (n == 0)
            free(words);
        return -1;
    }
    add_mpirun_words(target, row->name, (const char *const *)words, n);
    free(words);
    return 0;
}

/* Every option: parsing, --help and the man page's list follow this table
 * (tests/sh/cli.sh checks that gcsh.1 names each one).  Add a row:
 *   {"--name", alias or NULL, OPT_FLAG | OPT_VALUE | OPT_OPTIONAL | OPT_PAIR,
 *    value's name in --help, what the value must be, 1 if gcsh -n takes it,
 *    apply function, one line of help}.
 * An optional value is written only as --name=value: the row
 *   {"--share-gpu", NULL, OPT_OPTIONAL, "[=nomps]", "nothing or =nomps", 0, fn, "..."}
 * takes `--share-gpu` (fn gets val NULL) and `--share-gpu=nomps`. */
const gcsh_option option_table[] = {
    {"-e", NULL, OPT_VALUE, "stat", "a Lua statement", 0, opt_exec,
     "run the Lua statement stat on every rank (-estat too)"},
    {"-l", NULL, OPT_VALUE, "mod", "a module name", 0, opt_exec,
     "mod = require(\"mod\") on every rank (-l g=mod: g = ...)"},
    {"-i", NULL, OPT_FLAG, NULL, NULL, 0, opt_flag,
     "interactive after the script (prompts on a pipe too)"},
    {"-q", NULL, OPT_FLAG, NULL, NULL, 0, opt_flag, "no banner"},
    {"-W", NULL, OPT_FLAG, NULL, NULL, 0, opt_flag, "turn warnings on (warn(), on stderr)"},
    {"-E", NULL, OPT_FLAG, NULL, NULL, 0, opt_flag,
     "ignore LUA_INIT and the init file (as lua -E)"},
    {"-v", "--version", OPT_FLAG, NULL, NULL, 0, opt_flag,
     "versions of gcsh, Lua, MPI, NCCL, CUDA"},
    {"-h", "--help", OPT_FLAG, NULL, NULL, 0, opt_flag, "this text"},
    {"-n", "-np --np --n -c", OPT_VALUE, "N", "a rank count 1..4096", 1, opt_ranks,
     "start N ranks under mpirun (--np, --n, -c N too)"},
    {"--backend", NULL, OPT_VALUE, "B", "host or cuda", 0, opt_backend,
     "host or cuda (default: cuda when a GPU is visible)"},
    {"--share-gpu", NULL, OPT_OPTIONAL, "[=nomps]", "nothing or =nomps", 0, opt_share,
     "ranks share GPUs round-robin; MPS unless =nomps"},
    {"--timeout", NULL, OPT_VALUE, "S", "seconds 0..1e6", 0, opt_timeout,
     "report where ranks wait after S seconds (0: never)"},
    {"--seed", NULL, OPT_VALUE, "N", "an integer 0..2147483647", 0, opt_seed,
     "seed math.random and t:rand() on every rank (N, rank)"},
    {"--deadline", NULL, OPT_VALUE, "S", "seconds 0..1e6", 0, opt_deadline,
     "end the job at S s: hang report, flight file, exit 1"},
    {"--deadline-status", NULL, OPT_VALUE, "N", "a status 0..255", 0, opt_deadline_status,
     "the status --deadline ends a job with (default 1)"},
    {"--tag", NULL, OPT_VALUE, "WHEN", "always, never or auto", 0, opt_tag,
     "[0-1] before lines: always (default), never, or auto"},
    {"--diff", NULL, OPT_PAIR, "A B", "two recordings or two trace files", 0, opt_diff,
     "where two recordings or flight files part, per rank"},
    {"--first-failure", NULL, OPT_FLAG, NULL, NULL, 0, opt_first_failure,
     "the first failing rank's error whole, others' 1st line"},
    {"--record", NULL, OPT_VALUE, "FILE", "a file name", 0, opt_file,
     "write the session's lines and output to FILE (a script)"},
    {"--replay", NULL, OPT_VALUE, "FILE", "a file name", 0, opt_file,
     "rerun a recording; exit 1 at the first difference"},
    {"--trace", NULL, OPT_VALUE, "FILE", "a file name", 0, opt_file,
     "trace every rank's lines and calls (Chrome JSON)"},
    {"--trust", NULL, OPT_VALUE, "FILE", "a file name", 0, opt_file,
     "with --replay: run FILE even if others could change it"},
    {"--keep-going", NULL, OPT_FLAG, NULL, NULL, 0, opt_keep_going,
     "with --replay: run past differences and list them all"},
    {"--flight", NULL, OPT_VALUE, "FILE", "a file gcsh may write (no folder, link, device)", 0,
     opt_flight, "the flight recorder's file (every rank's last calls)"},
    {"--hostfile", NULL, OPT_VALUE, "FILE", "a readable host file", 1, opt_hostfile,
     "with -n: mpirun's host file (hosts and slots)"},
    {"--host", "-H", OPT_VALUE, "LIST", "a host list", 1, opt_mpirun,
     "with -n: mpirun's host list (host1:2,host2:2)"},
    {"--map-by", NULL, OPT_VALUE, "SPEC", "a mapping", 1, opt_mpirun,
     "with -n: mpirun's rank mapping (slot, node, ...)"},
    {"-x", NULL, OPT_VALUE, "VAR[=V]", "an environment variable name (VAR or VAR=value)", 1,
     opt_export, "with -n: set VAR in every rank's environment"},
    {"--mca", NULL, OPT_PAIR, "KEY VALUE", "a key (letters, digits, _) and a value, two words", 1,
     opt_mca,
     "with -n: an MCA parameter for mpirun and the ranks"},
    {"--mpirun-args", NULL, OPT_VALUE, "'ARGS'", "mpirun's arguments, quoted as one word", 1,
     opt_mpirun_words, "with -n: more arguments for mpirun"},
    {NULL, NULL, 0, NULL, NULL, 0, NULL, NULL},
};
