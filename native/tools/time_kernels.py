"""Quick GPU timing of the CUDA GEMM ladder against cuBLAS fp32, measured in the same run.

    PYTHONPATH=app:. python3 native/tools/time_kernels.py [--kernels REGEX] [--out DIR]

A developer tool for the GPU machine until `gemmpad bench gemm` covers the
same ground: each kernel is timed with gemmpad._cuda.bench_gemm (CUDA events,
L2 flushed before every rep, median), and cuBLAS through torch.matmul with TF32
disabled, timed the same way, so the percentages compare like with like.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
from pathlib import Path

import torch

from gemmpad import files, native, registry
from gemmpad.errors import CudaError

# (M, N, K): the seed's table size, the big square, the MLP's first layer at two batch sizes.
SHAPES = [(1024, 1024, 768), (4096, 4096, 4096), (256, 100, 784), (4096, 100, 784)]
TARGET_SECONDS = 0.3  # per kernel and shape: enough reps for a stable median, at most MAX_REPS
MIN_REPS, MAX_REPS = 3, 50


def reps_for(ms_per_rep: float) -> int:
    """Slow kernels (the naive one at 4096^3) get few reps, fast ones many."""
    return int(min(MAX_REPS, max(MIN_REPS, TARGET_SECONDS * 1e3 / max(ms_per_rep, 1e-3))))


def time_kernel(cuda: object, name: str, m: int, n: int, k: int) -> float:
    """Median ms of one of our kernels."""
    probe = statistics.median(cuda.bench_gemm(name, m, n, k, reps=2, warmup=1, flush_l2=True))
    return statistics.median(cuda.bench_gemm(name, m, n, k, reps=reps_for(probe), warmup=2, flush_l2=True))


def time_cublas(m: int, n: int, k: int, flush: torch.Tensor) -> float:
    """Median ms of torch.matmul in fp32 (cuBLAS SGEMM), L2 flushed like bench_gemm does."""
    a = torch.empty(m, k, device="cuda").uniform_(-1, 1)
    b = torch.empty(k, n, device="cuda").uniform_(-1, 1)
    c = torch.empty(m, n, device="cuda")
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def run(reps: int) -> list[float]:
        out = []
        for i in range(reps):
            flush.fill_(i & 0xFF)
            start.record()
            torch.matmul(a, b, out=c)
            stop.record()
            stop.synchronize()
            out.append(start.elapsed_time(stop))
        return out

    run(3)  # warm-up: cuBLAS picks and loads its kernel on the first call
    probe = statistics.median(run(2))
    return statistics.median(run(reps_for(probe)))


def device_info() -> dict[str, str]:
    """What a reader needs to reproduce the numbers."""
    smi = subprocess.run(
        ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return {
        "device": torch.cuda.get_device_name(),
        "nvidia_smi": smi,
        "torch": torch.__version__,
        "cuda_runtime": str(torch.version.cuda),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default=".", help="regex on kernel names (default: every fp32 CUDA GEMM)")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")), help="where to write JSON")
    args = parser.parse_args()

    torch.backends.cuda.matmul.allow_tf32 = False
    cuda = native.cuda()
    names = [
        s.name
        for s in registry.kernels(device="cuda", kind="gemm")
        if s.precision == "fp32" and re.search(args.kernels, s.name)
    ]
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4, device="cuda")
    info = device_info()
    print(" | ".join(f"{k}: {v}" for k, v in info.items()))
    rows = []
    for m, n, k in SHAPES:
        flops = 2.0 * m * n * k
        ref_ms = time_cublas(m, n, k, flush)
        print(f"\n{m}x{n}x{k} (MxNxK)   cuBLAS fp32: {ref_ms:.4f} ms = {flops / ref_ms / 1e6:,.0f} GFLOP/s")
        for name in names:
            try:
                ms = time_kernel(cuda, name, m, n, k)
            except CudaError as e:  # report and go on: one broken kernel should not hide the others' figures
                print(f"  {name:<24} FAILED: {e}")
                continue
            pct = 100.0 * ref_ms / ms
            print(f"  {name:<24} {ms:10.4f} ms {flops / ms / 1e6:12,.0f} GFLOP/s {pct:7.1f} % of cuBLAS")
            rows.append({"kernel": name, "M": m, "N": n, "K": k, "ms": ms, "cublas_ms": ref_ms,
                         "gflops": flops / ms / 1e6, "pct_cublas": pct})
    args.out.mkdir(parents=True, exist_ok=True)
    files.write_text(args.out / "time_kernels.json", json.dumps({"info": info, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
