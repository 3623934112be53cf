#!/usr/bin/env bash
# One call on the GPU machine: build, test, sanitize, time. Results land in $OUT.
#
#   bash native/tools/gpu_check.sh [build|test|sanitize|bench|all]...   (default: all)
#
# Environment: ARCH (default 90a-real: Hopper with wgmma), PYTEST_ARGS (default "-m gpu -q -x"),
# SANITIZE_KERNELS (regex of kernel names for compute-sanitizer, default: all CUDA kernels),
# SANITIZE_EXTRA (space-separated Python files run under the sanitizer too, e.g. the MLP and trainer drivers),
# BENCH_ARGS (passed to `gemmpad bench gemm`, default a quick set).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gemmpad-out}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/app:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
steps=("$@"); [ ${#steps[@]} -eq 0 ] && steps=(all)
want() { for s in "${steps[@]}"; do [ "$s" = all ] || [ "$s" = "$1" ] && return 0; done; return 1; }
rc=0

if want build; then
  echo "== build (${ARCH:-90a-real})"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/device.txt"
  nvcc --version | tail -1 | tee -a "$OUT/device.txt"
  cmake -S native -B build/gpu -G Ninja -DGEMMPAD_INPLACE=ON -DCMAKE_CUDA_ARCHITECTURES="${ARCH:-90a-real}" \
        -Dpybind11_DIR="$(python3 -m pybind11 --cmakedir)" >"$OUT/build.log" 2>&1 \
    && cmake --build build/gpu -j16 >>"$OUT/build.log" 2>&1 || { echo "BUILD FAILED"; tail -60 "$OUT/build.log"; exit 1; }
  grep -E "spill|warning" "$OUT/build.log" | grep -v "0 bytes spill" | head -20
fi

if want test; then
  echo "== pytest ${PYTEST_ARGS:--m gpu -q -x}"
  eval "python3 -m pytest ${PYTEST_ARGS:--m gpu -q -x} -p no:cacheprovider" 2>&1 | tee "$OUT/pytest.log" | tail -25
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
fi

if want sanitize; then
  echo "== compute-sanitizer memcheck + racecheck"
  cat >/tmp/sanitize_driver.py <<'PY'
import os, re, sys
import numpy as np
import gemmpad
from gemmpad import registry
pat = re.compile(os.environ.get("SANITIZE_KERNELS", "."))
rng = np.random.default_rng(0)
for spec in registry.kernels(device="cuda", kind="gemm"):
    if not pat.search(spec.name):
        continue
    # the last two take the TMA path of cuda.10 (K, N multiples of 8)
    for (m, n, k) in [(1, 1, 1), (127, 97, 131), (7, 100, 784), (300, 10, 100), (257, 129, 1000), (1, 8, 8), (257, 264, 520)]:
        a = rng.uniform(-1, 1, (m, k)).astype(np.float32); b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
        bias = rng.uniform(-1, 1, n).astype(np.float32)
        gemmpad.gemm(a, b, bias=bias, activation="relu", kernel=spec.name)
    print("ran", spec.name, flush=True)
for extra in os.environ.get("SANITIZE_EXTRA", "").split():
    exec(compile(open(extra).read(), extra, "exec"), {"__name__": "__sanitize__"})
PY
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --error-exitcode 9 python3 /tmp/sanitize_driver.py >"$OUT/sanitize-$tool.log" 2>&1
    s=$?
    echo "$tool exit=$s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-$tool.log" | tail -1)"
    [ $s -eq 0 ] || { rc=1; grep -m5 -A8 -E "Invalid|Race|Error" "$OUT/sanitize-$tool.log"; }
  done
fi

if want bench; then
  echo "== bench"
  python3 -m gemmpad bench gemm ${BENCH_ARGS:---sizes 1024x1024x768 4096x4096x4096} --out "$OUT" 2>&1 | tail -40
fi
exit $rc
