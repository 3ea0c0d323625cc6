#!/usr/bin/env bash
# What gcsh needs, found the way the build finds it (any Linux: Debian,
# Fedora, RHEL with environment modules, a prefix of one's own):
#
#   scripts/install-deps.sh [build|test]
#
# build (make run): a C compiler, make, Open MPI (mpicc, mpirun), Lua 5.4,
# GNU readline and jansson, each as headers and a library the compiler
# takes; test (make test) adds what only the tests use: tmux, a Lua 5.4
# interpreter, python3 and the dkjson module.  Whatever is missing is
# installed with apt-get where there is one (as root, or through sudo), and
# only that; elsewhere the script lists it, with the package names of
# Debian, Ubuntu and Fedora, and fails.  Nothing missing: it prints nothing.
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-build}
case "$what" in build | test) ;; *) echo "usage: $0 [build|test]" >&2; exit 2 ;; esac

# The flags the Makefile computes (pkg-config, mpicc --showme), so that a
# check passes exactly when the build would find the same thing.
eval "$(make -s --no-print-directory print-deps-flags 2>/dev/null)"
CC=${CC:-cc}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# compiles: PROGRAM FLAGS...: it compiles and links.
compiles() {
    local prog=$1; shift
    printf '%s\n' "$prog" >"$TMP/t.c"
    # shellcheck disable=SC2086 # flags are words
    "$CC" "$TMP/t.c" -o "$TMP/t" "$@" >/dev/null 2>&1
}
has() { command -v "$1" >/dev/null 2>&1; }
lua_interpreter() { command -v lua5.4 || command -v lua; }

have_cc() { has "$CC"; }
have_make() { has make; }
have_mpi() { has mpicc && has mpirun; }
have_lua() {
    compiles '#include <lua.h>
#include <lauxlib.h>
#if LUA_VERSION_NUM != 504
#error not Lua 5.4
#endif
int main(void) { lua_close(luaL_newstate()); return 0; }' $LUA_CFLAGS $LUA_LIBS
}
have_readline() {
    compiles '#include <stdio.h>
#include <readline/readline.h>
int main(void) { return rl_initialize(); }' $READLINE_LIBS
}
have_jansson() {
    compiles '#include <jansson.h>
int main(void) { json_decref(json_object()); return 0; }' $JANSSON_LIBS
}
have_tmux() { has tmux; }
have_lua_bin() { lua_interpreter >/dev/null; }
have_python3() { has python3; }
have_dkjson() { local lua; lua=$(lua_interpreter) && "$lua" -e 'require "dkjson"' >/dev/null 2>&1; }

# need|check|what it is|Debian|Ubuntu|Fedora (Debian's names are apt-get's)
BUILD_NEEDS=(
    "have_cc|a C compiler (cc)|gcc|gcc|gcc"
    "have_make|make|make|make|make"
    "have_mpi|Open MPI (mpicc, mpirun; on Fedora and RHEL: module load mpi/openmpi-x86_64)|libopenmpi-dev openmpi-bin|libopenmpi-dev openmpi-bin|openmpi-devel"
    "have_lua|Lua 5.4 headers and library (lua.h, liblua5.4)|liblua5.4-dev|liblua5.4-dev|lua-devel"
    "have_readline|GNU readline headers and library|libreadline-dev|libreadline-dev|readline-devel"
    "have_jansson|jansson headers and library (trace files)|libjansson-dev|libjansson-dev|jansson-devel"
)
TEST_NEEDS=(
    "have_tmux|tmux (the terminal tests)|tmux|tmux|tmux"
    "have_lua_bin|a Lua 5.4 interpreter (tests/sh/readme.sh reads the README)|lua5.4|lua5.4|lua"
    "have_python3|python3 (tests/sh/trace.sh loads traces with its json module)|python3|python3|python3"
    "have_dkjson|the dkjson Lua module (bench's json=)|lua-dkjson|lua-dkjson|(luarocks install dkjson)"
)

# missing ROWS...: prints the rows whose check fails.
missing() {
    local row
    for row in "$@"; do "${row%%|*}" || printf '%s\n' "$row"; done
}
field() { cut -d'|' -f"$2" <<<"$1" | tr '\n' ' ' | sed 's/ *$//'; }

# The missing rows of what was asked for, build ones first.
find_missing() {
    MISSING_BUILD=$(missing "${BUILD_NEEDS[@]}")
    MISSING_TEST=""
    [ "$what" = test ] && MISSING_TEST=$(missing "${TEST_NEEDS[@]}")
    ALL_MISSING=$(printf '%s\n%s' "$MISSING_BUILD" "$MISSING_TEST" | sed '/^$/d')
}

# Says what is missing and how to install it on each distribution.
report() {
    {
        [ -n "$MISSING_BUILD" ] && echo "install-deps: gcsh needs, to build:" &&
            while IFS= read -r r; do echo "  $(field "$r" 2)"; done <<<"$MISSING_BUILD"
        [ -n "$MISSING_TEST" ] &&
            echo "install-deps: ${MISSING_BUILD:+and, }for make test only (the tests use them):" &&
            while IFS= read -r r; do echo "  $(field "$r" 2)"; done <<<"$MISSING_TEST"
        echo "install them with the system's package manager:"
        install_line Debian "apt-get install" 3
        install_line Ubuntu "apt-get install" 4
        install_line Fedora "dnf install" 5
    } >&2
}

# install_line DISTRO COMMAND COLUMN: the packages of the missing rows;
# a "(...)" entry (no package there) is said after them.
install_line() {
    local names="" notes="" row name
    while IFS= read -r row; do
        name=$(field "$row" "$3")
        case "$name" in "("*) notes+=" $name" ;; *) names+=" $name" ;; esac
    done <<<"$ALL_MISSING"
    echo "  $1:${names:+ $2$names}${notes:+${names:+;}$notes}"
}

find_missing
[ -z "$ALL_MISSING" ] && exit 0
sudo=""
[ "$(id -u)" != 0 ] && has sudo && sudo=sudo
if ! has apt-get || { [ "$(id -u)" != 0 ] && [ -z "$sudo" ]; }; then
    report
    exit 1
fi
packages=$(field "$ALL_MISSING" 3)
echo "install-deps: installing $packages"
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086 # package names are words
$sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends $packages >/dev/null
eval "$(make -s --no-print-directory print-deps-flags 2>/dev/null)" # mpicc may be new
find_missing
if [ -n "$ALL_MISSING" ]; then
    echo "install-deps: still missing after apt-get:" >&2
    report
    exit 1
fi
echo "install-deps: done"
