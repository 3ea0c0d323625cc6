#!/usr/bin/env bash
# Evidence survives any rank's death (issue 36): a gcsh script job at N ranks
# (one rank running Lua, the others blocked in a barrier), one rank killed
# from outside with SIGSEGV or SIGKILL, with and without --trace.  Each run
# must exit with the crash status (69), write the flight file naming every
# rank and, with --trace, a trace file that loads (tests/sh/trace_check.py).
#
#   scripts/death-soak.sh [RUNS]          RUNS runs of every case (default 20)
#   RANKS="2 4" SIGNALS=SEGV TRACE=yes VICTIMS="first mid-lua" ...  a subset
#   GCSH=build/gcsh (default; a copy elsewhere needs GCSH_LUA_DIR=lua);
#   KEEP=DIR keeps the folders of the runs that fell short; TABLE=FILE: the table after each round
#   (the cases run round-robin: a soak cut short has as many runs of each)
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

CASES=()
for n in $RANKS; do
  for victim in $VICTIMS; do
    case $victim in mid-*) [ "$n" -ge 4 ] || continue ;; esac
    for sig in $SIGNALS; do
      for trace in $TRACE; do CASES+=("$n $victim $sig $trace"); done
    done
  done
done

# per case: runs, "status x count" seen, flight files and traces that loaded
declare -A runs=() statuses=() flights=() traces=()
bad=0
table() {
  local c st k
  printf '%-6s %-9s %-5s %-6s %5s  %-16s %7s %7s\n' ranks victim sig trace runs statuses flight traces
  for c in "${CASES[@]}"; do
    set -- $c
    printf '%-6s %-9s %-5s %-6s %5s  %-16s %7s %7s\n' "$1" "$2" "$3" "$4" "${runs[$c]:-0}" \
      "${statuses[$c]:--}" "${flights[$c]:-0}" "$([ "$4" = yes ] && echo "${traces[$c]:-0}" || echo -)"
  done
}
count() { # CASE STATUS: adds one STATUS to the case's "69x3,1x1"
  local c=$1 s=$2 out="" k n found=0
  IFS=, read -ra parts <<<"${statuses[$c]}"
  for k in "${parts[@]}"; do
    n=${k#*x}; k=${k%x*}
    [ "$k" = "$s" ] && { n=$((n + 1)); found=1; }
    out+="${out:+,}${k}x$n"
  done
  [ $found = 1 ] || out+="${out:+,}${s}x1"
  statuses[$c]=$out
}

# round-robin, so that a soak cut short has as many runs of every case;
# the table so far goes to $TABLE (when set) after each round
for ((i = 1; i <= RUNS; i++)); do
  for c in "${CASES[@]}"; do
    set -- $c
    death_run "$1" "$2" "$3" "$4"
    runs[$c]=$((${runs[$c]:-0} + 1))
    count "$c" "$DEATH_RC"
    [ "$DEATH_FLIGHT" = ok ] && flights[$c]=$((${flights[$c]:-0} + 1))
    [ "$DEATH_TRACE" = ok ] && traces[$c]=$((${traces[$c]:-0} + 1))
    if [ "$DEATH_RC" != 69 ] || [ "$DEATH_FLIGHT" != ok ] ||
       { [ "$4" = yes ] && [ "$DEATH_TRACE" != ok ]; }; then
      bad=$((bad + 1))
      echo "# round $i, $c: rc $DEATH_RC, flight $DEATH_FLIGHT, trace $DEATH_TRACE" >&2
      grep -v '^\[' "$DEATH_DIR/out" | tail -n 15 | sed 's/^/#   | /' >&2
      [ -n "$KEEP" ] && cp -r "$DEATH_DIR" "$KEEP/"
    fi
    rm -rf "$DEATH_DIR"
  done
  [ -n "$TABLE" ] && { echo "after round $i"; table; } >"$TABLE"
done
table
[ "$bad" -eq 0 ] || { echo "death-soak: $bad runs fell short" >&2; exit 1; }
