/* Lessons in the shell: .lessons, .lesson N, .next.  See lesson.h. */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "shell/lesson.h"
#include "core/rank.h"
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
    int next; /* the block .next shows */
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

/* The lesson that arg names: its number ("8"), or a part of its file name
 * ("ring").  Returns its index in v, or -1. */
static int find_lesson(const entry *v, int n, const char *arg)
{
    char *end;
    long number = strtol(arg, &end, 10);
    for (int i = 0; i < n; i++)
        if (*end == '\0' && end != arg ? v[i].number == number : strstr(v[i].file, arg) != NULL)
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

/* ---- showing and running ------------------------------------------------------------- */

static void say_prose(gcsh_session *s, const char *prose)
{
    if (*prose)
        gcsh_coord_say(s->coord, "%s", prose);
}

/* The code as typed at the prompt ("gcsh[0-3]> ", then "gcsh[0-3]>> "). */
static void echo_code(gcsh_session *s, const char *code)
{
    char prompt[64];
    snprintf(prompt, sizeof prompt, "gcsh[0-%d]>", s->coord->size - 1);
    if (s->coord->size == 1)
        snprintf(prompt, sizeof prompt, "gcsh[0]>");
    const char *p = code;
    while (*p == '\n') /* the padding that keeps the file's line numbers */
        p++;
    int first = 1;
    gcsh_text out = {0};
    while (*p) {
        size_t n = strcspn(p, "\n");
        text_str(&out, prompt);
        text_str(&out, first ? " " : "> ");
        gcsh_text_append(&out, p, n);
        text_str(&out, "\n");
        first = 0;
        p += n + (p[n] == '\n');
    }
    if (out.len) {
        out.s[out.len - 1] = '\0';
        gcsh_coord_say(s->coord, "%s", out.s);
    }
    free(out.s);
}

/* Runs a block's code on every rank (whatever .ranks says: a lesson's
 * collectives need them all), echoed as typed, except an exercise's: that
 * only defines the check the prose names. */
static void run_code(gcsh_session *s, const gcsh_lesson *l, const block *b)
{
    if (!b->has_code)
        return;
    if (!b->exercise)
        echo_code(s, b->code);
    int n = s->coord->size;
    char *saved = malloc((size_t)n);
    memcpy(saved, s->targets, (size_t)n);
    memset(s->targets, 1, (size_t)n);
    char name[NAME_MAX_LEN + 2];
    snprintf(name, sizeof name, "=%s", l->file);
    gcsh_session_exec(s, name, b->code, strlen(b->code), 0);
    memcpy(s->targets, saved, (size_t)n);
    free(saved);
}

/* ---- the dot-commands ------------------------------------------------------------------- */

void gcsh_lesson_close(gcsh_session *s)
{
    free_lesson(s->lesson);
    s->lesson = NULL;
}

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

void gcsh_dot_lesson(gcsh_session *s, const char *arg)
{
    if (!*arg) {
        say_where(s);
        return;
    }
    entry *v;
    int n = list_lessons(&v);
    int i = find_lesson(v, n, arg);
    if (i < 0) {
        gcsh_coord_say(s->coord, "gcsh: .lesson: no lesson '%s' (.lessons lists them)", arg);
        free(v);
        return;
    }
    char err[PATH_LEN];
    gcsh_lesson *l = load_lesson(&v[i], err, sizeof err);
    free(v);
    if (!l) {
        gcsh_coord_say(s->coord, "gcsh: .lesson: %s", err);
        return;
    }
    gcsh_lesson_close(s);
    s->lesson = l;
    l->next = 1;
    gcsh_coord_say(s->coord, "Lesson %d: %s", l->number, l->title);
    say_prose(s, l->blocks[0].prose);
    run_code(s, l, &l->blocks[0]);
    gcsh_coord_say(s->coord, "(%d parts; .next shows the first)", l->nblocks - 1);
}

void gcsh_dot_next(gcsh_session *s, const char *arg)
{
    (void)arg;
    gcsh_lesson *l = s->lesson;
    if (!l || l->next >= l->nblocks) {
        if (l)
            gcsh_coord_say(s->coord, "lesson %d is done: .lesson %d opens the next one "
                                     "(.lessons lists them)",
                           l->number, l->number + 1);
        else
            say_where(s);
        return;
    }
    block *b = &l->blocks[l->next];
    gcsh_coord_say(s->coord, "\n[%d.%d] %s", l->number, l->next, b->title);
    say_prose(s, b->prose);
    l->next++;
    run_code(s, l, b);
    if (b->exercise)
        gcsh_coord_say(s->coord, "(your turn: answer at the prompt and check it; .next shows "
                                 "the solution)");
    else if (l->next >= l->nblocks)
        gcsh_coord_say(s->coord, "(end of lesson %d)", l->number);
}
