/* Writes the ranks' trace blobs as one Chrome trace-event JSON file
 * (trace.h): a process per rank, tracks for Lua lines, gcsh calls and the
 * GPU, flow arrows linking one collective across ranks in the order they
 * reached it.  Every event object is built and printed by jansson; only the
 * fixed frame around the event list is written here. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/gcsh.h"
#include "core/kplan.h"
#include "core/safefile.h"
#include "trace/trace_json.h"

typedef struct rank_data {
    const gcsh_trace_blob *b;
    const gcsh_trace_rec *rec;
    const char *pool;
    size_t *order; /* record indices by start time */
} rank_data;

/* A collective's first call on one rank, for the flows. */
typedef struct flow_point {
    uint64_t comm, seq;
    int64_t ts;  /* on rank 0's clock */
    int rank;
    uint32_t label;
} flow_point;

static int by_start(const void *a, const void *b, void *arg)
{
    const rank_data *d = arg;
    const gcsh_trace_rec *x = &d->rec[*(const size_t *)a];
    const gcsh_trace_rec *y = &d->rec[*(const size_t *)b];
    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1; /* outer span first */
}

static int by_collective(const void *a, const void *b)
{
    const flow_point *x = a, *y = b;
    if (x->comm != y->comm)
        return x->comm < y->comm ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->rank - y->rank;
}

/* JSON strings must be UTF-8: any other byte reads '?'. */
static json_t *text_json(const char *s, size_t n)
{
    char *out = malloc(n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        int ok = len > 0 && i + len <= n && c != 0;
        for (size_t j = 1; ok && j < len; j++)
            ok = ((unsigned char)s[i + j] >> 6) == 2;
        if (ok) {
            memcpy(out + k, s + i, len);
            k += len;
            i += len;
        } else {
            out[k++] = '?';
            i++;
        }
    }
    json_t *j = json_stringn(out, k);
    free(out);
    return j ? j : json_string("?");
}

static const char *pool_str(const rank_data *d, uint32_t at)
{
    return at && at <= d->b->npool ? d->pool + at - 1 : NULL;
}

static double us(int64_t ns)
{
    return (double)ns / 1000.0;
}

/* "allreduce #5", or NULL when the record belongs to no collective. */
static void collective_name(const rank_data *d, const gcsh_trace_rec *r, char *buf, size_t len)
{
    const char *label = pool_str(d, r->label);
    buf[0] = '\0';
    if (label && r->seq)
        snprintf(buf, len, "%s #%llu", label, (unsigned long long)r->seq);
    else if (label)
        snprintf(buf, len, "%s", label);
}

/* The slice's name: the Lua line's first line, the check and its
 * collective, or the backend operation (a kernel collective by algorithm). */
static json_t *span_name(const rank_data *d, const gcsh_trace_rec *r, const char *coll, int open)
{
    char name[160];
    if (r->track == GCSH_TRACK_LUA) {
        const char *text = pool_str(d, r->text);
        size_t n = text ? strcspn(text, "\n") : 0;
        snprintf(name, sizeof name, "%.*s%s%s", (int)(n < 60 ? n : 60), text ? text : "",
                 text && text[n] ? " ..." : "", open ? " (unfinished)" : "");
        return text_json(name, strlen(name));
    }
    if (r->op == GCSH_TRACE_OP_CHECK)
        snprintf(name, sizeof name, "check %s", coll);
    else if (r->op == GCSH_TRACE_OP_COLL)
        snprintf(name, sizeof name, "%s", coll[0] ? coll : "collective");
    else if (r->algo >= 0 && r->coll >= 0)
        snprintf(name, sizeof name, "kern.%s.%s", gcsh_kcoll_name((enum gcsh_kcoll)r->coll),
                 gcsh_kalgo_name((enum gcsh_kalgo)r->algo));
    else
        snprintf(name, sizeof name, "%s", gcsh_trace_op_name(r->op));
    if (open)
        strncat(name, " (unfinished)", sizeof name - strlen(name) - 1);
    return json_string(name);
}

static const char *const STATES[] = {"", "running", "issued", "done", "failed"};
static const char *const CMPS[] = {">=", ">", "==", "~=", "<=", "<"};

/* Symmetric memory: the object (a window's or signals' id, equal on every
 * rank), a signal's slot, value and comparison, the word's owner. */
static void symmetric_args(json_t *a, const gcsh_trace_rec *r)
{
    char id[24];
    if (r->obj) {
        snprintf(id, sizeof id, "%016llx", (unsigned long long)r->obj);
        json_object_set_new(a, "object", json_string(id));
    }
    if (r->slot >= 0)
        json_object_set_new(a, "slot", json_integer((json_int_t)r->slot));
    if (r->slot >= 0 || r->value)
        json_object_set_new(a, "value", json_integer((json_int_t)r->value));
    if (r->cmp >= 0 && r->cmp < 6)
        json_object_set_new(a, "cmp", json_string(CMPS[r->cmp]));
    if (r->cmp >= 0 && r->comm_rank >= 0)
        json_object_set_new(a, "rank", json_integer(r->comm_rank)); /* whose word it waits on */
    if (r->seen_set) /* the word when the wait returned */
        json_object_set_new(a, "seen", json_integer((json_int_t)r->seen));
}

/* The region: its first element, under the name of its role in a
 * transfer (the window's side), and its element count. */
static void region_args(json_t *a, const gcsh_trace_rec *r)
{
    if (r->offset >= 0)
        json_object_set_new(a, r->xfer == 1 ? "dst_offset" : r->xfer == 2 ? "src_offset" : "offset",
                            json_integer((json_int_t)r->offset));
    if (r->dtype >= 0 && r->bytes)
        json_object_set_new(a, "n", json_integer((json_int_t)(r->bytes / gcsh_dtype_size(
                                                                  (gcsh_dtype)r->dtype))));
}

static json_t *span_args(const rank_data *d, const gcsh_trace_rec *r, const char *coll, int open)
{
    json_t *a = json_object();
    if (r->track == GCSH_TRACK_LUA) {
        const char *text = pool_str(d, r->text);
        if (text)
            json_object_set_new(a, "source", text_json(text, strlen(text)));
    }
    const char *where = pool_str(d, r->where);
    if (where)
        json_object_set_new(a, "lua", text_json(where, strlen(where)));
    if (r->state && r->state < 5) {
        json_object_set_new(a, "state", json_string(STATES[r->state]));
        json_object_set_new(a, "call", json_integer((json_int_t)r->id));
    }
    symmetric_args(a, r);
    region_args(a, r);
    if (r->bytes)
        json_object_set_new(a, "bytes", json_integer((json_int_t)r->bytes));
    if (r->dtype >= 0)
        json_object_set_new(a, "dtype", json_string(gcsh_dtype_name((gcsh_dtype)r->dtype)));
    if (r->redop >= 0)
        json_object_set_new(a, "op", json_string(gcsh_redop_name((gcsh_redop)r->redop)));
    if (r->algo >= 0)
        json_object_set_new(a, "algo", json_string(gcsh_kalgo_name((enum gcsh_kalgo)r->algo)));
    if (r->peer >= 0)
        json_object_set_new(a, "peer", json_integer(r->peer));
    if (r->net)
        json_object_set_new(a, "path", json_string("network"));
    if (coll[0]) {
        json_object_set_new(a, "collective", json_string(coll));
        json_object_set_new(a, "seq", json_integer((json_int_t)r->seq));
        char comm[32];
        if (r->comm < (1ULL << 63))
            snprintf(comm, sizeof comm, "world %llu", (unsigned long long)r->comm);
        else
            snprintf(comm, sizeof comm, "comm %06llx", (unsigned long long)(r->comm & 0xffffff));
        json_object_set_new(a, "comm", json_string(comm));
    }
    if (r->failed)
        json_object_set_new(a, "failed", json_true());
    if (open)
        json_object_set_new(a, "unfinished", json_true());
    return a;
}

/* Writes one event and its separator; returns -1 on a write error. */
static int emit(FILE *f, json_t *ev, int *first)
{
    int rc = (*first ? 0 : fputs(",\n", f) < 0) || json_dumpf(ev, f, JSON_COMPACT) != 0 ? -1 : 0;
    *first = 0;
    json_decref(ev);
    return rc;
}

static json_t *slice(int pid, int tid, json_t *name, const char *cat, int64_t ts, int64_t dur,
                     json_t *args)
{
    json_t *e = json_object();
    json_object_set_new(e, "ph", json_string("X"));
    json_object_set_new(e, "name", name);
    json_object_set_new(e, "cat", json_string(cat));
    json_object_set_new(e, "pid", json_integer(pid));
    json_object_set_new(e, "tid", json_integer(tid));
    json_object_set_new(e, "ts", json_real(us(ts)));
    json_object_set_new(e, "dur", json_real(us(dur > 0 ? dur : 0)));
    json_object_set_new(e, "args", args);
    return e;
}

static json_t *meta(int pid, int tid, const char *what, json_t *value)
{
    json_t *e = json_object();
    json_object_set_new(e, "ph", json_string("M"));
    json_object_set_new(e, "name", json_string(what));
    json_object_set_new(e, "pid", json_integer(pid));
    if (tid >= 0)
        json_object_set_new(e, "tid", json_integer(tid));
    json_t *args = json_object();
    json_object_set_new(args, strcmp(what, "process_sort_index") == 0 ? "sort_index" : "name",
                        value);
    json_object_set_new(e, "args", args);
    return e;
}

static int emit_process(FILE *f, const rank_data *d, int *first)
{
    int r = d->b->rank, rc = 0, gpu = 0;
    char name[256];
    snprintf(name, sizeof name, "rank %d (%s, %s)", r, d->b->host, d->b->device);
    rc |= emit(f, meta(r, -1, "process_name", text_json(name, strlen(name))), first);
    rc |= emit(f, meta(r, -1, "process_sort_index", json_integer(r)), first);
    rc |= emit(f, meta(r, GCSH_TRACK_LUA, "thread_name", json_string("Lua lines")), first);
    rc |= emit(f, meta(r, GCSH_TRACK_CALLS, "thread_name", json_string("gcsh calls")), first);
    for (uint64_t i = 0; i < d->b->nrec; i++)
        gpu |= d->rec[i].g0 >= 0;
    if (gpu)
        rc |= emit(f, meta(r, GCSH_TRACK_GPU, "thread_name", json_string("GPU (CUDA events)")),
                   first);
    return rc;
}

/* A slice to write: record rec's host span, or its GPU span. */
typedef struct slice_ref {
    int64_t ts;
    size_t rec;
    int gpu;
} slice_ref;

static int by_ts(const void *a, const void *b)
{
    const slice_ref *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    if (x->rec != y->rec)
        return x->rec < y->rec ? -1 : 1; /* outer span first */
    return x->gpu - y->gpu;
}

static int emit_slice(FILE *f, const rank_data *d, const slice_ref *s, int64_t shift, int *first)
{
    const gcsh_trace_rec *x = &d->rec[s->rec];
    char coll[64];
    collective_name(d, x, coll, sizeof coll);
    int64_t t0 = s->gpu ? x->g0 : x->t0, t1 = s->gpu ? x->g1 : x->t1;
    int open = t1 < 0;
    int64_t end = open ? d->b->now : t1;
    return emit(f, slice(d->b->rank, s->gpu ? GCSH_TRACK_GPU : x->track,
                         span_name(d, x, coll, open), s->gpu ? "gpu" : gcsh_trace_op_cat(x->op),
                         t0 + shift, end - t0, span_args(d, x, coll, open)),
                first);
}

/* Every slice of one rank, host calls and their GPU sides merged in start
 * order (the GPU runs behind the host, so a call's GPU span can start after
 * the next call's host span), on rank 0's clock from base. */
static int emit_slices(FILE *f, const rank_data *d, int64_t base, int *first)
{
    int rc = 0;
    size_t n = 0;
    slice_ref *s = malloc((2 * d->b->nrec + 1) * sizeof *s);
    if (!s)
        return -1;
    for (uint64_t k = 0; k < d->b->nrec; k++) {
        const gcsh_trace_rec *x = &d->rec[k];
        s[n++] = (slice_ref){x->t0, (size_t)k, 0};
        if (x->g0 >= 0)
            s[n++] = (slice_ref){x->g0, (size_t)k, 1};
    }
    if (n > 1)
        qsort(s, n, sizeof *s, by_ts);
    for (size_t i = 0; i < n && rc == 0; i++)
        rc |= emit_slice(f, d, &s[i], d->b->offset - base, first);
    free(s);
    return rc;
}

/* Flow arrows: each collective's first call on every rank that made it
 * (the collective's own span, from its check on), linked in the order the
 * ranks reached it (the last one is the straggler).  A check that failed
 * does not count (the collective runs at the next attempt). */
static int emit_flows(FILE *f, const rank_data *d, int size, int64_t base, int *first,
                      json_int_t *flow_id)
{
    size_t n = 0, cap = 0;
    flow_point *p = NULL;
    for (int r = 0; r < size; r++) {
        if (!d[r].b)
            continue;
        uint64_t last_comm = 0, last_seq = 0;
        for (uint64_t k = 0; k < d[r].b->nrec; k++) {
            const gcsh_trace_rec *x = &d[r].rec[d[r].order[k]];
            if (x->track != GCSH_TRACK_CALLS || !x->seq || x->op == GCSH_TRACE_OP_CHECK ||
                (x->op == GCSH_TRACE_OP_COLL && x->failed) ||
                (x->comm == last_comm && x->seq == last_seq))
                continue;
            last_comm = x->comm;
            last_seq = x->seq;
            if (n == cap) {
                cap = cap ? 2 * cap : 256;
                flow_point *q = realloc(p, cap * sizeof *q);
                if (!q)
                    break;
                p = q;
            }
            p[n++] = (flow_point){.comm = x->comm, .seq = x->seq, .rank = r, .label = x->label,
                                  .ts = x->t0 + d[r].b->offset - base};
        }
    }
    if (n)
        qsort(p, n, sizeof *p, by_collective);
    int rc = 0;
    json_int_t id = *flow_id;
    for (size_t i = 0; i < n && rc == 0;) {
        size_t j = i;
        while (j < n && p[j].comm == p[i].comm && p[j].seq == p[i].seq)
            j++;
        if (j - i >= 2) {
            id++;
            const char *label = pool_str(&d[p[i].rank], p[i].label);
            char name[64];
            snprintf(name, sizeof name, "%s #%llu", label ? label : "collective",
                     (unsigned long long)p[i].seq);
            for (size_t k = i; k < j; k++) {
                json_t *e = json_object();
                json_object_set_new(e, "ph", json_string(k == i ? "s" : k + 1 == j ? "f" : "t"));
                json_object_set_new(e, "id", json_integer(id));
                json_object_set_new(e, "name", json_string(name));
                json_object_set_new(e, "cat", json_string("collective"));
                json_object_set_new(e, "pid", json_integer(p[k].rank));
                json_object_set_new(e, "tid", json_integer(GCSH_TRACK_CALLS));
                json_object_set_new(e, "ts", json_real(us(p[k].ts)));
                json_object_set_new(e, "bp", json_string("e"));
                rc |= emit(f, e, first);
            }
        }
        i = j;
    }
    free(p);
    *flow_id = id;
    return rc;
}

/* A signal operation, for the flows from what releases a wait to the wait:
 * the word it is about (object, owner's rank, slot) and a time. */
typedef struct signal_point {
    uint64_t obj;
    int64_t slot, ts;
    int32_t owner;
    int rank;
} signal_point;

static int by_word(const void *a, const void *b)
{
    const signal_point *x = a, *y = b;
    if (x->obj != y->obj)
        return x->obj < y->obj ? -1 : 1;
    if (x->owner != y->owner)
        return x->owner < y->owner ? -1 : 1;
    if (x->slot != y->slot)
        return x->slot < y->slot ? -1 : 1;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int same_word(const signal_point *x, const signal_point *y)
{
    return x->obj == y->obj && x->owner == y->owner && x->slot == y->slot;
}

static json_t *flow_event(const char *ph, json_int_t id, const char *name, const signal_point *p)
{
    json_t *e = json_object();
    json_object_set_new(e, "ph", json_string(ph));
    json_object_set_new(e, "id", json_integer(id));
    json_object_set_new(e, "name", json_string(name));
    json_object_set_new(e, "cat", json_string("signal"));
    json_object_set_new(e, "pid", json_integer(p->rank));
    json_object_set_new(e, "tid", json_integer(GCSH_TRACK_CALLS));
    json_object_set_new(e, "ts", json_real(us(p->ts)));
    json_object_set_new(e, "bp", json_string("e"));
    return e;
}

/* Collects the signal operations of every rank: what sets or adds to a
 * word (s:set, s:add, a put with a signal), at its start; the waits that
 * ended, at their end (want: 1 or 2, gcsh_trace_op_signal). */
static size_t signal_points(const rank_data *d, int size, int64_t base, int want,
                            signal_point **out)
{
    size_t n = 0, cap = 0;
    signal_point *p = NULL;
    for (int r = 0; r < size; r++)
        for (uint64_t k = 0; d[r].b && k < d[r].b->nrec; k++) {
            const gcsh_trace_rec *x = &d[r].rec[k];
            if (gcsh_trace_op_signal(x->op) != want || !x->obj || x->slot < 0 || x->failed ||
                (want == 2 && x->t1 < 0))
                continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 256;
                signal_point *q = realloc(p, cap * sizeof *q);
                if (!q)
                    break;
                p = q;
            }
            /* a wait's point: just inside its end (its slice holds it
             * whatever the rounding to microseconds) */
            int64_t in = (x->t1 - x->t0) / 2 < 1000 ? (x->t1 - x->t0) / 2 : 1000;
            p[n++] = (signal_point){.obj = x->obj, .slot = x->slot, .rank = r,
                                    .owner = want == 1 ? x->peer : x->comm_rank,
                                    .ts = (want == 1 ? x->t0 : x->t1 - in) + d[r].b->offset - base};
        }
    *out = p;
    return n;
}

/* Flow arrows from the set, add or put that released each wait (the last
 * one on that word before the wait ended) to the wait's end. */
static int emit_signal_flows(FILE *f, const rank_data *d, int size, int64_t base, int *first,
                             json_int_t *flow_id)
{
    signal_point *rel, *wait;
    size_t nrel = signal_points(d, size, base, 1, &rel);
    size_t nwait = signal_points(d, size, base, 2, &wait);
    if (nrel > 1)
        qsort(rel, nrel, sizeof *rel, by_word);
    int rc = 0;
    for (size_t i = 0; i < nwait && rc == 0; i++) {
        const signal_point *best = NULL;
        size_t lo = 0, hi = nrel; /* the first release not before wait i's word */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            signal_point key = wait[i];
            key.ts = INT64_MIN;
            if (by_word(&rel[mid], &key) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t k = lo; k < nrel && same_word(&rel[k], &wait[i]) && rel[k].ts <= wait[i].ts; k++)
            best = &rel[k];
        if (!best)
            continue;
        char name[48];
        snprintf(name, sizeof name, "signal slot %lld", (long long)wait[i].slot);
        ++*flow_id;
        rc |= emit(f, flow_event("s", *flow_id, name, best), first);
        rc |= emit(f, flow_event("f", *flow_id, name, &wait[i]), first);
    }
    free(rel);
    free(wait);
    return rc;
}

static json_t *other_data(const rank_data *d, int size, const char *note)
{
    json_t *o = json_object();
    json_object_set_new(o, "writer", json_string("gcsh " GCSH_VERSION));
    json_object_set_new(o, "ranks", json_integer(size));
    if (note)
        json_object_set_new(o, "note", json_string(note));
    json_t *clocks = json_array();
    json_int_t dropped = 0;
    for (int r = 0; r < size; r++) {
        if (!d[r].b)
            continue;
        json_t *c = json_object();
        json_object_set_new(c, "rank", json_integer(r));
        json_object_set_new(c, "offset_us", json_real(us(d[r].b->offset)));
        json_object_set_new(c, "sync_rtt_us", json_real(d[r].b->rtt < 0 ? 0 : us(d[r].b->rtt)));
        json_array_append_new(clocks, c);
        dropped += (json_int_t)d[r].b->dropped;
    }
    json_object_set_new(o, "clocks", clocks);
    json_object_set_new(o, "dropped_spans", json_integer(dropped));
    return o;
}

/* Checks a blob's sizes and points d into it; -1 when malformed. */
static int open_blob(rank_data *d, const void *blob, size_t len)
{
    const gcsh_trace_blob *b = blob;
    if (len < sizeof *b || b->nrec > (len - sizeof *b) / sizeof(gcsh_trace_rec) ||
        sizeof *b + b->nrec * sizeof(gcsh_trace_rec) + b->npool != len)
        return -1;
    d->b = b;
    d->rec = (const gcsh_trace_rec *)(const void *)((const char *)blob + sizeof *b);
    d->pool = (const char *)blob + sizeof *b + b->nrec * sizeof(gcsh_trace_rec);
    d->order = malloc((b->nrec ? b->nrec : 1) * sizeof *d->order);
    for (uint64_t i = 0; i < b->nrec; i++)
        d->order[i] = (size_t)i;
    qsort_r(d->order, (size_t)b->nrec, sizeof *d->order, by_start, d);
    return 0;
}

long gcsh_trace_write(const char *path, int private_file, int size, void *const *blobs,
                      const size_t *lens, const char *note, char *err, size_t elen)
{
    rank_data *d = calloc((size_t)size, sizeof *d);
    long spans = 0;
    int64_t base = INT64_MAX;
    for (int r = 0; r < size; r++) {
        if (!blobs[r] || open_blob(&d[r], blobs[r], lens[r]) != 0)
            continue;
        for (uint64_t i = 0; i < d[r].b->nrec; i++)
            if (d[r].rec[i].t0 + d[r].b->offset < base)
                base = d[r].rec[i].t0 + d[r].b->offset;
        spans += (long)d[r].b->nrec;
    }
    if (base == INT64_MAX)
        base = 0;
    gcsh_file w;
    int rc = private_file ? gcsh_file_open_private(&w, path, err, elen)
                          : gcsh_file_open(&w, path, err, elen);
    if (rc == 0) {
        FILE *f = w.f;
        int first = 1;
        rc |= fputs("{\"traceEvents\":[\n", f) < 0;
        for (int r = 0; r < size && rc == 0; r++)
            if (d[r].b)
                rc |= emit_process(f, &d[r], &first) | emit_slices(f, &d[r], base, &first);
        json_int_t flow_id = 0;
        if (rc == 0)
            rc |= emit_flows(f, d, size, base, &first, &flow_id);
        if (rc == 0)
            rc |= emit_signal_flows(f, d, size, base, &first, &flow_id);
        rc |= fputs("\n],\"otherData\":", f) < 0;
        json_t *o = other_data(d, size, note);
        rc |= json_dumpf(o, f, JSON_COMPACT) != 0;
        json_decref(o);
        rc |= fputs("}\n", f) < 0;
        if (rc != 0 && !w.err)
            w.err = errno ? errno : EIO;
        rc = gcsh_file_commit(&w, err, elen);
    }
    for (int r = 0; r < size; r++)
        free(d[r].order);
    free(d);
    return rc == 0 ? spans : -1;
}
