"""How many threads the native CPU kernels may use while the window is open.

The window's own thread and the renderer (Mesa draws on the CPU when there is no GPU)
run on the same cores as the kernels' OpenMP threads. A parallel region waits for its
slowest thread, so one preempted thread turns a 70 us call into a 10 ms one: in the
window, fewer threads than cores beat all of them. We leave one core to the window and
take no more than the cores other programs leave idle.

This is only a cap (`_cpu.set_thread_cap`) on top of the native code's one thread policy
(native/cpu/threads.h: usable cores, OMP_NUM_THREADS, the work at hand, one thread in a
forked child); the cores are counted by that same code, so the two cannot disagree.
"""

from __future__ import annotations

import os

from gemmpad import _cpu


def window_threads(cores: int | None = None, load: float | None = None) -> int:
    """Threads for the CPU kernels beside the window: the cores left after one for the
    window and after what other programs keep busy (the 1-minute load average), >= 1."""
    n = _cpu.usable_cores() if cores is None else cores
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):
            load = 0.0
    return max(1, min(n - 1, n - round(load)))
