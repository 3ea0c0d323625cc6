#!/usr/bin/env bash
# The container recipe (Dockerfile) for attendees who are not on Linux:
# where a container runtime works (`docker info` succeeds; CONTAINER=podman
# picks another), the image builds from this tree, `make run` in it starts
# the shell on 2 ranks and answers, and `make preflight` in it passes (every
# lesson's introduction and first part at 4 ranks).  Where none works, the
# test is skipped, saying why: the recipe is then untested here (README and
# INSTRUCTOR.md say so).
# tests/run.sh: slow (builds an image: minutes)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh

RUNTIME=${CONTAINER:-docker}
[ -f Dockerfile ] && pass || fail "a Dockerfile at the top of the tree"
# the packages the image installs are the ones install-deps.sh names for Debian
for pkg in $(grep -o '|[^|]*|[^|]*|[^|]*"$' scripts/install-deps.sh | cut -d'|' -f2 | grep -v '^(' | tr ' ' '\n'); do
    grep -qw -- "$pkg" Dockerfile && pass || fail "the Dockerfile installs $pkg (scripts/install-deps.sh names it for Debian)"
done

if ! command -v "$RUNTIME" >/dev/null 2>&1; then
    skip "container: no $RUNTIME here: the Dockerfile was not built (untested)"
    finish; exit
fi
if ! why=$("$RUNTIME" info 2>&1 >/dev/null); then
    skip "container: '$RUNTIME info' fails ($(grep -v '^\s*$' <<<"$why" | tail -n 1 | cut -c1-120)): the Dockerfile was not built (untested)"
    finish; exit
fi

TAG=gcsh-test-$$
cleanup() { "$RUNTIME" rmi -f "$TAG" >/dev/null 2>&1; }
trap cleanup EXIT
out=$(timeout 1800 "$RUNTIME" build -t "$TAG" . 2>&1); rc=$?
[ $rc = 0 ] && pass || { fail "the image builds (exit $rc)"; printf '%s\n' "$out" | tail -n 20 | sed 's/^/  | /'; finish; exit; }

OUT=$(printf 'print("in the box: " .. size)\n' | timeout 300 "$RUNTIME" run --rm -i --shm-size=1g "$TAG" 2>&1); RC=$?
expect_contains "make run in the image starts 2 ranks, which answer" "$OUT" "[0-1] in the box: 2"
expect_eq "make run in the image ends cleanly" "$RC" 0

OUT=$(timeout 600 "$RUNTIME" run --rm --shm-size=1g "$TAG" make preflight 2>&1); RC=$?
expect_contains "make preflight in the image: the seat is ready" "$OUT" "preflight: ready: host, 4 ranks"
expect_eq "make preflight in the image succeeds" "$RC" 0
finish
