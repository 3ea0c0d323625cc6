#!/usr/bin/env bash
# Files gcsh writes (src/core/safefile.h), through every writer: --trace,
# --record, .flight, repro.sweep's out=, bench's csv=.  A symbolic link, a
# FIFO, a device (/dev/full) at the target is refused and left as it was;
# an existing NAME.tmp beside it is never touched; a full filesystem (a
# small tmpfs, where this machine lets us mount one) is an error with a
# non-zero exit and the target left as it was, never a "written" message.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
MNT=$TMP/small
trap 'umount "$MNT" 2>/dev/null; rm -rf "$TMP"' EXIT

run() { OUT=$(timeout 120 "$GCSH" "$@" 2>&1 </dev/null); RC=$?; }
piped() { local in=$1; shift; OUT=$(printf '%s\n' "$in" | timeout 120 "$GCSH" "$@" 2>&1); RC=$?; }

SWEEP="repro.sweep{candidate = function(k) return tensor.new(k.n):fill(rank) end,
  reference = function(k) return tensor.new(k.n) end, n = {1}, quiet = true, out = arg[1]}"
echo "$SWEEP" >"$TMP/sweep.lua"
BENCH="require('gcsh.bench').collective{op = 'allreduce', min = 8, max = 8, iters = 2,
  warmup = 1, quiet = true, csv = arg[1]}"
echo "$BENCH" >"$TMP/bench.lua"

# write WRITER TARGET: sets OUT and RC, writing TARGET the WRITER's way
write() {
    case "$1" in
    trace) run -n 2 --trace "$2" -e 'comm.world():barrier()' ;;
    record) piped 'print(1)' -n 2 --record "$2" ;;
    flight) piped ".flight $2" -n 2 ;;
    sweep) run -n 2 "$TMP/sweep.lua" "$2" ;;
    bench) run -n 2 "$TMP/bench.lua" "$2" ;;
    esac
}

for w in trace record flight sweep bench; do
    # a link at the target: refused, the file it points to untouched
    echo "precious" >"$TMP/real.$w"
    ln -sf "$TMP/real.$w" "$TMP/link.$w"
    write "$w" "$TMP/link.$w"
    expect_contains "$w: a link is refused" "$OUT" "cannot write $TMP/link.$w: it is a symbolic link (to $TMP/real.$w); gcsh does not write through links"
    expect_eq "$w: the link's file is untouched" "$(cat "$TMP/real.$w")" "precious"
    if [ "$RC" != 0 ]; then pass; else fail "$w: a refused link: exit 0"; fi
    # a FIFO: refused at once (never opened, so nothing blocks)
    mkfifo "$TMP/fifo.$w"
    write "$w" "$TMP/fifo.$w"
    expect_contains "$w: a FIFO is refused" "$OUT" "cannot write $TMP/fifo.$w: it is a FIFO; gcsh writes only regular files"
    if [ -p "$TMP/fifo.$w" ]; then pass; else fail "$w: the FIFO is no longer one"; fi
    # /dev/full: refused, still a device
    write "$w" /dev/full
    expect_contains "$w: /dev/full is refused" "$OUT" "cannot write /dev/full: it is a character device; gcsh writes only regular files"
    if [ -c /dev/full ]; then pass; else fail "$w: /dev/full is no longer a device"; fi
    if [ "$RC" != 0 ]; then pass; else fail "$w: /dev/full: exit 0"; fi
    # an existing NAME.tmp (and a link planted at NAME.tmp): untouched
    echo "mine" >"$TMP/out.$w.tmp"
    ln -sf "$TMP/real.$w" "$TMP/.out.$w.tmp"
    write "$w" "$TMP/out.$w"
    expect_eq "$w: written beside an existing NAME.tmp: exit 0" "$RC" 0
    expect_eq "$w: NAME.tmp untouched" "$(cat "$TMP/out.$w.tmp")" "mine"
    expect_eq "$w: a link at a guessable name is not followed" "$(cat "$TMP/real.$w")" "precious"
    if [ -s "$TMP/out.$w" ]; then pass; else fail "$w: the target was not written"; fi
    left=$(ls -A "$TMP" | grep -c "^\.out\.$w\.......$")
    expect_eq "$w: no temporary left" "$left" 0
done
# the exit statuses of a refused target: a usage error for the command
# line's files, a failed session for .flight, the script's error for the rest
write trace "$TMP/link.trace"; expect_eq "--trace onto a link: 128" "$RC" 128
write record "$TMP/link.record"; expect_eq "--record onto a link: 128" "$RC" 128
write flight "$TMP/link.flight"; expect_eq ".flight onto a link: 125" "$RC" 125

# ---- a full filesystem
if ! { mkdir -p "$MNT" && mount -t tmpfs -o size=64k tmpfs "$MNT" 2>/dev/null; }; then
    skip "a full filesystem: cannot mount a small tmpfs here (needs root)"
    finish
    exit
fi
fill() { rm -f "$MNT"/*; dd if=/dev/zero of="$MNT/fill" bs=1k count=1000 2>/dev/null; }
# --record: a line's output does not fit; the recording stops, says why, exits 125
fill
rm -f "$MNT/fill"
piped 'print(string.rep("x", 200000))' -n 2 --record "$MNT/r.lua"
expect_contains "--record on a full disk: said" "$OUT" "gcsh: .record: cannot write $MNT/r.lua: No space left on device; the recording stopped"
expect_eq "--record on a full disk: exit 125" "$RC" 125
expect_not_contains "--record on a full disk: no success message" "$OUT" "recording written"
if [ -e "$MNT/r.lua" ]; then fail "--record on a full disk: a file was left at the target"; else pass; fi
# --trace: the file does not fit when written at the end (room for the
# empty one written at the start)
rm -f "$MNT"/*; dd if=/dev/zero of="$MNT/fill" bs=1k count=56 2>/dev/null
run -n 2 --trace "$MNT/t.json" -e 'for i = 1, 200 do tensor.new(1):fill(i) end'
expect_contains "--trace on a full disk: said" "$OUT" "cannot write $MNT/t.json: No space left on device"
expect_not_contains "--trace on a full disk: no success message" "$OUT" "trace written"
expect_eq "--trace on a full disk: exit 125" "$RC" 125
# .flight, sweep out=, bench csv=
fill
piped ".flight $MNT/f.json" -n 2
expect_contains ".flight on a full disk: said" "$OUT" "gcsh: flight recorder: cannot write $MNT/f.json: No space left on device"
expect_eq ".flight on a full disk: exit 125" "$RC" 125
run -n 2 "$TMP/sweep.lua" "$MNT/case.lua"
expect_contains "sweep out= on a full disk: an error" "$OUT" "sweep: out=$MNT/case.lua: cannot write $MNT/case.lua: No space left on device"
expect_eq "sweep out= on a full disk: exit 1" "$RC" 1
run -n 2 "$TMP/bench.lua" "$MNT/b.csv"
expect_contains "bench csv= on a full disk: an error" "$OUT" "bench.collective: cannot write $MNT/b.csv: No space left on device"
expect_eq "bench csv= on a full disk: exit 1" "$RC" 1
left=$(ls -A "$MNT" | grep -vc '^fill$')
expect_eq "a full disk: no temporary left behind" "$left" 0
finish
