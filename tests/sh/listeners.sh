#!/usr/bin/env bash
# Nothing listening beyond the machine (issue 35): a gcsh -n session whose
# ranks all run here keeps Open MPI off the network (shell/launch_net.h):
# no rank holds a TCP listener on a non-loopback address, .info says so,
# and an MCA parameter the user set stays the user's.  Each session's
# listeners are found by its own pids (other sessions run beside this one).
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
TAGS=()
trap tags_cleanup EXIT

if ! command -v ss >/dev/null || ! ss -ltnpH >/dev/null 2>&1; then
    skip "ss (iproute2) is missing or cannot list listeners here"
    finish
    exit
fi

# listeners TAG: "comm address:port" for each TCP listener of the tagged job.
listeners() {
    local pids p
    pids=$(tagged_pids "$1" | paste -sd'|')
    [ -n "$pids" ] || return
    ss -ltnpH | while read -r _ _ _ local _ users; do
        [[ "$users" =~ \(\"([^\"]+)\",pid=($pids), ]] && echo "${BASH_REMATCH[1]} $local"
    done
}
# beyond_loopback: the lines of stdin whose address is not a loopback one.
beyond_loopback() {
    grep -vE ' (127\.[0-9.]+|\[::1\]|\[::ffff:127\.[0-9.]+\]):[0-9]+$'
}
# open_session N ARGS...: a session of N ranks, held open once every rank
# printed "up" (its tag in TAG); LISTEN has its listeners then.
open_session() {
    local n=$1; shift
    bg_start "$n" "$@"
    bg_line 'print("up")'
    if bg_wait_out "[0-$((n - 1))] up" 90; then LISTEN=$(listeners "$TAG"); else LISTEN=""; fi
    bg_line '.info'
    bg_end
}

# ---- 4 ranks on this machine: no rank listens beyond it
open_session 4
expect_contains "4 ranks: the session ran" "$OUT" "[0-3] up"
expect_eq "4 ranks: no rank listens on a non-loopback address" \
    "$(grep '^gcsh ' <<<"$LISTEN" | beyond_loopback)" ""
expect_contains "4 ranks: .info says MPI stays on this machine" "$OUT" \
    "MPI network: this machine only: pml ob1, btl self,vader, oob lo"
# mpirun's own out-of-band listener: Open MPI 4's mpirun (ORTE) binds it to
# every address whatever the MCA parameters say (launch_net.h); anything
# more than that one pair (IPv4, IPv6) is a failure
runner=$(grep -v '^gcsh ' <<<"$LISTEN" | beyond_loopback)
if [ -n "$runner" ] && mpirun --version 2>/dev/null | grep -q 'Open MPI) 4\.'; then
    expect_eq "4 ranks: mpirun listens beyond loopback only for its out-of-band pair" \
        "$(grep -vcE '^mpirun (0\.0\.0\.0|\*|\[::\]):[0-9]+$' <<<"$runner")" 0
    [ "$(wc -l <<<"$runner")" -le 2 ] && pass || fail "4 ranks: mpirun has more listeners: $runner"
    skip "mpirun's out-of-band listener (Open MPI 4 binds it to every address): $(paste -sd' ' <<<"$runner")"
else
    expect_eq "4 ranks: mpirun listens on loopback only" "$runner" ""
fi

# ---- the user's setting wins: a TCP transport asked for listens as asked
# (which shows that the check above sees the ranks' listeners)
OMPI_MCA_btl=self,vader,tcp open_session 2
expect_contains "the user's btl: .info names it as theirs" "$OUT" \
    "btl as you set it in the environment"
expect_contains "the user's btl: the others stay gcsh's" "$OUT" "pml ob1"
[ -n "$(grep '^gcsh ' <<<"$LISTEN" | beyond_loopback)" ] && pass ||
    fail "the user's btl: the ranks opened no TCP listener (listeners seen: $LISTEN)"
open_session 2 --mca pml ob1
expect_contains "--mca: .info names the setting as the user's" "$OUT" "pml as you set it in --mca"

# ---- other machines named: Open MPI's own choice stands
echo "localhost slots=2" >"$TMP/hosts"
open_session 2 --hostfile "$TMP/hosts"
expect_contains "a host file: Open MPI chooses the interfaces" "$OUT" \
    "MPI network: machines from --hostfile: Open MPI's choice of interfaces"
open_session 2 --host "localhost:2"
expect_contains "--host naming this machine only: loopback" "$OUT" \
    "MPI network: this machine only:"

finish
