#!/usr/bin/env bash
# Building and setting up as on any Linux: the user's CFLAGS and LDFLAGS add
# to what the build needs (make CFLAGS="-O2 -march=native"); the dependency
# check uses what is installed, installs only what is missing where apt-get
# is, and elsewhere lists it with Debian's, Ubuntu's and Fedora's package
# names, the test-only ones apart.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
T=$'\t'
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# ---- make CFLAGS=... LDFLAGS=...: appended, never replacing the include paths
# (V=1: the whole command lines, which the check reads)
# (the host backend alone: the flags are the C compiler's)
LOG=$TMP/build.log
make -j2 --no-print-directory V=1 BUILD="$TMP/b" CUDA=0 CFLAGS="-O2 -march=native -DGCSH_USER_CFLAGS" \
    LDFLAGS="-Wl,-O1" >"$LOG" 2>&1; RC=$?
expect_eq "make CFLAGS=\"-O2 -march=native\" builds" "$RC" 0
[ "$RC" = 0 ] || tail -n 20 "$LOG" | sed 's/^/  | /'
MAIN=$(grep -E -- ' -o [^ ]*/src/main\.o ' "$LOG")
expect_contains "the compile line keeps the include paths" "$MAIN" "-Isrc"
expect_contains "the compile line has the user's CFLAGS, last" "$MAIN" "-O2 -march=native -DGCSH_USER_CFLAGS -MMD"
LINK=$(grep -E -- " -o $TMP/b/gcsh " "$LOG")
expect_contains "the link line has the user's LDFLAGS" "$LINK" "-Wl,-O1"
expect_contains "the link line keeps the libraries" "$LINK" "-lreadline"
OUT=$(GCSH_LUA_DIR="$PWD/lua" timeout 60 "$TMP/b/gcsh" -e 'print("built", #arg)' 2>&1)
expect_eq "the binary runs" "$OUT" "built${T}0"
OUT=$(make -s --no-print-directory print-deps-flags 2>&1)
expect_match "make print-deps-flags: what the dependency check compiles with" "$OUT" "^LUA_CFLAGS='.*' LUA_LIBS='.*-llua"

# ---- scripts/install-deps.sh on a machine without some tools
# A PATH of everything in /usr/bin but what the case removes.
shim() {
    rm -rf "$TMP/bin"
    mkdir -p "$TMP/bin"
    local f
    for f in /usr/bin/* /usr/local/bin/*; do [ -e "$f" ] && ln -sf "$f" "$TMP/bin/"; done
    for f in "$@"; do rm -f "$TMP/bin/$f"; done
}
deps() { OUT=$(PATH="$TMP/bin" bash scripts/install-deps.sh "$@" 2>&1); RC=$?; }

shim apt-get tmux python3
rm -f "$TMP"/bin/python3.*
deps build
expect_eq "build: nothing missing, nothing said (tmux and python3 are the tests')" "$OUT:$RC" ":0"
deps test
expect_eq "test: missing test tools and no apt-get: exit 1" "$RC" 1
expect_contains "test: listed apart, each saying what it is for" "$OUT" "install-deps: for make test only (the tests use them):
  tmux (the terminal tests)
  python3 (tests/sh/trace.sh loads traces with its json module)"
expect_contains "test: Debian's names" "$OUT" "  Debian: apt-get install tmux python3"
expect_contains "test: Ubuntu's names" "$OUT" "  Ubuntu: apt-get install tmux python3"
expect_contains "test: Fedora's names" "$OUT" "  Fedora: dnf install tmux python3"
expect_not_contains "test: nothing installed" "$OUT" "installing"

# a library the build needs: found by compiling, as the build would
printf 'int main(void) { return 0; }\n' >"$TMP/x.c"
cat >"$TMP/cc" <<EOF
#!/bin/sh
# a C compiler without jansson
for a in "\$@"; do [ "\$a" = -ljansson ] && exit 1; done
exec cc "\$@"
EOF
chmod +x "$TMP/cc"
OUT=$(PATH="$TMP/bin" CC="$TMP/cc" bash scripts/install-deps.sh build 2>&1); RC=$?
expect_eq "a missing library: exit 1" "$RC" 1
expect_contains "a missing library: named, with each distribution's package" "$OUT" \
    "install-deps: gcsh needs, to build:
  jansson headers and library (trace files)"
expect_contains "a missing library: Fedora's name" "$OUT" "  Fedora: dnf install jansson-devel"

# where apt-get is: it installs exactly what is missing (a stand-in records it)
shim tmux python3
rm -f "$TMP"/bin/python3.*
cat >"$TMP/bin/apt-get" <<EOF
#!/bin/sh
echo "\$*" >>"$TMP/apt.log"
EOF
chmod +x "$TMP/bin/apt-get"
deps test
expect_eq "apt-get: asked for the missing ones only" "$(cat "$TMP/apt.log")" "update -qq
install -y -qq --no-install-recommends tmux python3"
expect_contains "apt-get: says what it installs" "$OUT" "install-deps: installing tmux python3"
expect_contains "apt-get: what is still missing after it, said" "$OUT" "install-deps: still missing after apt-get:"
expect_eq "apt-get: still missing: exit 1" "$RC" 1

finish
