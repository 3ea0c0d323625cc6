#!/usr/bin/env bash
# Nobody else on the machine can stall or block gcsh's start-up (issue 26):
# while the ranks hold back (GCSH_TEST_HOLD_CONNECT, a test facility),
# strangers knock on rank 0's control socket (found in /proc/net/unix, as
# anyone can): silent, with a header announcing 1 GiB, with garbage, from
# another user.  Start-up still completes; TCP listens only where the ranks
# reach rank 0.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
TAGS=()
KNOCKERS=()
cleanup() {
    local p
    for p in "${KNOCKERS[@]}"; do kill "$p" 2>/dev/null; done
    tags_cleanup
}
trap cleanup EXIT

# knock ADDRESS MODE [READY]: connects (ADDRESS: "@name" abstract Unix, or
# host:port), sends MODE's bytes, creates the file READY (its handshake: the
# stranger is in), then prints "MODE closed" when rank 0 hangs up within 20 s,
# else "MODE open"
cat >"$TMP/knock.py" <<'EOF'
import socket, struct, sys
addr, mode = sys.argv[1], sys.argv[2]
ready = sys.argv[3] if len(sys.argv) > 3 else None
if addr.startswith("@"):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("\0" + addr[1:])
else:
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)))
send = {"silent": b"", "garbage": b"GET / HTTP/1.0\r\n\r\n",
        "huge": struct.pack("<IIQ", 1, 0, 1 << 30) + b"x" * 64,
        "partial": struct.pack("<IIQ", 1, 0, 24) + b"\0" * 5}[mode]
s.settimeout(20)
try:
    # a peer that hangs up at once can do so before this write: EPIPE
    s.sendall(send)
    if ready:
        open(ready, "w").close()
    print(mode, "closed" if s.recv(1) == b"" else "open", flush=True)
except (socket.timeout, ConnectionResetError, BrokenPipeError) as e:
    print(mode, "open" if isinstance(e, socket.timeout) else "closed", flush=True)
EOF

# held N [ENV...]: starts a session whose ranks wait for $HOLD before they
# connect; R0 is rank 0's pid once its socket is listed
held() {
    local n=$1 i; shift
    TAG=$(new_tag); TAGS+=("$TAG")
    HOLD="$TMP/hold.$TAG"
    # the input stays open until the job has run it (EOF ends the session)
    (echo 'print("up")'; wait_until 90 grep -q '\] up$' "$TMP/out") |
        env GCSH_TEST_TAG="$TAG" GCSH_TEST_FAULTS=1 \
        GCSH_TEST_HOLD_CONNECT="$HOLD" "$@" timeout 90 "$GCSH" -n "$n" >"$TMP/out" 2>&1 &
    BG=$!
    for i in $(seq 300); do
        R0=$(rank_pid "$TAG" 0)
        [ -n "$R0" ] && grep -q "@gcsh-$R0-" /proc/net/unix && return 0
        sleep 0.1
    done
    return 1
}
finish_held() { touch "$HOLD"; wait "$BG"; RC=$?; OUT=$(cat "$TMP/out"); }

# ---- the Unix socket: strangers of every kind, then the real ranks
held 4
NAME=$(grep -o "@gcsh-$R0-[0-9a-f]*" /proc/net/unix | head -n 1)
expect_match "the socket is found as anyone finds it" "$NAME" '^@gcsh-[0-9]+-[0-9a-f]{8}$'
for mode in silent huge garbage partial; do
    python3 "$TMP/knock.py" "$NAME" "$mode" "$TMP/in.$mode" >"$TMP/knock.$mode" 2>&1 &
    KNOCKERS+=($!)
done
# knocked KNOCKER...: every one of them is in (connected, its bytes sent)
knocked() { local k; for k; do [ -e "$TMP/in.$k" ] || return 1; done; }
# answered KNOCKER: it has its verdict, "closed" or (after its 20 s) "open"
answered() { [ -s "$TMP/knock.$1" ]; }
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && [ -x /usr/bin/python3 ]; then
    # another user is hung up on at once, before the ranks connect (the
    # script on stdin: nobody cannot read our temporary folder)
    OTHER=$(setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 - "$NAME" silent \
        <"$TMP/knock.py" 2>&1)
    expect_eq "another user's connection is closed before anything is read" "$OTHER" "silent closed"
else
    skip "not root (or no setpriv, /usr/bin/python3): no other user to knock as"
fi
# while the ranks still hold back: the strangers that sent something bad are
# hung up on (at once: "open" would come after the knocker's 20 s), and all
# four are in before the ranks connect
wait_until 15 answered huge
expect_eq "an oversized header is dropped at once" "$(cat "$TMP/knock.huge")" "huge closed"
wait_until 15 answered garbage
expect_eq "garbage is dropped at once" "$(cat "$TMP/knock.garbage")" "garbage closed"
wait_until 30 knocked silent huge garbage partial && pass ||
    fail "the strangers did not all get in within 30 s: $(ls "$TMP" | grep '^in\.')"
finish_held
expect_contains "start-up completes past the strangers" "$OUT" "[0-3] up"
expect_eq "start-up completes: status 0" "$RC" 0
expect_not_contains "no control connection went missing" "$OUT" "control connections arrived"
wait "${KNOCKERS[@]}" 2>/dev/null
KNOCKERS=()
expect_eq "a silent stranger is hung up on" "$(cat "$TMP/knock.silent")" "silent closed"
expect_eq "a stranger that stops mid-hello is hung up on" "$(cat "$TMP/knock.partial")" "partial closed"
expect_no_procs "unix: no process left" "$TAG"

# ---- TCP (GCSH_CONTROL=tcp): only on the address the ranks resolve rank 0's
# host name to, never on every interface; a silent stranger there holds
# nothing up either
ADDR=$(getent ahostsv4 "$(hostname)" | awk 'NR == 1 { print $1 }')
held 3 GCSH_CONTROL=tcp
listens() { ss -ltnpH 2>/dev/null | grep "pid=$1," | awk '{ print $4 }'; }
listens_on_addr() { listens "$R0" | grep -q "^$ADDR:"; }
wait_until 30 listens_on_addr
PORT=$(listens "$R0" | grep "^$ADDR:" | head -n 1 | sed 's/.*://')
expect_match "rank 0 listens on $ADDR" "$PORT" '^[0-9]+$'
R1=$(rank_pid "$TAG" 1)
expect_eq "rank 0 has no listener on every interface beyond MPI's own (as rank 1)" \
    "$(listens "$R0" | grep -c '^0\.0\.0\.0:')" "$(listens "$R1" | grep -c '^0\.0\.0\.0:')"
python3 "$TMP/knock.py" "$ADDR:$PORT" silent "$TMP/in.tcp" >"$TMP/knock.tcp" 2>&1 &
KNOCKERS+=($!)
wait_until 30 knocked tcp && pass || fail "tcp: the stranger did not get in within 30 s"
finish_held
expect_contains "tcp: start-up completes past a silent stranger" "$OUT" "[0-2] up"
expect_eq "tcp: status 0" "$RC" 0
expect_no_procs "tcp: no process left" "$TAG"

finish
