"""gemmpad._cuda.Mlp's whole-network kernels against the float64 reference:
every tile configuration, both paths of every fused kernel (sm_90: thread-block
clusters; the sm_80-89 path: global partials + last block), output poisoned
first. native/tools/mlp_probe/check.cu checks every variant too."""

from __future__ import annotations

import numpy as np
import pytest

from gemmpad.runtime import native, registry
from gemmpad.runtime.precision import mlp_bound
from tests.conftest import forward_releases_gil
from tests.runtime.test_classifier import (NOT_AT_MLP_SHAPES, assert_agrees, assert_hidden_agrees, digit_like,
                                           random_model)

pytestmark = pytest.mark.gpu

# Plan edges (fused_dispatch.cu's fused_plan): the split kernel with 1-row tiles of
# 14 blocks up to 4 rows, 2-row tiles of
# 14 blocks to 8, 2-row tiles of 7 blocks to 64. Beyond, with clusters (the H200:
# 15 clusters of 7 at once), the k-split kernel (fused_mlp_ksplit.cu) with 16-row
# tiles to 240, 32-row to 480, 64-row to 960, then the row-block kernel
# (fused_mlp_tc.cu), 32-row tiles from 3072. Without clusters: 4-row FMA tiles
# to 128, 16-row tensor-core split tiles, the row-block kernel from 384 rows
# (tf32) / 1024 rows (fp32). Up to 64 rows the split kernel reads x from mapped
# host memory by slices over its cluster, and the host spins on the mapped output.
BATCHES = (1, 2, 3, 4, 5, 8, 9, 16, 17, 33, 64, 65, 128, 129, 240, 241, 256, 257, 300, 383, 384, 480, 481, 960, 961,
           1023, 1024, 1025, 3071, 3072, 4096)


@pytest.fixture
def cuda_mod():
    mod = native.cuda_module_if_built()
    if mod is None or not hasattr(mod, "Mlp"):
        pytest.skip("no CUDA build of gemmpad")
    return mod


def _clusters_run(cuda_mod, clusters: bool) -> bool:
    """Whether asking for thread-block clusters gets them here: sm_90 only (set_fused_clusters)."""
    return clusters and float(cuda_mod.status()["compute_capability"]) >= 9.0


def _mlp(cuda_mod, model):
    w = model.weights
    return cuda_mod.Mlp(w["W1"], w["b1"], w["W2"], w["b2"], w["W3"], w["b3"])


def _inputs(rng: np.random.Generator, batch: int) -> np.ndarray:
    """Digit-like rows, plus a dense row and a blank one (softmax of the biases alone)."""
    x = digit_like(rng, batch)
    x[0] = rng.uniform(0, 1, 784)
    if batch > 2:
        x[-1] = 0.0
    return x


def _check(mlp, model, kernel: str, precision: str, rng: np.random.Generator, batches=BATCHES) -> None:
    for batch in batches:
        x = _inputs(rng, batch)
        out = np.full((batch, 10), np.nan, dtype=np.float32)
        e_us = mlp.forward(x, out, kernel)
        assert mlp.kernel_us() > 0 and e_us > 0
        assert_agrees(out, model, x, precision, f"{kernel} batch {batch}")


@pytest.mark.parametrize("clusters", [True, False])
def test_fused_both_paths_every_tile(cuda_mod, clusters, rng):
    model = random_model(rng)
    mlp = _mlp(cuda_mod, model)
    before = cuda_mod.set_fused_clusters(clusters)
    try:
        _check(mlp, model, "cuda.mlp_fused", "fp32", rng)
        _check(mlp, model, "cuda.mlp_fused", "fp32", rng, batches=(1,))  # the split kernel ran last
        assert cuda_mod.fused_used_clusters() == _clusters_run(cuda_mod, clusters)  # each case ran the path it names
    finally:
        cuda_mod.set_fused_clusters(before)


def test_fused_paths_interleaved_reuse_counters_and_scratch(cuda_mod, rng):
    """Alternating paths and shrinking/growing batches: the fallback's arrival
    counters must be back at zero after every launch, whatever ran before."""
    model = random_model(rng)
    mlp = _mlp(cuda_mod, model)
    before = cuda_mod.set_fused_clusters(True)
    try:
        for clusters, batch in [(False, 4096), (True, 1), (False, 1), (False, 33), (True, 4096), (False, 7), (False, 7),
                                (True, 300), (False, 300), (True, 2)]:
            cuda_mod.set_fused_clusters(clusters)
            _check(mlp, model, "cuda.mlp_fused", "fp32", rng, batches=(batch,))
    finally:
        cuda_mod.set_fused_clusters(before)


@pytest.mark.parametrize("kernel", ["cuda.mlp_fused_3xtf32", "cuda.mlp_fused_tf32"])
def test_tensor_core_fused_every_tile(cuda_mod, kernel, rng):
    model = random_model(rng)
    _check(_mlp(cuda_mod, model), model, kernel, registry.get(kernel).precision, rng)


@pytest.mark.parametrize("w1_scale", [2.0**20, 2.0**-20])
def test_tf32_fused_w1_outside_fp16_range(cuda_mod, w1_scale, rng):
    """The tf32 k-split kernel reads W1 as fp16 scaled by a power of two (weights.cu's
    tf32_as_half): weights far above fp16's largest value or below its smallest
    normal one must come out as they do in fp32. W2 takes the inverse scale, so
    the network computes the same function (ReLU commutes with positive scales)."""
    model = random_model(rng)
    w = model.weights
    w["W1"] = (w["W1"] * w1_scale).astype(np.float32)
    w["b1"] = (w["b1"] * w1_scale).astype(np.float32)
    w["W2"] = (w["W2"] / w1_scale).astype(np.float32)
    _check(_mlp(cuda_mod, model), model, "cuda.mlp_fused_tf32", "tf32", rng, batches=(1, 65, 240, 256, 480, 960))


@pytest.mark.parametrize("clusters", [True, False])
@pytest.mark.parametrize("kernel", ["cuda.mlp_fused", "cuda.mlp_fused_3xtf32", "cuda.mlp_fused_tf32"])
def test_fused_nan_input_row_gives_nan_row(cuda_mod, kernel, clusters, rng):
    """A NaN pixel makes its row's probabilities NaN and leaves the other rows
    right, in every design: the tensor-core kernels round activations to tf32
    with integer ops, which would turn CUDA's NaN (0x7fffffff) into -0."""
    model = random_model(rng)
    mlp = _mlp(cuda_mod, model)
    before = cuda_mod.set_fused_clusters(clusters)
    try:
        for batch in (1, 2, 300, 1024, 4096):
            x = _inputs(rng, batch)
            bad = batch // 2
            x[bad, 400] = np.nan
            out = np.full((batch, 10), -1.0, dtype=np.float32)
            mlp.forward(x, out, kernel)
            assert np.isnan(out[bad]).all(), f"{kernel} batch {batch}: {out[bad]}"
            keep = np.arange(batch) != bad
            if keep.any():
                assert_agrees(out[keep], model, x[keep], registry.get(kernel).precision,
                              f"{kernel} batch {batch}")
    finally:
        cuda_mod.set_fused_clusters(before)


FUSED = ("cuda.mlp_fused", "cuda.mlp_fused_3xtf32", "cuda.mlp_fused_tf32")
# Every design the plans reach with clusters (split 1/2/4/16-row tiles, k-split 16/32/64, row
# blocks 16/32) and without (split FMA and tensor-core tiles, row blocks), partial tiles included.
HIDDEN_BATCHES = (1, 3, 5, 9, 17, 64, 65, 129, 241, 300, 481, 961, 1025, 2000, 3073)


def _rungs() -> list[str]:
    """The CUDA GEMM rungs whose step takes the MLP's layers (NOT_AT_MLP_SHAPES: the others refuse them)."""
    return [s.name for s in registry.kernels(device="cuda", kind="gemm")
            if s.available and not s.name.startswith(tuple(NOT_AT_MLP_SHAPES))]


@pytest.mark.parametrize("clusters", [True, False])
@pytest.mark.parametrize("kernel", FUSED)
def test_fused_hidden_layers_are_the_kernels_own(cuda_mod, kernel, clusters, rng):
    """h1/h2 asked of a fused kernel: poisoned with NaN, every value overwritten by what the kernel
    computed (within its precision's bound of float64), probabilities as without asking; then a
    plain call again (the graph without the hidden stores is recaptured)."""
    model = random_model(rng)
    mlp = _mlp(cuda_mod, model)
    precision = registry.get(kernel).precision
    before = cuda_mod.set_fused_clusters(clusters)
    try:
        for batch in HIDDEN_BATCHES:
            x = _inputs(rng, batch)
            out = np.full((batch, 10), np.nan, dtype=np.float32)
            h1, h2 = np.full((batch, 100), np.nan, np.float32), np.full((batch, 100), np.nan, np.float32)
            mlp.forward(x, out, kernel, h1=h1, h2=h2)
            assert mlp.kernel_us() > 0
            assert_agrees(out, model, x, precision, f"{kernel} batch {batch} (hidden asked)")
            assert_hidden_agrees(h1, h2, model.weights, x, precision, f"{kernel} batch {batch}")
            only = np.full((batch, 100), np.nan, np.float32)
            mlp.forward(x, out, kernel, h2=only)
            assert np.array_equal(only, h2), f"{kernel} batch {batch}: h2 alone differs"
            _check(mlp, model, kernel, precision, rng, batches=(batch,))
    finally:
        cuda_mod.set_fused_clusters(before)


def test_layer_by_layer_hidden_layers_are_the_rungs_own(cuda_mod, rng):
    """Every CUDA GEMM rung run layer by layer hands back the h1/h2 its own GEMMs wrote."""
    model = random_model(rng)
    mlp = _mlp(cuda_mod, model)
    for kernel in _rungs():
        precision = registry.get(kernel).precision
        for batch in (1, 7, 300):
            x = _inputs(rng, batch)
            out = np.full((batch, 10), np.nan, dtype=np.float32)
            h1, h2 = np.full((batch, 100), np.nan, np.float32), np.full((batch, 100), np.nan, np.float32)
            mlp.forward(x, out, kernel, h1=h1, h2=h2)
            assert_agrees(out, model, x, precision, f"{kernel} batch {batch}")
            assert_hidden_agrees(h1, h2, model.weights, x, precision, f"{kernel} batch {batch}")


U8_BATCHES = (1, 3, 64, 65, 256, 257, 513, 1025, 4097)  # around the default mapped limits too


@pytest.mark.parametrize("kernel", FUSED + ("cuda.06_vectorized",))
def test_u8_input_is_the_float_path_on_x_over_255(cuda_mod, kernel, rng):
    """forward_u8: bytes over PCIe (read through the mapping up to mapped_u8_rows, copied beyond), made
    into x * float32(1/255) on the GPU (by the split kernel's slices and the k-split kernel as they
    load, else by a conversion kernel), as gemmpad.inputs.preprocess scales uint8 images. Its answer
    must be the float path's on those floats (within the precision's bound of float64), hidden
    layers included; float and 8-bit calls interleave on one object (separate graphs)."""
    model = random_model(rng)
    mlp = _mlp(cuda_mod, model)
    precision = registry.get(kernel).precision
    for batch in U8_BATCHES:
        x8 = rng.integers(0, 256, (batch, 784), dtype=np.uint8)
        x8[rng.random(x8.shape) < 0.8] = 0
        xf = x8.astype(np.float32) * np.float32(1.0 / 255.0)
        want = np.full((batch, 10), np.nan, dtype=np.float32)
        mlp.forward(xf, want, kernel)
        got = np.full((batch, 10), np.nan, dtype=np.float32)
        h1 = np.full((batch, 100), np.nan, np.float32)
        mlp.forward_u8(x8, got, kernel, h1=h1)
        assert_agrees(got, model, xf, precision, f"{kernel} batch {batch} (uint8)")
        got2 = np.full((batch, 10), np.nan, dtype=np.float32)
        mlp.forward_u8(x8, got2, kernel)
        assert_agrees(got2, model, xf, precision, f"{kernel} batch {batch} (uint8, no hidden)")
        # both within the bound of float64, so within twice it of each other, value by value
        assert (np.abs(got2 - want) <= 2 * mlp_bound(model.weights, xf, precision).prob_bound).all()
        assert not np.isnan(h1).any()


def test_u8_and_hidden_arguments_checked(cuda_mod, rng):
    mlp = _mlp(cuda_mod, random_model(rng))
    out = np.zeros((2, 10), np.float32)
    with pytest.raises(ValueError, match="uint8"):
        mlp.forward_u8(np.zeros((2, 784), np.float32), out)
    with pytest.raises(ValueError, match=r"\(B, 784\)"):
        mlp.forward_u8(np.zeros((2, 783), np.uint8), out)
    with pytest.raises(ValueError, match=r"h1 must have shape \(2, 100\)"):
        mlp.forward(np.zeros((2, 784), np.float32), out, h1=np.zeros((2, 99), np.float32))
    with pytest.raises(ValueError, match="h2 must be a C-contiguous float32"):
        mlp.forward(np.zeros((2, 784), np.float32), out, h2=np.zeros((2, 100)))
    both = np.zeros((2, 100), np.float32)
    with pytest.raises(ValueError, match="must not overlap"):
        mlp.forward(np.zeros((2, 784), np.float32), out, h1=both, h2=both)


RESIDENT = "cuda.mlp_resident"


@pytest.fixture(params=[True, False], ids=["cluster", "one-block"])
def resident_blocks(request, cuda_mod):
    """Both designs of the persistent kernel: a cluster of four blocks holding W1 (sm_90), and the
    one block that reads W1 through L2 (what other GPUs run; set_fused_clusters(False) on Hopper).
    Yields the blocks the design must report."""
    before = cuda_mod.set_fused_clusters(request.param)
    try:
        yield 4 if _clusters_run(cuda_mod, request.param) else 1
    finally:
        cuda_mod.set_fused_clusters(before)


def test_resident_matches_float64_and_fused(cuda_mod, resident_blocks, rng):
    """The persistent kernel (8 rows per request: larger batches go as several), against float64
    and beside cuda.mlp_fused: probabilities, its own hidden layers, 8-bit input; NaN pixels."""
    model = random_model(rng)
    mlp = _mlp(cuda_mod, model)
    try:
        mlp.resident_start()
        assert mlp.resident_blocks == resident_blocks  # the design the case names
        for batch in (1, 2, 7, 8, 9, 17, 300):
            x = _inputs(rng, batch)
            fused = np.full((batch, 10), np.nan, dtype=np.float32)
            mlp.forward(x, fused, "cuda.mlp_fused")
            out = np.full((batch, 10), np.nan, dtype=np.float32)
            e_us = mlp.forward(x, out, RESIDENT)
            assert mlp.resident_running and e_us > 0 and mlp.kernel_us() > 0
            assert_agrees(out, model, x, "fp32", f"resident batch {batch}")
            assert (np.abs(out - fused) <= 2 * mlp_bound(model.weights, x, "fp32").prob_bound).all()
            h1, h2 = np.full((batch, 100), np.nan, np.float32), np.full((batch, 100), np.nan, np.float32)
            mlp.forward(x, out, RESIDENT, h1=h1, h2=h2)
            assert_hidden_agrees(h1, h2, model.weights, x, "fp32", f"resident batch {batch}")
            x8 = (x * 255).round().astype(np.uint8)
            mlp.forward_u8(x8, out, RESIDENT)
            assert_agrees(out, model, x8.astype(np.float32) * np.float32(1 / 255), "fp32", f"resident u8 {batch}")
        x = _inputs(rng, 3)
        x[1, 300] = np.nan
        out = np.zeros((3, 10), np.float32)
        mlp.forward(x, out, RESIDENT)
        assert np.isnan(out[1]).all() and not np.isnan(out[[0, 2]]).any()
    finally:
        mlp.resident_stop()
    assert not mlp.resident_running


def test_resident_with_non_finite_weights_skips_no_rows(cuda_mod, resident_blocks, rng):
    """0 * Inf is NaN: with an Inf in W1 the kernel must not skip zero pixels (as cpu.mlp_sparse)."""
    model = random_model(rng)
    w1 = model.weights["W1"].copy()
    w1[5, 3] = np.inf
    model.weights["W1"] = w1
    mlp = _mlp(cuda_mod, model)
    try:
        x = _inputs(rng, 2)
        x[:, 5] = 0.0
        out = np.zeros((2, 10), np.float32)
        mlp.forward(x, out, RESIDENT)
        ref = np.zeros_like(out)
        mlp.forward(x, ref, "cuda.mlp_fused")
        np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
        assert np.isnan(out).all()
    finally:
        mlp.resident_stop()


def test_resident_start_stop_restart(cuda_mod, resident_blocks, rng):
    """Twenty start / answer / stop cycles on one object; stop is idempotent; the fused path and
    buffer growth in between (the object stops its kernel before it frees anything)."""
    model = random_model(rng)
    mlp = _mlp(cuda_mod, model)
    x = _inputs(rng, 1)
    for i in range(20):
        mlp.resident_start()
        mlp.resident_start()  # already running: nothing happens
        assert mlp.resident_running
        out = np.full((1, 10), np.nan, dtype=np.float32)
        mlp.forward(x, out, RESIDENT)
        assert_agrees(out, model, x, "fp32", f"cycle {i}")
        if i % 5 == 4:  # another kernel at a new batch: buffers grow, which stops the resident kernel first
            big = _inputs(rng, 64 * (i + 1))
            mlp.forward(big, np.zeros((len(big), 10), np.float32), "cuda.mlp_fused")
            assert not mlp.resident_running
        mlp.resident_stop()
        mlp.resident_stop()
        assert not mlp.resident_running
    with pytest.raises(ValueError, match="timeout_s"):
        mlp.resident_stop(0.0)


def test_resident_leaves_the_gpu_to_other_work(cuda_mod, resident_blocks, rng):
    """While one object's persistent kernel holds its SM, another object's fused kernels and the
    GEMM rungs still run (their buffers set up before: frees stop it, resident.cuh), and both
    answer right."""
    from gemmpad.runtime.gemm import gemm

    model = random_model(rng)
    a, b = _mlp(cuda_mod, model), _mlp(cuda_mod, model)
    xs = {n: _inputs(rng, n) for n in (1, 300)}
    outs = {n: np.zeros((n, 10), np.float32) for n in xs}
    for n, x in xs.items():  # set-up first
        b.forward(x, outs[n], "cuda.mlp_fused")
    rung = "cuda.06_vectorized"  # an fp32 rung that takes any shape
    m1 = rng.standard_normal((64, 96)).astype(np.float32)
    m2 = rng.standard_normal((96, 80)).astype(np.float32)
    gemm(m1, m2, kernel=rung)
    a.resident_start()
    try:
        for _ in range(5):
            for n, x in xs.items():
                b.forward(x, outs[n], "cuda.mlp_fused")
                assert_agrees(outs[n], model, x, "fp32", f"fused batch {n} beside the resident kernel")
                mine = np.zeros((1, 10), np.float32)
                a.forward(x[:1], mine, RESIDENT)
                assert_agrees(mine, model, x[:1], "fp32", "resident beside fused")
            c = gemm(m1, m2, kernel=rung)
            assert np.allclose(c, m1.astype(np.float64) @ m2, rtol=1e-2, atol=1e-2)
        assert a.resident_running
    finally:
        a.resident_stop()


def test_resident_answers_after_idle_and_across_designs(cuda_mod, rng):
    """Past its hot window (20 ms without a request) the kernel watches the control word alone and
    reads x one round trip later: answers stay right after idle gaps. Switching designs
    (set_fused_clusters) restarts it with the other one; every answer is checked."""
    import time

    model = random_model(rng)
    mlp = _mlp(cuda_mod, model)
    before = cuda_mod.set_fused_clusters(True)
    try:
        for clusters, gap_s in ((True, 0.0), (True, 0.03), (False, 0.03), (True, 0.001), (False, 0.0)):
            cuda_mod.set_fused_clusters(clusters)
            for i in range(4):
                x = _inputs(rng, 1 + 3 * i)
                out = np.full((len(x), 10), np.nan, np.float32)
                time.sleep(gap_s)
                mlp.forward(x, out, RESIDENT)
                assert mlp.resident_blocks == (4 if _clusters_run(cuda_mod, clusters) else 1)
                assert_agrees(out, model, x, "fp32", f"resident after {gap_s} s idle, clusters {clusters}")
    finally:
        mlp.resident_stop()
        cuda_mod.set_fused_clusters(before)


def test_resident_returns_when_idle_and_comes_back(cuda_mod, resident_blocks, rng):
    """idle_exit_s: the kernel returns after that long without a request (leaving the GPU to other
    contexts) and the next call starts it again. Gaps around the threshold race an exit against a
    request (the host then starts it again and it takes the request): every answer stays right."""
    import time

    model = random_model(rng)
    mlp = _mlp(cuda_mod, model)
    try:
        mlp.resident_start(idle_exit_s=0.05)
        x = _inputs(rng, 1)
        out = np.full((1, 10), np.nan, np.float32)
        mlp.forward(x, out, RESIDENT)
        assert not mlp.resident_idle
        time.sleep(0.3)
        assert mlp.resident_running and mlp.resident_idle
        mlp.forward(x, out, RESIDENT)
        assert_agrees(out, model, x, "fp32", "resident after its idle exit")
        assert not mlp.resident_idle and mlp.resident_blocks == resident_blocks
        for i, gap_s in enumerate(np.linspace(0.04, 0.07, 16)):  # hot for 20 ms, returns after 50 ms idle
            time.sleep(gap_s)
            x = _inputs(rng, 1 + i % 10)
            out = np.full((len(x), 10), np.nan, np.float32)
            mlp.forward(x, out, RESIDENT)
            assert_agrees(out, model, x, "fp32", f"resident {gap_s:.3f} s after the last request")
        mlp.resident_start(idle_exit_s=0)  # never: a new kernel that stays
        time.sleep(0.3)
        assert mlp.resident_running and not mlp.resident_idle
        with pytest.raises(ValueError, match="idle_exit_s"):
            mlp.resident_start(idle_exit_s=-1.0)
    finally:
        mlp.resident_stop()
    assert not mlp.resident_running and not mlp.resident_idle


def test_another_objects_frees_stop_the_resident_kernel_first(cuda_mod, rng):
    """A free (or pinned allocation) may wait for every kernel on the device, and a resident one
    never ends: another object growing its buffers, or going, stops it first (no hang), and its
    own object starts a new one on the next call."""
    model = random_model(rng)
    a = _mlp(cuda_mod, model)
    x = _inputs(rng, 1)
    out = np.zeros((1, 10), np.float32)
    a.forward(x, out, RESIDENT)
    b = _mlp(cuda_mod, model)
    for batch in (1, 500, 2000):  # b's buffers grow: frees and pinned allocations
        b.forward(_inputs(rng, batch), np.zeros((batch, 10), np.float32), "cuda.mlp_fused")
    assert not a.resident_running
    a.forward(x, out, RESIDENT)
    assert a.resident_running
    assert_agrees(out, model, x, "fp32", "resident restarted")
    del b  # its frees stop a's kernel again
    assert not a.resident_running
    a.forward(x, out, RESIDENT)
    assert_agrees(out, model, x, "fp32", "resident restarted again")
    a.resident_stop()


def test_resident_stops_when_the_object_goes():
    """Deleting an Mlp whose persistent kernel runs stops it: a device-wide synchronisation
    afterwards returns (it would wait forever for a kernel left running). In a child with a
    timeout, so that a regression fails instead of hanging the suite."""
    import os
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    import gemmpad

    script = textwrap.dedent("""
        import gc
        import numpy as np
        from gemmpad.runtime import native
        cuda = native.cuda()
        rng = np.random.default_rng(0)
        w = [rng.standard_normal(s).astype(np.float32) * 0.1
             for s in ((784, 100), (100,), (100, 100), (100,), (100, 10), (10,))]
        mlp = cuda.Mlp(*w)
        out = np.zeros((1, 10), np.float32)
        mlp.forward(rng.random((1, 784), dtype=np.float32), out, "cuda.mlp_resident")
        assert mlp.resident_running
        del mlp
        gc.collect()
        name = cuda.kernels()[0]["name"]
        cuda.bench_gemm(name, 64, 64, 64, reps=1, warmup=0, flush_l2=False)  # cudaDeviceSynchronize inside
        print("ok")
    """)
    env = {**os.environ, "PYTHONPATH": str(Path(gemmpad.__file__).resolve().parents[1])}
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["ok"]


def test_kernel_list(cuda_mod):
    names = [k["name"] for k in cuda_mod.mlp_kernels()]
    assert names == ["cuda.mlp_fused_3xtf32", "cuda.mlp_fused_tf32", "cuda.mlp_fused", RESIDENT]
    assert {k["name"]: k["precision"] for k in cuda_mod.mlp_kernels()}["cuda.mlp_fused"] == "fp32"


@pytest.mark.parametrize("kernel", ["cuda.mlp_fused", "cuda.mlp_fused_tf32", "cuda.06_vectorized"])
def test_large_inputs_staged_in_chunks(cuda_mod, kernel, rng):
    """x of at least min_bytes goes to the GPU in chunks over several host threads, the DMAs
    queued over the staged prefix as it grows (staging.cu's stage_chunked). Chunks that split
    rows, a ragged last chunk, chunks of a few KB (hundreds of them, dozens of DMAs), more
    threads than chunks, one thread, and the one-copy path all give the reference's answer."""
    model = random_model(rng)
    mlp = _mlp(cuda_mod, model)
    precision = registry.get(kernel).precision
    for min_bytes, chunk, threads in ((0, 100_003, 3), (0, 1 << 20, 8), (0, 4096 * 784 * 4, 4), (0, 65_536, 1),
                                      (0, 4_099, 6), (1 << 62, 1 << 20, 4)):
        mlp.set_staging(min_bytes, chunk, threads)
        for batch in (65, 129, 1000, 4096):
            x = _inputs(rng, batch)
            out = np.full((batch, 10), np.nan, dtype=np.float32)
            mlp.forward(x, out, kernel)
            assert_agrees(out, model, x, precision,
                          f"{kernel} batch {batch}, chunks of {chunk} bytes over {threads} threads")
            x8 = (x * 255).round().astype(np.uint8)  # 8-bit input goes the same way, a quarter of the bytes
            mlp.forward_u8(x8, out, kernel)
            assert_agrees(out, model, x8.astype(np.float32) * np.float32(1 / 255), precision,
                          f"{kernel} batch {batch} (uint8), chunks of {chunk} bytes over {threads} threads")
    with pytest.raises(ValueError, match="threads >= 1"):
        mlp.set_staging(0, 1 << 20, 0)


@pytest.mark.parametrize("kernel", ["cuda.mlp_fused", "cuda.06_vectorized"])
def test_host_copies_over_the_threads(cuda_mod, kernel, rng):
    """The host's own copies split over the staging threads: input the kernel reads through the mapping
    (from mapped_split_bytes) into pinned memory, and probabilities and hidden layers (from
    out_split_bytes) out to the caller's arrays; chunks that split values, more threads than chunks,
    helpers spinning between jobs or asleep. Every byte as one memcpy writes it, into arrays poisoned first."""
    model = random_model(rng)
    mlp = _mlp(cuda_mod, model)
    default = mlp.staging
    for batch in (1, 65, 200, 1000, 4096):
        x8 = (_inputs(rng, batch) * 255).round().astype(np.uint8)
        mlp.set_staging(**{**default, "mapped_split_bytes": 1 << 62, "out_split_bytes": 1 << 62})
        want = [np.empty((batch, n), np.float32) for n in (10, 100, 100)]
        mlp.forward_u8(x8, *want[:1], kernel, *want[1:])
        for split, chunk, threads, spin in ((1, 4_099, 6, 0), (1024, 65_536, 3, 300), (0, 1 << 20, 8, 50)):
            mlp.set_staging(**{**default, "mapped_split_bytes": split, "out_split_bytes": split, "chunk_bytes": chunk,
                               "threads": threads, "spin_us": spin})
            got_policy = mlp.staging
            assert (got_policy["mapped_split_bytes"], got_policy["out_split_bytes"], got_policy["spin_us"]) == \
                (split, split, spin)
            for hidden in (False, True):
                got = [np.full((batch, n), np.nan, np.float32) for n in (10, 100, 100)]
                mlp.forward_u8(x8, got[0], kernel, *(got[1:] if hidden else ()))
                for g, w in zip(got if hidden else got[:1], want):
                    np.testing.assert_array_equal(g, w, err_msg=f"{kernel} batch {batch}, split from {split} bytes, "
                                                                f"{chunk}-byte chunks over {threads} threads")
    with pytest.raises(ValueError, match="spin_us >= 0"):
        mlp.set_staging(0, 1 << 20, 1, spin_us=-1)


@pytest.mark.parametrize("kernel", ["cuda.mlp_fused", "cuda.mlp_fused_tf32", "cuda.06_vectorized"])
def test_mapped_limits_move_data_either_way(cuda_mod, kernel, rng):
    """The policy's mapped limits pick, per batch, bytes read in place through the mapping or
    copied to the device, and probabilities written to mapped memory (the host spinning on
    markers) or copied back. Every choice on either side of a limit, a mapped input large
    enough to be copied into pinned memory in chunks over threads, and calls that alternate
    policies on one object (graphs keyed by what was decided) give the reference's answer."""
    model = random_model(rng)
    mlp = _mlp(cuda_mod, model)
    default = mlp.staging
    assert default["mapped_u8_rows"] >= 64 and default["mapped_out_rows"] >= 64, default
    precision = registry.get(kernel).precision
    batches = (1, 63, 64, 65, 300, 700, 2049)  # FMA slices, k-split tiles of 16 to 64 rows, the row-block kernel
    xs = {b: _inputs(rng, b) for b in batches}
    for u8_rows, out_rows, chunk in ((0, 0, 1 << 20), (64, 64, 1 << 20), (4096, 4096, 100_003), (300, 65, 65_536),
                                     (default["mapped_u8_rows"], default["mapped_out_rows"], default["chunk_bytes"])):
        mlp.set_staging(0, chunk, 3, mapped_u8_rows=u8_rows, mapped_out_rows=out_rows)
        assert (mlp.staging["mapped_u8_rows"], mlp.staging["mapped_out_rows"]) == (u8_rows, out_rows)
        for batch in batches:
            x8 = (xs[batch] * 255).round().astype(np.uint8)
            for call in ("u8", "f32"):
                out = np.full((batch, 10), np.nan, dtype=np.float32)
                if call == "u8":
                    mlp.forward_u8(x8, out, kernel)
                    x = x8.astype(np.float32) * np.float32(1 / 255)
                else:
                    mlp.forward(xs[batch], out, kernel)
                    x = xs[batch]
                assert_agrees(out, model, x, precision,
                              f"{kernel} batch {batch} ({call}), mapped up to {u8_rows} in / {out_rows} out")
    with pytest.raises(ValueError, match="mapped_u8_rows >= 0"):
        mlp.set_staging(0, 1 << 20, 1, mapped_u8_rows=-1)


def test_forward_keeps_the_gil_for_a_few_rows_only(cuda_mod, rng):
    """As on the CPU (tests/native/test_native_cpu.py): the batch-1 round trip is ~10 us."""
    mlp = _mlp(cuda_mod, random_model(rng))
    for kernel in ("cuda.mlp_fused", "cuda.03_smem_tiled"):
        call = lambda x, out: mlp.forward(x, out, kernel)  # noqa: E731
        assert not forward_releases_gil(call, digit_like(rng, 16)), kernel
        assert forward_releases_gil(call, digit_like(rng, 4096)), kernel
