/* Recording a session as a replayable script.  See record.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "wire/msg.h"
#include "shell/record.h"

extern char **environ;

struct gcsh_recorder {
    FILE *f;
    char *path;
    int lines; /* entries written: the next one's number is lines + 1 */
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

static void write_devices(FILE *f, gcsh_coord *c)
{
    char *all = malloc((size_t)c->size);
    memset(all, 1, (size_t)c->size);
    gcsh_tap tap;
    gcsh_tap_init(&tap, c->size);
    tap.quiet = 1;
    c->tap = &tap;
    gcsh_run_result res;
    gcsh_coord_run(c, all, 0, "=record", DEVICE_PROBE, sizeof DEVICE_PROBE - 1, &res);
    c->tap = NULL;
    for (int r = 0; r < c->size; r++) /* one line each: drop the newline */
        if (tap.out[r].len && tap.out[r].s[tap.out[r].len - 1] == '\n')
            tap.out[r].s[--tap.out[r].len] = '\0';
    gcsh_text folded = {0};
    gcsh_fold_groups(&folded, c->size, tap.out, tap.ran, NULL);
    const char *p = folded.s ? folded.s : "";
    while (*p) { /* "-- device [0-1] cpu" per group */
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        fprintf(f, "-- device %.*s\n", (int)n, p);
        p += n + (nl != NULL);
    }
    gcsh_text_free(&folded);
    gcsh_tap_destroy(&tap, c->size);
    free(all);
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

static void write_header(FILE *f, gcsh_session *s, const char *path)
{
    gcsh_ctx *ctx = s->coord->ctx;
    char mpi[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int mlen = 0;
    MPI_Get_library_version(mpi, &mlen);
    mpi[strcspn(mpi, "\n,")] = '\0';
    time_t now = time(NULL);
    char when[64];
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&now));
    fprintf(f, "#!/usr/bin/env gcsh\n");
    fprintf(f, "-- gcsh recording (format %d): %d rank%s, backend %s\n", GCSH_RECORD_FORMAT,
            ctx->size, ctx->size == 1 ? "" : "s", ctx->be->name);
    fprintf(f, "-- Replay and compare every line's output: gcsh --replay %s\n", path);
    fprintf(f, "-- Rerun as a plain script:                 gcsh -n %d %s\n", ctx->size, path);
    fprintf(f, "-- Recorded %s with gcsh %s, %s, %s\n", when, GCSH_VERSION, LUA_RELEASE, mpi);
    write_devices(f, s->coord);
    for (char **e = environ; *e; e++)
        if (behaviour_env(*e))
            fprintf(f, "-- env %s\n", *e);
    fprintf(f, "-- Data: :rand() without a seed is seeded with the rank, so at %d ranks every\n"
               "-- tensor gets the values it had when this was recorded.\n",
            ctx->size);
    fprintf(f, "-- Each line(N, ranks, source, expected) below is one line of the session: it\n"
               "-- runs on those ranks; out is what each rank group printed (varies: read a\n"
               "-- clock or an address, so not compared), failed the ranks that raised an error.\n");
    fprintf(f, "local line = require(\"gcsh.record\").script { ranks = %d, backend = \"%s\" }\n\n",
            ctx->size, ctx->be->name);
}

gcsh_recorder *gcsh_record_open(gcsh_session *s, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        gcsh_coord_say(s->coord, "gcsh: .record: cannot write %s: %s", path, strerror(errno));
        return NULL;
    }
    gcsh_recorder *r = calloc(1, sizeof *r);
    r->f = f;
    r->path = strdup(path);
    write_header(f, s, path);
    fflush(f);
    gcsh_coord_say(s->coord, "recording to %s", path);
    return r;
}

void gcsh_record_say(const gcsh_recorder *r, gcsh_coord *c)
{
    if (r)
        gcsh_coord_say(c, "recording to %s (%d line%s so far)", r->path, r->lines,
                       r->lines == 1 ? "" : "s");
    else
        gcsh_coord_say(c, "not recording (.record FILE starts)");
}

void gcsh_record_close(gcsh_recorder *r)
{
    if (!r)
        return;
    fclose(r->f);
    free(r->path);
    free(r);
}

/* ---- entries ---------------------------------------------------------------- */

static void write_text(gcsh_recorder *r, const gcsh_text *t)
{
    fwrite(t->s ? t->s : "", 1, t->len, r->f);
}

/* "1,3": the ranks that ran and ended with an error or an interrupt. */
static int failed_ranks(const gcsh_tap *tap, int size, uint32_t want, char *buf, size_t len)
{
    int *list = malloc((size_t)size * sizeof *list), n = 0;
    for (int r = 0; r < size; r++)
        if (tap->ran[r] && tap->status[r] == want)
            list[n++] = r;
    gcsh_format_ranks(list, n, buf, len);
    free(list);
    return n;
}

/* An interrupted line is kept as a comment: rerun, it would run to its end
 * (or forever) where the session stopped it. */
static void write_interrupted(gcsh_recorder *r, const char *chunk)
{
    fprintf(r->f, "-- interrupted (Ctrl-C), not replayed:\n");
    for (const char *p = chunk; *p;) {
        size_t n = strcspn(p, "\n");
        fprintf(r->f, "--   %.*s\n", (int)n, p);
        p += n + (p[n] == '\n');
    }
    fputc('\n', r->f);
}

void gcsh_record_line(gcsh_recorder *r, gcsh_session *s, const char *chunk,
                      const gcsh_line_result *res)
{
    int size = s->coord->size;
    char ranks[1024], failed[1024];
    gcsh_session_targets(s, ranks, sizeof ranks);
    if (res->ran && failed_ranks(&res->tap, size, CHUNK_INTERRUPTED, failed, sizeof failed)) {
        write_interrupted(r, chunk);
        return;
    }
    gcsh_text e = {0};
    char head[1200];
    snprintf(head, sizeof head, "line(%d, \"%s\", ", ++r->lines, ranks);
    append_str(&e, head);
    gcsh_lua_string(&e, chunk, strlen(chunk));
    gcsh_text folded = {0};
    if (res->ran)
        gcsh_fold_groups(&folded, size, res->tap.out, res->tap.ran, NULL);
    int nfailed = res->ran ? failed_ranks(&res->tap, size, CHUNK_ERROR, failed, sizeof failed) : 0;
    if (res->syntax_error || folded.len || nfailed || res->exit_code >= 0) {
        append_str(&e, ", {");
        const char *sep = "";
        if (res->syntax_error) {
            append_str(&e, "syntax = ");
            gcsh_lua_string(&e, s->syntax_msg, strlen(s->syntax_msg));
            sep = ", ";
        }
        if (nfailed) {
            snprintf(head, sizeof head, "%sfailed = \"%s\"", sep, failed);
            append_str(&e, head);
            sep = ", ";
        }
        if (res->exit_code >= 0) {
            snprintf(head, sizeof head, "%sexit = %d", sep, res->exit_code);
            append_str(&e, head);
            sep = ", ";
        }
        if (res->ran && res->tap.varies) {
            append_str(&e, sep);
            append_str(&e, "varies = true");
            sep = ", ";
        }
        if (folded.len) {
            append_str(&e, sep);
            append_str(&e, "out = ");
            gcsh_lua_string(&e, folded.s, folded.len);
        }
        append_str(&e, "}");
    }
    append_str(&e, ")\n");
    write_text(r, &e);
    fflush(r->f);
    gcsh_text_free(&e);
    gcsh_text_free(&folded);
}

void gcsh_record_dot(gcsh_recorder *r, gcsh_session *s, const char *line)
{
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
    write_text(r, &e);
    fflush(r->f);
    gcsh_text_free(&e);
}
