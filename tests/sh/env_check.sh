#!/usr/bin/env bash
# gcsh's numeric environment variables (core/env.c): a value gcsh cannot
# read, or one out of range, is refused at start with 128 and one line naming
# the variable and the range (before any rank runs), and so is a word that
# none of the variables taking words knows; sizes take nccl-tests'
# suffixes and mean what they say; a GCSH_MPIRUN that fails is named.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh

refused() { # NAME VAR=VALUE WANT: gcsh -n 2 refuses it with WANT
    local out rc
    out=$(env "$2" timeout 60 "$GCSH" -n 2 -e 'print("ran")' 2>&1 </dev/null); rc=$?
    expect_eq "$1: status" "$rc" 128
    expect_eq "$1: one line" "$out" "gcsh: ${2}: $3 (ENVIRONMENT in the manual lists them)"
}
refused "a size as Lua writes it" GCSH_OUTPUT_CAP=1e3 "not a size in bytes, as 65536, 64k, 1M or 2G"
refused "a size with an unknown suffix" GCSH_OUTPUT_CAP=1kb "not a size in bytes, as 65536, 64k, 1M or 2G"
refused "a size of 0" GCSH_OUTPUT_CAP=0 "out of range (1..1099511627776)"
refused "a size past 2^64" GCSH_OUTPUT_CAP=99999999999999999999 "not a size in bytes, as 65536, 64k, 1M or 2G"
refused "a negative count" GCSH_FLIGHT_CALLS=-1 "not a whole number"
refused "a count past its bound" GCSH_FLIGHT_CALLS=1048577 "out of range (0..1048576)"
refused "a count with a fraction" GCSH_TRACE_EVENTS=1.5 "not a whole number"
refused "words" GCSH_SPIN_US=fast "not a whole number"
refused "no ranks per node" GCSH_RANKS_PER_NODE=0 "out of range (1..1048576)"
refused "an MPI count past int" GCSH_HOST_MPI_MAX_COUNT=2147483648 "out of range (1..2147483647)"
refused "no time to wait" GCSH_GPU_WAIT_TIMEOUT=0 "out of range (0.001..1e+06)"
refused "seconds as words" GCSH_GPU_WAIT_TIMEOUT=10s "not seconds, as 600 or 0.5"
# the variables that take a word: any other word is refused too
refused "a route that is none" GCSH_COMM_ROUTE=fast "not auto, kernel, comm or nccl"
refused "split sharing as a word" GCSH_SPLIT_SHARE=yes "not 0 or 1"
refused "multicast as a word" GCSH_MULTICAST=on "not 0 or 1"
refused "a control plane that is none" GCSH_CONTROL=udp "not tcp"

# an empty value is the default, as unset
OUT=$(GCSH_OUTPUT_CAP= GCSH_SPIN_US= timeout 60 "$GCSH" -n 2 -e 'print("ran")' 2>&1 </dev/null); RC=$?
expect_eq "empty means the default" "$RC:$OUT" "0:[0-1] ran"

# sizes mean what they say: 1k keeps 1024 bytes of each rank's output
for n in 2 4; do
    OUT=$(GCSH_OUTPUT_CAP=1k timeout 60 "$GCSH" -n $n -e 'io.write(string.rep("x", 3000), "\n")' 2>&1 </dev/null)
    expect_contains "[$n] 1k is 1024 bytes" "$OUT" "[0-$((n - 1))] gcsh: output capped at 1024 bytes; 1977 bytes dropped"
done
OUT=$(GCSH_OUTPUT_CAP=2KiB GCSH_SPIN_US=0 GCSH_GPU_WAIT_TIMEOUT=0.5 GCSH_FLIGHT_CALLS=0 \
    timeout 60 "$GCSH" -n 2 -e 'io.write(string.rep("x", 3000), "\n")' 2>&1 </dev/null)
expect_contains "KiB, and the bounds themselves, are accepted" "$OUT" "[0-1] gcsh: output capped at 2048 bytes; 953 bytes dropped"
# GCSH_MPIRUN: a launcher that fails before any rank starts is named
OUT=$(GCSH_MPIRUN=/bin/false timeout 60 "$GCSH" -n 2 -e 'print("ran")' 2>&1 </dev/null); RC=$?
expect_eq "a failing GCSH_MPIRUN: nothing ran, a usage error (no bisect verdict), and why" "$RC:$OUT" \
    "128:gcsh: /bin/false ended with status 1 before rank 0 started: nothing ran (exit 128)"
OUT=$(GCSH_MPIRUN=/nonexistent/mpirun timeout 60 "$GCSH" -n 2 -e 'print("ran")' 2>&1 </dev/null); RC=$?
expect_eq "a missing GCSH_MPIRUN: 128, said once" "$RC:$OUT" \
    "128:gcsh: cannot start /nonexistent/mpirun: No such file or directory (is Open MPI installed?)"
# mpirun refusing what gcsh passed it through: the same, not mpirun's 1
for bad in "--map-by bogus" "--mpirun-args --bind-to=bogus"; do
    OUT=$(timeout 60 "$GCSH" -n 2 $bad -e 'print("ran")' 2>&1 </dev/null); RC=$?
    expect_eq "mpirun refuses $bad: 128, nothing ran" "$RC:$(grep -c "\] ran$" <<<"$OUT")" "128:0"
    expect_contains "mpirun refuses $bad: said" "$OUT" "before rank 0 started: nothing ran (exit 128)"
done
finish
