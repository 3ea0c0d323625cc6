#!/usr/bin/env bash
# Lesson 21 (the node boundary) on nodes: through the shell at 2, 4 and 8
# ranks with GCSH_RANKS_PER_NODE=2 (1, 2 and 4 nodes; tests/sh/lessons.sh
# walks it on one node at 2, 3 and 4), every claim its text makes checked
# node by node
# (tests/sh/lesson_nodes.lua); as a plain script on 2 simulated nodes under
# a real mpirun (scripts/simnode, as tests/sh/nodes.sh), where the lesson
# says an attendee can get nodes.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh

LUA=$(command -v lua5.4 || command -v lua)
if [ -z "$LUA" ]; then
    skip "no lua5.4 to check lesson 21's claims with"
else
    for np in "2 2" "4 2" "8 2"; do
        # shellcheck disable=SC2086 # (N PER, two words)
        while IFS= read -r line; do
            case "$line" in
            "pass "*) pass ;;
            "fail "*) fail "${line#fail }" ;;
            *) printf '%s\n' "$line" ;;
            esac
        done < <("$LUA" tests/sh/lesson_nodes.lua "$GCSH" $np)
    done
fi

# ---- as a plain script on two simulated nodes
TMP=$(mktemp -d)
if ! scripts/simnode probe true 2>"$TMP/probe"; then
    skip "scripts/simnode cannot make namespaces here: $(head -c 200 "$TMP/probe")"
else
    printf '%s slots=2\nnode1 slots=2\n' "$(hostname)" >"$TMP/hosts"
    OUT=$(timeout 300 "$GCSH" -n 4 --hostfile "$TMP/hosts" --mca plm_rsh_agent "$PWD/scripts/simnode" \
          --mca btl tcp,vader,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \
          lua/tutorial/21-nodes.lua 2>&1 </dev/null); RC=$?
    expect_eq "lesson 21 on 2 simulated nodes: exit 0" "$RC" 0
    expect_not_contains "lesson 21 on 2 simulated nodes: no checkpoint failed" "$OUT" "checkpoint FAILED"
    expect_contains "lesson 21 on 2 simulated nodes: the nodes" "$OUT" "[2] 4 ranks, 2 nodes: I am on node 1, with ranks 2,3"
    expect_contains "lesson 21 on 2 simulated nodes: the moves across them" "$OUT" "[0]   r2: sum(r0.c0, r2.c0) -> r2.c0 (net)"
    expect_all_ranks "lesson 21 on 2 simulated nodes: the solution" "$OUT" "right: member(r) is rank r's place in its node" 4
    expect_eq "lesson 21 on 2 simulated nodes: every line fits 80 columns" "$(awk 'length($0) > 80 && !/^gcsh: /' <<<"$OUT")" ""
fi
rm -rf "$TMP"
finish
