"""cpu.mlp_amx (native/cpu/mlp/mlp_amx.cpp) against float64 within bf16's error bound.

It runs only on a CPU with AMX tiles (the H200's host: `native/tools/h200_run.sh`); everywhere else
the first test checks that it says why it cannot run and refuses to, and the others skip with that
reason. Outputs and hidden arrays are poisoned with NaN before every call.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from gemmpad import _cpu
from gemmpad.bench.mlp import as_pixels
from gemmpad.errors import GemmpadError
from gemmpad.inputs.preprocess import unit_pixels
from gemmpad.runtime import registry
from gemmpad.runtime.classifier import Classifier
from gemmpad.runtime.model import Model
from gemmpad.runtime.precision import mlp_bound
from tests.native.test_native_cpu import digit_like, make_mlp, random_weights
from tests.runtime.test_classifier import assert_hidden_agrees

AMX = registry.get("cpu.mlp_amx")
needs_amx = pytest.mark.skipif(not AMX.available, reason=f"cpu.mlp_amx: {AMX.unavailable_reason}")


def run(mlp: _cpu.Mlp, x: np.ndarray, **hidden: np.ndarray) -> np.ndarray:
    out = np.full((len(x), 10), np.nan, np.float32)
    (mlp.forward_u8 if x.dtype == np.uint8 else mlp.forward)(x, out, "cpu.mlp_amx", **hidden)
    return out


def floats(x: np.ndarray) -> np.ndarray:
    """What the network reads: 8-bit pixels as preprocess scales them."""
    return unit_pixels(x) if x.dtype == np.uint8 else x


def test_it_runs_here_or_says_why_not(rng):
    w = random_weights(rng)
    x = digit_like(rng, 3)
    if AMX.available:
        assert "cpu.mlp_amx" in Classifier(Model(weights=w), backend="cpu").kernels()
        assert np.isfinite(run(make_mlp(w), x)).all()
        return
    assert AMX.unavailable_reason and ("AMX" in AMX.unavailable_reason or "AVX-512" in AMX.unavailable_reason)
    why = "cannot run here: " + re.escape(AMX.unavailable_reason)
    with pytest.raises(ValueError, match=why):
        run(make_mlp(w), x)
    assert "cpu.mlp_amx" not in Classifier(Model(weights=w), backend="cpu").kernels()
    for name in ("cpu.mlp_amx", "amx"):  # the short name too: the same line, not "unknown kernel"
        with pytest.raises(GemmpadError, match=f"kernel 'cpu.mlp_amx' {why}; choose one of .*cpu.mlp_sparse"):
            Classifier(Model(weights=w), backend="cpu", kernel=name)


@needs_amx
@pytest.mark.parametrize("batch", [1, 15, 16, 17, 100, 256, 1000])
@pytest.mark.parametrize("zero_fraction", [0.8, 0.0], ids=["digit", "dense"])
@pytest.mark.parametrize("pixels", [False, True], ids=["float32", "uint8"])
def test_forward_keeps_the_bf16_bound(batch, zero_fraction, pixels, rng):
    w = random_weights(rng)
    x = digit_like(rng, batch, zero_fraction)
    if pixels:
        x = as_pixels(x)
    out = run(make_mlp(w), x)
    bound = mlp_bound(w, floats(x), "bf16")
    assert bound.ratio(out) <= 1.0, f"batch {batch}: error {bound.ratio(out):.3g}x the bf16 bound"
    assert bound.argmax_broken(out) == 0
    assert np.allclose(out.sum(axis=1), 1.0, atol=1e-5)


@needs_amx
@pytest.mark.parametrize("batch", [1, 17, 257])
@pytest.mark.parametrize("pixels", [False, True], ids=["float32", "uint8"])
def test_hidden_layers_are_the_kernels_own(batch, pixels, rng):
    w = random_weights(rng)
    x = digit_like(rng, batch)
    if pixels:
        x = as_pixels(x)
    mlp = make_mlp(w)
    plain = run(mlp, x)
    h1 = np.full(batch * 100 + 1, np.nan, np.float32)[1:].reshape(batch, 100)  # 4 bytes off any vector boundary
    h2 = np.full((batch, 100), np.nan, np.float32)
    assert np.array_equal(run(mlp, x, h1=h1, h2=h2), plain)
    assert_hidden_agrees(h1, h2, w, floats(x), "bf16", f"cpu.mlp_amx batch {batch}")


@needs_amx
def test_the_same_rows_give_the_same_answer_on_any_number_of_threads(rng):
    """Each row's sums run in one tile row whatever block it lands in: bitwise the same split or not."""
    w = random_weights(rng)
    x = digit_like(rng, 1000)
    mlp = make_mlp(w)
    many = run(mlp, x)
    try:
        _cpu.set_thread_cap(1)
        one = run(mlp, x)
    finally:
        _cpu.set_thread_cap(0)
    assert np.array_equal(one, many)
    assert np.array_equal(run(mlp, x[500:517]), many[500:517])


@needs_amx
def test_nan_and_inf_spread_as_in_numpy(rng):
    """A NaN pixel makes its row NaN and no other; an infinite weight meets zero pixels as 0 * Inf = NaN."""
    w = random_weights(rng)
    x = digit_like(rng, 40)
    x[3, 100] = np.nan
    out = run(make_mlp(w), x)
    assert np.isnan(out[3]).all()
    rest = np.delete(np.arange(40), 3)
    assert mlp_bound(w, x[rest], "bf16").ratio(out[rest]) <= 1.0
    w["W1"][0, 5] = np.inf  # pixel 0 is zero in every row
    x = digit_like(rng, 20)
    x[:, 0] = 0.0
    with np.errstate(invalid="ignore"):  # (Model refuses such weights: NumPy's own product says what NaN does)
        h1 = np.maximum(x.astype(np.float64) @ w["W1"] + w["b1"], 0.0)
    assert np.isnan(h1[:, 5]).all()  # and from there every logit, through W2's column of the NaN unit
    out = run(make_mlp(w), x)
    assert np.isnan(out).all()
