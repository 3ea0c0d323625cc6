/* Recording a session as a replayable script.  See record.h. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "core/safefile.h"
#include "wire/msg.h"
#include "shell/record.h"

extern char **environ;

struct gcsh_recorder {
    gcsh_file file;  /* the temporary beside the recording (safefile.h) */
    char *path;
    int lines;       /* entries written: the next one's number is lines + 1 */
    int failed;      /* a write failed (said): the recording is lost */
    char replaces[160]; /* what FILE held, when it is a recording replaced at the end */
};

/* ---- Lua strings and folded text (shared with replay.c) -------------------- */

static int needs_quotes(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if ((ch < 0x20 && ch != '\n' && ch != '\t') || ch == 0x7f)
            return 1; /* a long string would turn \r into \n, and control bytes are unreadable */
    }
    return 0;
}

static void append_str(gcsh_text *out, const char *s)
{
    gcsh_text_append(out, s, strlen(s));
}

static void quoted(gcsh_text *out, const char *s, size_t n)
{
    append_str(out, "\"");
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        char esc[8];
        if (ch == '\\' || ch == '"')
            snprintf(esc, sizeof esc, "\\%c", ch);
        else if (ch == '\n')
            snprintf(esc, sizeof esc, "\\n");
        else if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
            snprintf(esc, sizeof esc, "\\%03u", ch);
        else
            snprintf(esc, sizeof esc, "%c", ch);
        append_str(out, esc);
    }
    append_str(out, "\"");
}

/* Whether "]" followed by k '=' occurs in s: then a long bracket of level k
 * could close early. */
static int has_close(const char *s, size_t n, int k)
{
    for (size_t i = 0; i + (size_t)k < n; i++) {
        if (s[i] != ']')
            continue;
        int j = 1;
        while (j <= k && s[i + (size_t)j] == '=')
            j++;
        if (j > k)
            return 1;
    }
    return 0;
}

void gcsh_lua_string(gcsh_text *out, const char *s, size_t n)
{
    if (needs_quotes(s, n)) {
        quoted(out, s, n);
        return;
    }
    int k = 2;
    while (has_close(s, n, k))
        k++;
    char eq[64];
    int m = k < (int)sizeof eq - 1 ? k : (int)sizeof eq - 1;
    memset(eq, '=', (size_t)m);
    eq[m] = '\0';
    /* a newline right after the opening bracket is skipped by Lua: text
     * starting with one keeps it */
    append_str(out, "[");
    append_str(out, eq);
    append_str(out, "[\n");
    gcsh_text_append(out, s, n);
    append_str(out, "]");
    append_str(out, eq);
    append_str(out, "]");
}

/* Appends text's lines, each prefixed "[label] ". */
static void prefix_lines(gcsh_text *out, const char *label, const gcsh_text *text)
{
    size_t i = 0;
    while (i < text->len) {
        const char *nl = memchr(text->s + i, '\n', text->len - i);
        size_t end = nl ? (size_t)(nl - text->s) : text->len;
        append_str(out, "[");
        append_str(out, label);
        append_str(out, "] ");
        gcsh_text_append(out, text->s + i, end - i);
        append_str(out, "\n");
        i = end + 1;
    }
}

static int same_text(const gcsh_text *a, const gcsh_text *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->s, b->s, a->len) == 0);
}

void gcsh_fold_groups(gcsh_text *out, int size, const gcsh_text *texts, const char *ran,
                      const char *pick)
{
    char *done = calloc((size_t)size, 1);
    int *group = malloc((size_t)size * sizeof *group);
    char label[1024];
    for (int r = 0; r < size; r++) {
        if (done[r] || !ran[r] || (pick && !pick[r]) || texts[r].len == 0)
            continue;
        int g = 0;
        for (int q = r; q < size; q++)
            if (!done[q] && ran[q] && (!pick || pick[q]) && same_text(&texts[q], &texts[r])) {
                group[g++] = q;
                done[q] = 1;
            }
        gcsh_format_ranks(group, g, label, sizeof label);
        prefix_lines(out, label, &texts[r]);
    }
    free(done);
    free(group);
}

/* ---- the header ------------------------------------------------------------ */

/* Every rank's device (and CUDA versions), asked with a quiet command. */
static const char DEVICE_PROBE[] =
    "local ok, i = pcall(gcsh.info)\n"
    "i = ok and type(i) == 'table' and i or {}\n"
    "local cuda = i.runtime_version and string.format(' (CUDA runtime %s, driver %s)',\n"
    "    tostring(i.runtime_version), tostring(i.driver_version)) or ''\n"
    "print(gcsh.device .. cuda)\n";

static void write_devices(gcsh_recorder *r, gcsh_session *s)
{
    gcsh_coord *c = s->coord;
    gcsh_tap tap;
    gcsh_session_aside(s, DEVICE_PROBE, &tap);
    for (int k = 0; k < c->size; k++) /* one line each: drop the newline */
        if (tap.out[k].len && tap.out[k].s[tap.out[k].len - 1] == '\n')
            tap.out[k].s[--tap.out[k].len] = '\0';
    gcsh_text folded = {0};
    gcsh_fold_groups(&folded, c->size, tap.out, tap.ran, NULL);
    const char *p = folded.s ? folded.s : "";
    while (*p) { /* "-- device [0-1] cpu" per group */
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        gcsh_file_printf(&r->file, "-- device %.*s\n", (int)n, p);
        p += n + (nl != NULL);
    }
    gcsh_text_free(&folded);
    gcsh_tap_destroy(&tap, c->size);
}

/* Variables that change what gcsh, NCCL or CUDA do (GCSH_HISTORY and the
 * tests' GCSH_TEST_TAG do not). */
static int behaviour_env(const char *kv)
{
    if (strncmp(kv, "GCSH_HISTORY=", 13) == 0 || strncmp(kv, "GCSH_TEST_TAG=", 14) == 0)
        return 0;
    return strncmp(kv, "NCCL_", 5) == 0 || strncmp(kv, "GCSH_", 5) == 0 ||
           strncmp(kv, "CUDA_VISIBLE_DEVICES=", 21) == 0;
}

/* The seed math.random gets on every rank (with the rank), for the
 * recording and its replays alike. */
static long long new_seed(void)
{
    unsigned v = 0;
    if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
        v = (unsigned)time(NULL) ^ (unsigned)getpid();
    return (long long)(v & 0x7fffffff);
}

/* Appends " " and the word fmt makes to buf (len bytes, NUL-terminated). */
static void add_word(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add_word(char *buf, size_t len, const char *fmt, ...)
{
    size_t at = strlen(buf);
    if (at + 1 >= len)
        return;
    buf[at++] = ' ';
    buf[at] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + at, len - at, fmt, ap);
    va_end(ap);
}

/* The command-line options the session runs with that change what it
 * prints or does, as words gcsh's command line takes (GCSH_RECORD_OPTIONS,
 * record.h): the settings now, which .timeout and gcsh.timeout or
 * gcsh.deadline may have changed since the start; "" when none. */
static void record_options(const gcsh_session *s, char *buf, size_t len)
{
    const gcsh_coord *c = s->coord;
    buf[0] = '\0';
    if (s->warnings)
        add_word(buf, len, "-W");
    if (c->limit > 0) /* a limit was set: checks fail after it (0: they wait) */
        add_word(buf, len, "--timeout=%.15g", c->limit);
    if (c->deadline_s > 0)
        add_word(buf, len, "--deadline=%.15g", c->deadline_s);
    if (c->deadline_status != 1)
        add_word(buf, len, "--deadline-status=%d", c->deadline_status);
    if (c->first_failure)
        add_word(buf, len, "--first-failure");
    if (c->size > 1 && c->fold.tag != GCSH_TAG_ALWAYS)
        add_word(buf, len, "--tag=%s", c->fold.tag == GCSH_TAG_NEVER ? "never" : "auto");
    if (c->ctx->share.mode != GCSH_SHARE_OFF)
        add_word(buf, len, "--share-gpu%s", c->ctx->share.mode == GCSH_SHARE_NOMPS ? "=nomps" : "");
    if (buf[0] == ' ')
        memmove(buf, buf + 1, strlen(buf));
}

static void write_header(gcsh_recorder *r, gcsh_session *s, const char *path, long long seed)
{
    gcsh_ctx *ctx = s->coord->ctx;
    gcsh_file *f = &r->file;
    char mpi[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int mlen = 0;
    MPI_Get_library_version(mpi, &mlen);
    mpi[strcspn(mpi, "\n,")] = '\0';
    time_t now = time(NULL);
    char when[64];
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&now));
    gcsh_file_printf(f, "#!/usr/bin/env gcsh\n");
    char opts[400];
    record_options(s, opts, sizeof opts);
    gcsh_file_printf(f, "-- gcsh recording (format %d): %d rank%s, backend %s\n",
                     GCSH_RECORD_FORMAT, ctx->size, ctx->size == 1 ? "" : "s", ctx->be->name);
    gcsh_file_printf(f, "%s %s\n", GCSH_RECORD_OPTIONS, opts[0] ? opts : "none");
    gcsh_file_printf(f, "-- Replay and compare every line's output: gcsh --replay %s\n", path);
    gcsh_file_printf(f, "-- Rerun as a plain script:                 gcsh -n %d %s%s%s\n",
                     ctx->size, opts, opts[0] ? " " : "", path);
    gcsh_file_printf(f, "-- Recorded %s with gcsh %s, %s, %s\n", when, GCSH_VERSION, LUA_RELEASE,
                     mpi);
    write_devices(r, s);
    for (char **e = environ; *e; e++)
        if (behaviour_env(*e))
            gcsh_file_printf(f, "-- env %s\n", *e);
    gcsh_file_printf(f, "-- Data: :rand() without a seed is seeded with the rank%s, so at %d "
                        "ranks every\n-- tensor gets the values it had when this was recorded; "
                        "math.random is seeded\n-- with (seed, rank), and gcsh.wtime returns "
                        "on replay what it returned here.\n",
                     ctx->seeded ? " and the seed (--seed)" : "", ctx->size);
    gcsh_file_printf(f, "-- Each line(N, ranks, source, expected) below is one line of the "
                        "session: it\n-- runs on those ranks; out is what each rank group "
                        "printed (varies: read a\n-- clock or an address, so not compared), "
                        "failed the ranks that raised an error.\n");
    gcsh_file_printf(f, "local line = require(\"gcsh.record\").script { ranks = %d, backend = "
                        "\"%s\", seed = %lld%s }\n\n", ctx->size, ctx->be->name, seed,
                     ctx->seeded ? ", rand = true" : "");
}

/* Whether FILE holds a gcsh recording; what it is, into what. */
static int is_recording(const char *path, char *what, size_t len)
{
    FILE *f = fopen(path, "r");
    char line[512], when[64] = "";
    int format = 0, ranks = 0, lines = 0, found = 0;
    while (f && fgets(line, sizeof line, f)) {
        found |= sscanf(line, "-- gcsh recording (format %d): %d rank", &format, &ranks) == 2;
        if (sscanf(line, "-- Recorded %63[0-9: -]", when) == 1)
            for (size_t k = strlen(when); k && when[k - 1] == ' ';)
                when[--k] = '\0';
        lines += strncmp(line, "line(", 5) == 0 || strncmp(line, "line.dot(", 9) == 0 ||
                 strncmp(line, "line.chunk(", 11) == 0;
    }
    if (f)
        fclose(f);
    if (found)
        snprintf(what, len, "a recording of %d line%s at %d rank%s%s%s", lines,
                 lines == 1 ? "" : "s", ranks, ranks == 1 ? "" : "s", when[0] ? ", made " : "",
                 when);
    return found;
}

/* ---- writing ------------------------------------------------------------------ */

/* Flushes what is written to the temporary; a failure stops the recording
 * (said once) and counts as a failure of the session: it cannot do what
 * it was asked (GCSH_EXIT_SKIP, gcsh_session_status). */
static void flush_checked(gcsh_recorder *r, gcsh_session *s)
{
    if (r->failed || gcsh_file_flush(&r->file) == 0)
        return;
    r->failed = 1;
    gcsh_coord_say(s->coord, "gcsh: .record: cannot write %s: %s; the recording stopped (%s is "
                             "left as it was)", r->path, strerror(r->file.err), r->path);
    s->failures++;
    s->harness_failures++;
}

static void write_text(gcsh_recorder *r, gcsh_session *s, const gcsh_text *t)
{
    if (r->failed)
        return;
    gcsh_file_write(&r->file, t->s ? t->s : "", t->len);
    flush_checked(r, s);
}

static int record_close(gcsh_recorder *r, gcsh_coord *c);

static gcsh_recorder *record_open(gcsh_session *s, const char *path)
{
    char err[PATH_MAX + 200], replaces[160] = "";
    if (gcsh_file_check(path, err, sizeof err) != 0) {
        gcsh_coord_say(s->coord, "gcsh: .record: %s", err);
        return NULL;
    }
    if (access(path, F_OK) == 0 && !is_recording(path, replaces, sizeof replaces)) {
        gcsh_coord_say(s->coord, "gcsh: .record: %s exists and is not a gcsh recording: gcsh does "
                                 "not replace it (remove it, or record to another name)", path);
        return NULL;
    }
    gcsh_recorder *r = calloc(1, sizeof *r);
    if (gcsh_file_open(&r->file, path, err, sizeof err) != 0) {
        gcsh_coord_say(s->coord, "gcsh: .record: %s", err);
        free(r);
        return NULL;
    }
    r->path = strdup(path);
    snprintf(r->replaces, sizeof r->replaces, "%s", replaces);
    gcsh_ctx *ctx = s->coord->ctx;
    long long seed = ctx->seeded ? ctx->seed : new_seed(); /* --seed: the run's own */
    write_header(r, s, path, seed);
    char src[96];
    gcsh_tap tap;
    snprintf(src, sizeof src, "require('gcsh.record').seed(%lld%s)", seed,
             ctx->seeded ? ", true" : "");
    gcsh_session_aside(s, src, &tap);
    gcsh_tap_destroy(&tap, s->coord->size);
    flush_checked(r, s);
    if (r->failed) {
        record_close(r, s->coord);
        return NULL;
    }
    if (replaces[0])
        gcsh_coord_error(s->coord, "recording to %s (it replaces %s when the recording ends)",
                         path, replaces);
    else /* notes on stderr: stdout is the program's output */
        gcsh_coord_error(s->coord, "recording to %s", path);
    return r;
}

void gcsh_record_say(gcsh_session *s)
{
    const gcsh_recorder *r = s->rec;
    gcsh_coord *c = s->coord;
    if (r)
        gcsh_coord_say(c, "recording to %s (%d line%s so far)", r->path, r->lines,
                       r->lines == 1 ? "" : "s");
    else
        gcsh_coord_say(c, "not recording (.record FILE starts)");
}

static void release(gcsh_recorder *r)
{
    gcsh_file_discard(&r->file);
    free(r->path);
    free(r);
}

static int record_close(gcsh_recorder *r, gcsh_coord *c)
{
    if (!r)
        return 0;
    char err[PATH_MAX + 200];
    int rc = -1;
    if (r->failed) {
        /* said when it failed */
    } else if (r->lines == 0) {
        gcsh_coord_say(c, "gcsh: .record: nothing was recorded: %s not written%s", r->path,
                       r->replaces[0] ? " (the recording there is kept)" : "");
    } else {
        gcsh_file_printf(&r->file, "\n-- The recording ends here: %d line%s (a file without this "
                                   "line was cut short).\nline.finish(%d)\n",
                         r->lines, r->lines == 1 ? "" : "s", r->lines);
        rc = gcsh_file_commit(&r->file, err, sizeof err);
        if (rc == 0)
            gcsh_coord_error(c, "recording written to %s: %d line%s", r->path, r->lines,
                             r->lines == 1 ? "" : "s");
        else
            gcsh_coord_say(c, "gcsh: .record: %s", err);
    }
    release(r);
    return rc;
}

/* ---- entries ---------------------------------------------------------------- */

/* An interrupted line is kept as a comment: rerun, it would run to its end
 * (or forever) where the session stopped it. */
static void write_interrupted(gcsh_recorder *r, gcsh_session *s, const char *chunk)
{
    gcsh_text e = {0};
    append_str(&e, "-- interrupted (Ctrl-C), not replayed:\n");
    for (const char *p = chunk; *p;) {
        size_t n = strcspn(p, "\n");
        append_str(&e, "--   ");
        gcsh_text_append(&e, p, n);
        append_str(&e, "\n");
        p += n + (p[n] == '\n');
    }
    append_str(&e, "\n");
    write_text(r, s, &e);
    gcsh_text_free(&e);
}

/* ", key = " between the fields of the expected table. */
static void field(gcsh_text *e, const char **sep, const char *key)
{
    append_str(e, *sep);
    append_str(e, key);
    append_str(e, " = ");
    *sep = ", ";
}

/* wtime = {[0] = {t, ...}, [1] = {...}}: what gcsh.wtime returned on each rank. */
static void append_tape(gcsh_text *e, const char **sep, const gcsh_tap *tap, int size)
{
    int any = 0;
    for (int r = 0; r < size && !any; r++)
        any = tap->tape[r].len >= sizeof(double);
    if (!any)
        return;
    field(e, sep, "wtime");
    append_str(e, "{");
    const char *rsep = "";
    char num[40];
    for (int r = 0; r < size; r++) {
        size_t n = tap->tape[r].len / sizeof(double);
        if (!n)
            continue;
        snprintf(num, sizeof num, "%s[%d] = {", rsep, r);
        append_str(e, num);
        for (size_t i = 0; i < n; i++) {
            double v;
            memcpy(&v, tap->tape[r].s + i * sizeof v, sizeof v);
            snprintf(num, sizeof num, "%s%.17g", i ? ", " : "", v);
            append_str(e, num);
        }
        append_str(e, "}");
        rsep = ", ";
    }
    append_str(e, "}");
}

/* How the session ended at once during this line. */
typedef struct ending {
    int status;
    const char *why;
    char lost[256];
} ending;

/* The expected table: what the line gave (and how it ended), or nothing. */
static void append_expected(gcsh_text *e, gcsh_session *s, const gcsh_line_result *res,
                            const gcsh_chunk *k, const ending *end)
{
    int size = s->coord->size;
    char failed[1024], buf[1200];
    gcsh_text folded = {0};
    if (res->ran)
        gcsh_fold_groups(&folded, size, res->tap.out, res->tap.ran, NULL);
    int nfailed = res->ran ? gcsh_tap_ranks(&res->tap, size, CHUNK_ERROR, failed, sizeof failed) : 0;
    size_t before = e->len;
    const char *sep = "";
    append_str(e, ", {");
    if (k && k->nargs) {
        field(e, &sep, "args");
        append_str(e, "{");
        for (int i = 0; i < k->nargs; i++) {
            append_str(e, i ? ", " : "");
            quoted(e, k->args[i], strlen(k->args[i]));
        }
        append_str(e, "}");
    }
    if (res->syntax_error) {
        field(e, &sep, "syntax");
        gcsh_lua_string(e, s->syntax_msg, strlen(s->syntax_msg));
    }
    if (nfailed) {
        field(e, &sep, "failed");
        snprintf(buf, sizeof buf, "\"%s\"", failed);
        append_str(e, buf);
    }
    if (res->exit_code >= 0) {
        field(e, &sep, "exit");
        snprintf(buf, sizeof buf, "%d", res->exit_code);
        append_str(e, buf);
        /* which ranks called os.exit: a replay where another rank does is
         * another run (the status alone would match) */
        char exited[1024];
        if (res->ran && gcsh_tap_ranks(&res->tap, size, CHUNK_EXIT, exited, sizeof exited) > 0) {
            field(e, &sep, "exited");
            snprintf(buf, sizeof buf, "\"%s\"", exited);
            append_str(e, buf);
        }
    }
    if (res->ran && res->tap.varies) {
        field(e, &sep, "varies");
        append_str(e, "true");
    }
    if (res->ran)
        append_tape(e, &sep, &res->tap, size);
    if (end) {
        field(e, &sep, "ended");
        snprintf(buf, sizeof buf, "{status = %d, lost = \"%s\", why = ", end->status, end->lost);
        append_str(e, buf);
        gcsh_lua_string(e, end->why, strlen(end->why));
        append_str(e, "}");
    }
    if (folded.len) {
        field(e, &sep, "out");
        gcsh_lua_string(e, folded.s, folded.len);
    }
    if (*sep)
        append_str(e, "}");
    else
        e->len = before; /* nothing to expect */
    gcsh_text_free(&folded);
}

/* One entry: line(N, ranks, src, ...) or line.chunk(N, ranks, name, src, ...). */
static void write_entry(gcsh_recorder *r, gcsh_session *s, const gcsh_chunk *k, const char *src,
                        const gcsh_line_result *res, const ending *end)
{
    char ranks[1024], failed[1024];
    gcsh_session_targets(s, ranks, sizeof ranks);
    if (!end && res->ran &&
        gcsh_tap_ranks(&res->tap, s->coord->size, CHUNK_INTERRUPTED, failed, sizeof failed)) {
        write_interrupted(r, s, src);
        return;
    }
    gcsh_text e = {0};
    char head[1200];
    snprintf(head, sizeof head, k ? "line.chunk(%d, \"%s\", " : "line(%d, \"%s\", ", ++r->lines,
             ranks);
    append_str(&e, head);
    if (k) {
        quoted(&e, k->name, strlen(k->name));
        append_str(&e, ", ");
    }
    gcsh_lua_string(&e, src, strlen(src));
    append_expected(&e, s, res, k, end);
    append_str(&e, ")\n");
    write_text(r, s, &e);
    gcsh_text_free(&e);
}

/* The rider's ran: a typed line, or a chunk of the command line. */
static void record_ran(gcsh_session *s, const gcsh_chunk *k, const gcsh_line_result *res)
{
    if (k->flags & CHUNK_PRINT_RESULTS) { /* typed: its text is a string */
        write_entry(s->rec, s, NULL, k->src, res, NULL);
        return;
    }
    gcsh_text src = {0};
    gcsh_text_append(&src, k->src, k->len);
    write_entry(s->rec, s, k, src.s ? src.s : "", res, NULL);
    gcsh_text_free(&src);
}

/* The rider's ending: the running line with how the session ended, then
 * the recording ends. */
static int record_ending(gcsh_session *s, int status, const char *why)
{
    gcsh_recorder *r = s->rec;
    s->rec = NULL;
    const gcsh_chunk *k = s->running;
    gcsh_coord *c = s->coord;
    gcsh_text text = {0}; /* "rank 1: killed by signal 11: ...; why" */
    ending end = {.status = status};
    for (int q = 0; q < c->size; q++) {
        if (!c->lost[q])
            continue;
        char part[128];
        snprintf(part, sizeof part, "rank %d: %s; ", q, c->lost_why[q]);
        append_str(&text, part);
    }
    append_str(&text, why);
    gcsh_format_ranks_where(c->size, gcsh_rank_in_mask, c->lost, end.lost, sizeof end.lost, NULL);
    end.why = text.s;
    if (k && s->running_res) {
        int script = !(k->flags & CHUNK_PRINT_RESULTS); /* not a typed line */
        gcsh_text src = {0};
        gcsh_text_append(&src, k->src, k->len);
        write_entry(r, s, script ? k : NULL, src.s ? src.s : "", s->running_res, &end);
        gcsh_text_free(&src);
    }
    gcsh_text_free(&text);
    return record_close(r, c);
}

/* The rider's dot: a dot-command line, before it runs; .record itself is
 * not recorded. */
static void record_dot(gcsh_session *s, const char *line)
{
    gcsh_recorder *r = s->rec;
    const char *cmd = line + 1;
    size_t n = strcspn(cmd, " \t");
    /* .record is how the recording starts and stops; .quit ends it; .help
     * and .abort change nothing */
    static const char *const skip[] = {"record", "quit", "exit", "help", "abort", NULL};
    for (const char *const *k = skip; *k; k++)
        if (strlen(*k) == n && strncmp(cmd, *k, n) == 0)
            return;
    char ranks[1024];
    gcsh_session_targets(s, ranks, sizeof ranks);
    gcsh_text e = {0};
    char head[1200];
    snprintf(head, sizeof head, "line.dot(%d, \"%s\", ", ++r->lines, ranks);
    append_str(&e, head);
    gcsh_lua_string(&e, line, strlen(line));
    append_str(&e, ")\n");
    write_text(r, s, &e);
    gcsh_text_free(&e);
}

static int record_leave(gcsh_session *s)
{
    gcsh_recorder *r = s->rec;
    s->rec = NULL;
    return record_close(r, s->coord);
}

static const gcsh_rider recorder_rider = {
    .ran = record_ran, .dot = record_dot, .ending = record_ending, .close = record_leave,
};

int gcsh_record_start(gcsh_session *s, const char *path)
{
    gcsh_recorder *r = record_open(s, path);
    if (!r)
        return -1;
    s->rec = r;
    s->rec_ops = &recorder_rider;
    return 0;
}
