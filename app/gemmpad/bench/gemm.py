"""`gemmpad bench gemm`: every GEMM kernel, checked against float64 and then
timed against cuBLAS at the same precision (NumPy for CPU kernels).

By default it times the MLP's own layer shapes (256 and 4096 rows x 784 -> 100,
4096 x 100 -> 100) next to the large squares (4096³, 8192³) where the ladder is
usually compared. The reference for each precision comes from PRECISIONS: a
kernel registered with a precision listed there gets its cuBLAS row without
further code.

The reference does the same work as our kernels, on operands drawn the same way
(OPERAND_RANGE: the bits multiplied set the tensor cores' power and so the
clock). float16 and bfloat16 operands give a float32 C there too (cuBLAS
through torch.mm's out_dtype), where a plain matmul would write half the bytes
of C; a torch without out_dtype (or cupy) writes C in the operand type, and the
row's reference name says so. fp8 (e4m3) goes through cuBLASLt by
torch._scaled_mm with unit scales in its fastest mode, fast accumulation (the
products summed in the tensor cores' own accumulator, as our fp8 kernels do,
without cuBLASLt's periodic promotion to float32); it takes only K and N that
are multiples of 16: elsewhere (the MLP's N = 100) fp8 rows have no reference.

GPU times, ours and cuBLAS's alike, are the lowest median of SERIES series: a
single series sometimes catches the card changing clocks, and on an H100 the
cuBLAS references moved by up to 2x between series of one run while the
kernels moved by a few percent (most of it Python falling behind the queued
reps, since held: queued(); native/cuda/gemm/NOTES.md). The reference is
timed beside every kernel, its series alternating with the kernel's, so that
both meet the card in the same state: a full run holds the GPU near its power
limit for minutes, and a reference timed once per precision met a cooler card
than the rungs timed after it (NOTES.md, 2026-11-27).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gemmpad.runtime import native, registry
from gemmpad.commands.args import MAX_REPS, integer, number
from gemmpad.bench import add_out_argument, select
from gemmpad.bench.machine import BLAS_ENV, blas_label, machine
from gemmpad.bench.report import add_readme_argument, gemm_table, write
from gemmpad.errors import GemmpadError, KernelUnavailable
from gemmpad.runtime.gemm import MAX_ELEMENTS
from gemmpad.runtime.precision import bound_ratio, format_of, gemm_bound
from gemmpad.terminal import counted

SERIES = 3  # GPU timings: the lowest median of this many series (module docstring)
DEFAULT_SIZES = ["256x100x784", "4096x100x784", "4096x100x100", "4096x4096x4096", "8192x8192x8192"]
# The CPU ladder's naive rung needs ~1 s per GFLOP: larger products are skipped
# unless named with --kernels.
CPU_MAX_MNK = 1.1e9


@dataclass(frozen=True)
class Precision:
    """Which cuBLAS call is a kernel precision's reference (its check: gemmpad.runtime.precision's bound)."""

    dtype: str  # operand type of the reference matmul (torch / cupy attribute name)
    tf32: bool = False  # the reference may use TF32 tensor cores


PRECISIONS = {
    "fp32": Precision("float32"),
    "tf32": Precision("float32", tf32=True),
    "fp16": Precision("float16"),
    "bf16": Precision("bfloat16"),
    "fp8": Precision("float8_e4m3fn"),
}


def precision(name: str) -> Precision:
    try:
        ref = PRECISIONS[name]
    except KeyError:
        raise GemmpadError(f"precision {name!r} has no entry in gemmpad.bench.gemm.PRECISIONS "
                           f"(known: {', '.join(PRECISIONS)})") from None
    format_of(name)  # a precision without an error bound cannot be checked
    return ref


def add_arguments(g: argparse.ArgumentParser) -> None:
    g.add_argument("--sizes", nargs="+", type=parse_size, default=[parse_size(s) for s in DEFAULT_SIZES], metavar="MxNxK")
    g.add_argument("--kernels", nargs="+", default=None, metavar="NAME", help="kernel names or regexes (default: all)")
    g.add_argument("--reps", type=integer(1, MAX_REPS), default=50, help="timed repetitions per measurement at most")
    g.add_argument("--budget-s", type=number(0, above=True), default=2.0, help="time budget per measurement (fewer reps if slow)")
    add_out_argument(g, ("bench-gemm.json", "bench-gemm.png"))
    add_readme_argument(g)


def parse_size(s: str) -> tuple[int, int, int]:
    """argparse type for --sizes: a wrong size is the parser's error, before --readme, --out or
    --kernels are looked at (checked in run, it came after their messages and the folder's probe)."""
    try:
        m, n, k = (int(v) for v in s.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is not MxNxK (e.g. 1024x1024x768)") from None
    if min(m, n, k) < 1:
        raise argparse.ArgumentTypeError(f"{s!r}: every dimension must be >= 1")
    if max(m * k, k * n, m * n) > MAX_ELEMENTS:
        raise argparse.ArgumentTypeError(f"{s!r}: a matrix of over {MAX_ELEMENTS:,} elements is more than the kernels index")
    return m, n, k


def check(name: str, m: int, n: int, k: int, rng: np.random.Generator) -> tuple[float, float]:
    """The kernel against float64 on a sample of up to 64 rows (fresh random data): its relative
    error (Frobenius, NaN if any output is not finite), and its largest error as a share of the
    precision's elementwise bound (gemmpad.runtime.precision): correct when <= 1."""
    import gemmpad

    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    out = np.full((m, n), np.nan, dtype=np.float32)
    gemmpad.gemm(a, b, kernel=name, out=out)
    rows = rng.choice(m, size=min(m, 64), replace=False)
    b64 = b.astype(np.float64)  # once: at 8192^3 each copy is half a gigabyte
    ref = a[rows].astype(np.float64) @ b64
    got = out[rows].astype(np.float64)
    ratio = bound_ratio(got, ref, gemm_bound(a[rows], b64, registry.get(name).precision))
    if not np.all(np.isfinite(got)):
        return float("nan"), ratio
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30)), ratio


def adaptive(time_once: Callable[[int], list[float]], max_reps: int, budget_s: float) -> list[float]:
    """Times in ms: one probe, then as many reps as fit the budget (3..max_reps)."""
    probe = time_once(1)
    reps = int(min(max_reps, max(3, budget_s * 1e3 / max(probe[0], 1e-3))))
    return time_once(reps)


QUEUED_REPS = 64  # timed reps in flight before the host waits, as in the CUDA module's bench_gemm
HOLD_CYCLES_PER_REP = 200_000  # GPU clock cycles (~0.1 ms) held per queued rep: Python enqueues one in less
# What holds the GPU for cupy, as torch.cuda._sleep does for torch: one thread spinning `cycles`.
SPIN_KERNEL = r'''extern "C" __global__ void spin(long long cycles) {
    const long long start = clock64();
    while (clock64() - start < cycles) {}
}'''

# Both sides multiply operands uniform over this range (bench_gemm fills ours so): the tensor
# cores' power, and with it the clock, depends on the bits they multiply. On an H100 cuBLAS bf16
# at 4096^3 took 176 us on torch.rand's [0, 1) and 182 us on [-1, 1) (NOTES.md, 2026-11-27, dusk).
OPERAND_RANGE = (-1.0, 1.0)


def queued(reps: int, flush: Callable[[], object], product: Callable[[], object], event: Callable[[], Any],
           elapsed_ms: Callable[[Any, Any], float], hold: Callable[[int], object] | None = None) -> list[float]:
    """Times in ms of `reps` calls of `product`, each after `flush` (outside its events), queued
    QUEUED_REPS at a time before a wait, as the CUDA module times our kernels, so that no rep's time
    holds the host's launch of it. Queueing alone is not enough from Python: enqueueing a flush, two
    events and torch.mm takes about as long as the GPU runs them, so the queue could run dry, a rep's
    events then taking in the host's time (cuBLAS bf16 at 256x100x784 read 58.5 us beside one rung and
    9.6-12.4 beside the others of one run). So `hold(n)`, where given, first puts a wait on the GPU
    long enough for the host to enqueue n reps; each product then follows its flush at once, as ours
    do (NOTES.md, 2026-11-27, late afternoon)."""
    times: list[float] = []
    for first in range(0, reps, QUEUED_REPS):
        pairs = [(event(), event()) for _ in range(min(QUEUED_REPS, reps - first))]
        if hold:
            hold(len(pairs))
        for start, stop in pairs:
            flush()
            start.record()
            product()
            stop.record()
        pairs[-1][1].synchronize()
        times += [elapsed_ms(start, stop) for start, stop in pairs]
    return times


class CublasRef:
    """cuBLAS through torch (cupy if torch lacks CUDA), timed like our kernels:
    CUDA events around each call, L2 flushed before each rep, median; its operands drawn
    as bench_gemm draws ours (OPERAND_RANGE)."""

    def __init__(self) -> None:
        self.backend = ""
        self.output: dict[str, str] = {}  # operand dtype -> the type cuBLAS wrote C in
        self.mode: dict[str, str] = {}  # operand dtype -> how the reference ran where it is not plain
        try:
            import torch

            if torch.cuda.is_available():
                self.torch = torch
                self.backend = f"torch {torch.__version__} (cuBLAS)"
                return
        except ImportError:
            pass
        try:
            import cupy

            cupy.cuda.runtime.getDeviceCount()
            self.cupy = cupy
            self.backend = f"cupy {cupy.__version__} (cuBLAS)"
        except Exception:  # noqa: BLE001  (no cupy, or cupy without a device)
            pass

    def time_ms(self, m: int, n: int, k: int, prec: Precision, reps: int) -> list[float] | None:
        if self.backend.startswith("torch"):
            return self._torch(m, n, k, prec, reps)
        if self.backend.startswith("cupy") and not prec.tf32 and hasattr(self.cupy, prec.dtype):
            self.output[prec.dtype] = prec.dtype
            return self._cupy(m, n, k, prec, reps)
        return None

    def name(self, precision_name: str) -> str:
        """The reference's row label: its precision, C's type where it is not float32 as ours, and its
        mode where it is not the plain one (fp8's fast accumulation)."""
        dtype = precision(precision_name).dtype
        notes = [] if self.output.get(dtype, "float32") == "float32" else [f"{self.output[dtype]} C"]
        notes += [self.mode[dtype]] if dtype in self.mode else []
        return f"cuBLAS {precision_name}" + "".join(f" ({note})" for note in notes)

    def _torch(self, m: int, n: int, k: int, prec: Precision, reps: int) -> list[float] | None:
        torch = self.torch
        torch.backends.cuda.matmul.allow_tf32 = prec.tf32
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
        dtype = getattr(torch, prec.dtype)
        if prec.dtype.startswith("float8"):
            product = self._fp8(m, n, k, dtype)
            if product is None:
                return None
        else:
            product = self._mm(m, n, k, dtype)
        flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")
        for _ in range(3):
            product()
        sleep = getattr(torch.cuda, "_sleep", None)  # a spin kernel of n clock cycles
        times = queued(reps, flush.zero_, product, lambda: torch.cuda.Event(enable_timing=True),
                       lambda start, stop: start.elapsed_time(stop),
                       (lambda n: sleep(n * HOLD_CYCLES_PER_REP)) if sleep else None)
        torch.backends.cuda.matmul.allow_tf32 = False
        return times

    def _mm(self, m: int, n: int, k: int, dtype: Any) -> Callable[[], object]:
        """torch.mm into a float32 C (the operand type's where torch cannot)."""
        torch = self.torch
        a, b = self._uniform(m, k, dtype), self._uniform(k, n, dtype)
        c = torch.empty(m, n, device="cuda", dtype=torch.float32)
        if dtype != torch.float32:
            try:
                torch.mm(a, b, out_dtype=torch.float32, out=c)
            except (TypeError, RuntimeError):  # a torch without mm's out_dtype: C in the operand type
                c = torch.empty(m, n, device="cuda", dtype=dtype)
        self.output[str(dtype).removeprefix("torch.")] = str(c.dtype).removeprefix("torch.")

        def product() -> None:
            if c.dtype == dtype:
                torch.matmul(a, b, out=c)
            else:
                torch.mm(a, b, out_dtype=c.dtype, out=c)

        return product

    def _fp8(self, m: int, n: int, k: int, dtype: Any) -> Callable[[], object] | None:
        """cuBLASLt's fp8 GEMM through torch._scaled_mm with unit scales (our fp8 kernels' semantics),
        float32 C, with fast accumulation where this torch offers it (the faster of cuBLASLt's two
        modes, and our kernels' own: the name says which ran). It takes only K and N that are
        multiples of 16 (and B column-major): None elsewhere, as at the MLP's N = 100, where the
        table then shows no reference."""
        torch = self.torch
        if k % 16 or n % 16 or not hasattr(torch, "_scaled_mm"):
            return None
        a = self._uniform(m, k, dtype)
        b = self._uniform(n, k, dtype).t()  # [K, N], column-major
        one = torch.ones((), device="cuda")
        c = torch.empty(m, n, device="cuda", dtype=torch.float32)
        key = str(dtype).removeprefix("torch.")
        for fast in (True, False):

            def product(fast: bool = fast) -> None:
                extra = {"use_fast_accum": True} if fast else {}
                torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.float32, out=c, **extra)

            try:
                product()
            except (TypeError, RuntimeError):  # a torch or GPU without it (cuBLASLt fp8 needs sm_89+)
                continue
            self.output[key] = "float32"
            if fast:
                self.mode[key] = "fast accumulation"
            else:
                self.mode.pop(key, None)
            return product
        return None

    def _uniform(self, rows: int, cols: int, dtype: Any) -> Any:
        """A [rows, cols] operand on the GPU, uniform over OPERAND_RANGE, drawn in float32 and then
        rounded to `dtype`."""
        lo, hi = OPERAND_RANGE
        return (self.torch.rand(rows, cols, device="cuda") * (hi - lo) + lo).to(dtype)

    def _cupy(self, m: int, n: int, k: int, prec: Precision, reps: int) -> list[float]:
        cp = self.cupy
        dtype = getattr(cp, prec.dtype)
        a = cp.random.uniform(*OPERAND_RANGE, (m, k)).astype(dtype)
        b = cp.random.uniform(*OPERAND_RANGE, (k, n)).astype(dtype)
        c = cp.empty((m, n), dtype=dtype)
        flush = cp.empty(2 * cp.cuda.Device().attributes["L2CacheSize"], dtype=cp.uint8)
        cp.matmul(a, b, out=c)
        spin = cp.RawKernel(SPIN_KERNEL, "spin")  # cupy has no torch.cuda._sleep
        return queued(reps, lambda: flush.fill(0), lambda: cp.matmul(a, b, out=c), cp.cuda.Event,
                      cp.cuda.get_elapsed_time, lambda n: spin((1,), (1,), (cp.int64(n * HOLD_CYCLES_PER_REP),)))


# The NumPy reference's child process: median ms of np.matmul on one shape, and the BLAS it ran.
NUMPY_CHILD = r"""
import json, os, statistics, sys, time
import numpy as np
from gemmpad.bench.machine import BLAS_ENV, blas
m, n, k, budget_s = json.load(sys.stdin)
rng = np.random.default_rng(0)
a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
c = np.empty((m, n), np.float32)
np.matmul(a, b, out=c)
times, end = [], time.perf_counter() + budget_s
while len(times) < 10 or (time.perf_counter() < end and len(times) < 1000):
    t0 = time.perf_counter()
    np.matmul(a, b, out=c)
    times.append((time.perf_counter() - t0) * 1e3)
print(json.dumps({"ms": statistics.median(times), "blas": blas(), "env": {v: os.environ[v] for v in BLAS_ENV if v in os.environ}}))
"""


def numpy_reference(m: int, n: int, k: int, budget_s: float) -> tuple[float, list[dict[str, Any]]]:
    """Median ms of NumPy's float32 matmul at M x N x K, and its BLAS (library, kernel, threads,
    and the BLAS_ENV it saw: none).

    Timed in a child process started without BLAS_ENV: OpenBLAS reads those when it loads, and an
    image that pins an older core type there makes NumPy several times slower than the machine
    allows, which made the CPU rungs look faster than it (1311 % of NumPy). Its threads are
    OpenBLAS's default, every core, as our CPU kernels use.
    """
    import gemmpad

    env = {key: v for key, v in os.environ.items() if key not in BLAS_ENV}
    package_root = str(Path(gemmpad.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    why = ""
    try:
        child = subprocess.run([sys.executable, "-c", NUMPY_CHILD], input=json.dumps([m, n, k, budget_s]), env=env,
                               capture_output=True, text=True, timeout=600)
        lines = child.stderr.strip().splitlines()
        why = lines[-1] if lines else f"exit status {child.returncode}"
        result = json.loads(child.stdout) if child.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        why, result = str(exc), None
    if not isinstance(result, dict):
        raise GemmpadError(f"the NumPy reference at {m}x{n}x{k} failed in its own process: {why}")
    return float(result["ms"]), [dict(lib, env=result["env"]) for lib in result["blas"]]


def time_cpu(fn: Callable[[], object], reps: int) -> list[float]:
    fn()  # warm-up: page in, spin up threads
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def plan(sizes: list[tuple[int, int, int]], names: list[str], by_name: dict[str, registry.KernelSpec],
         explicit: set[str]) -> tuple[list[tuple[tuple[int, int, int], str]], str]:
    """The (size, kernel) pairs to time, in order, and a line naming those held back ("" when none):
    a CPU rung above CPU_MAX_MNK takes minutes (the naive one ~1 s per GFLOP), so it runs there only
    when named in full in --kernels (`explicit`). The line says how, since it is also the error of a
    run that holds back everything."""
    big = [s for s in sizes if s[0] * s[1] * s[2] > CPU_MAX_MNK]
    held = [n for n in names if by_name[n].device == "cpu" and n not in explicit] if big else []
    todo = [(s, n) for s in sizes for n in names if not (n in held and s in big)]
    if not held:
        return todo, ""
    return todo, (f"{', '.join(held)} not run at {', '.join('x'.join(map(str, s)) for s in big)}: CPU kernels above "
                  f"{CPU_MAX_MNK:.2g} M*N*K run only when named in full in --kernels (e.g. --kernels {held[0]})")


def run(args: argparse.Namespace) -> int:
    import gemmpad

    sizes: list[tuple[int, int, int]] = args.sizes
    specs = [s for s in registry.kernels(kind="gemm") if s.available]
    names = select([s.name for s in specs], args.kernels)
    by_name = {s.name: s for s in specs}
    for name in names:
        precision(by_name[name].precision)  # an unknown precision fails before anything is timed
    todo, held_back = plan(sizes, names, by_name, set(args.kernels or []))
    if not todo:  # said before any output: an empty table and an empty result file would say nothing
        raise GemmpadError(f"nothing to time: {held_back}")
    cuda_mod = native.cuda() if any(by_name[n].device == "cuda" for _, n in todo) else None
    ref = CublasRef() if cuda_mod is not None else None
    rng = np.random.default_rng(0)  # the same operands every run: a wrong result can be replayed
    results: list[dict[str, Any]] = []
    failures = 0
    print(f"GEMM benchmark: {counted(len(names), 'kernel')}, sizes {', '.join('x'.join(map(str, s)) for s in sizes)}; reference: "
          f"{ref.backend if ref and ref.backend else 'NumPy (CPU)'}", flush=True)
    if held_back:
        print(f"  {held_back}", flush=True)
    untimed = [held_back] if held_back else []  # why each kernel and size without a row has none
    numpy_ms: dict[tuple[int, int, int], float] = {}  # the CPU rows' reference, once per shape
    numpy_blas: list[dict[str, Any]] = []  # the BLAS the reference ran
    for (m, n, k), name in todo:
        flop = 2.0 * m * n * k
        spec = by_name[name]
        row: dict[str, Any] = {"kernel": name, "device": spec.device, "precision": spec.precision,
                               "M": m, "N": n, "K": k}
        try:
            err, ratio = check(name, m, n, k, rng)
        except KernelUnavailable as exc:  # a rung outside its step: no row, it is not that rung's kernel
            print(f"  {name} {m}x{n}x{k}: {exc}", flush=True)
            untimed.append(f"{name} {m}x{n}x{k}: {exc}")
            continue
        if spec.routes:  # a dispatcher: the rung it picked at this shape
            row["rung"] = registry.dispatched()
        row.update(rel_error=err, error_vs_bound=ratio, correct=bool(ratio <= 1.0))
        if not row["correct"]:
            failures += 1
            print(f"  {name} {m}x{n}x{k}: WRONG (error {ratio:.3g}x its {spec.precision} bound, relative "
                  f"error {err:.3g}); not timed", flush=True)
            results.append(row)
            continue
        if spec.device == "cuda":
            assert cuda_mod is not None and ref is not None
            series, ref_medians = [], []
            for _ in range(SERIES):  # kernel and reference alternate (module docstring)
                series.append(adaptive(lambda r: list(cuda_mod.bench_gemm(name, m, n, k, reps=r,
                                                                          warmup=2 if r == 1 else 5)),
                                       args.reps, args.budget_s / SERIES))
                rt = ref.time_ms(m, n, k, precision(spec.precision), max(5, min(args.reps, 30)))
                if rt:
                    ref_medians.append(statistics.median(rt))
            times = min(series, key=statistics.median)
            ref_ms, ref_name = (min(ref_medians) if ref_medians else None), ref.name(spec.precision)
        else:
            a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
            b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
            out = np.empty((m, n), dtype=np.float32)
            times = adaptive(lambda r: time_cpu(lambda: gemmpad.gemm(a, b, kernel=name, out=out), r),
                             args.reps, args.budget_s)
            if (m, n, k) not in numpy_ms:
                numpy_ms[(m, n, k)], numpy_blas = numpy_reference(m, n, k, min(args.budget_s, 1.0))
                print(f"  NumPy {m}x{n}x{k}: {flop / numpy_ms[(m, n, k)] / 1e6:.1f} GFLOP/s with "
                      f"{blas_label(numpy_blas)}", flush=True)
            ref_ms, ref_name = numpy_ms[(m, n, k)], "NumPy"
        ms = statistics.median(times)
        row.update(ms=ms, reps=len(times), gflops=flop / ms / 1e6, reference=ref_name, reference_ms=ref_ms,
                   reference_gflops=flop / ref_ms / 1e6 if ref_ms else None,
                   percent_of_reference=100.0 * ref_ms / ms if ref_ms else None)
        results.append(row)
        versus = f"{row['percent_of_reference']:6.1f}% of {ref_name}" if ref_ms else f"no {ref_name} at this shape"
        print(f"  {name:<28} {m}x{n}x{k:<6} {row['gflops']:10.1f} GFLOP/s  {versus}  (err {err:.2g})", flush=True)
    if not results:  # every rung refused every shape: no table, no file, and not exit 0
        raise GemmpadError(f"nothing timed: {'; '.join(untimed)}")
    print()
    print(gemm_table(results))
    if args.out:
        payload = {"machine": machine(), "reference": ref.backend if ref else "NumPy", "results": results}
        if numpy_ms:
            payload["numpy_reference"] = {"blas": numpy_blas, "unset": [k for k in BLAS_ENV if k in os.environ]}
        timed = any("ms" in r for r in results)
        write(args.out, "bench-gemm", payload, (lambda p: plot(results, p)) if timed else None,
              args.readme, "gemm" if timed else None, force=args.force)
    return 1 if failures else 0


def plot(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib.pyplot as plt

    timed = [r for r in results if "ms" in r]
    sizes = sorted({(r["M"], r["N"], r["K"]) for r in timed}, key=lambda s: s[0] * s[1] * s[2])
    fig, axes = plt.subplots(len(sizes), 1, figsize=(10, 2.6 * max(1, len(sizes))), squeeze=False)
    for ax, size in zip(axes[:, 0], sizes):
        rows = [r for r in timed if (r["M"], r["N"], r["K"]) == size and r["percent_of_reference"] is not None]
        colors = ["tab:blue" if r["device"] == "cuda" else "tab:orange" for r in rows]
        ax.barh([r["kernel"] for r in rows], [r["percent_of_reference"] for r in rows], color=colors)
        ax.axvline(100, color="k", lw=0.8)
        ax.set_title(f"{size[0]}x{size[1]}x{size[2]}: % of reference (cuBLAS same precision / NumPy)", fontsize=9)
        ax.tick_params(labelsize=7)
        ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
