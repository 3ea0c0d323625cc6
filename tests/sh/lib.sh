# Helpers for shell tests: source it, call checks, end with `finish`.
# Each test prints FAIL lines with what differed; `finish` prints the closing
# "N passed, N failed[, N skipped]" line that tests/run.sh adds up.
set -u
GCSH="${GCSH:-build/gcsh}"
case "$GCSH" in /*) ;; *) GCSH="$PWD/$GCSH" ;; esac
_pass=0 _fail=0 _skip=0

pass() { _pass=$((_pass + 1)); }
fail() { _fail=$((_fail + 1)); printf 'FAIL %s\n' "$*"; }
skip() { _skip=$((_skip + 1)); printf 'SKIP %s\n' "$*"; }

# expect_eq NAME GOT WANT
expect_eq() {
    if [ "$2" == "$3" ]; then pass; else
        fail "$1"; printf '  want: %q\n  got:  %q\n' "$3" "$2"; fi
}
# expect_contains NAME HAYSTACK NEEDLE (fixed string; it may span lines)
expect_contains() {
    if [[ "$2" == *"$3"* ]]; then pass; else
        fail "$1: missing '$3'"; printf '%s\n' "$2" | head -n 30 | sed 's/^/  | /'; fi
}
expect_not_contains() {
    if [[ "$2" != *"$3"* ]]; then pass; else
        fail "$1: unexpected '$3'"; printf '%s\n' "$2" | head -n 30 | sed 's/^/  | /'; fi
}
# Runs a piped session: gcsh_pipe N 'lines' [extra args]; sets OUT and RC.
gcsh_pipe() {
    local n=$1 input=$2; shift 2
    OUT=$(printf '%s\n' "$input" | timeout 60 "$GCSH" -n "$n" "$@" 2>&1); RC=$?
}
# expect_match NAME TEXT ERE: some line of TEXT matches the extended regex.
expect_match() {
    if grep -qE -- "$3" <<<"$2"; then pass; else
        fail "$1: no line matches /$3/"; printf '%s\n' "$2" | head -n 30 | sed 's/^/  | /'; fi
}
# A tag to put in a gcsh's environment (GCSH_TEST_TAG=$tag): mpirun passes it
# on to every rank, so tagged_pids finds the whole process tree, and nothing
# else on the machine.
new_tag() { echo "gcsh-test-$$-$RANDOM$RANDOM"; }
tagged_pids() {
    local p
    for p in /proc/[0-9]*; do
        grep -qxzF "GCSH_TEST_TAG=$1" "$p/environ" 2>/dev/null && echo "${p#/proc/}"
    done
}
# expect_no_procs NAME TAG: no tagged process is left (they get 5 s to go).
expect_no_procs() {
    local i left
    for i in $(seq 50); do
        left=$(tagged_pids "$2")
        [ -z "$left" ] && { pass; return; }
        sleep 0.1
    done
    fail "$1: processes left behind"
    for i in $left; do printf '  | %s %s\n' "$i" "$(tr '\0' ' ' <"/proc/$i/cmdline" 2>/dev/null)"; done
    kill $left 2>/dev/null
}
finish() {
    if [ $_skip -gt 0 ]; then echo "$_pass passed, $_fail failed, $_skip skipped"
    else echo "$_pass passed, $_fail failed"; fi
    [ $_fail = 0 ]
}
