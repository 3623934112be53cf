"""Shared test fixtures: fresh random data every run, and GPU skipping with a reason."""

from __future__ import annotations

import os
import secrets
import sys
import threading

import numpy as np
import pytest

from gemmpad.runtime import native
from gemmpad.runtime.precision import bound_ratio, gemm_bound
from tests.pendigits_data import share_beside_the_clone

share_beside_the_clone()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    status = native.cuda_status()
    if status.available:
        return
    skip = pytest.mark.skip(reason=f"needs a CUDA device: {status.reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def kernel_marks(spec) -> list:
    """Marks for a test of one registry kernel: `gpu` for CUDA kernels, plus a skip with the
    reason where the GPU is usable but cannot run this kernel (cuda.10 needs Hopper), and for a
    CPU kernel this CPU cannot run (cpu.mlp_amx needs AMX tiles)."""
    cuda = spec.device == "cuda"
    marks = [pytest.mark.gpu] if cuda else []
    # (with no usable GPU at all, the gpu mark's own skip says why, once for every CUDA kernel)
    if not spec.available and (not cuda or native.cuda_status().available):
        marks.append(pytest.mark.skip(reason=f"{spec.name}: {spec.unavailable_reason}"))
    return marks


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A generator with a fresh seed each run; the seed is shown if the test fails, and
    GEMMPAD_TEST_SEED=<seed> replays it."""
    forced = os.environ.get("GEMMPAD_TEST_SEED", "")
    seed = int(forced) if forced else secrets.randbits(32)
    request.node.user_properties.append(("seed", seed))
    print(f"random seed: {seed}")
    return np.random.default_rng(seed)


def round_e4m3(x: np.ndarray) -> np.ndarray:
    """x as the fp8 kernels see it, in float64: e4m3 (3 mantissa bits, subnormals from 2^-9,
    round to nearest even), saturating at +-448 as the device's conversion does (inf too); NaN stays."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        _, e = np.frexp(x)
        quantum = np.where(np.abs(x) >= 2.0**-6, np.ldexp(1.0, e - 4), 2.0**-9)
        return np.clip(np.round(np.clip(x, -448, 448) / quantum) * quantum, -448, 448)


def operands(precision: str, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A and B as a kernel of `precision` multiplies them, for a float64 reference: fp8's rounding
    is coarser than any tolerance worth testing (2^-4), so its reference takes the rounded operands."""
    if precision == "fp8":
        return round_e4m3(a), round_e4m3(b)
    return a.astype(np.float64), b.astype(np.float64)


def rel_error(out: np.ndarray, ref: np.ndarray) -> float:
    """||out - ref|| / ||ref||, NaN if any output is NaN (so it never passes)."""
    out64 = out.astype(np.float64)
    if not np.all(np.isfinite(out64)):
        return float("nan")
    return float(np.linalg.norm(out64 - ref) / max(np.linalg.norm(ref), 1e-30))


def assert_within_bound(out: np.ndarray, ref: np.ndarray, a: np.ndarray, b: np.ndarray, bias: np.ndarray | None,
                        precision: str, what: str) -> None:
    """Every element of a kernel's act(A @ B + bias) within gemmpad.runtime.precision's bound of the float64
    reference `ref` (from conftest.operands: fp8's reference takes the rounded operands, so its bound
    is the accumulation's alone). A kernel fails only by breaking the bound its precision allows."""
    qa, qb = operands(precision, a, b)
    bound = gemm_bound(qa, qb, precision, bias, operands_rounded=precision == "fp8")
    ratio = bound_ratio(out, ref, bound)
    assert ratio <= 1.0, f"{what}: error {ratio:.3g}x the {precision} bound"


def forward_releases_gil(forward, x: np.ndarray, calls: int = 20) -> bool:
    """Whether `forward(x, out)` lets other Python threads run during the call.

    With a switch interval of minutes, a thread holding the GIL keeps it until it
    blocks or gives it up: this thread, waiting to start another that calls forward
    `calls` times, runs again in the middle of those calls only if forward() releases
    the GIL, and after the last one otherwise. A kept GIL is thus seen for certain; a
    released one only if this thread wakes up before the call ends and takes the GIL
    back, so give it calls that last (a large batch: hundreds of us or more).
    """
    out = np.empty((x.shape[0], 10), dtype=np.float32)
    done: list[int] = []

    def work() -> None:
        for _ in range(calls):
            forward(x, out)
            done.append(1)

    old = sys.getswitchinterval()
    sys.setswitchinterval(300.0)
    try:
        t = threading.Thread(target=work)
        t.start()
        seen = len(done)
        t.join()
    finally:
        sys.setswitchinterval(old)
    assert len(done) == calls
    return seen < calls
