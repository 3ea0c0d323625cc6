/* Rank 0's coordinator.  See coord.h. */
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coord.h"
#include "msg.h"
#include "sig.h"

/* A rank's streamed text is held this long before printing, so that the same
 * line from every rank arrives in time to be folded into one. */
#define FOLD_WINDOW_S 0.25

enum { IDLE = 0, RUNNING, DONE };

typedef struct run_state {
    char *state;      /* per rank: IDLE, RUNNING, DONE */
    uint32_t *status; /* per rank: CHUNK_* once DONE */
    int running;
    double start, first_pending, next_report;
} run_state;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void gcsh_coord_init(gcsh_coord *c, gcsh_ctx *ctx, gcsh_link *link, int sigfd, FILE *out)
{
    *c = (gcsh_coord){.ctx = ctx, .link = link, .size = ctx->size, .sigfd = sigfd, .out = out};
    c->lost = calloc((size_t)ctx->size, 1);
    gcsh_fold_init(&c->fold, ctx->size, out, ctx->size > 1);
}

void gcsh_coord_destroy(gcsh_coord *c)
{
    gcsh_fold_destroy(&c->fold);
    free(c->lost);
}

void gcsh_coord_say(gcsh_coord *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(c->out, fmt, ap);
    va_end(ap);
    fputc('\n', c->out);
    fflush(c->out);
}

/* Formats the ranks whose state matches `want` as "0-2,5". */
static char *ranks_where(const gcsh_coord *c, const run_state *rs, int want, char *buf,
                         size_t len)
{
    int *list = malloc((size_t)c->size * sizeof *list), n = 0;
    for (int r = 0; r < c->size; r++)
        if (rs->state[r] == want)
            list[n++] = r;
    gcsh_format_ranks(list, n, buf, len);
    free(list);
    return buf;
}

static void mark_lost(gcsh_coord *c, run_state *rs, int r)
{
    c->lost[r] = 1;
    if (rs->state[r] == RUNNING)
        rs->running--;
    rs->state[r] = DONE;
    rs->status[r] = CHUNK_ERROR;
    gcsh_fold_flush(&c->fold, 0);
    gcsh_coord_say(c, "gcsh: rank %d is gone (its connection to rank 0 closed)", r);
}

static void send_interrupts(gcsh_coord *c, run_state *rs)
{
    char buf[1024];
    for (int r = 0; r < c->size; r++)
        if (rs->state[r] == RUNNING &&
            gcsh_msg_send(c->link->peer_ctl[r], MSG_INTERRUPT, c->seq, NULL, 0, NULL, 0) != 0)
            mark_lost(c, rs, r);
    gcsh_fold_flush(&c->fold, 0);
    gcsh_coord_say(c, "\ngcsh: interrupting [%s]", ranks_where(c, rs, RUNNING, buf, sizeof buf));
}

static void report_progress(gcsh_coord *c, run_state *rs, double now)
{
    char done[1024], running[1024];
    gcsh_fold_flush(&c->fold, 0);
    ranks_where(c, rs, DONE, done, sizeof done);
    ranks_where(c, rs, RUNNING, running, sizeof running);
    gcsh_coord_say(c, "gcsh: %.1f s: done [%s], still running [%s]; waiting (Ctrl-C interrupts)",
                   now - rs->start, done, running);
}

static void on_message(gcsh_coord *c, run_state *rs, int r, const gcsh_msg *m)
{
    if (m->h.seq != c->seq)
        return; /* late output of an earlier chunk cannot happen; ignore noise */
    if (m->h.type == MSG_OUT) {
        gcsh_fold_add(&c->fold, r, m->data, m->h.len);
        if (rs->first_pending == 0)
            rs->first_pending = now_seconds();
    } else if (m->h.type == MSG_DONE && m->h.len >= sizeof(uint32_t)) {
        memcpy(&rs->status[r], m->data, sizeof(uint32_t));
        gcsh_fold_add(&c->fold, r, m->data + sizeof(uint32_t), m->h.len - sizeof(uint32_t));
        rs->state[r] = DONE;
        rs->running--;
    }
}

static int poll_timeout_ms(const gcsh_coord *c, const run_state *rs, double now)
{
    double wait = 3600;
    if (rs->first_pending > 0)
        wait = rs->first_pending + FOLD_WINDOW_S - now;
    if (c->timeout > 0 && rs->next_report - now < wait)
        wait = rs->next_report - now;
    return wait <= 0 ? 0 : (int)(wait * 1000) + 1;
}

static void wait_for_ranks(gcsh_coord *c, run_state *rs)
{
    struct pollfd *p = malloc((size_t)(c->size + 1) * sizeof *p);
    int *who = malloc((size_t)(c->size + 1) * sizeof *who);
    gcsh_msg m = {0};
    double spin_s = gcsh_spin_us() * 1e-6;
    while (rs->running > 0) {
        int n = 0;
        p[n++] = (struct pollfd){.fd = c->sigfd, .events = POLLIN};
        for (int r = 0; r < c->size; r++)
            if (rs->state[r] == RUNNING) {
                who[n] = r;
                p[n++] = (struct pollfd){.fd = c->link->peer_cmd[r], .events = POLLIN};
            }
        /* spin briefly first: short chunks finish within microseconds */
        int ready = poll(p, (nfds_t)n, 0);
        while (ready == 0 && now_seconds() - rs->start < spin_s) {
            sched_yield();
            ready = poll(p, (nfds_t)n, 0);
        }
        if (ready == 0)
            poll(p, (nfds_t)n, poll_timeout_ms(c, rs, now_seconds()));
        if ((p[0].revents & POLLIN) && (gcsh_sig_drain(c->sigfd) & 1))
            send_interrupts(c, rs);
        for (int i = 1; i < n; i++) {
            if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            if (gcsh_msg_recv(p[i].fd, &m) == 0)
                on_message(c, rs, who[i], &m);
            else
                mark_lost(c, rs, who[i]);
        }
        double now = now_seconds();
        if (rs->first_pending > 0 && now >= rs->first_pending + FOLD_WINDOW_S) {
            gcsh_fold_flush(&c->fold, 1);
            rs->first_pending = gcsh_fold_pending(&c->fold) ? now : 0;
        }
        if (c->timeout > 0 && now >= rs->next_report) {
            report_progress(c, rs, now);
            rs->next_report = now + c->timeout;
        }
    }
    gcsh_msg_free(&m);
    free(p);
    free(who);
}

static void send_chunk(gcsh_coord *c, run_state *rs, const char *targets, uint32_t flags,
                       const char *name, const char *src, size_t len)
{
    size_t namelen = strlen(name);
    size_t hlen = 2 * sizeof(uint32_t) + namelen;
    char *head = malloc(hlen);
    uint32_t hdr[2] = {flags, (uint32_t)namelen};
    memcpy(head, hdr, sizeof hdr);
    memcpy(head + sizeof hdr, name, namelen);
    for (int r = 0; r < c->size; r++) {
        if (!targets[r] || c->lost[r])
            continue;
        if (gcsh_msg_send(c->link->peer_cmd[r], MSG_CHUNK, c->seq, head, hlen, src, len) != 0) {
            mark_lost(c, rs, r);
            continue;
        }
        rs->state[r] = RUNNING;
        rs->running++;
    }
    free(head);
}

void gcsh_coord_run(gcsh_coord *c, const char *targets, uint32_t flags, const char *name,
                    const char *src, size_t len, gcsh_run_result *res)
{
    run_state rs = {0};
    rs.state = calloc((size_t)c->size, 1);
    rs.status = calloc((size_t)c->size, sizeof *rs.status);
    rs.start = now_seconds();
    rs.next_report = rs.start + c->timeout;
    c->seq++;
    send_chunk(c, &rs, targets, flags, name, src, len);
    *res = (gcsh_run_result){.ran = rs.running};
    wait_for_ranks(c, &rs);
    gcsh_fold_flush(&c->fold, 0);
    for (int r = 0; r < c->size; r++) {
        if (rs.state[r] != DONE)
            continue;
        res->failed += rs.status[r] != CHUNK_OK;
        res->interrupted += rs.status[r] == CHUNK_INTERRUPTED;
        res->lost += c->lost[r] && targets[r];
    }
    if (res->interrupted) {
        char buf[1024];
        int *list = malloc((size_t)c->size * sizeof *list), n = 0;
        for (int r = 0; r < c->size; r++)
            if (rs.state[r] == DONE && rs.status[r] == CHUNK_INTERRUPTED)
                list[n++] = r;
        gcsh_coord_say(c, "gcsh: interrupted [%s]", gcsh_format_ranks(list, n, buf, sizeof buf));
        free(list);
    }
    res->seconds = now_seconds() - rs.start;
    free(rs.state);
    free(rs.status);
}

void gcsh_coord_quit(gcsh_coord *c, int code)
{
    for (int r = 0; r < c->size; r++) {
        if (c->lost[r])
            continue;
        gcsh_msg_send(c->link->peer_cmd[r], MSG_QUIT, (uint32_t)code, NULL, 0, NULL, 0);
        gcsh_msg_send(c->link->peer_ctl[r], MSG_QUIT, 0, NULL, 0, NULL, 0);
    }
}
