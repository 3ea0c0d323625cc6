#!/usr/bin/env bash
# scripts/preflight.sh (make preflight): a seat that runs every lesson's
# first part is "ready" in one line, exit 0; a broken lesson, a bad rank
# count or no gcsh is "NOT ready" naming it, exit 1.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh

OUT=$(bash scripts/preflight.sh "$GCSH" 4 2>&1); RC=$?
expect_eq "a working seat: exit 0" "$RC" 0
expect_eq "one line" "$(wc -l <<<"$OUT")" 1
expect_match "it says ready, the backend, ranks and lessons" "$OUT" \
    "^preflight: ready: host, 4 ranks; every lesson's first part ran \\($(ls lua/tutorial/[0-9][0-9]-*.lua | wc -l) lessons, [0-9]+ s\\)$"

TMP=$(mktemp -d)
mkdir -p "$TMP/tutorial" "$TMP/gcsh"
cp lua/gcsh/*.lua "$TMP/gcsh/"
cp lua/tutorial/*.lua "$TMP/tutorial/"
sed -i 's/^c = comm.world()$/error("seat broken")/' "$TMP/tutorial/02-tensors.lua"
OUT=$(GCSH_LUA_DIR="$TMP" bash scripts/preflight.sh "$GCSH" 2 2>&1); RC=$?
expect_eq "a broken lesson: exit 1" "$RC" 1
expect_match "it names the lesson and its error" "$OUT" \
    "^preflight: NOT ready: lesson 2: \\[0-1\\] 02-tensors.lua:[0-9]+: seat broken \\(all of it: .*\\)$"
rm -f "$(sed -n 's/.*(all of it: \(.*\))$/\1/p' <<<"$OUT")"
rm -rf "$TMP"

# ---- a one-GPU seat, as the script sees one: gcsh -n N (N > 1) refused
# without --share-gpu, in the cuda backend's words; with it, every rank's
# gcsh.info() says its GPU is shared and what MPS does (SEAT_MPS).  The
# lessons run on the host backend: what this tests is the retry with
# --share-gpu and the verdict (a real one-GPU seat: see INSTRUCTOR.md).
TMP=$(mktemp -d)
cat >"$TMP/one_gpu_seat.lua" <<'LUA'
local info = gcsh.info
gcsh.info = function(...)
  local t = info(...) or {}
  t.gpu_shared = "cuda:0 with ranks 0-" .. (size - 1)
  t.mps = os.getenv("SEAT_MPS")
  return t
end
LUA
REAL=$(realpath "$GCSH")
cat >"$TMP/gcsh" <<SH
#!/usr/bin/env bash
case " \$* " in
*" --version "*|*" --share-gpu "*|*" -n 1 "*) ;;
*" -n "*) echo "gcsh: cuda backend: this machine runs 4 ranks but has 1 visible GPU (one GPU per rank): start at most 1 ranks here, let ranks share GPUs with --share-gpu (GCSH_SHARE_GPU=1 under mpirun), or use --backend host" >&2; exit 1 ;;
esac
case " \$* " in *" --version "*) exec "$REAL" "\$@" ;; esac
exec env LUA_PATH="$TMP/?.lua;;" "$REAL" -l one_gpu_seat "\$@"
SH
chmod +x "$TMP/gcsh"
RAN="every lesson's first part ran \\($(ls lua/tutorial/[0-9][0-9]-*.lua | wc -l) lessons, [0-9]+ s\\)"
OUT=$(SEAT_MPS="private MPS daemon started by gcsh (/tmp/gcsh-mps-0-k); serves this rank: yes" \
      bash scripts/preflight.sh "$TMP/gcsh" 4 2>&1); RC=$?
expect_eq "one GPU, MPS: exit 0" "$RC" 0
expect_match "one GPU, MPS: --share-gpu and MPS said, in one line" "$OUT" \
    "^preflight: ready: host, 4 ranks sharing GPUs \\(--share-gpu: fewer GPUs than ranks\\), MPS serves every rank; $RAN$"
NOMPS="not started: nvidia-cuda-mps-control is not on PATH; ranks that share a GPU take turns on it (time-sliced)"
OUT=$(SEAT_MPS="$NOMPS; serves this rank: no" bash scripts/preflight.sh "$TMP/gcsh" 4 2>&1); RC=$?
expect_eq "one GPU, no MPS: still ready" "$RC" 0
expect_eq "one GPU, no MPS: it says why" "$(sed 's/([0-9]* lessons, [0-9]* s)$//' <<<"$OUT")" \
    "preflight: ready: host, 4 ranks sharing GPUs (--share-gpu: fewer GPUs than ranks), MPS not serving every rank ($NOMPS); every lesson's first part ran "
rm -rf "$TMP"

OUT=$(bash scripts/preflight.sh "$GCSH" 0 2>&1); RC=$?
expect_eq "a bad rank count: exit 1" "$RC" 1
expect_eq "it names the bound" "$OUT" "preflight: NOT ready: RANKS must be a number of ranks 1..64, got '0'"
OUT=$(bash scripts/preflight.sh /nonexistent/gcsh 2>&1); RC=$?
expect_eq "no gcsh: exit 1" "$RC" 1
expect_eq "it says so" "$OUT" "preflight: NOT ready: no gcsh at /nonexistent/gcsh (run make first)"
finish
