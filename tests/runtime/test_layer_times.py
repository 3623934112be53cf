"""Per-layer times of the CPU's GEMM path (Classifier.layer_times, _cpu.Mlp.layer_us)."""

from __future__ import annotations

import numpy as np
import pytest

from gemmpad.runtime.classifier import Classifier, available_backends
from tests.runtime.test_classifier import random_model

pytestmark = pytest.mark.skipif(bool(available_backends()["cpu"]), reason="this build has no native CPU MLP")


def test_gemm_kernels_report_each_layer_and_the_fused_kernel_none(rng: np.random.Generator) -> None:
    clf = Classifier(random_model(rng), backend="cpu", kernel="cpu.01_naive")
    x = rng.random((64, 784), dtype=np.float32)
    clf.predict(x)
    layers = clf.layer_times()
    total = clf.last_timing.kernel_us
    assert len(layers) == 3 and all(t > 0 for t in layers)
    assert sum(layers) <= total * 1.01 + 1  # the layers are inside the call's own time (softmax is the rest)
    assert layers[0] > layers[2]  # 784x100 is the big one, 100x10 the small one
    clf.configure(kernel="cpu.mlp_sparse")
    clf.predict(x)
    assert clf.layer_times() == ()
    assert Classifier(random_model(rng), backend="numpy").layer_times() == ()


def test_model_hidden_is_what_forward_runs_on(rng: np.random.Generator) -> None:
    from gemmpad.runtime.model import softmax

    m = random_model(rng)
    x = rng.random((5, 784), dtype=np.float32)
    h1, h2 = m.hidden(x)
    assert h1.shape == (5, 100) and h2.shape == (5, 100) and h1.min() >= 0 and h2.min() >= 0
    np.testing.assert_allclose(softmax(h2 @ m.weights["W3"] + m.weights["b3"]), m.forward(x), rtol=1e-6)
