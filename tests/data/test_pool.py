"""gemmpad.data.pool: the one ordered parallel map."""

from __future__ import annotations

from threadpoolctl import threadpool_info

from gemmpad.data.pool import ordered_map


def _square(v: int) -> int:
    return v * v


def _blas_threads(_: int) -> list[int]:
    return [p["num_threads"] for p in threadpool_info()]


def test_results_keep_the_items_order_for_any_jobs() -> None:
    items = list(range(23))
    assert list(ordered_map(_square, items, 1)) == list(ordered_map(_square, items, 3)) == [v * v for v in items]


def test_workers_run_one_blas_thread_each() -> None:
    """The workers fill the cores themselves: a BLAS or OpenMP pool in each oversubscribed the
    16-core GPU machine (issue 43's arrays built ~15x slower than their CPU time)."""
    seen = list(ordered_map(_blas_threads, [0, 1, 2, 3], 2))
    assert seen and all(threads and set(threads) == {1} for threads in seen)
