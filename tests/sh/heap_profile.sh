#!/usr/bin/env bash
# The live-heap diagnosis of docs/benchmarks.md: scripts/bench/
# asan_heap_profile.c builds warnings as errors and, preloaded into an
# AddressSanitizer program that keeps one block a millisecond, prints two
# profiles where asked; heap_profile_diff.py finds that program's keeping
# as the context that grew most, by its source line.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh

DIR=$(mktemp -d); trap 'rm -rf "$DIR"' EXIT
cat > "$DIR/keeper.c" <<'C'
#include <stdlib.h>
#include <unistd.h>
static void *kept[4000];
int main(void)
{
    for (int i = 0; i < 4000; i++) {
        kept[i] = malloc(100); /* keeper.c:8 */
        usleep(1000);
    }
    return kept[0] == NULL;
}
C
if ! gcc -fsanitize=address -g -o "$DIR/keeper" "$DIR/keeper.c" 2>/dev/null ||
    ! command -v python3 >/dev/null; then
    skip "heap profile: no AddressSanitizer in gcc here, or no python3"
    finish
fi
if out=$(gcc -std=c11 -shared -fPIC -O1 -Wall -Wextra -Werror -o "$DIR/profile.so" \
    scripts/bench/asan_heap_profile.c -lpthread 2>&1); then pass
else fail "scripts/bench/asan_heap_profile.c does not build"; context "$out"; finish; fi

OUT=$(HEAPPROF_AT=0.5,1.5 LD_PRELOAD="$DIR/profile.so" \
    ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0:log_path="$DIR/asan" \
    "$DIR/keeper" 2>&1); RC=$?
expect_match "the preloaded profiler says when it printed" "$RC:$OUT" \
    "^0:asan_heap_profile: pid [0-9]+: profile at [01] s$
asan_heap_profile: pid [0-9]+: profile at [12] s$"
DIFF=$(python3 scripts/bench/heap_profile_diff.py "$DIR"/asan.* --top 1 --frames 1 2>&1)
expect_match "the diff names the keeping line first, with its growth" "$DIFF" \
    "^== .*/asan\.[0-9]+: 2 profiles; first against last
\+[1-9][0-9]* blocks, \+[1-9][0-9]* bytes
    main .*keeper\.c:8$"
finish
