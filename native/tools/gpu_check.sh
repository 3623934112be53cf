#!/usr/bin/env bash
# One call on the GPU machine: build, test, sanitize, time. Logs and results land in $OUT.
# Works from a fresh checkout without network: an in-place CMake build (no pip install), then
# PYTHONPATH=app. Needs nvcc, python3 with numpy, pytest and pybind11 (torch for the
# references), cmake, compute-sanitizer.
#
#   bash native/tools/gpu_check.sh [build|test|sanitize|bench|all]...   (default: all)
#
# Environment: ARCH (default 90a-real: Hopper with wgmma), PYTEST_ARGS (default "-m gpu -q -x"),
# SANITIZE_KERNELS (regex of GEMM kernel names for compute-sanitizer, default: all CUDA kernels),
# SANITIZE_EXTRA (space-separated Python drivers run under the sanitizer too; default the MLP and
# trainer drivers in native/tools/, empty to skip them), SANITIZE_TOOLS (default "memcheck racecheck"), GEMM_ARGS / MLP_ARGS (passed to
# `gemmpad bench gemm` / `gemmpad bench mlp`, default a quick GEMM set and the full MLP run).
# The bench step prints the MLP kernel times beside the committed ones (assets/benchmarks/h200).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gemmpad-out}
mkdir -p "$OUT"
# GEMMPAD_SITE: a folder where a gemmpad wheel is installed, tested in place of app/ (h200_run.sh WHEEL=...)
export PYTHONPATH="${GEMMPAD_SITE:-$PWD/app}:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
steps=("$@"); [ ${#steps[@]} -eq 0 ] && steps=(all)
want() { for s in "${steps[@]}"; do [ "$s" = all ] || [ "$s" = "$1" ] && return 0; done; return 1; }
rc=0

if want build; then
  echo "== build (${ARCH:-90a-real})"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/device.txt"
  nvcc --version | tail -1 | tee -a "$OUT/device.txt"
  generator=(); command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S native -B build/gpu ${generator[@]+"${generator[@]}"} -DGEMMPAD_INPLACE=ON -DGEMMPAD_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${ARCH:-90a-real}" \
        -Dpybind11_DIR="$(python3 -m pybind11 --cmakedir)" >"$OUT/build.log" 2>&1 \
    && cmake --build build/gpu -j16 >>"$OUT/build.log" 2>&1 || { echo "BUILD FAILED"; tail -60 "$OUT/build.log"; exit 1; }
  grep -E "spill|warning" "$OUT/build.log" | grep -v "0 bytes spill" | head -20
fi

if want test; then
  echo "== pytest ${PYTEST_ARGS:--m gpu -q -x}"
  python3 -c 'import importlib.util as u; m = [n for n in ("pytest", "numpy", "PIL", "hypothesis", "torch") if not u.find_spec(n)]; print("python modules missing here:", ", ".join(m) or "none")'
  eval "python3 -m pytest ${PYTEST_ARGS:--m gpu -q -x} -p no:cacheprovider" 2>&1 | tee "$OUT/pytest.log" | tail -25
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
fi

if want sanitize; then
  echo "== compute-sanitizer memcheck + racecheck"
  cat >"$OUT/sanitize_driver.py" <<'PY'
import os, re, sys
import numpy as np
import gemmpad
from gemmpad.errors import KernelUnavailable
from gemmpad.runtime import registry
pat = re.compile(os.environ.get("SANITIZE_KERNELS", "."))
rng = np.random.default_rng(0)
idle = []  # rungs that refused every shape: they were not checked at all
for spec in registry.kernels(device="cuda", kind="gemm"):
    if not pat.search(spec.name):
        continue
    # (1, 8, 8) and (257, 264, 520) take the TMA path of cuda.10 (K, N multiples of 8); the last one
    # has more 128 x 256 tiles (17 x 9) than an H200 has SMs, without split-K: cuda.14-16's and 20's
    # blocks walk on to a second tile, TMA store, multicast pairs (an odd row of tiles; K and N allow TMA
    # at 8 and 16 bits)
    ran = 0
    for (m, n, k) in [(1, 1, 1), (127, 97, 131), (7, 100, 784), (300, 10, 100), (257, 129, 1000), (1, 8, 8), (257, 264, 520), (2100, 2112, 144)]:
        a = rng.uniform(-1, 1, (m, k)).astype(np.float32); b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
        bias = rng.uniform(-1, 1, n).astype(np.float32)
        try:
            gemmpad.gemm(a, b, bias=bias, activation="relu", kernel=spec.name)
        except KernelUnavailable:  # a rung outside its step at this shape (14-17, 19, 20): nothing launched
            continue
        ran += 1
    print("ran", spec.name, "at", ran, "shapes", flush=True)
    if ran == 0:
        idle.append(spec.name)
for extra in sys.argv[1:]:  # the drivers are arguments: compute-sanitizer drops empty environment variables
    exec(compile(open(extra).read(), extra, "exec"), {"__name__": "__sanitize__"})
if idle:
    sys.exit("refused every shape, so not sanitized: " + ", ".join(idle))
PY
  for tool in ${SANITIZE_TOOLS:-memcheck racecheck}; do
    # shellcheck disable=SC2086  # one argument per driver
    compute-sanitizer --tool $tool --error-exitcode 9 python3 "$OUT/sanitize_driver.py" \
      ${SANITIZE_EXTRA-native/tools/sanitize_mlp.py native/tools/sanitize_train.py} >"$OUT/sanitize-$tool.log" 2>&1
    s=$?
    echo "$tool exit=$s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-$tool.log" | tail -1)"
    [ $s -eq 0 ] || { rc=1; grep -m5 -A8 -E "Invalid|Race|Error" "$OUT/sanitize-$tool.log"; }
  done
fi

if want bench; then
  echo "== bench gemm"
  python3 -m gemmpad bench gemm ${GEMM_ARGS:---sizes 1024x1024x768 4096x4096x4096} --out "$OUT" --force >"$OUT/bench-gemm.log" 2>&1 \
    || { rc=1; tail -20 "$OUT/bench-gemm.log"; }
  echo "== bench mlp"
  python3 -m gemmpad bench mlp ${MLP_ARGS:-} --out "$OUT" --force >"$OUT/bench-mlp.log" 2>&1 || { rc=1; tail -20 "$OUT/bench-mlp.log"; }
  [ -f "$OUT/bench-mlp.json" ] && python3 - "$OUT/bench-mlp.json" assets/benchmarks/h200/bench-mlp.json <<'PY'
import json, sys
def kernel_us(path):
    return {(r["kernel"], r["batch"]): r["kernel_us"] for r in json.load(open(path))["results"] if "kernel_us" in r}
now, committed = kernel_us(sys.argv[1]), kernel_us(sys.argv[2])
print(f"{'kernel':28} {'batch':>5} {'now us':>9} {'committed':>9}")
for key in sorted(now, key=lambda k: (k[1], k[0])):
    if key[0].startswith(("cuda.mlp", "cpu.mlp", "torch")):
        print(f"{key[0]:28} {key[1]:5d} {now[key]:9.1f} {committed.get(key, float('nan')):9.1f}")
PY
fi
exit $rc
