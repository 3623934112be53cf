"""Threads for the CPU kernels beside the window (gemmpad.ui.cores) and the native cap."""

from __future__ import annotations

import pytest

from gemmpad.runtime import native
from gemmpad.ui.cores import window_threads


def test_one_core_is_left_to_the_window_and_busy_cores_are_not_counted() -> None:
    assert window_threads(cores=2, load=0.0) == 1
    assert window_threads(cores=8, load=0.0) == 7
    assert window_threads(cores=8, load=3.2) == 5  # three cores busy elsewhere
    assert window_threads(cores=1, load=0.0) == 1  # never zero
    assert window_threads(cores=4, load=9.0) == 1


@pytest.mark.skipif(not hasattr(native.cpu, "set_thread_cap"), reason="this build has no native CPU module")
def test_thread_cap_limits_the_kernels_threads() -> None:
    full = native.cpu.openmp_threads()
    try:
        native.cpu.set_thread_cap(1)
        assert native.cpu.openmp_threads() == 1
        native.cpu.set_thread_cap(full + 5)  # a cap above what OpenMP gives changes nothing
        assert native.cpu.openmp_threads() == full
        with pytest.raises(ValueError, match="thread cap must be >= 0"):
            native.cpu.set_thread_cap(-1)
    finally:
        native.cpu.set_thread_cap(0)
    assert native.cpu.openmp_threads() == full
