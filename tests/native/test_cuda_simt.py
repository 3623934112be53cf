"""The fp32 SIMT rungs 02-07 and 19: what tests/runtime/test_gemm.py's shapes do not reach.

test_gemm.py checks every kernel on shapes up to 150 and the MLP layers. The
tiled kernels have paths that only larger or specially chosen shapes take:
several 128-wide tiles with a partial last one, a K that ends inside the
double-buffered pipeline, the float4 path (K and N multiples of 4) next
to its scalar fallback on the same sizes, and 07's 128x256 tiling, which it
only picks when the problem has at least as many such tiles as the GPU has SMs,
and its split 128x128 tiling, picked when 8 times the 128x128 tiles reach the SM count.
19 runs its cp.async ring wherever the rows are 16-byte multiples (the float4 shapes below) and
says it is unavailable for the rest (the scalar shapes), rather than hand them to 07.
"""

from __future__ import annotations

import numpy as np
import pytest

import gemmpad
from gemmpad.runtime import native, registry
from gemmpad.errors import KernelUnavailable
from tests.conftest import assert_within_bound

LADDER = ["cuda.02_coalesced", "cuda.03_smem_tiled", "cuda.04_wpt_1d", "cuda.05_regblock_2d",
          "cuda.06_vectorized", "cuda.07_warptile", "cuda.19_simt_ring"]

# (M, N, K). Pairs differ only in divisibility by 4, so the float4 path of 06/07
# and its scalar fallback see the same tiling.
SHAPES = [
    (257, 260, 1000),  # float4 path; partial last tile in M, N; K a multiple of 4 but not of 8
    (257, 261, 1001),  # scalar fallback, same tiling
    (129, 132, 4),     # K shorter than one K slice (float4 path)
    (129, 131, 3),     # same, scalar
    (384, 256, 16),    # exact tiles, two K slices: the double buffer swaps once
    (5, 388, 2052),    # long K, one row band: many pipeline steps
    (1, 128, 129),     # single row, K one past two slices
    (2049, 2308, 36),  # 17 x 10 tiles of 128x256: 07's large tiling on GPUs with <= 170 SMs (float4 path)
    (2049, 2309, 37),  # same tiling, scalar fallback
    (2049, 100, 784),  # 17 tiles of 128x128: 07 splits K 8 ways in clusters on sm_90 with 132 SMs (float4 path)
    (2049, 97, 1031),  # same tiling, scalar fallback, slices of uneven length
    (4096, 100, 100),  # 256 tiles of 64x32 and a short K: 07 does not split (float4 path)
    (4097, 101, 99),  # same tiling, scalar fallback
]


def _reference(a: np.ndarray, b: np.ndarray, bias: np.ndarray) -> np.ndarray:
    return np.maximum(a.astype(np.float64) @ b.astype(np.float64) + bias, 0.0)


@pytest.mark.skipif(native.cuda_module_if_built() is None, reason="CUDA module not built")
def test_ladder_is_registered_in_order():
    names = [s.name for s in registry.kernels(device="cuda", kind="gemm") if s.precision == "fp32"]
    assert [n for n in names if n in LADDER] == LADDER
    for name in LADDER:
        assert registry.get(name).source.endswith(name.split(".", 1)[1] + ".cu")


@pytest.mark.gpu
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", LADDER)
def test_tile_edges(name: str, shape: tuple[int, int, int], rng: np.random.Generator) -> None:
    m, n, k = shape
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    bias = rng.uniform(-1, 1, n).astype(np.float32)
    out = np.full((m, n), np.nan, dtype=np.float32)
    if name == "cuda.19_simt_ring" and (k % 4 or n % 4):
        with pytest.raises(KernelUnavailable, match="cuda.19_simt_ring unavailable: .*multiples of 4"):
            gemmpad.gemm(a, b, bias=bias, activation="relu", kernel=name, out=out)
        assert np.isnan(out).all()
        return
    gemmpad.gemm(a, b, bias=bias, activation="relu", kernel=name, out=out)
    assert_within_bound(out, _reference(a, b, bias), a, b, bias, "fp32", f"{name} {m}x{n}x{k}")


@pytest.mark.gpu
@pytest.mark.parametrize("name", LADDER)
def test_nan_in_bias_stays_nan_through_relu(name: str, rng: np.random.Generator) -> None:
    """The fused epilogue must not turn NaN into 0 (max(NaN, 0) is NaN in NumPy)."""
    m, n, k = 130, 132, 12
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    bias = rng.uniform(-1, 1, n).astype(np.float32)
    bias[[0, 77, 131]] = np.nan
    out = gemmpad.gemm(a, b, bias=bias, activation="relu", kernel=name)
    assert np.isnan(out[:, [0, 77, 131]]).all()
    keep = [c for c in range(n) if c not in (0, 77, 131)]
    assert_within_bound(out[:, keep], _reference(a, b[:, keep], bias[keep]), a, b[:, keep], bias[keep], "fp32", name)
