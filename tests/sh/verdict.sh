#!/usr/bin/env bash
# One verdict for the job from every rank (issue 36): the worst outcome
# (abort >= 128 > bad 1-124 > skip 125 > good 0), no rank's os.exit hiding
# another's error; 125 only from what happened (a file that cannot be read
# or compiled, a module not found), never from an error's text; misuse of
# repro's API is 128.  At 2 and 4 ranks, host backend.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
trap 'umount "$TMP/small" 2>/dev/null; rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1

run() { OUT=$(timeout 120 "$GCSH" "$@" 2>&1 </dev/null); RC=$?; }
# case NAME WANT ARGS...: the job's status is WANT
case_rc() {
    local name=$1 want=$2
    shift 2
    run "$@"
    expect_eq "$name: exit $want" "$RC" "$want"
}

printf 'local M = {\nfunction M.f() return 1 end\nreturn M\n' >broken.lua
printf 'local M = {}\nfunction M.f() return 1 end\nreturn M\n' >helper.lua
mkdir -p adir

for N in 2 4; do
    L=$((N - 1))
    OTHERS=1-$L
    [ $N = 2 ] && OTHERS=1
    # ---- one verdict from every rank
    case_rc "$N ranks: rank 0 os.exit(0), the others fail" 1 -n $N \
        -e 'if rank == 0 then os.exit(0) end; error("rank " .. rank .. " fails")'
    expect_contains "$N ranks: who ended how is said" "$OUT" \
        "[0] os.exit(0), [$OTHERS] failed (1): the session ends; every rank exits with status 1, the worst"
    case_rc "$N ranks: the last rank os.exit(125) while rank 0 fails" 1 -n $N \
        -e "if rank == $L then os.exit(125) end; if rank == 0 then error('rank 0 fails') end"
    case_rc "$N ranks: skip beats good" 125 -n $N -e "if rank == $L then repro.skip('no NVLink') end"
    case_rc "$N ranks: abort beats bad" 128 -n $N \
        -e "if rank == 0 then os.exit(3) elseif rank == $L then repro.abort('stop') end"
    case_rc "$N ranks: bad beats skip, whichever rank" 7 -n $N \
        -e "if rank == 0 then os.exit(125) else os.exit(7) end"
    case_rc "$N ranks: a usage error beats an os.exit(1)" 128 -n $N \
        -e "if rank == $L then os.exit(1) else repro.need{rank = 2} end"
    # ---- --first-failure: the first failing rank's error in full, the
    # others' first line; the status is the same
    case_rc "$N ranks: --first-failure: every rank fails" 1 -n $N --first-failure \
        -e 'local function f() error("rank " .. rank .. " fails") end f()'
    expect_eq "$N ranks: --first-failure: one traceback, one rank's" \
        "$(grep -cE '^\[[0-9]+\] stack traceback:$' <<<"$OUT"):$(grep -c 'stack traceback' <<<"$OUT")" "1:1"
    for r in $(seq 0 $L); do
        expect_contains "$N ranks: --first-failure: rank $r's first line" "$OUT" "] (command line):1: rank $r fails"
    done
    run -n $N -e 'local function f() error("rank " .. rank .. " fails") end f()'
    expect_eq "$N ranks: without it, every rank's traceback" \
        "$(grep -cE '^\[[0-9]+\] stack traceback:$' <<<"$OUT")" "$N"
    case_rc "$N ranks: --first-failure: one rank fails, in full" 1 -n $N --first-failure \
        -e "if rank == $L then error('only me') end"
    expect_contains "$N ranks: --first-failure: its traceback" "$OUT" "[$L] stack traceback:"
    case_rc "$N ranks: every rank os.exit(0)" 0 -n $N -e 'os.exit(0)'
    expect_not_contains "$N ranks: nothing said when all agree" "$OUT" "the session ends"
    # ---- a skip on one rank while the others wait in a collective: the
    # others' check error is the skip's consequence, the job's status 125;
    # a real failure on another rank still wins, and an os.exit(0) that
    # leaves the others waiting is a failure
    for S in 0 $L; do
        case_rc "$N ranks: rank $S repro.skip, the others in a barrier" 125 -n $N \
            -e "c = comm.world() if rank == $S then repro.skip('no NVLink') end c:barrier()"
        expect_contains "$N ranks: rank $S skips: said" "$OUT" "[$S] os.exit(125)"
        expect_contains "$N ranks: rank $S skips: the others failed by it" "$OUT" "failed by that exit (125)"
    done
    # a rank that reaches the barrier late (here by a sleep; under load by
    # the scheduler) fails by the exit too: the verdict is the same whether
    # it is late or not, and a late real failure still wins
    case_rc "$N ranks: rank 0 repro.skip, the last rank late to the barrier" 125 -n $N \
        -e "c = comm.world() if rank == 0 then repro.skip('x') elseif rank == $L then gcsh.sleep(0.3) end c:barrier()"
    case_rc "$N ranks: rank 0 repro.skip, the last rank late and failing" 1 -n $N \
        -e "c = comm.world() if rank == 0 then repro.skip('x') elseif rank == $L then gcsh.sleep(0.3) error('real') end c:barrier()"
    case_rc "$N ranks: rank 0 repro.skip, the last rank fails, the others wait" 1 -n $N \
        -e "c = comm.world() if rank == 0 then repro.skip('x') elseif rank == $L then error('real') end c:barrier()"
    case_rc "$N ranks: rank 0 repro.skip, a rank fails after the check's error" 1 -n $N \
        -e "c = comm.world() if rank == 0 then repro.skip('x') end pcall(c.barrier, c) if rank == $L then error('real') end"
    # the check's error re-raised as it came is the skip's; one that quotes
    # it in a text of its own is the rank's own failure, whatever words
    case_rc "$N ranks: rank 0 repro.skip, the others re-raise the check's error" 125 -n $N \
        -e "c = comm.world() if rank == 0 then repro.skip('x') end local ok, e = pcall(c.barrier, c) error(e)"
    case_rc "$N ranks: rank 0 repro.skip, the others re-raise it at level 0" 125 -n $N \
        -e "c = comm.world() if rank == 0 then repro.skip('x') end local ok, e = pcall(c.barrier, c) error(e, 0)"
    for wrap in '"step 3 failed: " .. e' '"assertion failed: sum wrong (after " .. e .. ")"'; do
        case_rc "$N ranks: rank 0 repro.skip, the others raise ${wrap%% ..*} with the check's text" 1 -n $N \
            -e "c = comm.world() if rank == 0 then repro.skip('x') end local ok, e = pcall(c.barrier, c) error($wrap, 0)"
    done
    case_rc "$N ranks: rank 0 os.exit(0), the others in a barrier" 1 -n $N \
        -e "c = comm.world() if rank == 0 then os.exit(0) end c:barrier()"
    case_rc "$N ranks: rank 0 os.exit(130), the others in a barrier" 130 -n $N \
        -e "c = comm.world() if rank == 0 then os.exit(130) end c:barrier()"
    # a crash is always 69, never the signal's 139
    case_rc "$N ranks: a rank killed by SIGSEGV" 69 -n $N --flight crash.json -e "
        local c = comm.world(); c:barrier()
        if rank == $L then os.execute('kill -SEGV ' .. io.open('/proc/self/stat'):read('n')) end
        gcsh.sleep(60)"
    expect_contains "$N ranks: the crash is named" "$OUT" "rank $L is gone (killed by signal 11"

    # ---- a runtime error is 1 whatever its text
    case_rc "$N ranks: a nil call through a table field" 1 -n $N -e 'local t = {}; t.handler()'
    case_rc "$N ranks: a method that does not exist" 1 -n $N \
        -e 'comm.world():allreduce_fast(tensor.new(4))'
    case_rc "$N ranks: a global table that does not exist" 1 -n $N -e 'kernel_v2.reduce()'
    case_rc "$N ranks: a wrapped error" 1 -n $N \
        -e 'local ok, e = pcall(require, "no_such_module"); error("wrapped: " .. e)'
    case_rc "$N ranks: an optional module caught, then a bug" 1 -n $N \
        -e 'pcall(require, "no_such_module"); error("the bug")'

    # ---- 125 from structure
    case_rc "$N ranks: a directory as the script" 125 -n $N adir
    expect_contains "$N ranks: a directory: why" "$OUT" "gcsh: cannot read adir: Is a directory"
    case_rc "$N ranks: a missing script" 125 -n $N missing.lua
    case_rc "$N ranks: a missing module" 125 -n $N -e 'local m = require("no_such_module")'
    case_rc "$N ranks: -l of a missing module" 125 -n $N -l no_such_module -e 'print(1)'
    case_rc "$N ranks: -l of a module that does not compile" 125 -n $N -l broken -e 'print(1)'
    case_rc "$N ranks: a missing dofile" 125 -n $N -e 'dofile("no_such_file.lua")'
    for how in 'require("broken")' 'dofile("broken.lua")' 'loadfile("broken.lua")()' \
               'assert(loadfile("broken.lua"))()' 'local ok = pcall(require, "broken"); require("broken").f()'; do
        case_rc "$N ranks: a helper that does not compile, through $how" 125 -n $N -e "$how"
    done
    case_rc "$N ranks: a helper that compiles, then a bug" 1 -n $N -e 'require("helper").f(); error("bug")'

    # ---- misuse of repro's API: 128 with the message
    case_rc "$N ranks: repro.need{rank=2}" 128 -n $N -e 'repro.need{rank = 2}'
    expect_contains "$N ranks: repro.need: the message" "$OUT" \
        "(command line):1: repro.need: unknown option 'rank' (valid: ranks gpu)"
    case_rc "$N ranks: a bad repro.expect argument" 128 -n $N -e 'repro.expect(1, tensor.new(2))'
    expect_contains "$N ranks: repro.expect: the message" "$OUT" \
        "bad argument #1 to 'repro.expect' (tensor expected, got number)"
    case_rc "$N ranks: a bad sweep option" 128 -n $N \
        -e 'local f = function() return tensor.new(1) end
            repro.sweep{candidate = f, reference = f, n = {1}, size = 3}'
    expect_contains "$N ranks: sweep: the message" "$OUT" "sweep: unknown option 'size'"
    case_rc "$N ranks: misuse caught by pcall is no verdict" 0 -n $N -e 'pcall(repro.need, {rank = 2})'
done

# ---- --deadline: the whole job ends, with a hang report and the flight file
# flight_ranks FILE: the ranks (trace pids) with a process in the flight file
flight_ranks() {
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(",".join(str(p) for p in sorted({e["pid"] for e in d["traceEvents"]})))' "$1" 2>&1
}
deadline_case() { # NAME N WANT SECONDS CHUNK [options]
    local name=$1 n=$2 want=$3 secs=$4 chunk=$5 start=$SECONDS
    shift 5
    rm -f flight.json
    run -n "$n" --flight flight.json "$@" -e "$chunk"
    expect_eq "$name: exit $want" "$RC" "$want"
    expect_eq "$name: well before 40 s" "$((SECONDS - start < 40))" 1
    expect_match "$name: the hang report" "$OUT" "^gcsh: [0-9.]+ s: done \[.*\], still running \[.+\]; the deadline \($secs s\) is over$"
    expect_contains "$name: the job's end" "$OUT" "gcsh: the deadline ($secs s) is over; every rank exits with status $want"
    expect_eq "$name: the flight file is said" "$(flight_said "$OUT")" "flight.json"
    expect_eq "$name: the flight file has every rank" "$(flight_ranks flight.json)" "$(seq -s, 0 $((n - 1)))"
}
for N in 2 4; do
    L=$((N - 1))
    deadline_case "$N ranks: every rank in s:wait" $N 1 5 \
        'local s = comm.world():signals(1); s:wait(0, 1)' --deadline 5
    expect_contains "$N ranks: s:wait: where" "$OUT" "in signal wait (slot 0 >= 1)"
    deadline_case "$N ranks: a Lua loop on one rank" $N 1 4 \
        "if rank == $L then while true do end end" --deadline 4
    deadline_case "$N ranks: a Lua loop on every rank, --deadline-status 3" $N 3 4 \
        'print("os pid", io.open("/proc/self/stat"):read("n")) while true do end' \
        --deadline 4 --deadline-status 3
    # the report's process ids are the ranks' own (as the kernel numbers them)
    PIDS=$(for ((r = 0; r < N; r++)); do
        sed -n "s/^\[$r\] os pid\t\([0-9]*\)\$/[$r] \1/p" <<<"$OUT"; done | paste -sd, | sed 's/,/, /g')
    expect_contains "$N ranks: the hang report's pids" "$OUT" "gcsh:   pid $PIDS (gdb -p PID attaches)"
    expect_eq "$N ranks: a pid for every rank" "$(grep -o '\[[0-9]*\] [0-9]' <<<"$PIDS" | wc -l)" $N
    deadline_case "$N ranks: a collective that the last rank never joins" $N 1 4 \
        "if rank ~= $L then comm.world():barrier() end gcsh.sleep(1000)" --deadline 4
    deadline_case "$N ranks: repro.deadline" $N 1 3 'repro.deadline(3) gcsh.sleep(1000)'
    # the deadline's status is for the hang: a rank that failed before it
    # is not hidden by --deadline-status 0 (a "good" hang) or 125 (a skip)
    for ds in 0 125; do
        deadline_case "$N ranks: rank $L fails, the others hang, --deadline-status $ds" $N 1 3 \
            "if rank == $L then error('real bug') end while true do end" --deadline 3 --deadline-status $ds
        expect_contains "$N ranks: the failure is shown (--deadline-status $ds)" "$OUT" "[$L] (command line):1: real bug"
    done
    # a rank that is still running when another's os.exit ends the session
    # (after the grace) did not succeed: cut short, 1 after os.exit(0), a
    # skip after a skip
    case_rc "$N ranks: os.exit(0) while rank $L still runs" 1 -n $N \
        -e "if rank ~= $L then os.exit(0) end while true do end"
    expect_contains "$N ranks: os.exit(0) while one runs: said" "$OUT" \
        "still ran (cut short: 1); every rank exits with status 1"
    case_rc "$N ranks: repro.skip while rank $L still runs" 125 -n $N \
        -e "if rank ~= $L then repro.skip('not here') end while true do end"
done
# a piped session: a command that failed, then a hang at the deadline
OUT=$(printf '%s\n' 'error("an earlier failure")' 'while true do end' |
      timeout 60 "$GCSH" -n 2 --deadline 3 --deadline-status 0 2>&1); RC=$?
expect_eq "an earlier command's failure, then the deadline with --deadline-status 0: exit 1" "$RC" 1
# a refused dot-command (a usage error), then the deadline between commands
OUT=$( (printf '.ranks 9\n'; sleep 30) | timeout 60 "$GCSH" -n 2 --deadline 3 --deadline-status 0 2>&1); RC=$?
expect_eq "a refused .ranks, then the deadline with --deadline-status 0: exit 128" "$RC" 128
# .info's pid column: each rank's own
OUT=$(printf '%s\n' 'print("os pid", io.open("/proc/self/stat"):read("n"))' '.info' |
      timeout 60 "$GCSH" -n 4 2>&1)
for r in 0 1 2 3; do
    want=$(sed -n "s/^\[$r\] os pid\t\([0-9]*\)\$/\1/p" <<<"$OUT")
    expect_match ".info: rank $r's pid" "$OUT" "^ +$r  [^ ]+ +${want:-none}  +$r  cpu"
done
start=$SECONDS
OUT=$(timeout 60 "$GCSH" -n 2 --deadline 3 --flight idle.json < <(echo 'print("up")'; sleep 30) 2>&1); RC=$?
expect_eq "the deadline between commands (a pipe that stays open): exit 1" "$RC" 1
expect_eq "the deadline between commands: before the pipe ends" "$((SECONDS - start < 25))" 1
expect_contains "the deadline between commands: said" "$OUT" \
    "gcsh: the deadline (3 s) is over, between commands; every rank exits with status 1"
case_rc "a job within its deadline" 0 -n 2 --deadline 60 -e 'comm.world():barrier()'
case_rc "--deadline x" 128 -n 2 --deadline x -e 'print(1)'
case_rc "--deadline-status 256" 128 -n 2 --deadline-status 256 -e 'print(1)'
case_rc "repro.deadline(0)" 128 -n 2 -e 'repro.deadline(0)'

# ---- --seed: the same run again, every rank its own numbers
DRAW='print(math.random(1000000), tensor.new(2):rand():totable()[1])'
for N in 2 4; do
    run -n $N --seed 42 -e "$DRAW"; A=$OUT
    run -n $N --seed 42 -e "$DRAW"; B=$OUT
    run -n $N --seed 43 -e "$DRAW"; C=$OUT
    expect_eq "$N ranks: --seed 42 twice: the same numbers" "$B" "$A"
    if [ "$A" != "$C" ]; then pass; else fail "$N ranks: --seed 43 draws other numbers than 42"; fi
    expect_eq "$N ranks: --seed: every rank its own numbers" "$(sed 's/^\[[0-9]*\] //' <<<"$A" | sort -u | wc -l)" $N
done
run -n 2 -e 'print(tensor.new(8):rand():equal(tensor.new(8):rand(rank)))'
expect_eq "without --seed, t:rand() is seeded with the rank, as before" "$OUT" "[0-1] true"
run -n 2 --seed 7 --deadline 3 --flight seed.json -e 'while true do end'
expect_match "--seed in the hang report's first line" "$OUT" '^gcsh: [0-9.]+ s \(--seed 7\): done \[\], still running \[0-1\]; the deadline \(3 s\) is over$'
run -n 2 --seed 42 --record seeded.lua -e "$DRAW"
expect_eq "a recording with --seed: exit 0" "$RC" 0
expect_contains "the recording keeps the seed" "$(cat seeded.lua)" 'seed = 42, rand = true }'
RECORDED=$(grep '^\[' <<<"$OUT")
run --replay seeded.lua
expect_eq "its replay draws the same numbers" "$RC" 0
expect_contains "its replay: the same output" "$OUT" "$RECORDED"
case_rc "--seed -1" 128 -n 2 --seed -1 -e 'print(1)'
case_rc "--seed 1.5" 128 -n 2 --seed 1.5 -e 'print(1)'

# ---- notes on stderr, program output alone on stdout
OUT=$(timeout 60 "$GCSH" -n 2 --record notes.lua --trace notes.json -e 'print("data")' 2>/dev/null </dev/null)
expect_eq "--record, --trace: stdout holds the program's output only" "$OUT" "[0-1] data"
OUT=$(timeout 60 "$GCSH" -n 2 --record notes.lua --trace notes.json -e 'print("data")' 2>&1 >/dev/null </dev/null)
expect_contains "--record: its notes on stderr" "$OUT" "recording written to notes.lua: 1 line"
expect_contains "--trace: its notes on stderr" "$OUT" "tracing to notes.json"

# ---- --flight FILE is checked when parsed, not when a hang comes to write it
case_rc "--flight on a folder" 128 -n 2 --flight adir -e 'print(1)'
expect_contains "--flight on a folder: why" "$OUT" "gcsh: '--flight' needs a file gcsh may write (no folder, link, device), got 'adir'"
case_rc "--flight in a missing folder" 128 -n 2 --flight no/such/dir.json -e 'print(1)'

# ---- a trace that cannot be written leaves no placeholder behind
MNT=$TMP/small
if mkdir -p "$MNT" && mount -t tmpfs -o size=64k tmpfs "$MNT" 2>/dev/null; then
    # room for the placeholder written at the start, not for the trace
    dd if=/dev/zero of="$MNT/fill" bs=1k count=56 2>/dev/null
    case_rc "--trace on a full disk" 125 -n 2 --trace "$MNT/t.json" \
        -e 'for i = 1, 200 do tensor.new(1):fill(i) end'
    expect_contains "--trace on a full disk: the placeholder goes" "$OUT" \
        "gcsh: trace: $MNT/t.json removed (no trace was written)"
    if [ -e "$MNT/t.json" ]; then fail "--trace on a full disk: a file is left"; else pass; fi
    umount "$MNT"
else
    skip "a full filesystem: cannot mount a small tmpfs here (needs root)"
fi

# ---- a piped session: the worst of its lines
OUT=$(printf '%s\n' 'y = = 2' 'repro.need{rank = 2}' 'error("boom")' | timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_eq "a piped session with a usage error among its failures: 128" "$RC" 128

# ---- --replay agrees with the script run alone
printf 'local h = require("helper")\nprint("f", h.f())\n' >uses.lua
run -n 2 --record rec.lua uses.lua
expect_eq "a recording with a helper: exit 0" "$RC" 0
run --replay rec.lua
expect_eq "its replay: exit 0" "$RC" 0
cp broken.lua helper.lua
case_rc "the script with its helper broken" 125 -n 2 uses.lua
case_rc "the replay with the helper broken, as the script" 125 --replay rec.lua
expect_contains "the replay says why" "$OUT" "gcsh: replay: rec.lua: line 1 cannot be tested here"
finish
