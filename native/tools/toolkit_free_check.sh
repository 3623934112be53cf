#!/usr/bin/env bash
# Proof that the toolkit-free build works: a gemmpad wheel whose CUDA module was compiled with
# NVIDIA's compiler wheels (no CUDA toolkit visible) passes `pytest -m gpu` when installed.
#
#   bash native/tools/toolkit_free_check.sh [WHEELHOUSE]      (default WHEELHOUSE: .wheelhouse)
#
# WHEELHOUSE holds either a gemmpad wheel built elsewhere for this python3 (tested as is), or,
# with BUILD=1, the build requirements as wheels: scikit-build-core and its needs, pybind11,
# cmake and ninja (pip-installed ones on PATH fail under build isolation) and
# nvidia-cuda-nvcc/nvvm/crt/runtime/cccl 13.0.* (about 104 MB). The build then runs offline
# with every nvcc hidden: a PATH without the folders holding one, /usr/local/cuda* mounted
# empty in a private mount namespace (as root), no CUDA_HOME. Any other wheels in WHEELHOUSE
# (runtime needs the machine lacks, such as dearpygui) are installed beside gemmpad.
#
# The tests run from this checkout's tests/ against the installed package, never app/: the
# script checks where `gemmpad` imports from and that its CUDA module links no libcudart.so.
# Results land in $OUT (default /tmp/toolkit-free-out): build.log, pytest.log, info.txt.
# Environment: BUILD (0), GEMMPAD_CUDA_ARCHS (for BUILD=1; default: the GPUs seen),
# PYTEST_ARGS (default "-m gpu -q").
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
wheelhouse=$(cd "${1:-.wheelhouse}" && pwd)
OUT=${OUT:-/tmp/toolkit-free-out}
mkdir -p "$OUT"
site=$(mktemp -d /tmp/gemmpad-site.XXXXXX)
export PYTHONUNBUFFERED=1 PIP_ROOT_USER_ACTION=ignore
py=$(command -v python3)
echo "python: $($py --version), $(nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>/dev/null || echo 'no nvidia-smi')"

if [ "${BUILD:-0}" = 1 ]; then
  # Hide every toolkit: PATH without the folders that hold an nvcc, /usr/local/cuda* mounted
  # empty (root only: a private mount namespace, undone when the build ends), no CUDA_HOME.
  clean_path=$(IFS=:; for d in $PATH; do [ -e "$d/nvcc" ] || printf '%s:' "$d"; done)
  clean_path=${clean_path%:}
  for tool in c++ cmake; do
    PATH=$clean_path command -v "$tool" >/dev/null || { echo "hiding nvcc hides $tool too: put it on PATH elsewhere"; exit 1; }
  done
  hide=""
  for d in /usr/local/cuda*; do [ -d "$d" ] && hide="$hide mount --bind $(mktemp -d) $d;"; done
  build="cd '$repo' && env -u CUDA_HOME -u CUDA_PATH -u CUDACXX PATH='$clean_path' GEMMPAD_CUDA=wheels \
    PIP_NO_INDEX=1 PIP_FIND_LINKS='$wheelhouse' '$py' -m pip wheel --no-deps -v . -w '$OUT/dist'"
  echo "== build without a toolkit (nvcc on PATH: $(PATH=$clean_path command -v nvcc || echo none))"
  start=$(date +%s)
  if [ -n "$hide" ] && [ "$(id -u)" = 0 ]; then
    unshare -m sh -c "$hide $build" >"$OUT/build.log" 2>&1 || { tail -60 "$OUT/build.log"; exit 1; }
  else
    sh -c "$build" >"$OUT/build.log" 2>&1 || { tail -60 "$OUT/build.log"; exit 1; }
  fi
  echo "built in $(( $(date +%s) - start )) s"
  grep -E "gemmpad build:|CUDA compiler identification|Found CUDAToolkit|building _cuda" "$OUT/build.log" | sort -u
  wheel=$(ls "$OUT"/dist/gemmpad-*.whl)
else
  tag=$($py -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
  wheel=$(ls "$wheelhouse"/gemmpad-*-"$tag"-*.whl 2>/dev/null | head -1)
  [ -n "$wheel" ] || { echo "no gemmpad wheel for $tag in $wheelhouse"; exit 1; }
fi

echo "== install $(basename "$wheel")"
others=$(ls "$wheelhouse"/*.whl | grep -v -E '/(gemmpad|nvidia_|scikit_build_core|pybind11|packaging|pathspec|cmake|ninja)-' || true)
# shellcheck disable=SC2086  # $others is a list of paths without spaces
"$py" -m pip install -q --no-index --no-deps --no-compile --target "$site" "$wheel" $others
export PYTHONPATH="$site"
where=$(cd "$repo" && "$py" -c 'import gemmpad, os; print(os.path.dirname(gemmpad.__file__))')
[ "$where" = "$site/gemmpad" ] || { echo "gemmpad imports from $where, not the installed wheel"; exit 1; }
cuda_so=$(ls "$site"/gemmpad/_cuda*.so 2>/dev/null || true)
[ -n "$cuda_so" ] || { echo "the wheel has no CUDA module"; exit 1; }
if ldd "$cuda_so" | grep -q libcudart; then echo "the CUDA module links libcudart dynamically"; exit 1; fi
echo "CUDA module: $(basename "$cuda_so"), cudart static"
(cd "$repo" && "$py" -m gemmpad.commands.cli info >"$OUT/info.txt" 2>&1) || true
grep -i -E "^CUDA|architectures" "$OUT/info.txt" || true

echo "== pytest ${PYTEST_ARGS:--m gpu -q} (tests/ against the installed wheel)"
set +e
(cd "$repo" && eval "'$py' -m pytest ${PYTEST_ARGS:--m gpu -q} -p no:cacheprovider") >"$OUT/pytest.log" 2>&1
rc=$?
set -e
tail -15 "$OUT/pytest.log"
exit $rc
