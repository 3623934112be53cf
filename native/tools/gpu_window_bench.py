"""Where the window's batch-1 GPU time goes when the same GPU draws the window (issue 22).

    DISPLAY=:N python native/tools/gpu_window_bench.py VARIANT [--frames 300] [--batch 1]

Runs `gemmpad app --replay assets/screenshot-strokes.json --backend cuda --frames N` in this
process with hooks (an experiment: nothing here is in the app) and prints one JSON line: the
app's own summary plus, for every timed forward pass, where it started relative to the frame's
render (Dear PyGui's render_dearpygui_frame: drawing + buffer swap) and its end-to-end time.
Findings and how the GPU machine was set up: app/gemmpad/ui/NOTES.md (2026-11-26).

Why not gemmpad.bench.timing.time_calls (issue 41): that loop makes repeated calls of its own and
takes medians of the times each call returns. Here nothing is called in a loop: the app runs its
own frames, and the hooks only stamp when each render and each forward pass started and ended, so
each pass can be sorted by whether it overlapped a render. The medians are over those recorded
passes, split by overlap, which time_calls cannot express.

Variants (one per process; the context flags must be set before CUDA starts), tokens joined by +:
  base          as the app runs: the worker's pass, requested before the render, runs while the
                main thread renders
  defer         the frame's request is handed to the worker only after the render returned
  glfinish      glFinish() right after the render (the GPU has drawn the frame)
  gate          one lock around the render and around the worker's pass: they never overlap
  spin, yield, block   the primary context's scheduling flag (CU_CTX_SCHED_*)
  sleep5        5 ms of sleep after the render (inside the gate: the GPU idles before the pass)
  wake          an empty kernel launched (not waited for) right after the render
  maxconn1      CUDA_DEVICE_MAX_CONNECTIONS=1 (one hardware queue for the CUDA context)
  probe-lo, probe-hi   before each pass, twice in a row, a one-thread kernel (CuPy) that writes
                a flag into mapped memory, on a lowest / highest priority stream: host enqueue
                time and the wait until the flag is seen; the first pays what the GPU does
                before it can run CUDA work at that moment, the second is the floor
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import io
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SCHED = {"spin": 1, "yield": 2, "block": 4}  # CU_CTX_SCHED_SPIN / YIELD / BLOCKING_SYNC


def set_primary_ctx_flags(flags: int) -> int:
    cu = ctypes.CDLL("libcuda.so.1")
    dev = ctypes.c_int()
    if cu.cuInit(0) or cu.cuDeviceGet(ctypes.byref(dev), 0):
        return -1
    fn = getattr(cu, "cuDevicePrimaryCtxSetFlags_v2", None) or cu.cuDevicePrimaryCtxSetFlags
    return int(fn(dev, ctypes.c_uint(flags)))


class Probe:
    """A one-thread kernel writing a sequence number into mapped host memory, the host
    spinning on it; fired twice in a row: the first pays whatever the GPU does before it
    can run this context's work, the second is the floor."""

    SRC = r"""extern "C" __global__ void stamp(unsigned int* flag, unsigned int seq) {
        __threadfence_system(); *(volatile unsigned int*)flag = seq; }"""

    def __init__(self, high: bool) -> None:
        import cupy as cp

        cp.cuda.Device(0).use()
        cp.zeros(1).get()  # the primary context, current in this thread
        cu = ctypes.CDLL("libcuda.so.1")
        least, greatest = ctypes.c_int(), ctypes.c_int()
        check(cu.cuCtxGetStreamPriorityRange(ctypes.byref(least), ctypes.byref(greatest)), "priority range")
        self.priority = greatest.value if high else least.value
        handle = ctypes.c_void_p()
        check(cu.cuStreamCreateWithPriority(ctypes.byref(handle), ctypes.c_uint(1), ctypes.c_int(self.priority)),
              "cuStreamCreateWithPriority")
        self.stream = cp.cuda.ExternalStream(handle.value)
        self.kernel = cp.RawKernel(self.SRC, "stamp")
        self.host = cp.cuda.runtime.hostAlloc(64, 2)  # cudaHostAllocMapped
        get_dev = getattr(cp.cuda.runtime, "hostGetDevicePointer", None)  # else UVA: the same address
        self.dev = get_dev(self.host, 0) if get_dev else self.host
        self.flag = np.ctypeslib.as_array((ctypes.c_uint32 * 2).from_address(self.host))
        self.seq = 0
        self.samples: list[tuple[float, ...]] = []  # (enqueue, wait) cold, then warm, in s
        self.fire()
        self.samples.clear()

    def _one(self) -> tuple[float, float]:
        self.seq += 1
        seq = self.seq
        with self.stream:
            t0 = time.perf_counter()
            self.kernel((1,), (1,), (np.uint64(self.dev), np.uint32(seq)))
            t1 = time.perf_counter()
        while int(self.flag[0]) != seq:
            pass
        return t1 - t0, time.perf_counter() - t1

    def fire(self) -> None:
        self.samples.append((*self._one(), *self._one()))


class Waker:
    """An empty kernel launched (not waited for) on its own stream."""

    def __init__(self) -> None:
        import cupy as cp

        cp.cuda.Device(0).use()
        cp.zeros(1).get()
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.kernel = cp.RawKernel(r"""extern "C" __global__ void nothing() {}""", "nothing")

    def __call__(self) -> None:
        with self.stream:
            self.kernel((1,), (1,), ())


def check(rc: int, what: str) -> None:
    if rc:
        raise RuntimeError(f"{what}: CUDA error {rc}")


def med(xs: list[float]) -> float | None:
    return round(statistics.median(xs), 2) if xs else None


def p99(xs: list[float]) -> float | None:
    return round(float(np.percentile(xs, 99)), 2) if xs else None


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("variant")
    p.add_argument("--frames", type=int, default=300)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--kernel", default="cuda.mlp_fused")
    p.add_argument("--backend", default="cuda")
    a = p.parse_args()
    v = a.variant
    if "maxconn1" in v.split("+"):
        os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"  # read when CUDA starts
    sched = [SCHED[t] for t in v.split("+") if t in SCHED]
    flag_rc = set_primary_ctx_flags(sched[0]) if sched else None

    import dearpygui.dearpygui as dpg

    from gemmpad.commands import cli
    from gemmpad.runtime.classifier import Classifier
    from gemmpad.ui.workers import inference

    tokens = set(v.split("+"))
    known = {"base", "defer", "glfinish", "gate", "wake", "sleep5", "maxconn1", "probe-lo", "probe-hi", *SCHED}
    unknown = tokens - known
    if unknown:
        p.error(f"unknown variant tokens {sorted(unknown)}")
    defer, finish, gate = "defer" in tokens, "glfinish" in tokens, "gate" in tokens
    waker: list[Waker] = []
    probe_kind = True if "probe-hi" in tokens else False if "probe-lo" in tokens else None
    gl = ctypes.CDLL("libGL.so.1")
    gl.glGetString.restype = ctypes.c_char_p
    renders: list[tuple[float, float]] = []
    forwards: list[tuple[float, float, float]] = []  # (start, end, the app's end-to-end us)
    deferred: list = []
    info: dict = {"variant": v, "ctx_flags_rc": flag_rc}
    lock = threading.Lock()
    gpu = threading.Lock() if gate else contextlib.nullcontext()

    orig_render = dpg.render_dearpygui_frame

    def render() -> None:
        t = time.perf_counter()
        with gpu:
            orig_render()
            if finish:
                gl.glFinish()
            if "sleep5" in tokens:
                time.sleep(0.005)
            if "wake" in tokens:
                if not waker:
                    waker.append(Waker())
                waker[0]()
        renders.append((t, time.perf_counter()))
        if "gl_renderer" not in info:
            info["gl_renderer"] = (gl.glGetString(0x1F01) or b"?").decode()
            info["gl_vendor"] = (gl.glGetString(0x1F00) or b"?").decode()
        with lock:
            todo, deferred[:] = list(deferred), []
        for fn in todo:
            fn()

    dpg.render_dearpygui_frame = render

    orig_submit = inference.InferenceWorker.submit

    def submit(self, image, backend, kernel, batch, warm=False):  # type: ignore[no-untyped-def]
        if not defer:
            return orig_submit(self, image, backend, kernel, batch, warm)
        with self._cond:
            seq = self._submitted + 1
        img = image.copy()
        with lock:
            deferred.append(lambda: orig_submit(self, img, backend, kernel, batch, warm))
        return seq

    inference.InferenceWorker.submit = submit

    probe: list[Probe] = []
    orig_predict = Classifier.predict

    def predict(self, x, warmup=0):  # type: ignore[no-untyped-def]
        with gpu:
            if probe_kind is not None and self.backend == "cuda":
                if not probe:
                    try:
                        probe.append(Probe(probe_kind))
                        info["probe_priority"] = probe[0].priority
                    except Exception as exc:  # reported, the run goes on without it
                        info["probe_error"] = f"{type(exc).__name__}: {exc}"
                        probe.append(None)  # type: ignore[arg-type]
                elif probe[0] is not None:
                    probe[0].fire()
            t = time.perf_counter()
            out = orig_predict(self, x, warmup)
        pend = getattr(self, "_pending", None)
        forwards.append((t, time.perf_counter(), pend[0] if pend else float("nan")))
        return out

    Classifier.predict = predict

    buf = io.StringIO()
    args = ["app", "--replay", str(ROOT / "assets" / "screenshot-strokes.json"), "--backend", a.backend,
            "--kernel", a.kernel, "--batch", str(a.batch), "--frames", str(a.frames), "--no-vsync", "--exit"]
    with contextlib.redirect_stdout(buf):
        rc = cli.main(args)
    lines = [ln for ln in buf.getvalue().splitlines() if ln.startswith("{")]
    summary = json.loads(lines[-1]) if lines else {"rc": rc, "stdout": buf.getvalue()[-500:]}

    # The timed passes of the continuous run: the last `frames` forwards at most.
    fw = forwards[-a.frames:]
    starts = np.array([r[0] for r in renders])
    during, between, offs_during, gaps_between = [], [], [], []
    for fs, fe, e2e in fw:
        i = int(np.searchsorted(starts, fs, side="right")) - 1
        if i < 0:
            continue
        rs, re_ = renders[i]
        if fs < re_:
            during.append(e2e)
            offs_during.append((fs - rs) * 1e6)
        else:
            between.append(e2e)
            gaps_between.append((fs - re_) * 1e6)
    rdur = [(e - s) * 1e3 for s, e in renders[-a.frames:]]
    out = {
        **info,
        "e2e_median_us": summary.get("e2e_median_us"), "e2e_p99_us": summary.get("e2e_p99_us"),
        "kernel_median_us": summary.get("kernel_median_us"), "count": summary.get("count"),
        "digit": summary.get("digit"), "frame_ms_median": summary.get("frame_ms_median"),
        "render_ms_median": med(rdur),
        "n_during_render": len(during), "e2e_during_median_us": med(during),
        "start_after_render_start_median_us": med(offs_during),
        "n_after_render": len(between), "e2e_after_median_us": med(between),
        "start_after_render_end_median_us": med(gaps_between),
        "error": summary.get("error"),
    }
    if probe and probe[0] is not None:
        s = probe[0].samples[-a.frames:]
        out["probe_enqueue_median_us"] = med([x[0] * 1e6 for x in s])
        out["probe_wait_median_us"] = med([x[1] * 1e6 for x in s])
        out["probe_wait_p99_us"] = p99([x[1] * 1e6 for x in s])
        out["probe2_enqueue_median_us"] = med([x[2] * 1e6 for x in s])
        out["probe2_wait_median_us"] = med([x[3] * 1e6 for x in s])
        out["probe_n"] = len(s)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
