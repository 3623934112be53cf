"""Tensor-core kernels (08 WMMA, 09 mma.sync, 10 wgmma) on the paths test_gemm's small shapes miss.

test_gemm.py already runs every kernel on awkward shapes up to ~150 and the MLP
layers. These add the cases that pick a different code path inside 08-10:
16-byte cp.async copies and TMA boxes (K and N multiples of 8), split-K with its
workspace and reduction kernel (few output tiles, long K), several k-tiles per
pipeline stage ring, partial TMA boxes, and bit-for-bit repeatability.
"""

from __future__ import annotations

import numpy as np
import pytest

import gemmpad
from gemmpad import registry
from tests.conftest import gemm_error, kernel_marks, rel_error
from tests.test_gemm import check, reference

TC = [
    pytest.param(s.name, marks=kernel_marks(s), id=s.name)
    for s in registry.kernels(device="cuda", kind="gemm")
    if s.step[:2] in ("08", "09", "10")
]
WGMMA = [p for p in TC if p.id == "cuda.10_wgmma_fp16"]

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
    """The split-K slices are summed in a fixed order: same input, same bits. Every call
    writes into a NaN-poisoned array, so a call that wrote nothing cannot pass."""
    a = rng.uniform(-1, 1, (200, 3000)).astype(np.float32)
    b = rng.uniform(-1, 1, (3000, 136)).astype(np.float32)
    first = gemmpad.gemm(a, b, kernel=name, out=np.full((200, 136), np.nan, np.float32))
    assert gemm_error(first, reference(a, b, None, None), a, b, None) <= 5e-3
    for _ in range(3):
        again = gemmpad.gemm(a, b, kernel=name, out=np.full((200, 136), np.nan, np.float32))
        assert np.array_equal(again, first)


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


# cuda.10 runs its TMA path when K and N are multiples of 8: block tiles of
# 128x256, k-tiles of 64, 4 pipeline stages. Shapes around every one of those edges.
WGMMA_SHAPES = [
    (1, 8, 8),  # one element row, one partial k-tile, boxes mostly out of range
    (128, 256, 64),  # exactly one tile, one k-tile
    (129, 264, 72),  # one row / one 8-column chunk / one 8-deep k slice past the tile edges
    (64, 512, 64 * 4),  # the stage ring filled exactly once
    (300, 200, 64 * 5 + 8),  # ring wraps, partial last k-tile, N inside one tile
    (1024, 1024, 768),  # the seed's table size
    (17, 1032, 4096),  # long K, many stage reuses, N just past 4 tiles
]


@pytest.mark.parametrize("shape", WGMMA_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", WGMMA)
def test_wgmma_tma_path(name: str, shape: tuple[int, int, int], rng: np.random.Generator) -> None:
    m, n, k = shape
    check(name, m, n, k, rng)
    check(name, m, n, k, rng, bias=False, activation=None)


@pytest.mark.parametrize("name", WGMMA)
def test_wgmma_random_aligned_shapes(name: str, rng: np.random.Generator) -> None:
    """Random shapes that all take the TMA path (test_gemm's mostly fall back to 09)."""
    for i in range(60):
        m = int(rng.integers(1, 700))
        n, k = (8 * int(x) for x in rng.integers(1, 70, size=2))
        check(name, m, n, k, rng, bias=bool(i % 2), activation="relu" if i % 3 else None)
