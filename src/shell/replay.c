/* Replaying a recording and comparing it line by line.  See record.h.
 *
 * The recording was read and checked before MPI started (replay_read.h):
 * its entries are plain C here, each within the recording's rank count.
 * They run through the session as if typed (or, for chunks, as the command
 * line ran them), each with the values gcsh.wtime returned when it was
 * recorded. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/msg.h"
#include "shell/record.h"
#include "shell/replay_read.h"
#include "shell/sigint.h"

/* The replay in progress (session.replay), for the ending of a line that
 * ends the session at once (replay_ending). */
struct gcsh_replayer {
    const char *path;
    int keep_going;
    int index, at;          /* the entry running: its number and its line in the file */
    int expect_status;      /* its recorded ending (-1: none) */
    const char *expect_lost, *expect_why;
    int lines, varied;      /* entries replayed; of those, with output not compared */
    gcsh_text differ;       /* "3, 7": the entries that differed */
    int ndiffer;
    int untestable;         /* the entry that could not be tested here (0: none) */
};

/* ---- one entry ------------------------------------------------------------- */

/* The "[ranks] text" lines of a recorded output, back into per-rank texts
 * (the reader checked every range; they are clamped to 0..size-1 all the
 * same, so no range walks past the ranks there are). */
static void unfold(const char *out, size_t len, int size, gcsh_text *texts)
{
    for (const char *p = out, *end = out ? out + len : NULL; p && p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        const char *close = p[0] == '[' ? memchr(p, ']', n) : NULL;
        if (close && close + 1 < p + n && close[1] == ' ') {
            const char *text = close + 2;
            size_t tlen = (size_t)(p + n - text);
            for (const char *q = p + 1; q < close;) {
                char *end;
                long a = strtol(q, &end, 10), b = a;
                if (*end == '-')
                    b = strtol(end + 1, &end, 10);
                for (long r = a < 0 ? 0 : a; r <= b && r < size; r++) {
                    gcsh_text_append(&texts[r], text, tlen);
                    gcsh_text_append(&texts[r], "\n", 1);
                }
                q = *end == ',' ? end + 1 : close;
            }
        }
        p += n + (nl != NULL);
    }
}

static int is_hex(char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

/* Output as it is compared: a last line without its newline gets one (the
 * terminal shows it that way), and addresses ("0x" and 8 to 12 hex digits,
 * as a 48-bit pointer prints: tostring of a table, a file, w:info()) read
 * "0x?", since they differ between runs.  (t:checksum() prints 16 digits:
 * compared.) */
static void normalise(gcsh_text *out, const gcsh_text *in)
{
    size_t i = 0;
    while (i < in->len) {
        size_t j = i + 2;
        while (j < in->len && is_hex(in->s[j]))
            j++;
        size_t digits = j - i - 2;
        if (i + 1 < in->len && in->s[i] == '0' && in->s[i + 1] == 'x' && digits >= 8 &&
            digits <= 12) {
            gcsh_text_append(out, "0x?", 3);
            i = j;
        } else {
            gcsh_text_append(out, in->s + i, 1);
            i++;
        }
    }
    if (out->len && out->s[out->len - 1] != '\n')
        gcsh_text_append(out, "\n", 1);
}

static void say_block(gcsh_coord *c, const char *title, const gcsh_text *t)
{
    gcsh_coord_say(c, "gcsh:   %s:", title);
    if (t->len)
        fprintf(c->err, "%s", t->s);
    else
        gcsh_coord_error(c, "(nothing)");
    fflush(c->err);
}

typedef gcsh_replay_entry entry;

/* Notes that entry `index` differed: the replay fails, and with
 * --keep-going goes on. */
static void note_difference(gcsh_replayer *rp, int index)
{
    char num[24];
    snprintf(num, sizeof num, "%s%d", rp->ndiffer ? ", " : "", index);
    gcsh_text_append(&rp->differ, num, strlen(num));
    rp->ndiffer++;
}

static int compare_output(gcsh_session *s, const char *where, const entry *e,
                          const gcsh_line_result *res)
{
    gcsh_coord *c = s->coord;
    int size = c->size, ndiff = 0;
    gcsh_text *want = calloc((size_t)size, sizeof *want);
    char *differ = calloc((size_t)size, 1);
    int *ranks = malloc((size_t)size * sizeof *ranks);
    unfold(e->out, e->out_len, size, want);
    for (int r = 0; r < size; r++) {
        gcsh_text got = {0}, exp = {0};
        if (res->tap.ran[r])
            normalise(&got, &res->tap.out[r]);
        normalise(&exp, &want[r]);
        differ[r] = got.len != exp.len || (got.len && memcmp(got.s, exp.s, got.len) != 0);
        if (differ[r])
            ranks[ndiff++] = r;
        gcsh_text_free(&got);
        gcsh_text_free(&exp);
    }
    if (ndiff) {
        char label[1024];
        gcsh_format_ranks(ranks, ndiff, label, sizeof label);
        char *all = malloc((size_t)size);
        memset(all, 1, (size_t)size);
        gcsh_text a = {0}, b = {0};
        gcsh_fold_groups(&a, size, want, all, differ);
        gcsh_fold_groups(&b, size, res->tap.out, res->tap.ran, differ);
        gcsh_coord_say(c, "%s differs on [%s]", where, label);
        say_block(c, "expected", &a);
        say_block(c, "got", &b);
        gcsh_text_free(&a);
        gcsh_text_free(&b);
        free(all);
    }
    for (int r = 0; r < size; r++)
        gcsh_text_free(&want[r]);
    free(want);
    free(differ);
    free(ranks);
    return ndiff ? -1 : 0;
}

/* How a line ended by os.exit, for a difference: "os.exit (status 3) on
 * [2]", "no os.exit" (ranks NULL: not recorded). */
static void describe_exit(char *buf, size_t len, int status, const char *ranks)
{
    if (status < 0)
        snprintf(buf, len, "no os.exit");
    else if (ranks)
        snprintf(buf, len, "os.exit (status %d) on [%s]", status, ranks);
    else
        snprintf(buf, len, "os.exit (status %d)", status);
}

/* Compares what ran with the entry; 0 when equal, else reports and -1. */
static int compare(gcsh_session *s, const char *path, const entry *e, int index,
                   const gcsh_line_result *res)
{
    gcsh_coord *c = s->coord;
    char where[600];
    snprintf(where, sizeof where, "gcsh: replay: %s:%d: line %d", path, e->at, index);
    /* a syntax error: the message, once, from rank 0's compiler */
    if (!!e->syntax != !!res->syntax_error ||
        (e->syntax && strcmp(e->syntax, s->syntax_msg) != 0)) {
        gcsh_coord_say(c, "%s differs in its syntax error", where);
        gcsh_coord_say(c, "gcsh:   expected: %s", e->syntax ? e->syntax : "(it compiles)");
        gcsh_coord_say(c, "gcsh:   got:      %s", res->syntax_error ? s->syntax_msg : "(it compiles)");
        return -1;
    }
    if (e->end_status >= 0) {
        gcsh_coord_say(c, "%s: the recording ended the session here (status %d, [%s] lost: %s); "
                          "the replay went on", where, e->end_status, e->end_lost ? e->end_lost : "",
                       e->end_why ? e->end_why : "");
        return -1;
    }
    if (!res->ran)
        return 0;
    char failed[1024];
    gcsh_tap_ranks(&res->tap, s->coord->size, CHUNK_ERROR, failed, sizeof failed);
    int rc = 0;
    if (strcmp(failed, e->failed ? e->failed : "") != 0) {
        gcsh_coord_say(c, "%s: the ranks that failed differ: expected [%s], got [%s]", where,
                       e->failed ? e->failed : "", failed);
        rc = -1;
    }
    char exited[1024];
    gcsh_tap_ranks(&res->tap, s->coord->size, CHUNK_EXIT, exited, sizeof exited);
    if (e->exit_code != res->exit_code ||
        (e->exited && res->exit_code >= 0 && strcmp(exited, e->exited) != 0)) {
        char want[1100], got[1100];
        describe_exit(want, sizeof want, e->exit_code, e->exited);
        describe_exit(got, sizeof got, res->exit_code, res->exit_code >= 0 ? exited : NULL);
        gcsh_coord_say(c, "%s: expected %s, got %s", where, want, got);
        rc = -1;
    }
    if (rc != 0 || e->varies || res->tap.varies)
        return rc; /* varying output is shown, not compared */
    return compare_output(s, where, e, res);
}

/* A chunk of the command line, shown as the prompt would have: by its
 * name and arguments ("gcsh[0-1]> -- the script f.lua a b"). */
static void echo_chunk(gcsh_session *s, const entry *e)
{
    char prompt[600];
    gcsh_text args = {0};
    for (int i = 0; i < e->nargs; i++) {
        gcsh_text_append(&args, " ", 1);
        gcsh_text_append(&args, e->args[i], strlen(e->args[i]));
    }
    gcsh_session_prompt(s, 0, prompt, sizeof prompt);
    gcsh_coord_say(s->coord, "%s-- %s %s%s", prompt, e->name[0] == '@' ? "the script"
                                                                     : "the chunk",
                   e->name + 1, args.s ? args.s : "");
    gcsh_text_free(&args);
}

/* Before the entry runs: each rank's gcsh.wtime returns what it returned
 * when this was recorded (wtime = {[rank] = {t, ...}}). */
static void play_tapes(gcsh_session *s, const entry *e)
{
    for (int r = 0; e->tape && r < s->coord->size; r++)
        if (e->tape[r])
            gcsh_coord_play_tape(s->coord, r, e->tape[r], e->ntape[r]);
}

/* A chunk of the command line: `arg` set as it was on every rank (the
 * script's arguments), then run as the command line ran it. */
static void run_chunk_entry(gcsh_session *s, const entry *e, gcsh_line_result *res)
{
    gcsh_text set = {0};
    gcsh_text_append(&set, "arg = {[0] = ", 13);
    gcsh_lua_string(&set, e->name + 1, strlen(e->name + 1));
    for (int i = 0; i < e->nargs; i++) {
        gcsh_text_append(&set, ", ", 2);
        gcsh_lua_string(&set, e->args[i], strlen(e->args[i]));
    }
    gcsh_text_append(&set, "}", 2);
    if (e->name[0] == '@') {
        gcsh_tap quiet;
        gcsh_session_aside(s, set.s, &quiet);
        gcsh_tap_destroy(&quiet, s->coord->size);
    }
    play_tapes(s, e); /* after the quiet chunk, which would take them */
    gcsh_chunk k = {.name = e->name, .src = e->src, .len = strlen(e->src),
                    .args = (const char *const *)e->args, .nargs = e->nargs,
                    .flags = e->name[0] == '@' ? CHUNK_SCRIPT : 0};
    gcsh_session_feed(s, &k, &(gcsh_feed){0}, res);
    gcsh_text_free(&set);
}

/* Runs entry e, number index; 0 when it matched, -1 when not. */
static int replay_entry(gcsh_session *s, const entry *e, int index, gcsh_replayer *rp)
{
    rp->at = e->at;
    rp->expect_status = e->end_status;
    rp->expect_lost = e->end_lost;
    rp->expect_why = e->end_why;
    if (gcsh_session_set_ranks(s, e->ranks) != 0)
        return -1;
    if (e->kind == GCSH_ENTRY_DOT) {
        gcsh_session_echo(s, e->src);
        gcsh_session_dot(s, e->src);
        return 0;
    }
    gcsh_line_result res;
    if (e->kind == GCSH_ENTRY_CHUNK) {
        echo_chunk(s, e);
        run_chunk_entry(s, e, &res);
    } else {
        gcsh_chunk line = {.name = "=stdin", .src = e->src, .len = strlen(e->src)};
        play_tapes(s, e);
        gcsh_session_feed(s, &line, &(gcsh_feed){.typed = 1, .echo = e->src}, &res);
    }
    rp->expect_status = -1;
    if (s->coord->end_status == GCSH_EXIT_TERM) { /* SIGTERM cut it short: no verdict */
        gcsh_line_result_free(s, &res);
        return 0;
    }
    if (res.ran && res.verdict == GCSH_EXIT_SKIP) { /* as the script run alone would say */
        rp->untestable = rp->index;
        gcsh_line_result_free(s, &res);
        return 0;
    }
    int rc = compare(s, rp->path, e, index, &res);
    rp->varied += rc == 0 && res.ran && (e->varies || res.tap.varies);
    gcsh_line_result_free(s, &res);
    return rc;
}

/* Notes variables of the recording's environment ("-- env K=V" lines
 * before its first call) that differ now. */
static void compare_env(gcsh_coord *c, const gcsh_recording *rec)
{
    char line[4096];
    for (const char *p = rec->text; *p && strncmp(p, "local line", 10) != 0;) {
        size_t n = strcspn(p, "\n");
        if (n < sizeof line && strncmp(p, "-- env ", 7) == 0) {
            memcpy(line, p, n);
            line[n] = '\0';
            char *kv = line + 7, *eq = strchr(kv, '=');
            if (eq) {
                *eq = '\0';
                const char *now = getenv(kv);
                if (!now || strcmp(now, eq + 1) != 0)
                    gcsh_coord_say(c, "gcsh: replay: note: %s was '%s' when recorded, is %s%s%s "
                                      "now", kv, eq + 1, now ? "'" : "unset", now ? now : "",
                                   now ? "'" : "");
            }
        }
        p += n + (p[n] == '\n');
    }
}

/* The last words: how many lines matched, which differed. */
static int summary(gcsh_session *s, gcsh_replayer *rp)
{
    gcsh_coord *c = s->coord;
    if (rp->ndiffer) {
        gcsh_coord_say(c, "gcsh: replay: %d of %d line%s of %s differ%s: line%s %s", rp->ndiffer,
                       rp->lines, rp->lines == 1 ? "" : "s", rp->path,
                       rp->ndiffer == 1 ? "s" : "", rp->ndiffer == 1 ? "" : "s", rp->differ.s);
        return 1;
    }
    gcsh_coord_say(c, "gcsh: replay: %d line%s of %s match%s", rp->lines, rp->lines == 1 ? "" : "s",
                   rp->path, rp->lines == 1 ? "es" : "");
    if (rp->varied)
        gcsh_coord_say(c, "gcsh: replay: (%d with output that varies between runs, shown "
                          "but not compared)", rp->varied);
    return 0;
}

/* The rider's ending: the session ends at once during a replay (coord's
 * ending hook): a match when the running line was recorded ending that way.
 * Returns the status. */
static int replay_ending(gcsh_session *s, int status, const char *why)
{
    gcsh_replayer *rp = s->replay;
    char lost[256];
    gcsh_format_ranks_where(s->coord->size, gcsh_rank_in_mask, s->coord->lost, lost, sizeof lost,
                            NULL);
    int same = rp->expect_status == status && strcmp(lost, rp->expect_lost ? rp->expect_lost : "") == 0;
    if (same) {
        gcsh_coord_say(s->coord, "gcsh: replay: line %d ended the session as recorded (status %d, "
                                 "[%s] lost)", rp->index, status, lost);
    } else {
        gcsh_coord_say(s->coord, "gcsh: replay: %s:%d: line %d ended the session (%s; status %d, "
                                 "[%s] lost); the recording %s", rp->path, rp->at, rp->index, why,
                       status, lost, rp->expect_status >= 0 ? "ended it otherwise" : "went on");
        if (rp->expect_status >= 0)
            gcsh_coord_say(s->coord, "gcsh:   expected: status %d, [%s] lost: %s",
                           rp->expect_status, rp->expect_lost ? rp->expect_lost : "",
                           rp->expect_why ? rp->expect_why : "");
        note_difference(rp, rp->index);
    }
    rp->lines++;
    return summary(s, rp);
}

static const gcsh_rider replay_rider = {.ending = replay_ending};

/* Seeds math.random as the recording did (header seed=), and t:rand()
 * too when it was made with --seed (header rand=true). */
static void seed_ranks(gcsh_session *s, const gcsh_recording *rec)
{
    if (!rec->has_seed)
        return;
    char src[96];
    snprintf(src, sizeof src, "require('gcsh.record').seed(%lld%s)", rec->seed,
             rec->rand ? ", true" : "");
    gcsh_tap tap;
    gcsh_session_aside(s, src, &tap);
    gcsh_tap_destroy(&tap, s->coord->size);
}

int gcsh_replay(gcsh_session *s, const gcsh_recording *rec, int keep_going)
{
    compare_env(s->coord, rec);
    seed_ranks(s, rec);
    gcsh_replayer rp = {.path = rec->path, .keep_going = keep_going, .expect_status = -1};
    s->replay = &rp;
    s->replay_ops = &replay_rider;
    for (int i = 1; i <= rec->n && !s->quit && !rp.untestable && (keep_going || rp.ndiffer == 0);
         i++) {
        rp.index = i;
        int rc = replay_entry(s, &rec->e[i - 1], i, &rp);
        if (s->coord->end_status == GCSH_EXIT_TERM)
            break;
        if (rc != 0)
            note_difference(&rp, i);
        rp.lines++;
    }
    s->replay = NULL;
    if (s->coord->end_status == GCSH_EXIT_TERM) {
        gcsh_coord_say(s->coord, "gcsh: replay: stopped by SIGTERM at line %d of %s", rp.index,
                       rp.path);
        gcsh_text_free(&rp.differ);
        return GCSH_EXIT_TERM;
    }
    int rc;
    if (rp.untestable && !rp.ndiffer) { /* as the script run alone (rank/loads.h) */
        gcsh_coord_say(s->coord, "gcsh: replay: %s: line %d cannot be tested here (a Lua file "
                                 "it loads does not load, or a module it requires is missing)",
                       rp.path, rp.untestable);
        rc = GCSH_EXIT_SKIP;
    } else {
        rc = rp.ndiffer && !keep_going ? 1 : summary(s, &rp);
    }
    gcsh_text_free(&rp.differ);
    return rc;
}
