/* The one-line progress indicator.  See progress.h. */
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "shell/progress.h"

#define SHOW_AFTER_S 0.5   /* short commands never flash a line */
#define REDRAW_S 0.1       /* at most this often after a change */
#define TICK_S 1.0         /* the elapsed time alone moves this often */
#define BAR 20

void gcsh_progress_init(gcsh_progress *p, FILE *out, int nranks)
{
    const char *term = getenv("TERM"), *no_color = getenv("NO_COLOR");
    *p = (gcsh_progress){.out = out, .nranks = nranks,
                         .plain = (term && strcmp(term, "dumb") == 0) || (no_color && *no_color)};
    p->tty = out && isatty(fileno(out)); /* the caller knows better under mpirun */
    p->by_rank = calloc((size_t)nranks, sizeof *p->by_rank);
}

void gcsh_progress_destroy(gcsh_progress *p)
{
    free(p->by_rank);
    p->by_rank = NULL;
}

void gcsh_progress_begin(gcsh_progress *p, double now)
{
    memset(p->by_rank, 0, (size_t)p->nranks * sizeof *p->by_rank);
    p->waiting[0] = '\0';
    p->start = now;
    p->drawn = 0;
    p->dirty = 0;
}

void gcsh_progress_hide(gcsh_progress *p)
{
    if (!p->shown)
        return;
    if (p->plain)
        fprintf(p->out, "\r%*s\r", (int)p->len, "");
    else
        fputs("\r\033[K", p->out);
    fflush(p->out);
    p->shown = 0;
    p->len = 0;
    p->dirty = 1;
}

void gcsh_progress_end(gcsh_progress *p)
{
    gcsh_progress_hide(p);
    gcsh_progress_begin(p, 0);
}

void gcsh_progress_report(gcsh_progress *p, int rank, const gcsh_progress_msg *m)
{
    if (rank < 0 || rank >= p->nranks)
        return;
    p->by_rank[rank] = *m;
    p->by_rank[rank].label[sizeof m->label - 1] = '\0';
    p->dirty = 1;
}

void gcsh_progress_waiting(gcsh_progress *p, const char *text)
{
    text = text ? text : "";
    if (strcmp(p->waiting, text) == 0)
        return;
    snprintf(p->waiting, sizeof p->waiting, "%s", text);
    p->dirty = 1;
}

/* The slowest rank's unfinished report, or NULL. */
static const gcsh_progress_msg *slowest(const gcsh_progress *p)
{
    const gcsh_progress_msg *s = NULL;
    for (int r = 0; r < p->nranks; r++) {
        const gcsh_progress_msg *m = &p->by_rank[r];
        if (m->total == 0 || m->done >= m->total)
            continue;
        if (!s || (double)m->done / (double)m->total < (double)s->done / (double)s->total)
            s = m;
    }
    return s;
}

static int wanted(const gcsh_progress *p)
{
    return slowest(p) || p->waiting[0];
}

static size_t columns(FILE *out)
{
    struct winsize ws;
    if (ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20)
        return ws.ws_col;
    return 80;
}

void gcsh_progress_draw(gcsh_progress *p, double now)
{
    if (!p->tty || now - p->start < SHOW_AFTER_S)
        return;
    if (!wanted(p)) {
        gcsh_progress_hide(p);
        p->dirty = 0;
        return;
    }
    if (now - p->drawn < (p->dirty || !p->shown ? REDRAW_S : TICK_S))
        return;
    char line[256];
    const gcsh_progress_msg *m = slowest(p);
    if (m) {
        char bar[BAR + 1];
        int fill = (int)((double)m->done / (double)m->total * BAR);
        for (int i = 0; i < BAR; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[BAR] = '\0';
        snprintf(line, sizeof line, "%s%s[%s] %llu/%llu  %.1f s", m->label, m->label[0] ? " " : "",
                 bar, (unsigned long long)m->done, (unsigned long long)m->total, now - p->start);
    } else {
        snprintf(line, sizeof line, "%s  %.1f s", p->waiting, now - p->start);
    }
    size_t width = columns(p->out) - 1; /* never wrap: \r must reach the start */
    if (strlen(line) > width)
        line[width] = '\0';
    size_t len = strlen(line);
    if (p->plain) /* spaces over what the last line left */
        fprintf(p->out, "\r%s%*s", line, p->len > len ? (int)(p->len - len) : 0, "");
    else
        fprintf(p->out, "\r%s\033[K", line);
    fflush(p->out);
    p->len = len > p->len ? len : p->len;
    p->shown = 1;
    p->drawn = now;
    p->dirty = 0;
}

double gcsh_progress_due(const gcsh_progress *p)
{
    if (!p->tty || (!wanted(p) && !p->shown))
        return 0;
    double first = p->start + SHOW_AFTER_S;
    double next = p->drawn + (p->dirty || !p->shown ? REDRAW_S : TICK_S);
    return next > first ? next : first;
}
