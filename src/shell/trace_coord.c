/* Rank 0's side of tracing and of the flight recorder.  See trace_coord.h.
 *
 * Starting and stopping happen between commands, on the command channel,
 * which every worker reads in order; copies during a command come from the
 * ranks' watcher threads (the worker may be stuck in a collective), asked
 * on the control channel.  The flight recorder's rings of the ranks on rank
 * 0's node are read directly (flight.h); only the others are asked. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/private.h"
#include "core/safefile.h"
#include "wire/msg.h"
#include "trace/flight.h"
#include "shell/trace_coord.h"
#include "trace/trace_json.h"

#define ANSWER_WAIT_S 30.0   /* starting (a clock ping-pong) and stopping */
#define SNAPSHOT_WAIT_S 2.0  /* a copy from a rank that may be stuck */
#define FLIGHT_KEEP 20       /* automatic dumps kept in gcsh's folder */
#define CRASH_CALLS 8192     /* calls, all rings together, written as a crash ends the job */

/* Each rank's latest blob (trace.h) for one file, and which ranks were
 * asked for one and have not answered yet. */
typedef struct blob_set {
    char *path;
    int private_file; /* gcsh's own file (0600: safefile.h) */
    int size;
    void **blob;
    size_t *len;
    char *asked;
    int nasked;
} blob_set;

struct gcsh_tracer {
    blob_set b;
    int written; /* a trace is in the file, not only the start's placeholder */
};

/* The flight recorder's file being written (during a hang report the other
 * nodes' ranks answer later: written again as they do). */
struct gcsh_flight_out {
    blob_set b;
    char why[160];
    uint32_t said;  /* the command (coord seq) whose dump was said, 0: none */
};

static void set_init(blob_set *b, int size, const char *path)
{
    *b = (blob_set){.path = strdup(path), .size = size};
    b->blob = calloc((size_t)size, sizeof *b->blob);
    b->len = calloc((size_t)size, sizeof *b->len);
    b->asked = calloc((size_t)size, 1);
}

static void set_free(blob_set *b)
{
    for (int r = 0; r < b->size; r++)
        free(b->blob[r]);
    free(b->blob);
    free(b->len);
    free(b->asked);
    free(b->path);
    *b = (blob_set){0};
}

/* Takes blob as rank r's (owned from now on; NULL or empty: nothing). */
static void set_take(blob_set *b, int r, void *blob, size_t len)
{
    if (!blob || len == 0) {
        free(blob);
        return;
    }
    free(b->blob[r]);
    b->blob[r] = blob;
    b->len[r] = len;
}

static void keep(blob_set *b, int r, const char *data, size_t len)
{
    void *copy = len ? malloc(len) : NULL;
    if (copy)
        memcpy(copy, data, len);
    set_take(b, r, copy, len);
}

/* Writes the set's file; the spans written, or -1 after saying why not. */
static long write_set(gcsh_coord *c, blob_set *b, const char *what, const char *why)
{
    char err[PATH_MAX + 200];
    long spans = gcsh_trace_write(b->path, b->private_file, b->size, b->blob, b->len, why, err,
                                  sizeof err);
    if (spans < 0)
        gcsh_coord_say(c, "gcsh: %s: %s", what, err);
    return spans;
}

/* collect's take for a set: each answer becomes the rank's blob. */
static void take_blob(void *set, int r, const gcsh_msg *m)
{
    keep(set, r, m->data, m->h.len);
}

/* What MSG_TRACE_ACK answers: whether tracing started there, and why not. */
typedef struct acks {
    gcsh_coord *c;
    uint32_t *ok;
} acks;

static void take_ack(void *arg, int r, const gcsh_msg *m)
{
    acks *a = arg;
    if (m->h.len >= sizeof *a->ok)
        memcpy(&a->ok[r], m->data, sizeof *a->ok);
    if (!a->ok[r] && m->h.len > sizeof *a->ok)
        gcsh_coord_say(a->c, "gcsh: .trace: rank %d: %.*s", r, (int)(m->h.len - sizeof *a->ok - 1),
                       m->data + sizeof *a->ok);
}

/* Rank 0's tracing state, kept as the coordinator's listener's arg. */
typedef struct tracing {
    gcsh_tracer *tracer;      /* .trace / --trace on, else NULL */
    const char *flight_path;  /* --flight FILE, or NULL for the default */
    char own_path[PATH_MAX];  /* the default, in gcsh's folder (once chosen) */
    int pruned;               /* old dumps in gcsh's folder removed this session */
    int refused_said;         /* why gcsh's folder is refused was said */
    struct gcsh_flight_out *flight_out; /* the dump being written */
} tracing;

static const gcsh_coord_hooks tracing_hooks;

static tracing *of(gcsh_coord *c)
{
    return gcsh_coord_listener(c, &tracing_hooks);
}

/* ---- traces ---------------------------------------------------------------------- */

static void free_tracer(gcsh_tracer *t)
{
    set_free(&t->b);
    free(t);
}

static long write_file(gcsh_coord *c, const char *why)
{
    long spans = write_set(c, &of(c)->tracer->b, "trace", why);
    of(c)->tracer->written |= spans >= 0;
    return spans;
}

#define PLACEHOLDER "tracing: nothing written yet"

/* Tracing ends without a trace written (a full disk, a rank that did not
 * start): the placeholder written at the start goes, so that no file says
 * there is a trace where there is none (a file there that is not the
 * placeholder stays). */
static void drop_placeholder(gcsh_coord *c, const gcsh_tracer *t)
{
    char head[512];
    FILE *f = t->written ? NULL : fopen(t->b.path, "r");
    size_t n = f ? fread(head, 1, sizeof head - 1, f) : 0;
    if (f)
        fclose(f);
    head[n] = '\0';
    if (f && strstr(head, PLACEHOLDER) && unlink(t->b.path) == 0)
        gcsh_coord_say(c, "gcsh: trace: %s removed (no trace was written)", t->b.path);
}

/* Stops every rank and writes what they send; returns the spans written. */
static long stop_all(gcsh_coord *c)
{
    char *answered = calloc((size_t)c->size, 1);
    gcsh_coord_tell(c, MSG_TRACE_OFF, 0, NULL, NULL);
    gcsh_coord_collect(c, MSG_TRACE_DATA, ANSWER_WAIT_S, answered, take_blob, &of(c)->tracer->b);
    free(answered);
    return write_file(c, NULL);
}

int gcsh_tracer_start(gcsh_coord *c, const char *path)
{
    if (of(c)->tracer)
        gcsh_tracer_stop(c);
    char err[PATH_MAX + 200];
    if (gcsh_file_check(path, err, sizeof err) != 0) { /* a name gcsh refuses */
        gcsh_coord_say(c, "gcsh: .trace: %s", err);
        return GCSH_EXIT_USAGE;
    }
    gcsh_tracer *t = calloc(1, sizeof *t);
    set_init(&t->b, c->size, path);
    if (gcsh_trace_write(path, 0, t->b.size, t->b.blob, t->b.len, PLACEHOLDER, err,
                         sizeof err) < 0) { /* a full disk, a folder not writable */
        gcsh_coord_say(c, "gcsh: .trace: %s", err);
        free_tracer(t);
        return GCSH_EXIT_SKIP;
    }
    of(c)->tracer = t;
    char *answered = calloc((size_t)c->size, 1);
    uint32_t *ok = calloc((size_t)c->size, sizeof *ok);
    gcsh_coord_tell(c, MSG_TRACE_ON, 0, NULL, NULL);
    gcsh_coord_collect(c, MSG_TRACE_ACK, ANSWER_WAIT_S, answered, take_ack, &(acks){c, ok});
    int all = 1;
    for (int r = 0; r < c->size; r++)
        all &= c->lost[r] || ok[r];
    free(answered);
    free(ok);
    if (!all) {
        gcsh_coord_say(c, "gcsh: .trace: tracing did not start on every rank; it is off");
        stop_all(c);
        drop_placeholder(c, t);
        free_tracer(t);
        of(c)->tracer = NULL;
        return GCSH_EXIT_SKIP;
    }
    gcsh_coord_error(c, "tracing to %s", path); /* a note, not program output */
    return 0;
}

/* Spans the ranks dropped (the oldest, past GCSH_TRACE_EVENTS each). */
static unsigned long long dropped(const blob_set *b)
{
    unsigned long long n = 0;
    for (int r = 0; r < b->size; r++)
        if (b->blob[r] && b->len[r] >= sizeof(gcsh_trace_blob))
            n += ((const gcsh_trace_blob *)b->blob[r])->dropped;
    return n;
}

int gcsh_tracer_stop(gcsh_coord *c)
{
    gcsh_tracer *t = of(c)->tracer;
    if (!t)
        return 0;
    long spans = stop_all(c);
    unsigned long long gone = dropped(&t->b);
    const char *cap = getenv("GCSH_TRACE_EVENTS");
    if (spans >= 0 && gone)
        gcsh_coord_error(c, "trace written to %s: %ld spans from %d rank%s; %llu older span%s "
                          "dropped (each rank keeps its most recent %s: GCSH_TRACE_EVENTS)",
                       t->b.path, spans, t->b.size, t->b.size == 1 ? "" : "s", gone,
                       gone == 1 ? "" : "s", cap && atoll(cap) > 0 ? cap : "1048576");
    else if (spans >= 0)
        gcsh_coord_error(c, "trace written to %s: %ld spans from %d rank%s", t->b.path, spans,
                         t->b.size, t->b.size == 1 ? "" : "s");
    else
        drop_placeholder(c, t);
    free_tracer(t);
    of(c)->tracer = NULL;
    return spans >= 0 ? 0 : -1;
}

void gcsh_tracer_say(gcsh_coord *c)
{
    if (of(c)->tracer)
        gcsh_coord_say(c, "tracing to %s (.trace off writes it)", of(c)->tracer->b.path);
    else
        gcsh_coord_say(c, "not tracing (.trace FILE starts)");
}

#define HANG_NOTE "written at a hang report: calls still running then are marked unfinished"

/* The file is written once every rank asked has answered; a rank that
 * never does (its watcher is stuck too) is written as it was at the next
 * report. */
static void tracer_request(gcsh_coord *c)
{
    gcsh_tracer *t = of(c)->tracer;
    if (!t)
        return;
    if (t->b.nasked > 0)
        write_file(c, HANG_NOTE);
    t->b.nasked = gcsh_coord_tell(c, MSG_TRACE_FLUSH, 1, NULL, t->b.asked);
}

static void tracer_take(gcsh_coord *c, int rank, const char *data, size_t len)
{
    gcsh_tracer *t = of(c)->tracer;
    if (!t || !t->b.asked[rank])
        return;
    keep(&t->b, rank, data, len);
    t->b.asked[rank] = 0;
    if (--t->b.nasked == 0)
        write_file(c, HANG_NOTE);
}

/* A rank that died left its spans up to its last copy (if one was asked);
 * its flight recorder, which rank 0 still reads, has its last calls: the
 * ones after that copy are added to it. */
static void add_flight_calls(gcsh_coord *c, blob_set *b, int r)
{
    size_t flen = 0;
    void *fblob = gcsh_flight_blob(c->ctx->flight, r, &flen);
    if (!fblob)
        return;
    const gcsh_trace_blob *fb = fblob;
    if (!b->blob[r]) {
        set_take(b, r, fblob, flen);
        return;
    }
    const gcsh_trace_blob *old = b->blob[r];
    const gcsh_trace_rec *orec = (const void *)((const char *)old + sizeof *old);
    const gcsh_trace_rec *frec = (const void *)((const char *)fb + sizeof *fb);
    uint64_t last = 0;
    for (uint64_t i = 0; i < old->nrec; i++)
        last = orec[i].id > last && orec[i].t1 >= 0 ? orec[i].id : last;
    size_t bytes = b->len[r] + flen;
    char *p = malloc(bytes);
    gcsh_trace_blob *nb = (gcsh_trace_blob *)(void *)p;
    *nb = *old;
    nb->now = fb->now;
    gcsh_trace_rec *rec = (gcsh_trace_rec *)(void *)(p + sizeof *nb);
    uint64_t n = 0;
    for (uint64_t i = 0; i < old->nrec; i++) /* its finished spans, as copied */
        if (orec[i].t1 >= 0)
            rec[n++] = orec[i];
    uint32_t shift = (uint32_t)old->npool; /* the flight recorder's strings go after */
    for (uint64_t i = 0; i < fb->nrec; i++)
        if (frec[i].id > last) {
            rec[n] = frec[i];
            rec[n].text += rec[n].text ? shift : 0;
            rec[n].label += rec[n].label ? shift : 0;
            rec[n].where += rec[n].where ? shift : 0;
            n++;
        }
    nb->nrec = n;
    nb->npool = old->npool + fb->npool;
    memcpy(rec + n, (const char *)old + sizeof *old + old->nrec * sizeof *orec, old->npool);
    memcpy((char *)(rec + n) + old->npool, (const char *)fb + sizeof *fb + fb->nrec * sizeof *frec,
           fb->npool);
    free(fblob);
    set_take(b, r, p, sizeof *nb + n * sizeof *rec + nb->npool);
}

/* Now, waiting a little for the answers: after an .abort, before the
 * session ends on a lost rank or a device fault.  why goes into the file.
 * A rank that died is written from its last copy and its flight recorder. */
static void tracer_snapshot(gcsh_coord *c, const char *why)
{
    if (!of(c)->tracer)
        return;
    blob_set *b = &of(c)->tracer->b;
    char *answered = calloc((size_t)c->size, 1);
    gcsh_coord_tell(c, MSG_TRACE_FLUSH, 1, NULL, NULL);
    gcsh_coord_collect(c, MSG_TRACE_DATA, SNAPSHOT_WAIT_S, answered, take_blob, b);
    free(answered);
    char note[512];
    snprintf(note, sizeof note, "%s", why);
    for (int r = 0; r < c->size; r++)
        if (c->lost[r] && gcsh_flight_readable(c->ctx->flight, r)) {
            add_flight_calls(c, b, r);
            size_t k = strlen(note);
            snprintf(note + k, sizeof note - k, "; rank %d died: its last calls are from its flight "
                                                "recorder", r);
        }
    if (write_file(c, note) >= 0)
        gcsh_coord_say(c, "gcsh: trace written to %s (%s)", b->path, why);
}

/* ---- the flight recorder's file ------------------------------------------------------ */

const char *gcsh_flight_path(gcsh_coord *c, char *why, size_t len)
{
    tracing *tr = of(c);
    if (tr->flight_path)
        return tr->flight_path;
    if (!tr->own_path[0] &&
        gcsh_private_path(tr->own_path, sizeof tr->own_path, "gcsh-flight", "json", why, len) != 0)
        return NULL;
    return tr->own_path;
}

/* The automatic dump's file, or NULL after saying (once a session) why
 * there is none. */
static const char *dump_path(gcsh_coord *c)
{
    char why_not[PATH_MAX + 200];
    const char *path = gcsh_flight_path(c, why_not, sizeof why_not);
    if (!path && !of(c)->refused_said) {
        of(c)->refused_said = 1;
        gcsh_coord_say(c, "gcsh: flight recorder: %s", why_not);
    }
    return path;
}

/* After a dump to gcsh's folder: the newest FLIGHT_KEEP dumps stay (this
 * session's among them), older ones go; once a session. */
static void prune_dumps(gcsh_coord *c, const blob_set *b)
{
    tracing *tr = of(c);
    if (!b->private_file || tr->pruned)
        return;
    tr->pruned = 1;
    gcsh_private_prune("gcsh-flight", "json", FLIGHT_KEEP);
}

/* The rings rank 0 reads itself (the newest `most` calls of each), into
 * the set; *remote: ranks to ask. */
static void read_rings(gcsh_coord *c, blob_set *b, size_t most, char *remote, int *nremote)
{
    *nremote = 0;
    for (int r = 0; r < c->size; r++) {
        size_t len = 0;
        remote[r] = 0;
        if (gcsh_flight_readable(c->ctx->flight, r)) {
            void *blob = gcsh_flight_blob_last(c->ctx->flight, r, most, &len);
            set_take(b, r, blob, len);
        } else if (!c->lost[r]) {
            remote[r] = 1;
            ++*nremote;
        }
    }
}

static struct gcsh_flight_out *flight_out(gcsh_coord *c, const char *path)
{
    tracing *tr = of(c);
    struct gcsh_flight_out *f = tr->flight_out;
    if (f && strcmp(f->b.path, path) != 0) {
        set_free(&f->b);
        free(f);
        f = tr->flight_out = NULL;
    }
    if (!f) {
        f = tr->flight_out = calloc(1, sizeof *f);
        set_init(&f->b, c->size, path);
        f->b.private_file = !tr->flight_path && strcmp(path, tr->own_path) == 0;
    }
    return f;
}

/* gcsh_flight_write, with at most `most` calls of each ring rank 0 reads. */
static long write_flight(gcsh_coord *c, const char *path, const char *why, size_t most)
{
    if (!c->ctx->flight) {
        gcsh_coord_say(c, "gcsh: .flight: the flight recorder is off (GCSH_FLIGHT_CALLS=0)");
        return -1;
    }
    if (!path && !(path = dump_path(c)))
        return -1;
    struct gcsh_flight_out *f = flight_out(c, path);
    char *remote = calloc((size_t)c->size, 1);
    int nremote;
    read_rings(c, &f->b, most, remote, &nremote);
    if (nremote) { /* between commands, or the session ending: the others answer at once */
        char *answered = calloc((size_t)c->size, 1);
        for (int r = 0; r < c->size; r++)
            answered[r] = !remote[r];
        gcsh_coord_tell(c, MSG_FLIGHT_FLUSH, 1, remote, NULL);
        gcsh_coord_collect(c, MSG_FLIGHT_DATA, SNAPSHOT_WAIT_S, answered, take_blob, &f->b);
        free(answered);
    }
    free(remote);
    size_t kept = gcsh_flight_size(c->ctx->flight);
    if (kept > most)
        snprintf(f->why, sizeof f->why, "the flight recorder (the last %zu of the %zu calls each "
                 "rank keeps: the session was ending), written %s", most, kept, why);
    else
        snprintf(f->why, sizeof f->why, "the flight recorder (the last %zu calls of each rank), "
                                        "written %s", kept, why);
    long calls = write_set(c, &f->b, "flight recorder", f->why);
    if (calls >= 0)
        prune_dumps(c, &f->b);
    return calls;
}

long gcsh_flight_write(gcsh_coord *c, const char *path, const char *why)
{
    return write_flight(c, path, why, SIZE_MAX);
}

static void say_dump(gcsh_coord *c, const char *path)
{
    gcsh_coord_report_path(c, "flight recorder (every rank's last calls)", path);
}

/* gcsh_flight_write to the automatic dump's file, said in one line: after
 * an interrupt, as the session ends at once (most: calls of each ring). */
static void flight_dump(gcsh_coord *c, const char *why, size_t most)
{
    const char *path = c->ctx->flight ? dump_path(c) : NULL;
    if (path && write_flight(c, path, why, most) >= 0)
        say_dump(c, path);
}

/* While a command runs (a hang report): written at once with what rank 0
 * reads itself, and again as the other ranks' copies come (flight_take);
 * said once per command. */
static void flight_request(gcsh_coord *c, const char *why)
{
    if (!c->ctx->flight)
        return;
    const char *path = dump_path(c);
    if (!path)
        return;
    struct gcsh_flight_out *f = flight_out(c, path);
    read_rings(c, &f->b, SIZE_MAX, f->b.asked, &f->b.nasked);
    gcsh_coord_tell(c, MSG_FLIGHT_FLUSH, 1, f->b.asked, NULL);
    snprintf(f->why, sizeof f->why, "the flight recorder (the last %zu calls of each rank), "
                                    "written %s", gcsh_flight_size(c->ctx->flight), why);
    if (write_set(c, &f->b, "flight recorder", f->why) >= 0 && f->said != c->seq) {
        f->said = c->seq;
        prune_dumps(c, &f->b);
        say_dump(c, f->b.path);
    }
}

static void flight_take(gcsh_coord *c, int rank, const char *data, size_t len)
{
    struct gcsh_flight_out *f = of(c)->flight_out;
    if (!f || !f->b.asked[rank])
        return;
    keep(&f->b, rank, data, len);
    f->b.asked[rank] = 0;
    if (--f->b.nasked == 0)
        write_set(c, &f->b, "flight recorder", f->why);
}

/* ---- the coordinator's listener -------------------------------------------------------- */

static void on_hang(void *arg, gcsh_coord *c)
{
    (void)arg;
    tracer_request(c); /* the trace file shows where each rank is */
    flight_request(c, "at a hang report: calls still running then are unfinished");
}

static void on_message(void *arg, gcsh_coord *c, int r, const gcsh_msg *m)
{
    (void)arg;
    if (m->h.type == MSG_TRACE_DATA)
        tracer_take(c, r, m->data, m->h.len);
    else if (m->h.type == MSG_FLIGHT_DATA)
        flight_take(c, r, m->data, m->h.len);
}

static void on_interrupted(void *arg, gcsh_coord *c, int abort_all)
{
    (void)arg;
    flight_dump(c, abort_all ? "after .abort" : "after an interrupt", SIZE_MAX);
}

static void on_aborted(void *arg, gcsh_coord *c)
{
    (void)arg;
    tracer_snapshot(c, "written after .abort");
}

static void on_dying(void *arg, gcsh_coord *c, const char *why, int crash)
{
    (void)arg;
    tracer_snapshot(c, why); /* where every rank stopped */
    char when[300];
    snprintf(when, sizeof when, "as the session ended (%s)", why);
    /* a lost rank, a device fault: a dead rank's ring too, rank 0 reads it.
     * mpirun kills the job about a second after a rank died (odls's
     * sigkill_timeout): a ring of 100,000 calls a rank took 2 s to write and
     * rank 0 was killed before it said how the session ended.  CRASH_CALLS
     * of the node's newest calls take ~0.15 s (a ring of the default size
     * is written whole). */
    int rings = 0;
    for (int r = 0; r < c->size; r++)
        rings += gcsh_flight_readable(c->ctx->flight, r);
    size_t each = CRASH_CALLS / (size_t)(rings > 0 ? rings : 1);
    if (crash)
        flight_dump(c, when, each > GCSH_FLIGHT_CALLS_DEFAULT ? each : GCSH_FLIGHT_CALLS_DEFAULT);
}

static void on_destroy(void *arg, gcsh_coord *c)
{
    tracing *tr = arg;
    (void)c;
    if (tr->tracer) /* the session ended without .trace off (gcsh_tracer_stop) */
        free_tracer(tr->tracer);
    if (tr->flight_out) {
        set_free(&tr->flight_out->b);
        free(tr->flight_out);
    }
    free(tr);
}

static const gcsh_coord_hooks tracing_hooks = {
    .hang = on_hang, .message = on_message, .interrupted = on_interrupted,
    .aborted = on_aborted, .dying = on_dying, .destroy = on_destroy,
};

void gcsh_tracing_listen(gcsh_coord *c, const char *flight_path)
{
    tracing *tr = calloc(1, sizeof *tr);
    if (!tr)
        abort(); /* out of host memory on rank 0 */
    tr->flight_path = flight_path;
    gcsh_coord_listen(c, &tracing_hooks, tr);
}

int gcsh_tracer_on(gcsh_coord *c)
{
    return of(c)->tracer != NULL;
}
