#!/usr/bin/env bash
# A workshop seat's pre-flight: can this machine run the lessons?
#
#   bash scripts/preflight.sh [GCSH [RANKS]]     (make preflight)
#
# Checks, in well under a minute: the OS (gcsh needs Linux), the build
# (GCSH, default build/gcsh, runs), the ranks (RANKS, default 4, start,
# answer, and are that many), the backend (and, on the cuda backend with
# fewer GPUs than ranks, that --share-gpu lets them share one and whether
# MPS serves every rank), and every lesson's introduction and first part,
# through the shell as an attendee runs them.  Prints one verdict line,
# "preflight: ready: ..." (exit 0) or "preflight: NOT ready: ..." (exit 1)
# naming the first thing wrong; the session's output is kept in a file the
# line names.  Needs no Lua installed: gcsh carries its own, and finds its
# Lua files beside the binary (build-gpu/gcsh as scripts/gpu-check.sh
# builds it: lua/) or in GCSH_LUA_DIR.
set -u
GCSH=${1:-build/gcsh}
RANKS=${2:-4}
start=$(date +%s)
# No lesson's first part needs NVLink multicast; on shared hosts NCCL's
# NVLS can take the GPUs out of service (as scripts/gpu-check.sh).
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}

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

# Every rank says what it runs on (ranks alike fold into one line): the
# backend, the ranks, whether its GPU is shared, whether MPS serves it
# (gcsh.info().mps: "...; serves this rank: yes|no|unknown"); rank 0 says
# why MPS runs or not.
input="do local i = gcsh.info() or {}; print(('preflight seat %s, %d ranks, shared %s, mps %s'):format(gcsh.backend, size, require('gcsh.lesson').shared_gpu() and 'yes' or 'no', i.mps and (tostring(i.mps):match('serves this rank: (%a+)') or '?') or 'none')) end
if rank == 0 then print('preflight mps-why ' .. tostring((gcsh.info() or {}).mps or 'none'):gsub('; serves this rank: %a+\$', '')) end"
for l in $lessons; do
    input+=$'\n'"print('preflight lesson $l')"$'\n'".lesson $l"$'\n'".next"
done
input+=$'\n'"print('preflight end')"

log=$(mktemp "${TMPDIR:-/tmp}/gcsh-preflight.XXXXXX")
run() { printf '%s\n' "$input" | timeout 50 "$GCSH" -n "$RANKS" "$@" >"$log" 2>&1; }
share=""
run
if grep -q -- "--share-gpu" "$log" && ! grep -q "preflight seat" "$log"; then
    share=" (--share-gpu: fewer GPUs than ranks)"
    run --share-gpu
fi
grep -q "preflight seat" "$log" ||
    verdict NOT "gcsh -n $RANKS did not start: $(grep -m1 . "$log") (all of it: $log)"
grep -q "preflight end" "$log" || verdict NOT "the session did not reach its end in 50 s (all of it: $log)"

# What the ranks run on: one line per group of ranks alike.
seat=$(sed -n 's/.*preflight seat //p' "$log")
backend=$(sed -n '1s/,.*//p' <<<"$seat")
ranks=$(sed -n '1s/^[^,]*, \([0-9]*\) ranks.*/\1/p' <<<"$seat")
[ "$ranks" = "$RANKS" ] || verdict NOT "gcsh -n $RANKS started ${ranks:-no} ranks (all of it: $log)"

# The first lesson whose introduction or first part went wrong.
bad=$(awk '
    /preflight lesson [0-9]+$/ { lesson = $NF }
    lesson != "" && !said && /checkpoint FAILED|stopped at that error|failed while part|stack traceback|not yet: / {
        print "lesson " lesson ": " (/stack traceback/ ? prev : $0); said = 1 }
    { prev = $0 }' "$log")
[ -z "$bad" ] || verdict NOT "$bad (all of it: $log)"

# The seat in words: "cuda, 4 ranks sharing GPUs (...), MPS serves every rank"
on="$backend, $RANKS ranks"
if grep -q ", shared yes," <<<"$seat"; then
    on+=" sharing GPUs${share:- (--share-gpu)}"
    if grep -q ", mps \(no\|?\|unknown\|none\)$" <<<"$seat"; then
        on+=", MPS not serving every rank ($(sed -n 's/.*preflight mps-why //p' "$log" | head -n 1))"
    else
        on+=", MPS serves every rank"
    fi
elif [ "$backend" != host ]; then
    on+=", a GPU each"
fi
rm -f "$log"
verdict "" "$on; every lesson's first part ran ($(echo $lessons | wc -w) lessons, $(($(date +%s) - start)) s)"
