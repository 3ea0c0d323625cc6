/* The trace layer from C, on the host backend with fake GPU marks (a mark
 * is a time that "passes" when the test says so), so the GPU-span path runs
 * without a GPU: the table swap, spans and their args, the check seam's
 * sequence numbers, running calls in a copy, GPU spans from marks, the blob,
 * and the JSON file (read back with jansson): processes, slices, flows. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <mpi.h>

#include "core/gcsh.h"
#include "host/host.h"
#include "trace/flight.h"
#include "trace/trace.h"
#include "trace/trace_ops.h"
#include "trace/trace_wrap.h"
#include "trace/trace_json.h"
#include "wire/collcheck.h"
#include "unit.h"

/* ---- fake marks: the "GPU" runs each marked call 5 us after it is enqueued */

typedef struct fake_mark {
    int64_t at;   /* ns, on the host clock */
    int passed;
} fake_mark;

static int marks_pass = 1; /* 0: new marks never pass (the GPU is stuck) */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int fake_mark_new(gcsh_ctx *ctx, void **tok)
{
    (void)ctx;
    fake_mark *m = malloc(sizeof *m);
    *m = (fake_mark){.at = now_ns() + 5000, .passed = marks_pass};
    *tok = m;
    return 0;
}

static int fake_mark_seconds(gcsh_ctx *ctx, void *a, void *b, double *seconds)
{
    (void)ctx;
    const fake_mark *x = a, *y = b;
    if (!x->passed || !y->passed)
        return 1;
    *seconds = (double)(y->at - x->at) * 1e-9;
    return 0;
}

static void fake_mark_free(gcsh_ctx *ctx, void *tok)
{
    (void)ctx;
    free(tok);
}

static gcsh_mem_ops mem_with_marks;
static gcsh_backend backend;

static const gcsh_trace_rec *recs(const void *blob)
{
    return (const gcsh_trace_rec *)(const void *)((const char *)blob + sizeof(gcsh_trace_blob));
}

static const char *pool(const void *blob, uint32_t at)
{
    const gcsh_trace_blob *b = blob;
    return (const char *)blob + sizeof *b + b->nrec * sizeof(gcsh_trace_rec) + at - 1;
}

static void test_swap(gcsh_ctx *ctx)
{
    CHECK(gcsh_trace_start(ctx) == -1 && strstr(ctx->err, "no recorder"),
          "start before the recorder is made: %s", ctx->err);
    CHECK(gcsh_trace_init(ctx, gcsh_trace_wrap) == 0, "init: %s", ctx->err);
    CHECK(ctx->be == &backend, "no flight recorder: nothing records yet");
    CHECK(gcsh_trace_start(ctx) == 0, "start: %s", ctx->err);
    CHECK(ctx->trace != NULL && ctx->be != &backend, "ctx->be is the traced table");
    CHECK(gcsh_trace_plain(ctx) == &backend, "the plain table is kept");
    CHECK(ctx->be->mem->fill != backend.mem->fill, "fill is wrapped");
    CHECK(ctx->be->comm->rank == backend.comm->rank, "comm->rank is shared: no work, no span");
    CHECK(ctx->be->win->signal_read == backend.win->signal_read, "signal_read (a poll) is shared");
    CHECK(ctx->be->xfer->test == backend.xfer->test, "xfer->test (a poll) is shared");
    CHECK(ctx->be->mem->timer_begin == backend.mem->timer_begin, "bench timers are shared");
    CHECK(strcmp(ctx->be->name, "host") == 0, "the name stays");
}

static void test_spans(gcsh_ctx *ctx)
{
    float buf[16];
    gcsh_trace_chunk_begin(ctx, "return t:fill(1)", 16);
    CHECK(ctx->be->mem->fill(ctx, buf, GCSH_LOC_HOST, GCSH_F32, 16,
                             (gcsh_scalar){.is_int = 1, .i = 1}) == 0, "fill");
    /* a collective: the check seam (with .check off: no exchange, no span)
     * names the communicator and sequence number of the calls inside */
    gcsh_comm_check cc = {.id = 7, .seq = 4, .rank = 0, .size = 2};
    gcsh_fingerprint fp;
    gcsh_fp_init(&fp, &cc, "allreduce");
    gcsh_check_note note;
    gcsh_check_note_of(&note, ctx, &cc, &fp);
    const gcsh_check_hooks *hooks = ctx->check_hooks;
    int token = hooks->begin(ctx, &note);
    CHECK(token == -1, "no check span with checks off");
    hooks->end(ctx, token, &note, 0);
    CHECK(ctx->be->mem->copy(ctx, buf, GCSH_LOC_HOST, buf + 8, GCSH_LOC_HOST, 32) == 0, "copy");
    hooks->leave(ctx);
    CHECK(ctx->be->mem->sync(ctx) == 0, "sync after the collective");
    /* a call still running when a copy is taken, its GPU side stuck */
    marks_pass = 0;
    gcsh_trace_call call = {.rec = GCSH_TRACE_REC_BLANK, .slot = -1};
    call.rec.bytes = 99;
    gcsh_trace_call_begin(ctx, &call, 2 /* mem.copy */, GCSH_TRACE_GPU);
    size_t len = 0;
    void *blob = gcsh_trace_snapshot(ctx, &len);
    gcsh_trace_call_end(ctx, &call, 0);
    marks_pass = 1;
    gcsh_trace_chunk_end(ctx, 0);
    CHECK(blob != NULL, "a copy");
    const gcsh_trace_blob *b = blob;
    CHECK(b->nrec == 6, "fill, the collective with its copy, sync done; the Lua line and a copy "
                        "running: %llu", (unsigned long long)b->nrec);
    const gcsh_trace_rec *r = recs(blob);
    CHECK(strcmp(gcsh_trace_op_name(r[0].op), "mem.fill") == 0, "first: %s",
          gcsh_trace_op_name(r[0].op));
    CHECK(r[0].bytes == 64 && r[0].dtype == GCSH_F32 && r[0].t1 >= r[0].t0, "fill's args");
    CHECK(r[0].g0 >= 0 && r[0].g1 >= r[0].g0, "fill's GPU span from the marks: %lld %lld",
          (long long)r[0].g0, (long long)r[0].g1);
    /* spans in the order they ended: the copy, then its collective */
    CHECK(r[2].op == GCSH_TRACE_OP_COLL && r[2].comm == 7 && r[2].seq == 5,
          "the collective's own span, #5 of comm 7: %llu #%llu", (unsigned long long)r[2].comm,
          (unsigned long long)r[2].seq);
    CHECK(r[2].t0 <= r[1].t0 && r[2].t1 >= r[1].t1, "it holds the copy");
    CHECK(r[1].comm == 7 && r[1].seq == 5, "the copy belongs to collective #5 of comm 7: %llu #%llu",
          (unsigned long long)r[1].comm, (unsigned long long)r[1].seq);
    CHECK(r[1].label && strcmp(pool(blob, r[1].label), "allreduce") == 0, "labelled allreduce");
    CHECK(r[3].seq == 0, "sync, after check_leave, belongs to no collective");
    CHECK(r[0].id < r[2].id && r[2].id < r[1].id && r[1].id < r[3].id,
          "call numbers in the order the calls began");
    CHECK(r[4].track == GCSH_TRACK_LUA && r[4].t1 == -1, "the Lua line, still running");
    CHECK(strcmp(pool(blob, r[4].text), "t:fill(1)") == 0, "its text, without the return: %s",
          pool(blob, r[4].text));
    CHECK(r[5].t1 == -1 && r[5].bytes == 99, "the running call");
    CHECK(r[5].g0 == -1, "its GPU side never started");
    free(blob);
}

static void test_file(gcsh_ctx *ctx, const char *path)
{
    size_t len = 0;
    void *mine = gcsh_trace_stop(ctx, &len);
    CHECK(ctx->trace == NULL && ctx->be == &backend, "stop: the backend's own table again");
    size_t none = 0;
    CHECK(gcsh_trace_snapshot(ctx, &none) == NULL, "no copy after stop");
    /* rank 1: the same spans 1 ms later, so the flow goes 0 -> 1 */
    void *other = malloc(len);
    memcpy(other, mine, len);
    gcsh_trace_blob *b1 = other;
    b1->rank = 1;
    b1->offset = 1000000;
    void *blobs[2] = {mine, other};
    size_t lens[2] = {len, len};
    char werr[256];
    CHECK(gcsh_trace_write(path, 0, 2, blobs, lens, "unit test", werr, sizeof werr) > 0, "written");
    json_error_t err;
    json_t *doc = json_load_file(path, 0, &err);
    CHECK(doc != NULL, "jansson reads it back: %s", err.text);
    json_t *ev = json_object_get(doc, "traceEvents");
    int procs = 0, gpu = 0, flow_s = -1, flow_f = -1, backwards = 0;
    double last_ts[2] = {-1, -1};
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *name = json_string_value(json_object_get(e, "name"));
        int pid = (int)json_integer_value(json_object_get(e, "pid"));
        if (strcmp(ph, "M") == 0 && strcmp(name, "process_name") == 0)
            procs++;
        if (strcmp(ph, "X") == 0 && json_integer_value(json_object_get(e, "tid")) == GCSH_TRACK_GPU)
            gpu++;
        if (strcmp(ph, "X") == 0 && pid >= 0 && pid < 2) {
            /* the fake GPU runs 5 us behind: its spans interleave with the host's */
            double ts = json_number_value(json_object_get(e, "ts"));
            backwards += ts < last_ts[pid];
            last_ts[pid] = ts;
        }
        if (strcmp(ph, "s") == 0)
            flow_s = pid;
        if (strcmp(ph, "f") == 0)
            flow_f = pid;
    }
    CHECK(procs == 2, "a process per rank: %d", procs);
    CHECK(backwards == 0, "every rank's slices in time order, GPU spans among them: %d go back",
          backwards);
    CHECK(gpu == 6, "GPU slices: fill, copy, sync on two ranks: %d", gpu);
    CHECK(flow_s == 0 && flow_f == 1, "the flow starts on the rank that came first: %d -> %d",
          flow_s, flow_f);
    CHECK(strcmp(json_string_value(json_object_get(json_object_get(doc, "otherData"), "note")),
                 "unit test") == 0, "the note");
    json_decref(doc);
    CHECK(gcsh_trace_write("/nonexistent/dir/t.json", 0, 2, blobs, lens, NULL, werr, sizeof werr) == -1,
          "an unwritable file fails");
    free(mine);
    free(other);
}

/* The span cap keeps the most recent spans and counts the dropped ones. */
static void test_cap(gcsh_ctx *ctx)
{
    setenv("GCSH_TRACE_EVENTS", "4", 1);
    CHECK(gcsh_trace_start(ctx) == 0, "start with a cap of 4");
    float buf[4];
    for (int i = 0; i < 10; i++)
        ctx->be->mem->fill(ctx, buf, GCSH_LOC_HOST, GCSH_F32, (size_t)(i % 4) + 1,
                           (gcsh_scalar){.is_int = 1, .i = i});
    size_t len = 0;
    void *blob = gcsh_trace_stop(ctx, &len);
    const gcsh_trace_blob *b = blob;
    const gcsh_trace_rec *r = recs(blob);
    CHECK(b->nrec == 4 && b->dropped == 6, "4 spans kept, 6 dropped: %llu, %llu",
          (unsigned long long)b->nrec, (unsigned long long)b->dropped);
    CHECK(r[0].id + 3 == r[3].id && r[3].bytes == 2 * 4, "the most recent, oldest first: ids %llu..%llu",
          (unsigned long long)r[0].id, (unsigned long long)r[3].id);
    free(blob);
    unsetenv("GCSH_TRACE_EVENTS");
}

/* The flight recorder: the last N calls with their states, kept without
 * tracing; a blob as a trace's. */
static void test_flight(gcsh_ctx *ctx)
{
    setenv("GCSH_FLIGHT_CALLS", "8", 1);
    ctx->flight = gcsh_flight_open(ctx);
    CHECK(ctx->flight && gcsh_flight_size(ctx->flight) == 8, "a ring of 8");
    gcsh_trace_free(ctx);
    CHECK(gcsh_trace_init(ctx, gcsh_trace_wrap) == 0 && ctx->be != &backend, "recording for the whole session");
    CHECK(ctx->trace == NULL, "no spans kept");
    float buf[4];
    gcsh_trace_chunk_begin(ctx, "for i = 1, 20 do t:fill(i) end", 31);
    for (int i = 0; i < 20; i++)
        ctx->be->mem->fill(ctx, buf, GCSH_LOC_HOST, GCSH_F32, 4, (gcsh_scalar){.is_int = 1, .i = i});
    gcsh_trace_call call = {.rec = GCSH_TRACE_REC_BLANK, .slot = -1};
    call.rec.bytes = 7;
    gcsh_trace_call_begin(ctx, &call, 2 /* mem.copy */, 0);
    size_t len = 0;
    void *blob = gcsh_flight_blob(ctx->flight, ctx->rank, &len);
    gcsh_trace_call_end(ctx, &call, 0);
    const gcsh_trace_blob *b = blob;
    const gcsh_trace_rec *r = recs(blob);
    CHECK(b->flight == 8 && b->nrec == 8, "the last 8 calls: %llu", (unsigned long long)b->nrec);
    CHECK(r[7].id == 22 && r[0].id == 15, "numbered 15..22: %llu..%llu",
          (unsigned long long)r[0].id, (unsigned long long)r[7].id);
    CHECK(r[7].state == GCSH_CALL_RUNNING && r[7].t1 == -1 && r[7].bytes == 7, "the last running");
    CHECK(r[6].state == GCSH_CALL_ISSUED, "a GPU call of a backend with marks: issued");
    CHECK(ctx->be->mem->sync(ctx) == 0, "a sync");
    free(blob);
    blob = gcsh_flight_blob(ctx->flight, ctx->rank, &len);
    r = recs(blob);
    CHECK(r[5].state == GCSH_CALL_DONE && r[6].state == GCSH_CALL_DONE, "done once a sync passed");
    CHECK(gcsh_flight_readable(ctx->flight, ctx->rank), "its own ring is readable");
    free(blob);
    gcsh_trace_chunk_end(ctx, 0);
    gcsh_trace_free(ctx);
    gcsh_flight_close(ctx->flight);
    ctx->flight = NULL;
    unsetenv("GCSH_FLIGHT_CALLS");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    gcsh_ctx ctx = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &ctx.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ctx.size);
    snprintf(ctx.device, sizeof ctx.device, "cpu");
    mem_with_marks = gcsh_host_mem_ops;
    mem_with_marks.mark = fake_mark_new;
    mem_with_marks.mark_seconds = fake_mark_seconds;
    mem_with_marks.mark_free = fake_mark_free;
    backend = gcsh_host_backend;
    backend.mem = &mem_with_marks;
    ctx.be = &backend;
    char path[] = "/tmp/gcsh-test-trace-XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0)
        close(fd);
    test_swap(&ctx);
    test_spans(&ctx);
    test_file(&ctx, path);
    remove(path);
    test_cap(&ctx);
    test_flight(&ctx);
    gcsh_trace_free(&ctx);
    MPI_Finalize();
    UNIT_END();
}
