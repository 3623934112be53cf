"""One ordered parallel map for the slow loops that are independent per item (building the
training arrays, reading the test sets): every image goes through `preprocess` one at a
time in Python, so processes, not threads, are what uses more than one core."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from threadpoolctl import threadpool_limits

T = TypeVar("T")
R = TypeVar("R")


def default_jobs() -> int:
    """Every core this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def ordered_map(fn: Callable[[T], R], items: Sequence[T], jobs: int) -> Iterator[R]:
    """fn over items, results in the items' order, in `jobs` processes (in this one for 1).

    fn must be a module-level function; each item carries all it needs (no shared state),
    so results never depend on `jobs`. In this process too fn runs with one BLAS thread, as in a
    worker: a matrix product split over threads can round differently (2026-11-30, an AVX2 host:
    1 and 3 jobs built training arrays 2e-7 apart).
    """
    if jobs <= 1 or len(items) <= 1:
        for item in items:
            with threadpool_limits(1):
                result = fn(item)
            yield result
        return
    # fork where there is one: workers need no re-import and no picklable __main__
    ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
    with contextlib.ExitStack() as stack:  # leaving it (Ctrl-C included, even one held back below) terminates the pool
        with _workers_ignore_sigint():
            pool = stack.enter_context(ctx.Pool(min(jobs, len(items)), initializer=_worker_init))
        yield from pool.imap(fn, items, chunksize=1)


def _worker_init() -> None:
    """In each worker: one BLAS/OpenMP thread, since the workers already fill the cores (jobs
    workers with a pool of threads each put jobs x cores threads on them: on the 16-core GPU
    machine 16 such workers built the training arrays ~15x slower than their CPU time, and 2 on
    2 cores 1.75x; 2026-11-29). And Ctrl-C reaches the whole process group, so the parent alone
    answers it (one line, exit 130, the pool terminated) instead of every worker printing a traceback."""
    threadpool_limits(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):  # born with SIGINT blocked (below): a press meanwhile is now dropped
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@contextlib.contextmanager
def _workers_ignore_sigint() -> Iterator[None]:
    """SIGINT held back while the pool forks its workers, so none is interrupted before its
    initializer ignores it (that was a traceback). Blocked, not ignored: a press in those
    milliseconds reaches the parent when they are over instead of being lost."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        return
    previous = signal.getsignal(signal.SIGINT)
    # only the main thread may set handlers; None: a handler not set from Python, which cannot be put back
    if threading.current_thread() is not threading.main_thread() or previous is None:
        yield
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
