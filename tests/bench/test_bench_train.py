"""`gemmpad bench train`: the no-GPU message, and the native rows' timing on a small set (the GPU run is the benchmark itself)."""

from __future__ import annotations

import gemmpad
import numpy as np
import pytest

from gemmpad.bench import train as bench_train
from gemmpad.learn.trainer import init_weights
from tests.cli_helpers import run_cli


@pytest.mark.skipif(gemmpad.cuda_status().available, reason="checks the no-GPU message")
def test_bench_train_without_gpu_says_why(monkeypatch, capsys):
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "train", "--parity-epochs", "0")
    assert rc == 2
    assert err.startswith("gemmpad: error:") and "Traceback" not in err


@pytest.mark.gpu
def test_native_epoch_times_come_from_the_timed_epochs():
    """The native rows: a.epochs graphed epochs (after the warm-up) and two launched ones, each
    timed by the one timing loop; the GPU's own span fits inside the host's."""
    rng = np.random.default_rng(7)
    x = rng.random((1000, 784), dtype=np.float32)
    y = rng.integers(0, 10, 1000).astype(np.int32)
    a = bench_train._defaults()
    a.epochs = 3
    row = bench_train._time_native(x, y, init_weights(0, "torch"), 100, False, a)
    assert row is not None and len(row["epoch_ms_all"]) == 3 and row["steps_per_epoch"] == 10
    assert 0 < row["gpu_ms_median"] <= row["epoch_ms_median"] and row["no_graph_epoch_ms_median"] > 0
    persistent = bench_train._time_native(x, y, init_weights(0, "torch"), 100, False, a, "persistent")
    if persistent is None:
        pytest.skip("this GPU does not run the persistent epoch")
    assert persistent["engine"] == "native_persistent" and len(persistent["epoch_ms_all"]) == 3
    assert 0 < persistent["gpu_ms_median"] <= persistent["epoch_ms_median"] and "profile_us_per_launch" not in persistent
