#!/usr/bin/env bash
# Nothing listening beyond the machine (issue 35): a gcsh -n session whose
# ranks all run here keeps Open MPI off the network (shell/launch_net.h):
# neither a rank nor mpirun holds a TCP listener on a non-loopback address,
# .info says so, and an MCA parameter the user set stays the user's.  Each session's
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

# ---- 4 ranks on this machine: nothing of the job listens beyond it, not
# even mpirun (Open MPI 4 binds its out-of-band listener to every address
# whatever the MCA parameters say: gcsh-loopback.so makes it loopback)
open_session 4
expect_contains "4 ranks: the session ran" "$OUT" "[0-3] up"
expect_contains "4 ranks: the ranks' listeners were seen" "$LISTEN" "mpirun "
expect_eq "4 ranks: nothing listens on a non-loopback address" "$(beyond_loopback <<<"$LISTEN")" ""
expect_contains "4 ranks: .info says MPI and mpirun stay on this machine" "$OUT" \
    "MPI network: this machine only: pml ob1, btl self,vader, oob lo;
  mpirun listens on loopback only"
expect_eq "4 ranks: exit 0" "$RC" 0

# ---- the ranks connect to mpirun over IPv6 loopback as well as IPv4
for family in IPv4 IPv6; do
    OMPI_MCA_oob_tcp_disable_family=$family open_session 2
    expect_contains "$family disabled: the session ran" "$OUT" "[0-1] up"
    expect_eq "$family disabled: nothing listens beyond loopback" "$(beyond_loopback <<<"$LISTEN")" ""
    expect_eq "$family disabled: exit 0" "$RC" 0
done

# ---- the preload is mpirun's alone: the ranks never have it, and what the
# user preloads reaches them as before
user_so=$(ldd "$GCSH" | awk '/libm\.so/ {print $3}' | head -n 1)
# (a sanitized gcsh wants its runtime first: a user's preload is fine here)
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
bg_start 2
bg_line 'print("env", os.getenv("LD_PRELOAD"), os.getenv("GCSH_LOOPBACK_SO"))'
bg_line 'print("up")'
bg_wait_out "[0-1] up" 90
bg_end
expect_contains "no user preload: the ranks have none" "$OUT" "[0-1] env	nil	nil"
if [ -n "$user_so" ]; then
    LD_PRELOAD=$user_so open_session 2
    expect_eq "the user's preload: nothing listens beyond loopback" \
        "$(beyond_loopback <<<"$LISTEN")" ""
    OUT=$(printf 'print("env", os.getenv("LD_PRELOAD"), os.getenv("GCSH_LOOPBACK_SO"))\n' |
        LD_PRELOAD=$user_so timeout 60 "$GCSH" -n 2 2>&1)
    expect_contains "the user's preload reaches the ranks, alone" "$OUT" "[0-1] env	$user_so	nil"
else
    skip "no libm to preload as a user would"
fi

# ---- an mpirun that GCSH_MPIRUN names, a wrapper script: the preload goes
# through the wrapper's shell to mpirun, which takes it out for the ranks
printf '#!/bin/sh\nmpirun "$@"\n' >"$TMP/mpirun" && chmod +x "$TMP/mpirun"
GCSH_MPIRUN=$TMP/mpirun open_session 2
expect_contains "a wrapper: the session ran" "$OUT" "[0-1] up"
expect_contains "a wrapper: mpirun's listeners were seen" "$LISTEN" "mpirun "
expect_eq "a wrapper: nothing listens beyond loopback" "$(beyond_loopback <<<"$LISTEN")" ""
OUT=$(printf 'print("env", os.getenv("LD_PRELOAD"), os.getenv("GCSH_LOOPBACK_SO"))\n' |
    GCSH_MPIRUN=$TMP/mpirun timeout 60 "$GCSH" -n 2 2>&1)
expect_contains "a wrapper: the ranks have no preload" "$OUT" "[0-1] env	nil	nil"

# ---- the user's choice of out-of-band interfaces: no preload
OMPI_MCA_oob_tcp_if_include=lo open_session 2
expect_contains "the user's oob_tcp_if_include: theirs" "$OUT" "oob as you set it in
  the environment"
expect_not_contains "the user's oob_tcp_if_include: no preload" "$OUT" "mpirun listens"

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
expect_not_contains "a host file: no preload" "$OUT" "mpirun listens"
open_session 2 --host "localhost:2"
expect_contains "--host naming this machine only: loopback" "$OUT" \
    "MPI network: this machine only: pml ob1, btl self,vader, oob lo;
  mpirun listens on loopback only"

finish
