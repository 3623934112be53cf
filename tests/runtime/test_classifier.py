"""The Classifier: every backend and kernel against the float64 NumPy reference,
timing records, live switching, and the errors a user can cause."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from gemmpad.runtime import native, registry
from gemmpad.runtime.classifier import BACKENDS, MAX_ROWS, Classifier, Prediction, Timing, available_backends, jitter
from gemmpad.errors import CudaUnavailable, GemmpadError, InputShapeError, InputTypeError
from gemmpad.runtime.model import SHAPES, Model, default_model_path, load_model
from gemmpad.runtime.precision import gemm_bound, mlp_bound
from tests.conftest import kernel_marks, rel_error
from tests.mnist_data import mnist_dir

# Seeds that once failed a check, kept as fixed cases beside a fresh random one: 738987553 flipped a
# digit of cuda.18_wgmma_fp8 on MNIST under the fixed tolerances these checks used before (H200, 2026-11-29).
FIXED_SEEDS = [738987553]
# Seeds under which cuda.09_mma_fp16 and cuda.10_wgmma_fp16 handed back h2 at 12x the fp16 bound (H200,
# 2026-11-29 13:10 UTC). Not the seeds: a race in Mlp's constructor (test_a_fresh_classifier_...).
HIDDEN_SEEDS = [2751392137, 3385691121]
AVAILABLE = available_backends()
CPU_MLP_REASON = AVAILABLE["cpu"]


def random_model(rng: np.random.Generator) -> Model:
    """He-initialised random weights: tests must not depend on the shipped file."""
    w = {}
    for name, shape in SHAPES.items():
        scale = np.sqrt(2.0 / shape[0]) if len(shape) == 2 else 0.1
        w[name] = rng.normal(0.0, scale, shape).astype(np.float32)
    return Model(weights=w)


def digit_like(rng: np.random.Generator, batch: int) -> np.ndarray:
    x = rng.uniform(0.0, 1.0, (batch, 784)).astype(np.float32)
    x[rng.random((batch, 784)) > 0.2] = 0.0
    return x


def reference(model: Model, x: np.ndarray) -> np.ndarray:
    w = {k: v.astype(np.float64) for k, v in model.weights.items()}
    h = np.maximum(x.astype(np.float64) @ w["W1"] + w["b1"], 0.0)
    h = np.maximum(h @ w["W2"] + w["b2"], 0.0)
    z = h @ w["W3"] + w["b3"]
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# The rungs whose step the MLP's layers are outside of: there they raise KernelUnavailable rather
# than run another rung's kernel (tests/native/test_cuda_ladder.py checks both sides of each limit).
NOT_AT_MLP_SHAPES = {
    "cuda.14_": "its step needs more tiles than the MLP's layers have",  # a wave of 128 x 256 tiles
    "cuda.15_": "its step needs more tiles than the MLP's layers have",
    "cuda.16_": "its step needs more tiles than the MLP's layers have",
    "cuda.20_": "its step needs more tiles than the MLP's layers have",  # 15's steps on 256 x 128 tiles
    "cuda.19_": "its float4 rows need N a multiple of 4; the last layer has N = 10",
}


def mlp_marks(spec) -> list:
    """kernel_marks, plus a skip for the rungs that never take the MLP's shapes."""
    marks = kernel_marks(spec)
    for prefix, why in NOT_AT_MLP_SHAPES.items():
        if spec.name.startswith(prefix):
            marks.append(pytest.mark.skip(reason=f"{spec.name}: {why}"))
    return marks


def backend_params() -> list:
    """(backend, kernel, precision) for every kernel of every backend, GPU ones marked."""
    out = [pytest.param("numpy", "numpy", "fp32", id="numpy")]
    for spec in registry.kernels():
        marks = mlp_marks(spec)
        if spec.device == "cpu" and CPU_MLP_REASON:
            marks.append(pytest.mark.skip(reason=CPU_MLP_REASON))
        out.append(pytest.param(spec.device, spec.name, spec.precision, marks=marks, id=spec.name))
    return out


def assert_agrees(probs: np.ndarray, model: Model, x: np.ndarray, precision: str, what: str) -> None:
    """The kernel's probabilities within the error bound of its precision (gemmpad.runtime.precision.mlp_bound:
    each layer's product bound carried through the next), and the same digit wherever the float64
    network's lead is wider than that bound; near-ties may flip, as the bound allows."""
    assert probs.shape == (len(x), 10) and probs.dtype == np.float32
    bound = mlp_bound(model.weights, x, precision)
    ratio = bound.ratio(probs)
    assert ratio <= 1.0, f"{what}: error {ratio:.3g}x the {precision} bound"
    flipped = bound.argmax_broken(probs)
    assert flipped == 0, f"{what}: {flipped} digits read otherwise although the {precision} bound decides them"


def assert_hidden_agrees(h1: np.ndarray, h2: np.ndarray, weights: dict[str, np.ndarray], x: np.ndarray,
                         precision: str, what: str) -> None:
    """A kernel's own hidden activations (written by it, not recomputed) against float64: each
    within its layer's product bound for `precision`, layer 1's error carried into layer 2 as
    gemmpad.runtime.precision.mlp_bound carries it. Every value must have been written (callers poison
    the arrays with NaN first) and be >= 0 (post-ReLU)."""
    w = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
    x64 = np.asarray(x, dtype=np.float64)
    r1 = np.maximum(x64 @ w["W1"] + w["b1"], 0.0)
    e1 = gemm_bound(np.abs(x64), w["W1"], precision, w["b1"])
    r2 = np.maximum(r1 @ w["W2"] + w["b2"], 0.0)
    e2 = gemm_bound(r1 + e1, w["W2"], precision, w["b2"]) + e1 @ np.abs(w["W2"])
    for name, h, ref, bound in (("h1", h1, r1, e1), ("h2", h2, r2, e2)):
        assert h.shape == ref.shape and h.dtype == np.float32, f"{what}: {name} {h.shape} {h.dtype}"
        assert not np.isnan(h).any(), f"{what}: {name} has values the kernel did not write"
        assert (h >= 0).all(), f"{what}: {name} is not post-ReLU"
        excess = np.abs(h - ref) / np.maximum(bound, 1e-300)
        assert excess.max() <= 1.0, f"{what}: {name} error {excess.max():.3g}x the {precision} bound"


@pytest.mark.parametrize("seed", FIXED_SEEDS + [None], ids=lambda s: f"seed{s}" if s else "random")
@pytest.mark.parametrize("backend,kernel,precision", backend_params())
def test_every_kernel_matches_reference(backend, kernel, precision, seed, rng):
    rng = np.random.default_rng(seed) if seed else rng
    model = random_model(rng)
    clf = Classifier(model, backend=backend, kernel=kernel)
    assert clf.kernel == kernel and clf.backend == backend
    for batch in (1, 7, 300):
        x = digit_like(rng, batch)
        assert_agrees(clf.predict(x), model, x, precision, f"{kernel} batch {batch}")
        t = clf.last_timing
        assert isinstance(t, Timing) and t.batch == batch
        assert t.kernel_us > 0 and t.end_to_end_us > 0


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", ["cuda.mlp_fused", "cuda.mlp_fused_tf32"])
def test_fused_all_batch_configurations(kernel, rng):
    """Both tile sizes (<= 512 rows: 16-row tiles; more: 64-row tiles), mapped and
    copied inputs, ragged last tiles; `out` poisoned so unwritten rows fail."""
    from gemmpad import _cuda

    model = random_model(rng)
    w = model.weights
    mlp = _cuda.Mlp(w["W1"], w["b1"], w["W2"], w["b2"], w["W3"], w["b3"])
    precision = registry.get(kernel).precision
    for batch in (1, 2, 15, 16, 17, 64, 65, 511, 512, 513, 1000, 4096):
        x = digit_like(rng, batch)
        x[0] = rng.uniform(0, 1, 784)  # one dense row too
        out = np.full((batch, 10), np.nan, dtype=np.float32)
        e_us = mlp.forward(x, out, kernel)
        k_us = mlp.kernel_us()
        assert k_us > 0 and e_us >= k_us * 0.5 and mlp.kernel_us() == k_us  # read once, then kept
        assert_agrees(out, model, x, precision, f"{kernel} batch {batch}")
    # a second call after a larger one reuses the grown buffers and the reset counters
    x = digit_like(rng, 3)
    out = np.full((3, 10), np.nan, dtype=np.float32)
    mlp.forward(x, out, kernel)
    assert_agrees(out, model, x, precision, f"{kernel} after growth")


@pytest.mark.gpu
def test_cuda_mlp_rejects_bad_arrays(rng):
    from gemmpad import _cuda

    w = random_model(rng).weights
    with pytest.raises(ValueError, match="W1"):
        _cuda.Mlp(w["W1"][:10], w["b1"], w["W2"], w["b2"], w["W3"], w["b3"])
    mlp = _cuda.Mlp(w["W1"], w["b1"], w["W2"], w["b2"], w["W3"], w["b3"])
    with pytest.raises(RuntimeError, match="no forward pass"):
        mlp.kernel_us()
    x = digit_like(rng, 2)
    with pytest.raises(ValueError):
        mlp.forward(x, np.empty((3, 10), np.float32), "cuda.mlp_fused")
    with pytest.raises(ValueError):
        mlp.forward(x, np.empty((2, 10), np.float64), "cuda.mlp_fused")
    with pytest.raises(ValueError, match="unknown kernel"):
        mlp.forward(x, np.empty((2, 10), np.float32), "cuda.no_such")


@pytest.mark.gpu
@pytest.mark.skipif(bool(os.environ.get("PYTEST_XDIST_WORKER")), reason="reads the device's free memory, which other "
                    "test workers change meanwhile: run it in a process of its own (h200_run.sh does)")
def test_cuda_memory_does_not_grow(rng):
    from gemmpad import _cuda

    clf = Classifier(random_model(rng), backend="cuda")
    x = digit_like(rng, 1)
    for _ in range(200):
        clf.predict(x)
    free0 = _cuda.mem_info()[0]
    for _ in range(3000):
        clf.predict(x)
    assert _cuda.mem_info()[0] == free0


def test_kernels_listing_and_defaults(rng):
    clf = Classifier(random_model(rng), backend="numpy")
    assert clf.kernels() == ["numpy"]
    for backend in ("cpu", "cuda"):
        names = clf.kernels(backend)
        kinds = [registry.get(n).kind for n in names]
        assert kinds == sorted(kinds, key=lambda k: k != "gemm"), "GEMM kernels first, then whole-network ones"
        assert all(n.startswith(backend + ".") for n in names)
    if native.cuda_module_if_built() is not None:
        assert "cuda.mlp_fused" in clf.kernels("cuda")


def test_configure_errors(rng):
    clf = Classifier(random_model(rng), backend="numpy")
    with pytest.raises(GemmpadError, match="unknown backend"):
        clf.configure("tpu")
    with pytest.raises(GemmpadError, match="not available on backend"):
        clf.configure("numpy", "cuda.mlp_fused")
    assert (clf.backend, clf.kernel) == ("numpy", "numpy")  # a failed switch changes nothing
    if AVAILABLE["cuda"]:
        with pytest.raises(CudaUnavailable, match="unavailable"):
            clf.configure("cuda")
        with pytest.raises(CudaUnavailable):
            Classifier(random_model(rng), backend="cuda")


@pytest.mark.gpu
def test_live_switching_and_short_names(rng):
    model = random_model(rng)
    clf = Classifier(model, backend="cuda")
    assert clf.kernel == "cuda.mlp_fused"
    x = digit_like(rng, 5)
    clf.configure(kernel="fused_tf32")
    assert clf.kernel == "cuda.mlp_fused_tf32"
    assert_agrees(clf.predict(x), model, x, "tf32", "after switch")
    clf.configure("numpy")
    assert_agrees(clf.predict(x), model, x, "fp32", "numpy")
    clf.configure("cuda", registry.kernels(device="cuda", kind="gemm")[0].name)
    assert_agrees(clf.predict(x), model, x, registry.kernels(device="cuda", kind="gemm")[0].precision, "gemm path")


@pytest.mark.gpu
def test_resident_kernel_follows_the_classifier(rng):
    """cuda.mlp_resident: configure() starts its persistent kernel, switching away (to another GPU
    kernel or another backend) stops it, coming back restarts it, close() stops it (twice is fine)."""
    model = random_model(rng)
    clf = Classifier(model, backend="cuda")
    mlp = clf._native["cuda"]
    x = digit_like(rng, 1)
    for _ in range(3):
        clf.configure(kernel="resident")
        assert clf.kernel == "cuda.mlp_resident" and mlp.resident_running
        assert_agrees(clf.predict(x), model, x, "fp32", "resident")
        t = clf.last_timing
        assert t is not None and 0 < t.kernel_us <= t.end_to_end_us
        clf.configure(kernel="cuda.mlp_fused")
        assert not mlp.resident_running
        clf.configure(kernel="resident")
        clf.configure("cpu")
        assert not mlp.resident_running
        clf.configure("cuda", "resident")
        p = clf.classify(stroke_image((60, 60), dark_ink=True), hidden=True)
        assert p is not None and p.h1 is not None and p.hidden_us >= 0
        clf.close()
        clf.close()
        assert not mlp.resident_running
        assert_agrees(clf.predict(x), model, x, "fp32", "resident after close (restarts)")
        assert mlp.resident_running
    clf.close()


# Mlp casts the 16- and 8-bit copies of the weights on its own non-blocking stream. It cast them from
# fp32 copies whose pageable cudaMemcpy had not landed yet, in ~30 % of constructions on the H200 (400 each
# for 08, 09, 10 and 17 fp16, 2026-11-29 15:15 UTC): h2 at 8-24x the bound, h1 within it, every later
# pass of that Classifier alike. Twenty fresh Classifiers per rung leave that race no room.
@pytest.mark.parametrize("backend,kernel,precision",
                         [p for p in backend_params() if p.values[2] in ("fp16", "bf16", "fp8")])
def test_a_fresh_classifier_reads_its_own_weights(backend, kernel, precision, rng):
    for i in range(20):
        model = random_model(rng)
        clf = Classifier(model, backend=backend, kernel=kernel)
        x = digit_like(rng, 5)
        probs, h1, h2 = clf.predict_hidden(x)
        assert_agrees(probs, model, x, precision, f"{kernel}, Classifier {i + 1}")
        assert_hidden_agrees(h1, h2, model.weights, x, precision, f"{kernel}, Classifier {i + 1}")
        clf.close()


@pytest.mark.parametrize("seed", HIDDEN_SEEDS + [None], ids=lambda s: f"seed{s}" if s else "random")
@pytest.mark.parametrize("backend,kernel,precision", backend_params())
def test_hidden_layers_come_from_the_kernel(backend, kernel, precision, seed, rng, monkeypatch):
    """predict_hidden and classify(hidden=True) hand back the hidden layers the selected kernel
    computed in that pass (poison-free, within its precision's bound of float64), for the
    whole batch and for the drawing; the recorded timing is the plain pass's. Both ways classify
    gets them, picked by how long the call before took: a second pass after a fast one (its
    extra time measured), the same pass after a slow one (hidden_us NaN). The threshold is pinned
    each way here: under `pytest -n 8` on a 16-core host a batch of 5 took over 10 ms."""
    from gemmpad.runtime import classifier

    rng = np.random.default_rng(seed) if seed else rng
    model = random_model(rng)
    clf = Classifier(model, backend=backend, kernel=kernel)
    x = digit_like(rng, 5)
    probs, h1, h2 = clf.predict_hidden(x)
    assert_agrees(probs, model, x, precision, kernel)
    assert_hidden_agrees(h1, h2, model.weights, x, precision, kernel)
    for threshold_us, second_pass in ((float("inf"), True), (-1.0, False)):
        monkeypatch.setattr(classifier, "HIDDEN_SECOND_PASS_MAX_US", threshold_us)
        p = clf.classify(stroke_image((60, 60), dark_ink=True), batch=3, hidden=True)
        assert p is not None and p.h1 is not None and p.h2 is not None and p.h1.shape == (100,)
        assert_hidden_agrees(p.h1[None], p.h2[None], model.weights, p.image28.reshape(1, -1), precision, kernel)
        assert (p.hidden_us >= 0.0 if second_pass else np.isnan(p.hidden_us)) and p.timing.batch == 3
    plain = clf.classify(stroke_image((60, 60), dark_ink=True))
    assert plain is not None and plain.h1 is None and np.isnan(plain.hidden_us)


@pytest.mark.parametrize("backend,kernel,precision", backend_params())
def test_uint8_input_reads_as_pixels_over_255(backend, kernel, precision, rng):
    """predict(uint8) takes the 8-bit path (native: forward_u8) and reads x * float32(1/255), what
    gemmpad.inputs.preprocess makes of uint8 images; awkward batch sizes."""
    model = random_model(rng)
    clf = Classifier(model, backend=backend, kernel=kernel)
    for batch in (1, 3, 257):
        x8 = rng.integers(0, 256, (batch, 784), dtype=np.uint8)
        x8[rng.random(x8.shape) < 0.8] = 0
        xf = x8.astype(np.float32) * np.float32(1.0 / 255.0)
        assert_agrees(clf.predict(x8), model, xf, precision, f"{kernel} batch {batch} (uint8)")
        assert clf.last_timing is not None and clf.last_timing.batch == batch
    probs, h1, _ = clf.predict_hidden(x8[:2])
    assert_agrees(probs, model, xf[:2], precision, f"{kernel} (uint8, hidden)")
    assert not np.isnan(h1).any()


def test_input_validation(rng):
    model = random_model(rng)
    clf = Classifier(model, backend="numpy")
    v = digit_like(rng, 1)[0]
    assert clf.predict(v).shape == (1, 10)  # one vector is a batch of one
    assert clf.predict(v.astype(np.float64)).dtype == np.float32
    with pytest.raises(InputShapeError):
        clf.predict(np.zeros((2, 783), np.float32))
    with pytest.raises(InputShapeError):
        clf.predict(np.zeros((0, 784), np.float32))
    with pytest.raises(InputTypeError):
        clf.predict(np.array([["a"] * 784]))


def test_too_many_rows_refused_before_any_copy():
    # Was: a broadcast view of 3,000,000 rows was copied (9.4 GB) before the native code refused
    # it, and 2**31 rows gave NumPy's raw MemoryError. In a child whose address space is capped
    # at 2 GB, so that a copy fails at once instead of filling this machine's memory.
    script = textwrap.dedent("""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
        import numpy as np
        from gemmpad.runtime.classifier import MAX_ROWS, Classifier
        from gemmpad.errors import InputShapeError
        clf = Classifier(backend="cpu")
        for rows, dtype in ((MAX_ROWS + 1, np.float32), (3_000_000, np.float32), (2**31, np.float64)):
            x = np.broadcast_to(np.zeros(784, dtype), (rows, 784))
            try:
                clf.predict(x)
            except InputShapeError as exc:
                assert f"at most {MAX_ROWS:,}" in str(exc) and f"{rows:,} rows" in str(exc), exc
            else:
                raise AssertionError(f"{rows} rows accepted")
        print("ok")
    """)
    import gemmpad

    env = {**os.environ, "PYTHONPATH": str(Path(gemmpad.__file__).resolve().parents[1])}  # the gemmpad under test
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["ok"]
    assert MAX_ROWS == (2**31 - 1) // 784


def test_stats_and_history(rng):
    clf = Classifier(random_model(rng), backend="numpy")
    assert clf.stats()["count"] == 0 and clf.last_timing is None
    x = digit_like(rng, 4)
    for _ in range(12):
        clf.predict(x)
    s = clf.stats()
    assert s["count"] == 12
    for key in ("kernel_median_us", "kernel_p99_us", "e2e_median_us", "e2e_p99_us"):
        assert s[key] > 0
    assert s["kernel_p99_us"] >= s["kernel_median_us"] and s["e2e_p99_us"] >= s["e2e_median_us"]
    h = clf.history(5)
    assert len(h) == 5 and h[-1] is clf.last_timing and all(t.batch == 4 for t in h)
    clf.configure("numpy")  # statistics describe one configuration at a time
    assert clf.stats()["count"] == 0 and clf.history() == []


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", ["cuda.mlp_fused", "cuda.07_warptile"])
@pytest.mark.parametrize("batch", [1, 16, 300])
def test_gpu_timings_are_per_call(kernel, batch, rng):
    """A GPU call returns before its kernel time is read (last_timing reads it): every call
    still gets its own timing, whether it is asked for after each call or only at the end."""
    clf = Classifier(random_model(rng), backend="cuda", kernel=kernel)
    x = digit_like(rng, batch)
    for _ in range(5):
        clf.predict(x)
        t = clf.last_timing
        assert t is not None and t.batch == batch and t.kernel_us > 0 and t.end_to_end_us > 0
    for _ in range(7):
        clf.predict(x)  # never asked for in between
    h = clf.history()
    assert len(h) == 12 and h[-1] is clf.last_timing and clf.stats()["count"] == 12
    assert all(t.kernel_us > 0 and t.end_to_end_us > 0 and t.batch == batch for t in h)
    clf.predict(x)
    clf.configure(kernel="cuda.mlp_fused_tf32")  # a switch drops the pending call with the rest
    assert clf.last_timing is None and clf.stats()["count"] == 0


class CountingForward:
    """Stands in for a backend's forward pass and counts the calls."""

    def __init__(self, forward) -> None:
        self.forward, self.calls = forward, 0

    def __call__(self, *args):
        self.calls += 1
        return self.forward(*args)


@pytest.mark.parametrize("backend", [
    "numpy",
    pytest.param("cpu", marks=[pytest.mark.skip(reason=CPU_MLP_REASON)] if CPU_MLP_REASON else []),
    pytest.param("cuda", marks=pytest.mark.gpu),
])
def test_warmup_passes_run_untimed(backend, rng):
    """predict(x, warmup=n) runs the pass n + 1 times and records one timing, of the last."""
    clf = Classifier(random_model(rng), backend=backend)
    x = digit_like(rng, 3)
    if backend == "numpy":
        counter = clf.model.forward = CountingForward(clf.model.forward)
    else:
        inner = clf._native[backend]
        counter = CountingForward(inner.forward)

        class Counted:  # the native Mlp with a counted forward (its methods are read-only)
            forward = counter

            def __getattr__(self, name: str):
                return getattr(inner, name)

        clf._native[backend] = Counted()
    assert_agrees(clf.predict(x), clf.model, x, "fp32", "plain call")  # on the GPU still pending while the next warms up
    assert_agrees(clf.predict(x, warmup=4), clf.model, x, "fp32", "after warm-up")
    assert counter.calls == 1 + 5
    h = clf.history()
    assert len(h) == 2 and all(t.batch == 3 and t.kernel_us > 0 and t.end_to_end_us > 0 for t in h)
    p = clf.classify(stroke_image((60, 60), dark_ink=True), warmup=2)
    assert p is not None and p.timing is clf.last_timing and counter.calls == 6 + 3 and len(clf.history()) == 3


def stroke_image(size: tuple[int, int], dark_ink: bool) -> np.ndarray:
    """A thick diagonal stroke, ink dark on light paper or the reverse."""
    h, w = size
    yy, xx = np.mgrid[0:h, 0:w]
    ink = np.abs((yy / h) - (xx / w)) < 0.08
    img = np.where(ink, 20, 235).astype(np.uint8)
    return img if dark_ink else (255 - img)


def test_classify(rng):
    from gemmpad.inputs.preprocess import preprocess

    model = random_model(rng)
    clf = Classifier(model, backend="numpy")
    assert clf.classify(np.full((50, 50), 255, np.uint8)) is None  # blank paper: no guess
    img = stroke_image((120, 90), dark_ink=True)
    p = clf.classify(img)
    assert isinstance(p, Prediction)
    assert p.image28.shape == (28, 28)
    np.testing.assert_array_equal(p.image28, preprocess(img))
    assert p.probs.shape == (10,) and abs(float(p.probs.sum()) - 1) < 1e-5
    assert p.digit == int(np.argmax(p.probs)) and p.confidence == pytest.approx(float(p.probs.max()))
    ref = reference(model, p.image28.reshape(1, 784))[0]
    assert rel_error(p.probs, ref) <= 1e-5
    # either polarity reads the same
    q = clf.classify(stroke_image((120, 90), dark_ink=False))
    np.testing.assert_allclose(q.probs, p.probs, atol=1e-6)


@pytest.mark.parametrize("backend", ["numpy", "cpu"])
def test_batch_is_a_speed_knob_that_never_changes_the_reading(backend, rng):
    """Issue 42: the batch averaged jittered copies, so one drawn 4 read 100 % at batch 1, 87.4 %
    at 32 and 70.3 % at 4096. Now every row is the drawing itself: the batch costs time, not answer."""
    model = load_model()
    clf = Classifier(model, backend=backend)
    img = stroke_image((200, 200), dark_ink=False)
    one = clf.classify(img, batch=1)
    ref = reference(model, one.image28.reshape(1, 784))[0]
    for batch in (2, 32, 4096):
        p = clf.classify(img, batch=batch)
        assert p.timing.batch == batch and p.digit == one.digit
        assert rel_error(p.probs, ref) <= 1e-5, batch
    with pytest.raises(InputShapeError):
        clf.classify(img, batch=0)


def test_jitter_shifts(rng):
    img = np.zeros((28, 28), np.float32)
    img[8:20, 10:18] = rng.uniform(0.5, 1.0, (12, 8))
    x = jitter(img, 40, rng).reshape(40, 28, 28)
    np.testing.assert_array_equal(x[0], img)
    assert np.allclose(x.sum(axis=(1, 2)), img.sum(), rtol=1e-5)  # ink well inside: nothing falls off
    assert len({x[i].tobytes() for i in range(25)}) == 25  # 24 distinct shifts + the original


@pytest.mark.skipif(not default_model_path().exists(), reason="the shipped model models/mnist-mlp.npz is absent")
@pytest.mark.parametrize("backend", [b for b in BACKENDS if not AVAILABLE[b]] or ["numpy"])
def test_shipped_model_backends_agree(backend, rng):
    clf = Classifier(backend=backend)
    ref_clf = Classifier(backend="numpy")
    x = digit_like(rng, 64)
    assert_agrees(clf.predict(x), ref_clf.model, x, registry.get(clf.kernel).precision if backend != "numpy" else "fp32", backend)


def mnist_test_images(n: int) -> np.ndarray:
    """The first n MNIST test digits as [n, 784] in [0, 1] (the test skips, saying where it
    looked, when there are none; never a download from a test)."""
    from gemmpad.data.mnist import load_split

    split = load_split("test", mnist_dir())
    return (split.images[:n].reshape(n, 784) / np.float32(255)).astype(np.float32)


@pytest.mark.parametrize("seed", FIXED_SEEDS + [None], ids=lambda s: f"seed{s}" if s else "random")
@pytest.mark.parametrize("backend,kernel,precision", backend_params())
def test_mnist_samples_agree(backend, kernel, precision, seed, rng):
    """A random model from the seed and the shipped one (where present) on MNIST test digits."""
    rng = np.random.default_rng(seed) if seed else rng
    x = mnist_test_images(500)
    models = {"random model": random_model(rng)}
    if default_model_path().exists():
        models["shipped model"] = Classifier(backend="numpy").model
    for what, model in models.items():
        clf = Classifier(model, backend=backend, kernel=kernel)
        assert_agrees(clf.predict(x), model, x, precision, f"{kernel}, {what}, on MNIST test digits")


@pytest.mark.parametrize("seed", FIXED_SEEDS + [None], ids=lambda s: f"seed{s}" if s else "random")
@pytest.mark.parametrize("name", [pytest.param(s.name, marks=mlp_marks(s), id=s.name)
                                  for s in registry.kernels(kind="gemm")])
def test_each_layer_keeps_its_bound_on_mnist(name, seed, rng):
    """The network's three GEMMs run by the kernel, each within its precision's bound of float64
    given the kernel's own output of the layer before: tight where the bound carried through the
    whole network (assert_agrees) is loose, as it is for bf16 and fp8."""
    import gemmpad
    from tests.conftest import assert_within_bound
    from tests.runtime.test_gemm import reference as gemm_reference

    rng = np.random.default_rng(seed) if seed else rng
    x = mnist_test_images(500)
    models = {"random model": random_model(rng)}
    if default_model_path().exists():
        models["shipped model"] = Classifier(backend="numpy").model
    precision = registry.get(name).precision
    for what, model in models.items():
        h = x
        for i in (1, 2, 3):
            w, b = model.weights[f"W{i}"], model.weights[f"b{i}"]
            act = "relu" if i < 3 else None
            out = gemmpad.gemm(h, w, bias=b, activation=act, kernel=name)
            assert_within_bound(out, gemm_reference(h, w, b, act, precision), h, w, b, precision,
                                f"{name}, {what}, layer {i}")
            h = out
