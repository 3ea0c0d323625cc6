/* Replaying a recording and comparing it line by line.  See record.h.
 *
 * The recording is read by running it in a private Lua state (base library
 * only) where require("gcsh.record").script{...} returns a collector: each
 * line(...), line.chunk(...) and line.dot(...) call becomes an entry, with
 * the file line it is on; line.finish(N) says the file is whole.  The
 * entries then run through the session as if typed (or, for chunks, as the
 * command line ran them), each with the values gcsh.wtime returned when it
 * was recorded. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "wire/msg.h"
#include "shell/record.h"

#define ENTRIES_KEY "gcsh.replay.entries"
#define HEADER_KEY "gcsh.replay.header"
#define HEADER_LINES 8

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

/* ---- the header, before MPI --------------------------------------------- */

/* "-- gcsh recording (format F): N rank[s], backend B": "1 rank" has no
 * "s", and scanf's %[s] matches no empty text, so the plural is skipped by
 * hand. */
static int parse_header_line(const char *line, int *format, int *ranks, char be[64])
{
    int at = 0;
    if (sscanf(line, "-- gcsh recording (format %d): %d rank%n", format, ranks, &at) != 2 || !at)
        return 0;
    if (line[at] == 's')
        at++;
    return sscanf(line + at, ", backend %63s", be) == 1;
}

int gcsh_replay_header(const char *path, int *ranks, char *backend, size_t blen, char *err,
                       size_t elen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, elen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    char line[512], be[64];
    int format = 0, found = 0;
    for (int i = 0; i < HEADER_LINES && !found && fgets(line, sizeof line, f); i++)
        found = parse_header_line(line, &format, ranks, be);
    fclose(f);
    if (!found) {
        snprintf(err, elen, "%s is not a gcsh recording (no '-- gcsh recording' line at its top; "
                            ".record FILE or gcsh --record FILE makes one)", path);
        return -1;
    }
    if (format < 1 || format > GCSH_RECORD_FORMAT) {
        snprintf(err, elen, "%s is a recording of format %d; this gcsh reads formats 1 to %d",
                 path, format, GCSH_RECORD_FORMAT);
        return -1;
    }
    snprintf(backend, blen, "%s", be);
    return 0;
}

/* ---- reading the entries ----------------------------------------------------- */

/* Appends the entry table at the top of the stack to the registry's list,
 * with the file line of the call being made. */
static void add_entry(lua_State *L, const char *kind)
{
    lua_Debug ar;
    int at = lua_getstack(L, 1, &ar) && lua_getinfo(L, "l", &ar) ? ar.currentline : 0;
    lua_pushstring(L, kind);
    lua_setfield(L, -2, "kind");
    lua_pushinteger(L, at);
    lua_setfield(L, -2, "at");
    lua_getfield(L, LUA_REGISTRYINDEX, ENTRIES_KEY);
    lua_insert(L, -2);
    lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
    lua_pop(L, 1);
}

/* The expectations of line() and line.chunk() at index e, as given. */
static void copy_expected(lua_State *L, int e)
{
    if (lua_isnoneornil(L, e))
        return;
    luaL_checktype(L, e, LUA_TTABLE);
    static const char *const keys[] = {"out", "failed", "varies", "syntax", "exit",
                                       "wtime", "ended", "args", NULL};
    for (const char *const *k = keys; *k; k++) {
        lua_getfield(L, e, *k);
        lua_setfield(L, -2, *k);
    }
}

/* An entry of kind with its ranks, name (or NULL), source and the
 * expectations at index e. */
static void collect(lua_State *L, const char *kind, const char *ranks, const char *name,
                    const char *src, int e)
{
    lua_createtable(L, 0, 12);
    copy_expected(L, e);
    lua_pushstring(L, ranks);
    lua_setfield(L, -2, "ranks");
    if (name) {
        lua_pushstring(L, name);
        lua_setfield(L, -2, "name");
    }
    lua_pushstring(L, src);
    lua_setfield(L, -2, "src");
    add_entry(L, kind);
}

/* line(N, ranks, source [, {out=, failed=, varies=, syntax=, exit=, wtime=, ended=}]) */
static int collect_line(lua_State *L)
{
    luaL_checkinteger(L, 2);
    collect(L, "line", luaL_checkstring(L, 3), NULL, luaL_checkstring(L, 4), 5);
    return 0;
}

/* line.chunk(N, ranks, name, source [, {args=, ...}]) */
static int collect_chunk(lua_State *L)
{
    luaL_checkinteger(L, 1);
    collect(L, "chunk", luaL_checkstring(L, 2), luaL_checkstring(L, 3), luaL_checkstring(L, 4), 5);
    return 0;
}

/* line.dot(N, ranks, ".command") */
static int collect_dot(lua_State *L)
{
    luaL_checkinteger(L, 1);
    const char *ranks = luaL_checkstring(L, 2);
    const char *src = luaL_checkstring(L, 3);
    lua_createtable(L, 0, 4);
    lua_pushstring(L, ranks);
    lua_setfield(L, -2, "ranks");
    lua_pushstring(L, src);
    lua_setfield(L, -2, "src");
    add_entry(L, "dot");
    return 0;
}

/* line.finish(N): the recording is whole, with N entries. */
static int collect_finish(lua_State *L)
{
    lua_Integer n = luaL_checkinteger(L, 1);
    lua_getfield(L, LUA_REGISTRYINDEX, HEADER_KEY);
    lua_pushinteger(L, n);
    lua_setfield(L, -2, "finish");
    return 0;
}

/* require("gcsh.record").script{...}: the collector `line`; the header's
 * fields (ranks, backend, seed) are kept. */
static int collect_script(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_pushvalue(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, HEADER_KEY);
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
    const char *name = luaL_checkstring(L, 1);
    if (strcmp(name, "gcsh.record") != 0)
        return luaL_error(L, "a recording requires only gcsh.record, not '%s'", name);
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, collect_script);
    lua_setfield(L, -2, "script");
    return 1;
}

/* Whether the entries read are a whole recording: at least one, and (format
 * 2) the closing line.finish(N) with N of them.  Says why not. */
static int whole(gcsh_coord *c, lua_State *L, const char *path)
{
    lua_getfield(L, LUA_REGISTRYINDEX, ENTRIES_KEY);
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    lua_getfield(L, LUA_REGISTRYINDEX, HEADER_KEY);
    int closed = lua_getfield(L, -1, "finish") == LUA_TNUMBER;
    lua_Integer finish = lua_tointeger(L, -1);
    lua_pop(L, 3);
    FILE *f = fopen(path, "r");
    char line[512];
    int format = 1;
    for (int i = 0; f && i < HEADER_LINES && fgets(line, sizeof line, f); i++)
        sscanf(line, "-- gcsh recording (format %d)", &format);
    if (f)
        fclose(f);
    if (n == 0 && (closed || format < 2)) {
        gcsh_coord_say(c, "gcsh: --replay: %s holds no lines: there is nothing to compare", path);
        return 0;
    }
    if (format >= 2 && !closed) {
        gcsh_coord_say(c, "gcsh: --replay: %s is cut short: it ends after %lld line%s without "
                          "its closing line.finish(N) (the file was cut, or the recording never "
                          "ended)", path, (long long)n, n == 1 ? "" : "s");
        return 0;
    }
    if (closed && finish != n) {
        gcsh_coord_say(c, "gcsh: --replay: %s is damaged: its closing line says %lld lines, it "
                          "holds %lld", path, (long long)finish, (long long)n);
        return 0;
    }
    return 1;
}

/* Runs the recording in a private state; its entries end up at
 * registry[ENTRIES_KEY], its header at registry[HEADER_KEY].  NULL after
 * saying why (it does not run, or is not whole). */
static lua_State *read_entries(gcsh_coord *c, const char *path)
{
    lua_State *L = luaL_newstate();
    luaL_requiref(L, "_G", luaopen_base, 1);
    lua_pop(L, 1);
    lua_pushcfunction(L, collect_require);
    lua_setglobal(L, "require");
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, ENTRIES_KEY);
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, HEADER_KEY);
    if (luaL_loadfile(L, path) != LUA_OK || lua_pcall(L, 0, 0, 0) != LUA_OK) {
        gcsh_coord_say(c, "gcsh: --replay: %s", lua_tostring(L, -1));
        lua_close(L);
        return NULL;
    }
    if (!whole(c, L, path)) {
        lua_close(L);
        return NULL;
    }
    return L;
}

/* ---- one entry ------------------------------------------------------------- */

/* The "[ranks] text" lines of a recorded output, back into per-rank texts. */
static void unfold(const char *out, int size, gcsh_text *texts)
{
    const char *p = out;
    while (p && *p) {
        size_t n = strcspn(p, "\n");
        const char *close = p[0] == '[' ? memchr(p, ']', n) : NULL;
        if (close && close + 1 < p + n && close[1] == ' ') {
            const char *text = close + 2;
            size_t tlen = (size_t)(p + n - text);
            for (const char *q = p + 1; q < close;) {
                char *end;
                long a = strtol(q, &end, 10), b = a;
                if (*end == '-')
                    b = strtol(end + 1, &end, 10);
                for (long r = a; r <= b && r < size; r++)
                    if (r >= 0) {
                        gcsh_text_append(&texts[r], text, tlen);
                        gcsh_text_append(&texts[r], "\n", 1);
                    }
                q = *end == ',' ? end + 1 : close;
            }
        }
        p += n + (p[n] == '\n');
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

typedef struct entry {
    int index, at;  /* its number in the session and its line in the file */
    const char *src, *out, *failed, *syntax, *name;
    int varies, exit_code;
    int end_status; /* ended = {status=, lost=, why=}: -1 when none */
    const char *end_lost, *end_why;
} entry;

static const char *opt_string(lua_State *L, int t, const char *key)
{
    lua_getfield(L, t, key);
    const char *s = lua_isstring(L, -1) ? lua_tostring(L, -1) : NULL;
    lua_pop(L, 1); /* the string stays alive in the entry table */
    return s;
}

static int opt_int(lua_State *L, int t, const char *key, int dflt)
{
    lua_getfield(L, t, key);
    int v = lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : dflt;
    lua_pop(L, 1);
    return v;
}

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
    unfold(e->out, size, want);
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

/* Compares what ran with the entry; 0 when equal, else reports and -1. */
static int compare(gcsh_session *s, const char *path, const entry *e, const gcsh_line_result *res)
{
    gcsh_coord *c = s->coord;
    char where[600];
    snprintf(where, sizeof where, "gcsh: replay: %s:%d: line %d", path, e->at, e->index);
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
    if (e->exit_code != res->exit_code) {
        gcsh_coord_say(c, "%s: expected %s, got %s", where,
                       e->exit_code >= 0 ? "os.exit" : "no os.exit",
                       res->exit_code >= 0 ? "os.exit" : "no os.exit");
        rc = -1;
    }
    if (rc != 0 || e->varies || res->tap.varies)
        return rc; /* varying output is shown, not compared */
    return compare_output(s, where, e, res);
}

/* A chunk of the command line, shown as the prompt would have: by its
 * name and arguments ("gcsh[0-1]> -- the script f.lua a b"). */
static void echo_chunk(gcsh_session *s, const entry *e, lua_State *L, int t)
{
    char prompt[600];
    gcsh_text args = {0};
    if (lua_getfield(L, t, "args") == LUA_TTABLE)
        for (lua_Integer i = 1; i <= (lua_Integer)lua_rawlen(L, -1); i++) {
            lua_rawgeti(L, -1, i);
            gcsh_text_append(&args, " ", 1);
            size_t n;
            const char *a = lua_tolstring(L, -1, &n);
            gcsh_text_append(&args, a ? a : "?", a ? n : 1);
            lua_pop(L, 1);
        }
    lua_pop(L, 1);
    gcsh_session_prompt(s, 0, prompt, sizeof prompt);
    gcsh_coord_say(s->coord, "%s-- %s %s%s", prompt, e->name[0] == '@' ? "the script"
                                                                     : "the chunk",
                   e->name + 1, args.s ? args.s : "");
    gcsh_text_free(&args);
}

/* Before the entry runs: each rank's gcsh.wtime returns what it returned
 * when this was recorded (wtime = {[rank] = {t, ...}}). */
static void play_tapes(gcsh_session *s, lua_State *L, int t)
{
    if (lua_getfield(L, t, "wtime") != LUA_TTABLE) {
        lua_pop(L, 1);
        return;
    }
    for (int r = 0; r < s->coord->size; r++) {
        if (lua_rawgeti(L, -1, r) == LUA_TTABLE) {
            size_t n = lua_rawlen(L, -1);
            double *v = malloc((n ? n : 1) * sizeof *v);
            for (size_t i = 0; i < n; i++) {
                lua_rawgeti(L, -1, (lua_Integer)i + 1);
                v[i] = lua_tonumber(L, -1);
                lua_pop(L, 1);
            }
            gcsh_coord_play_tape(s->coord, r, v, n);
            free(v);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

/* A chunk of the command line: `arg` set as it was on every rank (the
 * script's arguments), then run as the command line ran it. */
static void run_chunk_entry(gcsh_session *s, lua_State *L, int t, const entry *e,
                            gcsh_line_result *res)
{
    const char **args = NULL;
    int nargs = 0;
    gcsh_text set = {0};
    gcsh_text_append(&set, "arg = {[0] = ", 13);
    gcsh_lua_string(&set, e->name + 1, strlen(e->name + 1));
    if (lua_getfield(L, t, "args") == LUA_TTABLE) {
        nargs = (int)lua_rawlen(L, -1);
        args = calloc((size_t)nargs + 1, sizeof *args);
        for (int i = 0; i < nargs; i++) {
            lua_rawgeti(L, -1, i + 1);
            args[i] = lua_tostring(L, -1) ? lua_tostring(L, -1) : "";
            lua_pop(L, 1); /* alive in the entry table */
            gcsh_text_append(&set, ", ", 2);
            gcsh_lua_string(&set, args[i], strlen(args[i]));
        }
    }
    lua_pop(L, 1);
    gcsh_text_append(&set, "}", 2);
    if (e->name[0] == '@') {
        gcsh_tap quiet;
        gcsh_session_aside(s, set.s, &quiet);
        gcsh_tap_destroy(&quiet, s->coord->size);
    }
    play_tapes(s, L, t); /* after the quiet chunk, which would take them */
    gcsh_chunk k = {.name = e->name, .src = e->src, .len = strlen(e->src), .args = args,
                    .nargs = nargs, .flags = e->name[0] == '@' ? CHUNK_SCRIPT : 0};
    gcsh_session_feed(s, &k, &(gcsh_feed){0}, res);
    gcsh_text_free(&set);
    free(args);
}

/* Reads entry fields from the table at t. */
static void read_entry(lua_State *L, int t, entry *e)
{
    e->src = opt_string(L, t, "src");
    e->name = opt_string(L, t, "name");
    e->at = opt_int(L, t, "at", 0);
    e->out = opt_string(L, t, "out");
    e->failed = opt_string(L, t, "failed");
    e->syntax = opt_string(L, t, "syntax");
    lua_getfield(L, t, "varies");
    e->varies = lua_toboolean(L, -1);
    lua_pop(L, 1);
    e->exit_code = opt_int(L, t, "exit", -1);
    e->end_status = -1;
    if (lua_getfield(L, t, "ended") == LUA_TTABLE) {
        int k = lua_gettop(L);
        e->end_status = opt_int(L, k, "status", -1);
        e->end_lost = opt_string(L, k, "lost");
        e->end_why = opt_string(L, k, "why");
    }
    lua_pop(L, 1);
}

/* Runs entry e (on the stack top); 0 when it matched, -1 when not. */
static int replay_entry(gcsh_session *s, lua_State *L, gcsh_replayer *rp)
{
    entry e = {.index = rp->index};
    int t = lua_gettop(L);
    const char *kind = opt_string(L, t, "kind");
    read_entry(L, t, &e);
    rp->at = e.at;
    rp->expect_status = e.end_status;
    rp->expect_lost = e.end_lost;
    rp->expect_why = e.end_why;
    if (gcsh_session_set_ranks(s, opt_string(L, t, "ranks")) != 0)
        return -1;
    if (strcmp(kind, "dot") == 0) {
        gcsh_session_echo(s, e.src);
        gcsh_session_dot(s, e.src);
        return 0;
    }
    gcsh_line_result res;
    if (strcmp(kind, "chunk") == 0) {
        echo_chunk(s, &e, L, t);
        run_chunk_entry(s, L, t, &e, &res);
    } else {
        gcsh_chunk line = {.name = "=stdin", .src = e.src, .len = strlen(e.src)};
        play_tapes(s, L, t);
        gcsh_session_feed(s, &line, &(gcsh_feed){.typed = 1, .echo = e.src}, &res);
    }
    rp->expect_status = -1;
    if (res.ran && res.verdict == GCSH_EXIT_SKIP) { /* as the script run alone would say */
        rp->untestable = rp->index;
        gcsh_line_result_free(s, &res);
        return 0;
    }
    int rc = compare(s, rp->path, &e, &res);
    rp->varied += rc == 0 && res.ran && (e.varies || res.tap.varies);
    gcsh_line_result_free(s, &res);
    return rc;
}

/* Notes variables of the recording's environment that differ now. */
static void compare_env(gcsh_coord *c, const char *path)
{
    FILE *f = fopen(path, "r");
    char line[4096];
    while (f && fgets(line, sizeof line, f) && strncmp(line, "local line", 10) != 0) {
        if (strncmp(line, "-- env ", 7) != 0)
            continue;
        line[strcspn(line, "\n")] = '\0';
        char *kv = line + 7, *eq = strchr(kv, '=');
        if (!eq)
            continue;
        *eq = '\0';
        const char *now = getenv(kv);
        if (!now || strcmp(now, eq + 1) != 0)
            gcsh_coord_say(c, "gcsh: replay: note: %s was '%s' when recorded, is %s%s%s now", kv,
                           eq + 1, now ? "'" : "unset", now ? now : "", now ? "'" : "");
    }
    if (f)
        fclose(f);
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
static void seed_ranks(gcsh_session *s, lua_State *L)
{
    lua_getfield(L, LUA_REGISTRYINDEX, HEADER_KEY);
    int rand = lua_getfield(L, -1, "rand") == LUA_TBOOLEAN && lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (lua_getfield(L, -1, "seed") == LUA_TNUMBER && lua_isinteger(L, -1)) {
        char src[96];
        snprintf(src, sizeof src, "require('gcsh.record').seed(%lld%s)",
                 (long long)lua_tointeger(L, -1), rand ? ", true" : "");
        gcsh_tap tap;
        gcsh_session_aside(s, src, &tap);
        gcsh_tap_destroy(&tap, s->coord->size);
    }
    lua_pop(L, 2);
}

int gcsh_replay(gcsh_session *s, const char *path, int keep_going)
{
    lua_State *L = read_entries(s->coord, path);
    if (!L)
        return GCSH_EXIT_SKIP;
    compare_env(s->coord, path);
    seed_ranks(s, L);
    gcsh_replayer rp = {.path = path, .keep_going = keep_going, .expect_status = -1};
    s->replay = &rp;
    s->replay_ops = &replay_rider;
    lua_getfield(L, LUA_REGISTRYINDEX, ENTRIES_KEY);
    int n = (int)lua_rawlen(L, -1);
    for (int i = 1; i <= n && !s->quit && !rp.untestable && (keep_going || rp.ndiffer == 0);
         i++) {
        rp.index = i;
        lua_rawgeti(L, -1, i);
        if (replay_entry(s, L, &rp) != 0)
            note_difference(&rp, i);
        rp.lines++;
        lua_pop(L, 1);
    }
    s->replay = NULL;
    lua_close(L);
    int rc;
    if (rp.untestable && !rp.ndiffer) { /* as the script run alone (rank/loads.h) */
        gcsh_coord_say(s->coord, "gcsh: replay: %s: line %d cannot be tested here (a Lua file "
                                 "it loads does not load, or a module it requires is missing)",
                       path, rp.untestable);
        rc = GCSH_EXIT_SKIP;
    } else {
        rc = rp.ndiffer && !keep_going ? 1 : summary(s, &rp);
    }
    gcsh_text_free(&rp.differ);
    return rc;
}
