/* The command-line parser (src/shell/cmdline.c) on a table of its own:
 * every form an option takes, the launcher's words, optional values (as
 * issue 20's --share-gpu[=nomps] row is written), errors as one line, and
 * shell-like word splitting. */
#include <stdlib.h>
#include <string.h>

#include "shell/cmdline.h"
#include "unit.h"

typedef struct seen {
    char log[512]; /* "name=value;" per option applied */
} seen;

static int note(void *target, const gcsh_option *row, const char *val, const char *val2)
{
    seen *s = target;
    if (val && strcmp(val, "bad") == 0)
        return -1;
    size_t n = strlen(s->log);
    snprintf(s->log + n, sizeof s->log - n, "%s=%s%s%s;", row->name, val ? val : "(none)",
             val2 ? "," : "", val2 ? val2 : "");
    return 0;
}

static const gcsh_option table[] = {
    {"-e", NULL, OPT_VALUE, "stat", "a statement", 0, note, "run stat"},
    {"-i", NULL, OPT_FLAG, NULL, NULL, 0, note, "interactive"},
    {"-n", "-np", OPT_VALUE, "N", "a count", 1, note, "ranks"},
    {"--timeout", NULL, OPT_VALUE, "S", "seconds", 0, note, "timeout"},
    {"--share-gpu", NULL, OPT_OPTIONAL, "[=nomps]", "nothing or =nomps", 0, note, "share"},
    {"--mca", NULL, OPT_PAIR, "KEY VALUE", "a key and a value", 1, note, "mca"},
    {"--version", "-v", OPT_FLAG, NULL, NULL, 0, note, "versions"},
    {NULL, NULL, 0, NULL, NULL, 0, NULL, NULL},
};

/* Parses the words (argv[0] "gcsh" added); returns the parser's result. */
static int parse(const char *const *words, seen *s, gcsh_cmdline *cl)
{
    char *argv[32] = {"gcsh"};
    int argc = 1;
    while (words[argc - 1])
        argv[argc] = (char *)words[argc - 1], argc++;
    memset(s, 0, sizeof *s);
    return gcsh_cmdline_parse(table, argc, argv, s, cl);
}

static void test_forms(void)
{
    seen s;
    gcsh_cmdline cl;
    const char *w1[] = {"-n2", "-estat", "-e", "x = 1", "--timeout=5", "--timeout", "6", "-i",
                        "script.lua", "-i", NULL};
    CHECK(parse(w1, &s, &cl) == 0, "forms: %s", cl.error);
    CHECK(strcmp(s.log, "-n=2;-e=stat;-e=x = 1;--timeout=5;--timeout=6;-i=(none);") == 0, "%s",
          s.log);
    CHECK(cl.operand == 9, "the script at argv[9]: %d", cl.operand);
    CHECK(cl.launcher_only[1] && !cl.launcher_only[2], "-n2 is the launcher's, one word");
    gcsh_cmdline_free(&cl);

    const char *w2[] = {"-np", "4", "--mca", "k", "v", "--share-gpu", "--share-gpu=nomps", "-v",
                        "--", "-i", NULL};
    CHECK(parse(w2, &s, &cl) == 0, "more forms: %s", cl.error);
    CHECK(strcmp(s.log, "-n=4;--mca=k,v;--share-gpu=(none);--share-gpu=nomps;--version=(none);") == 0,
          "%s", s.log);
    CHECK(cl.launcher_only[1] && cl.launcher_only[2] && cl.launcher_only[3] &&
              cl.launcher_only[4] && cl.launcher_only[5] && !cl.launcher_only[6],
          "-np 4 and --mca k v are the launcher's words");
    CHECK(cl.operand == 10, "after --, -i is the script: %d", cl.operand);
    gcsh_cmdline_free(&cl);

    const char *w3[] = {"-", "x", NULL};
    CHECK(parse(w3, &s, &cl) == 0 && cl.operand == 1, "- is stdin, the script");
    gcsh_cmdline_free(&cl);
}

static void expect_error(const char *const *words, const char *want)
{
    seen s;
    gcsh_cmdline cl;
    int rc = parse(words, &s, &cl);
    CHECK(rc == -1 && strcmp(cl.error, want) == 0, "want '%s', got %d '%s'", want, rc, cl.error);
    gcsh_cmdline_free(&cl);
}

static void test_errors(void)
{
    expect_error((const char *[]){"--bogus", NULL}, "unrecognized option '--bogus'");
    expect_error((const char *[]){"-x", NULL}, "unrecognized option '-x'");
    expect_error((const char *[]){"-ix", NULL}, "unrecognized option '-ix'");
    expect_error((const char *[]){"-e", NULL}, "'-e' needs a statement");
    expect_error((const char *[]){"--timeout", NULL}, "'--timeout' needs seconds");
    expect_error((const char *[]){"--timeout=bad", NULL}, "'--timeout' needs seconds, got 'bad'");
    expect_error((const char *[]){"-nbad", NULL}, "'-n' needs a count, got 'bad'");
    expect_error((const char *[]){"--share-gpu=bad", NULL}, "'--share-gpu' needs nothing or =nomps, got 'bad'");
    expect_error((const char *[]){"--version=1", NULL}, "'--version' takes no value (got '1')");
    expect_error((const char *[]){"--mca", "k", NULL}, "'--mca' needs a key and a value");
    expect_error((const char *[]){"--mca=k", "v", NULL}, "'--mca' takes KEY VALUE as two words");
}

static void test_words(void)
{
    char **w, err[128];
    int n = gcsh_split_words("  --bind-to core -x 'A=two words' \"B=q'd\" C\\ D \"\" ", &w, err,
                             sizeof err);
    CHECK(n == 7, "seven words: %d", n);
    if (n == 7) {
        CHECK(strcmp(w[0], "--bind-to") == 0 && strcmp(w[1], "core") == 0, "plain words");
        CHECK(strcmp(w[3], "A=two words") == 0, "single quotes: %s", w[3]);
        CHECK(strcmp(w[4], "B=q'd") == 0, "double quotes: %s", w[4]);
        CHECK(strcmp(w[5], "C D") == 0, "a backslash: %s", w[5]);
        CHECK(strcmp(w[6], "") == 0 && w[7] == NULL, "an empty word: '%s'", w[6]);
    }
    free(w);
    n = gcsh_split_words("", &w, err, sizeof err);
    CHECK(n == 0 && w[0] == NULL, "no words");
    free(w);
    CHECK(gcsh_split_words("a 'b", &w, err, sizeof err) == -1 && strstr(err, "unclosed '"),
          "an unclosed quote: %s", err);
}

int main(void)
{
    test_forms();
    test_errors();
    test_words();
    UNIT_END();
}
