#!/usr/bin/env bash
# Files are never inherited from someone else, and gcsh's own are private
# (issue 35, findings 6, 7 and 10).  Where the test runs as root, the
# attacker is another user (nobody, through setpriv) planting files in a
# sticky shared folder, as in /tmp: a planted trace, recording or flight
# file is refused naming its owner, never taken over (no set-id root file);
# --replay refuses a recording others could change unless --trust FILE.
# Everywhere: modes from the umask, gcsh's folder 0700 with 0600 files, the
# newest 20 dumps kept, a killed writer's temporaries found at the next
# start, and a lost rank's report with a large flight recorder.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d /tmp/gcsh-files-security-XXXXXX) # not in $TMPDIR: the attacker must reach it
TAGS=()
trap 'exec 7>&- 2>/dev/null; tags_cleanup; rm -rf "$TMP"' EXIT
chmod 711 "$TMP" # the attacker can reach the shared folder below, not list this one
SH=$TMP/shared   # as /tmp: everyone may write, no one may replace another's file
mkdir -m 1777 "$SH"
STATE=$TMP/state
export GCSH_STATE_DIR=$STATE

run() { OUT=$(timeout 120 "$GCSH" "$@" 2>&1 </dev/null); RC=$?; }
piped() { local in=$1; shift; OUT=$(printf '%s\n' "$in" | timeout 120 "$GCSH" "$@" 2>&1); RC=$?; }
mode() { stat -c %a "$1"; }
owner() { stat -c %U "$1"; }

attacker=""
if [ "$(id -u)" != 0 ]; then
    skip "not root: the attacker's cases (another user's planted files)"
elif ! command -v setpriv >/dev/null; then
    skip "setpriv is missing: the attacker's cases"
else
    attacker=yes
fi
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }

# ---- modes from the umask, never from the file that was there
F=$TMP/own.json
run -n 2 --trace "$F" -e 'comm.world():barrier()'
expect_eq "a new trace: exit 0" "$RC" 0
expect_eq "a new trace: 0666 less the umask (022)" "$(mode "$F")" 644
chmod 6777 "$F"
OUT=$(umask 027; timeout 120 "$GCSH" -n 2 --trace "$F" -e 'comm.world():barrier()' 2>&1 </dev/null); RC=$?
expect_eq "a replaced 6777 trace: exit 0" "$RC" 0
expect_eq "a replaced 6777 trace: the umask's mode (027), no set-id bit" "$(mode "$F")" 640
piped 'print(1)' --record "$TMP/own.lua"
expect_eq "a recording: 0644" "$(mode "$TMP/own.lua")" 644

if [ -n "$attacker" ]; then
    # ---- planted files in a shared folder: refused, never taken over
    for w in trace record flight; do
        T=$SH/planted.$w
        as_nobody sh -c "echo planted >'$T' && chmod 6777 '$T'"
        case $w in
        trace) run -n 2 --trace "$T" -e 'comm.world():barrier()' ;;
        record) piped 'print(1)' -n 2 --record "$T" ;;
        flight) piped ".flight $T" -n 2 ;;
        esac
        expect_contains "$w: another user's planted file: refused naming the owner" "$OUT" \
            "cannot write $T: it belongs to nobody (uid 65534); gcsh replaces only files of yours"
        if [ "$RC" != 0 ]; then pass; else fail "$w: a refused planted file: exit 0"; fi
        expect_eq "$w: the planted file is still the attacker's" "$(owner "$T"):$(cat "$T")" "nobody:planted"
    done
    expect_eq "no set-id file of root's in the shared folder" "$(find "$SH" -user root -perm /6000)" ""
    expect_eq "no temporary left in the shared folder" "$(find "$SH" -name '.*' -type f)" ""

    # ---- --replay: a recording others could change is refused, --trust runs it
    piped 'print(1)' --record "$TMP/rec.lua"
    run --replay "$TMP/rec.lua"
    expect_eq "replay of one's own 0644 recording: exit 0" "$RC" 0
    as_nobody cp "$TMP/rec.lua" "$SH/theirs.lua"
    as_nobody chmod 666 "$SH/theirs.lua"
    run --replay "$SH/theirs.lua"
    expect_eq "replay of another user's recording: usage error (128)" "$RC" 128
    expect_contains "replay of another user's recording: why" "$OUT" \
        "gcsh: --replay: $SH/theirs.lua belongs to nobody (uid 65534); gcsh runs only a recording that no one but you (or root) can change (--trust $SH/theirs.lua runs it anyway)"
    expect_not_contains "replay of another user's recording: nothing ran" "$OUT" "gcsh[0]>"
    run --replay "$SH/theirs.lua" --trust "$SH/theirs.lua"
    expect_eq "--trust FILE: it runs (exit 0)" "$RC" 0
    expect_contains "--trust FILE: it ran" "$OUT" "gcsh: replay: 1 line of $SH/theirs.lua matches"
    run --replay "$SH/theirs.lua" --trust "$TMP/rec.lua"
    expect_eq "--trust another file: usage error" "$RC" 128
    expect_contains "--trust another file: said" "$OUT" "'--trust FILE' names the recording that --replay FILE runs"
    # root's own, but world-writable
    cp "$TMP/rec.lua" "$TMP/ww.lua" && chmod 666 "$TMP/ww.lua"
    run --replay "$TMP/ww.lua"
    expect_eq "a world-writable recording of root's: refused (128)" "$RC" 128
    expect_contains "a world-writable recording: why" "$OUT" "$TMP/ww.lua can be changed by others (mode 0666)"
    # root's own 0644, in a folder the attacker owns, or may write to
    mkdir "$TMP/theirdir" && cp "$TMP/rec.lua" "$TMP/theirdir/r.lua" && chown nobody "$TMP/theirdir"
    run --replay "$TMP/theirdir/r.lua"
    expect_eq "a recording in another user's folder: refused" "$RC" 128
    expect_contains "in another user's folder: why" "$OUT" "$TMP/theirdir/r.lua is in $TMP/theirdir, a folder of nobody (uid 65534), who could replace it"
    mkdir -m 777 "$TMP/open" && chmod 777 "$TMP/open" && cp "$TMP/rec.lua" "$TMP/open/r.lua"
    run --replay "$TMP/open/r.lua"
    expect_eq "a recording in a world-writable folder: refused" "$RC" 128
    expect_contains "in a world-writable folder: why" "$OUT" "$TMP/open/r.lua is in $TMP/open, which others can write to (mode 0777)"
    ln -s "$TMP/open" "$TMP/link"
    run --replay "$TMP/link/r.lua"
    expect_eq "through a link to that folder: refused" "$RC" 128
    # a sticky folder (as /tmp) with a safe file in it: runs
    cp "$TMP/rec.lua" "$SH/mine.lua"
    run --replay "$SH/mine.lua"
    expect_eq "root's 0644 recording in a sticky shared folder: runs" "$RC" 0
fi

# ---- gcsh's folder: made 0700, its dumps 0600 and unpredictable, 20 kept
mkdir -p -m 700 "$STATE"
for i in $(seq 1 24); do
    touch -d "2 days ago $i minutes ago" "$STATE/gcsh-flight-1$i-0123456789abcdef.json"
done
touch -d "3 days ago" "$STATE/notes.txt"
OUT=$(printf '%s\n' 'c = comm.world()' 'api_key = "typed-s3cret-4711"' 'c:barrier()' "if rank == 1 then gcsh.debug.inject('fatal') end c:barrier()" |
      GCSH_TEST_FAULTS=1 timeout 120 "$GCSH" -n 2 2>&1); RC=$?
expect_eq "a device fault: exit 70" "$RC" 70
D=$(flight_said "$OUT")
expect_match "the dump: in gcsh's folder, named unpredictably" "$D" \
    "^$STATE/gcsh-flight-[0-9]+-[0-9a-f]{16}\.json$"
expect_eq "the dump: 0600" "$(mode "${D:-/dev/null}")" 600
# finding 7: the dump holds the lines typed; another user cannot read them
expect_contains "the dump holds the lines typed" "$(cat "${D:-/dev/null}")" "typed-s3cret-4711"
if [ -n "$attacker" ]; then
    if as_nobody cat "${D:-/dev/null}" >/dev/null 2>&1; then fail "another user reads the dump"; else pass; fi
    expect_eq "another user finds no typed line in gcsh's folder" \
        "$(as_nobody grep -rl typed-s3cret "$STATE" 2>/dev/null)" ""
fi
expect_eq "the newest 20 dumps kept" "$(ls "$STATE" | grep -c '^gcsh-flight-.*\.json$')" 20
if [ -e "$STATE/gcsh-flight-11-0123456789abcdef.json" ] || [ -e "$STATE/gcsh-flight-15-0123456789abcdef.json" ]; then
    pass; else fail "the newest old dumps are among those kept"; fi
if [ ! -e "$STATE/gcsh-flight-124-0123456789abcdef.json" ]; then pass; else fail "the oldest dump was not removed"; fi
expect_eq "a file not named as a dump is left" "$(ls "$STATE/notes.txt" 2>&1)" "$STATE/notes.txt"
NEW=$TMP/fresh/gcsh
OUT=$(printf '.flight\n' | GCSH_STATE_DIR=$NEW timeout 60 "$GCSH" 2>&1)
expect_match ".flight: the default path" "$OUT" "^flight recorder: $NEW/gcsh-flight-[0-9]+-[0-9a-f]{16}\.json$"
expect_eq "a missing folder: made 0700" "$(mode "$NEW")" 700
expect_eq "a missing folder's missing parent: made 0700" "$(mode "$TMP/fresh")" 700

# a folder gcsh refuses: the dump is not written, the session says why
mkdir -m 755 "$TMP/open755"
OUT=$(printf '.flight\n' | GCSH_STATE_DIR=$TMP/open755 timeout 60 "$GCSH" 2>&1)
expect_contains "a folder open to others: refused" "$OUT" \
    "flight recorder: gcsh's folder $TMP/open755 is open to others (mode 0755): gcsh keeps its files only in a 0700 folder"
mkdir -m 700 "$TMP/real700" && ln -s "$TMP/real700" "$TMP/link700"
OUT=$(printf '.flight\n' | GCSH_STATE_DIR=$TMP/link700 timeout 60 "$GCSH" 2>&1)
expect_contains "a link as the folder: refused" "$OUT" "gcsh's folder $TMP/link700 is a symbolic link"
if [ -n "$attacker" ]; then
    mkdir -m 700 "$TMP/nobodys" && chown nobody "$TMP/nobodys"
    OUT=$(printf '%s\n' 'c = comm.world()' "if rank == 0 then gcsh.debug.inject('fatal') end c:barrier()" |
          GCSH_STATE_DIR=$TMP/nobodys GCSH_TEST_FAULTS=1 timeout 120 "$GCSH" -n 1 2>&1)
    expect_contains "another user's folder: refused, the dump not written" "$OUT" \
        "gcsh: flight recorder: gcsh's folder $TMP/nobodys belongs to nobody (uid 65534)"
    expect_eq "another user's folder: nothing written in it" "$(ls -A "$TMP/nobodys")" ""
fi

# ---- what a killed writer left: named (the user's) or removed (gcsh's own)
mkdir "$TMP/rec"
bg_start 1 --record "$TMP/rec/r.lua"
bg_line 'print("one")'
bg_wait_out "one" 60 || fail "the recording session did not answer"
LEFT=$(ls -A "$TMP/rec" | grep '^\.r\.lua\.[0-9a-f]\{16\}$')
expect_match "the recording's temporary, while it runs" "$LEFT" '^\.r\.lua\.[0-9a-f]{16}$'
run -e 'print("meanwhile")'
expect_not_contains "a live writer's temporary: not named" "$OUT" "killed"
kill -9 "$(rank_pid "$TAG" 0)"
bg_end
# gcsh's own temporary, as a dump killed midway leaves it
printf 'remove\n%s\n%s\n' "$STATE/.gcsh-flight-7-00.json.0123456789abcdef" "$STATE/gcsh-flight-7-00.json" >"$STATE/.writing-0123456789abcdef"
echo '{"traceEvents":[' >"$STATE/.gcsh-flight-7-00.json.0123456789abcdef"
run -e 'print("next")'
expect_contains "the next start names the recording's temporary" "$OUT" \
    "gcsh: $TMP/rec/$LEFT is what a gcsh that was killed had written of $TMP/rec/r.lua (unfinished; gcsh leaves it to you)"
expect_contains "the next start removes gcsh's own temporary" "$OUT" \
    "gcsh: removed $STATE/.gcsh-flight-7-00.json.0123456789abcdef: the unfinished $STATE/gcsh-flight-7-00.json of a gcsh that was killed"
if [ -e "$TMP/rec/$LEFT" ]; then pass; else fail "the user's temporary is left to them"; fi
if [ ! -e "$STATE/.gcsh-flight-7-00.json.0123456789abcdef" ]; then pass; else fail "gcsh's own temporary was not removed"; fi
run -e 'print("again")'
expect_not_contains "said once" "$OUT" "killed"

# ---- finding 10: a rank killed at the prompt with a large flight recorder
# (mpirun kills the job about 1 s after: the dump must be quick)
export GCSH_FLIGHT_CALLS=100000
bg_start 2
unset GCSH_FLIGHT_CALLS
bg_line 'for i = 1, 120000 do tensor.new(1) end print("up")'
if bg_wait_out "[0-1] up" 150; then
    kill -9 "$(rank_pid "$TAG" 1)"
    bg_wait_out "every rank exits with status" 60 # (the input stays open until then)
    bg_end
    expect_eq "a large recorder, a killed rank: exit 69" "$RC" 69
    expect_contains "a large recorder: the lost rank named" "$OUT" "gcsh: rank 1 is gone"
    expect_contains "a large recorder: the session's end said" "$OUT" "gcsh: the session cannot go on without it; every rank exits with status 69"
    D=$(flight_said "$OUT")
    if [ -n "$D" ] && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$D"; then pass; else
        fail "a large recorder: no whole flight file ('$D')"; printf '%s\n' "$OUT" | sed 's/^/  | /'; fi
    expect_contains "a large recorder: the file says what it kept" "$(cat "${D:-/dev/null}")" \
        "the last 4096 of the 100000 calls each rank keeps: the session was ending"
else
    fail "a large recorder: the session did not come up"; sed 's/^/  | /' "$TMP/out"
fi
expect_no_procs "a large recorder: no process left" "$TAG"
finish
