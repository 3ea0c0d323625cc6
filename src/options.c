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
    ((options *)target)->deadline_status_set = 1;
    return 0;
}

static int opt_tag(void *target, const gcsh_option *row, const char *val, const char *val2)
{
    (void)row, (void)val2;
    ((options *)target)->tag_set = 1;
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

/* ---- the options a recording notes (shell/record.h, GCSH_RECORD_OPTIONS) ---- */

/* Those a recording may name, in the order it names them (record.c), and
 * whether the replay's own command line may set them otherwise: what only
 * bounds or shows the run may (a deadline, its status, the tags); what
 * changes what the run prints or does may not (a replay that differs
 * because of it would compare nothing). */
static const struct recordable {
    const char *name;
    int own_wins;
} recordable[] = {
    {"-W", 0},
    {"--timeout", 0},
    {"--deadline", 1},
    {"--deadline-status", 1},
    {"--first-failure", 0},
    {"--tag", 1},
    {"--share-gpu", 0},
    {NULL, 0},
};

static const struct recordable *recordable_named(const char *name, size_t n)
{
    for (const struct recordable *r = recordable; r->name; r++)
        if (strlen(r->name) == n && strncmp(r->name, name, n) == 0)
            return r;
    return NULL;
}

static const gcsh_option *row_named(const char *name)
{
    for (const gcsh_option *row = option_table; row->name; row++)
        if (strcmp(row->name, name) == 0)
            return row;
    return NULL;
}

/* Option `name` of o as the word a command line would give for it ("-W",
 * "--timeout=5", "--share-gpu=nomps"), or "" where o does not set it. */
static void word_of(const options *o, const char *name, char *buf, size_t len)
{
    static const char *const tags[] = {"always", "never", "auto"};
    buf[0] = '\0';
    if (strcmp(name, "-W") == 0 && o->warnings)
        snprintf(buf, len, "-W");
    else if (strcmp(name, "--timeout") == 0 && o->timeout_set)
        snprintf(buf, len, "--timeout=%.15g", o->timeout);
    else if (strcmp(name, "--first-failure") == 0 && o->first_failure)
        snprintf(buf, len, "--first-failure");
    else if (strcmp(name, "--share-gpu") == 0 && o->share != GCSH_SHARE_OFF)
        snprintf(buf, len, "--share-gpu%s", o->share == GCSH_SHARE_NOMPS ? "=nomps" : "");
    else if (strcmp(name, "--deadline") == 0 && o->deadline > 0)
        snprintf(buf, len, "--deadline=%.15g", o->deadline);
    else if (strcmp(name, "--deadline-status") == 0 && o->deadline_status_set)
        snprintf(buf, len, "--deadline-status=%d", o->deadline_status);
    else if (strcmp(name, "--tag") == 0 && o->tag_set)
        snprintf(buf, len, "--tag=%s", tags[o->tag]);
}

/* Applies one word of a recording's options line to rec, as the command
 * line would: 0, or an exit status with why. */
static int apply_word(options *rec, const char *path, const char *w, size_t n, char *err,
                      size_t elen)
{
    size_t name_len = strcspn(w, "=");
    if (name_len > n)
        name_len = n;
    const struct recordable *r = recordable_named(w, name_len);
    const gcsh_option *row = r ? row_named(r->name) : NULL;
    if (!row) { /* a newer gcsh's option cannot be replayed here; ours is no such */
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(name_len < 60 ? name_len : 60), w);
        int ours = row_named(name) != NULL;
        snprintf(err, elen, ours ? "%s is malformed: its options line names %s, which no "
                                   "recording notes"
                                 : "%s was recorded with %s, which this gcsh cannot replay",
                 path, name);
        return ours ? GCSH_EXIT_USAGE : GCSH_EXIT_SKIP;
    }
    char val[256] = "";
    int has_val = name_len < n;
    if (has_val && n - name_len - 1 < sizeof val)
        memcpy(val, w + name_len + 1, n - name_len - 1);
    int fits = has_val ? row->takes != OPT_FLAG && n - name_len - 1 < sizeof val
                       : row->takes != OPT_VALUE;
    if (!fits || row->apply(rec, row, has_val ? val : NULL, NULL) != 0) {
        snprintf(err, elen, "%s is malformed: its options line says '%.*s' (%s takes %s)", path,
                 (int)(n < 60 ? n : 60), w, row->name, row->need ? row->need : "no value");
        return GCSH_EXIT_USAGE;
    }
    return 0;
}

/* The options a recording's line names, parsed as the command line's. */
static int parse_recorded(options *rec, const char *path, const char *words, char *err,
                          size_t elen)
{
    *rec = (options){.timeout = 10, .tag = GCSH_TAG_ALWAYS, .deadline_status = 1, .seed = -1};
    for (const char *w = words; *w;) {
        size_t n = strcspn(w, " ");
        for (const char *v = words; v < w; v += strcspn(v, " ") + 1)
            if (strcspn(v, "= ") == strcspn(w, "= ") && strncmp(v, w, strcspn(w, "= ")) == 0) {
                snprintf(err, elen, "%s is malformed: its options line names %.*s twice", path,
                         (int)strcspn(w, "= "), w);
                return GCSH_EXIT_USAGE;
            }
        int st = apply_word(rec, path, w, n, err, elen);
        if (st != 0)
            return st;
        w += n + (w[n] == ' ');
    }
    return 0;
}

/* Appends " word" to a note of len bytes. */
static void note_word(char *note, size_t len, const char *word)
{
    size_t at = strlen(note);
    snprintf(note + at, len - at, "%s%s", at ? " " : "", word);
}

/* --seed, which a recording keeps in its script{} header (seed= and, made
 * with --seed, rand=): read only where the whole recording was (has_seed),
 * a replay's own --seed must be the recording's, since t:rand()'s seeds
 * follow it.  0, or GCSH_EXIT_USAGE with why. */
static int seed_of_recording(const options *o, const gcsh_recording *r, char *note, size_t nlen,
                             char *err, size_t elen)
{
    char want[40] = "";
    if (r->has_seed && r->rand)
        snprintf(want, sizeof want, "--seed=%lld", r->seed);
    if (want[0])
        note_word(note, nlen, want);
    if (!r->has_seed || o->seed < 0 || (r->rand && o->seed == r->seed))
        return 0;
    snprintf(err, elen, "%s was recorded %s %s: leave out --seed=%lld", r->path,
             want[0] ? "with" : "without", want[0] ? want : "--seed", o->seed);
    return GCSH_EXIT_USAGE;
}

int options_from_recording(options *o, const gcsh_recording *recording, char *note, size_t nlen,
                           char *err, size_t elen)
{
    options rec;
    char own_note[512] = "";
    const char *path = recording->path;
    int st = parse_recorded(&rec, path, recording->options, err, elen);
    note[0] = '\0';
    for (const struct recordable *r = recordable; st == 0 && r->name; r++) {
        char want[300], own[300];
        word_of(&rec, r->name, want, sizeof want);
        word_of(o, r->name, own, sizeof own);
        if (want[0] && strcmp(want, own) != 0 && own[0] && r->own_wins)
            note_word(own_note, sizeof own_note, own); /* bounds or tags of its own */
        else if (want[0])
            note_word(note, nlen, want);
        if (strcmp(want, own) == 0 || (own[0] && r->own_wins))
            continue;
        if (own[0]) { /* what it prints or does would differ: no comparison */
            const char *env = strcmp(r->name, "--share-gpu") == 0 ? getenv("GCSH_SHARE_GPU") : NULL;
            snprintf(err, elen, "%s was recorded %s %s: leave out %s%s", path,
                     want[0] ? "with" : "without", want[0] ? want : r->name, own,
                     env && *env ? " (GCSH_SHARE_GPU sets it)" : "");
            st = GCSH_EXIT_USAGE;
        } else {
            const gcsh_option *row = row_named(r->name);
            const char *eq = strchr(want, '=');
            row->apply(o, row, eq ? eq + 1 : NULL, NULL); /* parsed already: it takes it */
        }
    }
    if (st == 0)
        st = seed_of_recording(o, recording, note, nlen, err, elen);
    if (st == 0 && own_note[0]) {
        size_t at = strlen(note);
        snprintf(note + at, nlen - at, "%s(this run's own: %s)", at ? " " : "", own_note);
    }
    return st;
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
