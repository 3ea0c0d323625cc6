/* The rank's whereabouts (where.h): the operation it is in, published
 * by the worker thread, and the Lua line it runs, sampled by a one-shot
 * hook; read by the watcher thread when rank 0 asks (MSG_WHERE) and by
 * the fault report.  The state is ctx->check's (check_state.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "wire/check_state.h"
#include "wire/where.h"

#define SAMPLE_WAIT_MS 100 /* how long a WHERE waits for the Lua line */

static void publish_op(gcsh_check *k, const char *text, int waits)
{
    pthread_mutex_lock(&k->lock);
    snprintf(k->op, sizeof k->op, "%s", text);
    snprintf(k->last_op, sizeof k->last_op, "%.*s", (int)sizeof k->last_op - 1, text);
    k->op_lazy = k->last_lazy = 0;
    k->since = now_seconds();
    k->in_op = 1;
    k->op_waits = waits;
    k->op_on_comm = 0;
    k->op_unchecked = 0;
    pthread_mutex_unlock(&k->lock);
}

void gcsh_where_publish_fp(gcsh_check *k, const gcsh_fingerprint *fp)
{
    pthread_mutex_lock(&k->lock);
    gcsh_where_publish_fp_locked(k, fp);
    pthread_mutex_unlock(&k->lock);
}

void gcsh_where_publish_fp_locked(gcsh_check *k, const gcsh_fingerprint *fp)
{
    k->op_fp = k->last_fp = *fp;
    k->op_lazy = k->last_lazy = 1;
    k->since = now_seconds();
    k->in_op = 1;
    k->op_waits = 1;
    k->op_on_comm = 1;
    k->op_comm = fp->comm;
    k->op_unchecked = !k->enabled;
}

const char *gcsh_where_op_text(gcsh_check *k)
{
    if (k->op_lazy) {
        gcsh_fp_describe(&k->op_fp, k->op, sizeof k->op);
        k->op_lazy = 0;
    }
    return k->op;
}

const char *gcsh_where_last_op(gcsh_check *k)
{
    if (!k)
        return "none";
    pthread_mutex_lock(&k->lock);
    if (k->last_lazy) {
        char text[128];
        gcsh_fp_describe(&k->last_fp, text, sizeof text);
        snprintf(k->last_op, sizeof k->last_op, "%.*s", (int)sizeof k->last_op - 1, text);
        k->last_lazy = 0;
    }
    pthread_mutex_unlock(&k->lock);
    return k->last_op[0] ? k->last_op : "none";
}

void gcsh_where_unpublish(gcsh_check *k)
{
    pthread_mutex_lock(&k->lock);
    k->in_op = 0;
    pthread_mutex_unlock(&k->lock);
}

static void where_begin(gcsh_ctx *ctx, int waits, const char *fmt, va_list ap)
{
    if (!ctx->check)
        return;
    char text[128];
    vsnprintf(text, sizeof text, fmt, ap);
    publish_op(ctx->check, text, waits);
}

void gcsh_where_begin(gcsh_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    where_begin(ctx, 1, fmt, ap);
    va_end(ap);
}

void gcsh_where_begin_alone(gcsh_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    where_begin(ctx, 0, fmt, ap);
    va_end(ap);
}

void gcsh_where_end(gcsh_ctx *ctx)
{
    if (ctx->check)
        gcsh_where_unpublish(ctx->check);
}

/* The line of the chunk that is running, the innermost one on the stack
 * (0: the chunk is not on it). */
static int chunk_line_on_stack(lua_State *L, const gcsh_check *k)
{
    lua_Debug d;
    for (int level = 0; level < 64 && lua_getstack(L, level, &d); level++)
        if (lua_getinfo(L, "Sl", &d) && strcmp(d.short_src, k->chunk) == 0 && d.currentline > 0)
            return d.currentline;
    return 0;
}

/* The shell's own Lua that a chunk calls through (prelude.lua's wrappers of
 * os.clock and the like): a sample there names the chunk's line instead. */
static int is_shell_plumbing(const char *src)
{
    size_t n = strlen(src), m = strlen("gcsh/prelude.lua");
    return n >= m && strcmp(src + n - m, "gcsh/prelude.lua") == 0;
}

/* The line sample's part of the rank's hook (core/luahook.h), armed by the
 * watcher: records the running line, once.  An interrupt's part armed
 * meanwhile stays armed and runs after it. */
static void sample_hook(lua_State *L, lua_Debug *ar)
{
    gcsh_ctx *ctx = gcsh_ctx_of(L);
    gcsh_check *k = ctx->check;
    gcsh_luahook_disarm(L, 1u << GCSH_LUAHOOK_SAMPLE);
    if (!k || !lua_getinfo(L, "Sl", ar))
        return;
    int chunk_line = chunk_line_on_stack(L, k);
    pthread_mutex_lock(&k->lock);
    if (strcmp(ar->short_src, k->chunk) == 0 && ar->currentline > 0)
        snprintf(k->line, sizeof k->line, "running line %d of the chunk", ar->currentline);
    else if (chunk_line > 0 && is_shell_plumbing(ar->short_src))
        snprintf(k->line, sizeof k->line, "running line %d of the chunk", chunk_line);
    else if (chunk_line > 0 && ar->currentline > 0)
        snprintf(k->line, sizeof k->line, "running line %d of the chunk (in %.60s:%d)",
                 chunk_line, ar->short_src, ar->currentline);
    else if (ar->currentline > 0)
        snprintf(k->line, sizeof k->line, "running %s:%d", ar->short_src, ar->currentline);
    else
        snprintf(k->line, sizeof k->line, "running %s", ar->short_src);
    k->sampled = 1;
    pthread_cond_signal(&k->sampled_cond);
    pthread_mutex_unlock(&k->lock);
}

/* Arms the line sample unless the worker is inside an operation (which says
 * more than a line).  The caller holds the worker's run lock and knows a
 * chunk is running. */
int gcsh_where_sample_arm(gcsh_ctx *ctx)
{
    gcsh_check *k = ctx->check;
    if (!k)
        return 0;
    pthread_mutex_lock(&k->lock);
    int arm = !k->in_op && !atomic_load(&ctx->interrupt);
    if (arm) {
        k->sampled = 0;
        gcsh_luahook_arm(ctx->L, GCSH_LUAHOOK_SAMPLE, sample_hook, LUA_MASKCOUNT);
    }
    pthread_mutex_unlock(&k->lock);
    return arm;
}

static void deadline_in_ms(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_nsec += (long)ms * 1000000L;
    ts->tv_sec += ts->tv_nsec / 1000000000L;
    ts->tv_nsec %= 1000000000L;
}

int gcsh_where_report(gcsh_ctx *ctx, int running, int armed, char *buf, size_t len)
{
    gcsh_check *k = ctx->check;
    if (!k || !running) {
        snprintf(buf, len, "idle");
        return 0;
    }
    pthread_mutex_lock(&k->lock);
    if (armed) {
        struct timespec until;
        deadline_in_ms(&until, SAMPLE_WAIT_MS);
        while (!k->sampled && !k->in_op &&
               pthread_cond_timedwait(&k->sampled_cond, &k->lock, &until) == 0) {
        }
    }
    if (k->in_op) {
        char note[128];
        int noted = gcsh_wait_note_text(&ctx->wait_note, note, sizeof note);
        snprintf(buf, len, "in %s for %.1f s%s%s", gcsh_where_op_text(k), now_seconds() - k->since,
                 noted ? ": " : "", note);
    } else if (armed && k->sampled)
        snprintf(buf, len, "%s", k->line);
    else
        snprintf(buf, len, "running C code (no Lua line reached in %d ms)", SAMPLE_WAIT_MS);
    int waits = k->in_op && k->op_waits;
    pthread_mutex_unlock(&k->lock);
    return waits;
}

const char *gcsh_comm_name(const gcsh_comm_check *cc, char *buf, size_t len)
{
    if (cc->id < (1ULL << 63))
        snprintf(buf, len, "world");
    else
        snprintf(buf, len, "comm %06llx", (unsigned long long)(cc->id & 0xffffff));
    return buf;
}

/* "allreduce #5", "barrier #2 on comm 1a2b3c", "send to 1" (the
 * fingerprint names its communicator) */
void gcsh_fp_describe(const gcsh_fingerprint *fp, char *buf, size_t len)
{
    char name[32];
    gcsh_comm_check named = {.id = fp->comm};
    gcsh_comm_name(&named, name, sizeof name);
    int world = strcmp(name, "world") == 0;
    if (fp->kind == GCSH_FP_COLLECTIVE)
        snprintf(buf, len, "%s #%llu%s%s", fp->op, (unsigned long long)fp->seq,
                 world ? "" : " on ", world ? "" : name);
    else
        snprintf(buf, len, "%s %s %d%s%s", fp->op, fp->kind == GCSH_FP_SEND ? "to" : "from",
                 fp->root, world ? "" : " on ", world ? "" : name);
}

