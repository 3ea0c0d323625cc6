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

/* ---- segments -------------------------------------------------------------- */

int gcsh_segment_note(gcsh_segment **seg, size_t *nseg, size_t *capseg, size_t at, int stream)
{
    if (*nseg && (*seg)[*nseg - 1].stream == stream)
        return 0;
    if (*nseg == *capseg) {
        size_t cap = *capseg ? 2 * *capseg : 4;
        gcsh_segment *p = realloc(*seg, cap * sizeof *p);
        if (!p)
            return -1;
        *seg = p;
        *capseg = cap;
    }
    (*seg)[(*nseg)++] = (gcsh_segment){at, stream};
    return 0;
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
    free(c->seg);
    pthread_mutex_destroy(&c->lock);
}

/* Sends bytes [from, to) of the buffer as messages of their stream, at most
 * CAPTURE_MAX_MESSAGE bytes each. */
static void send_run(gcsh_capture *c, int stream, size_t from, size_t to)
{
    uint32_t type = stream == GCSH_STDERR ? MSG_ERR : MSG_OUT;
    while (!c->broken && from < to) {
        size_t n = to - from < CAPTURE_MAX_MESSAGE ? to - from : CAPTURE_MAX_MESSAGE;
        if (gcsh_msg_send(c->fd, type, c->seq, c->buf + from, n, NULL, 0) != 0)
            c->broken = 1;
        from += n;
    }
}

/* Sends the buffer, run by run in order; with MSG_DONE (head: the status)
 * a last stdout run of up to CAPTURE_MAX_MESSAGE bytes travels in the DONE
 * itself, as most commands' only output does. */
static void send_locked(gcsh_capture *c, uint32_t type, const void *head, size_t hlen)
{
    size_t tail = c->len; /* where the DONE's own text starts */
    if (type == MSG_DONE && c->nseg && c->seg[c->nseg - 1].stream == GCSH_STDOUT) {
        tail = c->seg[c->nseg - 1].at;
        if (c->len - tail > CAPTURE_MAX_MESSAGE)
            tail = c->len - CAPTURE_MAX_MESSAGE;
    }
    for (size_t i = 0; i < c->nseg; i++) {
        size_t from = c->seg[i].at, to = i + 1 < c->nseg ? c->seg[i + 1].at : c->len;
        send_run(c, c->seg[i].stream, from, to < tail ? to : tail);
    }
    if (type == MSG_DONE && !c->broken &&
        gcsh_msg_send(c->fd, MSG_DONE, c->seq, head, hlen, c->buf + tail, c->len - tail) != 0)
        c->broken = 1;
    c->len = 0;
    c->nseg = 0;
}

/* Appends to the buffer (the caller holds the lock and minds the cap);
 * returns the bytes kept. */
static size_t append_locked(gcsh_capture *c, int stream, const char *s, size_t n)
{
    if (c->len + n > c->cap) {
        size_t cap = c->cap ? c->cap : 4096;
        while (cap < c->len + n)
            cap *= 2;
        char *p = realloc(c->buf, cap);
        if (!p)
            return 0;
        c->buf = p;
        c->cap = cap;
    }
    if (gcsh_segment_note(&c->seg, &c->nseg, &c->capseg, c->len, stream) != 0)
        return 0;
    memcpy(c->buf + c->len, s, n);
    c->len += n;
    return n;
}

void gcsh_capture_write(gcsh_capture *c, int stream, const char *s, size_t n)
{
    pthread_mutex_lock(&c->lock);
    size_t room = c->kept < c->limit ? c->limit - c->kept : 0;
    size_t take = n < room ? n : room;
    size_t kept = take ? append_locked(c, stream, s, take) : 0;
    c->dropped += n - kept;
    c->kept += kept;
    if (kept)
        c->mid_line = s[kept - 1] != '\n';
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
    if (c->dropped) { /* the note always gets through, past the cap */
        char note[160];
        int mid = c->mid_line && c->nseg && c->seg[c->nseg - 1].stream == GCSH_STDERR;
        int k = snprintf(note, sizeof note, "%sgcsh: output capped at %zu bytes; %zu bytes dropped\n",
                         mid ? "\n" : "", c->limit, c->dropped);
        append_locked(c, GCSH_STDERR, note, (size_t)k);
    }
    c->running = 0;
    send_locked(c, MSG_DONE, &status, sizeof status);
    int broken = c->broken;
    pthread_mutex_unlock(&c->lock);
    return broken ? -1 : 0;
}

/* A FILE* of one stream: fopencookie passes the cookie only, so each stream
 * has its own. */
typedef struct capture_stream {
    gcsh_capture *c;
    int stream;
} capture_stream;

static ssize_t cookie_write(void *cookie, const char *buf, size_t size)
{
    capture_stream *cs = cookie;
    gcsh_capture_write(cs->c, cs->stream, buf, size);
    return (ssize_t)size;
}

static int cookie_close(void *cookie)
{
    free(cookie);
    return 0;
}

FILE *gcsh_capture_file(gcsh_capture *c, int stream)
{
    capture_stream *cs = malloc(sizeof *cs);
    if (!cs)
        return NULL;
    *cs = (capture_stream){c, stream};
    cookie_io_functions_t io = {.write = cookie_write, .close = cookie_close};
    FILE *f = fopencookie(cs, "w", io);
    if (!f) {
        free(cs);
        return NULL;
    }
    setvbuf(f, NULL, _IONBF, 0); /* ordering with print() must hold */
    return f;
}

/* ---- folded text (rank 0; the folding itself is fold.c) -------------------- */

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

/* ---- text broken to fit a width ------------------------------------------------ */

/* How many bytes of s (longer than room) the line takes: at_spaces, up to
 * the last "; " that fits, else the first ": ", else the last space
 * (trailing spaces left out); else up to and
 * including the last '/' that fits, else room; never fewer than keep + 1
 * (the line's prefix stays whole). */
static size_t line_cut(const char *s, size_t room, size_t keep, int at_spaces)
{
    if (at_spaces) {
        /* where the words allow: after the last "; " (before what to do),
         * else after the first ": " (where a wait's words begin), else at
         * the last space: breaks that do not move with the numbers before
         * them, so a report reads the same from run to run */
        size_t semi = 0, colon = 0, space = 0;
        for (size_t i = keep + 1; i <= room; i++) {
            if (s[i] != ' ')
                continue;
            if (s[i - 1] == ';')
                semi = i;
            else if (s[i - 1] == ':' && !colon)
                colon = i;
            space = i;
        }
        size_t i = semi ? semi : colon ? colon : space;
        if (i) {
            while (i > keep + 1 && s[i - 1] == ' ')
                i--;
            return i;
        }
    }
    for (size_t i = room; i > keep; i--)
        if (s[i - 1] == '/')
            return i;
    return room > keep ? room : keep + 1;
}

static void wrap_line(gcsh_text *out, const char *s, size_t n, const char *indent, size_t width,
                      int at_spaces)
{
    size_t ind = strlen(indent);
    size_t room = width, keep = ind;
    for (;;) {
        if (n <= room) {
            gcsh_text_append(out, s, n);
            return;
        }
        size_t cut = line_cut(s, room, keep, at_spaces);
        gcsh_text_append(out, s, cut);
        s += cut;
        n -= cut;
        while (at_spaces && n && *s == ' ') { /* the space where it broke goes */
            s++;
            n--;
        }
        if (!n)
            return;
        gcsh_text_append(out, "\n", 1);
        gcsh_text_append(out, indent, ind);
        room = width > ind ? width - ind : 1;
        keep = 0;
    }
}

static void wrap(gcsh_text *out, const char *text, const char *indent, size_t width,
                 int at_spaces)
{
    for (;;) {
        const char *nl = strchr(text, '\n');
        size_t n = nl ? (size_t)(nl - text) : strlen(text);
        wrap_line(out, text, n, indent, width, at_spaces);
        if (!nl)
            return;
        gcsh_text_append(out, "\n", 1);
        text = nl + 1;
    }
}

void gcsh_text_wrap(gcsh_text *out, const char *text, const char *indent, size_t width)
{
    wrap(out, text, indent, width, 1);
}

void gcsh_text_wrap_path(gcsh_text *out, const char *text, const char *indent, size_t width)
{
    wrap(out, text, indent, width, 0);
}
