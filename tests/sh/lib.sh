# Helpers for shell tests: source it, call checks, end with `finish`.
# Each test prints FAIL lines with what differed; `finish` prints the closing
# "N passed, N failed[, N skipped]" line that tests/run.sh adds up.
set -u
GCSH="${GCSH:-build/gcsh}"
case "$GCSH" in /*) ;; *) GCSH="$PWD/$GCSH" ;; esac
# gcsh's own folder (flight dumps, notes of unfinished writes): one per test
# under tests/run.sh's, so that what a test's killed gcsh left is said in
# that test only
if [ -n "${GCSH_STATE_DIR:-}" ]; then export GCSH_STATE_DIR="$GCSH_STATE_DIR/$(basename "$0" .sh)"; fi
_pass=0 _fail=0 _skip=0

pass() { _pass=$((_pass + 1)); }
fail() { _fail=$((_fail + 1)); printf 'FAIL %s\n' "$*"; }
skip() { _skip=$((_skip + 1)); printf 'SKIP %s\n' "$*"; }

# context TEXT: what a failed check looked at, indented under its FAIL line:
# all of it up to 40 lines, else its first 15 and last 25 (the end of a
# session is where its last command's output is)
context() {
    local n
    n=$(printf '%s\n' "$1" | wc -l)
    if [ "$n" -le 40 ]; then printf '%s\n' "$1" | sed 's/^/  | /'; return; fi
    printf '%s\n' "$1" | head -n 15 | sed 's/^/  | /'
    echo "  | ... ($((n - 40)) lines)"
    printf '%s\n' "$1" | tail -n 25 | sed 's/^/  | /'
}
# expect_eq NAME GOT WANT
expect_eq() {
    if [ "$2" == "$3" ]; then pass; else
        fail "$1"; printf '  want: %q\n  got:  %q\n' "$3" "$2"; fi
}
# expect_contains NAME HAYSTACK NEEDLE (fixed string; it may span lines)
expect_contains() {
    if [[ "$2" == *"$3"* ]]; then pass; else
        fail "$1: missing '$3'"; context "$2"; fi
}
expect_not_contains() {
    if [[ "$2" != *"$3"* ]]; then pass; else
        fail "$1: unexpected '$3'"; context "$2"; fi
}
# expect_all_ranks NAME TEXT LINE N: every rank 0..N-1 printed LINE, folded
# into one "[0-3] LINE" or spread over lines such as "[0,2-3] LINE" and
# "[1] LINE" (ranks that finish after a hang report print apart).
expect_all_ranks() {
    ranks_printed "$1" "$2" "$3" "$4" exact
}
# expect_all_ranks_match NAME OUTPUT REGEX N: the same, for a line matching
# the extended regular expression REGEX (whole line).
expect_all_ranks_match() {
    ranks_printed "$1" "$2" "$3" "$4" regex
}
ranks_printed() {
    local missing
    missing=$(ranks_missing "$2" "$3" "$4" "$5")
    if [ -z "$missing" ]; then pass; else
        fail "$1: ranks$missing did not print '$3'"; context "$2"; fi
}
# ranks_missing OUTPUT LINE N exact|regex: the ranks of 0..N-1 that did not
# print LINE (" 1 3"), however the output folded them
ranks_missing() {
    local seen=() line set part a b r missing="" text
    while IFS= read -r line; do
        if [[ "$line" =~ ^\[([0-9,-]+)\]\ (.*)$ ]]; then
            set=${BASH_REMATCH[1]} text=${BASH_REMATCH[2]}
        elif [ "$3" = 1 ]; then
            set=0 text=$line # one rank: gcsh prints no tags
        else
            continue
        fi
        if [ "$4" = regex ]; then [[ "$text" =~ ^($2)$ ]] || continue
        else [ "$text" == "$2" ] || continue; fi
        for part in ${set//,/ }; do
            a=${part%-*} b=${part#*-}
            for ((r = a; r <= b; r++)); do seen[r]=1; done
        done
    done <<<"$1"
    for ((r = 0; r < $3; r++)); do [ -n "${seen[r]:-}" ] || missing+=" $r"; done
    echo "$missing"
}
# all_said FILE LINE N: every rank of 0..N-1 printed LINE into FILE (under
# load the ranks' lines come apart: "[0] up" and "[1] up", not "[0-1] up")
all_said() { [ -z "$(ranks_missing "$(cat "$1" 2>/dev/null)" "$2" "$3" exact)" ]; }
# Runs a piped session: gcsh_pipe N 'lines' [extra args]; sets OUT and RC.
gcsh_pipe() {
    local n=$1 input=$2; shift 2
    OUT=$(printf '%s\n' "$input" | timeout 60 "$GCSH" -n "$n" "$@" 2>&1); RC=$?
}
# expect_match NAME TEXT ERE: some line of TEXT matches the extended regex.
expect_match() {
    if grep -qE -- "$3" <<<"$2"; then pass; else
        fail "$1: no line matches /$3/"; context "$2"; fi
}
# A tag to put in a gcsh's environment (GCSH_TEST_TAG=$tag): mpirun passes it
# on to every rank, so tagged_pids finds the whole process tree, and nothing
# else on the machine.
# flight_said OUT: the file the last flight-recorder note in OUT names: a
# line "gcsh: flight recorder (every rank's last calls):", then the path on
# "gcsh:   " lines (broken after a '/' onto "gcsh:     " lines when long)
flight_said() {
    awk '/^gcsh: flight recorder \(every rank.s last calls\):$/ { p = ""; at = 1; next }
         at == 1 && /^gcsh:   [^ ]/ { p = substr($0, 9); at = 2; next }
         at == 2 && /^gcsh:     [^ ]/ { p = p substr($0, 11); next }
         { at = 0 }
         END { print p }' <<<"$1"
}
# the first line of that note
FLIGHT_SAID="gcsh: flight recorder (every rank's last calls):"
# lua_checks FILE ARGS...: runs the Lua checker FILE (tests/sh/lesson_lib.lua's
# kind) with lua5.4 from the top of the tree and counts its "pass NAME" and
# "fail NAME" lines, printing the rest; skips when there is no lua5.4
lua_checks() {
    local lua line
    lua=$(command -v lua5.4 || command -v lua)
    if [ -z "$lua" ]; then
        skip "no lua5.4 to run $1 with"
        return
    fi
    while IFS= read -r line; do
        case "$line" in
        "pass "*) pass ;;
        "fail "*) fail "${line#fail }" ;;
        *) printf '%s\n' "$line" ;;
        esac
    done < <("$lua" "$@")
}
# unwrapped TEXT: TEXT with a report's lines joined again where gcsh broke
# them to fit 80 columns (a continuation "gcsh:     ..." becomes " ...")
unwrapped() { sed -e ':a' -e 'N' -e '$!ba' -e 's/\ngcsh:     / /g' <<<"$1"; }
new_tag() { echo "gcsh-test-$$-$RANDOM$RANDOM"; }
tagged_pids() {
    local p
    for p in /proc/[0-9]*; do
        grep -qxzF "GCSH_TEST_TAG=$1" "$p/environ" 2>/dev/null && echo "${p#/proc/}"
    done
}
# rank_pid TAG RANK: the pid of rank RANK of the tagged job, if it runs.
rank_pid() {
    local p
    for p in $(tagged_pids "$1"); do
        grep -qxzF "OMPI_COMM_WORLD_RANK=$2" "/proc/$p/environ" 2>/dev/null && echo "$p"
    done
}
# launcher_pid TAG: the tagged job's gcsh -n process (the one that is no rank).
launcher_pid() {
    local p
    for p in $(tagged_pids "$1"); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = gcsh ] &&
            ! grep -qzF OMPI_COMM_WORLD_RANK "/proc/$p/environ" 2>/dev/null && echo "$p"
    done
}
# piped_while N 'lines' ACTION...: a tagged piped session (TAG, added to TAGS
# for the caller's cleanup) whose input stays open while ACTION runs in the
# input's subshell, once rank N-1 runs; sets OUT and RC.  ACTION sees the
# output so far in $PIPED_OUT (piped_wait_out) and may wait for the end
# (job_gone); the input closes when it returns.
piped_while() {
    local n=$1 lines=$2 i; shift 2
    TAG=$(new_tag); TAGS+=("$TAG")
    PIPED_OUT=${TMP:?piped_while needs TMP}/piped.out PIPED_N=$n
    (printf '%s\n' "$lines"
     for i in $(seq 100); do [ -n "$(rank_pid "$TAG" $((n - 1)))" ] && break; sleep 0.1; done
     "$@") | GCSH_TEST_TAG=$TAG timeout -k 10 90 "$GCSH" -n "$n" >"$PIPED_OUT" 2>&1; RC=$?
    OUT=$(cat "$PIPED_OUT")
}
# piped_wait_out TEXT [SECONDS]: until piped_while's output holds TEXT.
piped_wait_out() { wait_until "${2:-60}" grep -qF -- "$1" "$PIPED_OUT"; }
# piped_wait_all LINE [SECONDS [N]]: until every rank (of N: those that
# print it) printed LINE there.
piped_wait_all() { wait_until "${2:-60}" all_said "$PIPED_OUT" "$1" "${3:-$PIPED_N}"; }
# job_gone [SECONDS]: until no process of the session $TAG is left.
job_gone() { wait_until "${1:-30}" no_tagged_pids "$TAG"; }
no_tagged_pids() { [ -z "$(tagged_pids "$1")" ]; }
# expect_no_procs NAME TAG: no tagged process is left (they get 20 s to go:
# a node's Open MPI daemon whose ranks were killed gives them
# odls_base_sigkill_timeout, 5 s, before it goes itself, and a loaded machine
# adds to that; a leftover stays for good, so the bound only decides how
# long a failure takes).
expect_no_procs() {
    local i left
    for i in $(seq 200); do
        left=$(tagged_pids "$2")
        [ -z "$left" ] && { pass; return; }
        sleep 0.1
    done
    fail "$1: processes left behind"
    for i in $left; do printf '  | %s %s\n' "$i" "$(tr '\0' ' ' <"/proc/$i/cmdline" 2>/dev/null)"; done
    kill $left 2>/dev/null
}
# ---- a session fed line by line (needs TMP and TAGS): bg_start N [options];
# bg_line TEXT; bg_wait_out TEXT [SECONDS]; bg_end (sets OUT, RC).  BG is the
# launcher's pid (signals from outside go there), TAG the session's tag.
bg_start() {
    TAG=$(new_tag); TAGS+=("$TAG")
    rm -f "$TMP/in" "$TMP/out"
    mkfifo "$TMP/in"
    GCSH_TEST_TAG=$TAG "$GCSH" -n "$@" <"$TMP/in" >"$TMP/out" 2>&1 &
    BG=$!
    exec 7>"$TMP/in"
}
bg_line() { printf '%s\n' "$1" >&7; }
bg_wait_out() { # TEXT [SECONDS]: until the output holds TEXT
    local i
    for ((i = 0; i < ${2:-60} * 10; i++)); do
        grep -qF -- "$1" "$TMP/out" && return 0
        sleep 0.1
    done
    return 1
}
bg_wait_all() { # LINE N [SECONDS]: until every rank of N printed LINE
    wait_until "${3:-60}" all_said "$TMP/out" "$1" "$2"
}
bg_end() { # [SECONDS]: its input closed, until it ends (120 s; then a FAIL
    # with the session's output, and it is ended: a hang fails the test, not
    # the run's time limit, and says where it was)
    exec 7>&-
    if ! wait_until "${1:-120}" bg_gone; then
        fail "the session did not end within ${1:-120} s of its input's end"
        context "$(cat "$TMP/out")"
        kill -TERM "$BG" 2>/dev/null
        wait_until 10 bg_gone || kill_tagged
    fi
    wait "$BG"; RC=$?
    OUT=$(cat "$TMP/out")
}
# bg_gone: the session's launcher has ended (a zombie has)
bg_gone() {
    local st
    st=$(cut -d' ' -f3 "/proc/$BG/stat" 2>/dev/null) || return 0
    [ -z "$st" ] || [ "$st" = Z ]
}
# bg_expect_out NAME TEXT [SECONDS]: a check that the output holds TEXT in time
bg_expect_out() {
    if bg_wait_out "$2" "${3:-60}"; then pass; else
        fail "$1: '$2' did not show within ${3:-60} s"; context "$(cat "$TMP/out")"; fi
}
# ---- driving gcsh in a real terminal: a tmux pane on the caller's own tmux
# server.  tmux_setup makes TMP, SOCK (the server's socket) and TAGS=()
# (start adds the tag of each gcsh) and, on exit, kills the server and the
# tagged processes and removes TMP; the caller may set HIST (the history
# file; unset, gcsh keeps none).  Waits poll every 0.1 s.
tmux_setup() {
    TMP=$(mktemp -d)
    SOCK="$TMP/tmux"
    TAGS=()
    trap tmux_cleanup EXIT
}
tmux_cleanup() {
    command -v tmux >/dev/null && tmux -S "$SOCK" kill-server 2>/dev/null
    tags_cleanup
}
# kill_tagged: kill -9 every process of every session tag in TAGS.
kill_tagged() {
    local t p
    for t in "${TAGS[@]}"; do for p in $(tagged_pids "$t"); do kill -9 "$p" 2>/dev/null; done; done
}
# tags_cleanup: the usual EXIT trap: the tagged sessions killed, $TMP gone.
tags_cleanup() {
    kill_tagged
    rm -rf "$TMP"
}
# need_tmux: a skipped test, and the end of the script, without tmux.
need_tmux() {
    command -v tmux >/dev/null && return 0
    skip "tmux is not installed"
    finish
    exit
}
tm() { tmux -S "$SOCK" "$@"; }
S=""   # the session being driven
# start NAME ARGS...: gcsh ARGS in a new 250x50 pane; the pane then shows EXIT=code.
start() {
    S=$1; shift
    TAG=$(new_tag); TAGS+=("$TAG")
    local cmd="cd '$PWD' && GCSH_HISTORY='${HIST:-}' GCSH_TEST_TAG='$TAG' '$GCSH' $*; echo EXIT=\$?; exec sleep 300"
    tm new-session -d -s "$S" -x 250 -y 50 "$cmd"
}
screen() { tm capture-pane -p -J -N -S - -t "$S" 2>/dev/null | sed -e 's/ *$//'; }
# keys TEXT [KEY...]: types TEXT literally, then presses the named keys (Enter, Tab, C-c).
keys() { tm send-keys -t "$S" -l -- "$1"; shift; [ $# -eq 0 ] || tm send-keys -t "$S" "$@"; }
press() { tm send-keys -t "$S" "$@"; }
# wait_until SECONDS COMMAND...: until COMMAND succeeds (0), or 1 after SECONDS.
wait_until() {
    local i n=$(( ${1%.*} * 10 ))
    shift
    for ((i = 0; i <= n; i++)); do
        "$@" && return 0
        sleep 0.1
    done
    return 1
}
# wait_for TEXT SECONDS [COUNT]: until COUNT lines of the screen hold TEXT.
wait_for() {
    local i n=$(( ${2%.*} * 10 )) want=${3:-1}
    for ((i = 0; i <= n; i++)); do
        [ "$(screen | grep -cF -- "$1")" -ge "$want" ] && return 0
        sleep 0.1
    done
    return 1
}
# check_wait NAME TEXT SECONDS [COUNT]: a test that TEXT shows up in time.
check_wait() {
    if wait_for "$2" "$3" "${4:-1}"; then pass; else
        fail "$1: '$2' did not show within $3 s"; screen | grep -v '^$' | tail -n 25 | sed 's/^/  | /'; fi
}
finish() {
    if [ $_skip -gt 0 ]; then echo "$_pass passed, $_fail failed, $_skip skipped"
    else echo "$_pass passed, $_fail failed"; fi
    [ $_fail = 0 ]
}

# ---- a job in the background, ended by a signal (sigterm.sh, sigterm_once.sh);
# the caller keeps PIDS=() and kills what is left at exit
# start_bg NAME CMD...: CMD in the background, its output in $TMP/NAME.out,
# tagged (TAG); P is its pid (gcsh -n's launcher when CMD is gcsh)
start_bg() {
    local name=$1
    shift
    TAG=$(new_tag); TAGS+=("$TAG")
    GCSH_TEST_TAG=$TAG timeout -k 5 20 "$@" >"$TMP/$name.out" 2>&1 </dev/null &
    P=$!
    PIDS+=("$P")
}
# wait_file FILE: until the Lua code wrote FILE (60 s at most)
wait_file() { wait_until 60 test -e "$1"; }
# after_kill SIG PID: sends SIG, waits for the job; RC, SECS (whole seconds
# from the signal to the end) and OUT (of $TMP/$NAME.out)
after_kill() {
    local t0
    t0=$(date +%s%N)
    kill -"$1" "$2"
    wait "$P"; RC=$?
    SECS=$((($(date +%s%N) - t0) / 1000000000))
}
# within NAME LIMIT: the job ended within LIMIT seconds of the signal
within() {
    if [ "$SECS" -lt "$2" ]; then pass; else fail "$1: took $SECS s (limit $2)"; fi
}
# the pid of `timeout`'s child: the launcher
child_of() { pgrep -P "$1" | head -n 1; }
mark() { printf 'io.open("%s", "w"):close()' "$1"; }
