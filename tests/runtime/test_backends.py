"""gemmpad.runtime.backends: the one list of backends the engine, CLI and window read."""

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
