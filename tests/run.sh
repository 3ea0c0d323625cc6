#!/usr/bin/env bash
# Runs every test and ends with the line "N passed, N failed, N skipped".
#   tests/run.sh [-j N] [-t NAME] [path/to/gcsh]
# - C unit tests   tests/unit/test_*.c  (built by `make unit`; each prints its counts)
# - shell tests    tests/sh/*.sh        (piped sessions, command line, a real
#                                        terminal through tmux; each prints its counts)
# - Lua tests      tests/lua/*.lua      (each file under `gcsh -n N` for N = 1, 2, 4;
#                                        one test per file and rank count)
# TESTS="pattern ..." runs only the files whose path contains a pattern; RANKS="2 4"
# chooses the Lua tests' rank counts; QUICK=1 leaves out the shell tests marked
# "# tests/run.sh: slow" (make check).  -t NAME runs one test file (make
# test-one T=NAME): NAME as a path, or a file of tests/unit, tests/sh or
# tests/lua without its folder and suffix (test_dtype or dtype, startup,
# comm_p2p); its whole output is printed if it fails.
#
# Tests run N at a time (-j N or JOBS=N; default: twice the number of cores,
# since a test mostly waits: for mpirun, for its ranks, for a handshake), the
# longest first (their times from the last run, $BUILD/test-times, else
# tests/test-times), so that the run does not end waiting on one long test.
# Each test has folders of its own: TMPDIR, XDG_RUNTIME_DIR and GCSH_STATE_DIR
# (the files gcsh writes by itself) and its output, build/test-logs/NAME/out;
# the results are printed in a fixed order (units, shell, Lua) as soon as
# those before them are in.
# A shell test that cannot share the machine says "# tests/run.sh: alone"
# and runs after the others, by itself.  Each test may run PER_TEST_TIMEOUT
# seconds (300); one that needs longer on a loaded machine says
# "# tests/run.sh: timeout S".
set -u
cd "$(dirname "$0")/.."
JOBS="${JOBS:-$((2 * $(nproc 2>/dev/null || echo 1)))}"
ONE="" ONE_NAME=""
while getopts j:t: opt; do
    case $opt in
        j) JOBS=$OPTARG ;;
        t) ONE_NAME=$OPTARG ;;
        *) echo "usage: tests/run.sh [-j N] [-t NAME] [path/to/gcsh]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || { echo "tests/run.sh: -j (JOBS) must be a count of 1 or more, got '$JOBS'" >&2; exit 2; }
export GCSH="${1:-build/gcsh}"
BUILD_DIR=$(dirname "$GCSH")
export LUA_PATH="$PWD/tests/lua/?.lua;;"
export GCSH_HISTORY=""            # tests never touch the user's history
export OMPI_MCA_rmaps_base_oversubscribe=1
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
RANKS="${RANKS:-1 2 4}"
PER_TEST_TIMEOUT="${PER_TEST_TIMEOUT:-300}"
# each run logs into a folder of its own (another run from this build may go
# on beside it: make test-one while make test runs); the last to end is left
# as $BUILD_DIR/test-logs
LOGS="$(mktemp -d "$BUILD_DIR/test-logs.run-XXXXXX")"
# the flight recorder writes to $TMPDIR at an interrupt, a hang report or a
# crash: into a folder of the test's own, all removed at the end
TMP_ROOT="$(mktemp -d "${TMPDIR:-/tmp}/gcsh-tests-XXXXXX")"
trap 'rm -rf "$TMP_ROOT"' EXIT

# the_one NAME: the one test file NAME names (a unit test: its binary)
the_one() {
    local c found=()
    for c in "$1" {tests/sh/,tests/lua/,tests/unit/,tests/unit/test_}"$1"{,.sh,.lua,.c}; do
        [ -f "$c" ] && [[ " ${found[*]:-} " != *" $c "* ]] && found+=("$c")
    done
    if [ ${#found[@]} != 1 ]; then
        echo "tests/run.sh -t $1: ${#found[@]} test files have that name${found:+: ${found[*]}}" >&2
        return 1
    fi
    case $found in
        tests/unit/*.c) echo "$BUILD_DIR/tests/$(basename "$found" .c)" ;;
        *) echo "$found" ;;
    esac
}
if [ -n "$ONE_NAME" ]; then ONE=$(the_one "$ONE_NAME") || exit 2; fi
selected() {
    local pat
    if [ -n "$ONE" ]; then [ "$1" = "$ONE" ]; return; fi
    [ -z "${TESTS:-}" ] && return 0
    for pat in $TESTS; do [[ "$1" == *"$pat"* ]] && return 0; done
    return 1
}
marked() { grep -qE "^# tests/run.sh: $2( |$)" "$1"; } # FILE MARK: a line "# tests/run.sh: MARK ..."
# time_limit I: seconds test I may run before it counts as hung: a shell
# test that walks every lesson may ask for more with a line
# "# tests/run.sh: timeout S" (a loaded CI machine runs it slowly, not hung)
time_limit() {
    local own=""
    [ "${KIND[$1]}" = sh ] && own=$(sed -n 's/^# tests\/run.sh: timeout \([0-9][0-9]*\).*/\1/p' "${FILE[$1]}" | head -1)
    echo $((${own:-0} > PER_TEST_TIMEOUT ? ${own:-0} : PER_TEST_TIMEOUT))
}

# ---- the list of tests, in the order their results are printed
KIND=() FILE=() NR=()
add() { KIND+=("$1"); FILE+=("$2"); NR+=("${3:-}"); }

passed=0 failed=0 skipped=0
failures=()
echo "== C unit tests"
# GCSH_MAKE_FLAGS: the flags gcsh was built with (make test-asan sets them),
# so the unit tests link against the same objects.
# Only the selected ones are built.
mkdir -p "$BUILD_DIR"
units=()
for t in tests/unit/test_*.c; do
    t="$BUILD_DIR/tests/$(basename "$t" .c)"
    selected "$t" && units+=("$t")
done
if [ ${#units[@]} = 0 ] ||
   eval make --no-print-directory -s BUILD="$BUILD_DIR" "${GCSH_MAKE_FLAGS:-}" '"${units[@]}"' \
        >"$BUILD_DIR/unit-build.log" 2>&1; then
    for t in "${units[@]}"; do add unit "$t"; done
else
    cat "$BUILD_DIR/unit-build.log"
    failed=$((failed + 1)); failures+=("building the unit tests")
fi
for t in tests/sh/*.sh; do
    case "$t" in */lib.sh | */*_lib.sh) continue ;; esac
    selected "$t" || continue
    [ -n "${QUICK:-}" ] && marked "$t" slow && continue
    add sh "$t"
done
for t in tests/lua/*.lua; do
    case "$t" in */harness.lua) continue ;; esac
    selected "$t" || continue
    for n in $RANKS; do add lua "$t" "$n"; done
done
COUNT=${#KIND[@]}
name() { # I: the test's name in test-times and build/test-logs
    case ${KIND[$1]} in lua) echo "$(basename "${FILE[$1]}")@${NR[$1]}" ;; *) basename "${FILE[$1]}" ;; esac
}

# ---- one test, in the background: its output in $LOGS/NAME/out, its exit
# status in rc (written last: the sign it is done), its time in secs
run_one() { # I
    local i=$1 dir="$LOGS/$(name "$1")" t=${FILE[$1]} start=${EPOCHREALTIME/./} st ms
    local tmp="$TMP_ROOT/$1"
    mkdir -p "$dir" "$tmp/tmp" && mkdir -m 0700 "$tmp/run"
    case ${KIND[$i]} in
        # build/tests/test_x is not where gcsh looks for its Lua files
        unit) set -- env GCSH_LUA_DIR="$PWD/lua" "$t" ;;
        sh) set -- bash "$t" ;;
        lua) set -- "$GCSH" -n "${NR[$i]}" "$t" ;;
    esac
    # GCSH_STATE_DIR: gcsh's own folder, where it has one (issue 35's branch)
    TMPDIR="$tmp/tmp" XDG_RUNTIME_DIR="$tmp/run" GCSH_STATE_DIR="$tmp/state" \
        timeout "$(time_limit "$i")" "$@" </dev/null >"$dir/out" 2>&1 &
    # timeout makes a process group of its own, out of the terminal's reach:
    # a stopped run (SIGTERM to this job) passes the signal on
    trap 'kill -TERM $! 2>/dev/null' TERM
    wait $!
    st=$? ms=$(((${EPOCHREALTIME/./} - start) / 1000))
    printf '%d.%d\n' $((ms / 1000)) $((ms % 1000 / 100)) >"$dir/secs"
    echo "$st" >"$dir/rc.new" && mv "$dir/rc.new" "$dir/rc"
}

# ---- the order they start in: the unit tests (seconds, printed first),
# then the longest first
weight() { # I: seconds it took last time, else a guess by kind
    local n w
    n=$(name "$1")
    w=$(awk -v n="$n" '$2 == n { print $1; exit }' "$TIMES" 2>/dev/null)
    [ -n "$w" ] && { echo "$w"; return; }
    case ${KIND[$1]} in sh) echo 30 ;; lua) echo $((2 * NR[$1])) ;; esac
}
TIMES="$BUILD_DIR/test-times"
[ -s "$TIMES" ] || TIMES=tests/test-times
ORDER=() ALONE=()
for i in $(for ((i = 0; i < COUNT; i++)); do
               if [ "${KIND[$i]}" = unit ]; then echo "1 0 $i"; else echo "0 $(weight $i) $i"; fi
           done | sort -k1,1nr -k2,2nr -k3,3n | cut -d' ' -f3); do
    if [ "${KIND[$i]}" = sh ] && marked "${FILE[$i]}" alone; then ALONE+=("$i"); else ORDER+=("$i"); fi
done

# ---- the results, printed in list order as they come in
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
        # each FAIL line with its context ("  | ..."), so that a failure in CI,
        # where build/test-logs cannot be read, can be understood from here
        printf '%s\n' "$2" | awk '/^(FAIL|not ok)/ { on = 1; print; next }
                                   on && /^  [|]/ { print; next } { on = 0 }' |
            head -n 120 | sed 's/^/    /'
    fi
}
# headers KIND: the section headers up to KIND's, each once
SECTIONS=(unit sh lua) headed=1   # the units' header is out already
headers() {
    while [ "${SECTIONS[$((headed - 1))]}" != "$1" ]; do
        case ${SECTIONS[$headed]} in
            sh) echo "== shell tests" ;;
            lua) echo "== Lua tests at ranks: $RANKS" ;;
        esac
        headed=$((headed + 1))
    done
}
report() { # I
    local i=$1 t=${FILE[$1]} out st
    out=$(cat "$LOGS/$(name "$i")/out"); st=$(cat "$LOGS/$(name "$i")/rc")
    headers "${KIND[$i]}"
    case ${KIND[$i]} in
        unit | sh)
            echo "  $(basename "$t"): $(printf '%s\n' "$out" | tail -n 1)"
            add_counts "$(basename "$t")" "$out" "$st" ;;
        lua)
            if [ "$st" = 0 ]; then
                passed=$((passed + 1))
            else
                failed=$((failed + 1)); failures+=("$t at ${NR[$i]} ranks (exit $st)")
                echo "  FAIL $t at ${NR[$i]} ranks (exit $st)"
                printf '%s\n' "$out" | tail -n 25 | sed 's/^/    /'
            fi
            [ "${FILE[$((i + 1))]:-}" = "$t" ] || echo "  $(basename "$t"): done" ;;
    esac
}
shown=0
show_done() {
    while [ "$shown" -lt "$COUNT" ] && [ -e "$LOGS/$(name "$shown")/rc" ]; do
        report "$shown"; shown=$((shown + 1))
    done
}

trap 'kill -TERM $(jobs -p) 2>/dev/null; wait; rm -rf "$LOGS"; exit 130' INT TERM
running=0
for i in "${ORDER[@]}"; do
    while [ "$running" -ge "$JOBS" ]; do wait -n; running=$((running - 1)); show_done; done
    run_one "$i" &
    running=$((running + 1))
done
wait
show_done
for i in "${ALONE[@]}"; do run_one "$i" & wait $!; show_done; done
headers lua

# the times, for the next run's order (a partial run keeps the others')
if [ "$COUNT" -gt 0 ]; then
    { for ((i = 0; i < COUNT; i++)); do echo "$(cat "$LOGS/$(name "$i")/secs") $(name "$i")"; done
      [ -s "$BUILD_DIR/test-times" ] && cat "$BUILD_DIR/test-times"
    } | awk '!seen[$2]++' | sort -k1,1nr >"$LOGS/test-times" &&
        mv "$LOGS/test-times" "$BUILD_DIR/test-times"
fi
rm -rf "$BUILD_DIR/test-logs" && mv "$LOGS" "$BUILD_DIR/test-logs" && LOGS="$BUILD_DIR/test-logs"

if [ ${#failures[@]} -gt 0 ]; then
    # with the last lines of each failed test's output: where only the end
    # of a run's output can be read (a CI summary), that is what is left
    echo "== failures (each test's whole output: $LOGS/NAME/out)"
    for ((i = 0; i < COUNT; i++)); do
        [ "$(cat "$LOGS/$(name "$i")/rc")" = 0 ] && continue
        echo "  $(name "$i") (exit $(cat "$LOGS/$(name "$i")/rc")), its last lines:"
        grep -v '^$' "$LOGS/$(name "$i")/out" | tail -n 6 | cut -c1-160 | sed 's/^/    | /'
    done
    printf '  %s\n' "${failures[@]}"
fi
if [ -n "$ONE" ] && [ "$failed" != 0 ]; then
    for ((i = 0; i < COUNT; i++)); do
        [ "$(cat "$LOGS/$(name "$i")/rc")" = 0 ] && continue
        echo "== $(name "$i"): its whole output"
        cat "$LOGS/$(name "$i")/out"
    done
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
