#!/usr/bin/env bash
# gcsh --replay's reading stage (src/shell/replay_read.h) fed crafted and
# mutated recordings: each bad one ends with a clear error ("gcsh: --replay:
# FILE...") and a non-zero status (125: cannot be replayed here; 128:
# malformed) within bounded time: no crash, no hang, no sanitizer report.
# Designed for ASan too: TESTS=replay_fuzz make test-asan.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
TAG=$(new_tag)
TAGS=("$TAG")
trap tags_cleanup EXIT

# replay FILE [gcsh options]: OUT, RC and MS (how long it took)
replay() {
    local f=$1 t0
    shift
    t0=$(date +%s%N)
    OUT=$(GCSH_TEST_TAG=$TAG timeout -k 5 20 "$GCSH" "$@" --replay "$f" 2>&1 </dev/null); RC=$?
    MS=$((($(date +%s%N) - t0) / 1000000))
}
# clean NAME: the last replay ended by itself, without a crash or a report
# of one, with a status gcsh gives a replay, and said why when it refused
clean() {
    case "$RC" in
        0 | 1) expect_contains "$1: a replay that ran says how it went" "$OUT" "gcsh: replay: " ;;
        125 | 128) expect_contains "$1: refused with a reason" "$OUT" "gcsh: --replay: " ;;
        *) fail "$1: exit $RC (a hang is 124, a crash 134 or 139)"
           printf '%s\n' "$OUT" | head -n 20 | sed 's/^/  | /' ;;
    esac
    local bad
    for bad in "PANIC" "AddressSanitizer" "runtime error:" "Segmentation fault" "core dumped" \
               "Aborted"; do
        expect_not_contains "$1: no '$bad'" "$OUT" "$bad"
    done
}
# refused NAME STATUS TEXT: the last replay was refused with STATUS, saying TEXT
refused() {
    expect_eq "$1: exit $2" "$RC" "$2"
    expect_contains "$1: said" "$OUT" "$3"
    clean "$1"
    if [ "$MS" -lt 10000 ]; then pass; else fail "$1: took $MS ms to refuse"; fi
}

# ---- a real recording: a script with arguments, lines, dot-commands, a
# clock, an error
printf 'print("script", ...)\nx = 1\n' >"$TMP/s.lua"
printf '%s\n' 'print(rank)' '.ranks 1' 'print(gcsh.wtime() >= 0)' 'error("boom")' '.ranks all' '=x' |
    GCSH_TEST_TAG=$TAG timeout 60 "$GCSH" -n 2 --record "$TMP/base.lua" -i "$TMP/s.lua" a b \
    >/dev/null 2>&1
B=$TMP/base.lua
replay "$B"
expect_eq "the base recording replays" "$RC" 0
expect_contains "the base recording: every line" "$OUT" "gcsh: replay: 7 lines of $B match"

# ---- crafted: the attacks of issue 35 and their cousins
HEAD=$(sed -n '1,/^local line = /p' "$B")
craft() { # NAME BODY: a recording with the base's header and BODY
    printf '%s\n%s\n' "$HEAD" "$2" >"$TMP/$1.lua"
}
# metatables (an erroring __index crashed the reader) cannot be set
craft meta_header 'local l = require("gcsh.record").script(setmetatable({}, {__index = function() error("x") end}))'
sed -i '/^local line = /d' "$TMP/meta_header.lua"
replay "$TMP/meta_header.lua"
refused "a header table with an erroring __index" 128 "/meta_header.lua:$(wc -l <<<"$HEAD"): attempt to call a nil value (global 'setmetatable')"

craft empty_name 'line.chunk(1, "0-1", "", "print(1)")
line.finish(1)'
replay "$TMP/empty_name.lua"
refused "line.chunk with an empty name" 128 "malformed recording: line.chunk(...)'s name '' is none a chunk has"

craft far_range 'line(1, "0-1", "print(1)", {out = "[-9000000000000000000-0] 1\n"})
line.finish(1)'
replay "$TMP/far_range.lua"
refused "an output range from -9e18" 128 "line(...).out: its line 1: '-9000000000000000000-0' is no rank list"

craft beyond 'line(1, "0-2", "print(1)")
line.finish(1)'
replay "$TMP/beyond.lua"
refused "ranks beyond the header's count" 128 "line(...)'s ranks: '0-2' names a rank beyond 1; the recording has 2 ranks"

sed '2s/2 ranks/2000000000 ranks/' "$B" >"$TMP/many.lua"
replay "$TMP/many.lua"
refused "2e9 ranks in the header" 128 "its header says 2000000000 ranks; a recording has 1 to 4096 (as gcsh -n)"
expect_not_contains "2e9 ranks: mpirun never started" "$OUT" "mpirun"

craft close 'getmetatable(line).__close = function() while true do end end do local x <close> = line end'
replay "$TMP/close.lua"
refused "a __close on the collector" 128 "attempt to call a nil value (global 'getmetatable')"

craft loop 'while true do end'
replay "$TMP/loop.lua"
refused "a body that loops" 128 "it runs too long for a recording"

craft loop_pcall 'while true do pcall(function() while true do end end) end'
replay "$TMP/loop_pcall.lua"
refused "a loop that catches its own interruption" 128 "it runs too long for a recording"

craft memory 'local t, i = {}, 0 while true do i = i + 1 t[i] = {i, i, i, i} end'
replay "$TMP/memory.lua"
if [ "$RC" = 128 ]; then pass; else fail "a body that eats memory: exit $RC, not 128"; fi
clean "a body that eats memory"

craft gc_loop 'local t = setmetatable({}, {__gc = function() while true do end end})'
replay "$TMP/gc_loop.lua"
refused "a finalizer that loops (no hook reaches it)" 128 "attempt to call a nil value (global 'setmetatable')"

craft swallowed 'pcall(line, 1, "0-9", "x")
line(1, "0-1", "x = 1")
line.finish(1)'
replay "$TMP/swallowed.lua"
refused "a fault the file's own pcall swallows" 128 "'0-9' names a rank beyond 1"

craft binary 'load("\27Lua")()'
replay "$TMP/binary.lua"
refused "no load (binary chunks)" 128 "attempt to call a nil value (global 'load')"

craft unknown_key 'line(1, "0-1", "x = 1", {outt = "[0-1] 1\n"})
line.finish(1)'
replay "$TMP/unknown_key.lua"
refused "an unknown key" 128 "line(...) has the key 'outt' (a string); its keys are out, failed, varies, syntax, exit, exited, wtime, ended, args"

mkfifo "$TMP/fifo.lua"
replay "$TMP/fifo.lua"
refused "a FIFO" 128 "$TMP/fifo.lua is not a regular file"

# at one rank too (no launcher: rank 0 reads it before MPI starts)
printf '%s\n' "#!/usr/bin/env gcsh" "-- gcsh recording (format 2): 1 rank, backend host" \
    'local line = require("gcsh.record").script { ranks = 1, backend = "host" }' \
    'line(1, "0-1", "print(1)")' 'line.finish(1)' >"$TMP/one.lua"
replay "$TMP/one.lua"
refused "one rank: a range beyond it" 128 "'0-1' names a rank beyond 0; the recording has 1 rank"

# ---- a body that loops in a big file (the budget grows with the size) is
# interrupted by SIGINT and SIGTERM: the reading stage takes no signal
# handler (it runs before MPI)
{ cat "$B"; printf -- '-- %s\n' $(seq 1 400000); echo 'while true do end'; } >"$TMP/slow.lua"
# is_gcsh PID: PID runs gcsh now (env has executed it: before, a SIGINT
# meets env's inherited SIG_IGN, under load too)
is_gcsh() { [ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$(readlink -f "$GCSH")" ]; }
for sig in INT TERM; do
    # (bash starts a background job with SIGINT ignored: back to the default)
    env --default-signal=INT "$GCSH" --replay "$TMP/slow.lua" >"$TMP/slow.out" 2>&1 </dev/null &
    P=$!
    wait_until 30 is_gcsh $P || fail "SIG$sig while reading: gcsh did not start"
    sleep 0.3 # (into the reading stage: nothing shows it; a signal before is as good)
    t0=$(date +%s%N) # (the time the signal takes to end it)
    kill -$sig $P
    wait $P; RC=$?
    MS=$((($(date +%s%N) - t0) / 1000000))
    expect_eq "SIG$sig while reading: the signal's status" "$RC" $((128 + $(kill -l $sig)))
    if [ "$MS" -lt 10000 ]; then pass; else fail "SIG$sig while reading: took $MS ms"; fi
done

# ---- generated mutations of the real recording: truncations, type swaps,
# huge numbers, metatables, long strings, ranks beyond the count
python3 tests/sh/replay_fuzz.py "$B" "$TMP/mut" "${FUZZ_SEED:-1}" >"$TMP/cases"
n=0
while read -r f; do
    replay "$f"
    clean "$(basename "$f")"
    n=$((n + 1))
done <"$TMP/cases"
if [ "$n" -ge 60 ]; then pass; else fail "only $n mutations"; fi

finish
