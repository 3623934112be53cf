"""Tensor-core kernels (08 WMMA, 09 mma.sync) on the paths test_gemm's small shapes miss.

test_gemm.py already runs every kernel on awkward shapes up to ~150 and the MLP
layers. These add the cases that pick a different code path inside 08/09:
16-byte cp.async copies (K and N multiples of 8), split-K with its workspace and
reduction kernel (few output tiles, long K), several k-tiles per pipeline stage
ring, and bit-for-bit repeatability of the split-K reduction.
"""

from __future__ import annotations

import numpy as np
import pytest

import gemmpad
from gemmpad import registry
from tests.conftest import rel_error
from tests.test_gemm import check, reference

TC = [s.name for s in registry.kernels(device="cuda", kind="gemm") if s.step[:2] in ("08", "09")]

pytestmark = pytest.mark.gpu

# (M, N, K) and the 09 path they take on a GPU with ~100+ SMs:
SHAPES = [
    (2048, 2048, 256),  # aligned cp.async, 256 tiles: no split, 8 (fp16) / 16 (tf32) pipeline turns
    (1000, 1024, 1000),  # aligned, 64 tiles: split-K
    (1, 8, 4096),  # one row, aligned, split-K over 16 slices
    (513, 264, 2056),  # aligned, partial tiles in M and N, split-K
    (300, 200, 1001),  # K odd: element-wise loader, split-K
    (129, 131, 4099),  # everything odd, long K
]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", TC)
def test_tensor_core_paths(name: str, shape: tuple[int, int, int], rng: np.random.Generator) -> None:
    m, n, k = shape
    check(name, m, n, k, rng)
    check(name, m, n, k, rng, bias=False, activation=None)


@pytest.mark.parametrize("name", TC)
def test_split_k_is_deterministic(name: str, rng: np.random.Generator) -> None:
    """The split-K slices are summed in a fixed order: same input, same bits."""
    a = rng.uniform(-1, 1, (200, 3000)).astype(np.float32)
    b = rng.uniform(-1, 1, (3000, 136)).astype(np.float32)
    first = gemmpad.gemm(a, b, kernel=name)
    for _ in range(3):
        assert np.array_equal(gemmpad.gemm(a, b, kernel=name), first)


@pytest.mark.parametrize("name", TC)
def test_nan_through_split_k(name: str, rng: np.random.Generator) -> None:
    """NaN in A survives the partial sums and the reduction's ReLU."""
    a = rng.uniform(-1, 1, (9, 2048)).astype(np.float32)
    b = rng.uniform(-1, 1, (2048, 24)).astype(np.float32)
    bias = rng.uniform(-1, 1, 24).astype(np.float32)
    a[2, 1500] = np.nan
    out = gemmpad.gemm(a, b, bias=bias, activation="relu", kernel=name)
    assert np.isnan(out[2]).all()
    ok = [r for r in range(9) if r != 2]
    ref = reference(a[ok], b, bias, "relu")
    assert rel_error(out[ok], ref) <= 5e-3
