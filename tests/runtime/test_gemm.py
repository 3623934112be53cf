"""Every kernel of the registry against a float64 NumPy reference.

Every element is held to its precision's error bound (gemmpad.runtime.precision, through
conftest.assert_within_bound): rounding error scales with K and the summed terms'
magnitudes, not with the result, so sums that cancel to zero and long K do not flake.

Fresh random data each run, never zeros; the output is poisoned with NaN
before each call so an element a kernel forgets to write fails the test. fp8 kernels are held to
the product of their rounded operands (conftest.operands): e4m3's own rounding (2^-4) would hide
any error worth finding.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

import gemmpad
from gemmpad.runtime import registry
from gemmpad.errors import CudaUnavailable, InputShapeError, InputTypeError, KernelUnavailable
from tests.conftest import assert_within_bound, kernel_marks, operands, rel_error

ALL = registry.kernels(kind="gemm")


def kernel_params(names_filter=lambda s: True):
    return [
        pytest.param(s.name, marks=kernel_marks(s), id=s.name)
        for s in ALL
        if names_filter(s)
    ]


# (M, N, K): a 1x1x1, primes, the MLP layers at B = 1, 7, 256, 4096, the seed's table size.
SHAPES = [(1, 1, 1), (127, 97, 131), (1024, 1024, 768)]
for _b in (1, 7, 256, 4096):
    SHAPES += [(_b, 100, 784), (_b, 100, 100), (_b, 10, 100)]
# Split-K over K's slices: one row against a long K whose slices end unevenly; primes whose K is no
# multiple of any slice count times the k-tile.
SHAPES += [(1, 100, 5000), (131, 97, 1031)]


def reference(a, b, bias, activation, precision="fp32"):
    """act(A @ B + bias) in float64, from the operands as a kernel of `precision` sees them."""
    qa, qb = operands(precision, a, b)
    ref = qa @ qb
    if bias is not None:
        ref += bias
    if activation == "relu":
        ref = np.maximum(ref, 0.0)
    return ref


# The rungs whose step applies to some problems only: 14-16 (tiles that fill the SMs; 15-16 C rows
# of 16 bytes; 16 operands TMA reads in place), 17 (4-byte-aligned rows), 19 (float4 rows). Elsewhere
# they raise KernelUnavailable rather than run another rung's kernel; no other kernel may.
SHAPE_LIMITED = ("cuda.14_", "cuda.15_", "cuda.16_", "cuda.17_", "cuda.19_", "cuda.20_")


def check(name, m, n, k, rng, bias=True, activation="relu") -> bool:
    """The kernel's result within its precision's bound of float64, into a NaN-poisoned `out`; False
    where a SHAPE_LIMITED rung says the problem is outside its step (and wrote nothing)."""
    spec = registry.get(name)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    bias_v = rng.uniform(-1, 1, n).astype(np.float32) if bias else None
    out = np.full((m, n), np.nan, dtype=np.float32)
    try:
        gemmpad.gemm(a, b, bias=bias_v, activation=activation, kernel=name, out=out)
    except KernelUnavailable as exc:
        assert name.startswith(SHAPE_LIMITED), f"{name} {m}x{n}x{k}: {exc}"
        assert f"{name} unavailable: " in str(exc) and np.isnan(out).all()
        return False
    assert_within_bound(out, reference(a, b, bias_v, activation, spec.precision), a, b, bias_v, spec.precision,
                        f"{name} {m}x{n}x{k}")
    return True


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", kernel_params())
def test_shapes(name, shape, rng):
    m, n, k = shape
    if name == "cpu.01_naive" and m * n * k > 3e8:
        pytest.skip("the naive CPU loop takes seconds at this size; covered by the smaller shapes")
    check(name, m, n, k, rng)


def _interrupted(name: str, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> float:
    """gemm interrupted by a real SIGINT 0.3 s in: seconds from the signal to its KeyboardInterrupt."""
    sent: list[float] = []
    timer = threading.Timer(0.3, lambda: (sent.append(time.perf_counter()), os.kill(os.getpid(), signal.SIGINT)))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            gemmpad.gemm(a, b, kernel=name, out=out)
            time.sleep(5)  # (a call that returned before the signal: the test fails as it should)
    finally:
        timer.cancel()
    return time.perf_counter() - sent[0]


def test_ctrl_c_stops_the_naive_loop_between_rows(rng):
    """cpu.01_naive at 3000^3 kept Ctrl-C waiting for minutes, until it returned: now it stops between
    rows, and the call raises KeyboardInterrupt (its first rows written, the last still the poison)."""
    a = rng.uniform(-1, 1, (300, 1024)).astype(np.float32)
    b = rng.uniform(-1, 1, (1024, 4096)).astype(np.float32)
    out = np.full((300, 4096), np.nan, np.float32)
    _interrupted("cpu.01_naive", a, b, out)
    assert not np.isnan(out[0]).any() and np.isnan(out[-1]).all()


def test_ctrl_c_stops_the_blocked_kernel_between_blocks(rng):
    """cpu.02_blocked_simd at 6000 x 6000 x 4000 runs ~8 s on the 2-core CI machine (every row of C holds
    partial sums after the first K block, so the poison cannot tell): KeyboardInterrupt within 2.5 s."""
    a = rng.uniform(-1, 1, (6000, 4000)).astype(np.float32)
    b = rng.uniform(-1, 1, (4000, 6000)).astype(np.float32)
    assert _interrupted("cpu.02_blocked_simd", a, b, np.empty((6000, 6000), np.float32)) < 2.5


@pytest.mark.parametrize("name", kernel_params())
def test_random_shapes(name, rng):
    """A few hundred awkward shapes: not multiples of any tile, with and without the epilogue."""
    for i in range(200):
        m, n, k = (int(x) for x in rng.integers(1, 150, size=3))
        check(name, m, n, k, rng, bias=bool(i % 2), activation="relu" if i % 3 else None)


@pytest.mark.parametrize("name", kernel_params())
def test_nan_and_inf_pass_through(name, rng):
    """NaN and inf reach the output (fp8 has no inf: e4m3 saturates it to 448, a finite row)."""
    precision = registry.get(name).precision
    # a small awkward problem; the SHAPE_LIMITED rungs refuse it, so they get one inside their step
    # (more 128 x 256 tiles than an H200 has SMs, rows of whole float4s and 16 bytes)
    m, k, n = (4096, 64, 2048) if name.startswith(SHAPE_LIMITED) else (9, 17, 5)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    a[2, 3] = np.nan
    a[4, 0] = np.inf
    b[0] = np.resize([0.5, -0.5, 0.25, -0.75, 1.0], n)  # row 4 of the product: +inf and -inf (ReLU'd to 0) columns
    out = np.full((m, n), -7.0, np.float32)  # a finite poison: NaN could not tell an unwritten row 2
    gemmpad.gemm(a, b, kernel=name, activation="relu", out=out)
    assert np.isnan(out[2]).all()
    with np.errstate(invalid="ignore"):
        ref = reference(a, b, None, "relu", precision)
    if precision != "fp8":
        np.testing.assert_array_equal(out[4], ref[4].astype(np.float32))
    ok = [r for r in range(m) if r != 2 and (r != 4 or precision == "fp8")]
    assert_within_bound(out[ok], ref[ok], a[ok], b, None, precision, name)


def test_default_kernel_and_dtype_conversion(rng):
    a = rng.integers(-5, 5, (6, 4)).astype(np.int32)
    b = np.asfortranarray(rng.uniform(-1, 1, (4, 3)))  # float64, not C-contiguous
    out = gemmpad.gemm(a, b)
    assert out.dtype == np.float32 and out.shape == (6, 3)
    assert rel_error(out, a.astype(np.float64) @ b) <= 1e-5


@pytest.mark.parametrize(
    "a_shape,b_shape,bias_shape,match",
    [
        ((3,), (3, 2), None, "must be 2-D"),
        ((2, 3, 4), (4, 2), None, "must be 2-D"),
        ((2, 3), (4, 2), None, "inner dimensions differ"),
        ((0, 3), (3, 2), None, "empty"),
        ((2, 3), (3, 2), (3,), "bias must have shape"),
    ],
)
def test_bad_shapes(a_shape, b_shape, bias_shape, match):
    bias = None if bias_shape is None else np.ones(bias_shape, np.float32)
    with pytest.raises(InputShapeError, match=match):
        gemmpad.gemm(np.ones(a_shape, np.float32), np.ones(b_shape, np.float32), bias=bias)


def test_bad_dtypes():
    with pytest.raises(InputTypeError, match="real numbers"):
        gemmpad.gemm(np.array([["a"]]), np.ones((1, 1)))
    with pytest.raises(InputTypeError, match="real numbers"):
        gemmpad.gemm(np.ones((2, 2), np.complex64), np.ones((2, 2)))
    with pytest.raises(ValueError, match="activation"):
        gemmpad.gemm(np.ones((2, 2)), np.ones((2, 2)), activation="tanh")


def test_bad_out(rng):
    a = rng.standard_normal((6, 6)).astype(np.float32)
    b = rng.standard_normal((6, 6)).astype(np.float32)
    bias = rng.standard_normal(6).astype(np.float32)
    cases = [
        (np.empty((6, 6), np.float64), "float32 array of shape"),
        (np.empty((6, 5), np.float32), r"shape \(6, 6\)"),
        ([[0.0] * 6] * 6, "got list"),
        (np.empty((6, 6), np.float32).T, "C-contiguous"),
        (a, "share memory"),
        (b, "share memory"),
    ]
    for out, match in cases:
        before = a.copy()
        with pytest.raises(InputShapeError, match=match):
            gemmpad.gemm(a, b, bias=bias, kernel="cpu.01_naive", out=out)
        np.testing.assert_array_equal(a, before)  # refused before any write
    buf = rng.standard_normal(36).astype(np.float32)  # out whose last row is also the bias
    with pytest.raises(InputShapeError, match="share memory"):
        gemmpad.gemm(a, b, bias=buf[30:], kernel="cpu.01_naive", out=buf.reshape(6, 6))
    with pytest.raises(ValueError, match="whole-network kernel"):
        gemmpad.gemm(a, b, kernel="cpu.mlp_sparse")


def test_unknown_kernel():
    with pytest.raises(gemmpad.errors.GemmpadError, match="unknown kernel"):
        gemmpad.gemm(np.ones((2, 2)), np.ones((2, 2)), kernel="cpu.99_missing")


def test_too_large_is_a_clear_error():
    with pytest.raises(InputShapeError, match="too large"):
        big = np.lib.stride_tricks.as_strided(np.ones(1, np.float32), shape=(70000, 70000), strides=(0, 0))
        gemmpad.gemm(np.ones((1, 70000), np.float32), big)
    # one element past the limit, before any copy (a broadcast view; the copy would be 8 GB), limit stated
    over = np.broadcast_to(np.zeros(1, np.float32), (2**31, 1))
    with pytest.raises(InputShapeError, match=r"2,147,483,648 elements in one matrix, at most 2,147,483,647"):
        gemmpad.gemm(over, np.ones((1, 1), np.float32))


@pytest.mark.skipif(gemmpad.cuda_status().available, reason="checks the no-GPU path")
def test_cuda_kernel_without_gpu_says_why():
    cuda = [s for s in ALL if s.device == "cuda"]
    if not cuda:
        pytest.skip("CUDA module not built")
    with pytest.raises(CudaUnavailable, match="cannot run here"):
        gemmpad.gemm(np.ones((2, 2)), np.ones((2, 2)), kernel=cuda[0].name)


@pytest.mark.gpu
def test_device_allocation_failure_is_a_memory_error(rng):
    """An allocation the GPU cannot satisfy raises, and the process goes on working."""
    name = registry.default_gemm("cuda").name
    with pytest.raises(MemoryError):
        gemmpad.runtime.native.cuda().bench_gemm(name, 2**30, 2**30, 1, reps=1, warmup=0)
    check(name, 33, 17, 9, rng)


def test_wrong_argument_types_are_type_errors_naming_the_argument():
    """Issue 20, finding 11: kernel=7 raised AttributeError, activation=['relu'] "unhashable type"."""
    a = np.ones((2, 2), np.float32)
    with pytest.raises(TypeError, match="^kernel must be a kernel name"):
        gemmpad.gemm(a, a, kernel=7)
    with pytest.raises(TypeError, match="^activation must be None or 'relu', got list"):
        gemmpad.gemm(a, a, activation=["relu"])
