/* Lessons in the shell: .lessons, .lesson N, .next, .again, .prev,
 * .part N.  See lesson.h. */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <lauxlib.h>

#include "shell/lesson.h"
#include "rank/rank.h"
#include "wire/out.h"

#define TITLE_MAX 200
#define NAME_MAX_LEN 256
#define PATH_LEN 4096

typedef struct block {
    char *title;  /* after "---" ("" for the introduction) */
    char *prose;  /* the comment lines, "-- " taken off */
    char *code;   /* the code, after a newline for every file line above it */
    int has_code; /* code other than blank lines */
    int exercise; /* the title starts with "exercise" */
} block;

struct gcsh_lesson {
    char file[NAME_MAX_LEN]; /* "08-ring.lua" */
    char title[TITLE_MAX];
    int number;
    block *blocks; /* blocks[0]: the introduction */
    int nblocks;
    int next;  /* the block .next shows */
    int shown; /* the block shown last (0: the introduction): .again's */
};

typedef struct entry {
    char file[NAME_MAX_LEN];
    int number;
    char title[TITLE_MAX];
} entry;

/* ---- text helpers ----------------------------------------------------------- */

/* gcsh_text (out.h), with a C string */
static void text_str(gcsh_text *t, const char *s)
{
    gcsh_text_append(t, s, strlen(s));
}

/* The text, owned by the caller ("" when empty). */
static char *text_take(gcsh_text *t)
{
    char *s = t->s ? t->s : strdup("");
    *t = (gcsh_text){0};
    return s;
}

static const char *skip_space(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

static void trim_end(char *s)
{
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
}

static int blank(const char *line)
{
    return *skip_space(line) == '\0';
}

/* Whether the n characters at p are blank. */
static int blank_span(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t')
            return 0;
    return 1;
}

/* ---- the lesson files ------------------------------------------------------------ */

/* gcsh_lua_dir() is NULL when gcsh's Lua files are nowhere to be found:
 * then no folder of that name exists, and no lesson is found there. */
static const char *lua_dir(void)
{
    const char *dir = gcsh_lua_dir();
    return dir ? dir : "(gcsh's Lua files: not found)";
}

static void lesson_dir(char *buf, size_t len)
{
    snprintf(buf, len, "%s/tutorial", lua_dir());
}

/* The path of a lesson file (truncated past PATH_LEN: then unreadable). */
static void lesson_path(const char *file, char *buf, size_t len)
{
    snprintf(buf, len, "%s/tutorial/%s", lua_dir(), file);
}

/* "08-ring.lua" -> 8; -1 when the name is no lesson's. */
static int lesson_number(const char *file)
{
    size_t n = strlen(file);
    if (n < 8 || !isdigit((unsigned char)file[0]) || !isdigit((unsigned char)file[1]) ||
        file[2] != '-' || strcmp(file + n - 4, ".lua") != 0)
        return -1;
    return (file[0] - '0') * 10 + (file[1] - '0');
}

/* The first line of a lesson, "-- Title", as "Title". */
static void read_title(const char *path, char *title, size_t len)
{
    FILE *f = fopen(path, "r");
    char line[TITLE_MAX] = "";
    if (f && fgets(line, sizeof line, f)) {
        trim_end(line);
        snprintf(title, len, "%s", line[0] == '-' && line[1] == '-' ? skip_space(line + 2) : line);
    } else {
        snprintf(title, len, "(unreadable)");
    }
    if (f)
        fclose(f);
}

static int by_file(const void *a, const void *b)
{
    return strcmp(((const entry *)a)->file, ((const entry *)b)->file);
}

/* The lessons, sorted by file name; returns how many (0 when the folder
 * cannot be read; *out is then NULL). */
static int list_lessons(entry **out)
{
    char dir[PATH_LEN];
    lesson_dir(dir, sizeof dir);
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0, cap = 0;
    entry *v = NULL;
    for (struct dirent *e; (e = readdir(d));) {
        int number = lesson_number(e->d_name);
        if (number < 0 || strlen(e->d_name) >= NAME_MAX_LEN)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            entry *p = realloc(v, (size_t)cap * sizeof *v);
            if (!p)
                break;
            v = p;
        }
        snprintf(v[n].file, sizeof v[n].file, "%s", e->d_name);
        v[n].number = number;
        char path[PATH_LEN];
        lesson_path(e->d_name, path, sizeof path);
        read_title(path, v[n].title, sizeof v[n].title);
        n++;
    }
    closedir(d);
    qsort(v, (size_t)n, sizeof *v, by_file);
    *out = v;
    return n;
}

/* Whether the file name holds arg, ignoring case ("Ring" finds 08-ring.lua). */
static int name_has(const char *file, const char *arg)
{
    size_t n = strlen(arg);
    for (const char *p = file; *p; p++)
        if (strncasecmp(p, arg, n) == 0)
            return 1;
    return 0;
}

/* The lessons that arg names: its number ("8"), or a part of their file
 * name ("ring").  Fills match[] (indices into v, at most n) and returns how
 * many there are. */
static int find_lessons(const entry *v, int n, const char *arg, int *match)
{
    char *end;
    long number = strtol(arg, &end, 10);
    int is_number = *end == '\0' && end != arg, found = 0;
    for (int i = 0; i < n; i++)
        if (is_number ? v[i].number == number : name_has(v[i].file, arg))
            match[found++] = i;
    return found;
}

/* The index in v of the lesson after the one numbered `number`, or -1. */
static int lesson_after(const entry *v, int n, int number)
{
    for (int i = 0; i < n; i++)
        if (v[i].number > number)
            return i;
    return -1;
}

/* ---- parsing ----------------------------------------------------------------------- */

static void free_lesson(gcsh_lesson *l)
{
    if (!l)
        return;
    for (int i = 0; i < l->nblocks; i++) {
        free(l->blocks[i].title);
        free(l->blocks[i].prose);
        free(l->blocks[i].code);
    }
    free(l->blocks);
    free(l);
}

/* A block being read: prose until the first line that is not a comment. */
typedef struct reader {
    gcsh_text title, prose, code;
    int in_prose, has_code, code_lines;
} reader;

static void close_block(gcsh_lesson *l, reader *r)
{
    block *p = realloc(l->blocks, (size_t)(l->nblocks + 1) * sizeof *p);
    if (!p)
        abort(); /* out of host memory on rank 0 */
    l->blocks = p;
    block *b = &l->blocks[l->nblocks++];
    b->title = text_take(&r->title);
    b->prose = text_take(&r->prose);
    trim_end(b->prose);
    b->code = text_take(&r->code);
    trim_end(b->code);
    b->has_code = r->has_code;
    b->exercise = strncasecmp(b->title, "exercise", 8) == 0;
    *r = (reader){.in_prose = 1};
}

/* One line (number lineno) of the file into the block being read. */
static void read_line(gcsh_lesson *l, reader *r, const char *line, int lineno)
{
    if (strncmp(line, "---", 3) == 0) {
        close_block(l, r);
        text_str(&r->title, skip_space(line + 3));
        trim_end(r->title.s);
        return;
    }
    if (r->in_prose && (blank(line) || (line[0] == '-' && line[1] == '-'))) {
        if (r->prose.len)
            text_str(&r->prose, "\n");
        text_str(&r->prose, blank(line) ? "" : (line[2] == ' ' ? line + 3 : line + 2));
        return;
    }
    r->in_prose = 0;
    /* newlines up to the line's own number: errors name lines of the file */
    while (r->code_lines < lineno - 1) {
        text_str(&r->code, "\n");
        r->code_lines++;
    }
    text_str(&r->code, line);
    text_str(&r->code, "\n");
    r->code_lines++;
    r->has_code |= !blank(line);
}

static gcsh_lesson *load_lesson(const entry *e, char *err, size_t errlen)
{
    char path[PATH_LEN];
    lesson_path(e->file, path, sizeof path);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot read %.*s", (int)(errlen - 16), path);
        return NULL;
    }
    gcsh_lesson *l = calloc(1, sizeof *l);
    if (!l)
        abort(); /* out of host memory on rank 0 */
    snprintf(l->file, sizeof l->file, "%s", e->file);
    snprintf(l->title, sizeof l->title, "%s", e->title);
    l->number = e->number;
    reader r = {.in_prose = 1};
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    for (int lineno = 1; (n = getline(&line, &cap, f)) >= 0; lineno++) {
        if (n && line[n - 1] == '\n')
            line[--n] = '\0';
        if (lineno > 1) /* line 1 is the title */
            read_line(l, &r, line, lineno);
    }
    free(line);
    fclose(f);
    close_block(l, &r);
    return l;
}

/* ---- running a part's code -------------------------------------------------------- */

/* How a part's code runs: shown as typed (each command echoed, then its
 * output), run without its echo (an exercise's check), or quietly (what
 * .part runs first: output kept, and shown only when a command fails). */
enum run_mode { SHOWN, UNECHOED, QUIET };

static void say_prose(gcsh_session *s, const char *prose)
{
    if (*prose)
        gcsh_coord_say(s->coord, "%s", prose);
}

/* A rank's kept output, printed folded as it would have been. */
static void show_kept(gcsh_session *s, const gcsh_tap *tap)
{
    for (int r = 0; r < s->coord->size; r++)
        if (tap->out[r].len)
            gcsh_fold_add(&s->coord->fold, r, GCSH_STDOUT, tap->out[r].s, tap->out[r].len);
    gcsh_fold_flush(&s->coord->fold, 1, NULL);
}

/* How a lesson's command or part ended: a Ctrl-C is no failure of the
 * lesson's, and is said as what it is. */
enum { RAN_OK = 0, RAN_FAILED, RAN_INTERRUPTED };

/* Runs a command of the lesson (named name) on every rank, whatever
 * .ranks says (a lesson's collectives need them all): shown as typed
 * (echo), or with its output kept in tap (initialised here; the caller
 * destroys it) and not printed.  Returns RAN_OK, RAN_FAILED (some rank
 * failed, or it did not compile) or RAN_INTERRUPTED. */
static int run_on_all(gcsh_session *s, const char *name, const char *src, size_t len,
                      const char *echo, gcsh_tap *keep)
{
    gcsh_chunk k = {.name = name, .src = src, .len = len};
    gcsh_feed how = {.echo = echo, .targets = s->everyone, .keep = keep, .unrecorded = 1};
    gcsh_line_result res;
    int failed = gcsh_session_feed(s, &k, &how, &res);
    int interrupted = res.interrupted > 0;
    gcsh_line_result_free(s, &res);
    return interrupted ? RAN_INTERRUPTED : failed ? RAN_FAILED : RAN_OK;
}

/* Runs one of gcsh.lesson's housekeeping calls on every rank, quietly;
 * rank 0's output (the same on every rank) is said without a prefix. */
static void housekeeping(gcsh_session *s, const char *call)
{
    char src[160];
    snprintf(src, sizeof src, "require('gcsh.lesson').%s()", call);
    gcsh_tap tap;
    int failed = run_on_all(s, "=(lesson)", src, strlen(src), NULL, &tap);
    if (failed != RAN_OK) {
        show_kept(s, &tap);
    } else if (tap.out[0].len) {
        char *text = strndup(tap.out[0].s, tap.out[0].len);
        trim_end(text);
        gcsh_coord_say(s->coord, "(%s)", text);
        free(text);
    }
    gcsh_tap_destroy(&tap, s->coord->size);
}

/* Runs a command (text, starting on the file's line `line`) on every rank:
 * padded with newlines so that errors name the lesson file's lines.
 * Returns how it ended (RAN_*). */
static int run_command(gcsh_session *s, const gcsh_lesson *l, int line, const char *text,
                       enum run_mode mode)
{
    gcsh_text src = {0};
    /* the lesson's own globals (gcsh.lesson's env): what its checks and
     * reference functions read cannot be changed by the learner's globals */
    text_str(&src, "local _ENV = require('gcsh.lesson').env(); ");
    for (int i = 1; i < line; i++)
        text_str(&src, "\n");
    text_str(&src, text);
    char name[NAME_MAX_LEN + 2];
    snprintf(name, sizeof name, "=%s", l->file);
    int failed;
    if (mode == QUIET) {
        gcsh_tap tap;
        failed = run_on_all(s, name, src.s, src.len, NULL, &tap);
        if (failed != RAN_OK)
            show_kept(s, &tap);
        gcsh_tap_destroy(&tap, s->coord->size);
    } else {
        failed = run_on_all(s, name, src.s, src.len, mode == SHOWN ? text : NULL, NULL);
    }
    free(src.s);
    return failed;
}

/* Whether the text is only blank and comment lines. */
static int only_comments(const char *text)
{
    for (const char *p = text; *p;) {
        const char *q = skip_space(p);
        if (*q != '\n' && *q != '\0' && strncmp(q, "--", 2) != 0)
            return 0;
        p = q + strcspn(q, "\n");
        p += *p == '\n';
    }
    return 1;
}

/* Whether the chunk is a whole command, as the prompt decides: it compiles,
 * or fails for another reason than ending too soon (then running it shows
 * the error). */
static int complete(gcsh_session *s, const char *chunk)
{
    return !gcsh_session_unfinished(s, chunk);
}

/* The indentation of the line at p. */
static size_t indent_of(const char *p)
{
    return (size_t)(skip_space(p) - p);
}

/* Whether the next line with text after p (the start of a line) is
 * indented deeper than `indent`: then it continues the statement above it
 * ("x = a\n    .. b"), which compiles without it. */
static int continues(const char *p, size_t indent)
{
    while (*p) {
        size_t n = strcspn(p, "\n");
        if (!blank_span(p, n))
            return indent_of(p) > indent;
        p += n + (p[n] == '\n');
    }
    return 0;
}

/* Runs a block's code the way typing it at the prompt would: line by line,
 * each complete statement a command of its own (so each command's output
 * folds on its own), comment lines joining the next statement, lines
 * indented deeper joining the statement above them.  An exercise's block
 * (its check) is one command, unechoed.  Stops at the first command that
 * fails or is interrupted; returns how it ended (RAN_*). */
static int run_block(gcsh_session *s, const gcsh_lesson *l, const block *b, enum run_mode mode)
{
    if (!b->has_code)
        return 0;
    if (b->exercise && mode == SHOWN)
        mode = UNECHOED;
    gcsh_text cmd = {0};
    int line = 1, first = 0, rc = 0;
    size_t indent = 0;
    for (const char *p = b->code; *p && rc == 0; line++) {
        size_t n = strcspn(p, "\n");
        if (cmd.len || !blank_span(p, n)) {
            if (!cmd.len) {
                first = line;
                indent = indent_of(p);
            }
            gcsh_text_append(&cmd, p, n);
            text_str(&cmd, "\n");
        }
        p += n + (p[n] == '\n');
        int whole = !b->exercise && !only_comments(cmd.s ? cmd.s : "") && !continues(p, indent);
        if (cmd.len && (*p == '\0' || (whole && complete(s, cmd.s)))) {
            trim_end(cmd.s);
            cmd.len = strlen(cmd.s);
            rc = run_command(s, l, first, cmd.s, mode);
            free(cmd.s);
            cmd = (gcsh_text){0};
        }
    }
    free(cmd.s);
    return rc;
}

/* Runs a block on every rank (run_on_all), inside the housekeeping that
 * notes what it made. */
static int run_part(gcsh_session *s, const gcsh_lesson *l, const block *b, enum run_mode mode)
{
    if (!b->has_code)
        return 0;
    housekeeping(s, "track_begin");
    int rc = run_block(s, l, b, mode);
    housekeeping(s, "track_end");
    return rc;
}

/* Frees, on every rank, what the lesson's parts made. */
static void free_made(gcsh_session *s)
{
    housekeeping(s, "free_made");
}

/* ---- parts ------------------------------------------------------------------------------ */

/* What comes after a lesson: "; .lesson 9 opens the next one", or that it
 * is the last. */
static void next_lesson_text(const gcsh_lesson *l, char *buf, size_t len)
{
    entry *v;
    int n = list_lessons(&v);
    int i = lesson_after(v, n, l->number);
    if (i < 0)
        snprintf(buf, len, ", the last lesson");
    else
        snprintf(buf, len, "; .lesson %d opens the next one", v[i].number);
    free(v);
}

static void show_part(gcsh_session *s, gcsh_lesson *l, int i)
{
    block *b = &l->blocks[i];
    gcsh_coord_say(s->coord, "\n[%d.%d] %s", l->number, i, b->title);
    say_prose(s, b->prose);
    l->shown = i;
    l->next = i + 1;
    int rc = run_part(s, l, b, SHOWN);
    if (rc == RAN_INTERRUPTED) {
        gcsh_coord_say(s->coord, "(part %d.%d interrupted; .again runs it again)", l->number, i);
        return;
    }
    if (rc != RAN_OK) {
        gcsh_coord_say(s->coord, "(part %d.%d stopped at that error; .again runs it again)",
                       l->number, i);
        return;
    }
    if (b->exercise) {
        gcsh_coord_say(s->coord, "(your turn: answer at the prompt and check it; .next shows "
                                 "the solution)");
    } else if (l->next >= l->nblocks) {
        char after[64];
        next_lesson_text(l, after, sizeof after);
        gcsh_coord_say(s->coord, "(end of lesson %d%s)", l->number, after);
    }
}

static void show_introduction(gcsh_session *s, gcsh_lesson *l)
{
    l->next = 1;
    l->shown = 0;
    gcsh_coord_say(s->coord, "Lesson %d: %s", l->number, l->title);
    say_prose(s, l->blocks[0].prose);
    if (run_part(s, l, &l->blocks[0], SHOWN) == RAN_INTERRUPTED)
        gcsh_coord_say(s->coord, "(the introduction interrupted; .again runs it again)");
    gcsh_coord_say(s->coord, "(%d parts; .next shows the first)", l->nblocks - 1);
}

/* Part i stopped (rc: RAN_FAILED, its output above, or RAN_INTERRUPTED)
 * while part `part` was made ready: said in lines within 80 columns
 * (lesson 99, part 99, the introduction), an interrupt as one. */
static void say_not_ready(gcsh_session *s, const gcsh_lesson *l, int i, int part, int rc)
{
    char which[32];
    snprintf(which, sizeof which, i ? "part %d" : "the introduction", i);
    if (rc == RAN_INTERRUPTED)
        gcsh_coord_say(s->coord, "gcsh: lesson %d: interrupted in %s while part %d was made "
                                 "ready\n(.again makes part %d ready again)",
                       l->number, which, part, part);
    else
        gcsh_coord_say(s->coord, "gcsh: lesson %d: %s failed (output above) before part %d\n"
                                 "(.again makes part %d ready again)",
                       l->number, which, part, part);
}

/* Part `part` of the open lesson, after freeing what the lesson made and
 * running, quietly, the introduction and the parts before it (what the
 * part needs). */
static void goto_part(gcsh_session *s, int part)
{
    gcsh_lesson *l = s->lesson;
    free_made(s);
    if (part == 0) {
        show_introduction(s, l);
        return;
    }
    for (int i = 0; i < part; i++) {
        int rc = run_part(s, l, &l->blocks[i], QUIET);
        if (rc != RAN_OK) {
            say_not_ready(s, l, i, part, rc);
            /* .again makes the part asked for ready again; .next goes on
             * from the one that stopped, after those that ran */
            l->next = i;
            l->shown = part;
            return;
        }
    }
    if (part == 1)
        gcsh_coord_say(s->coord, "(the introduction's code ran first, quietly)");
    else if (part == 2)
        gcsh_coord_say(s->coord, "(the introduction and part 1 ran first, quietly)");
    else
        gcsh_coord_say(s->coord, "(the introduction and parts 1-%d ran first, quietly)", part - 1);
    show_part(s, l, part);
}

/* ---- the dot-commands ------------------------------------------------------------------- */

/* The rider's close: the open lesson is freed (another one opens, the
 * session ends). */
static int lesson_close(gcsh_session *s)
{
    free_lesson(s->lesson);
    s->lesson = NULL;
    return 0;
}

static const gcsh_rider lesson_rider = {.close = lesson_close};

void gcsh_dot_lessons(gcsh_session *s, const char *arg)
{
    (void)arg;
    entry *v;
    int n = list_lessons(&v);
    char dir[PATH_LEN];
    lesson_dir(dir, sizeof dir);
    if (n == 0) {
        gcsh_coord_say(s->coord, "gcsh: .lessons: no lessons in %s", dir);
        free(v);
        return;
    }
    gcsh_text out = {0};
    text_str(&out, "lessons (.lesson N opens one, .next goes through it):");
    for (int i = 0; i < n; i++) {
        char line[TITLE_MAX + 32];
        int open = s->lesson && s->lesson->number == v[i].number;
        snprintf(line, sizeof line, "\n %s%2d  %s", open ? ">" : " ", v[i].number, v[i].title);
        text_str(&out, line);
    }
    gcsh_coord_say(s->coord, "%s", out.s);
    free(out.s);
    free(v);
}

static void say_where(gcsh_session *s)
{
    gcsh_lesson *l = s->lesson;
    if (!l) {
        gcsh_coord_say(s->coord, "no lesson is open: .lessons lists them, .lesson N opens one");
        return;
    }
    if (l->next >= l->nblocks)
        gcsh_coord_say(s->coord, "lesson %d (%s) is done; .lesson %d opens it again", l->number,
                       l->title, l->number);
    else
        gcsh_coord_say(s->coord, "lesson %d (%s): part %d of %d is next; .next shows it",
                       l->number, l->title, l->next, l->nblocks - 1);
}

/* "'shot' matches 2 lessons" and the list, when a name is not enough. */
static void say_matches(gcsh_session *s, const char *arg, const entry *v, const int *match,
                        int found)
{
    gcsh_text out = {0};
    char line[TITLE_MAX + 64];
    snprintf(line, sizeof line, "gcsh: .lesson: '%.40s' matches %d lessons:", arg, found);
    text_str(&out, line);
    for (int i = 0; i < found; i++) {
        snprintf(line, sizeof line, "\n  %2d  %s", v[match[i]].number, v[match[i]].title);
        text_str(&out, line);
    }
    snprintf(line, sizeof line, "\n(.lesson %d opens the first)", v[match[0]].number);
    text_str(&out, line);
    gcsh_coord_say(s->coord, "%s", out.s);
    free(out.s);
}

void gcsh_dot_lesson(gcsh_session *s, const char *arg)
{
    if (!*arg) {
        say_where(s);
        return;
    }
    entry *v;
    int n = list_lessons(&v);
    int *match = malloc((size_t)(n ? n : 1) * sizeof *match);
    int found = find_lessons(v, n, arg, match);
    if (found != 1) {
        if (found == 0)
            gcsh_coord_say(s->coord, "gcsh: .lesson: no lesson '%s' (.lessons lists them)", arg);
        else
            say_matches(s, arg, v, match, found);
        gcsh_session_dot_refused(s);
        free(match);
        free(v);
        return;
    }
    char err[PATH_LEN];
    gcsh_lesson *l = load_lesson(&v[match[0]], err, sizeof err);
    free(match);
    free(v);
    if (!l) {
        gcsh_coord_say(s->coord, "gcsh: .lesson: %s", err);
        return;
    }
    if (s->lesson)
        free_made(s);
    lesson_close(s);
    s->lesson = l;
    s->lesson_ops = &lesson_rider;
    show_introduction(s, l);
}

void gcsh_dot_next(gcsh_session *s, const char *arg)
{
    (void)arg;
    gcsh_lesson *l = s->lesson;
    if (!l) {
        say_where(s);
        return;
    }
    if (l->next >= l->nblocks) {
        char after[64];
        next_lesson_text(l, after, sizeof after);
        gcsh_coord_say(s->coord, "lesson %d is done%s (.lessons lists them)", l->number, after);
        return;
    }
    show_part(s, l, l->next);
}

/* An open lesson, or NULL (said). */
static gcsh_lesson *open_lesson(gcsh_session *s, const char *cmd)
{
    if (!s->lesson)
        gcsh_coord_say(s->coord, "gcsh: %s: no lesson is open (.lesson N opens one)", cmd);
    return s->lesson;
}

void gcsh_dot_again(gcsh_session *s, const char *arg)
{
    (void)arg;
    gcsh_lesson *l = open_lesson(s, ".again");
    if (l)
        goto_part(s, l->shown);
}

void gcsh_dot_prev(gcsh_session *s, const char *arg)
{
    (void)arg;
    gcsh_lesson *l = open_lesson(s, ".prev");
    if (!l)
        return;
    if (l->shown < 1) {
        gcsh_coord_say(s->coord, "gcsh: .prev: the introduction comes first (.next shows part 1)");
        return;
    }
    goto_part(s, l->shown - 1);
}

void gcsh_dot_part(gcsh_session *s, const char *arg)
{
    gcsh_lesson *l = open_lesson(s, ".part");
    if (!l)
        return;
    char *end;
    long part = strtol(arg, &end, 10);
    if (!*arg || *end || part < 0 || part >= l->nblocks) {
        gcsh_coord_say(s->coord, "gcsh: .part: N is a part of lesson %d: 1..%d (0: the "
                                 "introduction), got '%.40s'",
                       l->number, l->nblocks - 1, arg);
        gcsh_session_dot_refused(s);
        return;
    }
    goto_part(s, (int)part);
}
