#!/usr/bin/env bash
# A stuck s:wait{cpu=true} on GPUs: its hang report names the slot, the
# value waited for and the word's value now, unsigned, in the host
# backend's words (issue 37); run by scripts/gpu-check.sh and
# scripts/gpu-parity.sh:
#   bash tests/gpu/wait_note.sh path/to/gcsh NP [BACKEND]
# (BACKEND=host runs the same session on the host backend, which CI's
# tests/sh/sync_state.sh covers.)
cd "$(dirname "$0")/../.." || exit 1
GCSH=${1:-build-gpu/gcsh}
NP=${2:-2}
BACKEND=${3:-cuda}
. tests/sh/lib.sh
# the hang report's flight file goes to a folder of this test's own
STATE=$(mktemp -d)
export GCSH_STATE_DIR=$STATE
trap 'rm -rf "$STATE"' EXIT
if [ "$NP" -lt 2 ]; then
    skip "tests/gpu/wait_note.sh needs 2 ranks (NP=$NP): rank 1 sets the word rank 0 waits on"
    finish; exit
fi

# rank 1 sets the word to 2^63 at once and to 2^64-1 four seconds on; the
# report at 1 s comes while rank 0 still waits for 2^64-1
gcsh_pipe "$NP" '.timeout 1
c = comm.world() s = c:signals(2) c:barrier()
if rank == 0 then s:wait{slot = 1, value = -1, cmp = "==", cpu = true} print("woke", string.format("%u", s:read(1))) elseif rank == 1 then s:set(0, 1, 9223372036854775808) gcsh.sync() gcsh.sleep(4) s:set(0, 1, -1) end
.timeout 0
s:free() c:free()' --backend "$BACKEND"
echo "$OUT"
FLAT=$(unwrapped "$OUT")
expect_eq "exit 0" "$RC" 0
expect_match "the report names the slot, the value and the word now, unsigned" "$FLAT" \
    '^gcsh:   \[0\] in signal wait \(slot 1 == 18446744073709551615\) for [0-9.]+ s: slot 1 is now 9223372036854775808$'
expect_contains "the wait ends when the word comes" "$OUT" "[0] woke	18446744073709551615"
finish
