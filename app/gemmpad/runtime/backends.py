"""The backends the MLP runs on, as one list: the classifier, the command line and
the window all read it, so a new backend is one entry here; and `pick`, the one
policy for which backend runs when nobody named one.

A backend says whether it can run on this machine (and if not, why: the line
shown beside a greyed-out choice), which kernel it starts on, and how to build
its runner: an object that keeps the weights where it computes and runs
`forward(x [B,784] float32, out [B,10] float32, kernel, h1=None, h2=None) -> kernel_us`
and `forward_u8` (x uint8 pixels, read as x * float32(1/255), preprocess's scaling).
h1/h2, where given ([B, width] float32), receive the hidden activations that very pass
computed, so a caller shows what the selected kernel produced, not a recomputation.
On the GPU the kernel time is read later from CUDA events (`deferred_timing`):
`forward` returns once the probabilities are in host memory and
`kernel_us()` waits for the stop event only when asked.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from gemmpad.runtime import native, registry


class Runner(Protocol):
    """One backend's MLP, weights resident: the object `Classifier` calls every frame."""

    def forward(self, x: np.ndarray, out: np.ndarray, kernel: str,
                h1: np.ndarray | None = None, h2: np.ndarray | None = None) -> float: ...

    def forward_u8(self, x: np.ndarray, out: np.ndarray, kernel: str,
                   h1: np.ndarray | None = None, h2: np.ndarray | None = None) -> float: ...


class DeferredRunner(Runner, Protocol):
    """A runner whose kernel time arrives after forward() returns (Backend.deferred_timing)."""

    def kernel_us(self) -> float: ...


@dataclass(frozen=True)
class Backend:
    name: str  # what --backend and Classifier(backend=...) take
    label: str  # short name on screen
    summary: str  # one line: what runs the network
    default_kernel: str
    deferred_timing: bool  # kernel time from the runner's kernel_us(), after forward() has returned
    reason: Callable[[], str]  # "" when usable here, else why not
    make: Callable[[Any, dict[str, np.ndarray]], Runner]  # (784-100-100-10 Model, float32 weights) -> runner


class NumpyMlp:
    """The float32 NumPy reference as a runner (BLAS matmuls; kernel time = the matmuls)."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def forward(self, x: np.ndarray, out: np.ndarray, kernel: str,
                h1: np.ndarray | None = None, h2: np.ndarray | None = None) -> float:
        from gemmpad.runtime.model import softmax

        t0 = time.perf_counter()
        if h1 is None and h2 is None:
            out[...] = self.model.forward(x)
            return (time.perf_counter() - t0) * 1e6
        w = self.model.weights
        a1, a2 = self.model.hidden(x)  # Model.forward's steps, its hidden layers kept
        with np.errstate(over="ignore", invalid="ignore"):
            out[...] = softmax(a2 @ w["W3"] + w["b3"])
        us = (time.perf_counter() - t0) * 1e6
        fill(h1, a1)
        fill(h2, a2)
        return us

    def forward_u8(self, x: np.ndarray, out: np.ndarray, kernel: str,
                   h1: np.ndarray | None = None, h2: np.ndarray | None = None) -> float:
        from gemmpad.inputs.preprocess import unit_pixels  # here, not at start-up: `gemmpad --help` stays light

        t0 = time.perf_counter()
        xf = unit_pixels(x)
        return (time.perf_counter() - t0) * 1e6 + self.forward(xf, out, kernel, h1, h2)


def fill(dst: np.ndarray | None, src: np.ndarray) -> None:
    """dst[...] = src where the caller asked for that output (dst given)."""
    if dst is not None:
        dst[...] = src


def _native_mlp(module: Callable[[], Any]) -> Callable[[Any, dict[str, np.ndarray]], Runner]:
    def make(model: Any, w: dict[str, np.ndarray]) -> Runner:
        return module().Mlp(w["W1"], w["b1"], w["W2"], w["b2"], w["W3"], w["b3"])

    return make


def _cpu_reason() -> str:
    return "" if hasattr(native.cpu, "Mlp") else "this build of gemmpad has no native CPU MLP (gemmpad._cpu.Mlp)"


def _cuda_reason() -> str:
    status = native.cuda_status()
    if not status.available:
        return status.reason
    cuda_mod = native.cuda_module_if_built()
    return "" if cuda_mod is not None and hasattr(cuda_mod, "Mlp") else \
        "this build of gemmpad has no GPU MLP (gemmpad._cuda.Mlp)"


BACKENDS: tuple[Backend, ...] = (
    Backend("numpy", "NumPy", "NumPy reference (BLAS matmul)", "numpy", False, lambda: "",
            lambda model, w: NumpyMlp(model)),
    Backend("cpu", "CPU", "C++ kernels on the CPU", "cpu.mlp_sparse", False, _cpu_reason,
            _native_mlp(lambda: native.cpu)),
    Backend("cuda", "GPU", "CUDA kernels on the GPU", "cuda.mlp_fused", True, _cuda_reason,
            _native_mlp(native.cuda)),
)
NAMES = tuple(b.name for b in BACKENDS)
BY_NAME = {b.name: b for b in BACKENDS}
# Fastest first: where nobody names a backend, the first usable one of these runs.
PREFERENCE = ("cuda", "cpu", "numpy")
# ...but `gemmpad predict` and `Classifier()` leave the GPU out: a few images or a library call
# pay the GPU's start-up (context, weight upload: ~1 s) for microseconds of compute, and the CPU
# gives the same answer on every machine.
WITHOUT_GPU = ("cpu", "numpy")
# GEMM kernels live on the devices of the registry: `gemm()` picks among these.
GEMM_DEVICES = ("cuda", "cpu")


def available_backends() -> dict[str, str]:
    """backend -> "" when usable here, else the reason (shown next to a greyed-out choice)."""
    return {b.name: b.reason() for b in BACKENDS}


def full_names(backend: str, kernel: str) -> tuple[str, str, str]:
    """What a kernel name given on `backend` may stand for: itself, or a short form
    ("07_warptile" -> "cuda.07_warptile", "fused" -> "cuda.mlp_fused")."""
    return kernel, f"{backend}.{kernel}", f"{backend}.mlp_{kernel}"


def backend_of(kernel: str | None) -> str | None:
    """The backend a kernel name belongs to, so --kernel alone suffices: "cpu.01_naive" ->
    "cpu", and a short name one backend alone has ("07_warptile", "fused") -> that backend."""
    if not kernel:
        return None
    if kernel == "numpy":
        return "numpy"
    devices = {s.device for s in registry.kernels() if s.name in full_names(s.device, kernel)}
    return devices.pop() if len(devices) == 1 else None


def pick(backend: str | None = None, kernel: str | None = None, among: tuple[str, ...] = PREFERENCE) -> str:
    """The backend to run on, by one rule for every caller (gemm(), the window, predict, Classifier):
    the one named; else the one `kernel` belongs to; else the first of `among` usable here (its
    last when none is: the caller's own check then says why it cannot run)."""
    if backend:
        return backend
    owner = backend_of(kernel)
    if owner:
        return owner
    reasons = available_backends()
    return next((b for b in among if not reasons.get(b, "unknown")), among[-1])
