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


def test_without_matplotlib_the_charts_are_skipped_with_a_note_before_training(monkeypatch, capsys, tmp_path):
    """matplotlib is optional (gemmpad[bench]); bench train imported it after the run and after writing
    train.json, and ended in an internal ImportError. It is asked for before training, as bench gemm and
    mlp say "(matplotlib not installed: no bench-gemm.png)": the run goes on and writes its JSON."""
    import json
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    monkeypatch.setattr(bench_train, "cuda_trainer_class", lambda: None)  # the timing, faked: no GPU here
    monkeypatch.setattr(bench_train, "load_mnist", lambda _: (np.zeros((8, 784), np.float32), np.zeros(8, np.int32)))

    def timed(engine: str):
        def row(x, y, w, batch, *rest):
            print(f"timing {engine}")
            return {"engine": engine, "precision": "fp32", "batch": batch, "epoch_ms_median": 1.0}
        return row

    monkeypatch.setattr(bench_train, "_time_native", timed("native"))
    monkeypatch.setattr(bench_train, "_time_torch", timed("torch_eager"))
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "train", "--parity-epochs", "0", "--batches", "64",
                           "--out", str(tmp_path))
    assert (rc, err) == (0, "")
    assert out.startswith("(matplotlib not installed: no train.png or train_parity.png; pip install matplotlib "
                          "for charts)\ntiming native\n")
    assert json.loads((tmp_path / "train.json").read_text())["results"][0]["engine"] == "native"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.json"]
