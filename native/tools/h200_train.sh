#!/usr/bin/env bash
# The shipped model's round on one H200 inside the device's 10-minute calls: `gemmpad train
# --folds K --resume OPTIONS` with the folds in parallel processes. The first fold builds the
# training arrays (every core); once they are cached the other folds start beside it (`--fold I`,
# each a CPU core's worth of Python feeding the GPU), and when all are measured `--folds K --resume`
# writes the summary and trains the model on every writer. Call it again on the still-warm machine
# until summary.txt ends with "model: done"; finished folds are kept (in $RUNS, and from runs/h200/
# when a new machine is given the files an earlier call sent back).
#
#   WHEEL=.wheelhouse bash native/tools/h200_train.sh --pen-copies 12 --paper-copies 6 ...
#
# Comes back in $OUT: summary.txt, train-logs.tar.gz, runs.tar.gz (unpack into runs/h200/; the
# model, its card, curve and Learn's sets are then copied into models/ by hand).
set -uo pipefail
START=$(date +%s)
LIMIT=${H200_LIMIT_S:-560}
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/h200-out} RUNS=${RUNS:-/tmp/gemmpad-runs} CACHE=${CACHE:-/tmp/gemmpad-cache} K=${FOLDS:-5}
LOGS=/tmp/h200-train-logs SITE=/tmp/gemmpad-train-site
mkdir -p "$OUT" "$RUNS" "$CACHE" "$LOGS"
say() { echo "[$(($(date +%s) - START))s] $*" | tee -a "$OUT/summary.txt"; }
left() { echo $((START + LIMIT - $(date +%s))); }
pack() {
  tar -czf "$OUT/train-logs.tar.gz" -C "$LOGS" . 2>/dev/null
  tar -czf "$OUT/runs.tar.gz" -C "$RUNS" --exclude='*.lock' . 2>/dev/null
}

# The package: this checkout's Python with the compiled modules of a wheel (or of an in-place build).
if [ -n "${WHEEL:-}" ] && [ ! -d "$SITE/gemmpad" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$WHEEL"/*.whl >"$LOGS/pip.log" 2>&1 \
    || { say "wheel install failed"; exit 1; }
fi
[ -d "$SITE/gemmpad" ] && cp "$SITE"/gemmpad/_*.so app/gemmpad/
export PYTHONPATH="$PWD/app${WHEEL:+:$SITE}" PYTHONUNBUFFERED=1
for d in "${GEMMPAD_DATA:-}" .data/mnist shared/data/mnist; do
  [ -n "$d" ] && compgen -G "$d/train-images-idx3-ubyte*" >/dev/null && { export GEMMPAD_DATA=$(realpath "$d"); break; }
done
for f in "${GEMMPAD_PENDIGITS:-}" .data/pendigits/pendigits-orig.tra shared/data/pendigits/pendigits-orig.tra; do
  [ -n "$f" ] && [ -f "$f" ] && { export GEMMPAD_PENDIGITS=$(realpath "$f"); break; }
done
[ -d runs/h200 ] && cp -n runs/h200/*.fold* "$RUNS"/ 2>/dev/null
say "h200_train.sh $(date -u +%FT%TZ), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1);" \
  "data ${GEMMPAD_DATA:-none}, ${GEMMPAD_PENDIGITS:-none}; options: $*"

MODEL=$RUNS/mnist-mlp.npz
train() {  # train LOGNAME SECONDS ARGS...: one gemmpad train of this recipe, cut at SECONDS
  local name=$1 secs=$2
  shift 2
  timeout -k 10 "$secs" python3 -m gemmpad train --cache "$CACHE" --output "$MODEL" --folds "$K" --resume "$@" \
    >"$LOGS/$name.log" 2>&1
}
measured() {  # measured FILE RESULT: FILE is a model whose card holds results.RESULT
  python3 -c "import sys; from gemmpad.runtime.model import load_model
sys.exit(0 if load_model(sys.argv[1]).card.get('results', {}).get(sys.argv[2]) else 1)" "$1" "$2" 2>/dev/null
}
finished() { measured "$1" real_writers; }

pending=()
for i in $(seq 1 "$K"); do finished "$RUNS/mnist-mlp.fold$i.npz" || pending+=("$i"); done
say "folds to train: ${pending[*]:-none}"
if [ ${#pending[@]} -gt 0 ]; then
  first=${pending[0]}
  train "fold$first" $(($(left) - 15)) --fold "$first" "$@" &
  pids=($!)
  until compgen -G "$CACHE/train-*.npz" >/dev/null || ! kill -0 "${pids[0]}" 2>/dev/null; do sleep 2; done
  say "training arrays cached: $(ls "$CACHE" | grep -c '^train-') file(s); starting folds ${pending[*]:1}"
  for i in "${pending[@]:1}"; do
    [ "$(left)" -gt 120 ] || { say "fold $i: not started (too little of the call left)"; continue; }
    train "fold$i" $(($(left) - 15)) --fold "$i" --jobs 3 "$@" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  for i in "${pending[@]}"; do
    finished "$RUNS/mnist-mlp.fold$i.npz" && say "fold $i: done" || say "fold $i: not finished; tail: $(tail -2 "$LOGS/fold$i.log" | tr '\n' ' ')"
  done
  pack
fi
still=0
for i in $(seq 1 "$K"); do finished "$RUNS/mnist-mlp.fold$i.npz" || still=1; done
if [ $still -eq 0 ] && measured "$MODEL" cross_validation; then
  say "model: done (kept from an earlier call)"
elif [ $still -eq 0 ] && [ "$(left)" -gt 60 ]; then
  train model $(($(left) - 10)) --force --curve "$RUNS/training-curve.png" "$@"
  rc=$?
  [ $rc -eq 0 ] && say "model: done" || say "model: exit $rc; tail: $(tail -3 "$LOGS/model.log" | tr '\n' ' ')"
fi
pack
say "call ends ($(left) s of its limit left)"
