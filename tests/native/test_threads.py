"""The native code's thread and fork policy (native/cpu/threads.h), from the outside.

Each case runs in a fresh interpreter: OMP_NUM_THREADS is read when libgomp loads, and
the failures these tests guard against are a SIGSEGV, a libgomp exit or a hang, none of
which pytest could report from inside its own process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import gemmpad
from gemmpad import _cpu

APP = str(Path(gemmpad.__file__).resolve().parents[1])  # the gemmpad under test: installed, or app/
CORES = len(os.sched_getaffinity(0))
# Generous: a hang (the failure) never ends; a passing run takes a few seconds.
HANG_S = 180


def _run(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run `script` in its own session; on a hang, kill it with every child it forked."""
    full_env = {**os.environ, "PYTHONPATH": APP, **env}
    with subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=full_env, start_new_session=True) as proc:
        try:
            out, err = proc.communicate(timeout=HANG_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            pytest.fail(f"hung for {HANG_S} s")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


# Threaded calls on every CPU path: a GEMM big enough to thread, the MLP layer by layer on
# cpu.02 and cpu.mlp_sparse at a batch it splits between threads. Prints the threads started.
_THREADED_CALLS = """
    import os
    import numpy as np
    from gemmpad import _cpu
    from gemmpad.runtime.classifier import Classifier
    from gemmpad.runtime.gemm import gemm

    # made (and a GEMM too small to thread run) first: what these start besides OpenMP (the CUDA driver's
    # threads, on a GPU host) is not counted
    classifiers = [Classifier(kernel=kernel) for kernel in ("cpu.02_blocked_simd", "cpu.mlp_sparse")]
    gemm(np.ones((1, 1), np.float32), np.ones((1, 1), np.float32), kernel="cpu.02_blocked_simd")

    def threaded_calls():
        a = np.ones((600, 600), np.float32)
        assert gemm(a, a, kernel="cpu.02_blocked_simd")[0, 0] == 600
        x = np.zeros((300, 784), np.float32)
        for clf in classifiers:
            p = clf.predict(x)
            assert p.shape == (300, 10) and abs(float(p.sum()) - 300) < 1e-3
"""


@pytest.mark.parametrize("value", ["65536", "40000", "2147483647", "16384"])
def test_hostile_omp_num_threads_is_capped_by_cores(value):
    # Was: 65536 a SIGSEGV in libgomp, 40000 "Thread creation failed", 2147483647 "Out of
    # memory allocating 481 GB", 16384 threads started for a 600x600 product.
    script = _THREADED_CALLS + """
    before = len(os.listdir("/proc/self/task"))
    threaded_calls()
    print(_cpu.openmp_threads(), len(os.listdir("/proc/self/task")) - before)
    """
    r = _run(script, OMP_NUM_THREADS=value)
    assert r.returncode == 0, r.stderr[-2000:]
    threads, started = map(int, r.stdout.split())
    assert 1 <= threads <= CORES
    assert started < CORES  # the region's calling thread is one of its threads


def test_omp_num_threads_below_the_cores_is_honoured():
    r = _run("from gemmpad import _cpu; print(_cpu.openmp_threads())", OMP_NUM_THREADS="1")
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["1"]


def test_usable_cores_follow_the_affinity_mask():
    assert _cpu.usable_cores() == CORES
    one = min(os.sched_getaffinity(0))
    script = f"""
    import os
    os.sched_setaffinity(0, {{{one}}})
    from gemmpad import _cpu
    from gemmpad.ui.cores import window_threads
    print(_cpu.usable_cores(), _cpu.openmp_threads(), window_threads(load=0.0))
    """
    r = _run(script, OMP_NUM_THREADS="64")
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["1", "1", "1"]


@pytest.mark.skipif(CORES < 2, reason="a forked child hangs only when the parent started an OpenMP team")
def test_fork_after_threaded_calls_runs_single_threaded():
    # Was: the child's first parallel region waited forever for the parent's pool threads.
    script = _THREADED_CALLS + """
    import multiprocessing

    def child_calls(_):
        threaded_calls()
        return _cpu.openmp_threads()

    threaded_calls()
    assert _cpu.openmp_threads() >= 2
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = 0 if child_calls(0) == 1 else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, status
    with multiprocessing.get_context("fork").Pool(2) as pool:
        assert pool.map(child_calls, range(4)) == [1, 1, 1, 1]
    threaded_calls()  # the parent keeps its threads
    assert _cpu.openmp_threads() >= 2
    print("ok")
    """
    r = _run(script, OMP_NUM_THREADS="2")  # threads in the parent even where CI sets 1
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["ok"]


@pytest.mark.parametrize("length", [2**31 - 1, 2**31, 2**31 + 13, 2**33 + 5, 600, 1])
@pytest.mark.parametrize("step", [1, 6, 14, 32])
@pytest.mark.parametrize("threads", [2, 3, 7, 64])
def test_thread_ranges_cover_long_dimensions(length, step, threads):
    # Was: with 2**31 - 1 rows, 32-bit `len + nthreads - 1` wrapped negative, every thread got an
    # empty range and gemm returned its uninitialised output (zeros) having computed nothing.
    ranges = _cpu.thread_ranges(length, step, threads)
    assert 1 <= len(ranges) <= threads
    assert ranges[0][0] == 0 and ranges[-1][1] == length
    for (lo, hi), (next_lo, _) in zip(ranges, ranges[1:]):
        assert hi == next_lo
    for lo, hi in ranges:
        assert lo < hi and lo % step == 0


def test_thread_ranges_refuses_nonsense():
    with pytest.raises(ValueError, match=">= 1"):
        _cpu.thread_ranges(0, 1, 1)
