#!/usr/bin/env bash
# Benchmarks of the shell itself (issue: the shell), on this machine:
#   1. per-line overhead: 20,000 trivial statements piped through gcsh -n 2 / -n 4,
#      minus the same session with no lines, per line (median of 3);
#   2. start-up: gcsh -n 2 -e 'x=1' against a bare MPI hello started the same way
#      (median of 5 each, interleaved), as a ratio;
#   3. resident memory per rank on the host backend;
#   4. idle cost: CPU used by each rank over 5 s at the prompt.
# Usage: scripts/bench-shell.sh [build/gcsh]
set -euo pipefail
cd "$(dirname "$0")/.."
GCSH=$(realpath "${1:-build/gcsh}")
LINES=${LINES:-20000}
export GCSH_HISTORY=""
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
seconds_of() { local t0 t1; t0=$(now); "$@" >/dev/null 2>&1; t1=$(now); echo "$t1 - $t0" | bc -l; }

echo "machine: $(nproc) cores, $(uname -r), $(mpirun --version | head -n 1)"

# 1. per-line overhead
awk -v n="$LINES" 'BEGIN { for (i = 0; i < n; i++) print "x=1" }' > "$tmp/lines"
: > "$tmp/empty"
for n in 2 4; do
    per=()
    for i in 1 2 3; do
        full=$(seconds_of sh -c "'$GCSH' -n $n < '$tmp/lines'")
        base=$(seconds_of sh -c "'$GCSH' -n $n < '$tmp/empty'")
        per+=("$(echo "($full - $base) * 1000000 / $LINES" | bc -l)")
    done
    us=$(printf '%s\n' "${per[@]}" | median)
    printf 'per-line overhead at %d ranks: %.1f us/line (%d lines, median of 3; target at 2 ranks: 25)\n' "$n" "$us" "$LINES"
done

# 2. start-up against a bare MPI hello
mpicc -O2 -o "$tmp/hello" scripts/bench/mpi_hello.c
mpiflags="--quiet --oversubscribe --bind-to none"
[ "$(id -u)" = 0 ] && mpiflags="$mpiflags --allow-run-as-root"
g=() h=()
for i in 1 2 3 4 5; do
    g+=("$(seconds_of "$GCSH" -n 2 -e 'x=1')")
    h+=("$(seconds_of mpirun -np 2 $mpiflags "$tmp/hello")")
done
gm=$(printf '%s\n' "${g[@]}" | median); hm=$(printf '%s\n' "${h[@]}" | median)
printf 'start-up at 2 ranks: gcsh %.3f s, MPI hello %.3f s, ratio %.2f (target 1.3)\n' \
    "$gm" "$hm" "$(echo "$gm / $hm" | bc -l)"

# 3. resident memory per rank
"$GCSH" -n 2 -e 'for l in io.lines("/proc/self/status") do
    local kb = l:match("^VmRSS:%s*(%d+)") if kb then print(string.format("%.1f MiB", kb / 1024)) end end' |
    sed 's/^/resident memory per rank (host backend): /'

# 4. idle cost at the prompt
mkfifo "$tmp/in"
"$GCSH" -n 2 < "$tmp/in" > /dev/null 2>&1 &
exec 3> "$tmp/in"   # keep the session's stdin open: it idles at the prompt
sleep 2
pids=$(pgrep -f "^$GCSH" | grep -v "^$$\$" || true)
ticks() { for p in $pids; do awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0; done; }
before=($(ticks)); sleep 5; after=($(ticks))
hz=$(getconf CLK_TCK); i=0
for p in $pids; do
    printf 'idle CPU of rank process %s over 5 s: %.2f%% (target < 1%%)\n' "$p" \
        "$(echo "(${after[$i]} - ${before[$i]}) * 100 / ($hz * 5)" | bc -l)"
    i=$((i + 1))
done
exec 3>&-
wait
