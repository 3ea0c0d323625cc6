/* Replaying a recording and comparing it line by line.  See record.h.
 *
 * The recording is read by running it in a private Lua state (base library
 * only) where require("gcsh.record").script{...} returns a collector: each
 * line(...) and line.dot(...) call becomes an entry, with the file line it
 * is on.  The entries then run through the session as if typed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "wire/msg.h"
#include "shell/record.h"

#define ENTRIES_KEY "gcsh.replay.entries"
#define HEADER_LINES 8

/* ---- the header, before MPI --------------------------------------------- */

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
        found = sscanf(line, "-- gcsh recording (format %d): %d rank%*[s], backend %63s", &format,
                       ranks, be) == 3;
    fclose(f);
    if (!found) {
        snprintf(err, elen, "%s is not a gcsh recording (no '-- gcsh recording' line at its top; "
                            ".record FILE or gcsh --record FILE makes one)", path);
        return -1;
    }
    if (format != GCSH_RECORD_FORMAT) {
        snprintf(err, elen, "%s is a recording of format %d; this gcsh reads format %d", path,
                 format, GCSH_RECORD_FORMAT);
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

/* line(N, ranks, source [, {out=, failed=, varies=, syntax=, exit=}]) */
static int collect_line(lua_State *L)
{
    luaL_checkinteger(L, 2);
    const char *ranks = luaL_checkstring(L, 3);
    const char *src = luaL_checkstring(L, 4);
    if (!lua_isnoneornil(L, 5))
        luaL_checktype(L, 5, LUA_TTABLE);
    lua_createtable(L, 0, 8);
    if (lua_istable(L, 5)) { /* the expectations, as given */
        static const char *const keys[] = {"out", "failed", "varies", "syntax", "exit", NULL};
        for (const char *const *k = keys; *k; k++) {
            lua_getfield(L, 5, *k);
            lua_setfield(L, -2, *k);
        }
    }
    lua_pushstring(L, ranks);
    lua_setfield(L, -2, "ranks");
    lua_pushstring(L, src);
    lua_setfield(L, -2, "src");
    add_entry(L, "line");
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

/* require("gcsh.record").script{...}: the collector `line`. */
static int collect_script(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_newtable(L);
    lua_pushcfunction(L, collect_dot);
    lua_setfield(L, -2, "dot");
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

/* Runs the recording in a private state; its entries end up at
 * registry[ENTRIES_KEY].  NULL after saying why. */
static lua_State *read_entries(gcsh_coord *c, const char *path)
{
    lua_State *L = luaL_newstate();
    luaL_requiref(L, "_G", luaopen_base, 1);
    lua_pop(L, 1);
    lua_pushcfunction(L, collect_require);
    lua_setglobal(L, "require");
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, ENTRIES_KEY);
    if (luaL_loadfile(L, path) != LUA_OK || lua_pcall(L, 0, 0, 0) != LUA_OK) {
        gcsh_coord_say(c, "gcsh: --replay: %s", lua_tostring(L, -1));
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
    const char *src, *out, *failed, *syntax;
    int varies, exit_code;
} entry;

static const char *opt_string(lua_State *L, int t, const char *key)
{
    lua_getfield(L, t, key);
    const char *s = lua_isstring(L, -1) ? lua_tostring(L, -1) : NULL;
    lua_pop(L, 1); /* the string stays alive in the entry table */
    return s;
}

/* Compares what ran with the entry; 0 when equal, else reports and -1. */
static int compare(gcsh_session *s, const char *path, const entry *e, const gcsh_line_result *res)
{
    gcsh_coord *c = s->coord;
    int size = c->size;
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
    if (!res->ran)
        return 0;
    char failed[1024] = "";
    int *list = malloc((size_t)size * sizeof *list), n = 0;
    for (int r = 0; r < size; r++)
        if (res->tap.ran[r] && res->tap.status[r] == CHUNK_ERROR)
            list[n++] = r;
    gcsh_format_ranks(list, n, failed, sizeof failed);
    free(list);
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
    gcsh_text *want = calloc((size_t)size, sizeof *want);
    char *differ = calloc((size_t)size, 1);
    unfold(e->out, size, want);
    int ndiff = 0;
    for (int r = 0; r < size; r++) {
        gcsh_text got = {0}, exp = {0};
        if (res->tap.ran[r])
            normalise(&got, &res->tap.out[r]);
        normalise(&exp, &want[r]);
        differ[r] = got.len != exp.len || (got.len && memcmp(got.s, exp.s, got.len) != 0);
        ndiff += differ[r];
        gcsh_text_free(&got);
        gcsh_text_free(&exp);
    }
    if (ndiff) {
        int *ranks = malloc((size_t)size * sizeof *ranks), k = 0;
        for (int r = 0; r < size; r++)
            if (differ[r])
                ranks[k++] = r;
        char label[1024];
        gcsh_format_ranks(ranks, k, label, sizeof label);
        free(ranks);
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
        rc = -1;
    }
    for (int r = 0; r < size; r++)
        gcsh_text_free(&want[r]);
    free(want);
    free(differ);
    return rc;
}

/* Shows the line as the prompt would have: "gcsh[0-1]> src", continued. */
static void echo(gcsh_session *s, const char *src)
{
    char prompt[600];
    int first = 1;
    for (const char *p = src; first || *p;) {
        size_t n = strcspn(p, "\n");
        gcsh_session_prompt(s, !first, prompt, sizeof prompt);
        gcsh_coord_say(s->coord, "%s%.*s", prompt, (int)n, p);
        p += n + (p[n] == '\n');
        first = 0;
    }
}

/* Runs entry e (on the stack top); 0 when it matched, -1 when not. */
static int replay_entry(gcsh_session *s, lua_State *L, const char *path, int index, int *varied)
{
    entry e = {.index = index, .exit_code = -1};
    int t = lua_gettop(L);
    const char *kind = opt_string(L, t, "kind");
    const char *ranks = opt_string(L, t, "ranks");
    e.src = opt_string(L, t, "src");
    lua_getfield(L, t, "at");
    e.at = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (gcsh_session_set_ranks(s, ranks) != 0)
        return -1;
    echo(s, e.src);
    if (strcmp(kind, "dot") == 0) {
        gcsh_session_dot(s, e.src);
        return 0;
    }
    e.out = opt_string(L, t, "out");
    e.failed = opt_string(L, t, "failed");
    e.syntax = opt_string(L, t, "syntax");
    lua_getfield(L, t, "varies");
    e.varies = lua_toboolean(L, -1);
    lua_getfield(L, t, "exit");
    e.exit_code = lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : -1;
    lua_pop(L, 2);
    gcsh_line_result res;
    gcsh_session_line(s, e.src, &res);
    int rc = compare(s, path, &e, &res);
    *varied += rc == 0 && res.ran && (e.varies || res.tap.varies);
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

int gcsh_replay(gcsh_session *s, const char *path)
{
    lua_State *L = read_entries(s->coord, path);
    if (!L)
        return 2;
    compare_env(s->coord, path);
    lua_getfield(L, LUA_REGISTRYINDEX, ENTRIES_KEY);
    int n = (int)lua_rawlen(L, -1), varied = 0, lines = 0, rc = 0;
    for (int i = 1; i <= n && rc == 0 && !s->quit; i++) {
        lua_rawgeti(L, -1, i);
        rc = replay_entry(s, L, path, i, &varied);
        lines++;
        lua_pop(L, 1);
    }
    lua_close(L);
    if (rc != 0)
        return 1;
    gcsh_coord_say(s->coord, "gcsh: replay: %d line%s of %s match%s", lines, lines == 1 ? "" : "s",
                   path, lines == 1 ? "es" : "");
    if (varied)
        gcsh_coord_say(s->coord, "gcsh: replay: (%d with output that varies between runs, shown "
                                 "but not compared)", varied);
    return 0;
}
