#!/usr/bin/env bash
# The shipped model's round on the H200s inside the device's 10-minute calls: `gemmpad train
# --folds K --resume OPTIONS` with the folds and the model in parallel processes, spread over the
# GPUs. The first job builds the training arrays (every core); once they are cached the others start
# beside it (`--fold I`, 0 the model on every writer; each a CPU core's worth of Python feeding a
# GPU), and when all are done `--folds K --resume` writes the summary into the model's card.
#
# A fold takes longer than one call (~950 s three side by side on one H200), so the round runs detached
# (setsid) and outlives the call that started it while the machine stays warm: each call starts it
# if it is not running, then reports its progress until the round ends or the call's time does.
# Call it again, back to back (the machine goes back ~30 s after a call), until summary.txt says
# "model: done". On a fresh machine the finished folds sent back earlier are kept (runs/h200/), so a
# round too long for one session's device time splits by jobs: H200_FOLDS="0 1 2" now, the rest later.
# Two H200s run the five folds and the model of the --match round in ~1,130 s (one: ~2,300 s).
#
#   WHEEL=.wheelhouse bash native/tools/h200_train.sh --pen-copies 12 --paper-copies 6 ...
#
# WHEEL: a folder of wheels for the machine's Python 3.12: gemmpad's (its compiled modules) and the
# ones that machine lacks (platformdirs, pooch, unlzw3).
#
# Comes back in $OUT: summary.txt, train-logs.tar.gz, runs.tar.gz (unpack into runs/h200/; the
# model, its card, curve and Learn's sets are then copied into models/ by hand).
set -uo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-/tmp/gemmpad-runs} CACHE=${CACHE:-/tmp/gemmpad-cache} K=${FOLDS:-5}
LOGS=${LOGS:-/tmp/h200-train-logs} SITE=/tmp/gemmpad-train-site STATE=${STATE:-/tmp/h200-train-round}
mkdir -p "$RUNS" "$CACHE" "$LOGS" "$STATE"
pack() {  # pack DIR: what a call sends back
  tar -czf "$1/train-logs.tar.gz" -C "$LOGS" . 2>/dev/null
  tar -czf "$1/runs.tar.gz" -C "$RUNS" --exclude='*.lock' . 2>/dev/null
}

running() { [ -f "$STATE/pid" ] && kill -0 "$(cat "$STATE/pid")" 2>/dev/null; }
if [ -z "${H200_ROUND:-}" ]; then  # the call: start the round unless it runs or is done, then follow it
  CALL_START=$(date +%s) CALL_LIMIT=${H200_LIMIT_S:-560} OUT=${OUT:-/tmp/h200-out}
  mkdir -p "$OUT"
  if ! running && ! grep -q "model: done" "$STATE/summary.txt" 2>/dev/null; then
    H200_ROUND=1 H200_LIMIT_S=${H200_ROUND_S:-1700} setsid nohup bash "$0" "$@" >>"$STATE/round.log" 2>&1 </dev/null &
    echo $! >"$STATE/pid"
  fi
  while [ $(($(date +%s) - CALL_START)) -lt $((CALL_LIMIT - 15)) ] && running; do sleep 5; done
  cp "$STATE/summary.txt" "$OUT/summary.txt" 2>/dev/null
  if running; then echo "[call ends] the round goes on: call again now" >>"$OUT/summary.txt"
  elif ! grep -q "model: done" "$OUT/summary.txt" 2>/dev/null; then
    echo "[call ends] the round stopped before the model (above): call again to go on from the finished folds" >>"$OUT/summary.txt"
  fi
  for f in "$LOGS"/*.log; do [ -f "$f" ] && echo "== $f: $(tail -1 "$f")"; done >>"$OUT/summary.txt"
  pack "$OUT"
  exit 0
fi

START=$(date +%s)
LIMIT=$H200_LIMIT_S
OUT=$STATE
say() { echo "[$(($(date +%s) - START))s] $*" | tee -a "$OUT/summary.txt"; }
left() { echo $((START + LIMIT - $(date +%s))); }

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
measured() {  # measured FILE KEY: FILE is a model whose card holds results.KEY (or KEY: Learn's sets)
  python3 -c "import sys; from gemmpad.runtime.model import load_model; card = load_model(sys.argv[1]).card
sys.exit(0 if card.get('results', {}).get(sys.argv[2]) or card.get(sys.argv[2]) else 1)" "$1" "$2" 2>/dev/null
}
finished() { measured "$1" real_writers; }
done_job() {  # done_job I: fold I measured, or (0) the model on every writer with Learn's sets
  if [ "$1" = 0 ]; then measured "$MODEL" rehearsal; else finished "$RUNS/mnist-mlp.fold$1.npz"; fi
}

# Jobs: the folds not yet finished and the model on every writer (fold 0, beside its folds: it needs
# none of them), spread over the GPUs. H200_FOLDS="0 1 2": only these (the rest in a later session).
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU') && [ "$GPUS" -gt 0 ] || GPUS=1
pending=()
for i in ${H200_FOLDS:-0 $(seq 1 "$K")}; do done_job "$i" || pending+=("$i"); done
say "jobs (0: the model) on $GPUS GPU(s): ${pending[*]:-none}"
if [ ${#pending[@]} -gt 0 ]; then
  name() { [ "$1" = 0 ] && echo model || echo "fold$1"; }
  curve() { [ "$1" = 0 ] && echo --curve "$RUNS/training-curve.png"; }
  first=${pending[0]}
  # shellcheck disable=SC2046  # curve's words
  CUDA_VISIBLE_DEVICES=0 train "$(name "$first")" $(($(left) - 15)) --fold "$first" $(curve "$first") "$@" &
  pids=($!)
  until compgen -G "$CACHE/train-*.npz" >/dev/null || ! kill -0 "${pids[0]}" 2>/dev/null; do sleep 2; done
  say "training arrays cached: $(ls "$CACHE" | grep -c '^train-') file(s); starting ${pending[*]:1}"
  n=1
  for i in "${pending[@]:1}"; do
    [ "$(left)" -gt 120 ] || { say "$(name "$i"): not started (too little of the round's time left)"; continue; }
    # shellcheck disable=SC2046
    CUDA_VISIBLE_DEVICES=$((n % GPUS)) train "$(name "$i")" $(($(left) - 15)) --fold "$i" --jobs 3 $(curve "$i") "$@" &
    pids+=($!) n=$((n + 1))
  done
  for p in "${pids[@]}"; do wait "$p"; done
  for i in "${pending[@]}"; do
    done_job "$i" && say "$(name "$i"): done" || say "$(name "$i"): not finished; tail: $(tail -2 "$LOGS/$(name "$i").log" | tr '\n' ' ')"
  done
fi
still=0
for i in $(seq 1 "$K"); do finished "$RUNS/mnist-mlp.fold$i.npz" || still=1; done
if [ $still -eq 0 ] && measured "$MODEL" cross_validation; then
  say "model: done (kept from an earlier round)"
elif [ $still -eq 0 ] && [ "$(left)" -gt 60 ]; then  # the summary, into the model's card (trains it if not yet)
  train model-summary $(($(left) - 10)) --curve "$RUNS/training-curve.png" "$@"
  rc=$?
  [ $rc -eq 0 ] && say "model: done" || say "model: exit $rc; tail: $(tail -3 "$LOGS/model-summary.log" | tr '\n' ' ')"
fi
say "round ends ($(left) s of its limit left)"
