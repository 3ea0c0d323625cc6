#!/usr/bin/env bash
# Evidence survives any rank's death (issue 36): a gcsh script job at N ranks
# (one rank running Lua, the others blocked in a barrier), one rank killed
# from outside with SIGSEGV or SIGKILL, with and without --trace.  Each run
# must exit with the crash status (69), write the flight file naming every
# rank and, with --trace, a trace file that loads (tests/sh/trace_check.py).
#
#   scripts/death-soak.sh [RUNS]          RUNS runs of every case (default 20)
#   RANKS="2 4" SIGNALS=SEGV TRACE=yes VICTIMS="first mid-lua" ...  a subset
#   GCSH=build/gcsh (default)
#
# Cases: victim first (rank 0, in the barrier), last (the rank running Lua),
# mid-coll (rank 1, in the barrier) and mid-lua (rank 1, running Lua); the
# mid cases need 4 ranks or more.  Prints one line per case: runs, the exit
# statuses seen (status x count), flight files found with every rank, traces
# that load; and exits 1 when any run fell short.  tests/sh/rank_death.sh
# runs a few cases once each.
cd "$(dirname "$0")/.." || exit 1
. tests/sh/death_lib.sh

RUNS=${1:-20}
RANKS=${RANKS:-2 4 8}
SIGNALS=${SIGNALS:-SEGV KILL}
TRACE=${TRACE:-no yes}
VICTIMS=${VICTIMS:-first last mid-coll mid-lua}
DEATH_TMP=$(mktemp -d)
trap 'death_cleanup' EXIT

bad=0
printf '%-6s %-9s %-5s %-6s %5s  %-16s %7s %7s\n' ranks victim sig trace runs statuses flight traces
for n in $RANKS; do
  for victim in $VICTIMS; do
    case $victim in mid-*) [ "$n" -ge 4 ] || continue ;; esac
    for sig in $SIGNALS; do
      for trace in $TRACE; do
        declare -A seen=()
        flights=0 traces=0
        for ((i = 1; i <= RUNS; i++)); do
          death_run "$n" "$victim" "$sig" "$trace"
          seen[$DEATH_RC]=$((${seen[$DEATH_RC]:-0} + 1))
          [ "$DEATH_FLIGHT" = ok ] && flights=$((flights + 1))
          [ "$DEATH_TRACE" = ok ] && traces=$((traces + 1))
          if [ "$DEATH_RC" != 69 ] || [ "$DEATH_FLIGHT" != ok ] ||
             { [ "$trace" = yes ] && [ "$DEATH_TRACE" != ok ]; }; then
            bad=$((bad + 1))
            echo "# run $i of $n $victim $sig trace=$trace: rc $DEATH_RC, flight $DEATH_FLIGHT, trace $DEATH_TRACE" >&2
            sed 's/^/#   | /' "$DEATH_DIR/out" | tail -n 15 >&2
          fi
        done
        st=""
        for k in "${!seen[@]}"; do st+="${st:+,}${k}x${seen[$k]}"; done
        [ "$trace" = yes ] || traces=-
        printf '%-6s %-9s %-5s %-6s %5s  %-16s %7s %7s\n' "$n" "$victim" "$sig" "$trace" "$RUNS" "$st" "$flights" "$traces"
        unset seen
      done
    done
  done
done
[ "$bad" -eq 0 ] || { echo "death-soak: $bad runs fell short" >&2; exit 1; }
