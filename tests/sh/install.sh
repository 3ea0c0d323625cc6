#!/usr/bin/env bash
# make install / make uninstall: the installed gcsh runs with the source tree
# out of reach (hidden by a private mount where unshare can do it) and from a
# prefix moved elsewhere: a piped session, a script and a lesson at 2 ranks.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
ROOT=$PWD
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
BUILD_DIR=$(dirname "$GCSH")
# the flags gcsh was built with (make test-asan sets them): install must not rebuild
mk() { eval make --no-print-directory -s BUILD="$BUILD_DIR" "${GCSH_MAKE_FLAGS:-}" "$@"; }

# ---- install into a prefix: every file under lua/, the binary, the man page
if ! mk install PREFIX="$TMP/prefix" >"$TMP/install.log" 2>&1; then
    fail "make install"; sed 's/^/  | /' "$TMP/install.log" | tail -20
    finish; exit
fi
pass
expect_eq "installed binary" "$(test -x "$TMP/prefix/bin/gcsh" && echo yes)" yes
expect_eq "installed man page" "$(test -f "$TMP/prefix/share/man/man1/gcsh.1" && echo yes)" yes
expect_eq "installed mpirun's preload (launch_net.h)" \
    "$(test -f "$TMP/prefix/lib/gcsh/gcsh-loopback.so" && echo yes)" yes
want=$(cd lua && find . -type f | sort)
got=$(cd "$TMP/prefix/share/gcsh" && find . -type f | sort)
expect_eq "every file under lua/ is installed" "$got" "$want"
expect_eq "the installed binary is the built one" "$(cmp -s "$GCSH" "$TMP/prefix/bin/gcsh" && echo same)" same

# ---- the installed gcsh, moved elsewhere, with the source tree hidden
mv "$TMP/prefix" "$TMP/moved"
P=$TMP/moved
mkdir -p "$TMP/empty" "$TMP/work"
cat >"$TMP/work/script.lua" <<'EOF'
local bench = require "gcsh.bench"
local rows = bench.collective{op = "allreduce", min = 8, max = 64, quiet = true}
print("script", rank, #arg, arg[1], #rows, rows[1].wrong)
EOF
lesson=$(ls "$P"/share/gcsh/tutorial/*.lua 2>/dev/null | head -n 1)
cat >"$TMP/work/run.sh" <<EOF
cd "$TMP/work"
echo "tree: \$(ls "$ROOT" | wc -l) entries"
printf '%s\n' '=gcsh.lua_dir' 'print(package.searchpath("gcsh.bench", package.path))' \\
    't = tensor.new(4):fill(rank + 1)' '=comm.world():allreduce(t)' '=gcsh.info().mpi_network' |
    "$P/bin/gcsh" -n 2 2>&1
echo "piped: \$?"
"$P/bin/gcsh" -n 2 script.lua one 2>&1
echo "script: \$?"
if [ -n "$lesson" ]; then "$P/bin/gcsh" -n 2 "$lesson" </dev/null >lesson.out 2>&1; echo "lesson: \$?"; fi
EOF
if unshare -m true 2>/dev/null; then
    OUT=$(timeout 120 unshare -m sh -c "mount --bind '$TMP/empty' '$ROOT' && bash '$TMP/work/run.sh'" 2>&1)
    expect_eq "the source tree is hidden" "$(head -n 1 <<<"$OUT")" "tree: 0 entries"
else
    skip "unshare -m is not allowed here: the source tree stays visible (the prefix is still moved)"
    OUT=$(timeout 120 bash "$TMP/work/run.sh" 2>&1)
fi
expect_contains "installed: lua_dir in the prefix" "$OUT" "[0-1] $P/share/gcsh"
expect_contains "installed: modules from the prefix" "$OUT" "[0-1] $P/share/gcsh/gcsh/bench.lua"
expect_contains "installed: a collective" "$OUT" "[0-1] tensor(f32, 4, host) [3, 3, 3, 3]"
expect_contains "installed: mpirun finds its preload in the prefix" "$OUT" \
    "[0-1] this machine only: pml ob1, btl self,vader, oob lo; mpirun listens on loopback only"
expect_contains "installed: piped session exit 0" "$OUT" "piped: 0"
expect_contains "installed: script rank 0" "$OUT" "[0] script	0	1	one	4	0"
expect_contains "installed: script rank 1" "$OUT" "[1] script	1	1	one	4	0"
expect_contains "installed: script exit 0" "$OUT" "script: 0"
if [ -n "$lesson" ]; then
    expect_contains "installed: lesson $(basename "$lesson") runs at 2 ranks" "$OUT" "lesson: 0"
else
    skip "no lesson under lua/tutorial yet"
fi

# ---- uninstall removes what install put there
mv "$TMP/moved" "$TMP/prefix"
mk uninstall PREFIX="$TMP/prefix" >/dev/null 2>&1
expect_eq "uninstall: no file left" "$(find "$TMP/prefix" -type f)" ""

# ---- DESTDIR stages the same tree under it
mk install PREFIX=/opt/gcsh DESTDIR="$TMP/stage" >/dev/null 2>&1
expect_eq "DESTDIR: binary staged" "$(test -x "$TMP/stage/opt/gcsh/bin/gcsh" && echo yes)" yes
expect_eq "DESTDIR: modules staged" "$(test -f "$TMP/stage/opt/gcsh/share/gcsh/gcsh/prelude.lua" && echo yes)" yes
expect_eq "DESTDIR: preload staged" "$(test -f "$TMP/stage/opt/gcsh/lib/gcsh/gcsh-loopback.so" && echo yes)" yes
mk uninstall PREFIX=/opt/gcsh DESTDIR="$TMP/stage" >/dev/null 2>&1
expect_eq "DESTDIR: uninstall" "$(find "$TMP/stage" -type f)" ""

# ---- the binary alone, away from any Lua files: a clear message, no crash
mkdir -p "$TMP/alone/bin"
cp "$GCSH" "$TMP/alone/bin/gcsh"
OUT=$(cd "$TMP" && GCSH_LUA_DIR= timeout 60 "$TMP/alone/bin/gcsh" -e 'print(tensor.new(2))' 2>&1 </dev/null)
expect_contains "no Lua files: says where it looked" "$OUT" "gcsh: cannot find gcsh's Lua files (gcsh/prelude.lua) in ../share/gcsh or ../lua beside the binary; set GCSH_LUA_DIR"
expect_contains "no Lua files: the C libraries still work" "$OUT" "tensor(f32, 2, host)"
# ... nor its preload: mpirun listens as Open MPI makes it, and .info says why
OUT=$(cd "$TMP" && GCSH_LUA_DIR="$ROOT/lua" timeout 60 "$TMP/alone/bin/gcsh" -n 2 \
    -e 'print(gcsh.info().mpi_network)' 2>&1 </dev/null)
expect_contains "no preload beside the binary: said" "$OUT" \
    "[0-1] this machine only: pml ob1, btl self,vader, oob lo; mpirun listens on every address (gcsh-loopback.so is not beside gcsh)"
OUT=$(cd "$TMP" && GCSH_LUA_DIR="$ROOT/lua" timeout 60 "$TMP/alone/bin/gcsh" -e 'print(gcsh.lua_dir)' 2>&1 </dev/null)
expect_eq "GCSH_LUA_DIR overrides" "$OUT" "$ROOT/lua"

finish
