"""Time the tensor-core kernels (08, 09) against cuBLAS through torch, in one run.

    PYTHONPATH=app:. python3 native/tools/time_tc.py [--kernels cuda.09_mma_fp16 ...] [--out results.json]

Both sides are timed the same way so that the ratio means something: operands
resident on the device and random (never zeros), L2 flushed before every rep,
CUDA events around the GEMM alone, median over the reps. Our kernels go through
gemmpad._cuda.bench_gemm; the references are torch.matmul on fp16 tensors
(fp32 accumulate: reduced-precision reductions switched off) and on fp32
tensors with TF32 allowed. cuBLAS writes an fp16 result where ours writes
fp32, which costs us a little more store traffic; it is not corrected for.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable

import torch

from gemmpad import _cuda, files, registry

SIZES = [(1024, 1024, 768), (4096, 4096, 4096), (8192, 8192, 8192), (4096, 100, 784)]


def reps_for(m: int, n: int, k: int) -> int:
    """Fewer reps for the big sizes: a slow rung at 8192^3 takes tens of ms a call."""
    return 20 if m * n * k >= 8192**3 else 50


def torch_median_ms(fn: Callable[[], object], reps: int, warmup: int = 5) -> float:
    """Median of CUDA-event times of fn(), with L2 flushed before each rep (as bench_gemm does)."""
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        flush.zero_()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def cublas_ms(m: int, n: int, k: int, precision: str) -> float:
    """torch.matmul time for the reference precision ("fp16" or "tf32")."""
    dtype = torch.float16 if precision == "fp16" else torch.float32
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.rand(m, k, device="cuda", dtype=dtype, generator=gen) * 2 - 1
    b = torch.rand(k, n, device="cuda", dtype=dtype, generator=gen) * 2 - 1
    c = torch.empty(m, n, device="cuda", dtype=dtype)
    return torch_median_ms(lambda: torch.matmul(a, b, out=c), reps_for(m, n, k))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default = [s.name for s in registry.kernels(device="cuda", kind="gemm") if s.step[:2] in ("08", "09")]
    parser.add_argument("--kernels", nargs="+", default=default)
    parser.add_argument("--out", help="write the results as JSON here")
    args = parser.parse_args()

    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    status = _cuda.status()
    print(f"device: {status['name']} (cc {status['compute_capability']}, {status['multiprocessors']} SMs), "
          f"driver {status['driver_version']}, runtime {status['runtime_version']}, torch {torch.__version__}")

    rows = []
    for m, n, k in SIZES:
        flops = 2.0 * m * n * k
        ref = {p: cublas_ms(m, n, k, p) for p in ("fp16", "tf32")}
        for p, ms in ref.items():
            rows.append({"kernel": f"cublas.{p}", "M": m, "N": n, "K": k, "ms": ms, "tflops": flops / ms / 1e9,
                         "pct_cublas": 100.0})
        for name in args.kernels:
            precision = registry.get(name).precision
            times = _cuda.bench_gemm(name, m, n, k, reps_for(m, n, k), 5, flush_l2=True)
            ms = statistics.median(times)
            rows.append({"kernel": name, "M": m, "N": n, "K": k, "ms": ms, "tflops": flops / ms / 1e9,
                         "pct_cublas": 100.0 * ref[precision] / ms})

    print(f"{'size':>16} {'kernel':<20} {'ms':>9} {'TFLOP/s':>9} {'% cuBLAS':>9}")
    for r in rows:
        size = f"{r['M']}x{r['N']}x{r['K']}"
        print(f"{size:>16} {r['kernel']:<20} {r['ms']:9.4f} {r['tflops']:9.1f} {r['pct_cublas']:8.1f}%")
    if args.out:
        files.write_text(args.out, json.dumps({"device": status, "torch": torch.__version__, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
