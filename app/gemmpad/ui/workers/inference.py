"""Inference off the UI thread, latest request wins.

A forward pass can take from microseconds (fused CUDA kernel, batch 1) to a
good fraction of a second (naive CPU GEMM, batch 4096). Running it on the
frame loop would freeze the pen, so one worker thread owns the Classifier
(it is driven by one thread at a time) and the UI only ever posts requests
and picks up results. Requests are not queued: while the worker is busy, each
new request replaces the waiting one, so the prediction always catches up with
the newest drawing instead of working through a backlog of stale ones.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np

from gemmpad.runtime.classifier import Classifier, Prediction, Timing
from gemmpad.runtime.unsure import Detector

# How many frames the latency plot and its median/p99 cover.
HISTORY = 300
# Warm timing: untimed passes before each frame's timed one (on the development VM one pass
# already takes the CPU call from ~50 to ~3.5 us, three to ~1.7, the back-to-back figure)...
WARMUP_PASSES = 3
# ...skipped for calls this slow, where cold caches are a rounding error and three more passes
# would only delay the reading.
WARM_SKIP_US = 10_000.0
# Between the set-up pass after a change and the first timed one: about a frame, as between
# two frames' calls.
COLD_PAUSE_S = 0.016


@dataclass(frozen=True)
class Request:
    seq: int
    image: np.ndarray  # a private copy of the canvas
    backend: str
    kernel: str | None  # None: the backend's fastest default
    batch: int
    warm: bool = False  # time the pass after a few untimed ones (WARMUP_PASSES)


@dataclass(frozen=True)
class Result:
    seq: int
    backend: str  # what the classifier runs on now (may differ from the request after an error)
    kernel: str
    prediction: Prediction | None  # None: no ink, or an error
    history: list[Timing] = field(default_factory=list)  # this configuration's frames, oldest first
    error: str = ""
    # The hidden layers' activations [100] each for the drawing itself (one of the batch's
    # identical copies) as the selected kernel computed them (Classifier.classify(hidden=True)),
    # and each layer's time where the kernel runs layer by layer (else ()).
    hidden: tuple[np.ndarray, np.ndarray] | None = None
    layer_us: tuple[float, ...] = ()
    # What handing the hidden layers back cost end to end (us; NaN: not measured).
    hidden_us: float = float("nan")
    # Whether the drawing does not look like one digit (gemmpad.runtime.unsure); None: no detector.
    unsure: bool | None = None


class InferenceWorker:
    """One daemon thread running classify() on the newest request."""

    def __init__(self, classifier: Classifier, detector: Detector | None = None) -> None:
        self._clf = classifier
        self._detector = detector
        self._cond = threading.Condition()
        self._pending: Request | None = None
        self._result: Result | None = None
        self._submitted = 0
        self._done = 0
        self._stop = False
        # Frames run since the last backend/kernel/batch/warm change: the latency
        # plot and its median/p99 describe one configuration, not a mix.
        self._since_change = 0
        self._config: tuple[str, str, int, bool] | None = None
        self._thread = threading.Thread(target=self._loop, name="gemmpad-inference", daemon=True)
        self._thread.start()

    def submit(self, image: np.ndarray, backend: str, kernel: str | None, batch: int, warm: bool = False) -> int:
        """Queue `image` (copied) for classification; returns its sequence number."""
        with self._cond:
            self._submitted += 1
            self._pending = Request(self._submitted, image.copy(), backend, kernel, int(batch), warm)
            self._cond.notify_all()
            return self._submitted

    def use(self, classifier: Classifier, detector: Detector | None) -> None:
        """Run later requests on `classifier` (new weights) and its `detector`; the request
        running now finishes on the old pair."""
        with self._cond:
            self._clf, self._detector = classifier, detector
            self._config = None  # a new model: the latency plot starts again

    def take(self) -> Result | None:
        """The newest finished result, once; None if nothing new arrived."""
        with self._cond:
            r, self._result = self._result, None
            return r

    @property
    def busy(self) -> bool:
        with self._cond:
            return self._done < self._submitted

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Block until every submitted request is answered (tests and --replay)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._done >= self._submitted, timeout)

    def close(self, timeout: float = 5.0) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        self._thread.join(timeout)

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending is not None or self._stop)
                if self._stop:
                    return
                req, self._pending = self._pending, None
            assert req is not None
            result = self._run(req)
            with self._cond:
                self._result = result
                # Answering this request also answers the ones it replaced before they ran.
                self._done = max(self._done, req.seq)
                self._cond.notify_all()

    def _run(self, req: Request) -> Result:
        with self._cond:
            clf, detector = self._clf, self._detector  # a pair: a detector belongs to one set of weights
        error = ""
        if req.backend != clf.backend or (req.kernel is not None and req.kernel != clf.kernel):
            try:
                clf.configure(backend=req.backend, kernel=req.kernel)
            except Exception as exc:  # shown in the status line; we keep running on the old setting
                error = f"{type(exc).__name__}: {exc}"
        config = (clf.backend, clf.kernel, req.batch, req.warm)
        warmup = self._warmup(req, clf)
        try:
            if config != self._config and not req.warm:
                # The first pass after a change also sets up what the new setting needs
                # (buffers, the GPU's graph for this batch: ~20 ms on the H200). It runs
                # apart, then the timed pass after a frame's pause, so the first figure
                # shown is a cold frame like the ones after it, not that set-up and not a
                # warm pass right behind it. (Warm timing warms up anyway.)
                clf.classify(req.image, batch=req.batch, hidden=True)  # (also sets up the hidden pass)
                time.sleep(COLD_PAUSE_S)
            prediction = clf.classify(req.image, batch=req.batch, warmup=warmup, hidden=True)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            prediction = None
        if prediction is not None:
            if config != self._config:
                self._config, self._since_change = config, 0
            self._since_change += 1
        n = min(self._since_change, HISTORY)
        history = clf.history(n) if n else []
        hidden, unsure, hidden_us = None, None, float("nan")
        if prediction is not None and prediction.h1 is not None and prediction.h2 is not None:
            # the kernel's own activations, for the panel and for the detector alike
            hidden, hidden_us = (prediction.h1, prediction.h2), prediction.hidden_us
            if detector is not None:  # after the timed pass: its cost is not in the figures
                x = prediction.image28.reshape(1, -1)
                unsure = bool(detector.unsure(clf.model, x, (hidden[0][None], hidden[1][None]))[0])
        layer_us = clf.layer_times() if prediction is not None else ()
        return Result(req.seq, clf.backend, clf.kernel, prediction, history, error, hidden=hidden, layer_us=layer_us,
                      hidden_us=hidden_us, unsure=unsure)

    def _warmup(self, req: Request, clf: Classifier) -> int:
        if not req.warm:
            return 0
        last = clf.last_timing  # None right after a switch: warm up (it also sets up)
        return WARMUP_PASSES if last is None or last.end_to_end_us < WARM_SKIP_US else 0
