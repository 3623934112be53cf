#!/usr/bin/env bash
# One device call for the fused MLP kernels: standalone probe (floors, clocks,
# rates, correctness, kernel and end-to-end timing; a globaltimer trace build;
# compute-sanitizer memcheck/racecheck over every variant), ncu, the module
# build, pytest, compute-sanitizer on the module's fused kernels, the MLP
# benchmark. Each step is time-boxed; logs go to $OUT (at most 8 files come back).
#
#   STEPS="probe trace memcheck racecheck ncu build test sanitize bench" bash native/tools/mlp_probe.sh
#   PROBE_MODE=rows|staging|loads|floors|final (default all): what the probe step runs (native/tools/mlp_probe/)
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/mlp-probe-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/app:$PWD${PYTHONPATH:+:$PYTHONPATH}"
STEPS=${STEPS:-probe memcheck racecheck build test sanitize}
want() { [[ " $STEPS " == *" $1 "* ]]; }
T0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
# what Mlp links against: every file of native/cuda/mlp (resident.cu too: mlp.cu runs it), the support layer, split-K
MLP_SRC="$(ls native/cuda/mlp/*.cu) native/cuda/support/support.cu native/cuda/gemm/splitk.cu"
NVCC="nvcc -O3 -std=c++17 -arch=sm_90a -lineinfo --expt-relaxed-constexpr -Inative/include"  # the module's flags (CMakeLists.txt)

# at most 8 files come back: probe.txt clocks.csv ncu.txt build.log pytest.log sanitize-*.log bench.txt (pick the steps)
nvidia-smi --query-gpu=name,driver_version,pstate,clocks.sm,clocks.max.sm,clocks.mem,power.draw --format=csv >/tmp/device.txt 2>&1
cat /tmp/device.txt
if want build; then
  stamp "module build (background)"
  generator=(); command -v ninja >/dev/null && generator=(-G Ninja)
  ( cmake -S native -B build/gpu ${generator[@]+"${generator[@]}"} -DGEMMPAD_INPLACE=ON -DCMAKE_CUDA_ARCHITECTURES=${ARCH:-90a-real} \
      -Dpybind11_DIR="$(python3 -m pybind11 --cmakedir)" >"$OUT/build.log" 2>&1 \
    && timeout 240 cmake --build build/gpu -j${BUILD_JOBS:-12} >>"$OUT/build.log" 2>&1; echo "build exit $?" >>"$OUT/build.log" ) &
  BUILD=$!
fi
if want probe || want trace || want memcheck || want racecheck || want ncu; then
stamp "compiling probes"
mkdir -p /tmp/probe-obj
PIDS=""
# object names carry their folder (mlp-staging.o, mlp_probe-staging.o): file names repeat across folders
obj() { echo "/tmp/probe-obj/$(basename "$(dirname "$1")")-$(basename "$1" .cu)${2:-}.o"; }
PROBE_SRC=$(ls native/tools/mlp_probe/*.cu)
for f in $MLP_SRC $PROBE_SRC; do
  $NVCC -Inative/cuda/mlp -c $f -o "$(obj $f)" >"$(obj $f).log" 2>&1 &
  PIDS="$PIDS $!"
  # the trace build: the kernels with stamps (mlp_trace.cuh force-included), and the probe files (its trace mode)
  trace=()
  case $f in
    native/cuda/mlp/fused_mlp.cu) trace=(-include native/tools/mlp_trace.cuh -DGEMMPAD_TRACE_TU=fused) ;;
    native/cuda/mlp/fused_mlp_ksplit.cu) trace=(-include native/tools/mlp_trace.cuh -DGEMMPAD_TRACE_TU=ksplit) ;;
    native/tools/mlp_probe/*) trace=(-DGEMMPAD_MLP_TRACE) ;;
  esac
  if want trace && [ ${#trace[@]} -gt 0 ]; then
    $NVCC "${trace[@]}" -Inative/cuda/mlp -c $f -o "$(obj $f -trace)" >"$(obj $f -trace).log" 2>&1 &
    PIDS="$PIDS $!"
  fi
done
wait $PIDS
cat /tmp/probe-obj/*.log | grep -E "error" | head -20
O=/tmp/probe-obj
# every object but the two kernels the trace build stamps, which each binary takes in its own build
SHARED=$(for f in $MLP_SRC; do case $f in */fused_mlp.cu|*/fused_mlp_ksplit.cu) ;; *) obj $f ;; esac; done)
$NVCC $(for f in $PROBE_SRC; do obj $f; done) $O/mlp-fused_mlp.o $O/mlp-fused_mlp_ksplit.o $SHARED -o /tmp/mlp_probe >/tmp/probe-build.log 2>&1
want trace && $NVCC $(for f in $PROBE_SRC; do obj $f -trace; done) $O/mlp-fused_mlp-trace.o $O/mlp-fused_mlp_ksplit-trace.o $SHARED -o /tmp/mlp_probe_trace >>/tmp/probe-build.log 2>&1
cat /tmp/probe-build.log | head -5
fi

if want probe && [ -x /tmp/mlp_probe ]; then
  stamp "probe"
  nvidia-smi --query-gpu=timestamp,pstate,clocks.sm,clocks.mem,power.draw,utilization.gpu --format=csv -lms 250 >"$OUT/clocks.csv" 2>&1 &
  SMI=$!
  { cat /tmp/device.txt; nvcc --version | tail -1; grep -E "error" /tmp/probe-build.log; } >"$OUT/probe.txt" 2>&1
  timeout ${PROBE_TIMEOUT:-150} /tmp/mlp_probe ${PROBE_MODE:-all} >>"$OUT/probe.txt" 2>&1; echo "probe exit $?" >>"$OUT/probe.txt"
  kill $SMI 2>/dev/null
fi
if want trace && [ -x /tmp/mlp_probe_trace ]; then
  stamp "trace"
  timeout 60 /tmp/mlp_probe_trace trace >>"$OUT/probe.txt" 2>&1; echo "trace exit $?" >>"$OUT/probe.txt"
fi
if want memcheck && [ -x /tmp/mlp_probe ]; then
  stamp "memcheck over every variant (probe check mode)"
  timeout ${MEMCHECK_TIMEOUT:-120} compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/mlp_probe check >"$OUT/sanitize-memcheck.log" 2>&1
  echo "memcheck probe exit=$?: $(grep -E 'ERROR SUMMARY' "$OUT/sanitize-memcheck.log" | tail -1)"
fi
if want racecheck && [ -x /tmp/mlp_probe ]; then
  stamp "racecheck over every variant (probe check mode)"
  PROBE_FILTER=${RACECHECK_FILTER:-} timeout ${RACECHECK_TIMEOUT:-120} compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/mlp_probe check >"$OUT/sanitize-racecheck.log" 2>&1
  echo "racecheck probe exit=$?: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/sanitize-racecheck.log" | tail -1)"
fi
if want ncu && [ -x /tmp/mlp_probe ]; then
  stamp "ncu"
  timeout 120 ncu --clock-control none --cache-control none --section SpeedOfLight --section LaunchStats --section Occupancy \
    --section WarpStateStats -k regex:"split_kernel|rows_kernel" --launch-count 5 /tmp/mlp_probe ncu >"$OUT/ncu.txt" 2>&1
  echo "ncu exit $?" >>"$OUT/ncu.txt"
fi
if want build; then
  wait $BUILD
  stamp "build: $(tail -1 "$OUT/build.log")"
  grep -E "error|spill" "$OUT/build.log" | grep -v "0 bytes spill" | head -20
fi
if want test && grep -q "build exit 0" "$OUT/build.log" 2>/dev/null; then
  stamp "pytest"
  timeout ${PYTEST_TIMEOUT:-200} python3 -m pytest -m gpu -q -p no:cacheprovider tests/native/test_cuda_mlp.py tests/runtime/test_classifier.py >"$OUT/pytest.log" 2>&1
  echo "pytest exit $?" >>"$OUT/pytest.log"
  tail -15 "$OUT/pytest.log"
fi
if want sanitize && grep -q "build exit 0" "$OUT/build.log" 2>/dev/null; then
  stamp "sanitize (module: native/tools/sanitize_mlp.py)"
  : >"$OUT/sanitize-module.log"
  for tool in ${SAN_TOOLS:-memcheck racecheck}; do
    echo "==== $tool" >>"$OUT/sanitize-module.log"
    SANITIZE_MLP_KERNELS=${SANITIZE_MLP_KERNELS:-mlp_fused} timeout ${SAN_TIMEOUT:-150} compute-sanitizer --tool $tool --error-exitcode 9 \
      python3 native/tools/sanitize_mlp.py >>"$OUT/sanitize-module.log" 2>&1
    echo "module $tool exit=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-module.log" | tail -1)"
  done
fi
if want bench && grep -q "build exit 0" "$OUT/build.log" 2>/dev/null; then
  stamp "bench mlp"
  timeout ${BENCH_TIMEOUT:-200} python3 -m gemmpad bench mlp ${BENCH_ARGS:-} >"$OUT/bench.txt" 2>&1
  echo "bench exit $?" >>"$OUT/bench.txt"
fi

stamp "summary"
[ -f "$OUT/ncu.txt" ] && grep -E "split_kernel|rows_kernel|Duration|SM Frequency|Elapsed Cycles  |Registers Per|Achieved Occ|Warp Cycles Per Issued|ncu exit" "$OUT/ncu.txt" \
  | sed -E 's/\(FusedWeights.*//; s/gemmpad::cuda::\(anonymous namespace\):://; s/ +/ /g' | head -70
[ -f "$OUT/probe.txt" ] && grep -E "FAIL|failures|exit" "$OUT/probe.txt" | head -20
[ -f "$OUT/probe.txt" ] && grep -E "^  trace" "$OUT/probe.txt" | cut -c1-400
[ -f "$OUT/bench.txt" ] && grep -E "^\| (cuda|torch)|exit" "$OUT/bench.txt" | head -12
[ -f "$OUT/probe.txt" ] && sed -n "${PROBE_FROM:-/== floors/},\$p" "$OUT/probe.txt" | grep -v "^  trace"
exit 0
