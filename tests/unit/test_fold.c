/* Rank 0's folding (src/wire/fold.c): two streams per rank in the order
 * written, addresses that differ folded as 0x…, the note said once, the tag
 * modes.  Output goes to memory streams. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/out.h"
#include "unit.h"

/* A fold over n ranks that prints into two memory streams. */
typedef struct sink {
    gcsh_fold f;
    FILE *out, *err;
    char *obuf, *ebuf;
    size_t olen, elen;
} sink;

static void sink_open(sink *k, int n, gcsh_tag_mode tag)
{
    memset(k, 0, sizeof *k);
    k->out = open_memstream(&k->obuf, &k->olen);
    k->err = open_memstream(&k->ebuf, &k->elen);
    gcsh_fold_init(&k->f, n, k->out, k->err, tag);
    gcsh_fold_begin(&k->f);
}

static void add(sink *k, int rank, int stream, const char *s)
{
    gcsh_fold_add(&k->f, rank, stream, s, strlen(s));
}

/* Flushes everything; k->obuf, k->ebuf hold what was printed. */
static void flush(sink *k)
{
    gcsh_fold_flush(&k->f, 1, NULL);
    fflush(k->out);
    fflush(k->err);
}

static void sink_close(sink *k)
{
    gcsh_fold_destroy(&k->f);
    fclose(k->out);
    fclose(k->err);
    free(k->obuf);
    free(k->ebuf);
}

/* Both streams to one place: the order between them holds. */
static void test_one_place(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *both = open_memstream(&buf, &len);
    gcsh_fold f;
    gcsh_fold_init(&f, 2, both, both, GCSH_TAG_ALWAYS);
    gcsh_fold_begin(&f);
    const char *seq[][2] = {{"o", "a\n"}, {"e", "b\n"}, {"o", "c\n"}};
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 3; i++)
            gcsh_fold_add(&f, r, seq[i][0][0] == 'e' ? GCSH_STDERR : GCSH_STDOUT, seq[i][1], 2);
    gcsh_fold_flush(&f, 1, NULL);
    fflush(both);
    CHECK(strcmp(buf, "[0-1] a\n[0-1] b\n[0-1] c\n") == 0, "one place, in order: %s", buf);
    gcsh_fold_destroy(&f);
    fclose(both);
    free(buf);
}

static void test_streams(void)
{
    sink k;
    sink_open(&k, 2, GCSH_TAG_ALWAYS);
    add(&k, 0, GCSH_STDOUT, "start\n");
    add(&k, 0, GCSH_STDERR, "oops");      /* no newline: the stream change ends it */
    add(&k, 0, GCSH_STDOUT, "end\n");
    add(&k, 1, GCSH_STDOUT, "start\n");
    add(&k, 1, GCSH_STDERR, "oops");
    add(&k, 1, GCSH_STDOUT, "end\n");
    flush(&k);
    CHECK(strcmp(k.obuf, "[0-1] start\n[0-1] end\n") == 0, "stdout: %s", k.obuf);
    CHECK(strcmp(k.ebuf, "[0-1] oops\n") == 0, "stderr: %s", k.ebuf);
    sink_close(&k);

    /* same text, different streams: no folding across them */
    sink_open(&k, 2, GCSH_TAG_ALWAYS);
    add(&k, 0, GCSH_STDOUT, "x\n");
    add(&k, 1, GCSH_STDERR, "x\n");
    flush(&k);
    CHECK(strcmp(k.obuf, "[0] x\n") == 0 && strcmp(k.ebuf, "[1] x\n") == 0, "%s|%s", k.obuf,
          k.ebuf);
    sink_close(&k);

    /* while the command runs an unfinished line is printed and stays open:
     * the same rank's next text on its stream continues it */
    sink_open(&k, 1, GCSH_TAG_ALWAYS);
    add(&k, 0, GCSH_STDERR, "done\npart");
    gcsh_fold_flush(&k.f, 0, NULL);
    fflush(k.err);
    CHECK(strcmp(k.ebuf, "done\npart") == 0 && k.f.open, "an open line: %s", k.ebuf);
    add(&k, 0, GCSH_STDERR, "ial\n");
    flush(&k);
    CHECK(strcmp(k.ebuf, "done\npartial\n") == 0, "the rest, one rank untagged: %s", k.ebuf);
    sink_close(&k);
}

static void test_addresses(void)
{
    sink k;
    sink_open(&k, 3, GCSH_TAG_ALWAYS);
    add(&k, 0, GCSH_STDOUT, "{f = function: 0x55d0c3a4b2c0, g = table: 0x1234567}\n");
    add(&k, 1, GCSH_STDOUT, "{f = function: 0x7fd0c3a4b2c0aa, g = table: 0x1234567}\n");
    add(&k, 2, GCSH_STDOUT, "{f = function: 0x55d0c3a4bfff, g = table: 0x1234567}\n");
    flush(&k);
    CHECK(strcmp(k.obuf, "[0-2] {f = function: 0x\xe2\x80\xa6, g = table: 0x1234567}\n") == 0,
          "differing addresses as 0x…, the same one kept: %s", k.obuf);
    CHECK(strstr(k.ebuf, "gcsh: 0x\xe2\x80\xa6 is an address that differs between the ranks") == k.ebuf,
          "the note: %s", k.ebuf);
    size_t said = k.elen;
    add(&k, 0, GCSH_STDOUT, "thread: 0x5500001111\n");
    add(&k, 1, GCSH_STDOUT, "thread: 0x5500002222\n");
    add(&k, 2, GCSH_STDOUT, "thread: 0x5500001111\n");
    flush(&k);
    CHECK(strstr(k.obuf, "[0-2] thread: 0x\xe2\x80\xa6\n") != NULL, "again: %s", k.obuf);
    CHECK(k.elen == said, "the note once: %s", k.ebuf);
    /* a hex number the program prints is no address: it never folds */
    add(&k, 0, GCSH_STDOUT, "checksum: 0x1111111111\n");
    add(&k, 1, GCSH_STDOUT, "checksum: 0x2222222222\n");
    add(&k, 2, GCSH_STDOUT, "checksum: 0x1111111111\n");
    flush(&k);
    CHECK(strstr(k.obuf, "[0,2] checksum: 0x1111111111\n[1] checksum: 0x2222222222\n") != NULL,
          "checksums: %s", k.obuf);
    /* other differences keep ranks apart, addresses shown as they are */
    add(&k, 0, GCSH_STDOUT, "table: 0x5500001111 0\n");
    add(&k, 1, GCSH_STDOUT, "table: 0x5500002222 1\n");
    flush(&k);
    CHECK(strstr(k.obuf, "[0] table: 0x5500001111 0\n[1] table: 0x5500002222 1\n") != NULL,
          "not only addresses: %s", k.obuf);
    sink_close(&k);
}

static void test_tags(void)
{
    sink k;
    sink_open(&k, 2, GCSH_TAG_NEVER);
    add(&k, 0, GCSH_STDOUT, "a\n");
    add(&k, 1, GCSH_STDOUT, "b\n");
    add(&k, 1, GCSH_STDERR, "e\n");
    flush(&k);
    CHECK(strcmp(k.obuf, "a\nb\n") == 0 && strcmp(k.ebuf, "e\n") == 0, "never: %s|%s", k.obuf,
          k.ebuf);
    sink_close(&k);

    sink_open(&k, 3, GCSH_TAG_AUTO);
    add(&k, 2, GCSH_STDOUT, "# table\n");
    add(&k, 2, GCSH_STDERR, "warning\n");
    flush(&k);
    CHECK(strcmp(k.obuf, "# table\n") == 0, "auto: one rank's output bare: %s", k.obuf);
    CHECK(strcmp(k.ebuf, "[2] warning\n") == 0, "auto: errors tagged: %s", k.ebuf);
    add(&k, 0, GCSH_STDOUT, "late\n");
    flush(&k);
    CHECK(strcmp(k.obuf, "# table\n[0] late\n") == 0, "auto: tagged once a second rank printed: %s",
          k.obuf);
    gcsh_fold_begin(&k.f); /* the next command counts again */
    add(&k, 1, GCSH_STDOUT, "next\n");
    flush(&k);
    CHECK(strcmp(k.obuf, "# table\n[0] late\nnext\n") == 0, "auto: per command: %s", k.obuf);
    sink_close(&k);

    gcsh_tag_mode m;
    CHECK(gcsh_tag_parse("auto", &m) == 0 && m == GCSH_TAG_AUTO, "parse auto");
    CHECK(gcsh_tag_parse("sometimes", &m) == -1, "parse a bad one");
}

/* Flushes what is due while the command runs; waiting: "01" marks ranks. */
static void due(sink *k, const char *waiting)
{
    char w[8] = {0};
    for (int r = 0; waiting && waiting[r]; r++)
        w[r] = waiting[r] == '1';
    gcsh_fold_flush(&k->f, 0, waiting ? w : NULL);
    fflush(k->out);
    fflush(k->err);
}

/* Runs of any length: a rank ahead prints what the others have printed too,
 * and keeps the rest for a rank that keeps printing (issue 39, item 7). */
static void test_runs(void)
{
    sink k;
    sink_open(&k, 2, GCSH_TAG_ALWAYS);
    add(&k, 0, GCSH_STDOUT, "x\nx\nx\n");
    add(&k, 1, GCSH_STDOUT, "x\n");
    due(&k, "11");
    CHECK(strcmp(k.obuf, "[0-1] x\n") == 0, "what both have: %s", k.obuf);
    due(&k, "11");
    CHECK(strcmp(k.obuf, "[0-1] x\n") == 0, "rank 1 is behind: the rest waits: %s", k.obuf);
    add(&k, 1, GCSH_STDOUT, "x\nx\n");
    due(&k, "11");
    CHECK(strcmp(k.obuf, "[0-1] x\n[0-1] x\n[0-1] x\n") == 0, "caught up: %s", k.obuf);
    add(&k, 0, GCSH_STDOUT, "x\ny\n");
    due(&k, "10"); /* rank 1 stopped printing: no wait */
    CHECK(strcmp(k.obuf, "[0-1] x\n[0-1] x\n[0-1] x\n[0] x\n[0] y\n") == 0, "no wait: %s", k.obuf);
    sink_close(&k);

    /* texts that part: each rank's, as before */
    sink_open(&k, 3, GCSH_TAG_ALWAYS);
    add(&k, 0, GCSH_STDOUT, "a\nb\n");
    add(&k, 1, GCSH_STDOUT, "a\nc\n");
    add(&k, 2, GCSH_STDOUT, "a\n");
    flush(&k);
    CHECK(strcmp(k.obuf, "[0,2] a\n[0] b\n[1] a\n[1] c\n") == 0, "parted: %s", k.obuf);
    sink_close(&k);
}

/* Partial lines: printed while the command runs, continued by the same
 * ranks' next text, ended by anything else (issue 39: a progress of dots). */
static void test_partial(void)
{
    sink k;
    sink_open(&k, 2, GCSH_TAG_ALWAYS);
    add(&k, 0, GCSH_STDOUT, "..");
    add(&k, 1, GCSH_STDOUT, ".");
    due(&k, "11");
    CHECK(strcmp(k.obuf, "[0-1] .") == 0 && k.f.open, "dots both have: %s", k.obuf);
    add(&k, 1, GCSH_STDOUT, ".");
    due(&k, "11");
    CHECK(strcmp(k.obuf, "[0-1] ..") == 0, "continued, no new prefix: %s", k.obuf);
    add(&k, 0, GCSH_STDOUT, "\n");
    add(&k, 1, GCSH_STDOUT, "\n");
    flush(&k);
    CHECK(strcmp(k.obuf, "[0-1] ..\n") == 0 && !k.f.open, "ended: %s", k.obuf);
    add(&k, 0, GCSH_STDOUT, "ab");
    due(&k, NULL);
    add(&k, 1, GCSH_STDOUT, "x\n");
    due(&k, NULL);
    CHECK(strcmp(k.obuf, "[0-1] ..\n[0] ab\n[1] x\n") == 0, "another rank's line ends it: %s",
          k.obuf);
    add(&k, 0, GCSH_STDOUT, "c");
    due(&k, NULL);
    gcsh_fold_end_line(&k.f); /* the shell's own line comes */
    CHECK(strcmp(k.obuf, "[0-1] ..\n[0] ab\n[1] x\n[0] c\n") == 0, "ended for the shell: %s",
          k.obuf);
    sink_close(&k);

    /* never: nothing waits, nothing folds */
    sink_open(&k, 2, GCSH_TAG_NEVER);
    add(&k, 0, GCSH_STDOUT, "x\n");
    due(&k, "11");
    CHECK(strcmp(k.obuf, "x\n") == 0, "never: no wait: %s", k.obuf);
    sink_close(&k);
}

/* A rank's text that lacks the newline another rank's has: the same line
 * (the command's end ends it), folded or shown once each, and never a
 * "[r] " line of the newline alone, which no rank printed. */
static void test_last_newline(void)
{
    sink k;
    sink_open(&k, 2, GCSH_TAG_ALWAYS);
    add(&k, 0, GCSH_STDOUT, "val 5");
    add(&k, 1, GCSH_STDOUT, "val 5\n");
    flush(&k);
    CHECK(strcmp(k.obuf, "[0-1] val 5\n") == 0, "rank 0 without its newline: %s", k.obuf);
    add(&k, 0, GCSH_STDOUT, "val 6\n");
    add(&k, 1, GCSH_STDOUT, "val 6");
    flush(&k);
    CHECK(strcmp(k.obuf, "[0-1] val 5\n[0-1] val 6\n") == 0, "rank 1 without: %s", k.obuf);
    add(&k, 0, GCSH_STDOUT, "val");
    add(&k, 1, GCSH_STDOUT, "val 7\n");
    flush(&k);
    CHECK(strcmp(k.obuf, "[0-1] val 5\n[0-1] val 6\n[0] val\n[1] val 7\n") == 0,
          "a line the command ended is whole: no fold on its beginning: %s", k.obuf);
    sink_close(&k);

    sink_open(&k, 4, GCSH_TAG_ALWAYS);
    add(&k, 0, GCSH_STDOUT, "a\nb");
    add(&k, 1, GCSH_STDOUT, "a\nb\n");
    add(&k, 2, GCSH_STDOUT, "a\n");
    add(&k, 3, GCSH_STDOUT, "a\nb\nc");
    flush(&k);
    CHECK(strcmp(k.obuf, "[0-3] a\n[0-1,3] b\n[3] c\n") == 0, "4 ranks, mixed ends: %s", k.obuf);
    sink_close(&k);

    /* the other stream ends a line on the screen: the newline that comes
     * after it finishes that line, and prints nothing */
    sink_open(&k, 2, GCSH_TAG_ALWAYS);
    add(&k, 0, GCSH_STDOUT, "oops");
    add(&k, 0, GCSH_STDERR, "E\n");
    add(&k, 0, GCSH_STDOUT, "\nnext\n");
    add(&k, 1, GCSH_STDOUT, "oops\n");
    add(&k, 1, GCSH_STDERR, "E\n");
    add(&k, 1, GCSH_STDOUT, "next\n");
    flush(&k);
    CHECK(strcmp(k.obuf, "[0-1] oops\n[0-1] next\n") == 0 && strcmp(k.ebuf, "[0-1] E\n") == 0,
          "a stream between: %s|%s", k.obuf, k.ebuf);
    sink_close(&k);
}

/* While the command runs: a line shown with other ranks, then finished by
 * each rank's newline as it comes, is one line; another rank's line ending
 * it on the screen leaves no empty "[r] " line after. */
static void test_newline_later(void)
{
    sink k;
    sink_open(&k, 2, GCSH_TAG_ALWAYS);
    add(&k, 0, GCSH_STDOUT, "val 5");
    add(&k, 1, GCSH_STDOUT, "val 5\n");
    due(&k, "11");
    add(&k, 0, GCSH_STDOUT, "\n");
    due(&k, "11");
    flush(&k);
    CHECK(strcmp(k.obuf, "[0-1] val 5\n") == 0, "rank 0's newline later: %s", k.obuf);
    sink_close(&k);

    sink_open(&k, 2, GCSH_TAG_ALWAYS);
    add(&k, 0, GCSH_STDOUT, "val 5");
    add(&k, 1, GCSH_STDOUT, "val 5\n");
    due(&k, "11");
    flush(&k); /* rank 0 never ends its line: the command's end does */
    CHECK(strcmp(k.obuf, "[0-1] val 5\n") == 0, "never ended: %s", k.obuf);
    sink_close(&k);

    sink_open(&k, 2, GCSH_TAG_ALWAYS);
    add(&k, 0, GCSH_STDOUT, "ab");
    due(&k, NULL);
    add(&k, 1, GCSH_STDOUT, "x\n");
    due(&k, NULL);
    add(&k, 0, GCSH_STDOUT, "\n");
    add(&k, 1, GCSH_STDOUT, "y\n");
    flush(&k);
    CHECK(strcmp(k.obuf, "[0] ab\n[1] x\n[1] y\n") == 0, "rank 0's line ended by rank 1's: %s",
          k.obuf);
    sink_close(&k);

    sink_open(&k, 2, GCSH_TAG_NEVER);
    add(&k, 0, GCSH_STDOUT, "ab");
    due(&k, NULL);
    add(&k, 1, GCSH_STDOUT, "x\n");
    due(&k, NULL);
    add(&k, 0, GCSH_STDOUT, "\n");
    flush(&k);
    CHECK(strcmp(k.obuf, "ab\nx\n") == 0, "never: no empty line: %s", k.obuf);
    sink_close(&k);

    /* a real empty line stays: the rank's line was finished before it */
    sink_open(&k, 2, GCSH_TAG_ALWAYS);
    add(&k, 0, GCSH_STDOUT, "a\n\n");
    add(&k, 1, GCSH_STDOUT, "a\n");
    flush(&k);
    CHECK(strcmp(k.obuf, "[0-1] a\n[0] \n") == 0, "an empty line printed: %s", k.obuf);
    sink_close(&k);
}

/* wrapped(fn, text, indent, width): what gcsh_text_wrap or _path makes of text. */
static const char *wrapped(void (*fn)(gcsh_text *, const char *, const char *, size_t),
                           const char *text, const char *indent, size_t width)
{
    static gcsh_text t;
    gcsh_text_free(&t);
    fn(&t, text, indent, width);
    return t.s ? t.s : "";
}

/* The hang report's lines broken to fit (gcsh_coord_report). */
static void test_wrap(void)
{
    const char *w = wrapped(gcsh_text_wrap, "gcsh: short", "gcsh:   ", 20);
    CHECK(strcmp(w, "gcsh: short") == 0, "a line that fits stays: %s", w);
    w = wrapped(gcsh_text_wrap, "gcsh: one two three four", "gcsh:   ", 16);
    CHECK(strcmp(w, "gcsh: one two\ngcsh:   three\ngcsh:   four") == 0,
          "broken at spaces, the spaces gone: %s", w);
    w = wrapped(gcsh_text_wrap, "gcsh: a\ngcsh: bb cc dd", "gcsh:   ", 13);
    CHECK(strcmp(w, "gcsh: a\ngcsh: bb cc\ngcsh:   dd") == 0, "each line on its own: %s", w);
    /* the line's prefix stays whole: no break in its first strlen(indent) columns */
    w = wrapped(gcsh_text_wrap, "gcsh:   [0] xxxxxxxxxxxx", "gcsh:     ", 14);
    CHECK(strcmp(w, "gcsh:   [0]\ngcsh:     xxxx\ngcsh:     xxxx\ngcsh:     xxxx") == 0,
          "a word longer than the room: cut at the width: %s", w);
    w = wrapped(gcsh_text_wrap, "gcsh: x /a/bb/cc/d", "gcsh: ", 14);
    CHECK(strcmp(w, "gcsh: x\ngcsh: /a/bb/\ngcsh: cc/d") == 0, "a long word: after a '/': %s", w);
    /* a path keeps every character, spaces too */
    w = wrapped(gcsh_text_wrap_path, "gcsh:   /my dir/sub dir/file name", "gcsh:     ", 22);
    CHECK(strcmp(w, "gcsh:   /my dir/\ngcsh:     sub dir/\ngcsh:     file name") == 0,
          "a path: after '/' only, nothing dropped: %s", w);
    w = wrapped(gcsh_text_wrap_path, "gcsh:   /abcdefghijklmnop", "gcsh:     ", 16);
    CHECK(strcmp(w, "gcsh:   /abcdefg\ngcsh:     hijklm\ngcsh:     nop") == 0,
          "a path with no '/' where it must break: at the width: %s", w);
    size_t longest = 0, at = 0;
    w = wrapped(gcsh_text_wrap, "gcsh:   [0-2] in kernel.allreduce #3 for 1.0 s: waits at ll flag 1 "
                                "(set 0, line 0) for [3]'s word (now 0)", "gcsh:     ", 80);
    for (const char *p = w;; p++) {
        if (*p == '\n' || !*p) {
            longest = at > longest ? at : longest;
            at = 0;
            if (!*p)
                break;
        } else
            at++;
    }
    CHECK(longest <= 80 && strstr(w, "\ngcsh:     ") != NULL, "an ll note fits 80: %s", w);
}

int main(void)
{
    test_wrap();
    test_one_place();
    test_streams();
    test_addresses();
    test_tags();
    test_runs();
    test_partial();
    test_last_newline();
    test_newline_later();
    UNIT_END();
}
