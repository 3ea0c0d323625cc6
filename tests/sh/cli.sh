#!/usr/bin/env bash
# The command line (lua.c habit): scripts and their arg table, -e, -l, -v, -q,
# -i, --backend, --timeout, -n, bad options; exit codes; no process left over.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
T=$'\t'
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# run NAME... : runs "$GCSH" with the arguments, stdin from /dev/null unless
# redirected by the caller; sets OUT (stdout+stderr) and RC.
run() { OUT=$(timeout 60 "$GCSH" "$@" 2>&1 </dev/null); RC=$?; }
# Errors that would mean MPI took over the failure reporting.
no_mpi_noise() {
    expect_not_contains "$1: no MPI_ABORT" "$2" "MPI_ABORT"
    expect_not_contains "$1: no 'mpirun noticed'" "$2" "mpirun noticed"
    expect_not_contains "$1: no 'Primary job'" "$2" "Primary job"
    expect_not_contains "$1: no mpirun banner" "$2" "-----------"
}

# ---- a script: arg table and ..., on every rank
cat >"$TMP/args.lua" <<'EOF'
print(rank, #arg, arg[0]:match("[^/]*$"), arg[1], arg[2], arg[3], ...)
print(select("#", ...), (arg[-1]:match("[^/]*$")))
EOF
run -n 2 "$TMP/args.lua" a "b c" -n
expect_eq "script: arg and ..." "$OUT" "[0] 0${T}3${T}args.lua${T}a${T}b c${T}-n${T}a${T}b c${T}-n
[0] 3${T}gcsh
[1] 1${T}3${T}args.lua${T}a${T}b c${T}-n${T}a${T}b c${T}-n
[1] 3${T}gcsh"
expect_eq "script: exit 0" "$RC" 0
run "$TMP/args.lua" x
expect_eq "script at 1 rank, no mpirun" "$OUT" "0${T}1${T}args.lua${T}x${T}nil${T}nil${T}x
1${T}gcsh"
run -n 2 "$TMP/args.lua"
expect_eq "script without arguments" "$(sed -n '1p;3p' <<<"$OUT")" "[0] 0${T}0${T}args.lua${T}nil${T}nil${T}nil
[1] 1${T}0${T}args.lua${T}nil${T}nil${T}nil"

# ---- a failing rank: exit 1, its error under its rank, nothing from MPI
cat >"$TMP/fail.lua" <<'EOF'
print("start", rank)
if rank == 1 then error("rank one failed") end
print("end", rank)
EOF
TAG=$(new_tag)
OUT=$(GCSH_TEST_TAG=$TAG timeout 60 "$GCSH" -n 2 "$TMP/fail.lua" 2>&1 </dev/null); RC=$?
expect_eq "failing rank: output" "$OUT" "[0] start${T}0
[0] end${T}0
[1] start${T}1
[1] $TMP/fail.lua:2: rank one failed
[1] stack traceback:
[1] ${T}[C]: in function 'error'
[1] ${T}$TMP/fail.lua:2: in main chunk"
expect_eq "failing rank: exit 1" "$RC" 1
no_mpi_noise "failing rank" "$OUT"
expect_no_procs "failing rank: no process left" "$TAG"

TAG=$(new_tag)
OUT=$(GCSH_TEST_TAG=$TAG timeout 60 "$GCSH" -n 4 -e 'if rank % 2 == 1 then error("odd " .. rank, 0) end' 2>&1 </dev/null); RC=$?
expect_eq "failing ranks at 4" "$OUT" "[1] odd 1
[1] stack traceback:
[1] ${T}[C]: in function 'error'
[1] ${T}(command line):1: in main chunk
[3] odd 3
[3] stack traceback:
[3] ${T}[C]: in function 'error'
[3] ${T}(command line):1: in main chunk"
expect_eq "failing ranks at 4: exit 1" "$RC" 1
no_mpi_noise "failing ranks at 4" "$OUT"
expect_no_procs "failing ranks at 4: no process left" "$TAG"

# ---- -e: every rank, in order; a failure stops the rest
run -n 2 -e 'x = 10 + rank' -e 'print("e", x)' -e 'print("last")'
expect_eq "-e chained in order" "$OUT" "[0] e${T}10
[1] e${T}11
[0-1] last"
expect_eq "-e: exit 0" "$RC" 0
run -n 2 -e 'print("one")' -e 'error("two", 0)' -e 'print("three")'
expect_eq "-e failure stops" "$OUT" "[0-1] one
[0-1] two
[0-1] stack traceback:
[0-1] ${T}[C]: in function 'error'
[0-1] ${T}(command line):1: in main chunk"
expect_eq "-e failure: exit 1" "$RC" 1
run -n 2 -e 'x = = 1' -e 'print("after")'
expect_eq "-e syntax error once, stops" "$OUT" "(command line):1: unexpected symbol near '='"
expect_eq "-e syntax error: exit 125 (cannot test)" "$RC" 125
run -n 2 -e 'print("before", rank)' "$TMP/args.lua" z
expect_eq "-e before a script" "$(head -n 2 <<<"$OUT")" "[0] before${T}0
[1] before${T}1"
expect_contains "-e before a script: the script ran" "$OUT" "[0] 0${T}1${T}args.lua${T}z"

# ---- -l mod and -l g=mod
mkdir -p "$TMP/lib"
cat >"$TMP/lib/tmod.lua" <<'EOF'
return { who = function() return "tmod on " .. rank end }
EOF
export LUA_PATH="$TMP/lib/?.lua;;"
run -n 2 -l tmod -e 'print(tmod.who())'
expect_eq "-l mod" "$OUT" "[0] tmod on 0
[1] tmod on 1"
expect_eq "-l: exit 0" "$RC" 0
run -n 2 -l t=tmod -e 'print(t.who(), tmod)'
expect_eq "-l g=mod" "$OUT" "[0] tmod on 0${T}nil
[1] tmod on 1${T}nil"
run -n 2 -l no_such_module_here -e 'print("ran")'
expect_contains "-l unknown module" "$OUT" "module 'no_such_module_here' not found"
expect_not_contains "-l unknown module stops" "$OUT" "ran"
expect_eq "-l unknown module: exit 125 (cannot test)" "$RC" 125
unset LUA_PATH

# ---- -v/--version, -h/--help, -q, -i
VERSION_RE='^gcsh 0\.1\.0 \(Lua 5\.4\.[0-9]+\)$'
run -v
expect_match "-v" "$(head -n 1 <<<"$OUT")" "$VERSION_RE"
expect_match "-v: MPI" "$OUT" '^  MPI:          Open MPI v[0-9]'
expect_match "-v: NCCL (a version, or why there is none)" "$OUT" '^  NCCL:         ([0-9]+\.[0-9]+\.[0-9]+|none \(built without the cuda backend\))$'
expect_match "-v: CUDA runtime" "$OUT" '^  CUDA runtime: ([0-9]+\.[0-9]+|none \(built without the cuda backend\))$'
expect_match "-v: CUDA driver (here: none)" "$OUT" '^  CUDA driver:  ([0-9]+\.[0-9]+|none \(no NVIDIA driver on this machine\)|not asked \(built without the cuda backend\))$'
expect_eq "-v: five lines, exit 0" "$(wc -l <<<"$OUT") $RC" "5 0"
V1=$OUT
run --version
expect_eq "--version = -v" "$OUT" "$V1"
run -n 2 -v
expect_eq "-v at 2 ranks: once, no ranks started" "$OUT" "$V1"
run -n 2 -v -e 'print("e")'
expect_match "-v -e" "$(head -n 1 <<<"$OUT")" '^gcsh 0\.1\.0 '
expect_eq "-v -e: then -e runs" "$(tail -n 1 <<<"$OUT")" "[0-1] e"

OUT=$(timeout 60 "$GCSH" --help 2>"$TMP/err" </dev/null); RC=$?
expect_eq "--help: exit 0, nothing on stderr" "$RC:$(cat "$TMP/err")" "0:"
expect_match "--help: usage" "$OUT" '^usage: .*gcsh \[options\] \[script \[args\]\]$'
for opt in "-e stat" "-l mod" "-i " "-q " "-W " "-v, --version" "-h, --help" "-n, -np N" \
           "--backend B" "--timeout S" "--tag WHEN" "--hostfile FILE" "--host, -H LIST" \
           "--map-by SPEC" "-x VAR\[=V\]" "--mca KEY VALUE" "--mpirun-args 'ARGS'" "-- " "- "; do
    expect_match "--help lists '$opt'" "$OUT" "^  ${opt//-/\\-}"
done
for dot in .help .info .ranks .timeout .time .check .abort .quit; do
    expect_match "--help lists $dot" "$OUT" "^  \\$dot "
done
expect_match "--help: where lessons are" "$OUT" "^Lessons: +$PWD/lua/tutorial"
expect_match "--help: where examples are" "$OUT" "^Examples: +$PWD/lua/examples"
expect_eq "-h = --help" "$(timeout 60 "$GCSH" -h 2>&1 </dev/null)" "$OUT"
expect_eq "--help fits 80 columns" "$(awk 'length > 80' <<<"$OUT")" ""
# every option of --help is in the man page
for opt in $(grep -oE '^  -[-a-zA-Z]+' <<<"$OUT"); do
    m=${opt//-/\\-}
    if grep -qF -- "$m" src/gcsh.1; then pass; else fail "gcsh.1 does not document $opt"; fi
done

OUT=$(printf 'print("piped", rank)\n' | timeout 60 "$GCSH" -n 2 -i "$TMP/args.lua" z 2>&1); RC=$?
expect_eq "-i after a script: script, banner, prompt, line" "$OUT" "[0] 0${T}1${T}args.lua${T}z${T}nil${T}nil${T}z
[0] 1${T}-i
[1] 1${T}1${T}args.lua${T}z${T}nil${T}nil${T}z
[1] 1${T}-i
gcsh 0.1.0 (${OUT#*gcsh 0.1.0 (}"
expect_match "-i: banner" "$OUT" '^gcsh 0\.1\.0 \(Lua 5\.4\.[0-9]+\) on 2 ranks, backend host \(.*\); \.help for help$'
expect_contains "-i: the piped line ran after a prompt" "$OUT" "gcsh[0-1]> [0] piped${T}0
[1] piped${T}1
gcsh[0-1]> "
expect_eq "-i: exit 0" "$RC" 0
OUT=$(printf 'print("piped")\n' | timeout 60 "$GCSH" -n 2 -i -q 2>&1); RC=$?
expect_eq "-i -q: no banner" "$(head -n 1 <<<"$OUT")" "gcsh[0-1]> [0-1] piped"
OUT=$(printf 'print("piped")\n' | timeout 60 "$GCSH" -n 2 -q 2>&1); RC=$?
expect_eq "-q piped" "$OUT" "[0-1] piped"

# ---- --backend, --timeout
run -n 2 --backend bogus
expect_match "--backend bogus" "$OUT" "^gcsh: --backend: unknown backend 'bogus' \(valid: host"
expect_eq "--backend bogus: said once" "$(grep -c "unknown backend" <<<"$OUT")" 1
expect_eq "--backend bogus: exit 128 (usage)" "$RC" 128
no_mpi_noise "--backend bogus" "$OUT"
run --backend bogus
expect_match "--backend bogus, 1 rank" "$OUT" "^gcsh: --backend: unknown backend 'bogus' \(valid: host"
expect_eq "--backend bogus, 1 rank: exit 128" "$RC" 128
# mpirun's options take their values as words: KEY=VALUE as one word would
# take the script as its value (nothing ran, exit 0), an option as a value
# would take what follows as gcsh's
printf 'error("the bug")\n' >"$TMP/bug.lua"
run -n 2 --mca btl_tcp_if_include=lo "$TMP/bug.lua"
expect_eq "--mca KEY=VALUE: exit 128" "$RC" 128
expect_contains "--mca KEY=VALUE: says what it takes" "$OUT" \
    "gcsh: '--mca' needs a key (letters, digits, _) and a value, two words, got 'btl_tcp_if_include=lo"
run -n 2 --mca btl -e 'print("ran")'
expect_eq "--mca KEY -e: exit 128, nothing ran" "$RC:$(grep -c ran <<<"$OUT")" "128:0"
run -n 2 -H -e 'print("ran")'
expect_eq "-H -e: exit 128 (not mpirun's 255), nothing ran" "$RC:$(grep -c ran <<<"$OUT")" "128:0"
run -n 2 --mca mpi_yield_when_idle -1 -e 'print("ran")'
expect_eq "--mca KEY -1: a negative value is a value" "$RC:$OUT" "0:[0-1] ran"
# nor does an option that takes a module or a file name take an option
for opt in -l --trace --record --replay; do
    run -n 2 $opt -e 'print("ran")'
    expect_eq "$opt -e: 128, nothing ran" "$RC:$(grep -c '\] ran$' <<<"$OUT")" "128:0"
    expect_contains "$opt -e: says what it needs" "$OUT" "gcsh: '$opt' needs a "
done
run -n 2 --backend host -e 'print("host ok")'
expect_eq "--backend host" "$OUT" "[0-1] host ok"
run -n 2 --backend
expect_contains "--backend without a value" "$OUT" "'--backend' needs host or cuda"
expect_eq "--backend without a value: exit 128" "$RC" 128

run -n 2 --timeout 0.3 -e 'gcsh.check(false) if rank == 0 then gcsh.sleep(0.8) end comm.world():barrier() print("done")'
expect_match "--timeout" "$OUT" '^gcsh: 0\.[3-7] s: done \[\], still running \[0-1\]; Ctrl-C interrupts$'
expect_eq "--timeout: it kept waiting" "$(tail -n 1 <<<"$OUT")" "[0-1] done"
expect_eq "--timeout: exit 0" "$RC" 0
run -n 2 --timeout soon -e 'print(1)'
expect_contains "--timeout bad value" "$OUT" "'--timeout' needs seconds 0..1e6"
expect_eq "--timeout bad value: exit 128" "$RC" 128

# ---- bad options and -n values: one line on stderr naming it, exit 128 (a bisect stops)
OUT=$(timeout 60 "$GCSH" --bogus 2>"$TMP/err" </dev/null); RC=$?
expect_eq "unknown option: nothing on stdout" "$OUT" ""
expect_eq "unknown option: exit 128" "$RC" 128
expect_eq "unknown option: one line naming it and --help" "$(cat "$TMP/err")" \
    "gcsh: unrecognized option '--bogus' (gcsh --help lists the options)"
OUT=$(timeout 60 "$GCSH" -n 2 -Z 2>"$TMP/err" </dev/null); RC=$?
expect_eq "unknown option with -n: exit 128, nothing on stdout" "$RC:$OUT" "128:"
expect_eq "unknown option with -n: one line" "$(cat "$TMP/err")" \
    "gcsh: unrecognized option '-Z' (gcsh --help lists the options)"
for bad in 0 x 1.5 -2 ""; do
    OUT=$(timeout 60 "$GCSH" -n "$bad" -e 'print(1)' 2>"$TMP/err" </dev/null); RC=$?
    expect_eq "-n '$bad': exit 128, nothing run" "$RC:$OUT" "128:"
    expect_eq "-n '$bad': one line" "$(cat "$TMP/err")" \
        "gcsh: '-n' needs a rank count 1..4096, got '$bad' (gcsh --help lists the options)"
done
OUT=$(timeout 60 "$GCSH" -n 2>"$TMP/err" </dev/null); RC=$?
expect_eq "-n without a value: exit 128" "$RC" 128
expect_eq "-n without a value: one line" "$(cat "$TMP/err")" \
    "gcsh: '-n' needs a rank count 1..4096 (gcsh --help lists the options)"
run -e
expect_eq "-e without a value" "$OUT" "gcsh: '-e' needs a Lua statement (gcsh --help lists the options)"
expect_eq "-e without a value: exit 128" "$RC" 128
run --version=2
expect_eq "a flag given a value" "$OUT:$RC" "gcsh: '--version' takes no value (got '2') (gcsh --help lists the options):128"
run -n 2 --mca btl
expect_eq "--mca needs two values" "$OUT:$RC" "gcsh: '--mca' needs a key (letters, digits, _) and a value, two words (gcsh --help lists the options):128"
run -n 2 -x 1BAD=2
expect_eq "-x: a bad name" "$OUT:$RC" "gcsh: '-x' needs an environment variable name (VAR or VAR=value), got '1BAD=2' (gcsh --help lists the options):128"
run -n 2 --mpirun-args '--bind-to "core'
expect_eq "--mpirun-args: an unclosed quote" "$OUT:$RC" "gcsh: '--mpirun-args' needs mpirun's arguments, quoted as one word, got '--bind-to \"core' (gcsh --help lists the options):128"

# ---- options as lua and mpirun users type them
run -np 2 -e 'print(size)'
expect_eq "-np 2" "$OUT:$RC" "[0-1] 2:0"
run -n2 -e 'print(size)'
expect_eq "-n2" "$OUT:$RC" "[0-1] 2:0"
run -n 2 '-eprint("attached", rank)'
expect_eq "-estat" "$OUT" "[0] attached${T}0
[1] attached${T}1"
run --backend=host -n 2 --timeout=0 -e 'print(gcsh.backend)'
expect_eq "--opt=value" "$OUT:$RC" "[0-1] host:0"
run -n 2 -- -e 'print(1)'
expect_eq "-- ends the options: -e is the script" "$OUT:$RC" "gcsh: cannot open -e: No such file or directory:125"
export LUA_PATH="$TMP/lib/?.lua;;"
mkdir -p "$TMP/lib"
printf 'return { n = 7 }\n' >"$TMP/lib/seven.lua"
run -n 2 -lseven -e 'print(seven.n)'
expect_eq "-lmod" "$OUT:$RC" "[0-1] 7:0"
unset LUA_PATH
OUT=$(FROM_HERE=here timeout 60 "$GCSH" -n 2 -x FOO=1 -x FROM_HERE -x BAR=a=b \
      -e 'print(os.getenv("FOO"), os.getenv("FROM_HERE"), os.getenv("BAR"))' 2>&1 </dev/null); RC=$?
expect_eq "-x VAR=v and -x VAR: in every rank's environment" "$OUT:$RC" "[0-1] 1${T}here${T}a=b:0"
run -x FOO=1 -e 'print(1)'
expect_eq "-x without -n" "$OUT:$RC" "gcsh: '-x' goes with -n N (gcsh passes it to mpirun) (gcsh --help lists the options):128"
run -W -e 'warn("watch out")'
expect_eq "-W: warnings on" "$OUT:$RC" "Lua warning: watch out:0"

# ---- -n's options for mpirun: handed to mpirun, never to the ranks
cat >"$TMP/mpirun" <<EOF
#!/bin/sh
printf '%s\n' "\$@" >"$TMP/mpirun.args"
exec mpirun "\$@"
EOF
chmod +x "$TMP/mpirun"
printf 'localhost slots=4\n' >"$TMP/hosts"
OUT=$(GCSH_MPIRUN="$TMP/mpirun" timeout 60 "$GCSH" -n 3 --hostfile "$TMP/hosts" --map-by slot \
      -e 'print(size, #arg, arg[-2], arg[-4])' 2>&1 </dev/null); RC=$?
expect_eq "--hostfile, --map-by: the ranks run, without them" "$OUT" "[0-2] 3${T}0${T}-e${T}nil"
expect_eq "--hostfile, --map-by: exit 0" "$RC" 0
ARGS=$(tr '\n' ' ' <"$TMP/mpirun.args")
expect_contains "mpirun got -np 3" "$ARGS" "-np 3 "
expect_contains "mpirun got --hostfile" "$ARGS" "--hostfile $TMP/hosts "
expect_contains "mpirun got --map-by" "$ARGS" "--map-by slot "
expect_eq "the ranks' own arguments" "${ARGS#*"$(readlink -f "$GCSH") "}" "-e print(size, #arg, arg[-2], arg[-4]) "
OUT=$(GCSH_MPIRUN="$TMP/mpirun" timeout 60 "$GCSH" -H localhost:2 -n 2 -e 'print(size)' 2>&1 </dev/null)
expect_eq "-H: the ranks run" "$OUT" "[0-1] 2"
expect_contains "-H: mpirun got --host" "$(tr '\n' ' ' <"$TMP/mpirun.args")" "--host localhost:2 "
OUT=$(GCSH_MPIRUN="$TMP/mpirun" timeout 60 "$GCSH" -n 2 -e --map-by -e 'print("ok")' 2>&1 </dev/null)
expect_eq "an -e whose value looks like an option stays the ranks'" "$OUT" "[0-1] ok"
expect_contains "an -e whose value looks like an option: its value" "$(tr '\n' ' ' <"$TMP/mpirun.args")" " -e --map-by -e "
run -n 2 "$TMP/args.lua" --hostfile nowhere
expect_contains "after the script, --hostfile is the script's" "$OUT" "[0] 0${T}2${T}args.lua${T}--hostfile${T}nowhere"
run --hostfile "$TMP/hosts" -e 'print(1)'
expect_eq "--hostfile without -n" "$RC:$OUT" "128:gcsh: '--hostfile' goes with -n N (gcsh passes it to mpirun) (gcsh --help lists the options)"
run -n 2 --hostfile "$TMP/no-such-hosts" -e 'print(1)'
expect_eq "--hostfile unreadable" "$RC:$OUT" "128:gcsh: '--hostfile' needs a readable host file, got '$TMP/no-such-hosts' (gcsh --help lists the options)"
run -n 2 --map-by
expect_contains "--map-by without a value" "$OUT" "'--map-by' needs a mapping"
# --mca, -x and --mpirun-args reach mpirun, in order, split as a shell would
OUT=$(GCSH_MPIRUN="$TMP/mpirun" timeout 60 "$GCSH" -n 2 --mca btl_base_verbose 0 -x FOO=1 \
      --mpirun-args "--report-state-on-timeout -x 'BAR=two words'" --map-by=slot \
      -e 'print(os.getenv("BAR"))' 2>&1 </dev/null); RC=$?
expect_eq "--mpirun-args: the ranks run" "$OUT:$RC" "[0-1] two words:0"
ARGS=$(tr '\n' '|' <"$TMP/mpirun.args")
expect_contains "mpirun got --mca k v, -x, the split words, --map-by=slot" "$ARGS" \
    "|--mca|btl_base_verbose|0|-x|FOO=1|--report-state-on-timeout|-x|BAR=two words|--map-by|slot|"
expect_eq "the ranks' own arguments, without mpirun's" "${ARGS#*"$(readlink -f "$GCSH")|"}" "-e|print(os.getenv(\"BAR\"))|"

# ---- os.exit: the session ends on every rank with that status, said when not all called it
OUT=$(printf '%s\n' 'if rank == 1 then os.exit(5) end' 'print("never")' | timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_eq "os.exit(5) on one rank: the message names the status" "$OUT" "gcsh: [1] os.exit(5): the session ends; every rank exits with status 5"
expect_eq "os.exit(5) on one rank: exit 5" "$RC" 5
OUT=$(printf '%s\n' 'print("before")' 'os.exit(0)' 'print("never")' | timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_eq "os.exit(0) on every rank: silent" "$OUT" "[0-1] before"
expect_eq "os.exit(0) on every rank: exit 0" "$RC" 0
run -n 3 -e 'os.exit(rank == 2 and 7 or 0)' -e 'print("never")'
expect_eq "os.exit with different statuses" "$OUT" "gcsh: [0-1] os.exit(0), [2] os.exit(7): the session ends; every rank exits with status 7, the worst"
expect_eq "os.exit with different statuses: the worst one" "$RC" 7
run -n 2 -e 'pcall(os.exit, 3) print("caught")'
expect_eq "os.exit cannot be caught by pcall" "$OUT:$RC" ":3"
run -e 'os.exit(false)'
expect_eq "os.exit(false) at 1 rank" "$OUT:$RC" ":1"
OUT=$(printf '%s\n' 'c = comm.world()' 'if rank == 1 then os.exit(4) else c:barrier() end' |
    timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_eq "os.exit while another rank is in a checked barrier" "$OUT" "[0] stdin:1: barrier #1: [0] waited 0.0 s for [1]: [1] called os.exit
gcsh: [0] failed by that exit (1), [1] os.exit(4): the session ends; every rank exits with status 4, the worst"
expect_eq "os.exit while another rank is in a checked barrier: exit 4" "$RC" 4
TAG=$(new_tag)
OUT=$(printf '%s\n' 'c = comm.world()' '.check off' 'if rank == 1 then os.exit(4) else c:barrier() end' |
    GCSH_TEST_TAG=$TAG timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_eq "os.exit while another rank waits for it" "$OUT" "check off
gcsh: [1] os.exit(4) while [0] still ran (cut short: 1); every rank exits with status 4"
expect_eq "os.exit while another rank waits: exit 4" "$RC" 4
expect_no_procs "os.exit while another rank waits: no process left" "$TAG"

# ---- a script from stdin: -
OUT=$(printf 'print("stdin", rank, ...)\nprint(arg[0])\n' | timeout 60 "$GCSH" -n 2 - p q 2>&1); RC=$?
expect_eq "script from stdin" "$OUT" "[0] stdin${T}0${T}p${T}q
[0] -
[1] stdin${T}1${T}p${T}q
[1] -"
expect_eq "script from stdin: exit 0" "$RC" 0
OUT=$(printf 'print("x")\nerror("from stdin")\n' | timeout 60 "$GCSH" -n 2 - 2>&1); RC=$?
expect_contains "script from stdin: chunk name" "$OUT" "[0-1] stdin:2: from stdin"
expect_eq "script from stdin fails: exit 1" "$RC" 1

# ---- #! line skipped, line numbers kept
cat >"$TMP/bang.lua" <<'EOF'
#!/usr/bin/env gcsh -n 2
local x = 1

error("line four " .. rank, 1)
EOF
run -n 2 "$TMP/bang.lua"
expect_contains "#! script: line number" "$OUT" "[0] $TMP/bang.lua:4: line four 0"
expect_contains "#! script: line number, rank 1" "$OUT" "[1] $TMP/bang.lua:4: line four 1"
expect_eq "#! script: exit 1" "$RC" 1
printf '#!/bin/false\nprint(debug.getinfo(1, "l").currentline, select("#", ...))\n' >"$TMP/bang2.lua"
run -n 2 "$TMP/bang2.lua" one
expect_eq "#! script runs" "$OUT" "[0-1] 2${T}1"

# ---- a syntax error in a script: once, exit 125 (cannot test), nothing ran
printf 'print("ran")\nlocal x = = 2\n' >"$TMP/syntax.lua"
run -n 2 "$TMP/syntax.lua"
expect_eq "script syntax error once" "$OUT" "$TMP/syntax.lua:2: unexpected symbol near '='"
expect_eq "script syntax error: exit 125" "$RC" 125
run -n 2 "$TMP/no-such-script.lua"
expect_eq "missing script" "$OUT" "gcsh: cannot open $TMP/no-such-script.lua: No such file or directory"
expect_eq "missing script: exit 125" "$RC" 125

# ---- -n inside mpirun is refused; a script under plain mpirun works
if command -v mpirun >/dev/null; then
    MPIFLAGS=(-np 2 --oversubscribe); [ "$(id -u)" = 0 ] && MPIFLAGS+=(--allow-run-as-root)
    OUT=$(timeout 60 mpirun "${MPIFLAGS[@]}" "$GCSH" "$TMP/args.lua" m 2>&1 </dev/null); RC=$?
    expect_eq "under plain mpirun" "$OUT" "[0] 0${T}1${T}args.lua${T}m${T}nil${T}nil${T}m
[0] 1${T}gcsh
[1] 1${T}1${T}args.lua${T}m${T}nil${T}nil${T}m
[1] 1${T}gcsh"
    expect_eq "under plain mpirun: exit 0" "$RC" 0
    OUT=$(timeout 60 mpirun "${MPIFLAGS[@]}" "$GCSH" --version 2>&1 </dev/null)
    expect_eq "--version under plain mpirun: once" "$OUT" "$V1"
    OUT=$(timeout 60 mpirun "${MPIFLAGS[@]}" "$GCSH" --help 2>&1 </dev/null)
    expect_eq "--help under plain mpirun: once" "$(grep -c '^usage:' <<<"$OUT")" 1
else
    skip "mpirun missing"
fi

finish
