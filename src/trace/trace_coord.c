/* Rank 0's side of tracing.  See trace_coord.h.
 *
 * Starting and stopping happen between commands, on the command channel,
 * which every worker reads in order; copies during a command come from the
 * ranks' watcher threads (the worker may be stuck in a collective), asked
 * on the control channel. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "wire/msg.h"
#include "trace/trace_coord.h"
#include "trace/trace_json.h"

#define ANSWER_WAIT_S 30.0   /* starting (a clock ping-pong) and stopping */
#define SNAPSHOT_WAIT_S 2.0  /* a copy from a rank that may be stuck */

struct gcsh_tracer {
    char *path;
    int size;
    void **blob;  /* each rank's latest spans */
    size_t *len;
    char *asked;  /* a copy was asked of this rank during the command, not yet come */
    int nasked;
};

static void keep(gcsh_tracer *t, int r, const char *data, size_t len)
{
    if (len == 0)
        return; /* that rank is not tracing */
    void *copy = malloc(len);
    if (!copy)
        return;
    memcpy(copy, data, len);
    free(t->blob[r]);
    t->blob[r] = copy;
    t->len[r] = len;
}

static void free_tracer(gcsh_tracer *t)
{
    for (int r = 0; r < t->size; r++)
        free(t->blob[r]);
    free(t->blob);
    free(t->len);
    free(t->asked);
    free(t->path);
    free(t);
}

static long write_file(gcsh_coord *c, const char *why)
{
    gcsh_tracer *t = c->tracer;
    char err[PATH_MAX + 200];
    long spans = gcsh_trace_write(t->path, t->size, t->blob, t->len, why, err, sizeof err);
    if (spans < 0)
        gcsh_coord_say(c, "gcsh: trace: %s", err);
    return spans;
}

/* Reads each live rank's command channel until its message of type want
 * (others are dropped: between commands none come), for at most wait
 * seconds.  answered[r] says who did; data goes to keep(). */
static void collect(gcsh_coord *c, uint32_t want, double wait, char *answered,
                    uint32_t *ok)
{
    int n = c->size, left = 0;
    for (int r = 0; r < n; r++)
        left += !c->lost[r] && !answered[r];
    struct pollfd *p = malloc((size_t)n * sizeof *p);
    int *who = malloc((size_t)n * sizeof *who);
    gcsh_msg m = {0};
    double until = gcsh_now_seconds() + wait;
    while (left > 0) {
        double now = gcsh_now_seconds();
        if (now >= until)
            break;
        int k = 0;
        for (int r = 0; r < n; r++)
            if (!c->lost[r] && !answered[r]) {
                who[k] = r;
                p[k++] = (struct pollfd){.fd = c->link->peer_cmd[r], .events = POLLIN};
            }
        if (poll(p, (nfds_t)k, (int)((until - now) * 1000) + 1) <= 0)
            continue;
        for (int i = 0; i < k; i++) {
            if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            int r = who[i];
            if (gcsh_msg_recv(p[i].fd, &m) != 0 || m.h.type == want) {
                answered[r] = 1;
                left--;
            }
            if (m.h.type == want && want == MSG_TRACE_DATA)
                keep(c->tracer, r, m.data, m.h.len);
            if (m.h.type == want && want == MSG_TRACE_ACK && ok && m.h.len >= sizeof *ok)
                memcpy(&ok[r], m.data, sizeof *ok);
            if (m.h.type == want && want == MSG_TRACE_ACK && ok && !ok[r] &&
                m.h.len > sizeof *ok)
                gcsh_coord_say(c, "gcsh: .trace: rank %d: %.*s", r, (int)(m.h.len - sizeof *ok - 1),
                               m.data + sizeof *ok);
            m.h.type = 0;
        }
    }
    gcsh_msg_free(&m);
    free(p);
    free(who);
}

/* Sends type on every live rank's command (or control) channel. */
static void tell_all(gcsh_coord *c, uint32_t type, int control)
{
    for (int r = 0; r < c->size; r++)
        if (!c->lost[r])
            gcsh_msg_send(control ? c->link->peer_ctl[r] : c->link->peer_cmd[r], type, c->seq,
                          NULL, 0, NULL, 0);
}

/* Stops every rank and writes what they send; returns the spans written. */
static long stop_all(gcsh_coord *c)
{
    char *answered = calloc((size_t)c->size, 1);
    tell_all(c, MSG_TRACE_OFF, 0);
    collect(c, MSG_TRACE_DATA, ANSWER_WAIT_S, answered, NULL);
    free(answered);
    return write_file(c, NULL);
}

int gcsh_tracer_start(gcsh_coord *c, const char *path)
{
    if (c->tracer)
        gcsh_tracer_stop(c);
    gcsh_tracer *t = calloc(1, sizeof *t);
    t->path = strdup(path);
    t->size = c->size;
    t->blob = calloc((size_t)c->size, sizeof *t->blob);
    t->len = calloc((size_t)c->size, sizeof *t->len);
    t->asked = calloc((size_t)c->size, 1);
    char err[PATH_MAX + 200];
    if (gcsh_trace_write(path, t->size, t->blob, t->len, "tracing: nothing written yet", err,
                         sizeof err) < 0) {
        gcsh_coord_say(c, "gcsh: .trace: %s", err);
        free_tracer(t);
        return GCSH_EXIT_USAGE;
    }
    c->tracer = t;
    char *answered = calloc((size_t)c->size, 1);
    uint32_t *ok = calloc((size_t)c->size, sizeof *ok);
    tell_all(c, MSG_TRACE_ON, 0);
    collect(c, MSG_TRACE_ACK, ANSWER_WAIT_S, answered, ok);
    int all = 1;
    for (int r = 0; r < c->size; r++)
        all &= c->lost[r] || ok[r];
    free(answered);
    free(ok);
    if (!all) {
        gcsh_coord_say(c, "gcsh: .trace: tracing did not start on every rank; it is off");
        stop_all(c);
        free_tracer(t);
        c->tracer = NULL;
        return GCSH_EXIT_SKIP;
    }
    gcsh_coord_say(c, "tracing to %s", path);
    return 0;
}

int gcsh_tracer_stop(gcsh_coord *c)
{
    gcsh_tracer *t = c->tracer;
    if (!t)
        return 0;
    long spans = stop_all(c);
    if (spans >= 0)
        gcsh_coord_say(c, "trace written to %s: %ld spans from %d rank%s", t->path, spans, t->size,
                       t->size == 1 ? "" : "s");
    free_tracer(t);
    c->tracer = NULL;
    return spans >= 0 ? 0 : -1;
}

void gcsh_tracer_say(gcsh_coord *c)
{
    if (c->tracer)
        gcsh_coord_say(c, "tracing to %s (.trace off writes it)", c->tracer->path);
    else
        gcsh_coord_say(c, "not tracing (.trace FILE starts)");
}

#define HANG_NOTE "written at a hang report: calls still running then are marked unfinished"

/* The file is written once every rank asked has answered; a rank that
 * never does (its watcher is stuck too) is written as it was at the next
 * report. */
void gcsh_tracer_request(gcsh_coord *c)
{
    gcsh_tracer *t = c->tracer;
    if (!t)
        return;
    if (t->nasked > 0)
        write_file(c, HANG_NOTE);
    t->nasked = 0;
    for (int r = 0; r < c->size; r++) {
        t->asked[r] = !c->lost[r] &&
                      gcsh_msg_send(c->link->peer_ctl[r], MSG_TRACE_FLUSH, c->seq, NULL, 0, NULL, 0) == 0;
        t->nasked += t->asked[r];
    }
}

void gcsh_tracer_take(gcsh_coord *c, int rank, const char *data, size_t len)
{
    gcsh_tracer *t = c->tracer;
    if (!t || !t->asked[rank])
        return;
    keep(t, rank, data, len);
    t->asked[rank] = 0;
    if (--t->nasked == 0)
        write_file(c, HANG_NOTE);
}

void gcsh_tracer_snapshot(gcsh_coord *c, const char *why)
{
    if (!c->tracer)
        return;
    char *answered = calloc((size_t)c->size, 1);
    tell_all(c, MSG_TRACE_FLUSH, 1);
    collect(c, MSG_TRACE_DATA, SNAPSHOT_WAIT_S, answered, NULL);
    free(answered);
    if (write_file(c, why) >= 0)
        gcsh_coord_say(c, "gcsh: trace written to %s (%s)", c->tracer->path, why);
}
