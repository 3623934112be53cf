"""gemmpad.runtime.backends: the one list of backends, and the one `pick` of a default, that the
classifier, CLI and window read."""

from __future__ import annotations

import numpy as np

from gemmpad.runtime import backends, classifier, registry
from gemmpad.runtime.model import SHAPES, Model


def test_the_engine_reads_the_one_list():
    assert classifier.BACKENDS == backends.NAMES == ("numpy", "cpu", "cuda")
    assert set(classifier.available_backends()) == set(backends.NAMES)
    assert classifier.DEFAULT_KERNELS == {b.name: b.default_kernel for b in backends.BACKENDS}


def test_every_backend_says_why_it_cannot_run_or_names_a_default_kernel_it_has():
    names = {s.name for s in registry.kernels()} | {"numpy"}
    for b in backends.BACKENDS:
        reason = b.reason()
        assert isinstance(reason, str) and b.label and b.summary
        if not reason:
            assert b.default_kernel in names
    assert backends.BY_NAME["numpy"].reason() == ""  # the reference runs everywhere


def test_numpy_runner_writes_the_reference_into_out_and_returns_its_time():
    rng = np.random.default_rng(3)
    model = Model(weights={k: rng.normal(0, 0.1, s).astype(np.float32) for k, s in SHAPES.items()})
    x = rng.uniform(0, 1, (5, 784)).astype(np.float32)
    out = np.full((5, 10), np.nan, np.float32)
    us = backends.NumpyMlp(model).forward(x, out, "numpy")
    np.testing.assert_allclose(out, model.forward(x.astype(np.float64)), rtol=1e-5, atol=1e-7)
    assert us > 0


def _usable(monkeypatch, *names: str) -> None:
    """Pretend these backends (and only these) can run here."""
    monkeypatch.setattr(backends, "available_backends",
                        lambda: {b: "" if b in names else "not here" for b in backends.NAMES})


def test_pick_is_the_named_backend_else_the_kernels_else_the_fastest_usable(monkeypatch):
    """One policy for every caller (issue 41: gemm(), the window, predict and Classifier had four)."""
    _usable(monkeypatch, "numpy", "cpu", "cuda")
    assert backends.pick("numpy", "cpu.01_naive") == "numpy"  # named wins
    assert backends.pick(None, "cpu.01_naive") == "cpu"  # else the kernel's own backend
    assert backends.pick() == "cuda"  # else the fastest usable: the window's default
    assert backends.pick(among=backends.WITHOUT_GPU) == "cpu"  # predict and Classifier leave the GPU out
    assert backends.pick(among=backends.GEMM_DEVICES) == "cuda"  # gemm(): devices with GEMM kernels
    _usable(monkeypatch, "numpy", "cpu")
    assert backends.pick() == "cpu" and backends.pick(among=backends.GEMM_DEVICES) == "cpu"
    _usable(monkeypatch, "numpy")
    assert backends.pick() == "numpy" and backends.pick(among=backends.WITHOUT_GPU) == "numpy"
    assert backends.pick(among=backends.GEMM_DEVICES) == "cpu"  # none usable: the last, whose check says why


def test_classifier_and_gemm_take_their_default_from_pick(monkeypatch):
    """Classifier() runs on the CPU even where the GPU is usable; gemm() on the GPU when usable."""
    rng = np.random.default_rng(5)
    model = Model(weights={k: rng.normal(0, 0.1, s).astype(np.float32) for k, s in SHAPES.items()})
    asked = []
    real = backends.pick
    monkeypatch.setattr(backends, "pick", lambda *a, **k: asked.append((a, k)) or real(*a, **k))
    assert classifier.Classifier(model).backend == "cpu"
    assert asked[-1] == ((None, None, backends.WITHOUT_GPU), {})
    import gemmpad

    gemmpad.gemm(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32))
    assert asked[-1] == ((), {"among": backends.GEMM_DEVICES})
