/* The wait note (src/core/waitnote.h) that hang reports print: a word's
 * wait names the word's holder and its value now; an element's wait its
 * value; a backend's own note (a GPU kernel's stall record) is its text
 * function's words, and nothing while that function has none; a new
 * begin of another kind forgets the text function, and end forgets all. */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "core/waitnote.h"
#include "unit.h"

/* A backend's record: a stall or none (as cuda's control block). */
typedef struct fake_stall {
    int peer;                /* -1: nothing noted */
    unsigned long long want, seen;
    int calls;
} fake_stall;

static int fake_text(const void *arg, char *buf, size_t len)
{
    fake_stall *s = (fake_stall *)arg; /* (the test's own record: counts its calls) */
    s->calls++;
    if (s->peer < 0)
        return 0;
    snprintf(buf, len, "waits at barrier #%llu for [%d]'s word (now %llu)", s->want, s->peer,
             s->seen);
    return 1;
}

int main(void)
{
    gcsh_wait_note n = {0};
    char buf[128];

    _Atomic uint64_t word = 16;
    gcsh_wait_note_begin(&n, "barrier ready #17", 3, &word, UINT64_MAX, 0);
    CHECK(gcsh_wait_note_text(&n, buf, sizeof buf) &&
              strcmp(buf, "waits at barrier ready #17 for [3]'s word (now 16)") == 0,
          "a word's wait: %s", buf);
    atomic_store(&word, 17);
    CHECK(gcsh_wait_note_text(&n, buf, sizeof buf) && strstr(buf, "(now 17)"),
          "the value is read when the report asks: %s", buf);

    fake_stall s = {.peer = -1};
    gcsh_wait_note_begin_text(&n, fake_text, &s);
    strcpy(buf, "stale");
    CHECK(!gcsh_wait_note_text(&n, buf, sizeof buf) && buf[0] == '\0' && s.calls == 1,
          "a backend note with nothing noted yet prints nothing: '%s'", buf);
    s.peer = 2;
    s.want = 41;
    s.seen = 40;
    CHECK(gcsh_wait_note_text(&n, buf, sizeof buf) &&
              strcmp(buf, "waits at barrier #41 for [2]'s word (now 40)") == 0 && s.calls == 2,
          "a backend note in its own words: %s", buf);

    float x = 2.5f;
    gcsh_wait_note_begin_elem(&n, "element 5", -1, &x, (int)sizeof x, GCSH_F32);
    CHECK(gcsh_wait_note_text(&n, buf, sizeof buf) && strcmp(buf, "element 5 is now 2.5") == 0 &&
              s.calls == 2,
          "an element's wait after a backend note: its own text (%s), the function not called",
          buf);

    gcsh_wait_note_begin_text(&n, fake_text, &s);
    gcsh_wait_note_end(&n);
    CHECK(!gcsh_wait_note_text(&n, buf, sizeof buf) && buf[0] == '\0' && s.calls == 2,
          "after end: nothing, and the backend's function is not called: '%s'", buf);
    UNIT_END();
}
