#!/usr/bin/env bash
# The workshop on a GPU machine, as attendees meet it:
#
#   bash scripts/gpu-lessons.sh GCSH [SECONDS]
#
# 1. the preflight of a one-GPU seat (CUDA_VISIBLE_DEVICES=0, 4 ranks: it
#    must retry with --share-gpu, say so and say what MPS does) and, where
#    there are 4 GPUs, of a seat with a GPU each; each in under a minute;
# 2. every lesson as a script through gcsh -n 4, first on 4 ranks sharing
#    GPU 0 (--share-gpu), then on 4 GPUs: it exits 0, passes its
#    checkpoints, and every line it prints (the ranks' tags included, as
#    gcsh -n folds them) fits 80 columns (gcsh's own "gcsh: " notes are
#    shown when wider, as NOTE lines, not judged).
#
# GCSH is a gcsh built with the cuda backend (scripts/gpu-check.sh builds
# build-gpu/gcsh; no Lua needs to be installed).  Lessons start while less
# than SECONDS (default 170) have passed since the start; those left are
# listed as not run, never as passed (a lesson started then may take 60 s
# more).  Prints PASS/FAIL lines and ends with
# "N passed, N failed, N not run"; exit 1 when any failed.
set -u
cd "$(dirname "$0")/.." || exit 1
GCSH=${1:?usage: bash scripts/gpu-lessons.sh GCSH [SECONDS]}
BUDGET=${2:-170}
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
passed=0 failed=0 notrun=0
say() { # say ok|FAIL TEXT [DETAIL]
    if [ "$1" = ok ]; then passed=$((passed + 1)); echo "PASS $2"
    else failed=$((failed + 1)); echo "FAIL $2"; [ -n "${3:-}" ] && printf '%s\n' "$3" | sed 's/^/     | /'
    fi
}
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
echo "gpu-lessons: $GCSH, $ngpu GPUs, $(nproc) cores"

# ---- 1. the preflight
preflight() { # preflight NAME WANT-REGEX [ENV...]
    local name=$1 want=$2 t0=$SECONDS out rc
    shift 2
    out=$(env "$@" bash scripts/preflight.sh "$GCSH" 4 2>&1); rc=$?
    local s=$((SECONDS - t0)) why=""
    [ $rc = 0 ] || why+=", exit $rc"
    grep -qE "$want" <<<"$out" || why+=", not the verdict wanted ($want)"
    [ "$s" -lt 60 ] || why+=", ${s} s (under 60 wanted)"
    if [ -z "$why" ]; then
        say ok "preflight, $name: $out (${s} s wall)"
    else
        say FAIL "preflight, $name${why}" "$out"
    fi
}
preflight "one-GPU seat" "^preflight: ready: cuda, 4 ranks sharing GPUs \(--share-gpu: fewer GPUs than ranks\), MPS" \
    CUDA_VISIBLE_DEVICES=0
if [ "$ngpu" -ge 4 ]; then
    preflight "a GPU each" "^preflight: ready: cuda, 4 ranks, a GPU each;" CUDA_VISIBLE_DEVICES=0,1,2,3
fi

# ---- 2. every lesson as a script at 4 ranks
lesson() { # lesson FILE CONFIG-NAME ENV-AND-OPTIONS...: one run, judged
    local f=$1 cfg=$2 t0=$SECONDS out rc wide
    shift 2
    local opts=() envs=()
    for a in "$@"; do case $a in --*) opts+=("$a") ;; *) envs+=("$a") ;; esac; done
    out=$(env "${envs[@]}" timeout 60 "$GCSH" -n 4 "${opts[@]}" "$f" 2>&1 </dev/null); rc=$?
    local name="$(basename "$f" .lua) $cfg ($((SECONDS - t0)) s)"
    if [ $rc = 0 ] && grep -q "checkpoint: \|right: " <<<"$out" && ! grep -q "checkpoint FAILED\|not yet" <<<"$out"; then
        say ok "$name: runs, checkpoints pass"
    else
        say FAIL "$name: exit $rc" "$(tail -n 12 <<<"$out")"
    fi
    wide=$(awk '!/^gcsh: / && length($0) > 80 { printf "%d columns: %s\n", length($0), $0 }' <<<"$out" | head -n 3)
    [ -z "$wide" ] && say ok "$name: every line fits 80 columns" || say FAIL "$name: lines over 80 columns" "$wide"
    # gcsh's own notes (the MPS one at start-up) are not the lesson's: shown, not judged
    awk '/^gcsh: / && length($0) > 80 { printf "NOTE %s: gcsh says, in %d columns: %s\n", n, length($0), $0; exit }' \
        n="$(basename "$f" .lua) $cfg" <<<"$out"
}
configs=("4 ranks on GPU 0|--share-gpu|CUDA_VISIBLE_DEVICES=0")
[ "$ngpu" -ge 4 ] && configs+=("4 GPUs||CUDA_VISIBLE_DEVICES=0,1,2,3")
for c in "${configs[@]}"; do
    IFS='|' read -r cfg opt env <<<"$c"
    for f in lua/tutorial/[0-9][0-9]-*.lua; do
        if [ "$SECONDS" -ge "$BUDGET" ]; then
            notrun=$((notrun + 1)); echo "NOT RUN $(basename "$f" .lua) $cfg (past ${BUDGET} s)"
            continue
        fi
        lesson "$f" "$cfg" $opt $env
    done
done
echo "$passed passed, $failed failed, $notrun not run"
[ "$failed" = 0 ]
