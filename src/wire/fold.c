/* Rank 0's folding of every rank's output.  See out.h. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/out.h"

int gcsh_tag_parse(const char *s, gcsh_tag_mode *mode)
{
    static const char *const names[] = {"always", "never", "auto"};
    for (int i = 0; i < 3; i++)
        if (strcmp(s, names[i]) == 0) {
            *mode = (gcsh_tag_mode)i;
            return 0;
        }
    return -1;
}

void gcsh_fold_init(gcsh_fold *f, int nranks, FILE *out, FILE *err, gcsh_tag_mode tag)
{
    *f = (gcsh_fold){.nranks = nranks, .out = {out, err},
                     .tag = nranks > 1 ? tag : GCSH_TAG_NEVER};
    f->pending = calloc((size_t)nranks, sizeof *f->pending);
    f->printed = calloc((size_t)nranks, 1);
    f->open_ranks = calloc((size_t)nranks, 1);
    f->shown = calloc((size_t)nranks, 2);
}

void gcsh_fold_destroy(gcsh_fold *f)
{
    for (int r = 0; f->pending && r < f->nranks; r++) {
        gcsh_text_free(&f->pending[r].text);
        free(f->pending[r].seg);
    }
    free(f->pending);
    free(f->printed);
    free(f->open_ranks);
    free(f->shown);
    f->pending = NULL;
    f->printed = NULL;
    f->open_ranks = NULL;
    f->shown = NULL;
}

void gcsh_fold_begin(gcsh_fold *f)
{
    memset(f->printed, 0, (size_t)f->nranks);
    memset(f->shown, 0, 2 * (size_t)f->nranks); /* the last command's end ended its lines */
    f->nprinted = 0;
}

void gcsh_fold_add(gcsh_fold *f, int rank, int stream, const char *s, size_t n)
{
    gcsh_pending *p = &f->pending[rank];
    if (n == 0)
        return;
    if (p->text.len == 0)
        p->nseg = 0;
    if (gcsh_segment_note(&p->seg, &p->nseg, &p->capseg, p->text.len, stream) != 0)
        abort(); /* out of host memory on rank 0, as gcsh_text_append */
    gcsh_text_append(&p->text, s, n);
    if (stream == GCSH_STDOUT && !f->printed[rank]) {
        f->printed[rank] = 1;
        f->nprinted++;
    }
}

size_t gcsh_fold_bytes(const gcsh_fold *f)
{
    size_t n = 0;
    for (int r = 0; r < f->nranks; r++)
        n += f->pending[r].text.len;
    return n;
}

int gcsh_fold_pending(const gcsh_fold *f)
{
    for (int r = 0; r < f->nranks; r++)
        if (f->pending[r].text.len)
            return 1;
    return 0;
}

/* The i-th run of p within its first `take` bytes: its stream, and its
 * bytes [*from, *to); -1 past the last. */
static int run_of(const gcsh_pending *p, size_t take, size_t i, size_t *from, size_t *to)
{
    if (i >= p->nseg || p->seg[i].at >= take)
        return -1;
    *from = p->seg[i].at;
    *to = i + 1 < p->nseg && p->seg[i + 1].at < take ? p->seg[i + 1].at : take;
    return p->seg[i].stream;
}

/* ---- addresses ------------------------------------------------------------- */

/* What Lua's tostring writes before an address ("function: 0x55d0c3a4b2c0",
 * "file (0x7f02...)"): only these count, so that a hex number a program
 * prints (a checksum) never folds with another. */
static const char *const ADDRESS_KINDS[] = {"table: ", "function: ", "userdata: ", "thread: ",
                                            "builtin: ", "file (", NULL};

/* The length of the address at s[i], or 0 when none starts there. */
static size_t address_at(const char *s, size_t n, size_t i)
{
    if (i + 2 > n || s[i] != '0' || s[i + 1] != 'x')
        return 0;
    size_t e = i + 2;
    while (e < n && isxdigit((unsigned char)s[e]))
        e++;
    if (e - i - 2 < 6)
        return 0;
    for (const char *const *k = ADDRESS_KINDS; *k; k++) {
        size_t kl = strlen(*k);
        if (i >= kl && memcmp(s + i - kl, *k, kl) == 0)
            return e - i;
    }
    return 0;
}

/* Whether a and b are the same text but for the addresses in them. */
static int same_but_addresses(const char *a, size_t na, const char *b, size_t nb)
{
    size_t i = 0, j = 0;
    while (i < na && j < nb) {
        size_t la = address_at(a, na, i), lb = address_at(b, nb, j);
        if (la && lb) {
            i += la;
            j += lb;
        } else if (a[i] != b[j]) {
            return 0;
        } else {
            i++;
            j++;
        }
    }
    return i == na && j == nb;
}

/* Appends the first member's text s[0] to t, each address that is not the
 * same in every member's text (s[m], n[m]) written as 0x…. */
static void fold_addresses(gcsh_text *t, const char **s, const size_t *n, int g)
{
    size_t *pos = calloc((size_t)g, sizeof *pos);
    while (pos[0] < n[0]) {
        size_t l0 = address_at(s[0], n[0], pos[0]);
        if (!l0) {
            gcsh_text_append(t, s[0] + pos[0], 1);
            for (int m = 0; m < g; m++)
                pos[m]++;
            continue;
        }
        int same = 1;
        for (int m = 1; m < g; m++) {
            size_t lm = address_at(s[m], n[m], pos[m]);
            same &= lm == l0 && memcmp(s[m] + pos[m], s[0] + pos[0], l0) == 0;
            pos[m] += lm ? lm : l0;
        }
        if (same)
            gcsh_text_append(t, s[0] + pos[0], l0);
        else
            gcsh_text_append(t, "0x\xe2\x80\xa6", 5); /* 0x… */
        pos[0] += l0;
    }
    free(pos);
}

/* ---- agreement ------------------------------------------------------------------ */

/* Walks a rank's pending text piece by piece: a piece is one stream's text up
 * to a newline, a change of stream, or the limit (then it may be a line the
 * rank has not finished). */
typedef struct cursor {
    const gcsh_pending *p;
    size_t limit; /* the bytes looked at */
    size_t at;    /* where the next piece starts */
    size_t seg;   /* the run that holds `at` */
} cursor;

/* The next piece: its stream and *to, its end; -1 at the limit. */
static int next_piece(cursor *c, size_t *to)
{
    const gcsh_pending *p = c->p;
    if (c->at >= c->limit)
        return -1;
    while (c->seg + 1 < p->nseg && p->seg[c->seg + 1].at <= c->at)
        c->seg++;
    size_t end = c->seg + 1 < p->nseg ? p->seg[c->seg + 1].at : p->text.len;
    if (end > c->limit)
        end = c->limit;
    const char *nl = memchr(p->text.s + c->at, '\n', end - c->at);
    *to = nl ? (size_t)(nl - p->text.s) + 1 : end;
    return p->seg[c->seg].stream;
}

/* Whether the piece x[0..n) of a rank's text (its first `limit` bytes) is a
 * whole line: it ends with a newline, or where the other stream takes over
 * (which ends the line on the screen), or at the text's end when `end`
 * (the command is over: nothing can continue it, and its end ends it). */
static int whole_piece(const gcsh_pending *p, size_t limit, const char *x, size_t n, size_t to,
                       int end)
{
    return to < limit || x[n - 1] == '\n' || (end && to == p->text.len);
}

/* Whether two whole lines are alike: the same text but for addresses (*addr
 * set where those differ), their newlines aside ("val 5" ended by the
 * command's end shows as "val 5\n" does). */
static int same_line(const char *x, size_t nx, const char *y, size_t ny, int *addr)
{
    nx -= x[nx - 1] == '\n';
    ny -= y[ny - 1] == '\n';
    if (nx == ny && memcmp(x, y, nx) == 0)
        return 1;
    if (!same_but_addresses(x, nx, y, ny))
        return 0;
    *addr = 1;
    return 1;
}

/* Whether two ranks' texts (their first la and lb bytes) agree: one is the
 * beginning of the other.  Whole lines must be alike (same stream,
 * same_line); a line the shorter one has not finished must begin the
 * other's, byte for byte.  *ta and *tb: the bytes of each that the shorter
 * one covers.  end: the command is over (whole_piece). */
static int agree(const gcsh_pending *a, size_t la, const gcsh_pending *b, size_t lb, int end,
                 size_t *ta, size_t *tb, int *addr)
{
    cursor ca = {a, la, 0, 0}, cb = {b, lb, 0, 0};
    for (;;) {
        size_t ea = 0, eb = 0;
        int sa = next_piece(&ca, &ea), sb = next_piece(&cb, &eb);
        if (sa < 0 || sb < 0)
            break; /* one is used up */
        if (sa != sb)
            return 0;
        const char *x = a->text.s + ca.at, *y = b->text.s + cb.at;
        size_t nx = ea - ca.at, ny = eb - cb.at;
        int whole_a = whole_piece(a, la, x, nx, ea, end);
        int whole_b = whole_piece(b, lb, y, ny, eb, end);
        if (whole_a && whole_b) {
            if (!same_line(x, nx, y, ny, addr))
                return 0;
            ca.at = ea;
            cb.at = eb;
            continue;
        }
        if (!whole_a && nx <= ny && memcmp(x, y, nx) == 0) {
            ca.at = ea;
            cb.at += nx;
            break;
        }
        if (!whole_b && ny <= nx && memcmp(x, y, ny) == 0) {
            cb.at = eb;
            ca.at += ny;
            break;
        }
        return 0;
    }
    *ta = ca.at;
    *tb = cb.at;
    return 1;
}

/* ---- printing ----------------------------------------------------------------- */

/* Whether a group of g ranks' run of `stream` gets its "[ranks] " prefix. */
static int tagged(const gcsh_fold *f, int stream, int g)
{
    if (f->tag == GCSH_TAG_AUTO)
        return stream == GCSH_STDERR || g > 1 || f->nprinted > 1;
    return f->tag == GCSH_TAG_ALWAYS;
}

/* Flushes out (in order with the other stream at a terminal) and notes
 * whether its reader is gone: a pipe closed by `head` or `less` (EPIPE;
 * rank 0 ignores SIGPIPE, so the write fails instead). */
static void note_closed(gcsh_fold *f, FILE *out)
{
    if ((fflush(out) != 0 || ferror(out)) && errno == EPIPE)
        f->closed = 1;
}

void gcsh_fold_end_line(gcsh_fold *f)
{
    if (!f->open)
        return;
    FILE *out = f->out[f->open_stream];
    fputc('\n', out);
    f->open = 0;
    note_closed(f, out);
}

/* Prints s line by line on stream, each after "[label] " when tagged.  An
 * unfinished last line stays open, unless `end`: the same ranks' next text
 * on that stream continues it; anything else ends it first. */
static void print_lines(gcsh_fold *f, int stream, const char *label, int tag, const char *s,
                        size_t n, int end)
{
    FILE *out = f->out[stream];
    if (f->open && (f->open_stream != stream || strcmp(f->open_label, label) != 0))
        gcsh_fold_end_line(f);
    size_t i = 0;
    while (i < n) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t stop = nl ? (size_t)(nl - s) : n;
        if (!f->open && tag)
            fprintf(out, "[%s] ", label);
        fwrite(s + i, 1, stop - i, out);
        f->open = 0;
        if (nl || end) {
            fputc('\n', out);
        } else {
            f->open = 1;
            f->open_stream = stream;
            snprintf(f->open_label, sizeof f->open_label, "%s", label);
        }
        i = stop + 1;
    }
}

/* Notes where each member's lines stand once its first take[m] bytes are
 * printed (shown); the open line, if the group left one, is theirs, and
 * is ended at once when a member's line there is finished (a member whose
 * newline was taken: more text of the group must not continue it). */
static void note_shown(gcsh_fold *f, const int *group, int g, const size_t *take)
{
    size_t from, to;
    int stream, finished = 0;
    for (int m = 0; m < g; m++) {
        const gcsh_pending *p = &f->pending[group[m]];
        for (size_t i = 0; (stream = run_of(p, take[group[m]], i, &from, &to)) >= 0; i++)
            f->shown[2 * group[m] + stream] = to > from && p->text.s[to - 1] != '\n';
        finished |= !f->shown[2 * group[m] + f->open_stream];
    }
    if (!f->open)
        return;
    memset(f->open_ranks, 0, (size_t)f->nranks);
    for (int m = 0; m < g; m++)
        f->open_ranks[group[m]] = 1;
    if (finished)
        gcsh_fold_end_line(f);
}

/* Prints the runs of a group of g ranks (group[0]'s text, which the others
 * share, but for addresses when `addresses`), each on its stream; `end`:
 * an unfinished last line is ended. */
static void print_group(gcsh_fold *f, const int *group, int g, const size_t *take, int addresses,
                        int end)
{
    char label[sizeof f->open_label];
    gcsh_format_ranks(group, g, label, sizeof label);
    const gcsh_pending *p = &f->pending[group[0]];
    const char **texts = malloc((size_t)g * sizeof *texts);
    size_t *lens = malloc((size_t)g * sizeof *lens), from, to;
    int stream;
    for (size_t i = 0; (stream = run_of(p, take[group[0]], i, &from, &to)) >= 0; i++) {
        int tag = tagged(f, stream, g);
        if (!addresses) {
            print_lines(f, stream, label, tag, p->text.s + from, to - from, end);
        } else {
            for (int m = 0; m < g; m++) {
                size_t mf = 0, mt = 0;
                run_of(&f->pending[group[m]], take[group[m]], i, &mf, &mt);
                texts[m] = f->pending[group[m]].text.s + mf;
                lens[m] = mt - mf;
            }
            gcsh_text t = {0};
            fold_addresses(&t, texts, lens, g);
            print_lines(f, stream, label, tag, t.s, t.len, end);
            gcsh_text_free(&t);
        }
        note_closed(f, f->out[stream]);
    }
    note_shown(f, group, g, take);
    free(texts);
    free(lens);
}

/* Drops the first n bytes of p's text and the runs that end there. */
static void drop_front(gcsh_pending *p, size_t n)
{
    if (n == 0)
        return;
    size_t len = p->text.len, k = 0;
    for (size_t i = 0; i < p->nseg; i++) {
        size_t end = i + 1 < p->nseg ? p->seg[i + 1].at : len;
        if (end <= n)
            continue;
        p->seg[k].stream = p->seg[i].stream;
        p->seg[k].at = p->seg[i].at > n ? p->seg[i].at - n : 0;
        k++;
    }
    p->nseg = k;
    memmove(p->text.s, p->text.s + n, len - n);
    p->text.len -= n;
    p->text.s[p->text.len] = '\0';
}

/* Walks rank r's pending text for settle: each newline that only finishes
 * a line of r already ended on the screen is left out (mid[s]: r's line on
 * stream s is unfinished; cut[s]: and other text ended it on the screen;
 * seen[s]: r's pending text of s was reached, so the line is no longer the
 * one shown before).  With `into`, what is kept goes there and the shown
 * line's own newline ends the open line when it is r's; without, nothing
 * changes.  Returns the newlines left out. */
static int settle_walk(gcsh_fold *f, int r, gcsh_pending *into)
{
    const gcsh_pending *p = &f->pending[r];
    char mid[2] = {f->shown[2 * r], f->shown[2 * r + 1]}, cut[2] = {mid[0], mid[1]};
    char seen[2] = {0, 0};
    int dropped = 0;
    for (size_t i = 0; i < p->nseg; i++) {
        int s = p->seg[i].stream;
        size_t from = p->seg[i].at, to = i + 1 < p->nseg ? p->seg[i + 1].at : p->text.len;
        if (mid[s] && cut[s] && from < to && p->text.s[from] == '\n') {
            from++;
            dropped++;
            mid[s] = 0;
            if (into && !seen[s]) { /* the line on the screen is finished */
                f->shown[2 * r + s] = 0;
                if (f->open && f->open_stream == s && f->open_ranks[r])
                    gcsh_fold_end_line(f);
            }
        }
        seen[s] = 1;
        if (from == to)
            continue;
        if (into && gcsh_segment_note(&into->seg, &into->nseg, &into->capseg, into->text.len, s))
            abort(); /* out of host memory on rank 0, as gcsh_text_append */
        if (into)
            gcsh_text_append(&into->text, p->text.s + from, to - from);
        mid[s] = p->text.s[to - 1] != '\n';
        cut[s] = 0;
        cut[!s] |= mid[!s]; /* this stream's text ends the other's line on the screen */
    }
    return dropped;
}

/* Drops from rank r's pending text each newline that only finishes a line
 * of r whose beginning is on the screen and was ended there already (by
 * other ranks' text, r's other stream, or the rest of the group it was
 * shown with): printed, it would be a "[r] " line that r never printed.
 * Where it finishes the open line, that line ends now, so that what comes
 * next starts a line of its own. */
static void settle(gcsh_fold *f, int r)
{
    if (settle_walk(f, r, NULL) == 0)
        return;
    gcsh_pending kept = {0};
    settle_walk(f, r, &kept);
    gcsh_pending *p = &f->pending[r];
    gcsh_text_free(&p->text);
    free(p->seg);
    *p = kept;
}

/* Whether a rank of set[0..n) that the fold waits for has nothing pending:
 * what the others have may be what it is about to print. */
static int one_behind(const gcsh_fold *f, const int *set, int n, const char *waiting)
{
    for (int i = 0; waiting && i < n; i++)
        if (waiting[set[i]] && f->pending[set[i]].text.len == 0)
            return 1;
    return 0;
}

/* Prints the text of the ranks in set[0..n) (each has some): the ranks whose
 * texts agree with the lowest one's (one the beginning of the other) print
 * what all of them have, folded, then what is left of theirs the same way;
 * then the next lowest rank's, and so on.  Unless `end`, nothing is printed
 * while `hold` (a rank in waiting[] that was with them has nothing
 * pending: it may be about to print the same), and an unfinished line
 * stays open. */
static void flush_set(gcsh_fold *f, const int *set, int n, const char *waiting, int end,
                      int hold)
{
    if (!end && hold)
        return;
    int *group = malloc((size_t)(n ? n : 1) * sizeof *group);
    int *rest = malloc((size_t)(n ? n : 1) * sizeof *rest);
    char *done = calloc((size_t)(n ? n : 1), 1);
    size_t *take = calloc((size_t)f->nranks, sizeof *take);
    for (int i = 0; i < n; i++) {
        if (done[i])
            continue;
        const gcsh_pending *rep = &f->pending[set[i]];
        int g = 0, addr = 0;
        size_t common = rep->text.len, tr = 0, tq = 0;
        for (int j = i; j < n; j++) { /* never: each rank on its own */
            if (done[j] || (j > i && f->tag == GCSH_TAG_NEVER))
                continue;
            const gcsh_pending *q = &f->pending[set[j]];
            if (j == i || agree(rep, rep->text.len, q, q->text.len, end, &tr, &tq, &addr)) {
                group[g++] = set[j];
                done[j] = 1;
                if (j > i && tr < common)
                    common = tr;
            }
        }
        for (int m = 0; m < g; m++) { /* each member's bytes for rep's first `common` */
            const gcsh_pending *q = &f->pending[group[m]];
            take[group[m]] = common;
            if (m > 0)
                agree(rep, common, q, q->text.len, end, &tr, &take[group[m]], &addr);
        }
        print_group(f, group, g, take, addr, end);
        int left = 0;
        for (int m = 0; m < g; m++) {
            drop_front(&f->pending[group[m]], take[group[m]]);
            settle(f, group[m]); /* the group's line may be the end of its own */
            if (f->pending[group[m]].text.len)
                rest[left++] = group[m];
        }
        if (left)
            flush_set(f, rest, left, waiting, end, one_behind(f, group, g, waiting));
        f->addresses_seen |= addr;
    }
    free(group);
    free(rest);
    free(done);
    free(take);
}

void gcsh_fold_flush(gcsh_fold *f, int end, const char *waiting)
{
    int n = 0, *set = malloc((size_t)f->nranks * sizeof *set), *all = malloc((size_t)f->nranks * sizeof *all);
    for (int r = 0; r < f->nranks; r++) {
        all[r] = r;
        settle(f, r);
        if (f->pending[r].text.len)
            set[n++] = r;
    }
    if (f->tag == GCSH_TAG_NEVER)
        waiting = NULL; /* mpirun's habit: as the lines come */
    /* a rank that has printed nothing yet may print what any other has */
    flush_set(f, set, n, waiting, end, one_behind(f, all, f->nranks, waiting));
    free(all);
    if (end)
        gcsh_fold_end_line(f);
    if (f->addresses_seen && !f->addresses_said) {
        gcsh_fold_end_line(f);
        fprintf(f->out[GCSH_STDERR], "gcsh: 0x\xe2\x80\xa6 is an address that differs between "
                                     "the ranks; their lines are otherwise the same\n");
        note_closed(f, f->out[GCSH_STDERR]);
        f->addresses_said = 1;
    }
    free(set);
}
