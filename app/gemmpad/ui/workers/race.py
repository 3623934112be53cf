"""The race: the current drawing through every kernel this machine can run, at the
current batch, timed cold and warm, on a thread of its own (no Dear PyGui here).

It has its own Classifier, so it never waits for the window's inference worker nor
disturbs its statistics, and it checks a cancel flag between calls. Cold calls are
spaced a frame apart and made as a frame makes them (Classifier.classify: the drawing
prepared, then the pass), so they compare with the Latency tab: a bare pass after the
pause read 71 µs end to end where the window's frames read 30 (cpu.mlp_sparse, batch 1,
2-core VM), the preparing warming the core the pass then runs on. Warm ones run back to
back after WARMUP_PASSES untimed ones, as a benchmark does. Each kernel gets at most
BUDGET_S per phase (the naive GEMM at batch 4096 takes seconds a call), and at least one
call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gemmpad.bench.timing import classifier_call, time_calls
from gemmpad.runtime.classifier import Classifier, copies
from gemmpad.runtime.model import Model
from gemmpad.inputs.preprocess import preprocess
from gemmpad.ui.workers.inference import COLD_PAUSE_S, WARMUP_PASSES

COLD_CALLS = 7
WARM_CALLS = 25
BUDGET_S = 1.0


@dataclass(frozen=True)
class Lap:
    """One kernel's medians (microseconds), or the error that stopped it."""

    backend: str
    kernel: str
    cold_kernel_us: float = float("nan")
    cold_e2e_us: float = float("nan")
    warm_kernel_us: float = float("nan")
    warm_e2e_us: float = float("nan")
    error: str = ""

    def times(self, warm: bool) -> tuple[float, float]:
        """(kernel, end-to-end) for the cold or the warm phase."""
        return (self.warm_kernel_us, self.warm_e2e_us) if warm else (self.cold_kernel_us, self.cold_e2e_us)


class Race:
    """Started with start(); poll laps / running / current; cancel() stops it between calls."""

    def __init__(self, model: Model, entrants: list[tuple[str, str]], image: np.ndarray, batch: int) -> None:
        """`image`: the canvas (a frame's input); a drawing without ink is refused (ValueError)."""
        image28 = preprocess(image)
        if image28 is None:
            raise ValueError("the race needs a drawing with ink")
        self.entrants = list(entrants)  # (backend, kernel) in running order
        self.batch = batch
        self._model = model
        self._image = np.array(image, dtype=np.float32)  # a private copy: drawing goes on
        self._x = copies(image28, batch)
        self._lock = threading.Lock()
        self._laps: list[Lap] = []
        self._current = ""
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gemmpad-race", daemon=True)

    def start(self) -> Race:
        self._thread.start()
        return self

    def cancel(self) -> None:
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the race ends (tests); False on timeout."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def laps(self) -> list[Lap]:
        with self._lock:
            return list(self._laps)

    @property
    def current(self) -> str:
        """The kernel running now ("" between kernels and after the end)."""
        with self._lock:
            return self._current

    def _run(self) -> None:
        clfs: dict[str, Classifier] = {}
        for backend, kernel in self.entrants:
            if self._cancel.is_set():
                return
            with self._lock:
                self._current = kernel
            try:
                if backend not in clfs:
                    clfs[backend] = Classifier(self._model, backend=backend, kernel=kernel)
                clf = clfs[backend]
                clf.configure(backend=backend, kernel=kernel)
                lap = self._lap(clf, backend, kernel)
            except Exception as exc:  # one kernel failing does not stop the race
                lap = Lap(backend, kernel, error=f"{type(exc).__name__}: {exc}")
            if lap is None:  # cancelled midway
                return
            with self._lock:
                self._laps.append(lap)
                self._current = ""

    def _lap(self, clf: Classifier, backend: str, kernel: str) -> Lap | None:
        clf.predict(self._x)  # set-up (buffers, the GPU's graph), untimed
        cold = self._phase(clf, COLD_CALLS, pause=COLD_PAUSE_S, warmup=0, as_a_frame=True)
        warm = self._phase(clf, WARM_CALLS, pause=0.0, warmup=WARMUP_PASSES)
        if cold is None or warm is None:
            return None
        return Lap(backend, kernel, *cold, *warm)

    def _phase(self, clf: Classifier, calls: int, pause: float, warmup: int,
               as_a_frame: bool = False) -> tuple[float, float] | None:
        """Medians of kernel and end-to-end time over up to `calls` calls within BUDGET_S
        (`as_a_frame`: each from the canvas image, as the window reads a frame); None if cancelled."""
        if warmup:
            clf.predict(self._x, warmup=warmup - 1)
        call = self._frame_call(clf) if as_a_frame else classifier_call(clf, self._x)
        timed = time_calls(call, BUDGET_S, warmup=0, min_reps=1, max_reps=calls,
                           pause_s=pause, cancelled=self._cancel.is_set)
        return None if timed is None else (timed.kernel_us, timed.e2e_us)

    def _frame_call(self, clf: Classifier) -> Callable[[], tuple[float, float]]:
        """One read of the canvas image as the window's frame makes it (preprocess, batch, pass)."""

        def call() -> tuple[float, float]:
            clf.classify(self._image, batch=self.batch)
            t = clf.last_timing
            assert t is not None
            return t.kernel_us, t.end_to_end_us

        return call


def fastest(laps: list[Lap], warm: bool) -> Lap | None:
    """The lap with the lowest end-to-end time in that phase (what a user waits)."""
    ok = [lap for lap in laps if not lap.error and np.isfinite(lap.times(warm)[1])]
    return min(ok, key=lambda lap: lap.times(warm)[1]) if ok else None
