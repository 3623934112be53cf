"""`gemmpad bench train` without a GPU (the GPU run is the benchmark itself)."""

from __future__ import annotations

import gemmpad
import pytest

from tests.cli_helpers import run_cli


@pytest.mark.skipif(gemmpad.cuda_status().available, reason="checks the no-GPU message")
def test_bench_train_without_gpu_says_why(monkeypatch, capsys):
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "train", "--parity-epochs", "0")
    assert rc == 2
    assert err.startswith("gemmpad: error:") and "Traceback" not in err
