"""`gemmpad bench mlp`: the whole forward pass per backend and kernel at a few
batch sizes, against torch eager, torch replayed from a CUDA graph, ONNX Runtime on the
CPU (where installed: the CPU runtime issue 44's CPU goal is measured against) and NumPy,
each result checked against float64 before it is timed (within its precision's
bound, gemmpad.runtime.precision), and each kernel's agreement with fp32 on the 10,000
MNIST test digits; then a CPU-vs-GPU batch sweep and, with --soak, a memory soak. Every
backend is timed on the same inputs: MNIST test digits where there are any (timing_inputs).
The native backends' default kernels (and every whole-network CPU kernel: cpu.mlp_amx feeds the
pixels to its tiles as they are) are also timed on 8-bit input (uint8 pixels, what the
canvas and MNIST are: a quarter of the bytes to move; on the GPU the floats are made there),
as rows with "input": "uint8" (shown as "<kernel> · uint8") and sweep series "<backend> uint8". cuda.mlp_resident (the
persistent batch-1 kernel) is timed like any kernel: its kernel time is its own GPU span.

Kernel time is what `Classifier.last_timing` reports (CUDA events around the
forward pass on the GPU); end to end is the wall clock from the input array to
probabilities in host memory, through the Python API a caller uses.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from gemmpad.runtime import native, registry
from gemmpad.commands.args import MAX_BATCH, MAX_REPS, integer, number
from gemmpad.bench import add_out_argument, select
from gemmpad.bench.machine import machine
from gemmpad.bench.report import add_readme_argument, mlp_label, mlp_table, sweep_table, write
from gemmpad.bench.timing import classifier_call, time_calls
from gemmpad.errors import GemmpadError, KernelUnavailable
from gemmpad.inputs.preprocess import unit_pixels
from gemmpad.runtime.precision import argmax_agreement, mlp_bound
from gemmpad.terminal import counted

MLP_BATCHES = [1, 16, 256, 4096]
SWEEP_BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]


def add_arguments(m: argparse.ArgumentParser) -> None:
    m.add_argument("--batches", nargs="+", type=integer(1, MAX_BATCH), default=MLP_BATCHES)
    m.add_argument("--sweep", nargs="*", type=integer(1, MAX_BATCH), default=SWEEP_BATCHES, help="batch sweep for CPU vs GPU")
    m.add_argument("--kernels", nargs="+", default=None, metavar="NAME", help="kernel names or regexes (default: all)")
    m.add_argument("--budget-s", type=number(0, above=True), default=0.3, help="time budget per measurement")
    m.add_argument("--soak", type=integer(0, MAX_REPS), default=0, metavar="N", help="also run N batch-1 calls per backend, report memory")
    m.add_argument("--model", default=None, help="model file (default: shipped model, else random weights)")
    m.add_argument("--data", default=None, metavar="DIR",
                   help="MNIST IDX files, for each kernel's agreement with fp32 on the 10,000 test digits "
                        "(default: $GEMMPAD_DATA; with neither the agreement is left out)")
    add_out_argument(m, ("bench-mlp.json", "bench-mlp.png"))
    add_readme_argument(m)


def _bench_model(path: str | None) -> tuple[Any, str]:
    """The shipped model when present; otherwise He-initialised random weights
    (timings do not depend on the values, and the correctness check still holds)."""
    from gemmpad.runtime.model import SHAPES, Model, load_model

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


U8_BACKENDS = ("cpu", "cuda")  # backends with a native 8-bit input path (NumPy's would be a Python cast)


def timed_on_pixels(backend: str, kernel: str, default: str) -> bool:
    """Whether a kernel also gets rows from uint8 input: a native backend's default kernel, and on the CPU
    every whole-network kernel (each reads the bytes itself; the GEMM rungs would time a scaled copy)."""
    return backend in U8_BACKENDS and (kernel == default or backend == "cpu" and registry.get(kernel).kind == "mlp")


def as_pixels(x: np.ndarray) -> np.ndarray:
    """x in [0, 1] as uint8 pixels, and the floats the 8-bit path reads them as (x * float32(1/255))."""
    return np.round(np.clip(x, 0.0, 1.0) * 255).astype(np.uint8)


def timing_inputs(digits: np.ndarray | None, digits_note: str, batches: list[int],
                  rng: np.random.Generator) -> tuple[dict[int, np.ndarray], str]:
    """What every backend is timed on, per batch, and a line saying so. The MNIST test digits where
    there are any (batch B: the first B, repeated past the end): the CPU kernel's time grows with the
    ink (zero pixels are skipped), and preprocess's strokes have ~230 nonzero pixels, not the ~157 of
    digit_like; without them, digit_like."""
    if digits is None or not len(digits):
        return {b: digit_like(rng, b) for b in batches}, "random pixels in [0, 1], 80 % of them zero (no MNIST data)"
    return ({b: np.resize(digits, (b, digits.shape[1])) for b in batches},
            f"the first B of the {digits_note} at batch B")


def digit_like(rng: np.random.Generator, batch: int) -> np.ndarray:
    """Inputs shaped like drawn digits for timing: values in [0, 1], ~80% zero
    (the CPU kernel skips zero pixels, so all-dense inputs would misrepresent it)."""
    x = rng.uniform(0.0, 1.0, (batch, 784)).astype(np.float32)
    x[rng.random((batch, 784)) > 0.2] = 0.0
    return x


def mnist_digits(data_dir: str | None) -> tuple[np.ndarray | None, str]:
    """The 10,000 MNIST test digits as the app reads a drawing (gemmpad.inputs.preprocess), [N, 784];
    (None, why) when no data is named: the agreement is what a user cares about, but timing needs
    no data. Data named (--data or $GEMMPAD_DATA) that cannot be read raises DataError, as in every
    other command: a typo must not quietly cost the agreement column."""
    from gemmpad.data import mnist
    from gemmpad.inputs.preprocess import preprocess

    if not (data_dir or os.environ.get("GEMMPAD_DATA")):  # never a download from a benchmark
        return None, "no MNIST data (--data DIR or $GEMMPAD_DATA)"
    split = mnist.load_split("test", data_dir)
    rows = [preprocess(img) for img in split.images]
    kept = [r.reshape(784) for r in rows if r is not None]
    return np.asarray(kept, dtype=np.float32), f"{len(kept):,} MNIST test digits through gemmpad.inputs.preprocess"


class TorchMlp:
    """The same network in torch on the GPU: eager, and replayed from a CUDA graph."""

    def __init__(self, model: Any) -> None:
        import torch

        self.torch = torch
        torch.backends.cuda.matmul.allow_tf32 = False
        w = model.weights
        # torch.tensor copies: the model's arrays are read-only, which torch.from_numpy warns about
        self.params = [torch.tensor(w[k], device="cuda") for k in ("W1", "b1", "W2", "b2", "W3", "b3")]
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


class OnnxRuntimeMlp:
    """The same network exported to ONNX (gemmpad export's graph) in ONNX Runtime's CPU provider,
    at its default threads (one per core, as gemmpad's CPU backend). It has no kernel clock of
    its own: both times are the wall clock of session.run, input array to probabilities."""

    def __init__(self, model: Any) -> None:
        import onnxruntime as ort

        from gemmpad.commands.exporter import to_onnx

        self.session = ort.InferenceSession(to_onnx(model), providers=["CPUExecutionProvider"])
        self.version = ort.__version__

    def probs(self, x: np.ndarray) -> np.ndarray:
        return self.session.run(None, {"image28": np.ascontiguousarray(x, dtype=np.float32)})[0]

    def call(self, x: np.ndarray) -> Callable[[], tuple[float, float]]:
        def timed() -> tuple[float, float]:
            t0 = time.perf_counter()
            self.probs(x)
            us = (time.perf_counter() - t0) * 1e6
            return us, us

        return timed


def _onnxruntime_rows(model: Any, inputs: dict[int, np.ndarray], batches: list[int], budget_s: float
                      ) -> tuple[list[dict[str, Any]], str]:
    """ONNX Runtime's rows (each checked against float64 within the fp32 bound before it is
    timed) and its version; none where onnxruntime or onnx is not installed."""
    try:
        orm = OnnxRuntimeMlp(model)
    except (ImportError, GemmpadError):
        return [], ""
    rows = []
    for batch in batches:
        x = inputs[batch]
        ok = mlp_bound(model.weights, x, "fp32").kept(orm.probs(x))
        k_us, e_us, reps = time_calls(orm.call(x), budget_s)
        rows.append({"backend": "onnxruntime", "kernel": "ONNX Runtime CPU", "precision": "fp32", "batch": batch,
                     "kernel_us": k_us, "e2e_us": e_us, "reps": reps, "correct": ok})
        print(f"  {'ONNX Runtime CPU':<28} batch {batch:>5}: end-to-end {e_us:10.2f} us"
              + ("" if ok else "  OUTSIDE THE fp32 BOUND"), flush=True)
    return rows, orm.version


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


def soak_line(s: dict[str, Any]) -> str:
    """One soak's result as a line for a person (the dict itself goes into --out's JSON)."""
    gpu = f", GPU memory {s['gpu_used_growth_kb']:+,.0f} KB" if s["gpu_used_growth_kb"] is not None else ""
    return (f"soak {s['backend']} ({s['kernel']}): {counted(s['calls'], 'batch-1 call')}, "
            f"{1e6 * s['seconds'] / s['calls']:.1f} us each; host memory "
            f"{s['rss_start_mb']:.1f} -> {s['rss_end_mb']:.1f} MB ({s['rss_growth_kb']:+,.0f} KB){gpu}")


def _measure(clf: Any, model: Any, backend: str, kernel: str, precision: str, x: np.ndarray, batch: int,
             agrees: float | None, budget_s: float) -> tuple[dict[str, Any], bool]:
    """One result row: x checked against float64 within the precision's bound (uint8 x: on the
    floats the 8-bit path reads), then timed if right. Returns (row, right)."""
    probs = clf.predict(x)
    xf = unit_pixels(x) if x.dtype == np.uint8 else x
    bound = mlp_bound(model.weights, xf, precision)
    ref = bound.probs
    err = float(np.max(np.abs(probs - ref)) / np.max(np.abs(ref)))
    ratio = bound.ratio(probs)
    ok = bound.kept(probs)
    row = {"backend": backend, "kernel": kernel, "precision": precision, "batch": batch,
           "max_rel_error": err, "error_vs_bound": ratio,
           "same_argmax": bool(np.all(np.argmax(probs, 1) == np.argmax(ref, 1))),
           "agrees_with_fp32": agrees, "correct": ok}
    if x.dtype == np.uint8:
        row["input"] = "uint8"
    label = mlp_label(row)
    if not ok:
        print(f"  {label} batch {batch}: WRONG (error {ratio:.3g}x its {precision} bound, "
              f"{counted(bound.argmax_broken(probs), 'digit')} the bound decides read otherwise)", flush=True)
        return row, False

    k_us, e_us, reps = time_calls(classifier_call(clf, x), budget_s)
    row.update(kernel_us=k_us, e2e_us=e_us, reps=reps)
    agree = f"  agrees with fp32 {100 * agrees:6.2f} %" if agrees is not None else ""
    print(f"  {label:<28} batch {batch:>5}: kernel {k_us:10.2f} us  end-to-end {e_us:10.2f} us{agree}", flush=True)
    return row, True


def run(args: argparse.Namespace) -> int:
    from gemmpad.runtime.classifier import BACKENDS, DEFAULT_KERNELS, Classifier, available_backends

    model, model_name = _bench_model(args.model)
    avail = available_backends()
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = []
    failures = 0
    digits, digits_note = mnist_digits(args.data)
    digits_ref = model.forward(digits.astype(np.float64)) if digits is not None else None
    inputs, timed_on = timing_inputs(digits, digits_note, sorted(set(args.batches) | set(args.sweep or [])), rng)
    pixels = {b: as_pixels(x) for b, x in inputs.items()}
    print(f"MLP benchmark ({model_name}); backends: "
          + ", ".join(f"{b} ({r or 'ok'})" for b, r in avail.items())
          + f"; agreement with fp32 {'on' if digits is not None else 'left out:'} {digits_note}",
          flush=True)
    clf: Classifier | None = None
    usable = [b for b in BACKENDS if not avail[b]]
    untimed: list[str] = []  # why a kernel of --kernels has no row at a batch
    for backend in usable:
        clf = Classifier(model, backend=backend) if clf is None else clf
        for kernel in select(clf.kernels(backend), args.kernels):
            clf.configure(backend, kernel)
            precision = "fp32" if backend == "numpy" else registry.get(kernel).precision
            try:
                agrees = (argmax_agreement(_predict_all(clf, digits), digits_ref)
                          if digits is not None and digits_ref is not None else None)
            except KernelUnavailable:  # a rung whose step the layers' shapes are outside of: said per batch
                agrees = None
            u8 = timed_on_pixels(backend, kernel, DEFAULT_KERNELS[backend])
            for batch in args.batches:
                for x in (inputs[batch], pixels[batch]) if u8 else (inputs[batch],):
                    try:
                        row, ok = _measure(clf, model, backend, kernel, precision, x, batch, agrees, args.budget_s)
                    except KernelUnavailable as exc:  # no row: what would run is not that rung's kernel
                        print(f"  {kernel} batch {batch}: {exc}", flush=True)
                        untimed.append(f"{kernel} batch {batch}: {exc}")
                        continue
                    rows.append(row)
                    failures += not ok
    if clf is not None:
        clf.close()  # cuda.mlp_resident's kernel must not hold its SMs (nor block a sync) through what follows
    if not rows:  # torch's and ONNX Runtime's rows alone: a table (and README block) without a kernel asked for
        raise GemmpadError(nothing_timed(model, args.kernels or [], untimed))
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
                    k_us, e_us, reps = time_calls(make(inputs[batch]), args.budget_s)
                    rows.append({"backend": "torch", "kernel": label, "precision": "fp32", "batch": batch,
                                 "kernel_us": k_us, "e2e_us": e_us, "reps": reps, "correct": True})
                    print(f"  {label:<28} batch {batch:>5}: kernel {k_us:10.2f} us  end-to-end {e_us:10.2f} us",
                          flush=True)
    ort_rows, ort_version = _onnxruntime_rows(model, inputs, args.batches, args.budget_s)
    rows += ort_rows
    failures += sum(not r["correct"] for r in ort_rows)
    sweep = _sweep(model, usable, inputs, pixels, args) if args.sweep else []
    soaks = []
    if args.soak > 0:
        for backend in usable:
            s_clf = Classifier(model, backend=backend)
            soaks.append(soak(s_clf, args.soak, rng))
            print(f"  {soak_line(soaks[-1])}", flush=True)
    print()
    print(mlp_table(rows))
    if sweep:
        print()
        print(sweep_table(sweep))
    if args.out:
        payload = {"machine": machine(), "model": model_name, "torch": torch_version, "onnxruntime": ort_version,
                   "agreement_on": digits_note, "timed_on": timed_on,
                   "results": rows,
                   "sweep": sweep, "soak": soaks}
        timed = sweep or any("e2e_us" in r for r in rows)
        write(args.out, "bench-mlp", payload, (lambda p: plot(rows, sweep, p)) if timed else None,
              args.readme, "mlp" if timed else None, force=args.force)
    return 1 if failures else 0


def nothing_timed(model: Any, patterns: list[str], untimed: list[str]) -> str:
    """The one line of a run in which no kernel of --kernels (`patterns`) got a row: each refusal
    (`untimed`), or, with none, that the patterns match only whole-network kernels on a model of
    another shape (a backend leaves those out of its kernels for it: Classifier.kernels)."""
    if untimed:
        return f"nothing timed: {'; '.join(untimed)}"
    if not model.standard:
        return (f"nothing timed: --kernels {' '.join(patterns)} names only whole-network kernels, which run only "
                f"the 784-100-100-10 network, and this model is {'-'.join(map(str, model.layers))}: name a "
                "layer-by-layer kernel")
    return f"nothing timed: --kernels {' '.join(patterns)} names no kernel of a backend usable here"


def _predict_all(clf: Any, x: np.ndarray, chunk: int = 4096) -> np.ndarray:
    """Probabilities for every row of x, in batches no kernel refuses."""
    return np.concatenate([clf.predict(x[i:i + chunk]) for i in range(0, len(x), chunk)])


def _sweep(model: Any, backends: list[str], inputs: dict[int, np.ndarray], pixels: dict[int, np.ndarray],
           args: argparse.Namespace) -> list[dict]:
    """End-to-end time per call of each backend's default kernel across batch sizes; for the
    native backends also from 8-bit pixels (series "<backend> uint8")."""
    from gemmpad.runtime.classifier import Classifier

    out = []
    for backend in backends:
        clf = Classifier(model, backend=backend)
        for series, xs in ((backend, inputs),) + (((f"{backend} uint8", pixels),) if backend in U8_BACKENDS else ()):
            for batch in args.sweep:
                k_us, e_us, _ = time_calls(classifier_call(clf, xs[batch]), min(args.budget_s, 0.15))
                out.append({"backend": series, "kernel": clf.kernel, "batch": batch, "kernel_us": k_us,
                            "e2e_us": e_us})
        clf.close()
    return out


def plot(rows: list[dict[str, Any]], sweep: list[dict[str, Any]], path: Path) -> None:
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(14, 6))
    timed = [r for r in rows if "e2e_us" in r and r["batch"] == 1]
    ax1.barh([mlp_label(r) for r in timed], [r["e2e_us"] for r in timed], color="tab:gray", label="end to end")
    ax1.barh([mlp_label(r) for r in timed], [r["kernel_us"] for r in timed], color="tab:blue", label="kernel")
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

