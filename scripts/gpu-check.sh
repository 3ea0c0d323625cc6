#!/usr/bin/env bash
# GPU check for a device machine without network: builds gcsh with the cuda
# backend and runs the GPU test set under mpirun.
#
#   bash scripts/gpu-check.sh            (from the repository root)
#
# tests/unit/test_cuda_window covers windows (nccl, vmm), signals and the
# peer-read kernel from C; tests/gpu/window_*.lua the same through Lua;
# tests/gpu/kernel_{nccl,vmm}.lua the reduce kernels (tests/lua/kernel_*.lua
# per window kind) and tests/gpu/mcast_refusal.lua that NVLS stays refused;
# tests/gpu/ll_sanitize.lua the "ll" kernel, also under compute-sanitizer;
# tests/gpu/nccl_dev.lua algo "nccl_dev" (NCCL's device API; skipped, saying
# why, where NCCL has no symmetric memory), also under compute-sanitizer.
# tests/gpu/persistent_{nccl,vmm}.lua: kernel.persistent (tests/lua/
# persistent.lua per window kind); persistent_sanitize.lua its resident
# kernel under compute-sanitizer; after every job, no resident kernel left
# (nvidia-smi lists no gcsh process on the GPUs); persistent_lazy.sh that
# gcsh loads kernels eagerly and kernel.persistent refuses LAZY loading.
# tests/unit/test_cuda_xfer and tests/gpu/xfer_*.lua: one-sided transfers
# (both engines, both kinds).  tests/gpu/graph_{nccl,vmm}.lua: gcsh.graph
# (tests/lua/graph.lua per window kind), graph_sanitize.lua its replays
# under compute-sanitizer; GCSH_GPU_TESTS=graph runs only these (the
# filter is a regular expression on the test names, the sanitizer runs'
# included).  tests/lua/step_*.lua (steppers), every lesson in
# lua/tutorial (and, at 2 ranks or more, that each line it prints fits 80
# columns, the ranks' tags counted as gcsh -n folds them, "[0-3] "),
# t:wait, w:fence/c:quiet and kernel.alltoallv
# (tests/lua/window_wait.lua, xfer_order.lua, kernel_alltoallv.lua), and
# the host's messages on cuda (issue 37): every option table checked, u64
# signal words and s:fetch_add (tests/lua/options_checked.lua,
# signal_u64.lua, signal_fetch_add.lua), on windows of kind nccl and of
# kind vmm; out= and the strict multicast rules per kind come from
# kernel_{nccl,vmm}.lua (kernel_out.lua) and mcast_refusal.lua
# (mcast_emulated.lua); tests/gpu/wait_note.sh a stuck s:wait{cpu=true}'s
# hang report (the word's value now), tests/gpu/evidence.sh an aborted
# communicator's window read (kernel.reduce_peers too).
# scripts/gpu-parity.sh runs just these, at 4 ranks with a GPU each and 4
# sharing one.
# tests/gpu/nodes_hier.lua: kernel.allreduce's hier, auto and comm (one
# node here; scripts/gpu-nodes.sh runs it on 2 simulated nodes of 2 GPUs).
# tests/gpu/window_step_*.lua: step.window per kind (every stage, a reset
# after each, a failure injected into each: the Lua tests run with
# GCSH_TEST_FAULTS=1, so gcsh.debug.inject works there).
#
# Lua, readline and jansson come from Debian packages carried in .lua-debs/
# (make them on a networked machine: cd .lua-debs && apt-get download
# liblua5.4-dev liblua5.4-0 libreadline-dev libreadline8 libjansson-dev
# lua-dkjson), unpacked with dpkg -x into a private prefix, never into /; Lua,
# readline and jansson link statically from it, and lua-dkjson (pure Lua, for
# bench's json=) goes on LUA_PATH from there.  tests/gpu/repro.sh: the
# reproducers, record/replay and a trace with GPU spans.
#
# Configurations (GCSH_GPU_RANKS overrides): one GPU: 1 rank, then 2 and 4
# ranks sharing it ("2s", "4s": GCSH_SHARE_GPU=1, gcsh starting a private
# MPS daemon per job, as gcsh -n N --share-gpu does; GCSH_GPU_MPS=0 for
# none); several GPUs: 2 (and 4) ranks with a GPU each, then 4 ranks sharing
# 2 GPUs.  Each test at each configuration counts as one; after each
# configuration a check that no MPS daemon and no job folder is left.  Every
# kernel algorithm runs under compute-sanitizer memcheck and synccheck at 2
# ranks (sharing a GPU on a one-GPU machine).  The last line is "N passed, N
# failed"; the exit code is 1 when any failed.
set -uo pipefail

# NVLink multicast stays off, whatever the caller's environment says: on
# shared hosts it can take the GPUs out of service.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build-gpu}
TIMEOUT=${GCSH_TEST_TIMEOUT:-180}
LOGS=${GCSH_LOG_DIR:-$BUILD/gpu-logs}

die() { echo "gpu-check: $*" >&2; echo "0 passed, 1 failed"; exit 1; }

# GCSH_GPU_RANKS (configurations, space separated: N ranks, or Ns sharing
# GPUs) and GCSH_GPU_SANITIZE_RANKS (one rank count): a value not
# understood is an error before the build, since a run that quietly checked
# less (GCSH_GPU_SANITIZE_RANKS="2 4" once ran no sanitizer at all) is no
# pass.  Prints why and fails.
check_rank_settings() {
    local c
    if [ -n "${GCSH_GPU_RANKS:-}" ] && [ -z "${GCSH_GPU_RANKS//[[:space:]]/}" ]; then
        echo "GCSH_GPU_RANKS is blank: it would run no configuration (e.g. \"2 4s\")"
        return 1
    fi
    for c in ${GCSH_GPU_RANKS:-}; do
        [[ $c =~ ^[1-9][0-9]*s?$ ]] && continue
        echo "GCSH_GPU_RANKS: '$c' is not a configuration (N ranks with a GPU each, or Ns" \
             "sharing GPUs, e.g. \"2 4s\")"
        return 1
    done
    if [ -n "${GCSH_GPU_SANITIZE_RANKS:-}" ] && ! [[ $GCSH_GPU_SANITIZE_RANKS =~ ^[1-9][0-9]*$ ]]; then
        echo "GCSH_GPU_SANITIZE_RANKS: '$GCSH_GPU_SANITIZE_RANKS' is not one rank count (e.g. 4)"
        return 1
    fi
}
why=$(check_rank_settings) || die "$why"

# ---- Lua and jansson from carried packages, when the system lacks one -----
make_args=(CUDA=1 BUILD="$BUILD")
if [ ! -f /usr/include/lua5.4/lua.h ] || [ ! -f /usr/include/jansson.h ]; then
    PREFIX=$ROOT/$BUILD/lua-prefix
    ls .lua-debs/*.deb >/dev/null 2>&1 || die "no Lua or jansson headers here and no .lua-debs/*.deb to unpack"
    ls .lua-debs/libjansson-dev_*.deb >/dev/null 2>&1 ||
        die ".lua-debs/ has no libjansson-dev (apt-get download libjansson-dev)"
    # unpacked once (runs side by side must not unpack over each other)
    if [ ! -e "$PREFIX/.unpacked" ]; then
        mkdir -p "$PREFIX"
        for deb in .lua-debs/*.deb; do dpkg -x "$deb" "$PREFIX" || die "dpkg -x $deb failed"; done
        touch "$PREFIX/.unpacked"
    fi
    make_args+=(LUA_PREFIX="$PREFIX")
    if [ -f "$PREFIX/usr/share/lua/5.4/dkjson.lua" ]; then
        export LUA_PATH="$PREFIX/usr/share/lua/5.4/?.lua;${LUA_PATH:-;}"
    fi
fi

echo "gpu-check: building (${make_args[*]})"
make -j"$(nproc)" "${make_args[@]}" all unit >"$BUILD.make.log" 2>&1 ||
    { tail -40 "$BUILD.make.log"; die "build failed (log: $BUILD.make.log)"; }

ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
[ "$ngpu" -ge 1 ] || die "no GPU visible (nvidia-smi -L lists none)"
# CUDA_VISIBLE_DEVICES=2,3 confines a run to those GPUs (nvidia-smi does not
# read it), so that runs on different GPUs of one machine can go side by
# side; only one of them may use shared configurations (the MPS folders in
# /tmp are per user, not per run).
visible=()
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
    IFS=, read -r -a visible <<<"$CUDA_VISIBLE_DEVICES"
    ngpu=${#visible[@]}
fi
# The configurations, each "N" (N ranks, one GPU each) or "Ns" (N ranks
# sharing GPUs: GCSH_SHARE_GPU=1, gcsh starting its own MPS daemon, as
# gcsh -n N --share-gpu does).  One GPU: 1 rank, then 2 and 4 sharing it.
# Several: 2 (and 4) dedicated, then 4 ranks sharing 2 GPUs.
if [ "$ngpu" = 1 ]; then
    counts=(1 2s 4s)
else
    counts=(2)
    [ "$ngpu" -ge 4 ] && counts+=(4)
    counts+=(4s)
fi
# GCSH_GPU_RANKS="2s 4s" and GCSH_GPU_TESTS=<extended regex on the test
# name> narrow a rerun to what failed; the full set is the default.  A
# test's name is its path (tests/gpu/collectives.lua, tests/gpu/faults.sh,
# tests/lua/step_ring.lua:vmm, a lesson's lua/tutorial/...:KIND) or
# sanitize:TOOL:NAME; a filter that matches none fails the run (nothing was
# checked), except GCSH_GPU_TESTS=none: build only.
# GCSH_GPU_MPS=0: the shared runs without MPS (--share-gpu=nomps).
[ -n "${GCSH_GPU_RANKS:-}" ] && read -r -a counts <<<"$GCSH_GPU_RANKS"
selected=0 # tests the filter let run, over every configuration
wanted() {
    [ "${GCSH_GPU_TESTS:-}" != none ] &&
        { [ -z "${GCSH_GPU_TESTS:-}" ] || grep -qE "$GCSH_GPU_TESTS" <<<"$1"; } &&
        selected=$((selected + 1))
}
# Says why the run checked nothing, when a filter matched no test.
no_test_matched() {
    [ "$selected" = 0 ] && [ -n "${GCSH_GPU_TESTS:-}" ] && [ "$GCSH_GPU_TESTS" != none ] &&
        echo "gpu-check: GCSH_GPU_TESTS='$GCSH_GPU_TESTS' matched no test that runs here:" \
             "nothing was checked" \
             "(names are paths, e.g. tests/gpu/collectives.lua, tests/lua/step_ring.lua:vmm," \
             "sanitize:memcheck:ll_sanitize; GCSH_GPU_TESTS=none builds only)"
}
share_mode=1
[ "${GCSH_GPU_MPS:-1}" = 0 ] && share_mode=nomps

base_mpi=(mpirun -x NCCL_NVLS_ENABLE -x NVSHMEM_DISABLE_NVLS -x TORCH_SYMM_MEM_DISABLE_MULTICAST)
[ "$(id -u)" = 0 ] && base_mpi+=(--allow-run-as-root)
mkdir -p "$LOGS"

# MPS daemons and servers that are not zombies (a container's first
# process may never reap them).
live_mps() { ps -eo stat=,args= | awk '$1 !~ /^Z/ && /nvidia-cuda-mps-(control|server)/'; }
[ -z "$(live_mps)" ] || echo "gpu-check: an MPS daemon runs already (not ours): $(live_mps)"
mps_before=$(live_mps)
# What the shared runs left behind (a daemon that is not quitting, a job's
# folder), after 15 s for the last job's watcher to finish; "" when nothing.
mps_left() {
    local i left folders
    for i in $(seq 150); do
        left=$(live_mps)
        folders=$(ls -d /tmp/gcsh-mps-"$(id -u)"-* 2>/dev/null)
        [ "$left" = "$mps_before" ] && [ -z "$folders" ] && return
        sleep 0.1
    done
    echo "daemons: ${left:-none}; folders: ${folders:-none}"
    for f in $folders; do
        echo "--- $f: verdict $(cat "$f/verdict" 2>/dev/null)"; tail -5 "$f"/log/*.log 2>/dev/null
    done
}

passed=0 failed=0 skipped=0
# run NAME NP COMMAND...: one test under mpi (the configuration's mpirun);
# its output goes to a log, shown on failure.
run() {
    local name=$1 np=$2
    shift 2
    last_log=""
    wanted "$name" || return 0
    local log="$LOGS/${name//[\/:]/_}.np$np${tag// /-}.log"
    last_log=$log
    local t0=$SECONDS
    if timeout "$TIMEOUT" "${mpi[@]}" -np "$np" "$@" >"$log" 2>&1; then
        passed=$((passed + 1))
        printf 'ok    %-32s np=%d%s  %3ds\n' "$name" "$np" "$tag" $((SECONDS - t0))
    else
        local rc=$?
        failed=$((failed + 1))
        printf 'FAIL  %-32s np=%d%s  rc=%d%s\n' "$name" "$np" "$tag" "$rc" \
            "$([ $rc = 124 ] && echo " (timed out after ${TIMEOUT}s)")"
        grep -E 'FAIL|check failed|error|Error' "$log" | head -20 | sed 's/^/      /'
        echo "      --- last lines of $log (mpirun's own left out)"
        grep -vE '^-+$|^mpirun detected|^the job to be|^ *Process name|^ *Exit code|^ *$' "$log" |
            tail -12 | sed 's/^/      /'
    fi
    # a plain mpirun does not wait for the job's MPS daemon to go, as gcsh
    # -n does: the next job must not meet it on the GPU
    [ -n "$tag" ] && wait_no_folders
    case "$name" in *persistent*) check "no resident kernel left after $name np=$np$tag" \
        "$(gcsh_on_gpu)" ;; esac
}

# gcsh processes still on a GPU (nvidia-smi's compute apps), after a job:
# a resident kernel that outlived its session would keep its process there.
gcsh_on_gpu() {
    local i left
    command -v nvidia-smi >/dev/null || return 0
    for i in $(seq 50); do
        left=$(nvidia-smi ${visible:+-i "$CUDA_VISIBLE_DEVICES"} \
            --query-compute-apps=pid,process_name --format=csv,noheader 2>/dev/null | grep -F gcsh)
        [ -z "$left" ] && return
        sleep 0.1
    done
    echo "still on the GPU: $left"
}

wait_no_folders() {
    for _ in $(seq 150); do
        ls -d /tmp/gcsh-mps-"$(id -u)"-* >/dev/null 2>&1 || return 0
        sleep 0.1
    done
}

# too_wide LOG: the lines of a lesson's log wider than 80 columns as gcsh -n
# would show them ("" when none).  Under mpirun a line is tagged with the
# ranks that printed it ("[2] ", or "[0-3] " where gcsh folded it); gcsh -n
# folds a text every rank printed under "[0-3] " and one ranks 0, 2 and 3
# printed under "[0,2-3] ", so each line counts with the tag of every rank
# that printed its text anywhere in the log (the widest it can get).
# Untagged lines are not the lesson's (mpirun's, NCCL's).  The first three.
too_wide() {
    awk '
        function tag(text,   r, out, a) {   # "[0,2-3] " of the ranks in by[text]
            out = ""
            for (r = 0; r <= top; r++) {
                if (!((text, r) in by)) continue
                for (a = r; ((text, r + 1) in by); r++) ;
                out = out (out == "" ? "" : ",") a (r > a ? "-" r : "")
            }
            return "[" out "] "
        }
        !match($0, /^\[[0-9,-]+\] /) { next }
        { text = substr($0, RLENGTH + 1) }
        NR == FNR {                          # first pass: who printed each text
            n = split(substr($0, 2, RLENGTH - 3), part, ",")
            for (i = 1; i <= n; i++) {
                lo = part[i]; hi = part[i]
                if (part[i] ~ /-/) { split(part[i], b, "-"); lo = b[1]; hi = b[2] }
                for (r = lo + 0; r <= hi + 0; r++) { by[text, r] = 1; if (r > top) top = r }
            }
            next
        }
        (w = length(tag(text) text)) > 80 && !seen[text]++ {
            printf "%s%d columns: %s%s", (shown++ ? "\n      " : ""), w, tag(text), text
            if (shown == 3) exit
        }' "$1" "$1"
}

# check NAME CONDITION-TEXT: a test that is a fact of this script (empty
# text: passed).
check() {
    if [ -z "$2" ]; then
        passed=$((passed + 1)); printf 'ok    %s\n' "$1"
    else
        failed=$((failed + 1)); printf 'FAIL  %s\n      %s\n' "$1" "$2"
    fi
}

LUA_TESTS="$ROOT/tests/lua/?.lua;$ROOT/tests/gpu/lib/?.lua;${LUA_PATH:-;}"
# mpi=(...) and tag for configuration $1 ("N" or "Ns"); np in $np
configure() {
    np=${1%s}
    mpi=("${base_mpi[@]}")
    tag=""
    if [ "$1" != "$np" ]; then
        tag=" shared"
        mpi+=(-x GCSH_SHARE_GPU="$share_mode")
        # on several GPUs the shared run puts np ranks on np/2 of them
        if [ "$ngpu" -gt 1 ]; then
            local g=$((np / 2 > 0 ? np / 2 : 1)) list=${visible[0]:-0}
            for ((i = 1; i < g; i++)); do list+=",${visible[i]:-$i}"; done
            mpi+=(-x CUDA_VISIBLE_DEVICES="$list")
        fi
    fi
}

# The window kinds that work in this configuration ("nccl vmm", or "vmm"
# where NCCL offers no symmetric memory: one rank, shared GPUs).
usable_kinds() {
    "${mpi[@]}" -np "$np" env LUA_PATH="$LUA_TESTS" "$BUILD/gcsh" tests/gpu/lib/kinds.lua 2>&1 |
        sed -n 's/^\(\[0\] \)\{0,1\}kinds: //p' | tail -n 1
}

# GCSH_GPU_TESTS=none: built, nothing run (not even the window-kind probes)
if [ "${GCSH_GPU_TESTS:-}" = none ]; then
    echo "gpu-check: GCSH_GPU_TESTS=none: built $BUILD/gcsh; no test run"
    counts=()
    GCSH_GPU_SANITIZE=0
fi
for cfg in "${counts[@]}"; do
    configure "$cfg"
    run test_cuda_backend "$np" "$BUILD/tests/test_cuda_backend"
    run test_cuda_window "$np" "$BUILD/tests/test_cuda_window"
    run test_cuda_xfer "$np" "$BUILD/tests/test_cuda_xfer"
    for t in tests/gpu/*.lua; do
        [ -e "$t" ] || continue
        run "$t" "$np" env LUA_PATH="$LUA_TESTS" GCSH_TEST_FAULTS=1 "$BUILD/gcsh" "$t"
    done
    # the steppers' tests and every lesson (lua/tutorial), on windows of each
    # kind that works here (tests/gpu/lib/window_kind.lua makes it the
    # default kind; usable_kinds checks the default is the first of them)
    kinds=$(usable_kinds)
    [ -n "$tag" ] && wait_no_folders
    echo "gpu-check: np=$np$tag: window kinds here: ${kinds:-none}"
    check "window kinds found at np=$np$tag (tests/gpu/lib/kinds.lua)" \
        "$([ -n "$kinds" ] || echo "none: the steppers and lessons cannot run")"
    for kind in $kinds; do
        for t in tests/lua/step_*.lua lua/tutorial/[0-9][0-9]-*.lua tests/lua/window_wait.lua \
                 tests/lua/xfer_order.lua tests/lua/kernel_alltoallv.lua \
                 tests/lua/options_checked.lua tests/lua/signal_u64.lua \
                 tests/lua/signal_fetch_add.lua; do
            run "$t:$kind" "$np" env GCSH_TEST_KIND="$kind" LUA_PATH="$LUA_TESTS" \
                "$BUILD/gcsh" -l window_kind "$t"
            # what a lesson prints fits 80 columns, the ranks' tags included
            case "$t" in lua/tutorial/*) [ -n "$last_log" ] && [ "$np" -gt 1 ] &&
                check "$t:$kind np=$np$tag: every line fits 80 columns" "$(too_wide "$last_log")" ;;
            esac
        done
    done
    # shell-driven GPU tests (faults): each prints its own "N passed, N failed"
    for t in tests/gpu/*.sh; do
        [ -e "$t" ] || continue
        wanted "$t" || continue
        log="$LOGS/$(basename "$t").np$np${tag// /-}.log"
        share_env=()
        [ -n "$tag" ] && share_env=(GCSH_SHARE_GPU="$share_mode")
        env "${share_env[@]}" timeout $((TIMEOUT * 3)) bash "$t" "$BUILD/gcsh" "$np" >"$log" 2>&1
        rc=$?
        if [ $rc = 0 ] && grep -qE '^0 passed, 0 failed, [1-9][0-9]* skipped' "$log"; then
            skipped=$((skipped + 1)); printf 'skip  %-32s np=%d%s: %s\n' "$t" "$np" "$tag" \
                "$(sed -n 's/^SKIP //p' "$log" | head -n 1)"
        elif [ $rc = 0 ] && grep -qE '^[0-9]+ passed, 0 failed' "$log"; then
            passed=$((passed + 1)); printf 'ok    %-32s np=%d%s\n' "$t" "$np" "$tag"
        else
            failed=$((failed + 1)); printf 'FAIL  %-32s np=%d%s\n' "$t" "$np" "$tag"
            grep -E '^FAIL' -A4 "$log" | head -30 | sed 's/^/      /'
        fi
    done
    [ -n "$tag" ] && check "no MPS daemon left after np=$np$tag" "$(mps_left)"
done

# Every kernel algorithm under compute-sanitizer: memcheck (out of bounds,
# misaligned) and synccheck (barrier misuse); any report fails it.  At 2
# ranks sharing a GPU on one-GPU machines, 2 GPUs elsewhere.  Only gcsh is
# instrumented (not the MPS daemon it starts).  API errors are not
# reported: NCCL probes kernel images of other architectures.
# GCSH_GPU_SANITIZE_RANKS=4 runs them at 4 ranks (a GPU each where the
# machine has 4, else sharing).
SANITIZER=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
if [ -n "$SANITIZER" ] && [ "${GCSH_GPU_SANITIZE:-1}" = 1 ]; then
    san_np=${GCSH_GPU_SANITIZE_RANKS:-2}
    if [ "$ngpu" -ge "$san_np" ]; then configure "$san_np"; else configure "${san_np}s"; fi
    kinds=$(usable_kinds)
    for tool in memcheck synccheck; do
        for t in ll_sanitize algos_sanitize graph_sanitize nccl_dev persistent_sanitize; do
            run "sanitize:$tool:$t" "$np" env LUA_PATH="$LUA_TESTS" "$SANITIZER" --tool "$tool" \
                --error-exitcode 3 --report-api-errors no --target-processes application-only \
                "$BUILD/gcsh" "tests/gpu/$t.lua"
        done
        # the newer kernels: alltoallv, the fence of w:fence()/c:quiet(),
        # element waits (t:wait), on the first usable kind
        for t in kernel_alltoallv xfer_order window_wait; do
            run "sanitize:$tool:$t" "$np" env LUA_PATH="$LUA_TESTS" GCSH_TEST_KIND="${kinds%% *}" \
                "$SANITIZER" --tool "$tool" --error-exitcode 3 --report-api-errors no \
                --target-processes application-only \
                "$BUILD/gcsh" -l window_kind "tests/lua/$t.lua"
        done
    done
    [ -n "$tag" ] && check "no MPS daemon left after the sanitizer runs" "$(mps_left)"
elif [ "${GCSH_GPU_TESTS:-}" != none ]; then
    echo "gpu-check: no compute-sanitizer here (or GCSH_GPU_SANITIZE=0): the sanitizer runs are left out"
fi

no_test_matched && failed=$((failed + 1))
if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"
else echo "$passed passed, $failed failed"; fi
[ "$failed" = 0 ]
