"""Every rung runs its own kernel or says it is unavailable; dispatchers route and say where.

Issue 41: 17 used to hand large problems to 16/13, 19 to 07, and 14-16 ran the rung before them
where their step did not apply, so a bench row under one rung's name timed another's kernel. Now a
rung raises KernelUnavailable outside its step, and the cuda.auto_* dispatchers do the routing and
report the rung they ran (gemmpad.runtime.registry.dispatched()).
"""

from __future__ import annotations

import numpy as np
import pytest

from gemmpad.runtime import registry
from gemmpad.errors import KernelUnavailable
from tests.conftest import kernel_marks
from tests.runtime.test_gemm import SHAPE_LIMITED, check

pytestmark = pytest.mark.gpu

RUNGS = {s.name: s for s in registry.kernels(device="cuda", kind="gemm") if not s.routes}
AUTO = [pytest.param(s.name, marks=kernel_marks(s), id=s.name)
        for s in registry.kernels(device="cuda", kind="gemm") if s.routes]


# Shapes each shape-limited rung must take (its step applies there) on an H200 (132 SMs): 14-16 need
# at least one 128 x 256 tile per SM (16 x 17 = 272 here) and, for 16, operands TMA reads (fp8's
# are always: A in place or copied with padded rows, B transposed into the workspace).
TAKES = [
    ("cuda.14_persistent_fp16", (2048, 4352, 320)), ("cuda.15_tma_store_fp16", (2048, 4352, 320)),
    ("cuda.16_multicast_fp16", (2048, 4352, 320)), ("cuda.14_persistent_bf16", (2048, 4352, 320)),
    ("cuda.16_multicast_fp16", (2048, 4352, 321)),  # odd K: A copied with padded rows, TMA reads the copy
    ("cuda.15_tma_store_bf16", (2048, 4352, 320)), ("cuda.16_multicast_bf16", (2048, 4352, 320)),
    ("cuda.14_persistent_fp8", (2048, 4352, 320)), ("cuda.15_tma_store_fp8", (2048, 4352, 320)),
    ("cuda.16_multicast_fp8", (2048, 4352, 320)),  # B^T's 256-row tile in two halves, one from each block
    ("cuda.16_multicast_fp8", (2048, 4100, 321)),  # the last tile's second half wholly past N; odd K
    # N = 16 x 256 + 32: the last column of tiles stores one box, so a block's next tile starts on the
    # other slot (slots counted over the tiles, not per tile)
    ("cuda.15_tma_store_bf16", (2048, 4128, 320)), ("cuda.16_multicast_fp8", (2048, 4128, 320)),
    ("cuda.14_persistent_tf32", (2048, 4352, 320)),  # tf32 tiles are 256 x 128: 8 x 34 of them
    ("cuda.15_tma_store_tf32", (2048, 4352, 320)),
    ("cuda.15_tma_store_tf32", (2100, 4132, 322)),  # 36 columns in the last tiles, 52 rows; A and B by cp.async
    ("cuda.15_tma_store_tf32", (2100, 4132, 328)),  # B by the 4-D map: last tiles 36 columns, last k-tile 8 rows
    # tf32's pairs lie side by side (8 x 17 pairs of 256 x 128 tiles) and share A's tile, half from each block
    ("cuda.16_multicast_tf32", (2048, 4352, 320)),
    ("cuda.16_multicast_tf32", (2100, 4100, 328)),  # 33 tile columns: the last pair's second tile wholly past N
    ("cuda.16_multicast_tf32", (2100, 4132, 328)),  # 36 columns in the last tiles, 52 rows, last k-tile 8 rows
    ("cuda.20_fp8_swap", (2048, 4352, 320)),  # fp8 tiles of C^T: 256 x 128, 8 x 34 of them
    ("cuda.20_fp8_swap", (2100, 4132, 336)),  # B's rows 4-byte aligned: cp.async; 36 columns in the last tiles
    ("cuda.20_fp8_swap", (2100, 4128, 322)),  # odd K: A copied with padded rows, B by cp.async (not 16-row groups)
    ("cuda.20_fp8_swap", (2100, 4128, 336)),  # B by the 5-D map: last tiles 32 columns wide, last k-tile 80 rows
    ("cuda.18_wgmma_fp8", (129, 144, 4112)),  # B^T by the 16-byte transpose, partial tiles both ways
    ("cuda.18_wgmma_fp8", (129, 132, 4100)),  # K, N not multiples of 16: B^T a byte at a time
    ("cuda.17_small_tiles_fp16", (4096, 100, 784)), ("cuda.17_small_tiles_tf32", (4096, 100, 784)),
    ("cuda.17_small_tiles_bf16", (2048, 4352, 320)),  # small tiles at a large shape: its own kernel still
    ("cuda.19_simt_ring", (4096, 100, 784)), ("cuda.19_simt_ring", (1024, 1024, 512)),
]
# ... and shapes outside their step, where they must refuse rather than run another rung.
REFUSES = [
    ("cuda.14_persistent_fp16", (4096, 100, 784)),  # 32 tiles: split-K, 10's launch
    ("cuda.15_tma_store_bf16", (2048, 4354, 320)),  # N % 4: no 16-byte rows of C for the TMA store
    ("cuda.15_tma_store_tf32", (2048, 4354, 320)),
    ("cuda.14_persistent_tf32", (4096, 100, 784)),  # 16 tiles of 256 x 128: 13's launch, K split
    ("cuda.16_multicast_fp8", (4096, 100, 784)),  # 32 tiles: 18's launch
    ("cuda.20_fp8_swap", (4096, 100, 784)),  # 16 tiles of 256 x 128
    ("cuda.20_fp8_swap", (2048, 4354, 320)),  # N % 4: no 16-byte rows of C for the TMA store
    ("cuda.16_multicast_fp16", (2048, 4356, 320)),  # B's rows 8-byte aligned, read by cp.async: no multicast
    ("cuda.16_multicast_tf32", (2100, 4132, 322)),  # K not a multiple of 8: B by cp.async, no multicast
    ("cuda.17_small_tiles_fp16", (300, 101, 257)),  # odd K and N: 2-byte-aligned 16-bit rows
    ("cuda.19_simt_ring", (300, 102, 257)),  # K not a multiple of 4: no float4 rows
]


@pytest.mark.parametrize("name,shape", [pytest.param(n, s, marks=kernel_marks(registry.get(n)),
                                                     id=f"{n}-{'x'.join(map(str, s))}") for n, s in TAKES])
def test_a_rung_runs_its_own_step(name: str, shape: tuple[int, int, int], rng: np.random.Generator) -> None:
    assert check(name, *shape, rng), f"{name} refused {shape}, a shape its step is for"


@pytest.mark.parametrize("name,shape", [pytest.param(n, s, marks=kernel_marks(registry.get(n)),
                                                     id=f"{n}-{'x'.join(map(str, s))}") for n, s in REFUSES])
def test_a_rung_outside_its_step_says_unavailable(name: str, shape: tuple[int, int, int],
                                                   rng: np.random.Generator) -> None:
    import gemmpad

    m, n, k = shape
    out = np.full((m, n), np.nan, dtype=np.float32)
    with pytest.raises(KernelUnavailable, match=rf"^{name} unavailable: \S"):
        gemmpad.gemm(rng.uniform(-1, 1, (m, k)).astype(np.float32), rng.uniform(-1, 1, (k, n)).astype(np.float32),
                     kernel=name, out=out)
    assert np.isnan(out).all(), "it refused after writing"


# The dispatchers on the MLP's layers, a large square problem and awkward shapes: the result within
# the precision's bound, and the rung reported one of its routes, of the same precision.
AUTO_SHAPES = [(1, 100, 784), (4096, 100, 784), (4096, 100, 100), (300, 10, 100), (2048, 4352, 320),
               (129, 131, 4099), (300, 101, 257), (1, 1, 1)]


@pytest.mark.parametrize("shape", AUTO_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", AUTO)
def test_a_dispatcher_matches_float64_and_says_which_rung_ran(name: str, shape: tuple[int, int, int],
                                                               rng: np.random.Generator) -> None:
    spec = registry.get(name)
    assert check(name, *shape, rng)
    ran = registry.dispatched()
    assert ran in spec.routes and ran in RUNGS and RUNGS[ran].precision == spec.precision, ran


@pytest.mark.parametrize("shape,rung", [((4096, 100, 784), "cuda.19_simt_ring"),
                                        ((4096, 4096, 512), "cuda.07_warptile"),
                                        ((4096, 102, 784), "cuda.07_warptile")])
def test_auto_fp32_routes_by_shape(shape: tuple[int, int, int], rung: str, rng: np.random.Generator) -> None:
    """The routing of dispatch.cu: 19 where 07's 128 x 256 tiles cannot fill the SMs and the rows are
    float4s (N = 102 is not), else 07."""
    assert check("cuda.auto_fp32", *shape, rng)
    assert registry.dispatched() == rung


def test_gemm_defaults_to_the_fp32_dispatcher(rng: np.random.Generator) -> None:
    import gemmpad

    assert registry.default_gemm("cuda").name == "cuda.auto_fp32"
    a, b = rng.uniform(-1, 1, (64, 48)).astype(np.float32), rng.uniform(-1, 1, (48, 36)).astype(np.float32)
    np.testing.assert_allclose(gemmpad.gemm(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    assert registry.dispatched() in registry.get("cuda.auto_fp32").routes


ANATOMY_KEYS = {"kernel", "block_tile", "warp_tile", "thread_tile", "threads_per_block", "registers_per_thread",
                "static_smem_bytes", "dynamic_smem_bytes", "smem_per_block_bytes", "max_active_blocks_per_sm",
                "occupancy", "grid", "blocks", "cluster"}


@pytest.mark.parametrize("name,shape", [pytest.param(n, s, marks=kernel_marks(registry.get(n)),
                                                     id=f"{n}-{'x'.join(map(str, s))}") for n, s in TAKES])
def test_anatomy_reads_the_compiled_kernel(name: str, shape: tuple[int, int, int]) -> None:
    a = registry.anatomy(name, *shape)
    assert ANATOMY_KEYS <= set(a) and a["source"] == "this GPU"
    assert a["registers_per_thread"] > 0 and a["threads_per_block"] % 32 == 0
    assert a["max_active_blocks_per_sm"] >= 1 and 0 < a["occupancy"] <= 1
    assert a["smem_per_block_bytes"] == a["static_smem_bytes"] + a["dynamic_smem_bytes"]
    assert a["blocks"] >= 1 and "(" not in a["kernel"] and a["kernel"] != "?"


@pytest.mark.parametrize("shape", [(1, 100, 784), (4096, 100, 784), (4096, 4096, 4096)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", [pytest.param(n, marks=kernel_marks(s), id=n) for n, s in RUNGS.items()])
def test_every_rung_has_an_anatomy(name: str, shape: tuple[int, int, int]) -> None:
    """Every CUDA rung says what it launches at the shapes kernel_manifest.py --anatomy records, or
    (14-19 only) that the shape is outside its step."""
    try:
        a = registry.anatomy(name, *shape)
    except KernelUnavailable as exc:
        assert name.startswith(SHAPE_LIMITED), str(exc)
        return
    assert ANATOMY_KEYS <= set(a) and a["registers_per_thread"] > 0 and 0 < a["occupancy"] <= 1


@pytest.mark.parametrize("name,shape", [pytest.param(n, s, marks=kernel_marks(registry.get(n)),
                                                     id=f"{n}-{'x'.join(map(str, s))}") for n, s in REFUSES])
def test_anatomy_outside_a_rungs_step_says_why(name: str, shape: tuple[int, int, int]) -> None:
    # anatomy() lays the operands out as fresh allocations: only the shape can make it refuse
    m, n, k = shape
    with pytest.raises(KernelUnavailable, match=rf"^{name} unavailable: "):
        registry.anatomy(name, m, n, k)
