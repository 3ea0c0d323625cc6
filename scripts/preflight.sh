#!/usr/bin/env bash
# A workshop seat's pre-flight: can this machine run the lessons?
#
#   bash scripts/preflight.sh [GCSH [RANKS]]     (make preflight)
#
# Checks, in well under a minute: the OS (gcsh needs Linux), the build
# (GCSH, default build/gcsh, runs), the ranks (RANKS, default 4, start and
# answer), the backend (and, on the cuda backend with fewer GPUs than
# ranks, that --share-gpu lets them share one; whether MPS serves them),
# and every lesson's introduction and first part, through the shell as an
# attendee runs them.  Prints one verdict line, "preflight: ready: ..." (exit
# 0) or "preflight: NOT ready: ..." (exit 1) naming the first thing wrong;
# the session's output is kept in a file the line names.
set -u
GCSH=${1:-build/gcsh}
RANKS=${2:-4}
start=$(date +%s)

verdict() { # verdict ""|NOT TEXT: the one line, and the exit status
    if [ -z "$1" ]; then echo "preflight: ready: $2"; exit 0; fi
    echo "preflight: NOT ready: $2"
    exit 1
}

case "$RANKS" in ''|*[!0-9]*) verdict NOT "RANKS must be a number of ranks 1..64, got '$RANKS'" ;; esac
[ "$RANKS" -ge 1 ] && [ "$RANKS" -le 64 ] || verdict NOT "RANKS must be a number of ranks 1..64, got '$RANKS'"
[ "$(uname -s)" = Linux ] || verdict NOT "gcsh needs Linux (signalfd, prctl, accept4, pipe2); this is $(uname -s)"
[ -x "$GCSH" ] || verdict NOT "no gcsh at $GCSH (run make first)"
"$GCSH" --version >/dev/null 2>&1 || verdict NOT "$GCSH does not run: $("$GCSH" --version 2>&1 | head -n 1)"

# The lessons, as .lessons lists them: every number.
lessons=$(printf '.lessons\n' | timeout 30 "$GCSH" 2>/dev/null | sed -n 's/^ *\([0-9][0-9]*\)  .*/\1/p')
[ -n "$lessons" ] || verdict NOT ".lessons lists no lesson (are gcsh's Lua files there? GCSH_LUA_DIR)"

input="print('preflight backend ' .. gcsh.backend .. ', ' .. size .. ' ranks')
print('preflight mps ' .. tostring((gcsh.info() or {}).mps or 'none'))"
for l in $lessons; do
    input+=$'\n'"print('preflight lesson $l')"$'\n'".lesson $l"$'\n'".next"
done
input+=$'\n'"print('preflight end')"

log=$(mktemp "${TMPDIR:-/tmp}/gcsh-preflight.XXXXXX")
run() { printf '%s\n' "$input" | timeout 50 "$GCSH" -n "$RANKS" "$@" >"$log" 2>&1; }
share=""
run
if grep -q -- "--share-gpu" "$log" && ! grep -q "preflight backend" "$log"; then
    share=" (--share-gpu: fewer GPUs than ranks)"
    run --share-gpu
fi
grep -q "preflight backend" "$log" ||
    verdict NOT "gcsh -n $RANKS did not start: $(grep -m1 . "$log") (all of it: $log)"
grep -q "preflight end" "$log" || verdict NOT "the session did not reach its end in 50 s (all of it: $log)"

# The first lesson whose introduction or first part went wrong.
bad=$(awk '
    /preflight lesson [0-9]+$/ { lesson = $NF }
    lesson != "" && !said && /checkpoint FAILED|stopped at that error|failed while part|stack traceback|not yet: / {
        print "lesson " lesson ": " (/stack traceback/ ? prev : $0); said = 1 }
    { prev = $0 }' "$log")
[ -z "$bad" ] || verdict NOT "$bad (all of it: $log)"

backend=$(sed -n 's/.*preflight backend \(.*\)$/\1/p' "$log" | head -n 1)
mps=$(sed -n 's/.*preflight mps \(.*\)$/\1/p' "$log" | head -n 1)
case "$backend" in cuda*) [ "$mps" != none ] && backend+=", MPS: $mps" ;; esac
rm -f "$log"
verdict "" "$backend$share; every lesson's first part ran ($(echo $lessons | wc -w) lessons, $(($(date +%s) - start)) s)"
