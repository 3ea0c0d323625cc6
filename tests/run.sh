#!/usr/bin/env bash
# Runs every test and ends with the line "N passed, N failed, N skipped".
#   tests/run.sh [path/to/gcsh]
# - C unit tests   tests/unit/test_*.c  (built by `make unit`; each prints its counts)
# - shell tests    tests/sh/*.sh        (piped sessions, command line, a real
#                                        terminal through tmux; each prints its counts)
# - Lua tests      tests/lua/*.lua      (each file under `gcsh -n N` for N = 1, 2, 4;
#                                        one test per file and rank count)
# TESTS=pattern runs only the files whose path contains pattern.
set -u
cd "$(dirname "$0")/.."
export GCSH="${1:-build/gcsh}"
BUILD_DIR=$(dirname "$GCSH")
export LUA_PATH="$PWD/tests/lua/?.lua;;"
export GCSH_HISTORY=""            # tests never touch the user's history
export OMPI_MCA_rmaps_base_oversubscribe=1
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
RANKS="${RANKS:-1 2 4}"
# the flight recorder writes to gcsh's own folder at an interrupt, a hang
# report or a crash: GCSH_STATE_DIR, in a folder of this run's own (TMPDIR
# too), removed at the end
export TMPDIR="$(mktemp -d "${TMPDIR:-/tmp}/gcsh-tests-XXXXXX")"
export GCSH_STATE_DIR="$TMPDIR/state"
trap 'rm -rf "$TMPDIR"' EXIT
PER_TEST_TIMEOUT="${PER_TEST_TIMEOUT:-180}"

passed=0 failed=0 skipped=0
failures=()

selected() { [ -z "${TESTS:-}" ] || [[ "$1" == *"$TESTS"* ]]; }

# Adds the closing "N passed, N failed[, N skipped]" line of a test program.
add_counts() { # name output status
    local line p f s
    line=$(printf '%s\n' "$2" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
    if [ -z "$line" ]; then
        failed=$((failed + 1)); failures+=("$1 (no result line, exit $3)")
        printf '%s\n' "$2" | tail -n 20 | sed 's/^/    /'
        return
    fi
    p=$(sed -E 's/^([0-9]+) passed.*/\1/' <<<"$line")
    f=$(sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/' <<<"$line")
    s=$(sed -nE 's/.*, ([0-9]+) skipped.*/\1/p' <<<"$line")
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + ${s:-0}))
    if [ "$f" != 0 ] || [ "$3" != 0 ]; then
        [ "$f" = 0 ] && failed=$((failed + 1))
        failures+=("$1")
        printf '%s\n' "$2" | grep -E '^(FAIL|not ok)' | head -n 40 | sed 's/^/    /'
    fi
}

echo "== C unit tests"
# GCSH_MAKE_FLAGS: the flags gcsh was built with (make test-asan sets them),
# so the unit tests link against the same objects.
if eval make --no-print-directory -s BUILD="$BUILD_DIR" "${GCSH_MAKE_FLAGS:-}" unit \
        >"$BUILD_DIR/unit-build.log" 2>&1; then
    for t in "$BUILD_DIR"/tests/test_*; do
        [ -x "$t" ] || continue
        selected "$t" || continue
        # build/tests/test_x is not where gcsh looks for its Lua files
        out=$(GCSH_LUA_DIR="$PWD/lua" timeout "$PER_TEST_TIMEOUT" "$t" 2>&1); st=$?
        echo "  $(basename "$t"): $(printf '%s\n' "$out" | tail -n 1)"
        add_counts "$(basename "$t")" "$out" $st
    done
else
    cat "$BUILD_DIR/unit-build.log"
    failed=$((failed + 1)); failures+=("building the unit tests")
fi

echo "== shell tests"
for t in tests/sh/*.sh; do
    case "$t" in */lib.sh) continue ;; esac
    selected "$t" || continue
    out=$(timeout "$PER_TEST_TIMEOUT" bash "$t" 2>&1); st=$?
    echo "  $(basename "$t"): $(printf '%s\n' "$out" | tail -n 1)"
    add_counts "$(basename "$t")" "$out" $st
done

echo "== Lua tests at ranks: $RANKS"
for t in tests/lua/*.lua; do
    case "$t" in */harness.lua) continue ;; esac
    selected "$t" || continue
    for n in $RANKS; do
        out=$(timeout "$PER_TEST_TIMEOUT" "$GCSH" -n "$n" "$t" 2>&1 </dev/null); st=$?
        if [ $st = 0 ]; then
            passed=$((passed + 1))
        else
            failed=$((failed + 1)); failures+=("$t at $n ranks (exit $st)")
            echo "  FAIL $t at $n ranks (exit $st)"
            printf '%s\n' "$out" | tail -n 25 | sed 's/^/    /'
        fi
    done
    echo "  $(basename "$t"): done"
done

if [ ${#failures[@]} -gt 0 ]; then
    echo "== failures"
    printf '  %s\n' "${failures[@]}"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
