/* Rank 0's session: targets, failures and the one entry lines run
 * through.  See session.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "shell/session.h"
#include "shell/sigint.h"
#include "wire/msg.h"

/* coord's ending hook: the session ends at once (a lost rank, a device fault).
 * A replay compares that ending with the recording's; the recorder keeps
 * the line that was running and how it ended (and leaves). */
static int session_on_end(void *arg, int status, const char *why)
{
    gcsh_session *s = arg;
    if (status == GCSH_EXIT_PIPE && gcsh_session_status(s) != 0)
        status = gcsh_session_status(s); /* a line failed before the reader left */
    int end = s->replay ? s->replay_ops->ending(s, status, why) : status;
    if (s->rec && s->rec_ops->ending(s, status, why) != 0 && end == 0)
        end = GCSH_EXIT_SKIP;
    return end;
}

void gcsh_session_init(gcsh_session *s, gcsh_coord *coord, gcsh_term *term, lua_State *L0)
{
    *s = (gcsh_session){.coord = coord, .term = term, .L0 = L0, .check_on = 1, .exit_code = -1,
                        .worst = -1};
    static const gcsh_coord_hooks ending = {.ending = session_on_end};
    gcsh_coord_listen(coord, &ending, s);
    s->syntax = luaL_newstate();
    s->targets = malloc((size_t)coord->size);
    s->everyone = malloc((size_t)coord->size);
    if (!s->syntax || !s->targets || !s->everyone)
        abort(); /* out of host memory on rank 0 */
    memset(s->targets, 1, (size_t)coord->size);
    memset(s->everyone, 1, (size_t)coord->size);
}

int gcsh_session_record_off(gcsh_session *s)
{
    return s->rec ? s->rec_ops->close(s) : 0;
}

void gcsh_session_destroy(gcsh_session *s)
{
    gcsh_session_record_off(s);
    if (s->lesson)
        s->lesson_ops->close(s);
    gcsh_text_free(&s->inbuf);
    gcsh_text_free(&s->pasted);
    gcsh_text_free(&s->shown);
    if (s->fmt)
        lua_close(s->fmt);
    lua_close(s->syntax);
    free(s->targets);
    free(s->everyone);
}

int gcsh_session_status(const gcsh_session *s)
{
    if (s->failures == 0)
        return 0;
    return gcsh_status_worst(s->failures > s->harness_failures ? 1 : GCSH_EXIT_SKIP, s->worst);
}

/* ---- targets and the prompt ------------------------------------------------ */

static char *format_targets(const gcsh_session *s, const char *targets, char *buf, size_t len)
{
    return gcsh_format_ranks_where(s->coord->size, gcsh_rank_in_mask, targets, buf, len, NULL);
}

char *gcsh_session_targets(const gcsh_session *s, char *buf, size_t len)
{
    return format_targets(s, s->targets, buf, len);
}

/* Parses "0,2-3" into targets; returns 0 or -1 with a message said. */
static int parse_ranks(gcsh_session *s, const char *arg, char *targets)
{
    int n = s->coord->size;
    memset(targets, 0, (size_t)n);
    const char *p = arg;
    while (*p) {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p)
            goto bad;
        p = end;
        if (*p == '-') {
            b = strtol(p + 1, &end, 10);
            if (end == p + 1)
                goto bad;
            p = end;
        }
        if (a > b && a < n) {
            gcsh_coord_say(s->coord, "gcsh: .ranks: empty range '%ld-%ld'", a, b);
            return -1;
        }
        if (a < 0 || b >= n || a > b) {
            long bad = a < 0 || a >= n ? a : b;
            gcsh_coord_say(s->coord, "gcsh: .ranks: rank %ld out of range (valid 0..%d)", bad,
                           n - 1);
            return -1;
        }
        for (long r = a; r <= b; r++)
            targets[r] = 1;
        if (*p == ',')
            p++;
        else if (*p)
            goto bad;
    }
    return 0;
bad:
    gcsh_coord_say(s->coord, "gcsh: .ranks: cannot parse '%s' (e.g. .ranks 0,2-3 or .ranks all)",
                   arg);
    return -1;
}

int gcsh_session_set_ranks(gcsh_session *s, const char *list)
{
    int n = s->coord->size;
    if (strcmp(list, "all") == 0) {
        memset(s->targets, 1, (size_t)n);
        return 0;
    }
    char *t = malloc((size_t)n);
    if (!t)
        abort(); /* out of host memory on rank 0 */
    int rc = parse_ranks(s, list, t);
    if (rc == 0)
        memcpy(s->targets, t, (size_t)n);
    free(t);
    return rc;
}

/* The prompt names the ranks a line runs on: "gcsh[0-3]> ", continuation
 * "gcsh[0-3]>> ". */
static void prompt_for(gcsh_session *s, const char *targets, int continuation, char *buf,
                       size_t len)
{
    char ranks[512];
    snprintf(buf, len, "gcsh[%s]%s ", format_targets(s, targets, ranks, sizeof ranks),
             continuation ? ">>" : ">");
}

void gcsh_session_prompt(gcsh_session *s, int continuation, char *buf, size_t len)
{
    prompt_for(s, s->targets, continuation, buf, len);
}

/* text as typed after the prompt for targets, a line at a time. */
static void echo_for(gcsh_session *s, const char *targets, const char *text)
{
    char prompt[600];
    int first = 1;
    for (const char *p = text; first || *p;) {
        size_t n = strcspn(p, "\n");
        prompt_for(s, targets, !first, prompt, sizeof prompt);
        gcsh_coord_say(s->coord, "%s%.*s", prompt, (int)n, p);
        p += n + (p[n] == '\n');
        first = 0;
    }
}

void gcsh_session_echo(gcsh_session *s, const char *text)
{
    echo_for(s, s->targets, text);
}

/* ---- compiling ---------------------------------------------------------------- */

/* Whether load status st (its message on S's top) says the chunk ended too
 * soon: a syntax error at <eof>. */
static int ends_too_soon(lua_State *S, int st)
{
    size_t mlen = 0;
    const char *msg = st == LUA_ERRSYNTAX ? lua_tolstring(S, -1, &mlen) : NULL;
    return msg && mlen >= 5 && strcmp(msg + mlen - 5, "<eof>") == 0;
}

int gcsh_session_unfinished(gcsh_session *s, const char *chunk)
{
    int st = luaL_loadbuffer(s->syntax, chunk, strlen(chunk), "=lesson");
    int unfinished = ends_too_soon(s->syntax, st);
    lua_settop(s->syntax, 0);
    return unfinished;
}

/* A chunk that does not compile: said (a typed line's and a lesson's
 * error on stderr; a command-line chunk's as the shell's other lines),
 * kept for the recorder, counted as a chunk that cannot run here. */
static void syntax_failed(gcsh_session *s, const char *msg, int as_error)
{
    if (as_error)
        gcsh_coord_error(s->coord, "%s", msg);
    else
        gcsh_coord_say(s->coord, "%s", msg);
    snprintf(s->syntax_msg, sizeof s->syntax_msg, "%s", msg);
    s->failures++;
    s->harness_failures++;
}

/* As lua.c: a typed line is first tried as an expression ("return " ..
 * line) so that its values print; then as statements.  Returns the source
 * to run (malloc'd), or NULL with *st the load status (LUA_OK: it ends too
 * soon, nothing said; else the error is on the syntax state's top). */
static char *compile_typed(gcsh_session *s, const gcsh_chunk *k, int *st)
{
    lua_State *S = s->syntax;
    const char *chunk = k->src;
    const char *body = chunk[0] == '=' ? chunk + 1 : chunk; /* 5.2's "=expr" */
    size_t n = strlen(body);
    char *ret = malloc(n + 8);
    if (!ret)
        abort(); /* out of host memory on rank 0 */
    memcpy(ret, "return ", 7);
    memcpy(ret + 7, body, n + 1);
    *st = luaL_loadbuffer(S, ret, n + 7, k->name);
    if (*st == LUA_OK) {
        lua_settop(S, 0);
        return ret;
    }
    free(ret);
    if (chunk[0] != '=') { /* "=expr" is only ever an expression */
        lua_settop(S, 0);
        *st = luaL_loadbuffer(S, chunk, strlen(chunk), k->name);
    }
    if (*st == LUA_OK) {
        lua_settop(S, 0);
        return strdup(chunk);
    }
    if (ends_too_soon(S, *st)) {
        lua_settop(S, 0);
        *st = LUA_OK;
    }
    return NULL;
}

/* Compiles k as `how` says: the source to run (k->src itself, or a copy
 * to free in *owned) and its length, or NULL when it did not compile
 * (said; *incomplete when a typed chunk ends too soon, nothing said). */
static const char *compile(gcsh_session *s, const gcsh_chunk *k, const gcsh_feed *how,
                           char **owned, size_t *len, int *incomplete)
{
    *owned = NULL;
    *incomplete = 0;
    int st;
    if (how->typed) {
        *owned = compile_typed(s, k, &st);
        if (*owned) {
            *len = strlen(*owned);
            return *owned;
        }
        *incomplete = st == LUA_OK;
    } else {
        st = luaL_loadbuffer(s->syntax, k->src, k->len, k->name);
        if (st == LUA_OK) {
            lua_settop(s->syntax, 0);
            *len = k->len;
            return k->src;
        }
    }
    if (!*incomplete)
        syntax_failed(s, lua_tostring(s->syntax, -1), how->typed || how->unrecorded);
    lua_settop(s->syntax, 0);
    return NULL;
}

/* ---- running ------------------------------------------------------------------ */

static void run_compiled(gcsh_session *s, const char *targets, const char *name, const char *src,
                         size_t len, uint32_t flags, int timed, gcsh_run_result *res)
{
    /* .abort is read from a terminal only: a pipe's next lines are the next
     * commands, not an answer to this one */
    s->coord->abort_fd = s->term->editing && gcsh_term_holds(s->term) ? fileno(s->term->in) : -1;
    if (s->check_on)
        flags |= CHUNK_CHECK;
    gcsh_coord_run(s->coord, targets, flags, name, src, len, res);
    s->coord->abort_fd = -1;
    if (res->failed)
        s->failures++;
    if (res->failed && res->verdict == GCSH_EXIT_SKIP) /* no rank failed on its own */
        s->harness_failures++;
    if (res->failed)
        s->worst = gcsh_status_worst(s->worst, res->verdict);
    s->coord->verdict_so_far = gcsh_session_status(s);
    if (res->exit_code >= 0) { /* os.exit: the session ends with that status */
        s->exit_code = res->exit_code;
        s->quit = 1;
    }
    if (s->coord->end_status >= 0) /* SIGTERM: the session ends */
        s->quit = 1;
    if (s->time_on && timed)
        gcsh_coord_say(s->coord, "gcsh: %.3f ms", res->seconds * 1e3);
}

/* Runs compiled src as `how` says, its output kept in how->keep or res's
 * tap (NULL: printed only).  Returns the ranks where it failed. */
static int run_fed(gcsh_session *s, const gcsh_chunk *k, const char *src, size_t len,
                   const gcsh_feed *how, gcsh_line_result *res)
{
    int recorded = s->rec && !how->unrecorded;
    gcsh_tap *outer = s->coord->tap; /* .record's, if any: a kept chunk is no typed line */
    gcsh_tap *tap = how->keep ? how->keep : res ? &res->tap : NULL;
    if (tap) {
        gcsh_tap_init(tap, s->coord->size);
        tap->quiet = how->keep != NULL;
        s->coord->tap = tap;
    }
    if (res && !how->keep)
        res->ran = 1;
    uint32_t flags = k->flags | (recorded ? CHUNK_TAPE : 0);
    gcsh_run_result rr;
    run_compiled(s, how->targets ? how->targets : s->targets, k->name, src, len, flags,
                 !how->keep, &rr);
    if (tap)
        s->coord->tap = outer;
    if (res) {
        res->exit_code = rr.exit_code;
        res->verdict = rr.verdict;
        res->interrupted = rr.interrupted;
    }
    return rr.failed;
}

int gcsh_session_feed(gcsh_session *s, const gcsh_chunk *k, const gcsh_feed *how,
                      gcsh_line_result *res)
{
    gcsh_chunk line = *k;
    if (how->typed) /* the recorder and the runner tell a typed line by it */
        line.flags |= CHUNK_PRINT_RESULTS;
    /* a line's error is one line unless the user's own functions ran
     * (worker.c); scripts, -e and `gcsh -` keep lua's traceback */
    if (how->typed && !s->traceback_on)
        line.flags |= CHUNK_SHORT_ERRORS;
    int recorded = s->rec && !how->unrecorded;
    gcsh_line_result mine;
    if (!res && recorded)
        res = &mine;
    if (res)
        *res = (gcsh_line_result){.exit_code = -1, .verdict = -1};
    if (how->echo)
        echo_for(s, how->targets ? how->targets : s->targets, how->echo);
    if (recorded) { /* kept if the session ends during it (session_on_end) */
        s->running = &line;
        s->running_res = res;
    }
    char *owned;
    size_t len;
    int incomplete, failed = -1;
    const char *src = compile(s, &line, how, &owned, &len, &incomplete);
    if (src)
        failed = run_fed(s, &line, src, len, how, res);
    else if (res)
        res->syntax_error = !incomplete;
    free(owned);
    if (recorded) {
        s->running = NULL;
        s->running_res = NULL;
    }
    if (recorded && s->rec && !incomplete)
        s->rec_ops->ran(s, &line, res);
    if (res == &mine)
        gcsh_line_result_free(s, res);
    return incomplete ? GCSH_FEED_INCOMPLETE : failed;
}

void gcsh_line_result_free(gcsh_session *s, gcsh_line_result *res)
{
    if (res->ran)
        gcsh_tap_destroy(&res->tap, s->coord->size);
    res->ran = 0;
}

void gcsh_session_aside(gcsh_session *s, const char *src, gcsh_tap *tap)
{
    gcsh_coord *c = s->coord;
    gcsh_tap_init(tap, c->size);
    tap->quiet = 1;
    c->tap = tap;
    gcsh_run_result res;
    gcsh_coord_run(c, s->everyone, 0, "=record", src, strlen(src), &res);
    c->tap = NULL;
}

void gcsh_session_dot_refused(gcsh_session *s)
{
    s->dot_misuse++;
    s->failures++;
    s->worst = gcsh_status_worst(s->worst, GCSH_EXIT_USAGE);
    s->coord->verdict_so_far = gcsh_session_status(s); /* a deadline next keeps it */
}

void gcsh_session_dot(gcsh_session *s, const char *line)
{
    char *copy = strdup(line);
    if (!copy)
        abort(); /* out of host memory on rank 0 */
    if (s->rec && s->rec_ops->dot)
        s->rec_ops->dot(s, line);
    s->run_dot(s, copy);
    free(copy);
}
