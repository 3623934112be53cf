#!/usr/bin/env bash
# One device call on an H200, inside the tool's 10-minute limit: every stage under `timeout`, each
# stage's failure logged and the next one run, the whole call done by H200_LIMIT_S (default 560 s).
#
#   bash native/tools/h200_run.sh check   # A: build, pytest -m gpu, compute-sanitizer memcheck + racecheck
#   bash native/tools/h200_run.sh bench   # B: build, bench gemm, bench mlp, bench train, bench learn
#   WHEEL=.wheelhouse bash native/tools/h200_run.sh check|bench   # the same on an installed wheel, no build
#
# CHECKS (default "pytest memcheck racecheck") and BENCHES (default "gemm mlp train learn") pick the
# stages of a further call on the warm machine when one was skipped or cut (summary.txt says which);
# GEMM_BUDGET_S (seconds per GEMM measurement; default the bench's own), TRAIN_ARGS (extra `bench train` options).
#
# Two modes because one call cannot hold both: a cold CUDA build takes minutes, the GPU tests and
# the sanitizer minutes more, and the full GEMM ladder (every rung up to 8192^3, each timed beside
# cuBLAS) minutes again. Run `check` first, then `bench` on the still-warm machine: the device keeps
# the ignored build/gpu between calls, so B's build is incremental. bench gemm writes its JSON only
# at its end, so it starts only with GEMM_MIN_S left (a cut-off run would leave nothing).
#
# What it needs from the caller (device tool): carry [".whl", ".data"] where those exist:
#   .whl  wheels of Python packages the image lacks (installed with --no-index; see device README),
#   .data MNIST IDX files (.data/mnist) and pendigits-orig.tra (.data/pendigits), for the tests,
#         bench mlp's agreement with fp32, bench train and bench learn (or set GEMMPAD_DATA /
#         GEMMPAD_PENDIGITS, or have shared/data/{mnist,pendigits} in the checkout).
# What comes back in $OUT (at most 8 files): summary.txt (one line per stage: exit status, seconds,
# pytest's counts), logs.tar.gz (every log), and in bench mode h200.tar.gz: assets/benchmarks/h200/
# as the benches wrote it (JSON, PNG, the printed tables as .txt, nvidia-smi.txt), to unpack into
# the repository and regenerate the README tables from (`gemmpad bench report --readme README.md
# --readme native/cuda/gemm/README.md`).
set -uo pipefail
START=$(date +%s)
LIMIT=${H200_LIMIT_S:-560}
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/h200-out}
LOGS=/tmp/h200-logs
RESULTS=assets/benchmarks/h200
mkdir -p "$OUT" "$LOGS" "$RESULTS"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mode=${1:-}
case "$mode" in check|bench) ;; *) echo "usage: $0 check|bench" >&2; exit 2 ;; esac

if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
if [ -n "${WHEEL:-}" ]; then
  # WHEEL=DIR: no build here; the cp312 gemmpad wheel in DIR (built with no CUDA toolkit visible,
  # native/README-wheels.md) and any other wheels there are installed, and every stage runs on it.
  export GEMMPAD_SITE=/tmp/gemmpad-site
  rm -rf "$GEMMPAD_SITE"
  others=$(ls "$WHEEL"/*.whl | grep -v '/gemmpad-' || true)
  # shellcheck disable=SC2086  # a list of paths without spaces
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$GEMMPAD_SITE" "$WHEEL"/gemmpad-*-cp312-*.whl $others \
    || { echo "wheel install failed" | tee -a "$OUT/summary.txt"; exit 1; }
fi
export PYTHONPATH="${GEMMPAD_SITE:-$PWD/app}:$PWD${PYTHONPATH:+:$PYTHONPATH}"
for d in "${GEMMPAD_DATA:-}" .data/mnist shared/data/mnist ../shared/data/mnist; do
  [ -n "$d" ] && compgen -G "$d/t10k-images-idx3-ubyte*" >/dev/null && { export GEMMPAD_DATA=$(realpath "$d"); break; }
done
for f in "${GEMMPAD_PENDIGITS:-}" .data/pendigits/pendigits-orig.tra shared/data/pendigits/pendigits-orig.tra; do
  [ -n "$f" ] && [ -f "$f" ] && { export GEMMPAD_PENDIGITS=$(realpath "$f"); break; }
done

summary() { echo "$*" | tee -a "$OUT/summary.txt"; }
pack() { tar -czf "$OUT/logs.tar.gz" -C "$LOGS" . 2>/dev/null; }

# stage NAME MIN_S MAX_S RESERVE_S COMMAND...: run COMMAND (log in $LOGS/NAME.log) for at most MAX_S,
# leaving RESERVE_S of the call's time to the stages after it; skipped with less than MIN_S.
stage() {
  local name=$1 min=$2 max=$3 reserve=$4 left t0 rc
  shift 4
  left=$((START + LIMIT - $(date +%s) - reserve))
  [ "$left" -lt "$max" ] && max=$left
  if [ "$max" -lt "$min" ]; then
    summary "$name: SKIPPED (${max}s left of the ${min}s it needs; run it in a call of its own)"
    return
  fi
  t0=$(date +%s)
  timeout -k 10 "$max" "$@" >"$LOGS/$name.log" 2>&1
  rc=$?
  case $rc in
    0) summary "$name: ok ($(($(date +%s) - t0)) s)" ;;
    124|137) summary "$name: TIMED OUT after ${max}s" ;;
    *) summary "$name: FAILED, exit $rc ($(($(date +%s) - t0)) s); log tail:"; tail -15 "$LOGS/$name.log" | tee -a "$OUT/summary.txt" ;;
  esac
  pack
}

summary "h200_run.sh $mode: $(date -u +%FT%TZ), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
summary "data: MNIST ${GEMMPAD_DATA:-none}, pendigits ${GEMMPAD_PENDIGITS:-none}"
nvidia-smi >"$LOGS/nvidia-smi.txt" 2>&1
# The build: sm_90a only (wgmma, TMA), in place, -j16 (gpu_check.sh's defaults), kept in build/gpu.
if [ -n "${WHEEL:-}" ]; then
  where=$(python3 -c 'import gemmpad, os; print(os.path.dirname(gemmpad.__file__))' 2>&1)
  cuda_so=$(ls "$GEMMPAD_SITE"/gemmpad/_cuda*.so 2>/dev/null)
  summary "wheel: $(basename "$(ls "$WHEEL"/gemmpad-*-cp312-*.whl)"), gemmpad imports from $where;" \
    "$([ -n "$cuda_so" ] && (ldd "$cuda_so" | grep -q libcudart && echo 'CUDA module links libcudart' || echo 'CUDA module, cudart static') || echo 'NO CUDA module')"
  python3 -m gemmpad info >"$LOGS/info.txt" 2>&1
  summary "info: $(grep -i -E '^CUDA|architectures' "$LOGS/info.txt" | head -3 | tr '\n' ' ')"
else
  stage build 60 330 $([ "$mode" = check ] && echo 200 || echo 230) env OUT="$LOGS" bash native/tools/gpu_check.sh build
fi

if [ "$mode" = check ]; then
  for c in ${CHECKS:-pytest memcheck racecheck}; do
    case $c in
      pytest)
        stage pytest 30 330 70 env OUT="$LOGS" PYTEST_ARGS="${H200_PYTEST_ARGS:--m gpu -q -n 6 --ignore=tests/ui}" bash native/tools/gpu_check.sh test
        summary "pytest counts: $(grep -E '[0-9]+ (passed|failed|error)' "$LOGS/pytest.log" 2>/dev/null | tail -1)"
        # what reads device-wide state (free memory) skips under the workers: run alone here
        stage pytest-alone 10 60 60 python3 -m pytest -m gpu -q -p no:cacheprovider tests/runtime/test_classifier.py -k memory_does_not_grow
        summary "pytest alone: $(grep -E '[0-9]+ (passed|failed|error)' "$LOGS/pytest-alone.log" 2>/dev/null | tail -1)" ;;
      memcheck) stage memcheck 20 150 30 env OUT="$LOGS" SANITIZE_TOOLS=memcheck bash native/tools/gpu_check.sh sanitize ;;
      racecheck) stage racecheck 20 240 0 env OUT="$LOGS" SANITIZE_TOOLS=racecheck bash native/tools/gpu_check.sh sanitize ;;
      *) summary "$c: no such check (CHECKS takes pytest memcheck racecheck)" ;;
    esac
  done
else
  cp "$LOGS/nvidia-smi.txt" "$RESULTS/nvidia-smi.txt"
  # `gemmpad bench TXT WHAT ARGS...`, its printed tables kept beside its JSON as committed (bench-gemm.txt, ...)
  bench=(bash -o pipefail -c 'txt=$1; shift; python3 -m gemmpad bench "$@" --out "$0" --force 2>&1 | tee "$0/$txt"' "$RESULTS")
  # MIN_S MAX_S RESERVE_S per bench: the reserve keeps time for the benches after it in BENCHES
  declare -A plan=([gemm]="${GEMM_MIN_S:-240} 330 150" [mlp]="40 150 70" [train]="30 120 30" [learn]="20 150 0")
  declare -A txt=([gemm]=bench-gemm.txt [mlp]=bench-mlp.txt [train]=train.txt [learn]=learn.txt)
  # bench learn asks for people its model never saw: fold 1's model and its writers 1-6 (models/README.md)
  declare -A args=([gemm]="${GEMM_BUDGET_S:+--budget-s $GEMM_BUDGET_S}" [mlp]="" [train]="${TRAIN_ARGS:-}"
                   [learn]="--model assets/cv/mnist-mlp.fold1.npz --writers 1-6 --below 0")
  for b in ${BENCHES:-gemm mlp train learn}; do
    [ -n "${plan[$b]:-}" ] || { summary "bench-$b: no such bench (BENCHES takes gemm mlp train learn)"; continue; }
    [ "$b" != gemm ] && [ -n "${GEMMPAD_DATA:-}" ] && args[$b]+=" --data $GEMMPAD_DATA"
    # shellcheck disable=SC2086  # plan and args are word lists
    stage "bench-$b" ${plan[$b]} "${bench[@]}" "${txt[$b]}" "$b" ${args[$b]}
  done
  tar -czf "$OUT/h200.tar.gz" "$RESULTS"
  summary "results: h200.tar.gz ($(tar -tzf "$OUT/h200.tar.gz" | grep -c -v '/$') files of $RESULTS)"
fi
pack
summary "done in $(($(date +%s) - START)) s"
