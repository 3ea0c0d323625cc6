#!/usr/bin/env bash
# --share-gpu on a machine without a GPU (src/core/share.h): the options,
# the host backend saying there is nothing to share, and the MPS daemon's
# lifecycle against a stand-in nvidia-cuda-mps-control first on PATH that
# records how it is called (one GPU made visible through GCSH_NVIDIA_PROC):
# started once and quit at a normal exit, after Ctrl-C, after a killed rank
# (rank 1, and rank 0, which holds the guard's pipe); never started when a
# server already answers, with =nomps, or with --backend host; a daemon that
# cannot start is said once and the job runs.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# ---- options
OUT=$("$GCSH" -n 2 --share-gpu -e 'print("ran")' 2>&1); RC=$?
expect_eq "--share-gpu on the host: runs" "$RC" 0
expect_contains "--share-gpu on the host: the job's output" "$OUT" "[0-1] ran"
expect_contains "--share-gpu on the host: says there is no GPU to share" "$OUT" \
    "gcsh: --share-gpu: the host backend has no GPU to share; the ranks run on CPUs"
OUT=$("$GCSH" -n 2 --share-gpu=nomps -e 'print("ran")' 2>&1); RC=$?
expect_eq "--share-gpu=nomps: runs" "$RC" 0
OUT=$(GCSH_SHARE_GPU=1 "$GCSH" -n 2 -e 'print("ran")' 2>&1); RC=$?
expect_contains "GCSH_SHARE_GPU=1 asks for it too" "$OUT" "the host backend has no GPU to share"
OUT=$("$GCSH" -n 2 -e 'print("ran")' 2>&1)
expect_not_contains "without it nothing is said" "$OUT" "share"
OUT=$(GCSH_SHARE_GPU=yes "$GCSH" -e 'print(1)' 2>&1); RC=$?
expect_contains "GCSH_SHARE_GPU=yes is refused, naming the values" "$OUT" \
    "GCSH_SHARE_GPU must be 1, mps, nomps or 0"
[ "$RC" != 0 ] && pass || fail "GCSH_SHARE_GPU=yes: non-zero exit (got $RC)"
OUT=$("$GCSH" --share-gpu=often -e 'print(1)' 2>&1); RC=$?
expect_contains "--share-gpu=often is refused" "$OUT" "'--share-gpu' needs nothing or =nomps, got 'often'"
[ "$RC" != 0 ] && pass || fail "--share-gpu=often: non-zero exit (got $RC)"
OUT=$("$GCSH" --help 2>&1)
expect_contains "--help lists --share-gpu[=nomps]" "$OUT" "--share-gpu[=nomps] "

# ---- the MPS lifecycle, against a stand-in
mkdir -p "$TMP/bin" "$TMP/proc/0000:00:06.0"
LOG=$TMP/mps.log
# the stand-in gets a minimal environment from gcsh (src/core/mps.h): what it
# needs is written into it; $TMP/fail makes -d fail, $TMP/slow makes quit
# take 2 s, $TMP/nopid makes -d come up without its pid file
cat >"$TMP/bin/nvidia-cuda-mps-control" <<STANDIN
#!/bin/sh
if [ "\${1:-}" = -d ]; then
    [ -e "$TMP/fail" ] && { echo "fail \$CUDA_MPS_PIPE_DIRECTORY" >>"$LOG"; echo "cannot open /dev/nvidiactl"; exit 3; }
    echo "start \$CUDA_MPS_PIPE_DIRECTORY \$CUDA_MPS_LOG_DIRECTORY cvd=\${CUDA_VISIBLE_DEVICES-unset} extra=\${GCSH_TEST_EXTRA-unset}" >>"$LOG"
    : >"\$CUDA_MPS_PIPE_DIRECTORY/control"
    [ -e "$TMP/nopid" ] || echo 4242 >"\$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid"
    exit 0
fi
read -r cmd
[ -e "$TMP/slow" ] && sleep 2
echo "\$cmd \$CUDA_MPS_PIPE_DIRECTORY" >>"$LOG"
[ "\$cmd" = quit ] && rm -f "\$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid"
exit 0
STANDIN
chmod +x "$TMP/bin/nvidia-cuda-mps-control"
fake() { env PATH="$TMP/bin:$PATH" GCSH_NVIDIA_PROC="$TMP/proc" CUDA_MPS_PIPE_DIRECTORY= "$@"; }
calls() { grep -c "^$1 " "$LOG" 2>/dev/null || true; }
# logged_dir [start|fail]: the daemon's folder, from the stand-in's log (not
# from a look at /tmp, where another test run's folders may be)
logged_dir() { sed -n "s/^${1:-start} \(.*\)\/pipe\( .*\)*\$/\1/p" "$LOG" | tail -n 1; }
# gone NAME: the daemon's folder (from the log) is removed within 5 s
gone() {
    local dir i
    dir=$(logged_dir)
    for i in $(seq 50); do
        [ -n "$dir" ] && [ ! -e "$dir" ] && { pass; return; }
        sleep 0.1
    done
    fail "$1: the daemon's folder '$dir' is still there"
}
# quit_within NAME: the stand-in got "quit" within 5 s (the guard's work)
quit_within() {
    local i
    for i in $(seq 50); do
        [ "$(calls quit)" = 1 ] && { pass; return; }
        sleep 0.1
    done
    fail "$1: quit was called $(calls quit) times"; cat "$LOG" | sed 's/^/  | /'
}

: >"$LOG"
start=$SECONDS
OUT=$(fake "$GCSH" -n 2 --share-gpu -e 'print("ran")' 2>&1); RC=$?
expect_eq "normal exit: status" "$RC" 0
# the other rank follows the first rank's verdict at once (a missed one
# costs its 20 s wait)
[ $((SECONDS - start)) -lt 15 ] && pass || fail "normal exit: took $((SECONDS - start)) s"
expect_eq "normal exit: started once" "$(calls start)" 1
expect_eq "normal exit: quit once, before gcsh returned" "$(calls quit)" 1
dir=$(logged_dir)
[ -n "$dir" ] && [ ! -e "$dir" ] && pass || fail "normal exit: the folder '$dir' is gone when gcsh returns"
expect_contains "normal exit: the private pipe directory" "$(cat "$LOG")" "start /tmp/gcsh-mps-$(id -u)-"
gone "normal exit"
expect_not_contains "normal exit: no time-slicing warning" "$OUT" "time-sliced"

: >"$LOG"
OUT=$(fake "$GCSH" -n 4 --share-gpu -e 'print("ran")' 2>&1); RC=$?
expect_eq "4 ranks: one daemon for the machine" "$(calls start)" 1
expect_eq "4 ranks: quit once" "$(calls quit)" 1

: >"$LOG"
OUT=$(fake timeout -s INT 8 "$GCSH" -n 2 --share-gpu -e 'gcsh.sleep(30)' 2>&1); RC=$?
expect_contains "Ctrl-C: the command was interrupted" "$OUT" "interrupted"
expect_eq "Ctrl-C: started once" "$(calls start)" 1
quit_within "Ctrl-C: quit"
gone "Ctrl-C"

: >"$LOG"
kill_rank='if rank == R then os.execute("kill -9 " .. io.open("/proc/self/stat"):read("n")) end gcsh.sleep(10)'
OUT=$(fake timeout 60 "$GCSH" -n 2 --share-gpu -e "${kill_rank/R/1}" 2>&1); RC=$?
expect_eq "rank 1 killed: the job's status" "$RC" 69
quit_within "rank 1 killed: quit"
gone "rank 1 killed"

: >"$LOG"
OUT=$(fake timeout 60 "$GCSH" -n 2 --share-gpu -e "${kill_rank/R/0}" 2>&1); RC=$?
[ "$RC" != 0 ] && pass || fail "rank 0 killed: non-zero status (got $RC)"
quit_within "rank 0 killed (the guard's pipe closes): quit"
gone "rank 0 killed"

: >"$LOG"
OUT=$(fake "$GCSH" -n 2 --share-gpu=nomps -e 'print("ran")' 2>&1)
expect_eq "=nomps: never started" "$(calls start)" 0
: >"$LOG"
OUT=$(fake "$GCSH" -n 2 --share-gpu --backend host -e 'print("ran")' 2>&1)
expect_eq "--backend host: never started" "$(calls start)" 0
: >"$LOG"
OUT=$(fake "$GCSH" -n 1 --share-gpu -e 'print("ran")' 2>&1)
expect_eq "1 rank on 1 GPU (nothing shared): never started" "$(calls start)" 0

# a server that answers already: a listening socket in the user's pipe dir
if command -v python3 >/dev/null; then
    mkdir -p "$TMP/user-mps"
    python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8)
time.sleep(60)' "$TMP/user-mps/control" &
    SERVER=$!
    for i in $(seq 50); do [ -S "$TMP/user-mps/control" ] && break; sleep 0.1; done
    : >"$LOG"
    OUT=$(env PATH="$TMP/bin:$PATH" GCSH_NVIDIA_PROC="$TMP/proc" \
          CUDA_MPS_PIPE_DIRECTORY="$TMP/user-mps" "$GCSH" -n 2 --share-gpu -e 'print("ran")' 2>&1)
    RC=$?
    kill "$SERVER" 2>/dev/null
    expect_eq "a server answers: runs" "$RC" 0
    expect_eq "a server answers: never started, never quit" "$(cat "$LOG")" ""
else
    skip "python3 is not installed (the running-server case)"
fi

: >"$LOG"
touch "$TMP/fail"
OUT=$(fake "$GCSH" -n 2 --share-gpu -e 'print("ran")' 2>&1); RC=$?
rm -f "$TMP/fail"
expect_eq "a daemon that cannot start: the job runs" "$RC" 0
expect_contains "a daemon that cannot start: the job's output" "$OUT" "[0-1] ran"
expect_contains "a daemon that cannot start: said with the reason" "$OUT" \
    "gcsh: MPS could not start: $TMP/bin/nvidia-cuda-mps-control -d failed (status 3: cannot open /dev/nvidiactl); ranks that share a GPU take turns on it (time-sliced)"
expect_eq "a daemon that cannot start: said once" \
    "$(grep -c 'MPS could not start' <<<"$OUT")" 1
dir=$(logged_dir fail)
[ -n "$dir" ] && [ ! -e "$dir" ] && pass || fail "a daemon that cannot start: its folder '$dir' is removed"

# the daemon gets a minimal environment: not the rank's CUDA_VISIBLE_DEVICES
# (it would renumber the devices its clients name), nor anything else
: >"$LOG"
OUT=$(fake env CUDA_VISIBLE_DEVICES=0 GCSH_TEST_EXTRA=x "$GCSH" -n 2 --share-gpu -e 'print("ran")' 2>&1)
expect_contains "the daemon's environment: no CUDA_VISIBLE_DEVICES, nothing else" "$(cat "$LOG")" \
    "cvd=unset extra=unset"

# gcsh -n returns once the daemon has quit and its folder is gone (a quit
# that takes 2 s)
: >"$LOG"; touch "$TMP/slow"
OUT=$(fake "$GCSH" -n 2 --share-gpu -e 'print("ran")' 2>&1)
expect_eq "a slow quit: done when gcsh returns" "$(calls quit)" 1
dir=$(logged_dir)
[ -n "$dir" ] && [ ! -e "$dir" ] && pass || fail "a slow quit: the folder '$dir' is gone when gcsh returns"
rm -f "$TMP/slow"

# a daemon whose pid file never comes: said, the job runs, the folder goes
: >"$LOG"; touch "$TMP/nopid"
OUT=$(fake "$GCSH" -n 2 --share-gpu -e 'print("ran")' 2>&1); RC=$?
rm -f "$TMP/nopid"
expect_contains "a daemon that does not come up: said" "$OUT" "the daemon did not come up in 5 s"
expect_eq "a daemon that does not come up: the job runs" "$RC" 0
gone "a daemon that does not come up"

# GCSH_MPS_KEEP=1 keeps the folder and the daemon's logs; gcsh -n still
# returns only once the daemon has quit (a quit that takes 2 s), which the
# guard marks in the kept folder
: >"$LOG"; touch "$TMP/slow"
OUT=$(fake env GCSH_MPS_KEEP=1 "$GCSH" -n 2 --share-gpu -e 'print("ran")' 2>&1)
expect_eq "GCSH_MPS_KEEP: the daemon quit before gcsh returned" "$(calls quit)" 1
rm -f "$TMP/slow"
dir=$(logged_dir)
[ -n "$dir" ] && [ -d "$dir/log" ] && pass || fail "GCSH_MPS_KEEP: the folder '$dir' is kept"
[ -n "$dir" ] && [ -e "$dir/guard-done" ] && pass || fail "GCSH_MPS_KEEP: the guard's mark in '$dir'"
[ -n "$dir" ] && rm -rf "$dir"

# under a plain mpirun the folder is named by the job: one that is not this
# user's private folder is refused at once (no wait), and the job runs
MPIRUN=(mpirun -np 2 --oversubscribe)
[ "$(id -u)" = 0 ] && MPIRUN+=(--allow-run-as-root)
key=share-test-$$
folder=/tmp/gcsh-mps-$(id -u)-$(printf '%s' "GCSH_SHARE_KEY$key" | python3 -c '
import sys
h = 0xcbf29ce484222325
for b in sys.stdin.buffer.read(): h = ((h ^ b) * 0x100000001b3) % 2**64
print("%016x" % h)')
mkdir -m 0755 "$folder"
: >"$LOG"
start=$SECONDS
OUT=$(fake env GCSH_SHARE_KEY="$key" GCSH_SHARE_GPU=1 timeout 60 "${MPIRUN[@]}" \
      -x PATH -x GCSH_NVIDIA_PROC -x GCSH_SHARE_KEY -x GCSH_SHARE_GPU -x CUDA_MPS_PIPE_DIRECTORY \
      "$GCSH" -e 'print("ran")' 2>&1); RC=$?
rmdir "$folder"
expect_contains "a folder not ours: said" "$OUT" "$folder exists and is not this user's private folder"
expect_contains "a folder not ours: the job runs" "$OUT" "[0-1] ran"
expect_eq "a folder not ours: never started" "$(calls start)" 0
[ $((SECONDS - start)) -lt 15 ] && pass || fail "a folder not ours: refused at once (took $((SECONDS - start)) s)"

# a launcher that does not say which ranks share the machine
cat >"$TMP/nolocal" <<'NOLOCAL'
#!/bin/sh
unset OMPI_COMM_WORLD_LOCAL_RANK OMPI_COMM_WORLD_LOCAL_SIZE
exec "$@"
NOLOCAL
chmod +x "$TMP/nolocal"
: >"$LOG"
OUT=$(fake env GCSH_SHARE_GPU=1 timeout 60 "${MPIRUN[@]}" -x PATH -x GCSH_NVIDIA_PROC -x GCSH_SHARE_GPU \
      "$TMP/nolocal" "$GCSH" -e 'print("ran")' 2>&1)
expect_contains "an unknown launcher: said" "$OUT" \
    "MPS not started: the launcher does not say which ranks share this machine"
expect_eq "an unknown launcher: never started" "$(calls start)" 0

OUT=$(env PATH="/usr/bin:/bin" GCSH_NVIDIA_PROC="$TMP/proc" "$GCSH" -n 2 --share-gpu \
      -e 'print("ran")' 2>&1); RC=$?
expect_contains "no control program on PATH: said" "$OUT" \
    "gcsh: MPS not started: nvidia-cuda-mps-control is not on PATH"
expect_eq "no control program on PATH: the job runs" "$RC" 0
finish
