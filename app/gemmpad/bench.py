"""`gemmpad bench gemm|mlp|train`: the measurements behind every speed claim.

Every figure is a ratio against a reference measured in the same process on
the same machine (cuBLAS through torch or cupy for GEMMs, NumPy for CPU
kernels; torch eager / CUDA graph and NumPy for the MLP), and every kernel is
checked for correctness before it is timed: a fast wrong kernel is no result.
Each command prints a markdown table (pasted into the README) and, with
--out, writes JSON with the machine's description plus a PNG chart when
matplotlib is installed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import re
import resource
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from gemmpad import native, registry, train_native
from gemmpad.args import MAX_BATCH, MAX_REPS, integer, number
from gemmpad.errors import GemmpadError
from gemmpad.files import atomic_path, check_writable_dir, write_text
from gemmpad.gemm import MAX_ELEMENTS

TOLERANCE = {"fp32": 1e-5, "tf32": 5e-3, "fp16": 5e-3}
DEFAULT_SIZES = ["1024x1024x768", "4096x4096x4096", "8192x8192x8192", "1x100x784", "256x100x784", "4096x100x784"]
# The CPU ladder's naive rung needs ~1 s per GFLOP: larger products are skipped
# unless named with --kernels.
CPU_MAX_MNK = 1.1e9
MLP_BATCHES = [1, 16, 256, 4096]
SWEEP_BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="what", metavar="WHAT", required=True)
    g = sub.add_parser("gemm", help="every GEMM kernel vs cuBLAS (GPU) and NumPy (CPU)")
    g.add_argument("--sizes", nargs="+", default=DEFAULT_SIZES, metavar="MxNxK")
    g.add_argument("--kernels", nargs="+", default=None, metavar="NAME", help="kernel names or regexes (default: all)")
    g.add_argument("--reps", type=integer(1, MAX_REPS), default=50, help="timed repetitions per measurement at most")
    g.add_argument("--budget-s", type=number(0, above=True), default=2.0, help="time budget per measurement (fewer reps if slow)")
    g.add_argument("--out", default=None, metavar="DIR", help="write bench-gemm.json (+ .png) here")
    m = sub.add_parser("mlp", help="the MLP forward pass per backend and kernel vs torch and NumPy")
    m.add_argument("--batches", nargs="+", type=integer(1, MAX_BATCH), default=MLP_BATCHES)
    m.add_argument("--sweep", nargs="*", type=integer(1, MAX_BATCH), default=SWEEP_BATCHES, help="batch sweep for CPU vs GPU")
    m.add_argument("--kernels", nargs="+", default=None, metavar="NAME", help="kernel names or regexes (default: all)")
    m.add_argument("--budget-s", type=number(0, above=True), default=0.3, help="time budget per measurement")
    m.add_argument("--soak", type=integer(0, MAX_REPS), default=0, metavar="N", help="also run N batch-1 calls per backend, report memory")
    m.add_argument("--model", default=None, help="model file (default: shipped model, else random weights)")
    m.add_argument("--out", default=None, metavar="DIR", help="write bench-mlp.json (+ .png) here")
    t = sub.add_parser("train", help="native training engine vs torch (gemmpad.train_native.bench)")
    train_native.add_arguments(t)  # its options belong to the module that runs it


def run(args: argparse.Namespace) -> int:
    if args.out:
        check_writable_dir(args.out, f"--out {args.out}")  # before the run, not after it
    if getattr(args, "kernels", None):  # a typo, or kernels this machine lacks, would measure nothing and exit 0
        specs = registry.kernels(kind="gemm" if args.what == "gemm" else None)
        numpy_ = [] if args.what == "gemm" else ["numpy"]
        known = [s.name for s in specs] + numpy_
        unmatched = [p for p in args.kernels if not _select(known, [p])]
        if unmatched:
            raise GemmpadError(f"--kernels {' '.join(unmatched)}: matches no kernel; known: {', '.join(known)}")
        if not _select([s.name for s in specs if s.available] + numpy_, args.kernels):
            why = {s.unavailable_reason for s in specs if _select([s.name], args.kernels)}
            raise GemmpadError(f"--kernels {' '.join(args.kernels)}: none of them can run here ({'; '.join(sorted(why))})")
    if args.what == "gemm":
        return bench_gemm(args)
    if args.what == "mlp":
        return bench_mlp(args)
    return int(train_native.bench(args) or 0)


# ------------------------------------------------------------------ machine
def machine() -> dict[str, Any]:
    """Device, driver, CUDA, clocks and versions: what a figure needs to be read."""
    from gemmpad.info import collect

    info = collect()
    out: dict[str, Any] = {
        "date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "cpu": _cpu_model(),
        "cpu_features": info["cpu_features"],
        "versions": info["versions"],
        "cuda": info["cuda"],
    }
    try:
        q = "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit"
        smi = subprocess.run(
            ["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True, text=True, timeout=10
        )
        if smi.returncode == 0:
            out["nvidia_smi"] = dict(zip(q.split(","), (v.strip() for v in smi.stdout.splitlines()[0].split(","))))
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    return out


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _select(names: list[str], patterns: list[str] | None) -> list[str]:
    if not patterns:
        return names
    try:
        return [n for n in names if any(p == n or re.search(p, n) for p in patterns)]
    except re.error as exc:
        raise GemmpadError(f"--kernels: {exc.pattern!r} is neither a kernel name nor a regular expression ({exc})") from None


def _write(out_dir: str, stem: str, payload: dict[str, Any], plot: Callable[[Path], None] | None) -> None:
    """The JSON, and the PNG drawn by `plot` (None: nothing was timed, so no chart)."""
    d = Path(out_dir)
    write_text(d / f"{stem}.json", json.dumps(payload, indent=2) + "\n")
    if plot is None:
        print(f"wrote {d / stem}.json (nothing timed: no {stem}.png)")
        return
    try:
        import matplotlib

        matplotlib.use("Agg")
    except ImportError:
        print(f"(matplotlib not installed: no {stem}.png)")
        return
    with atomic_path(d / f"{stem}.png") as tmp:
        plot(tmp)
    print(f"wrote {d / stem}.json and {d / stem}.png")


# --------------------------------------------------------------------- gemm
def _parse_size(s: str) -> tuple[int, int, int]:
    try:
        m, n, k = (int(v) for v in s.lower().split("x"))
    except ValueError:
        raise GemmpadError(f"size {s!r} is not MxNxK (e.g. 1024x1024x768)") from None
    if min(m, n, k) < 1:
        raise GemmpadError(f"size {s!r}: every dimension must be >= 1")
    if max(m * k, k * n, m * n) > MAX_ELEMENTS:
        raise GemmpadError(f"size {s!r}: a matrix of over {MAX_ELEMENTS:,} elements is more than the kernels index")
    return m, n, k


def _check_gemm(name: str, m: int, n: int, k: int, rng: np.random.Generator) -> float:
    """Relative error of the kernel against float64 on a sample of up to 64 rows (fresh random data)."""
    import gemmpad

    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    out = np.full((m, n), np.nan, dtype=np.float32)
    gemmpad.gemm(a, b, kernel=name, out=out)
    rows = rng.choice(m, size=min(m, 64), replace=False)
    ref = a[rows].astype(np.float64) @ b.astype(np.float64)
    got = out[rows].astype(np.float64)
    if not np.all(np.isfinite(got)):
        return float("nan")
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))


def _adaptive(time_once: Callable[[int], list[float]], max_reps: int, budget_s: float) -> list[float]:
    """Times in ms: one probe, then as many reps as fit the budget (3..max_reps)."""
    probe = time_once(1)
    reps = int(min(max_reps, max(3, budget_s * 1e3 / max(probe[0], 1e-3))))
    return time_once(reps)


class CublasRef:
    """cuBLAS through torch (cupy if torch lacks CUDA), timed like our kernels:
    CUDA events around each call, L2 flushed before each rep, median."""

    def __init__(self) -> None:
        self.backend = ""
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

    def time_ms(self, m: int, n: int, k: int, precision: str, reps: int) -> list[float] | None:
        if self.backend.startswith("torch"):
            return self._torch(m, n, k, precision, reps)
        if self.backend.startswith("cupy") and precision != "tf32":
            return self._cupy(m, n, k, precision, reps)
        return None

    def _torch(self, m: int, n: int, k: int, precision: str, reps: int) -> list[float]:
        torch = self.torch
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        dtype = torch.float16 if precision == "fp16" else torch.float32
        a = torch.rand(m, k, device="cuda", dtype=dtype)
        b = torch.rand(k, n, device="cuda", dtype=dtype)
        c = torch.empty(m, n, device="cuda", dtype=dtype)
        flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")
        for _ in range(3):
            torch.matmul(a, b, out=c)
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(reps):
            flush.zero_()
            start.record()
            torch.matmul(a, b, out=c)
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
        torch.backends.cuda.matmul.allow_tf32 = False
        return times

    def _cupy(self, m: int, n: int, k: int, precision: str, reps: int) -> list[float]:
        cp = self.cupy
        dtype = cp.float16 if precision == "fp16" else cp.float32
        a = cp.random.rand(m, k).astype(dtype)
        b = cp.random.rand(k, n).astype(dtype)
        c = cp.empty((m, n), dtype=dtype)
        flush = cp.empty(2 * cp.cuda.Device().attributes["L2CacheSize"], dtype=cp.uint8)
        cp.matmul(a, b, out=c)
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        times = []
        for _ in range(reps):
            flush.fill(0)
            start.record()
            cp.matmul(a, b, out=c)
            stop.record()
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop))
        return times


def _time_cpu_gemm(fn: Callable[[], object], reps: int) -> list[float]:
    fn()  # warm-up: page in, spin up threads
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def bench_gemm(args: argparse.Namespace) -> int:
    import gemmpad

    sizes = [_parse_size(s) for s in args.sizes]
    specs = [s for s in registry.kernels(kind="gemm") if s.available]
    names = _select([s.name for s in specs], args.kernels)
    explicit = set(args.kernels or [])
    by_name = {s.name: s for s in specs}
    cuda_mod = native.cuda() if any(by_name[n].device == "cuda" for n in names) else None
    ref = CublasRef() if cuda_mod is not None else None
    rng = np.random.default_rng(0)  # the same operands every run: a wrong result can be replayed
    results: list[dict[str, Any]] = []
    failures = 0
    print(f"GEMM benchmark: {len(names)} kernels, sizes {', '.join(args.sizes)}; reference: "
          f"{ref.backend if ref and ref.backend else 'NumPy (CPU)'}", flush=True)
    ref_cache: dict[tuple[int, int, int, str], float] = {}
    for m, n, k in sizes:
        flop = 2.0 * m * n * k
        for name in names:
            spec = by_name[name]
            if spec.device == "cpu" and m * n * k > CPU_MAX_MNK and name not in explicit:
                print(f"  {name} {m}x{n}x{k}: skipped (CPU kernels above {CPU_MAX_MNK:.2g} M*N*K run only when "
                      "named in full in --kernels)", flush=True)
                continue
            row: dict[str, Any] = {"kernel": name, "device": spec.device, "precision": spec.precision,
                                   "M": m, "N": n, "K": k}
            err = _check_gemm(name, m, n, k, rng)
            row["rel_error"] = err
            row["correct"] = bool(err <= TOLERANCE[spec.precision])
            if not row["correct"]:
                failures += 1
                print(f"  {name} {m}x{n}x{k}: WRONG (relative error {err:.3g}); not timed", flush=True)
                results.append(row)
                continue
            if spec.device == "cuda":
                assert cuda_mod is not None and ref is not None
                times = _adaptive(lambda r: list(cuda_mod.bench_gemm(name, m, n, k, reps=r, warmup=2 if r == 1 else 5)),
                                  args.reps, args.budget_s)
                key = (m, n, k, spec.precision)
                if key not in ref_cache:
                    rt = ref.time_ms(m, n, k, spec.precision, max(5, min(args.reps, 30)))
                    ref_cache[key] = statistics.median(rt) if rt else float("nan")
                ref_ms, ref_name = ref_cache[key], f"cuBLAS {spec.precision}"
            else:
                a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
                b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
                out = np.empty((m, n), dtype=np.float32)
                times = _adaptive(lambda r: _time_cpu_gemm(lambda: gemmpad.gemm(a, b, kernel=name, out=out), r),
                                  args.reps, args.budget_s)
                key = (m, n, k, "numpy")
                if key not in ref_cache:
                    ref_cache[key] = statistics.median(_time_cpu_gemm(lambda: np.matmul(a, b, out=out), 10))
                ref_ms, ref_name = ref_cache[key], "NumPy"
            ms = statistics.median(times)
            row.update(ms=ms, reps=len(times), gflops=flop / ms / 1e6, reference=ref_name, reference_ms=ref_ms,
                       reference_gflops=flop / ref_ms / 1e6, percent_of_reference=100.0 * ref_ms / ms)
            results.append(row)
            print(f"  {name:<28} {m}x{n}x{k:<6} {row['gflops']:10.1f} GFLOP/s  {row['percent_of_reference']:6.1f}% "
                  f"of {ref_name}  (err {err:.2g})", flush=True)
    print()
    print(gemm_table(results))
    if args.out:
        payload = {"machine": machine(), "reference": ref.backend if ref else "NumPy", "results": results}
        timed = any("ms" in r for r in results)
        _write(args.out, "bench-gemm", payload, (lambda p: _plot_gemm(results, p)) if timed else None)
    return 1 if failures else 0


def gemm_table(results: list[dict[str, Any]]) -> str:
    lines = ["| kernel | precision | M x N x K | GFLOP/s | reference | % of reference | rel. error |",
             "|---|---|---|---:|---|---:|---:|"]
    for r in results:
        size = f"{r['M']}x{r['N']}x{r['K']}"
        if "ms" not in r:
            lines.append(f"| {r['kernel']} | {r['precision']} | {size} | wrong | | | {r['rel_error']:.2g} |")
            continue
        lines.append(f"| {r['kernel']} | {r['precision']} | {size} | {r['gflops']:.1f} | {r['reference']} "
                     f"{r['reference_gflops']:.0f} | {r['percent_of_reference']:.1f}% | {r['rel_error']:.2g} |")
    return "\n".join(lines)


def _plot_gemm(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib.pyplot as plt

    timed = [r for r in results if "ms" in r]
    sizes = sorted({(r["M"], r["N"], r["K"]) for r in timed}, key=lambda s: s[0] * s[1] * s[2])
    fig, axes = plt.subplots(len(sizes), 1, figsize=(10, 2.6 * max(1, len(sizes))), squeeze=False)
    for ax, size in zip(axes[:, 0], sizes):
        rows = [r for r in timed if (r["M"], r["N"], r["K"]) == size]
        colors = ["tab:blue" if r["device"] == "cuda" else "tab:orange" for r in rows]
        ax.barh([r["kernel"] for r in rows], [r["percent_of_reference"] for r in rows], color=colors)
        ax.axvline(100, color="k", lw=0.8)
        ax.set_title(f"{size[0]}x{size[1]}x{size[2]}: % of reference (cuBLAS same precision / NumPy)", fontsize=9)
        ax.tick_params(labelsize=7)
        ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------------- mlp
def _bench_model(path: str | None) -> tuple[Any, str]:
    """The shipped model when present; otherwise He-initialised random weights
    (timings do not depend on the values, and the correctness check still holds)."""
    from gemmpad.model import SHAPES, Model, load_model

    try:
        return load_model(path), "shipped model" if path is None else path
    except GemmpadError:
        if path is not None:
            raise
    rng = np.random.default_rng(1)
    w = {}
    for name, shape in SHAPES.items():
        scale = np.sqrt(2.0 / shape[0]) if len(shape) == 2 else 0.1
        w[name] = rng.normal(0.0, scale, shape).astype(np.float32)
    return Model(weights=w), "random weights (no model file found)"


def digit_like(rng: np.random.Generator, batch: int) -> np.ndarray:
    """Inputs shaped like drawn digits for timing: values in [0, 1], ~80% zero
    (the CPU kernel skips zero pixels, so all-dense inputs would misrepresent it)."""
    x = rng.uniform(0.0, 1.0, (batch, 784)).astype(np.float32)
    x[rng.random((batch, 784)) > 0.2] = 0.0
    return x


def _time_calls(call: Callable[[], tuple[float, float]], budget_s: float, max_reps: int = 5000) -> tuple[float, float, int]:
    """Median kernel and end-to-end microseconds of repeated calls within a budget."""
    for _ in range(3):
        call()
    ks, es = [], []
    t_end = time.perf_counter() + budget_s
    while len(ks) < 10 or (time.perf_counter() < t_end and len(ks) < max_reps):
        k, e = call()
        ks.append(k)
        es.append(e)
    return statistics.median(ks), statistics.median(es), len(ks)


class TorchMlp:
    """The same network in torch on the GPU: eager, and replayed from a CUDA graph."""

    def __init__(self, model: Any) -> None:
        import torch

        self.torch = torch
        torch.backends.cuda.matmul.allow_tf32 = False
        w = model.weights
        self.params = [torch.from_numpy(w[k]).cuda() for k in ("W1", "b1", "W2", "b2", "W3", "b3")]
        self.version = torch.__version__

    def forward(self, x: Any) -> Any:
        W1, b1, W2, b2, W3, b3 = self.params
        t = self.torch
        h = t.relu(t.addmm(b1, x, W1))
        h = t.relu(t.addmm(b2, h, W2))
        return t.softmax(t.addmm(b3, h, W3), dim=1)

    def eager(self, x_host: np.ndarray) -> Callable[[], tuple[float, float]]:
        t = self.torch
        x_dev = t.from_numpy(x_host).cuda()
        start, stop = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)

        def call() -> tuple[float, float]:
            t0 = time.perf_counter()
            xd = t.from_numpy(x_host).cuda()
            out = self.forward(xd).cpu().numpy()
            e2e = (time.perf_counter() - t0) * 1e6
            del out
            start.record()  # kernel time: the forward alone, input already on the device
            self.forward(x_dev)
            stop.record()
            stop.synchronize()
            return start.elapsed_time(stop) * 1e3, e2e

        return call

    def graph(self, x_host: np.ndarray) -> Callable[[], tuple[float, float]]:
        t = self.torch
        static_in = t.from_numpy(x_host).cuda()
        pinned_in = t.from_numpy(x_host).pin_memory()
        stream = t.cuda.Stream()
        stream.wait_stream(t.cuda.current_stream())
        with t.cuda.stream(stream):
            for _ in range(3):
                self.forward(static_in)
        t.cuda.current_stream().wait_stream(stream)
        g = t.cuda.CUDAGraph()
        with t.cuda.graph(g):
            static_out = self.forward(static_in)
        pinned_out = t.empty(static_out.shape, dtype=static_out.dtype).pin_memory()
        start, stop = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)

        def call() -> tuple[float, float]:
            t0 = time.perf_counter()
            pinned_in.numpy()[...] = x_host
            static_in.copy_(pinned_in, non_blocking=True)
            t.cuda._sleep(1)  # the copy engine hands over before the timed span, as in Mlp (mlp.cu's copy_in)
            start.record()
            g.replay()
            stop.record()
            pinned_out.copy_(static_out, non_blocking=True)
            t.cuda.current_stream().synchronize()
            out = pinned_out.numpy().copy()
            del out
            return start.elapsed_time(stop) * 1e3, (time.perf_counter() - t0) * 1e6

        return call


def _rss_bytes() -> int:
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize()
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def soak(clf: Any, calls: int, rng: np.random.Generator) -> dict[str, Any]:
    """`calls` batch-1 predictions; host RSS and device memory after a warm-up vs at the end."""
    x = digit_like(rng, 1)
    cuda_mod = native.cuda_module_if_built() if clf.backend == "cuda" else None
    for _ in range(1000):
        clf.predict(x)
    rss0 = _rss_bytes()
    gpu0 = cuda_mod.mem_info()[0] if cuda_mod else 0
    t0 = time.perf_counter()
    for _ in range(calls):
        clf.predict(x)
    secs = time.perf_counter() - t0
    rss1 = _rss_bytes()
    gpu1 = cuda_mod.mem_info()[0] if cuda_mod else 0
    return {"backend": clf.backend, "kernel": clf.kernel, "calls": calls, "seconds": secs,
            "rss_start_mb": rss0 / 2**20, "rss_end_mb": rss1 / 2**20, "rss_growth_kb": (rss1 - rss0) / 1024,
            "gpu_used_growth_kb": (gpu0 - gpu1) / 1024 if cuda_mod else None}


def bench_mlp(args: argparse.Namespace) -> int:
    from gemmpad.engine import BACKENDS, Classifier, available_backends

    model, model_name = _bench_model(args.model)
    avail = available_backends()
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = []
    failures = 0
    inputs = {b: digit_like(rng, b) for b in sorted(set(args.batches) | set(args.sweep or []))}
    refs = {b: model.forward(x.astype(np.float64)) for b, x in inputs.items()}
    print(f"MLP benchmark ({model_name}); backends: "
          + ", ".join(f"{b} ({r or 'ok'})" for b, r in avail.items()), flush=True)
    clf: Classifier | None = None
    usable = [b for b in BACKENDS if not avail[b]]
    for backend in usable:
        clf = Classifier(model, backend=backend) if clf is None else clf
        for kernel in _select(clf.kernels(backend), args.kernels):
            clf.configure(backend, kernel)
            precision = "fp32" if backend == "numpy" else registry.get(kernel).precision
            for batch in args.batches:
                x = inputs[batch]
                probs = clf.predict(x)
                err = float(np.max(np.abs(probs - refs[batch])) / np.max(np.abs(refs[batch])))
                same = bool(np.all(np.argmax(probs, 1) == np.argmax(refs[batch], 1)))
                ok = err <= TOLERANCE[precision]  # argmax agreement is reported; near-ties may flip it
                row = {"backend": backend, "kernel": kernel, "precision": precision, "batch": batch,
                       "max_rel_error": err, "same_argmax": same, "correct": ok}
                if not ok:
                    failures += 1
                    print(f"  {kernel} batch {batch}: WRONG (error {err:.3g}, same argmax {same})", flush=True)
                    rows.append(row)
                    continue

                def call(x: np.ndarray = x) -> tuple[float, float]:
                    clf.predict(x)
                    t = clf.last_timing
                    return t.kernel_us, t.end_to_end_us

                k_us, e_us, reps = _time_calls(call, args.budget_s)
                row.update(kernel_us=k_us, e2e_us=e_us, reps=reps)
                rows.append(row)
                print(f"  {kernel:<28} batch {batch:>5}: kernel {k_us:10.2f} us  end-to-end {e_us:10.2f} us", flush=True)
    torch_version = ""
    if not avail["cuda"]:
        try:
            tm = TorchMlp(model)
            torch_version = tm.version
        except ImportError:
            tm = None
        if tm is not None:
            for label, make in (("torch eager", tm.eager), ("torch CUDA graph", tm.graph)):
                for batch in args.batches:
                    k_us, e_us, reps = _time_calls(make(inputs[batch]), args.budget_s)
                    rows.append({"backend": "torch", "kernel": label, "precision": "fp32", "batch": batch,
                                 "kernel_us": k_us, "e2e_us": e_us, "reps": reps, "correct": True})
                    print(f"  {label:<28} batch {batch:>5}: kernel {k_us:10.2f} us  end-to-end {e_us:10.2f} us",
                          flush=True)
    sweep = _sweep(model, usable, inputs, args) if args.sweep else []
    soaks = []
    if args.soak > 0:
        for backend in usable:
            s_clf = Classifier(model, backend=backend)
            soaks.append(soak(s_clf, args.soak, rng))
            print(f"  soak {backend}: {soaks[-1]}", flush=True)
    print()
    print(mlp_table(rows))
    if sweep:
        print()
        print(sweep_table(sweep))
    if args.out:
        payload = {"machine": machine(), "model": model_name, "torch": torch_version, "results": rows,
                   "sweep": sweep, "soak": soaks}
        timed = sweep or any("e2e_us" in r for r in rows)
        _write(args.out, "bench-mlp", payload, (lambda p: _plot_mlp(rows, sweep, p)) if timed else None)
    return 1 if failures else 0


def _sweep(model: Any, backends: list[str], inputs: dict[int, np.ndarray], args: argparse.Namespace) -> list[dict]:
    """End-to-end time per call of each backend's default kernel across batch sizes."""
    from gemmpad.engine import Classifier

    out = []
    for backend in backends:
        clf = Classifier(model, backend=backend)
        for batch in args.sweep:
            x = inputs[batch]

            def call(x: np.ndarray = x) -> tuple[float, float]:
                clf.predict(x)
                return clf.last_timing.kernel_us, clf.last_timing.end_to_end_us

            k_us, e_us, _ = _time_calls(call, min(args.budget_s, 0.15))
            out.append({"backend": backend, "kernel": clf.kernel, "batch": batch, "kernel_us": k_us, "e2e_us": e_us})
    return out


def mlp_table(rows: list[dict[str, Any]]) -> str:
    batches = sorted({r["batch"] for r in rows})
    head = "| backend | kernel | " + " | ".join(f"B={b} kernel / e2e (us)" for b in batches) + " |"
    lines = [head, "|---|---|" + "---:|" * len(batches)]
    keys = list(dict.fromkeys((r["backend"], r["kernel"]) for r in rows))
    for backend, kernel in keys:
        cells = []
        for b in batches:
            r = next((r for r in rows if (r["backend"], r["kernel"], r["batch"]) == (backend, kernel, b)), None)
            cells.append("" if r is None else "wrong" if "kernel_us" not in r else
                         f"{r['kernel_us']:.1f} / {r['e2e_us']:.1f}")
        lines.append(f"| {backend} | {kernel} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sweep_table(sweep: list[dict[str, Any]]) -> str:
    backends = list(dict.fromkeys(r["backend"] for r in sweep))
    batches = sorted({r["batch"] for r in sweep})
    e2e = {(r["backend"], r["batch"]): r["e2e_us"] for r in sweep}
    lines = ["| batch | " + " | ".join(f"{b} e2e (us)" for b in backends) + " |", "|---:|" + "---:|" * len(backends)]
    for batch in batches:
        lines.append(f"| {batch} | " + " | ".join(f"{e2e[(b, batch)]:.1f}" for b in backends) + " |")
    if "cuda" in backends and "cpu" in backends:
        faster = [b for b in batches if e2e[("cuda", b)] < e2e[("cpu", b)]]
        lines.append("")
        lines.append(
            f"GPU faster than CPU (end to end) at batch {', '.join(map(str, faster))}." if faster
            else "The CPU is faster end to end at every batch measured."
        )
    return "\n".join(lines)


def _plot_mlp(rows: list[dict[str, Any]], sweep: list[dict[str, Any]], path: Path) -> None:
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(14, 6))
    timed = [r for r in rows if "e2e_us" in r and r["batch"] == 1]
    ax1.barh([r["kernel"] for r in timed], [r["e2e_us"] for r in timed], color="tab:gray", label="end to end")
    ax1.barh([r["kernel"] for r in timed], [r["kernel_us"] for r in timed], color="tab:blue", label="kernel")
    ax1.set_xscale("log")
    ax1.set_xlabel("microseconds per call, batch 1 (log)")
    ax1.tick_params(labelsize=7)
    ax1.invert_yaxis()
    ax1.legend()
    for backend in dict.fromkeys(r["backend"] for r in sweep):
        pts = [r for r in sweep if r["backend"] == backend]
        ax2.plot([r["batch"] for r in pts], [r["e2e_us"] for r in pts], marker="o", label=f"{backend} ({pts[0]['kernel']})")
    ax2.set_xscale("log", base=2)
    ax2.set_yscale("log")
    ax2.set_xlabel("batch")
    ax2.set_ylabel("end-to-end microseconds per call (log)")
    ax2.set_title("CPU vs GPU end to end, by batch")
    if sweep:
        ax2.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

