"""The inference worker: newest request wins, untimed set-up passes, the unsure verdict (no window)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from gemmpad.inputs import strokes
from tests.ui.support import seven, window_model


def test_worker_answers_the_newest_request_and_skips_stale_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    from gemmpad.runtime.classifier import Classifier
    from gemmpad.ui.workers.inference import InferenceWorker

    clf = Classifier(window_model(), backend="numpy")
    real, seen = clf.classify, []

    def slow(image: np.ndarray, batch: int = 1, warmup: int = 0, hidden: bool = False) -> object:
        seen.append(float(image[0, 0]))
        time.sleep(0.05)
        return real(image, batch, warmup, hidden)

    monkeypatch.setattr(clf, "classify", slow)
    worker = InferenceWorker(clf)
    try:
        image = strokes.render(seven())
        for i in range(20):  # much faster than the worker can answer
            image[0, 0] = i / 100
            last = worker.submit(image, "numpy", None, 1 + i % 2)
        assert worker.wait_idle(10)
        result = worker.take()
        assert result is not None and result.seq == last and result.error == ""
        assert seen[-1] == pytest.approx(0.19) and len(seen) < 20  # the newest ran; stale ones were dropped
        assert result.prediction is not None and result.prediction.timing.batch == 2
        assert result.history and all(t.batch == 2 for t in result.history)  # this configuration only
        assert worker.take() is None  # each result is handed out once
        worker.submit(image, "no-such-backend", None, 1)  # refused: reported, old setting kept
        assert worker.wait_idle(10)
        bad = worker.take()
        assert bad is not None and "no-such-backend" in bad.error and bad.backend == "numpy"
        assert bad.prediction is not None
    finally:
        worker.close()


def test_changes_and_warm_requests_run_untimed_passes_first(monkeypatch: pytest.MonkeyPatch) -> None:
    from gemmpad.runtime.classifier import Classifier, Timing
    from gemmpad.ui.workers.inference import WARM_SKIP_US, WARMUP_PASSES, InferenceWorker

    clf = Classifier(window_model(), backend="numpy")
    real, warmups = clf.classify, []

    def counted(image: np.ndarray, batch: int = 1, warmup: int = 0, hidden: bool = False) -> object:
        warmups.append(warmup)
        return real(image, batch, warmup, hidden)

    monkeypatch.setattr(clf, "classify", counted)
    worker = InferenceWorker(clf)
    try:
        image = strokes.render(seven())
        for warm in (False, False, True, True):
            worker.submit(image, "numpy", None, 1, warm)
            assert worker.wait_idle(10)
        result = worker.take()
        # a cold change (the first request is one) runs a set-up pass apart, then a cold one;
        # cold frames run alone and warm ones after WARMUP_PASSES
        assert warmups == [0, 0, 0, WARMUP_PASSES, WARMUP_PASSES]
        assert result is not None and len(result.history) == 2  # warm and cold frames are not mixed
        clf._record(Timing(1.0, 2 * WARM_SKIP_US, 1))  # as if the last call took 20 ms
        worker.submit(image, "numpy", None, 1, True)
        assert worker.wait_idle(10) and warmups[-1] == 0  # slow calls are not warmed up
    finally:
        worker.close()


def test_the_worker_reports_the_detectors_verdict_on_what_the_network_saw() -> None:
    from gemmpad.runtime.classifier import Classifier
    from gemmpad.inputs.preprocess import preprocess
    from gemmpad.ui.workers.inference import InferenceWorker

    class Recorder:  # stands in for gemmpad.runtime.unsure.Detector: says unsure for inputs wider than tall
        def __init__(self) -> None:
            self.seen: list[np.ndarray] = []
            self.hidden: list[tuple[np.ndarray, np.ndarray]] = []

        def unsure(self, model: object, x: np.ndarray, hidden: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
            self.seen.append(x.copy())
            self.hidden.append(hidden)
            rows, cols = np.nonzero(x.reshape(28, 28) > 0.1)
            return np.array([np.ptp(cols) > np.ptp(rows)])

    image = strokes.render(seven())
    for detector, blob in ((None, False), (Recorder(), False), (Recorder(), True)):
        worker = InferenceWorker(Classifier(window_model(), backend="numpy"), detector)
        try:
            drawing = strokes.render([np.array([[40.0, 140.0], [240.0, 150.0]])]) if blob else image  # a dash
            worker.submit(drawing, "numpy", None, 4)
            assert worker.wait_idle(10)
            r = worker.take()
            assert r is not None and r.prediction is not None
            if detector is None:
                assert r.unsure is None
            else:  # asked once, about the drawing itself (not its batch of jittered copies)
                assert r.unsure is blob and len(detector.seen) == 1
                np.testing.assert_array_equal(detector.seen[0], preprocess(drawing).reshape(1, -1))
                assert r.hidden is not None  # the detector read the hidden layers the panel shows
                for shown, given in zip(r.hidden, detector.hidden[0]):
                    np.testing.assert_array_equal(given, shown[None])
        finally:
            worker.close()


@pytest.mark.parametrize("kernel", ["cpu.mlp_sparse", "cpu.02_blocked_simd"])
def test_the_hidden_layers_shown_are_the_kernels_own(kernel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 42: the panel showed NumPy's recomputation (model.hidden). Now the worker shows what
    the selected kernel wrote, with its cost, and never asks NumPy for them."""
    from gemmpad.runtime.classifier import Classifier, available_backends
    from gemmpad.inputs.preprocess import preprocess
    from gemmpad.ui.workers.inference import InferenceWorker
    from tests.runtime.test_classifier import assert_hidden_agrees

    if available_backends()["cpu"]:
        pytest.skip(available_backends()["cpu"])
    clf = Classifier(window_model(), backend="cpu", kernel=kernel)

    def no_numpy(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise AssertionError("the hidden layers were recomputed by NumPy")

    monkeypatch.setattr(clf.model, "hidden", no_numpy)
    worker = InferenceWorker(clf)
    try:
        image = strokes.render(seven())
        worker.submit(image, "cpu", kernel, 3)
        assert worker.wait_idle(10)
        r = worker.take()
        assert r is not None and r.error == "" and r.prediction is not None and r.hidden is not None
        x = preprocess(image).reshape(1, -1)
        assert_hidden_agrees(r.hidden[0][None], r.hidden[1][None], clf.model.weights, x, "fp32", kernel)
        assert r.hidden_us >= 0.0  # measured (a fast call: the second pass ran)
    finally:
        worker.close()


def test_detector_features_take_the_kernels_hidden_layers() -> None:
    """gemmpad.runtime.unsure.features(hidden=...) uses the hidden layers given (the kernel's) in place of
    NumPy's: the same features when they are NumPy's, other features when they differ."""
    from gemmpad.inputs.preprocess import preprocess
    from gemmpad.runtime.unsure import features

    model = window_model()
    x = preprocess(strokes.render(seven())).reshape(1, -1)
    h1, h2 = model.hidden(x)
    np.testing.assert_array_equal(features(model, x, (h1, h2)), features(model, x))
    moved = features(model, x, (h1 + 1.0, h2))
    assert not np.array_equal(moved[:, :100], features(model, x)[:, :100])
