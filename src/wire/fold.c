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
}

void gcsh_fold_destroy(gcsh_fold *f)
{
    for (int r = 0; f->pending && r < f->nranks; r++) {
        gcsh_text_free(&f->pending[r].text);
        free(f->pending[r].seg);
    }
    free(f->pending);
    free(f->printed);
    f->pending = NULL;
    f->printed = NULL;
}

void gcsh_fold_begin(gcsh_fold *f)
{
    memset(f->printed, 0, (size_t)f->nranks);
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

/* How much of a rank's pending text a flush takes. */
static size_t flushable(const gcsh_text *t, int whole_lines)
{
    if (!whole_lines)
        return t->len;
    size_t n = t->len;
    while (n > 0 && t->s[n - 1] != '\n')
        n--;
    return n;
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

/* How two ranks' first ta and tb bytes compare: 1 the same runs of the same
 * text, 2 the same but for addresses, 0 different. */
static int alike(const gcsh_pending *a, size_t ta, const gcsh_pending *b, size_t tb)
{
    int how = 1;
    for (size_t i = 0;; i++) {
        size_t af = 0, at = 0, bf = 0, bt = 0;
        int sa = run_of(a, ta, i, &af, &at), sb = run_of(b, tb, i, &bf, &bt);
        if (sa != sb)
            return 0;
        if (sa < 0)
            return how;
        const char *x = a->text.s + af, *y = b->text.s + bf;
        if (at - af == bt - bf && memcmp(x, y, at - af) == 0)
            continue;
        if (!same_but_addresses(x, at - af, y, bt - bf))
            return 0;
        how = 2;
    }
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

/* Prints s line by line, each after "[label] " unless label is NULL; an
 * unfinished last line is ended. */
static void print_lines(FILE *out, const char *label, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t end = nl ? (size_t)(nl - s) : n;
        if (label)
            fprintf(out, "[%s] ", label);
        fwrite(s + i, 1, end - i, out);
        fputc('\n', out);
        i = end + 1;
    }
}

/* Prints the runs of a group of g ranks (group[0]'s text, which the others
 * share, but for addresses when `addresses`), each on its stream. */
static void print_group(gcsh_fold *f, const int *group, int g, const size_t *take, int addresses)
{
    char label[4096];
    gcsh_format_ranks(group, g, label, sizeof label);
    const gcsh_pending *p = &f->pending[group[0]];
    const char **texts = malloc((size_t)g * sizeof *texts);
    size_t *lens = malloc((size_t)g * sizeof *lens), from, to;
    int stream;
    for (size_t i = 0; (stream = run_of(p, take[group[0]], i, &from, &to)) >= 0; i++) {
        const char *lab = tagged(f, stream, g) ? label : NULL;
        FILE *out = f->out[stream];
        if (!addresses) {
            print_lines(out, lab, p->text.s + from, to - from);
        } else {
            for (int m = 0; m < g; m++) {
                size_t mf = 0, mt = 0;
                run_of(&f->pending[group[m]], take[group[m]], i, &mf, &mt);
                texts[m] = f->pending[group[m]].text.s + mf;
                lens[m] = mt - mf;
            }
            gcsh_text t = {0};
            fold_addresses(&t, texts, lens, g);
            print_lines(out, lab, t.s, t.len);
            gcsh_text_free(&t);
        }
        note_closed(f, out);
    }
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

void gcsh_fold_flush(gcsh_fold *f, int whole_lines)
{
    int n = f->nranks, addresses = 0;
    size_t *take = calloc((size_t)n, sizeof *take);
    int *group = malloc((size_t)n * sizeof *group);
    char *done = calloc((size_t)n, 1);
    for (int r = 0; r < n; r++)
        take[r] = flushable(&f->pending[r].text, whole_lines);
    for (int r = 0; r < n; r++) {
        if (done[r] || take[r] == 0)
            continue;
        int g = 0, varies = 0;
        for (int q = r; q < (f->tag == GCSH_TAG_NEVER ? r + 1 : n); q++) { /* never: no fold */
            int how = done[q] || !take[q] ? 0
                                          : alike(&f->pending[r], take[r], &f->pending[q], take[q]);
            if (how) {
                group[g++] = q;
                done[q] = 1;
                varies |= how == 2;
            }
        }
        print_group(f, group, g, take, varies);
        addresses |= varies;
    }
    for (int r = 0; r < n; r++)
        drop_front(&f->pending[r], take[r]);
    if (addresses && !f->addresses_said) {
        fprintf(f->out[GCSH_STDERR], "gcsh: 0x\xe2\x80\xa6 is an address that differs between "
                                     "the ranks; their lines are otherwise the same\n");
        note_closed(f, f->out[GCSH_STDERR]);
        f->addresses_said = 1;
    }
    free(take);
    free(group);
    free(done);
}
