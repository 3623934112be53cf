"""Timing repeated calls: the one loop behind every kernel / end-to-end median that gemmpad
shows (`gemmpad bench mlp`, its sweep, the window's race of every kernel, and the native
trainer's epochs in `gemmpad bench train`).

A call returns its own two times in microseconds (the Classifier measures them: kernel time
from CUDA events or the C++ clock, end-to-end from the Python side), so the loop only decides
how many calls to make and takes the medians: untimed warm-up calls first, then at least
`min_reps` timed calls and more while the budget lasts, up to `max_reps`. A pause before
each call lets a GPU clock down between calls (the race's "cold" phase); `cancelled` is asked
before each call so a thread can stop between two calls.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

Call = Callable[[], tuple[float, float]]  # one call -> (kernel_us, end_to_end_us)


class Medians(NamedTuple):
    kernel_us: float
    e2e_us: float
    reps: int


def classifier_call(clf: Any, x: np.ndarray) -> Call:
    """One `clf.predict(x)` timed by the Classifier itself (its last_timing)."""

    def call() -> tuple[float, float]:
        clf.predict(x)
        t = clf.last_timing
        return t.kernel_us, t.end_to_end_us

    return call


class Samples(NamedTuple):
    kernel_us: list[float]
    e2e_us: list[float]


def sample_calls(call: Call, budget_s: float, *, warmup: int = 3, min_reps: int = 10, max_reps: int = 5000,
                 pause_s: float = 0.0, cancelled: Callable[[], bool] = lambda: False) -> Samples | None:
    """Every timed call's kernel and end-to-end microseconds, in call order (None when cancelled)."""
    for _ in range(warmup):
        call()
    ks: list[float] = []
    es: list[float] = []
    t_end = time.perf_counter() + budget_s
    while len(ks) < max_reps and (len(ks) < min_reps or time.perf_counter() < t_end):
        if cancelled():
            return None
        if pause_s:
            time.sleep(pause_s)
        k, e = call()
        ks.append(k)
        es.append(e)
    return Samples(ks, es)


def time_calls(call: Call, budget_s: float, *, warmup: int = 3, min_reps: int = 10, max_reps: int = 5000,
               pause_s: float = 0.0, cancelled: Callable[[], bool] = lambda: False) -> Medians | None:
    """Median kernel and end-to-end microseconds of repeated calls (None when cancelled)."""
    got = sample_calls(call, budget_s, warmup=warmup, min_reps=min_reps, max_reps=max_reps, pause_s=pause_s,
                       cancelled=cancelled)
    if got is None:
        return None
    return Medians(statistics.median(got.kernel_us), statistics.median(got.e2e_us), len(got.kernel_us))
