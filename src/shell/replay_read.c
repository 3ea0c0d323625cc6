/* Reading a recording, safely.  See replay_read.h. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lualib.h>

#include "core/gcsh.h"
#include "shell/record.h"
#include "shell/replay_read.h"

#define HEADER_LINES 8
#define MAX_FILE ((size_t)1 << 30)      /* larger is no recording gcsh wrote */
#define MEM_BASE ((size_t)64 << 20)     /* the read's memory: this plus ... */
#define MEM_PER_BYTE 32                 /* ... this many bytes a byte of the file */
#define STEPS_BASE 10000000LL           /* Lua instructions: this plus ... */
#define STEPS_PER_BYTE 64               /* ... this many a byte of the file */
#define HOOK_EVERY 1000                 /* instructions between two looks */
#define MAX_RANK_LIST 65536             /* a rank list longer than this is no list */

/* ---- the file ---------------------------------------------------------------- */

/* Opens path for reading if it is a regular file (a FIFO would block, a
 * folder is no recording): the descriptor, or -1 with the status in *st. */
static int open_regular(const char *path, struct stat *sb, int *st, char *err, size_t elen)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, elen, "cannot open %s: %s", path, strerror(errno));
        *st = GCSH_EXIT_SKIP;
        return -1;
    }
    if (fstat(fd, sb) != 0 || !S_ISREG(sb->st_mode)) {
        snprintf(err, elen, "%s is not a regular file: a recording is one", path);
        close(fd);
        *st = GCSH_EXIT_USAGE;
        return -1;
    }
    return fd;
}

/* The whole file, NUL-terminated; a "#!" first line becomes a comment (as
 * lua.c skips it) with the line numbers kept. */
static char *slurp(const char *path, size_t *len, int *st, char *err, size_t elen)
{
    struct stat sb;
    int fd = open_regular(path, &sb, st, err, elen);
    if (fd < 0)
        return NULL;
    if ((size_t)sb.st_size > MAX_FILE) {
        snprintf(err, elen, "%s holds %lld bytes: more than any recording (at most %zu MiB)",
                 path, (long long)sb.st_size, MAX_FILE >> 20);
        close(fd);
        *st = GCSH_EXIT_USAGE;
        return NULL;
    }
    size_t cap = (size_t)sb.st_size + 1, n = 0;
    char *buf = malloc(cap + 1);
    ssize_t got = 0;
    while (buf && n < cap && (got = read(fd, buf + n, cap - n)) > 0)
        n += (size_t)got;
    close(fd);
    if (!buf || got < 0 || n >= cap) { /* an error, or a file that grew meanwhile */
        snprintf(err, elen, "cannot read %s: %s", path,
                 !buf ? "out of memory" : got < 0 ? strerror(errno) : "it changed while read");
        free(buf);
        *st = GCSH_EXIT_SKIP;
        return NULL;
    }
    buf[n] = '\0';
    if (n >= 2 && buf[0] == '#') {
        for (size_t i = 2; i < n && buf[i] != '\n'; i++)
            buf[i] = ' ';
        buf[0] = buf[1] = '-';
    }
    *len = n;
    return buf;
}

/* "-- gcsh recording (format F): N rank[s], backend B": "1 rank" has no
 * "s", and scanf's %[s] matches no empty text, so the plural is skipped by
 * hand. */
static int parse_header_line(const char *line, int *format, long *ranks, char be[64])
{
    int at = 0;
    if (sscanf(line, "-- gcsh recording (format %d): %ld rank%n", format, ranks, &at) != 2 || !at)
        return 0;
    if (line[at] == 's')
        at++;
    return sscanf(line + at, ", backend %63s", be) == 1;
}

/* Whether the words of an options line are what gcsh writes there: options
 * and their values (letters, digits, "-=._+"), one space apart. */
static int options_words_ok(const char *w)
{
    for (const char *p = w; *p; p++)
        if (!(isalnum((unsigned char)*p) || strchr("-=._+", *p) ||
              (*p == ' ' && p > w && p[-1] != ' ' && p[1] != '\0')))
            return 0;
    return 1;
}

/* Format 3's line after the header line, "-- Options: -W --timeout=5"
 * ("none" when none):
 * the command-line options the session ran with that change what it prints
 * or does (record.h), into opts as written (main.c parses them as the
 * command line's); 0, or an exit status with why. */
static int read_options_line(FILE *f, const char *path, char *opts, size_t olen, char *err,
                             size_t elen)
{
    char line[512];
    size_t head = strlen(GCSH_RECORD_OPTIONS);
    if (!fgets(line, sizeof line, f) || strncmp(line, GCSH_RECORD_OPTIONS, head) != 0 ||
        line[strcspn(line, "\n")] != '\n') {
        snprintf(err, elen, "%s is malformed: the line after its '-- gcsh recording' line is "
                            "not the options it was recorded with ('%s ...', at most %zu bytes)",
                 path, GCSH_RECORD_OPTIONS, sizeof line - 2);
        return GCSH_EXIT_USAGE;
    }
    char *w = line + head;
    w += strspn(w, " ");
    w[strcspn(w, "\n")] = '\0';
    if (strcmp(w, "none") == 0)
        w[0] = '\0';
    if (!options_words_ok(w) || strlen(w) >= olen) {
        snprintf(err, elen, "%s is malformed: its options line holds '%.60s', not options and "
                            "their values one space apart", path, w);
        return GCSH_EXIT_USAGE;
    }
    snprintf(opts, olen, "%s", w);
    return 0;
}

/* The header among the first lines of f, and format 3's options line after
 * it, into rec (format, ranks, backend, options): 0, or an exit status
 * with why. */
static int read_header(FILE *f, const char *path, gcsh_recording *rec, char *err, size_t elen)
{
    char line[512], be[64];
    long n = 0;
    int found = 0, *format = &rec->format;
    for (int i = 0; i < HEADER_LINES && !found && fgets(line, sizeof line, f); i++)
        found = parse_header_line(line, format, &n, be);
    if (!found) {
        snprintf(err, elen, "%s is not a gcsh recording (no '-- gcsh recording' line at its top; "
                            ".record FILE or gcsh --record FILE makes one)", path);
        return GCSH_EXIT_SKIP;
    }
    if (*format < 1 || *format > GCSH_RECORD_FORMAT) {
        snprintf(err, elen, "%s is a recording of format %d; this gcsh reads formats 1 to %d",
                 path, *format, GCSH_RECORD_FORMAT);
        return GCSH_EXIT_SKIP;
    }
    if (n < 1 || n > GCSH_MAX_RANKS) {
        snprintf(err, elen, "%s is malformed: its header says %ld ranks; a recording has 1 to %d "
                            "(as gcsh -n)", path, n, GCSH_MAX_RANKS);
        return GCSH_EXIT_USAGE;
    }
    rec->ranks = (int)n;
    snprintf(rec->backend, sizeof rec->backend, "%s", be);
    rec->options[0] = '\0';
    if (*format < 3) /* before format 3, no option was noted */
        return 0;
    return read_options_line(f, path, rec->options, sizeof rec->options, err, elen);
}

int gcsh_replay_header(const char *path, gcsh_recording *rec, char *err, size_t elen)
{
    struct stat sb;
    int st;
    snprintf(rec->path, sizeof rec->path, "%s", path);
    int fd = open_regular(path, &sb, &st, err, elen);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return fd >= 0 ? GCSH_EXIT_SKIP : st;
    }
    st = read_header(f, path, rec, err, elen);
    fclose(f);
    return st;
}

/* ---- the reader's state, and its limits ------------------------------------- */

typedef struct reader {
    gcsh_recording *rec;
    size_t mem, mem_cap;    /* bytes held: the Lua state's and the copies' */
    long long steps_left;   /* Lua instructions */
    int cap;                /* of rec->e */
    int header_seen, closed;
    long long finish;       /* line.finish(N): N */
    int reading;            /* the body runs: its calls are taken (not in lua_close) */
    int open_entry;         /* a call was left half done, by an error a pcall took */
    int out_of_memory;
    int malformed;          /* the file's data is at fault (128): why says how */
    char why[5200];         /* the first such fault, even one a pcall took */
} reader;

static reader *reader_of(lua_State *L)
{
    return *(reader **)lua_getextraspace(L);
}

/* The Lua state's allocator: everything counts against the cap. */
static void *capped_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    reader *rd = ud;
    size_t old = ptr ? osize : 0;
    if (nsize == 0) {
        free(ptr);
        rd->mem -= old;
        return NULL;
    }
    if (nsize > old && rd->mem - old + nsize > rd->mem_cap)
        return NULL; /* Lua raises "not enough memory" */
    void *p = realloc(ptr, nsize);
    if (p)
        rd->mem = rd->mem - old + nsize;
    return p;
}

/* Raises "PATH:LINE: malformed recording: ...", the line being the file's
 * line that called into the reader. */
static int bad(lua_State *L, const char *fmt, ...)
{
    reader *rd = reader_of(L);
    lua_Debug ar;
    int at = 0;
    for (int level = 0; lua_getstack(L, level, &ar); level++)
        if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0 && ar.what[0] != 'C') {
            at = ar.currentline;
            break;
        }
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!rd->malformed) /* the first, even if the file's own pcall takes it */
        snprintf(rd->why, sizeof rd->why, "%s:%d: malformed recording: %s", rd->rec->path, at,
                 msg);
    rd->malformed = 1;
    return luaL_error(L, "%s", rd->why);
}

/* The instruction budget; no loop runs forever in a recording. */
static void count_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    reader *rd = reader_of(L);
    rd->steps_left -= HOOK_EVERY;
    if (rd->steps_left < 0) {
        lua_sethook(L, count_hook, LUA_MASKCOUNT, 1); /* no pcall inside gets past it */
        bad(L, "it runs too long for a recording (more than its budget of Lua instructions: "
               "a recording is a list of line(...) calls)");
    }
}

static int out_of_memory(lua_State *L)
{
    reader_of(L)->out_of_memory = 1;
    return luaL_error(L, "not enough memory");
}

/* A copy of n bytes of s, NUL-terminated, counted against the cap. */
static char *keep(lua_State *L, const char *s, size_t n)
{
    reader *rd = reader_of(L);
    char *p = rd->mem + n + 1 > rd->mem_cap ? NULL : malloc(n + 1);
    if (!p)
        out_of_memory(L);
    rd->mem += n + 1;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

static void *keep_zeroed(lua_State *L, size_t n, size_t size)
{
    reader *rd = reader_of(L);
    void *p = n && size > (rd->mem_cap - rd->mem) / n ? NULL : calloc(n ? n : 1, size);
    if (!p)
        out_of_memory(L);
    rd->mem += n * size;
    return p;
}

/* ---- checking values ------------------------------------------------------ */

/* The decimal number at *p, before end (moved past it), at most size + 1
 * (larger ones count as that: no rank anyway); -1 when no digit is there. */
static long rank_number(const char **p, const char *end, int size)
{
    long v = -1;
    for (; *p < end && **p >= '0' && **p <= '9'; (*p)++) {
        v = (v < 0 ? 0 : v) * 10 + (**p - '0');
        if (v > size)
            v = (long)size + 1;
    }
    return v;
}

/* Whether the len bytes at list name ranks of 0..size-1 only: "N" and
 * "N-M" (N <= M) by commas, or "all" where allowed; empty where allowed.
 * Says why not. */
static int rank_list_ok(const char *list, size_t len, int size, int empty_ok, int all_ok,
                        char *why, size_t wlen)
{
    int shown = len < 40 ? (int)len : 40;
    if (len == 0) {
        snprintf(why, wlen, "an empty rank list");
        return empty_ok;
    }
    if (all_ok && len == 3 && memcmp(list, "all", 3) == 0)
        return 1;
    for (const char *p = list, *end = list + len;;) {
        long a = rank_number(&p, end, size), b = a;
        if (a >= 0 && p < end && *p == '-') {
            p++;
            b = rank_number(&p, end, size);
        }
        if (a < 0 || b < 0) {
            snprintf(why, wlen, "'%.*s' is no rank list (such as 0,2-3)", shown, list);
            return 0;
        }
        if (a >= size || b >= size) {
            snprintf(why, wlen, "'%.*s' names a rank beyond %d; the recording has %d rank%s",
                     shown, list, size - 1, size, size == 1 ? "" : "s");
            return 0;
        }
        if (a > b) {
            snprintf(why, wlen, "'%.*s' holds the empty range %ld-%ld", shown, list, a, b);
            return 0;
        }
        if (p == end)
            return 1;
        if (*p++ != ',' || p == end) {
            snprintf(why, wlen, "'%.*s' is no rank list (such as 0,2-3)", shown, list);
            return 0;
        }
    }
}

/* The value at i is a table without a metatable (a recording's tables are
 * plain, and the sandbox has no setmetatable; were one there, reads stay
 * raw): else says what it is instead of want. */
static void check_table(lua_State *L, int i, const char *what, const char *want)
{
    if (!lua_istable(L, i))
        bad(L, "%s is a %s, not %s", what, luaL_typename(L, i), want);
    if (lua_getmetatable(L, i))
        bad(L, "%s has a metatable; a recording's tables are plain", what);
}

/* Argument i, a string: copied. */
static char *arg_string(lua_State *L, int i, const char *what)
{
    if (lua_type(L, i) != LUA_TSTRING)
        bad(L, "%s is a %s, not a string", what, luaL_typename(L, i));
    size_t n;
    const char *s = lua_tolstring(L, i, &n);
    return keep(L, s, n);
}

/* A rank list at index i (a string): copied, once checked. */
static char *rank_list(lua_State *L, int i, const char *what, int empty_ok, int all_ok)
{
    reader *rd = reader_of(L);
    if (lua_type(L, i) != LUA_TSTRING)
        bad(L, "%s is a %s, not a rank list", what, luaL_typename(L, i));
    size_t n;
    const char *s = lua_tolstring(L, i, &n);
    char why[200];
    if (n > MAX_RANK_LIST || strlen(s) != n)
        bad(L, "%s is no rank list (%zu bytes)", what, n);
    if (!rank_list_ok(s, n, rd->rec->ranks, empty_ok, all_ok, why, sizeof why))
        bad(L, "%s: %s", what, why);
    return keep(L, s, n);
}

/* A line number N (argument i): a positive integer. */
static void check_number(lua_State *L, int i, const char *call)
{
    if (!lua_isinteger(L, i) || lua_tointeger(L, i) < 1)
        bad(L, "%s's first argument (the line's number) is %s, not a positive integer", call,
            lua_type(L, i) == LUA_TNUMBER ? "a non-integer or below 1" : luaL_typename(L, i));
}

/* Every key of the table at t is one of keys; else says which are. */
static void known_keys(lua_State *L, int t, const char *what, const char *const *keys)
{
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        int ok = 0;
        if (lua_type(L, -1) == LUA_TSTRING)
            for (const char *const *k = keys; *k && !ok; k++)
                ok = strcmp(lua_tostring(L, -1), *k) == 0;
        if (!ok) {
            char valid[200] = "";
            for (const char *const *k = keys; *k; k++)
                snprintf(valid + strlen(valid), sizeof valid - strlen(valid), "%s%s",
                         k == keys ? "" : ", ", *k);
            const char *name = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
            bad(L, "%s has the key %s%.40s%s (a %s); its keys are %s", what, name ? "'" : "",
                name ? name : "", name ? "'" : "", luaL_typename(L, -1), valid);
        }
    }
}

/* t[key] raw (no metatable runs) at the top of the stack; its type. */
static int raw_field(lua_State *L, int t, const char *key)
{
    lua_pushstring(L, key);
    return lua_rawget(L, t);
}

/* t[key], a string copied whole (NUL bytes and all: len says where it ends),
 * or NULL. */
static char *opt_text_len(lua_State *L, int t, const char *key, const char *what, size_t *len)
{
    char *s = NULL;
    *len = 0;
    if (raw_field(L, t, key) != LUA_TNIL) {
        char name[64];
        snprintf(name, sizeof name, "%s.%s", what, key);
        s = arg_string(L, -1, name);
        *len = lua_rawlen(L, -1);
    }
    lua_pop(L, 1);
    return s;
}

static char *opt_text(lua_State *L, int t, const char *key, const char *what)
{
    size_t len;
    return opt_text_len(L, t, key, what, &len);
}

static char *opt_ranks(lua_State *L, int t, const char *key, const char *what)
{
    char *s = NULL;
    if (raw_field(L, t, key) != LUA_TNIL) {
        char name[64];
        snprintf(name, sizeof name, "%s.%s", what, key);
        s = rank_list(L, -1, name, 1, 0);
    }
    lua_pop(L, 1);
    return s;
}

/* An integer field in lo..hi, or dflt when absent. */
static long long opt_integer(lua_State *L, int t, const char *key, const char *what,
                            long long lo, long long hi, long long dflt)
{
    long long v = dflt;
    if (raw_field(L, t, key) != LUA_TNIL) {
        if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < lo || lua_tointeger(L, -1) > hi)
            bad(L, "%s.%s is %s; it is an integer from %lld to %lld", what, key,
                lua_type(L, -1) == LUA_TNUMBER ? "out of range" : luaL_typename(L, -1), lo, hi);
        v = lua_tointeger(L, -1);
    }
    lua_pop(L, 1);
    return v;
}

/* ---- the expected table -------------------------------------------------------- */

/* out: "[ranks] text" lines whose ranks are within the rank count. */
static void check_out(lua_State *L, const char *out, size_t len, const char *what)
{
    reader *rd = reader_of(L);
    int line = 1;
    for (const char *p = out, *end = out + len; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        const char *close = p[0] == '[' ? memchr(p, ']', n) : NULL;
        char why[200];
        if (!close || (close + 1 < p + n && close[1] != ' '))
            bad(L, "%s.out: its line %d is not '[ranks] text'", what, line);
        if (!rank_list_ok(p + 1, (size_t)(close - p - 1), rd->rec->ranks, 0, 0, why, sizeof why))
            bad(L, "%s.out: its line %d: %s", what, line, why);
        p += n + (nl != NULL);
    }
}

/* The table field key of the table at t, pushed, and its index; 0 (nothing
 * pushed) when it is absent.  name gets its name in errors ("what.key");
 * a value that is no table is an error saying it should be `should`. */
static int open_table_field(lua_State *L, int t, const char *key, const char *what,
                            const char *should, char *name, size_t len)
{
    if (raw_field(L, t, key) == LUA_TNIL) {
        lua_pop(L, 1);
        return 0;
    }
    snprintf(name, len, "%s.%s", what, key);
    check_table(L, -1, name, should);
    return lua_gettop(L);
}

/* args = {"a", "b"}: strings, one after another. */
static void read_args(lua_State *L, int t, gcsh_replay_entry *e, const char *what)
{
    char name[64];
    int a = open_table_field(L, t, "args", what, "a list of strings", name, sizeof name);
    if (!a)
        return;
    lua_Unsigned n = lua_rawlen(L, a);
    if (n > INT_MAX / 2)
        bad(L, "%s.args holds too many", what);
    e->args = keep_zeroed(L, (size_t)n, sizeof *e->args);
    for (lua_Unsigned i = 1; i <= n; i++) {
        lua_rawgeti(L, a, (lua_Integer)i);
        snprintf(name, sizeof name, "%s.args[%llu]", what, (unsigned long long)i);
        e->args[e->nargs++] = arg_string(L, -1, name);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

/* wtime = {[rank] = {t, ...}}: numbers, for ranks within the count. */
static void read_tapes(lua_State *L, int t, gcsh_replay_entry *e, const char *what)
{
    int size = reader_of(L)->rec->ranks;
    char name[64];
    int w = open_table_field(L, t, "wtime", what, "a table of times per rank", name, sizeof name);
    if (!w)
        return;
    e->tape = keep_zeroed(L, (size_t)size, sizeof *e->tape);
    e->ntape = keep_zeroed(L, (size_t)size, sizeof *e->ntape);
    lua_pushnil(L);
    while (lua_next(L, w)) {
        if (!lua_isinteger(L, -2) || lua_tointeger(L, -2) < 0 || lua_tointeger(L, -2) >= size)
            bad(L, "%s.wtime has a key that is no rank of 0..%d", what, size - 1);
        int r = (int)lua_tointeger(L, -2);
        snprintf(name, sizeof name, "%s.wtime[%d]", what, r);
        check_table(L, -1, name, "a list of times");
        lua_Unsigned n = lua_rawlen(L, -1);
        double *v = keep_zeroed(L, (size_t)n, sizeof *v);
        free(e->tape[r]);
        e->tape[r] = v;
        for (lua_Unsigned i = 1; i <= n; i++) {
            if (lua_rawgeti(L, -1, (lua_Integer)i) != LUA_TNUMBER)
                bad(L, "%s.wtime[%d][%llu] is a %s, not a time", what, r, (unsigned long long)i,
                    luaL_typename(L, -1));
            v[i - 1] = lua_tonumber(L, -1);
            lua_pop(L, 1);
        }
        e->ntape[r] = (size_t)n;
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

/* ended = {status = N, lost = "ranks", why = "text"}. */
static void read_ending(lua_State *L, int t, gcsh_replay_entry *e, const char *what)
{
    static const char *const keys[] = {"status", "lost", "why", NULL};
    char name[64];
    int k = open_table_field(L, t, "ended", what, "a table", name, sizeof name);
    if (!k)
        return;
    known_keys(L, k, name, keys);
    e->end_status = (int)opt_integer(L, k, "status", name, 0, 255, -2);
    if (e->end_status < 0)
        bad(L, "%s has no status", name);
    e->end_lost = opt_ranks(L, k, "lost", name);
    e->end_why = opt_text(L, k, "why", name);
    lua_pop(L, 1);
}

/* The expected table at index x (nil: nothing expected). */
static void read_expected(lua_State *L, int x, gcsh_replay_entry *e, const char *what)
{
    static const char *const keys[] = {"out", "failed", "varies", "syntax", "exit",
                                       "exited", "wtime", "ended", "args", NULL};
    if (lua_isnoneornil(L, x))
        return;
    char name[64];
    snprintf(name, sizeof name, "%s's expected output", what);
    check_table(L, x, name, "a table");
    known_keys(L, x, what, keys);
    e->out = opt_text_len(L, x, "out", what, &e->out_len);
    if (e->out)
        check_out(L, e->out, e->out_len, what);
    e->failed = opt_ranks(L, x, "failed", what);
    e->syntax = opt_text(L, x, "syntax", what);
    int varies = raw_field(L, x, "varies");
    if (varies != LUA_TNIL && varies != LUA_TBOOLEAN)
        bad(L, "%s.varies is a %s, not a boolean", what, luaL_typename(L, -1));
    e->varies = lua_toboolean(L, -1);
    lua_pop(L, 1);
    e->exit_code = (int)opt_integer(L, x, "exit", what, 0, INT_MAX, -1);
    e->exited = opt_ranks(L, x, "exited", what);
    if (e->exited && e->exit_code < 0)
        bad(L, "%s has exited without exit", what);
    read_args(L, x, e, what);
    read_tapes(L, x, e, what);
    read_ending(L, x, e, what);
}

/* ---- the collector: line(...), line.chunk(...), line.dot(...) ------------------ */

/* A new entry of kind, at the calling line of the file; it counts as half
 * done (open_entry) until its call returns: an error in between, even one
 * the file's own pcall (or a finalizer) takes, fails the read. */
static gcsh_replay_entry *new_entry(lua_State *L, int kind)
{
    reader *rd = reader_of(L);
    gcsh_recording *rec = rd->rec;
    if (!rd->reading) /* a finalizer as the state closes */
        return luaL_error(L, "the recording was read"), NULL;
    if (rd->closed)
        bad(L, "a line after line.finish(N), which ends a recording");
    if (rec->n == rd->cap) {
        size_t cap = rd->cap ? (size_t)rd->cap * 2 : 16;
        gcsh_replay_entry *grown = NULL;
        size_t more = (cap - (size_t)rd->cap) * sizeof *grown;
        if (rd->cap < INT_MAX / 4 && more <= rd->mem_cap - rd->mem)
            grown = realloc(rec->e, cap * sizeof *grown);
        if (!grown)
            out_of_memory(L);
        rd->mem += (cap - (size_t)rd->cap) * sizeof *grown;
        rd->cap = (int)cap;
        rec->e = grown;
    }
    rd->open_entry = 1;
    gcsh_replay_entry *e = &rec->e[rec->n++];
    *e = (gcsh_replay_entry){.kind = kind, .exit_code = -1, .end_status = -1};
    lua_Debug ar;
    e->at = lua_getstack(L, 1, &ar) && lua_getinfo(L, "l", &ar) ? ar.currentline : 0;
    return e;
}

/* What every entry begins with: its number N at argument `at` (the
 * entries' count so far), a new entry of kind, and its ranks at at + 1;
 * what: the call, as errors name it ("line.chunk(...)"). */
static gcsh_replay_entry *begin_entry(lua_State *L, int at, int kind, const char *what)
{
    check_number(L, at, what);
    gcsh_replay_entry *e = new_entry(L, kind);
    char ranks[48];
    snprintf(ranks, sizeof ranks, "%s's ranks", what);
    e->ranks = rank_list(L, at + 1, ranks, 0, 1);
    return e;
}

/* The entry the call made is whole (new_entry). */
static int end_entry(lua_State *L)
{
    reader_of(L)->open_entry = 0;
    return 0;
}

/* What a line and a chunk end with: the source at argument `at`, the
 * expected output after it; then the entry is whole. */
static int end_with_source(lua_State *L, gcsh_replay_entry *e, int at, const char *what)
{
    char source[48];
    snprintf(source, sizeof source, "%s's source", what);
    e->src = arg_string(L, at, source);
    read_expected(L, at + 1, e, what);
    return end_entry(L);
}

/* line(N, ranks, source [, {out=, failed=, varies=, syntax=, exit=, wtime=, ended=}])
 * (argument 1 is the collector itself: this is its __call) */
static int collect_line(lua_State *L)
{
    gcsh_replay_entry *e = begin_entry(L, 2, GCSH_ENTRY_LINE, "line(...)");
    return end_with_source(L, e, 4, "line(...)");
}

/* line.chunk(N, ranks, name, source [, {args=, ...}]) */
static int collect_chunk(lua_State *L)
{
    gcsh_replay_entry *e = begin_entry(L, 1, GCSH_ENTRY_CHUNK, "line.chunk(...)");
    e->name = arg_string(L, 3, "line.chunk(...)'s name");
    if ((e->name[0] != '@' && e->name[0] != '=') || e->name[1] == '\0' ||
        strlen(e->name) > PATH_MAX)
        bad(L, "line.chunk(...)'s name '%.60s' is none a chunk has ('@file.lua' or "
               "'=(command line)')", e->name);
    return end_with_source(L, e, 4, "line.chunk(...)");
}

/* line.dot(N, ranks, ".command") */
static int collect_dot(lua_State *L)
{
    gcsh_replay_entry *e = begin_entry(L, 1, GCSH_ENTRY_DOT, "line.dot(...)");
    e->src = arg_string(L, 3, "line.dot(...)'s command");
    if (e->src[0] != '.')
        bad(L, "line.dot(...)'s command '%.60s' does not start with '.'", e->src);
    if (!lua_isnone(L, 4))
        bad(L, "line.dot(...) takes 3 arguments, not %d", lua_gettop(L));
    return end_entry(L);
}

/* line.finish(N): the recording is whole, with N entries. */
static int collect_finish(lua_State *L)
{
    reader *rd = reader_of(L);
    if (!rd->reading)
        return luaL_error(L, "the recording was read");
    if (!lua_isinteger(L, 1) || lua_tointeger(L, 1) < 0)
        bad(L, "line.finish(N)'s N is %s, not a count", luaL_typename(L, 1));
    if (rd->closed)
        bad(L, "a second line.finish(N)");
    rd->closed = 1;
    rd->finish = lua_tointeger(L, 1);
    return 0;
}

/* require("gcsh.record").script{ranks=, backend=, seed=, rand=}: the collector
 * `line`; the header's rank count is checked against the file's first
 * lines (their backend is the one used). */
static int collect_script(lua_State *L)
{
    static const char *const keys[] = {"ranks", "backend", "seed", "rand", NULL};
    reader *rd = reader_of(L);
    gcsh_recording *rec = rd->rec;
    if (!rd->reading)
        return luaL_error(L, "the recording was read");
    if (rd->header_seen)
        bad(L, "a second script{...} header");
    rd->header_seen = 1;
    check_table(L, 1, "script{...}'s header", "a table");
    known_keys(L, 1, "the script{...} header", keys);
    long long ranks = opt_integer(L, 1, "ranks", "the header", 1, GCSH_MAX_RANKS, rec->ranks);
    if (ranks != rec->ranks)
        bad(L, "the header says ranks = %lld; the file's first lines say %d", ranks, rec->ranks);
    if (raw_field(L, 1, "backend") != LUA_TNIL && !lua_isstring(L, -1))
        bad(L, "the header's backend is a %s, not a name", luaL_typename(L, -1));
    lua_pop(L, 1);
    if (raw_field(L, 1, "seed") != LUA_TNIL) {
        if (!lua_isinteger(L, -1))
            bad(L, "the header's seed is a %s, not an integer", luaL_typename(L, -1));
        rec->has_seed = 1;
        rec->seed = (long long)lua_tointeger(L, -1);
    }
    lua_pop(L, 1);
    if (raw_field(L, 1, "rand") != LUA_TNIL) {
        if (!lua_isboolean(L, -1))
            bad(L, "the header's rand is a %s, not a boolean", luaL_typename(L, -1));
        rec->rand = lua_toboolean(L, -1);
    }
    lua_pop(L, 1);
    lua_newtable(L);
    static const luaL_Reg calls[] = {
        {"dot", collect_dot}, {"chunk", collect_chunk}, {"finish", collect_finish}, {NULL, NULL}};
    luaL_setfuncs(L, calls, 0);
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, collect_line);
    lua_setfield(L, -2, "__call");
    lua_setmetatable(L, -2);
    return 1;
}

static int collect_require(lua_State *L)
{
    if (lua_type(L, 1) != LUA_TSTRING || strcmp(lua_tostring(L, 1), "gcsh.record") != 0)
        bad(L, "a recording requires only gcsh.record, not %s%.60s%s",
            lua_type(L, 1) == LUA_TSTRING ? "'" : "a ",
            lua_type(L, 1) == LUA_TSTRING ? lua_tostring(L, 1) : luaL_typename(L, 1),
            lua_type(L, 1) == LUA_TSTRING ? "'" : "");
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, collect_script);
    lua_setfield(L, -2, "script");
    return 1;
}

/* ---- the read ------------------------------------------------------------- */

/* The base library without what reads files, prints, compiles or sets
 * metatables, and our require. */
static int open_sandbox(lua_State *L)
{
    luaL_requiref(L, "_G", luaopen_base, 1);
    lua_pop(L, 1);
    /* no setmetatable (finalizers run with hooks off, out of the
     * instruction budget's reach), no getmetatable (the collector's own
     * would take a __close) */
    static const char *const gone[] = {"dofile",       "loadfile",     "load", "print",
                                       "setmetatable", "getmetatable", NULL};
    for (const char *const *g = gone; *g; g++) {
        lua_pushnil(L);
        lua_setglobal(L, *g);
    }
    lua_pushcfunction(L, collect_require);
    lua_setglobal(L, "require");
    return 0;
}

/* Whether the entries read are a whole recording: at least one, and (format
 * 2) the closing line.finish(N) with N of them.  0, or a status with why. */
static int whole(const reader *rd, char *err, size_t elen)
{
    const gcsh_recording *rec = rd->rec;
    if (!rd->header_seen) {
        snprintf(err, elen, "%s is malformed: it never calls require(\"gcsh.record\").script{...}",
                 rec->path);
        return GCSH_EXIT_USAGE;
    }
    if (rec->n == 0 && (rd->closed || rec->format < 2)) {
        snprintf(err, elen, "%s holds no lines: there is nothing to compare", rec->path);
        return GCSH_EXIT_SKIP;
    }
    if (rec->format >= 2 && !rd->closed) {
        snprintf(err, elen, "%s is cut short: it ends after %d line%s without its closing "
                            "line.finish(N) (the file was cut, or the recording never ended)",
                 rec->path, rec->n, rec->n == 1 ? "" : "s");
        return GCSH_EXIT_SKIP;
    }
    if (rd->closed && rd->finish != rec->n) {
        snprintf(err, elen, "%s is damaged: its closing line says %lld lines, it holds %d",
                 rec->path, rd->finish, rec->n);
        return GCSH_EXIT_SKIP;
    }
    return 0;
}

/* Runs the file's text in the sandbox: 0, or a status with why. */
static int run_body(reader *rd, char *err, size_t elen)
{
    gcsh_recording *rec = rd->rec;
    lua_State *L = lua_newstate(capped_alloc, rd);
    if (!L) {
        snprintf(err, elen, "cannot read %s: out of memory", rec->path);
        return GCSH_EXIT_SKIP;
    }
    *(reader **)lua_getextraspace(L) = rd;
    lua_sethook(L, count_hook, LUA_MASKCOUNT, HOOK_EVERY);
    char name[4100];
    snprintf(name, sizeof name, "@%s", rec->path);
    int st = 0;
    lua_pushcfunction(L, open_sandbox);
    if (lua_pcall(L, 0, 0, 0) != LUA_OK) {
        snprintf(err, elen, "cannot read %s: out of memory", rec->path);
        st = GCSH_EXIT_SKIP;
    } else if (luaL_loadbufferx(L, rec->text, rec->len, name, "t") != LUA_OK) {
        /* a file cut mid-text fails to compile: cut short as much as anything */
        snprintf(err, elen, "%s cannot be read as a recording (cut short or damaged): %s",
                 rec->path, lua_tostring(L, -1));
        st = GCSH_EXIT_SKIP;
    } else {
        rd->reading = 1;
        int rc = lua_pcall(L, 0, 0, 0);
        rd->reading = 0;
        if (rc == LUA_OK && rd->malformed) /* a fault the file's own pcall took */
            rc = LUA_ERRRUN;
        if (rc == LUA_OK && rd->open_entry) /* a call left half done: memory ran out */
            rd->out_of_memory = 1, rc = LUA_ERRMEM;
        if (rc == LUA_ERRMEM || (rc != LUA_OK && rd->out_of_memory && !rd->malformed)) {
            snprintf(err, elen, "%s is malformed: reading it needs more than %zu MiB, more than "
                                "any recording of its size", rec->path, rd->mem_cap >> 20);
            st = GCSH_EXIT_USAGE;
        } else if (rc != LUA_OK) {
            const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
            if (rd->malformed)
                snprintf(err, elen, "%s", rd->why);
            else /* the file's own Lua failed: no gcsh writes that */
                snprintf(err, elen, "%s is malformed: %s", rec->path,
                         msg ? msg : "it raised an error that is not a string");
            st = GCSH_EXIT_USAGE;
        }
    }
    lua_close(L);
    return st;
}

int gcsh_recording_read(const char *path, gcsh_recording *rec, char *err, size_t elen)
{
    *rec = (gcsh_recording){0};
    snprintf(rec->path, sizeof rec->path, "%s", path);
    int st = 0;
    rec->text = slurp(path, &rec->len, &st, err, elen);
    if (!rec->text)
        return st;
    FILE *f = fmemopen(rec->text, rec->len ? rec->len : 1, "r");
    st = f ? read_header(f, path, rec, err, elen) : GCSH_EXIT_SKIP;
    if (f)
        fclose(f);
    else
        snprintf(err, elen, "cannot read %s: %s", path, strerror(errno));
    if (st == 0) {
        reader rd = {.rec = rec,
                     .mem_cap = MEM_BASE + MEM_PER_BYTE * rec->len,
                     .steps_left = STEPS_BASE + STEPS_PER_BYTE * (long long)rec->len};
        st = run_body(&rd, err, elen);
        if (st == 0)
            st = whole(&rd, err, elen);
    }
    if (st != 0)
        gcsh_recording_free(rec);
    return st;
}

void gcsh_recording_free(gcsh_recording *rec)
{
    for (int i = 0; i < rec->n; i++) {
        gcsh_replay_entry *e = &rec->e[i];
        free(e->ranks);
        free(e->src);
        free(e->name);
        free(e->out);
        free(e->failed);
        free(e->exited);
        free(e->syntax);
        free(e->end_lost);
        free(e->end_why);
        for (int a = 0; a < e->nargs; a++)
            free(e->args[a]);
        free(e->args);
        for (int r = 0; e->tape && r < rec->ranks; r++)
            free(e->tape[r]);
        free(e->tape);
        free(e->ntape);
    }
    free(rec->e);
    free(rec->text);
    rec->e = NULL;
    rec->text = NULL;
    rec->n = 0;
}
