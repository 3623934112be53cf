"""The native CPU MLP (`_cpu.Mlp`) against the float64 NumPy reference, and the
CPU kernels' runtime ISA dispatch.

Weights are random at the scale of a trained network (so logits and
probabilities are in a realistic range), inputs are drawn-digit-like (about
80% exact zeros) or dense; the output is poisoned with NaN before every call.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

import gemmpad

from gemmpad import _cpu
from gemmpad.runtime import registry
from gemmpad.runtime.model import SHAPES, Model
from tests.conftest import forward_releases_gil, rel_error
from tests.runtime.test_classifier import assert_hidden_agrees

ORDER = ("W1", "b1", "W2", "b2", "W3", "b3")
# The fp32 kernels (GEMM ladder, then cpu.mlp_sparse), held to fp32's accuracy here; cpu.mlp_amx (bf16)
# has its own bound and file, test_cpu_mlp_amx.py.
CPU_KERNELS = [s.name for s in registry.kernels(device="cpu") if s.precision == "fp32"]


def random_weights(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """He-style scale, like a trained network: hidden units of order 1, logits of order 10."""
    w = {}
    for name, shape in SHAPES.items():
        if len(shape) == 2:
            w[name] = (rng.standard_normal(shape) * np.sqrt(2.0 / shape[0])).astype(np.float32)
        else:
            w[name] = (rng.standard_normal(shape) * 0.1).astype(np.float32)
    return w


def digit_like(rng: np.random.Generator, batch: int, zero_fraction: float = 0.8) -> np.ndarray:
    x = rng.uniform(0.0, 1.0, (batch, 784)).astype(np.float32)
    x[rng.uniform(size=x.shape) < zero_fraction] = 0.0
    return x


def make_mlp(w: dict[str, np.ndarray]) -> _cpu.Mlp:
    return _cpu.Mlp(*(w[k] for k in ORDER))


def reference(w: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    return Model(weights=w).forward(x.astype(np.float64))


@pytest.fixture
def weights(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return random_weights(rng)


@pytest.mark.parametrize("batch", [1, 7, 256, 1000])
@pytest.mark.parametrize("kernel", CPU_KERNELS)
@pytest.mark.parametrize("zero_fraction", [0.8, 0.0], ids=["digit", "dense"])
def test_forward_matches_reference(kernel, batch, zero_fraction, weights, rng):
    mlp = make_mlp(weights)
    x = digit_like(rng, batch, zero_fraction)
    out = np.full((batch, 10), np.nan, np.float32)
    us = mlp.forward(x, out, kernel)
    ref = reference(weights, x)
    err = rel_error(out, ref)
    assert err <= 1e-5, f"{kernel} batch {batch}: relative error {err:.3g}"
    # Same answer wherever the answer is defined: rows whose two best
    # probabilities tie within float32 rounding may legitimately swap.
    top2 = np.sort(ref, axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 1e-5 * top2[:, 1]
    assert clear.mean() > 0.99
    assert np.array_equal(out.argmax(axis=1)[clear], ref.argmax(axis=1)[clear])
    assert isinstance(us, float) and us > 0.0


@pytest.mark.parametrize("batch", [1, 7, 257])
@pytest.mark.parametrize("kernel", CPU_KERNELS)
def test_hidden_layers_are_the_kernels_own(kernel, batch, weights, rng):
    """h1/h2 asked of forward(): poisoned with NaN, every value overwritten with what this pass
    computed (within fp32's bound of float64), and the probabilities unchanged by asking."""
    mlp = make_mlp(weights)
    x = digit_like(rng, batch)
    x[0] = rng.uniform(0.0, 1.0, 784)  # one dense row
    plain = np.full((batch, 10), np.nan, np.float32)
    mlp.forward(x, plain, kernel)
    out = np.full((batch, 10), np.nan, np.float32)
    h1, h2 = np.full((batch, 100), np.nan, np.float32), np.full((batch, 100), np.nan, np.float32)
    mlp.forward(x, out, kernel, h1=h1, h2=h2)
    assert np.array_equal(out, plain)
    assert_hidden_agrees(h1, h2, weights, x, "fp32", f"{kernel} batch {batch}")
    only = np.full((batch, 100), np.nan, np.float32)
    mlp.forward(x, out, kernel, h2=only)  # one layer alone
    assert np.array_equal(only, h2)
    odd = np.full(batch * 100 + 1, np.nan, np.float32)[1:].reshape(batch, 100)  # 4 bytes off any vector boundary
    mlp.forward(x, out, kernel, h1=odd)
    assert np.array_equal(odd, h1)


@pytest.mark.parametrize(
    "h1,match",
    [
        (np.zeros((2, 99), np.float32), r"h1 must have shape \(B, 100\)"),
        (np.zeros((3, 100), np.float32), r"h1 must have shape \(2, 100\)"),
        (np.zeros((2, 100), np.float64), "h1 must be float32"),
        (np.zeros((2, 100), np.float32)[:, ::-1], "h1 must be C-contiguous"),
        ("out", "h2 must not overlap another output"),
    ],
)
def test_bad_hidden_arrays_raise_value_error(weights, h1, match):
    mlp = make_mlp(weights)
    out = np.zeros((2, 10), np.float32)
    big = np.zeros((2, 100), np.float32)
    with pytest.raises(ValueError, match=match):
        if isinstance(h1, str):  # both hidden layers into one array
            mlp.forward(GOOD_X, big[:, :10].copy(), h1=big, h2=big)
        else:
            mlp.forward(GOOD_X, out, h1=h1)


U8_BATCHES = [1, 3, 257, 4097]


@pytest.mark.parametrize("batch", U8_BATCHES)
@pytest.mark.parametrize("kernel", CPU_KERNELS)
def test_u8_input_is_the_float_path_on_x_over_255(kernel, batch, weights, rng):
    """forward_u8 reads pixels as gemmpad.inputs.preprocess scales uint8 images (x * float32(1/255)):
    the same floats as forward() on that array, so the same probabilities and hidden layers."""
    if kernel == "cpu.01_naive" and batch > 257:
        batch = 300  # the naive rung at 4097 rows takes seconds; its row handling is the same
    mlp = make_mlp(weights)
    x8 = rng.integers(0, 256, (batch, 784), dtype=np.uint8)
    x8[rng.random(x8.shape) < 0.8] = 0
    xf = x8.astype(np.float32) * np.float32(1.0 / 255.0)
    want, got = np.full((batch, 10), np.nan, np.float32), np.full((batch, 10), np.nan, np.float32)
    h1 = np.full((batch, 100), np.nan, np.float32)
    mlp.forward(xf, want, kernel)
    mlp.forward_u8(x8, got, kernel, h1=h1)
    assert np.array_equal(got, want)
    err = rel_error(got, reference(weights, xf))
    assert err <= 1e-5, f"{kernel} batch {batch}: relative error {err:.3g}"
    assert not np.isnan(h1).any()


def test_u8_input_validated(weights):
    mlp = make_mlp(weights)
    out = np.zeros((2, 10), np.float32)
    with pytest.raises(ValueError, match="x must be uint8, got float32"):
        mlp.forward_u8(GOOD_X, out)
    with pytest.raises(ValueError, match=r"x must have shape \(B, 784\)"):
        mlp.forward_u8(np.zeros((2, 783), np.uint8), out)


def test_default_kernel_is_sparse_and_listed(weights, rng):
    kernels = _cpu.mlp_kernels()
    assert [k["name"] for k in kernels] == ["cpu.mlp_sparse", "cpu.mlp_amx"]
    assert all(Path(__file__).resolve().parents[2].joinpath(k["source"]).exists() for k in kernels)
    assert registry.get("cpu.mlp_sparse").kind == "mlp"
    mlp = make_mlp(weights)
    x = digit_like(rng, 3)
    a, b = np.full((3, 10), np.nan, np.float32), np.full((3, 10), np.nan, np.float32)
    mlp.forward(x, a)
    mlp.forward(x, b, "cpu.mlp_sparse")
    assert np.array_equal(a, b) and rel_error(a, reference(weights, x)) <= 1e-5


def test_weights_are_copied(weights, rng):
    """Changing the caller's arrays after construction must not change the network."""
    mlp = make_mlp(weights)
    x = digit_like(rng, 4)
    ref = reference(weights, x)
    for arr in weights.values():
        arr[...] = rng.standard_normal(arr.shape)
    after = np.full((4, 10), np.nan, np.float32)
    mlp.forward(x, after)
    assert rel_error(after, ref) <= 1e-5


@pytest.mark.parametrize("kernel", CPU_KERNELS)
def test_nan_and_inf_inputs_behave_like_numpy(kernel, weights, rng):
    mlp = make_mlp(weights)
    x = digit_like(rng, 5)
    x[1, 400] = np.nan
    x[3, 0] = np.nan  # a NaN where digits are usually blank
    x[4, 123] = np.inf
    out = np.full((5, 10), -1.0, np.float32)
    mlp.forward(x, out, kernel)
    with np.errstate(invalid="ignore", over="ignore"):
        ref = reference(weights, x)
    assert np.array_equal(np.isnan(out), np.isnan(ref))
    assert np.isnan(out[[1, 3]]).all()
    ok = [0, 2]
    assert rel_error(out[ok], ref[ok]) <= 1e-5


def test_non_finite_weight_in_a_skipped_row_still_gives_nan(weights, rng):
    """0 * Inf is NaN in NumPy, so a zero input may only be skipped when its weights are finite."""
    x = digit_like(rng, 2)
    x[:, 10] = 0.0
    weights["W1"][10, 3] = np.inf
    mlp = _cpu.Mlp(*(weights[k] for k in ORDER))  # Model() would reject these weights; Mlp must not crash
    out = np.full((2, 10), -1.0, np.float32)  # a finite poison: the expected result is all NaN
    mlp.forward(x, out)
    assert np.isnan(out).all()


def test_large_logits_do_not_overflow(weights, rng):
    weights["b3"][4] = 80.0  # exp(80) overflows float32 unless the max is subtracted first
    mlp = make_mlp(weights)
    x = digit_like(rng, 3)
    out = np.empty((3, 10), np.float32)
    mlp.forward(x, out)
    assert np.isfinite(out).all()
    assert rel_error(out, reference(weights, x)) <= 1e-5


def test_concurrent_calls_on_one_object(weights, rng):
    """The GIL is released during compute; a second thread must not corrupt the shared scratch."""
    mlp = make_mlp(weights)
    xs = [digit_like(rng, b) for b in (1, 64, 300)]
    refs = [reference(weights, x) for x in xs]
    errors: list[str] = []

    def worker(i: int) -> None:
        out = np.empty((xs[i].shape[0], 10), np.float32)
        for _ in range(30):
            out.fill(np.nan)  # every call must write its own result
            mlp.forward(xs[i], out, "cpu.02_blocked_simd" if i % 2 else "cpu.mlp_sparse")
            if rel_error(out, refs[i]) > 1e-5:
                errors.append(f"thread {i}")
                return

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


GOOD_X = np.zeros((2, 784), np.float32)
GOOD_OUT = np.zeros((2, 10), np.float32)


@pytest.mark.parametrize(
    "x,out,kernel,match",
    [
        (np.zeros((784,), np.float32), GOOD_OUT, "cpu.mlp_sparse", r"x must have shape \(B, 784\), got \(784,\)"),
        (np.zeros((2, 783), np.float32), GOOD_OUT, "cpu.mlp_sparse", r"x must have shape \(B, 784\), got \(2, 783\)"),
        (np.zeros((0, 784), np.float32), np.zeros((0, 10), np.float32), "cpu.mlp_sparse", "x must have shape"),
        (np.zeros((2, 784), np.float64), GOOD_OUT, "cpu.mlp_sparse", "x must be float32, got float64"),
        (np.zeros((784, 2), np.float32).T, GOOD_OUT, "cpu.mlp_sparse", "x must be C-contiguous"),
        ([[0.0] * 784], GOOD_OUT, "cpu.mlp_sparse", "x must be a NumPy array, got list"),
        (GOOD_X, np.zeros((3, 10), np.float32), "cpu.mlp_sparse", r"out must have shape \(2, 10\)"),
        (GOOD_X, np.zeros((2, 11), np.float32), "cpu.mlp_sparse", r"out must have shape \(B, 10\)"),
        (GOOD_X, np.zeros((2, 10), np.float16), "cpu.mlp_sparse", "out must be float32"),
        (GOOD_X, np.zeros((2, 10), np.float32), "cpu.99_missing", r"unknown kernel 'cpu.99_missing'.*cpu.mlp_sparse"),
    ],
)
def test_bad_arguments_raise_value_error(weights, x, out, kernel, match):
    mlp = make_mlp(weights)
    with pytest.raises(ValueError, match=match):
        mlp.forward(x, out, kernel)


def test_readonly_or_overlapping_out_is_rejected(weights):
    mlp = make_mlp(weights)
    out = np.zeros((2, 10), np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        mlp.forward(GOOD_X, out)
    buf = np.zeros((1, 784), np.float32)
    with pytest.raises(ValueError, match="overlap"):
        mlp.forward(buf, buf[0, 100:110].reshape(1, 10))


@pytest.mark.parametrize("bad", ["W1", "b2", "W3"])
def test_constructor_validates(weights, bad):
    good = dict(weights)
    good[bad] = np.zeros(tuple(d + 1 for d in weights[bad].shape), np.float32)
    with pytest.raises(ValueError, match=f"{bad} must have shape"):
        make_mlp(good)
    good[bad] = weights[bad].astype(np.float64)
    with pytest.raises(ValueError, match=f"{bad} must be float32"):
        make_mlp(good)


# Resident memory over many calls, in a child process: the test process's RSS also moves with whatever
# other tests left running (a large batch gives the GIL up, and their threads allocate meanwhile): RSS
# grew 675 KB once at cpu.02 batch 64 when tests/native ran after tests/runtime, never alone.
RSS_CHECK = textwrap.dedent(
    """
    import os, sys, numpy as np
    from tests.native.test_native_cpu import random_weights, digit_like, make_mlp

    def rss_bytes():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    kernel, batch, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(seed)
    mlp = make_mlp(random_weights(rng))
    x = digit_like(rng, batch)
    out = np.empty((batch, 10), np.float32)
    for _ in range(2000):
        mlp.forward(x, out, kernel)
    before = rss_bytes()
    for _ in range(20000):
        mlp.forward(x, out, kernel)
    print(rss_bytes() - before)
    """
)


def run_child(script: str, *args: str, **env: str) -> str:
    """`script` run by this Python in a fresh process with the gemmpad this process imported
    (installed, or app/ in a developer build) and the tests package; its stdout, stripped (the
    test fails on a non-zero exit, with its output)."""
    root = Path(__file__).resolve().parents[2]
    package_parent = Path(gemmpad.__file__).resolve().parents[1]
    full_env = dict(os.environ, **env)
    full_env["PYTHONPATH"] = os.pathsep.join([str(package_parent), str(root), full_env.get("PYTHONPATH", "")])
    res = subprocess.run([sys.executable, "-c", script, *args], env=full_env, cwd=root, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout.strip()


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs Linux /proc to read the RSS")
@pytest.mark.parametrize("kernel,batch", [("cpu.mlp_sparse", 1), ("cpu.02_blocked_simd", 1), ("cpu.02_blocked_simd", 64)])
def test_no_allocation_per_call(rng, kernel, batch):
    """Resident memory stays flat over many calls at a fixed batch (scratch only grows)."""
    grown = int(run_child(RSS_CHECK, kernel, str(batch), str(int(rng.integers(2**31)))))
    assert grown < 256 * 1024, f"RSS grew by {grown} bytes over 20000 calls"


# Every ISA path on this machine: a child process forced to a lower ISA runs
# the sparse MLP and the blocked GEMM on awkward shapes against float64.
ISA_CHECK = textwrap.dedent(
    """
    import sys, numpy as np
    from gemmpad import _cpu, gemm
    from tests.native.test_native_cpu import random_weights, digit_like, make_mlp, reference, rel_error
    want = sys.argv[1]
    assert _cpu.cpu_isa() == want, (_cpu.cpu_isa(), want)
    rng = np.random.default_rng(int(sys.argv[2]))
    w = random_weights(rng)
    mlp = make_mlp(w)
    for batch in (1, 7, 300):
        for zeros in (0.8, 0.0):
            x = digit_like(rng, batch, zeros)
            out = np.full((batch, 10), np.nan, np.float32)
            mlp.forward(x, out)
            assert rel_error(out, reference(w, x)) <= 1e-5, ("mlp", batch, zeros)
    shapes = [(m, n, k) for m in (1, 2, 5, 13, 30) for n in (1, 3, 17, 33, 100) for k in (1, 2, 7, 300)]
    shapes += [(127, 97, 131), (257, 100, 784)]
    for m, n, k in shapes:
        a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
        bias = rng.uniform(-1, 1, n).astype(np.float32)
        out = np.full((m, n), np.nan, np.float32)
        gemm(a, b, bias=bias, activation="relu", kernel="cpu.02_blocked_simd", out=out)
        ref = np.maximum(a.astype(np.float64) @ b + bias, 0)
        # Error relative to the size of the terms summed, not of the result:
        # with K = 1..7 and ReLU, a result that cancels to ~0 would make a
        # correct fp32 sum look wrong (about 1 shape in 6000 did).
        scale = np.linalg.norm(np.abs(a.astype(np.float64)) @ np.abs(b) + np.abs(bias))
        assert np.isfinite(out).all() and np.linalg.norm(out - ref) / scale <= 1e-6, (m, n, k)
    print("ok")
    """
)


def _supported_isas() -> list[str]:
    feats = set(_cpu.cpu_features())
    isas = ["generic"]
    if {"avx2", "fma"} <= feats:
        isas.append("avx2")
    if _cpu.cpu_isa() == "avx512":
        isas.append("avx512")
    return isas


@pytest.mark.parametrize("isa", ["generic", "avx2", "avx512"])
def test_every_isa_path(isa, rng):
    if isa not in _supported_isas():
        pytest.skip(f"this CPU has no {isa}")
    assert run_child(ISA_CHECK, isa, str(int(rng.integers(2**31))), GEMMPAD_CPU_ISA=isa) == "ok"


def test_forward_keeps_the_gil_for_a_few_rows_only(weights, rng):
    """A few rows take microseconds: giving the GIL up would make the call wait to get it back
    from the app's window thread (ms in the app's p99). Large batches let other threads run."""
    mlp = make_mlp(weights)
    assert not forward_releases_gil(lambda x, out: mlp.forward(x, out), digit_like(rng, 16))
    assert forward_releases_gil(lambda x, out: mlp.forward(x, out), digit_like(rng, 4096))
