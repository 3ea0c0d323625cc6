/* Per-rank output capture and rank-range folding.  See out.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/msg.h"
#include "wire/out.h"

#define CAPTURE_INLINE_FLUSH (256u * 1024u) /* keep worker buffers small */
/* One message carries at most this much text: rank 0 receives a whole
 * message into memory, so this bounds what one message costs it. */
#define CAPTURE_MAX_MESSAGE ((size_t)1 << 20)

void gcsh_text_append(gcsh_text *t, const char *s, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *p = realloc(t->s, cap);
        if (!p)
            abort(); /* out of host memory on rank 0: nothing sensible left */
        t->s = p;
        t->cap = cap;
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = '\0';
}

void gcsh_text_free(gcsh_text *t)
{
    free(t->s);
    *t = (gcsh_text){0};
}

/* ---- capture ------------------------------------------------------------- */

void gcsh_capture_init(gcsh_capture *c, int fd, size_t limit)
{
    *c = (gcsh_capture){.fd = fd, .limit = limit};
    pthread_mutex_init(&c->lock, NULL);
}

void gcsh_capture_destroy(gcsh_capture *c)
{
    free(c->buf);
    pthread_mutex_destroy(&c->lock);
}

/* Sends the buffer: MSG_OUT pieces, then the last piece as `type`. */
static void send_locked(gcsh_capture *c, uint32_t type, const void *head, size_t hlen)
{
    size_t off = 0;
    while (!c->broken && c->len - off > CAPTURE_MAX_MESSAGE) {
        if (gcsh_msg_send(c->fd, MSG_OUT, c->seq, c->buf + off, CAPTURE_MAX_MESSAGE, NULL, 0) != 0)
            c->broken = 1;
        off += CAPTURE_MAX_MESSAGE;
    }
    if (!c->broken &&
        gcsh_msg_send(c->fd, type, c->seq, head, hlen, c->buf + off, c->len - off) != 0)
        c->broken = 1;
    c->len = 0;
}

void gcsh_capture_write(gcsh_capture *c, const char *s, size_t n)
{
    pthread_mutex_lock(&c->lock);
    size_t room = c->kept < c->limit ? c->limit - c->kept : 0;
    size_t take = n < room ? n : room;
    c->dropped += n - take;
    c->kept += take;
    if (take) {
        if (c->len + take > c->cap) {
            size_t cap = c->cap ? c->cap : 4096;
            while (cap < c->len + take)
                cap *= 2;
            char *p = realloc(c->buf, cap);
            if (!p) {
                c->dropped += take;
                take = 0;
            } else {
                c->buf = p;
                c->cap = cap;
            }
        }
        memcpy(c->buf + c->len, s, take);
        c->len += take;
        if (take)
            c->mid_line = s[take - 1] != '\n';
    }
    if (c->running && c->len >= CAPTURE_INLINE_FLUSH)
        send_locked(c, MSG_OUT, NULL, 0);
    pthread_mutex_unlock(&c->lock);
}

void gcsh_capture_begin(gcsh_capture *c, uint32_t seq, int progress)
{
    pthread_mutex_lock(&c->lock);
    c->seq = seq;
    c->progress_on = progress;
    c->progress_dirty = 0;
    c->kept = c->dropped = 0;
    c->mid_line = 0;
    c->running = 1;
    pthread_mutex_unlock(&c->lock);
}

void gcsh_capture_flush(gcsh_capture *c)
{
    pthread_mutex_lock(&c->lock);
    if (c->running && c->len)
        send_locked(c, MSG_OUT, NULL, 0);
    if (c->running && c->progress_dirty && !c->broken) {
        if (gcsh_msg_send(c->fd, MSG_PROGRESS, c->seq, &c->progress, sizeof c->progress, NULL,
                          0) != 0)
            c->broken = 1;
        c->progress_dirty = 0;
    }
    pthread_mutex_unlock(&c->lock);
}

void gcsh_capture_progress(gcsh_capture *c, uint64_t done, uint64_t total, const char *label)
{
    pthread_mutex_lock(&c->lock);
    if (c->progress_on) {
        c->progress.done = done;
        c->progress.total = total;
        snprintf(c->progress.label, sizeof c->progress.label, "%s", label ? label : "");
        c->progress_dirty = 1;
    }
    pthread_mutex_unlock(&c->lock);
}

int gcsh_capture_send(gcsh_capture *c, uint32_t type, const void *p, size_t len)
{
    pthread_mutex_lock(&c->lock);
    if (c->len)
        send_locked(c, MSG_OUT, NULL, 0);
    if (!c->broken && gcsh_msg_send(c->fd, type, c->seq, p, len, NULL, 0) != 0)
        c->broken = 1;
    int broken = c->broken;
    pthread_mutex_unlock(&c->lock);
    return broken ? -1 : 0;
}

int gcsh_capture_done(gcsh_capture *c, uint32_t status)
{
    pthread_mutex_lock(&c->lock);
    if (c->dropped) {
        char note[160];
        int k = snprintf(note, sizeof note,
                         "%sgcsh: output capped at %zu bytes; %zu bytes dropped\n",
                         c->mid_line ? "\n" : "", c->limit, c->dropped);
        /* the note always gets through, past the cap */
        size_t need = c->len + (size_t)k;
        char *p = need > c->cap ? realloc(c->buf, need) : c->buf;
        if (p) {
            c->buf = p;
            c->cap = need > c->cap ? need : c->cap;
            memcpy(c->buf + c->len, note, (size_t)k);
            c->len += (size_t)k;
        }
    }
    c->running = 0;
    send_locked(c, MSG_DONE, &status, sizeof status);
    int broken = c->broken;
    pthread_mutex_unlock(&c->lock);
    return broken ? -1 : 0;
}

static ssize_t cookie_write(void *cookie, const char *buf, size_t size)
{
    gcsh_capture_write(cookie, buf, size);
    return (ssize_t)size;
}

FILE *gcsh_capture_file(gcsh_capture *c)
{
    cookie_io_functions_t io = {.write = cookie_write};
    FILE *f = fopencookie(c, "w", io);
    if (f)
        setvbuf(f, NULL, _IONBF, 0); /* ordering with print() must hold */
    return f;
}

/* ---- folding -------------------------------------------------------------- */

void gcsh_fold_init(gcsh_fold *f, int nranks, FILE *out, int prefix)
{
    f->nranks = nranks;
    f->pending = calloc((size_t)nranks, sizeof *f->pending);
    f->out = out;
    f->prefix = prefix;
}

void gcsh_fold_destroy(gcsh_fold *f)
{
    for (int r = 0; r < f->nranks; r++)
        gcsh_text_free(&f->pending[r]);
    free(f->pending);
    f->pending = NULL;
}

void gcsh_fold_add(gcsh_fold *f, int rank, const char *s, size_t n)
{
    gcsh_text_append(&f->pending[rank], s, n);
}

size_t gcsh_fold_bytes(const gcsh_fold *f)
{
    size_t n = 0;
    for (int r = 0; r < f->nranks; r++)
        n += f->pending[r].len;
    return n;
}

int gcsh_fold_pending(const gcsh_fold *f)
{
    for (int r = 0; r < f->nranks; r++)
        if (f->pending[r].len)
            return 1;
    return 0;
}

char *gcsh_format_ranks(const int *ranks, int n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && ranks[j + 1] == ranks[j] + 1)
            j++;
        int w;
        if (j == i)
            w = snprintf(buf + used, len - used, "%s%d", used ? "," : "", ranks[i]);
        else
            w = snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", ranks[i],
                         ranks[j]);
        if (w < 0 || (size_t)w >= len - used)
            break;
        used += (size_t)w;
        i = j + 1;
    }
    return buf;
}

/* How much of rank r's pending text a flush takes. */
static size_t flushable(const gcsh_text *t, int whole_lines)
{
    if (!whole_lines)
        return t->len;
    size_t n = t->len;
    while (n > 0 && t->s[n - 1] != '\n')
        n--;
    return n;
}

static void print_block(gcsh_fold *f, const char *label, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t end = nl ? (size_t)(nl - s) : n;
        if (f->prefix)
            fprintf(f->out, "[%s] ", label);
        fwrite(s + i, 1, end - i, f->out);
        fputc('\n', f->out);
        i = end + 1;
    }
}

static void drop_front(gcsh_text *t, size_t n)
{
    memmove(t->s, t->s + n, t->len - n);
    t->len -= n;
    if (t->s)
        t->s[t->len] = '\0';
}

void gcsh_fold_flush(gcsh_fold *f, int whole_lines)
{
    int n = f->nranks;
    size_t *take = calloc((size_t)n, sizeof *take);
    int *group = malloc((size_t)n * sizeof *group);
    char *done = calloc((size_t)n, 1);
    char label[4096];
    for (int r = 0; r < n; r++)
        take[r] = flushable(&f->pending[r], whole_lines);
    for (int r = 0; r < n; r++) {
        if (done[r] || take[r] == 0)
            continue;
        int g = 0;
        for (int q = r; q < n; q++) {
            if (!done[q] && take[q] == take[r] &&
                memcmp(f->pending[q].s, f->pending[r].s, take[r]) == 0) {
                group[g++] = q;
                done[q] = 1;
            }
        }
        gcsh_format_ranks(group, g, label, sizeof label);
        print_block(f, label, f->pending[r].s, take[r]);
    }
    for (int r = 0; r < n; r++)
        if (take[r])
            drop_front(&f->pending[r], take[r]);
    fflush(f->out);
    free(take);
    free(group);
    free(done);
}

void gcsh_fold_texts(gcsh_text *out, const int *ranks, int n, const char *const *texts,
                     const char *sep)
{
    char *done = calloc((size_t)n, 1);
    int *group = malloc((size_t)n * sizeof *group);
    char label[1024];
    int first = 1;
    for (int i = 0; i < n; i++) {
        if (done[i])
            continue;
        int g = 0;
        for (int j = i; j < n; j++)
            if (!done[j] && strcmp(texts[j], texts[i]) == 0) {
                group[g++] = ranks[j];
                done[j] = 1;
            }
        gcsh_format_ranks(group, g, label, sizeof label);
        if (!first)
            gcsh_text_append(out, sep, strlen(sep));
        first = 0;
        gcsh_text_append(out, "[", 1);
        gcsh_text_append(out, label, strlen(label));
        gcsh_text_append(out, "] ", 2);
        gcsh_text_append(out, texts[i], strlen(texts[i]));
    }
    free(done);
    free(group);
}
