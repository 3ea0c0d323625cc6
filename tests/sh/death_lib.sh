# One rank's death, for tests/sh/rank_death.sh and scripts/death-soak.sh
# (issue 36).  Sourced; needs DEATH_TMP (a folder the caller removes) and
# GCSH (default build/gcsh).
#
# death_run N VICTIM SIG TRACE: a script job at N ranks in which rank
# LOOPER runs a Lua loop and the others wait in a barrier; once every rank
# said it is there, VICTIM (first: rank 0, in the barrier; last: the last
# rank, running Lua; mid-coll: rank 1, in the barrier; mid-lua: rank 1,
# running Lua) gets kill -SIG.  TRACE yes adds --trace.  Sets DEATH_RC (the
# job's status; "timeout" when it did not end within 120 s, "unready" when
# the ranks never got there), DEATH_FLIGHT and DEATH_TRACE ("ok" when the
# file loads with every rank, else why not, "-" when not asked for) and
# DEATH_DIR (the run's folder: out holds the job's output).
: "${GCSH:=build/gcsh}"
DEATH_SCRIPT='local c = comm.world()
c:barrier()
local dir, looper = os.getenv("DEATH_DIR"), tonumber(os.getenv("DEATH_LOOPER"))
local pid = io.open("/proc/self/stat"):read("n")
local f = io.open(dir .. "/ready." .. rank .. ".tmp", "w")
f:write(pid) f:close()
os.rename(dir .. "/ready." .. rank .. ".tmp", dir .. "/ready." .. rank)
if rank == looper then
  local x = 0
  while true do x = x + 1 end
else
  c:barrier()
end'
DEATH_RUNS=0

death_cleanup() {
    local p
    for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done
    rm -rf "$DEATH_TMP"
}

death_ranks() { # N VICTIM: "victim looper"
    local last=$(($1 - 1))
    case $2 in
        first) echo "0 $last" ;;
        last) echo "$last $last" ;;
        mid-coll) echo "1 $last" ;;
        mid-lua) echo "1 1" ;;
    esac
}

death_check() { # FILE N: ok, or why not
    local why
    [ -s "$1" ] || { echo "missing"; return; }
    why=$(python3 tests/sh/trace_check.py "$1" "$2" 2>&1) && { echo ok; return; }
    printf '%s\n' "$why" | grep -m1 -E 'FAIL|Error' | tr -d '\n' | cut -c1-120
}

death_run() {
    local n=$1 victim=$2 sig=$3 trace=$4 who looper i pid
    read -r who looper < <(death_ranks "$n" "$victim")
    DEATH_RUNS=$((DEATH_RUNS + 1))
    DEATH_DIR=$DEATH_TMP/run$DEATH_RUNS
    mkdir -p -m 700 "$DEATH_DIR" "$DEATH_DIR/state"
    printf '%s\n' "$DEATH_SCRIPT" >"$DEATH_DIR/job.lua"
    local opts=(--flight "$DEATH_DIR/flight.json")
    [ "$trace" = yes ] && opts+=(--trace "$DEATH_DIR/trace.json")
    DEATH_DIR=$DEATH_DIR DEATH_LOOPER=$looper GCSH_STATE_DIR=$DEATH_DIR/state \
        timeout -k 10 120 "$GCSH" -n "$n" "${opts[@]}" "$DEATH_DIR/job.lua" \
        >"$DEATH_DIR/out" 2>&1 </dev/null &
    local job=$!
    for ((i = 0; i < 900; i++)); do
        [ "$(ls "$DEATH_DIR" | grep -c '^ready\.[0-9]*$')" -eq "$n" ] && break
        kill -0 "$job" 2>/dev/null || break
        sleep 0.1
    done
    if [ -e "$DEATH_DIR/ready.$who" ] && [ "$(ls "$DEATH_DIR" | grep -c '^ready\.[0-9]*$')" -eq "$n" ]; then
        sleep 0.3 # (the waiting ranks into their barrier: either way, the same outcome is due)
        pid=$(cat "$DEATH_DIR/ready.$who")
        kill "-$sig" "$pid"
        wait "$job"; DEATH_RC=$?
        [ "$DEATH_RC" = 124 ] || [ "$DEATH_RC" = 137 ] && DEATH_RC=timeout
    else
        kill -TERM "$job" 2>/dev/null
        wait "$job"
        DEATH_RC=unready
    fi
    DEATH_FLIGHT=$(death_check "$DEATH_DIR/flight.json" "$n")
    DEATH_TRACE=-
    [ "$trace" = yes ] && DEATH_TRACE=$(death_check "$DEATH_DIR/trace.json" "$n")
}
