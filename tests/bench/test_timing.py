"""gemmpad.bench.timing: the one loop behind bench mlp's, bench train's and the race's times (issue 41)."""

from __future__ import annotations

import itertools

from gemmpad.bench.timing import sample_calls, time_calls


def counting_call(log: list[str]):
    """A call whose times are 1, 2, 3, ... microseconds (kernel) and ten times that (end to end)."""
    n = itertools.count(1)

    def call() -> tuple[float, float]:
        i = next(n)
        log.append("call")
        return float(i), 10.0 * i

    return call


def test_warmup_calls_are_not_timed_and_min_reps_hold_without_budget() -> None:
    log: list[str] = []
    got = time_calls(counting_call(log), budget_s=0.0, warmup=3, min_reps=5)
    assert got == (6.0, 60.0, 5)  # calls 4..8 timed: median 6
    assert len(log) == 8


def test_max_reps_caps_the_calls_whatever_the_budget() -> None:
    log: list[str] = []
    got = time_calls(counting_call(log), budget_s=3600.0, warmup=0, min_reps=1, max_reps=7)
    assert got is not None and got.reps == 7 and len(log) == 7


def test_cancelled_between_calls_is_none() -> None:
    log: list[str] = []
    got = time_calls(counting_call(log), budget_s=3600.0, warmup=0, cancelled=lambda: len(log) >= 2)
    assert got is None and len(log) == 2


def test_samples_are_every_timed_call_in_order() -> None:
    log: list[str] = []
    got = sample_calls(counting_call(log), budget_s=0.0, warmup=1, min_reps=3, max_reps=3)
    assert got is not None
    assert got.kernel_us == [2.0, 3.0, 4.0] and got.e2e_us == [20.0, 30.0, 40.0]
    assert len(log) == 4
