#!/usr/bin/env bash
# Every transcript of README.md (a fenced block with `gcsh[0-1]> ` prompts)
# runs in a piped session at its rank count, and its output must be the
# README's.  The conventions (… for figures that vary, ^C for an interrupt,
# ```no-test, ```fit80 for a block whose lines must fit 80 columns) are in
# tests/sh/readme.lua and in the README.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
ROOT=$PWD
TMP=$(mktemp -d)
# gcsh's own folder, where flight dumps go: short, so that a transcript's
# "gcsh:   …/gcsh-flight-….json" is one line (a long one is broken after a /)
STATE=$(mktemp -d /tmp/gcsh-readme-XXXXXX)
export GCSH_STATE_DIR=$STATE
PID=""
trap '[ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null; rm -rf "$TMP" "$STATE"' EXIT
LUA=$(command -v lua5.4 || command -v lua)
if [ -z "$LUA" ]; then
    skip "no lua5.4 to read the README with"
    finish
    exit
fi

# the matcher itself: … within a line, … alone for any lines, and a miss
printf '%s\n' '[0] a … z' '…' 'end' >"$TMP/want"
printf '%s\n' '[0] a 1.5 ms z' 'x' 'y' 'end' >"$TMP/got"
if "$LUA" tests/sh/readme.lua compare "$TMP/want" "$TMP/got" >/dev/null; then pass; else fail "matcher: … matches"; fi
printf '%s\n' '[0] a 1.5 ms y' 'end' >"$TMP/got"
if "$LUA" tests/sh/readme.lua compare "$TMP/want" "$TMP/got" >/dev/null; then fail "matcher: a different line matched"; else pass; fi
printf '%s\n' '[0] a (x) [y] % z' >"$TMP/want"
printf '%s\n' '[0] a (x) [y] % z' >"$TMP/got"
if "$LUA" tests/sh/readme.lua compare "$TMP/want" "$TMP/got" >/dev/null; then pass; else fail "matcher: magic characters are literal"; fi

# a progress report a slow machine printed is not compared, unless the
# transcript shows one
printf '%s\n' '[0] a' '[0] b' >"$TMP/want"
printf '%s\n' '[0] a' 'gcsh: 10.0 s: done [], still running [0-1]; waiting (Ctrl-C interrupts)' \
    'gcsh:   [0-1] in allreduce #4 for 0.0 s' 'gcsh: flight recorder: /tmp/f.json (every rank'"'"'s last calls)' \
    '[0] b' >"$TMP/got"
if "$LUA" tests/sh/readme.lua compare "$TMP/want" "$TMP/got" >/dev/null; then pass; else fail "matcher: a progress report is left out"; fi
printf '%s\n' '[0] a' 'gcsh: … s: done [], still running [0-1]; waiting (Ctrl-C interrupts)' '[0] b' >"$TMP/want"
printf '%s\n' '[0] a' '[0] b' >"$TMP/got"
if "$LUA" tests/sh/readme.lua compare "$TMP/want" "$TMP/got" >/dev/null; then fail "matcher: a progress report the transcript shows was not needed"; else pass; fi
printf '%s\n' '[0] a' 'gcsh:   [0] not a report' '[0] b' >"$TMP/got"
printf '%s\n' '[0] a' '[0] b' >"$TMP/want"
if "$LUA" tests/sh/readme.lua compare "$TMP/want" "$TMP/got" >/dev/null; then fail "matcher: a gcsh line outside a report was left out"; else pass; fi

# the width check: a tab goes to the next multiple of 8, "…" is one column
printf '%s\n' "$(printf 'x%.0s' $(seq 79))…" "[0]	$(printf 'y%.0s' $(seq 72))" >"$TMP/got"
if "$LUA" tests/sh/readme.lua fit 80 "$TMP/got" >/dev/null; then pass; else fail "fit: 80 columns fit"; fi
printf '%s\n' "$(printf 'x%.0s' $(seq 80))…" >"$TMP/got"
if "$LUA" tests/sh/readme.lua fit 80 "$TMP/got" >/dev/null; then fail "fit: 81 columns fit"; else pass; fi
printf '%s\n' "[0-1]	$(printf 'y%.0s' $(seq 73))" >"$TMP/got"
if "$LUA" tests/sh/readme.lua fit 80 "$TMP/got" >/dev/null; then fail "fit: a tab counts 1"; else pass; fi

# every heading on a line of its own: two glued together ("## A## A", a
# lost newline) read as one heading and hide the second's section
glued=$(grep -nE '^#{1,6} .*#{2,6} [A-Z]' README.md docs/*.md src/DESIGN.md)
expect_eq "headings glued onto one line" "$glued" ""
if grep -qE '^#{1,6} .*#{2,6} [A-Z]' <<<'## On GPU machines## On GPU machines'; then pass; else
    fail "the glued-heading check misses one"; fi

mkdir -p "$TMP/blocks" "$TMP/work"
count=$("$LUA" tests/sh/readme.lua extract README.md "$TMP/blocks")
if [ "${count:-0}" -ge 1 ]; then pass; else fail "no transcript found in README.md"; fi

# lines FILE: how many lines FILE has.
lines() { wc -l <"$1" 2>/dev/null || echo 0; }

for n in $(seq 1 "$count"); do
    B=$TMP/blocks/$n
    where="README.md:$(cat "$B.line")"
    out=$TMP/out.$n
    rm -f "$TMP/in"
    mkfifo "$TMP/in"
    # a fresh folder per block: files a transcript writes stay out of the tree
    rm -rf "$TMP/work" && mkdir -p "$TMP/work"
    (cd "$TMP/work" && exec "$GCSH" -n "$(cat "$B.ranks")" <"$TMP/in" >"$out" 2>&1) &
    PID=$!   # gcsh -n itself: it stays mpirun's parent and takes SIGINT from outside
    exec 3>"$TMP/in"
    k=1
    while [ -f "$B.in.$k" ]; do
        cat "$B.in.$k" >&3
        if [ -f "$B.before.$k" ]; then
            # the command to interrupt runs once the output before it is there
            # (and 0.5 s on: a transcript's command shows nothing as it starts)
            want=$(cat "$B.before.$k")
            for _ in $(seq 600); do [ "$(lines "$out")" -ge "$want" ] && break; sleep 0.1; done
            sleep 0.5
            kill -INT "$PID" # as `timeout -s INT` would send it
        fi
        k=$((k + 1))
    done
    exec 3>&-
    for _ in $(seq 1200); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$PID" 2>/dev/null && { kill -KILL "$PID"; echo "(killed after 120 s)" >>"$out"; }
    wait "$PID" 2>/dev/null; PID=""
    if diff=$("$LUA" tests/sh/readme.lua compare "$B.expected" "$out"); then
        pass
    else
        fail "the transcript at $where"
        printf '%s\n' "$diff"
        sed 's/^/  | /' "$out" | head -n 40
    fi
    if [ -f "$B.fit" ]; then
        if wide=$("$LUA" tests/sh/readme.lua fit "$(cat "$B.fit")" "$out"); then
            pass
        else
            fail "the transcript at $where prints lines wider than $(cat "$B.fit") columns"
            printf '%s\n' "$wide"
        fi
    fi
done

finish
